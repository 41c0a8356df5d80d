"""Answering: whether what was found suffices, and which entity of a reasoning path answers."""

import dspy


class JudgeSufficiency(dspy.Signature):
    """Decide whether the facts found so far answer the question, and if they do, give the answer.

    Answer only with entity names or values that appear in the facts, never from outside
    knowledge. Say it is not sufficient when a needed fact is still missing."""

    question: str = dspy.InputField()
    memory_notes: list[str] = dspy.InputField(desc="what is known for each sub-objective")
    known_facts: list[str] = dspy.InputField(desc="facts found, as 'subject | relation | object'")
    is_sufficient: bool = dspy.OutputField()
    answer_names: list[str] = dspy.OutputField(desc="the answers, copied from the facts; empty if not sufficient")


class ExtractPathAnswer(dspy.Signature):
    """Name the entity on the reasoning path that answers the question.

    The path alternates entities and relations: e0 -> r1 -> e1 -> r2 -> e2. Pick the entity
    whose role matches what the question asks for; it must be one of the listed entities."""

    question: str = dspy.InputField()
    reasoning_path: str = dspy.InputField()
    path_entities: list[str] = dspy.InputField(desc="the entities on the path that may answer")
    answer_entity: str = dspy.OutputField(desc="one of the path entities, copied exactly")


class AnswerDirectly(dspy.Signature):
    """Answer the question from your own knowledge, without a knowledge graph.

    Give the answer names only, most likely first; give an empty list if you do not know."""

    question: str = dspy.InputField()
    direct_answers: list[str] = dspy.OutputField(desc="answer names, most likely first")
