"""Answering: whether the evidence gathered answers the question (answer sufficiency), the answers
extracted from the candidate paths (GCR's path answer extraction), and the LLM-only baseline."""

import dspy


class CheckSufficiency(dspy.Signature):
    """Decide whether the walk through a knowledge graph has reached the answer, or must go one hop further.

    Read the best paths the walk found and the notes on what it established. Answer true if the
    end of some path is the kind of thing the question asks for (people when it asks who, years
    when it asks when, a country when it asks for a country) and fits its conditions; false if
    the paths stop one hop short of it (they reach a city when the question asks for its country)."""

    question: str = dspy.InputField()
    memory_notes: list[str] = dspy.InputField(desc="what the walk established; may be empty")
    best_paths: list[str] = dspy.InputField(desc="entity -> relation -> ... -> reached entity")
    evidence_sufficient: bool = dspy.OutputField(desc="true if a path ends at an answer")


class ExtractAnswers(dspy.Signature):
    """Answer the question with the candidates that paths through a knowledge graph reached.

    Each candidate path starts at an entity the question names, follows relations and ends at a
    candidate answer. Choose the answers whose paths say what the question asks, and that meet
    every condition the question sets (a second entity, a date, a value, the kind of thing
    asked for); use the known facts and the notes to check the conditions."""

    question: str = dspy.InputField()
    candidate_paths: list[str] = dspy.InputField(desc="entity -> relation -> ... -> candidate answer")
    known_facts: list[str] = dspy.InputField(desc="facts about candidates that bear on the question; may be empty")
    memory_notes: list[str] = dspy.InputField(desc="what the walk established; may be empty")
    extracted_answers: list[str] = dspy.OutputField(desc="the candidate answers chosen, best first")


class AnswerDirectly(dspy.Signature):
    """Answer the question from your own knowledge, without a knowledge graph.

    Give the answer names only, most likely first; give an empty list if you do not know."""

    question: str = dspy.InputField()
    direct_answers: list[str] = dspy.OutputField(desc="answer names, most likely first")
