"""Reflection (Plan-on-Graph): bring back entities the walk passed but did not keep."""

import dspy


class Reflect(dspy.Signature):
    """Decide whether the walk went the wrong way and should resume from entities it saw earlier.

    If the current frontier cannot lead to the answer but one of the earlier entities can,
    say so and name those entities, copied exactly from the earlier entities."""

    question: str = dspy.InputField()
    memory_notes: list[str] = dspy.InputField()
    frontier: list[str] = dspy.InputField(desc="entities the walk stands on now")
    earlier_entities: list[str] = dspy.InputField(desc="entities seen before and not followed")
    facts_so_far: list[str] = dspy.InputField()
    should_backtrack: bool = dspy.OutputField()
    entities_to_resume: list[str] = dspy.OutputField(desc="copied from the earlier entities; empty if none")
