"""Pruning the walk: which relations to follow from an entity, which reached entities to keep."""

import dspy


class PruneRelations(dspy.Signature):
    """Choose the relations worth following from this entity to answer the question.

    A candidate ending in "(reverse)" is followed backwards: from a person, "film.directed_by
    (reverse)" leads to the films that person directed. Copy each chosen relation exactly as
    written among the candidates, most useful first, and choose as few as the question needs."""

    question: str = dspy.InputField()
    sub_objectives: list[str] = dspy.InputField(desc="what the walk still has to find")
    entity: str = dspy.InputField(desc="the entity the walk stands on")
    candidate_relations: list[str] = dspy.InputField()
    relations_to_follow: list[str] = dspy.OutputField(desc="chosen relations, copied from the candidates")


class PruneEntities(dspy.Signature):
    """Keep the entities reached through the relation that can lead to the answer.

    Keep every entity the question's constraints allow and drop the ones they rule out.
    Copy each kept entity exactly as written among the candidates, most likely first."""

    question: str = dspy.InputField()
    relation_walked: str = dspy.InputField(desc="how these entities were reached: entity -> relation")
    candidate_entities: list[str] = dspy.InputField()
    entities_to_keep: list[str] = dspy.OutputField(desc="kept entities, copied from the candidates")
