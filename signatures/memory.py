"""Working memory of the walk: what is known so far about each sub-objective."""

import dspy


class UpdateMemory(dspy.Signature):
    """Update the notes on what is known for each sub-objective, given the new facts.

    Write one short note per sub-objective, in the same order. Keep what earlier notes
    established, add what the new facts show, and say "unknown" where nothing is known yet.
    Use only the notes and the facts."""

    question: str = dspy.InputField()
    sub_objectives: list[str] = dspy.InputField()
    memory: list[str] = dspy.InputField(desc="the current note for each sub-objective")
    new_facts: list[str] = dspy.InputField(desc="facts found at this step, as 'subject | relation | object'")
    updated_memory: list[str] = dspy.OutputField(desc="one note per sub-objective")
