"""Reflection (Plan-on-Graph): when a hop finds nothing, resume from entities the walk passed."""

import dspy


class Reflect(dspy.Signature):
    """The walk reached a dead end: no relation from where it stands takes the next hop of the plan.

    Choose the entities seen earlier (passed but not followed) to resume the walk from, if any
    of them can lead to the answer; choose none otherwise."""

    question: str = dspy.InputField()
    plan: list[str] = dspy.InputField(desc="what each hop reaches, in order")
    dead_end: str = dspy.InputField(desc="the entities the walk stands on, where it found nothing")
    earlier_entities: list[str] = dspy.InputField(desc="entities seen before and not followed")
    entities_to_resume: list[str] = dspy.OutputField(desc="chosen earlier entities; empty if none")
