"""The fact filter (HippoRAG's recognition memory): of the facts known about the candidate
answers, values included, keep the ones that bear on the question."""

import dspy


class FilterFacts(dspy.Signature):
    """Keep the facts that help decide which candidate answers the question.

    Each fact is one statement from a knowledge graph about a candidate answer: "candidate |
    relation | value". Keep the facts that the question's conditions are about (a date, a
    number, a place, a second entity it names, a largest or smallest value); keep none if no
    fact bears on the question."""

    question: str = dspy.InputField()
    conditions: list[str] = dspy.InputField(desc="what the answer must satisfy, as planned")
    candidate_facts: list[str] = dspy.InputField(desc="candidate | relation | value")
    relevant_facts: list[str] = dspy.OutputField(desc="the facts kept, most useful first; empty if none")
