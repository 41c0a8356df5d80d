"""Answering: whether the planned walk reached what the question asks for, and the LLM-only baseline."""

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


class AnswerDirectly(dspy.Signature):
    """Answer the question from your own knowledge, without a knowledge graph.

    Give the answer names only, most likely first; give an empty list if you do not know."""

    question: str = dspy.InputField()
    direct_answers: list[str] = dspy.OutputField(desc="answer names, most likely first")
