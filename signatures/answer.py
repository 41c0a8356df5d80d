"""Answering: whether the planned walk reached what the question asks for, the answer chosen among
the ends of retrieved paths (GCR's path answer extraction), and the LLM-only baseline."""

import dspy


class Judge(dspy.Signature):
    """The walk followed its plan; check that it reached what the question asks for.

    Read the reasoning path and the entities it ended on. Answer true if they are the kind of
    thing the question asks for (people when it asks who, years when it asks when, languages
    when it asks for languages), false if the walk stopped one hop short of that."""

    question: str = dspy.InputField()
    reasoning_path: str = dspy.InputField(desc="one path the walk took: entity -> relation -> entity ...")
    reached_entities: list[str] = dspy.InputField(desc="some of the entities the walk ended on")
    reached_answer: bool = dspy.OutputField(desc="true if these entities answer the question")


class ChooseAnswer(dspy.Signature):
    """Answer the question with one of the candidates that paths through a knowledge graph reached.

    Each candidate path starts at an entity the question names, follows relations and ends at a
    candidate answer. Choose the answer whose path says what the question asks, and that meets
    every condition the question sets: a second entity, a date, the kind of thing asked for."""

    question: str = dspy.InputField()
    candidate_paths: list[str] = dspy.InputField(desc="entity -> relation -> ... -> candidate answer")
    chosen_answer: list[str] = dspy.OutputField(desc="the candidate answer chosen")


class AnswerDirectly(dspy.Signature):
    """Answer the question from your own knowledge, without a knowledge graph.

    Give the answer names only, most likely first; give an empty list if you do not know."""

    question: str = dspy.InputField()
    direct_answers: list[str] = dspy.OutputField(desc="answer names, most likely first")
