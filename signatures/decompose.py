"""Question decomposition (Plan-on-Graph's planning step)."""

import dspy


class Decompose(dspy.Signature):
    """Break the question into the few sub-objectives a knowledge-graph walk must reach, in order.

    Each sub-objective is a short phrase naming one fact to find, starting from the entities
    mentioned in the question. Use as few sub-objectives as the question needs: one for a
    single fact, one per hop for a chain. Do not answer the question."""

    question: str = dspy.InputField()
    sub_objectives: list[str] = dspy.OutputField(desc="short phrases, in the order the walk reaches them")
