"""Answering: whether what was found suffices, and which entity of a reasoning path answers."""

import dspy


class JudgeSufficiency(dspy.Signature):
    """Read the facts and find the entities or values that answer the question.

    The facts are true, written 'subject | relation | object'. A relation from A to B can be read
    both ways: "Heathers | written_by | Daniel Waters" says Heathers was written by Daniel Waters,
    and that Daniel Waters wrote Heathers. List the answers the facts give (names, years or
    numbers), copied exactly. If the facts do not yet reach what the question asks for (it needs
    one more step), give an empty list and false."""

    question: str = dspy.InputField()
    memory_notes: list[str] = dspy.InputField(desc="what is known for each sub-objective")
    known_facts: list[str] = dspy.InputField(desc="facts found, as 'subject | relation | object'")
    answer_names: list[str] = dspy.OutputField(desc="the answers, copied from the facts; empty if the facts do not reach them yet")
    is_sufficient: bool = dspy.OutputField(desc="true if these answers answer the question")


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
