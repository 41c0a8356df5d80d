"""Memory update (Plan-on-Graph's memory): what the walk has established so far, for each entity
the question names, kept as short notes that the later steps read."""

import dspy


class UpdateMemory(dspy.Signature):
    """Update the notes on what the walk through a knowledge graph has established.

    The question names several entities, and the answer must fit all of them. Write one short
    note per named entity: what the paths from it reached that bears on the question (the
    entities or values found, and which of them the question's other conditions also fit).
    Keep what the earlier notes established unless the new evidence corrects it."""

    question: str = dspy.InputField()
    plan: list[str] = dspy.InputField(desc="what each hop reaches, in order")
    memory: list[str] = dspy.InputField(desc="the notes so far; empty at first")
    new_evidence: list[str] = dspy.InputField(desc="paths just walked: entity -> relation -> ... -> reached")
    memory_notes: list[str] = dspy.OutputField(desc="one note per named entity")
