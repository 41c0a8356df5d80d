"""Pruning the walk: which relations the walk goes on by, which reached entities it goes on from."""

import dspy


class PruneRelations(dspy.Signature):
    """Choose the relation that takes this hop of the plan, from the relations the walk reached things by.

    A candidate ending in "(reverse)" is followed backwards: from a person, "directed_by
    (reverse)" leads to the films that person directed; "a -> b" passes through an unnamed
    node. Choose the candidate that reaches what this hop of the plan looks for; add a second
    only if it may reach it as well."""

    question: str = dspy.InputField()
    plan: list[str] = dspy.InputField(desc="what each hop reaches, in order")
    hop: str = dspy.InputField(desc="the hop to take now, and what it must reach")
    entity: str = dspy.InputField(desc="the entities the walk stands on")
    candidate_relations: list[str] = dspy.InputField()
    relations_to_follow: list[str] = dspy.OutputField(desc="chosen candidates, best first")


class PruneEntities(dspy.Signature):
    """Keep the reached entities the walk should go on from: those that meet the question's
    conditions, dropping the ones they rule out."""

    question: str = dspy.InputField()
    conditions: list[str] = dspy.InputField(desc="what the answer must satisfy")
    relation_walked: str = dspy.InputField(desc="how these entities were reached: entity -> relation")
    candidate_entities: list[str] = dspy.InputField()
    entities_to_keep: list[str] = dspy.OutputField(desc="kept candidates, most likely first")
