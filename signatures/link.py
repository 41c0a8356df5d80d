"""Linking: which of the graph entities a question's words may name is the question about?"""

import dspy


class ChooseTopicEntities(dspy.Signature):
    """Choose the entities a question is about, among knowledge-graph entities its words may name.

    Each candidate is shown as: its name (the words of the question that matched it): what the
    graph relates it to. Choose the entities the question asks about or sets as a condition. Leave
    out common words that only happen to match a name ("city", "actor", "location"), and entities
    that share a name with the one meant but whose relations do not fit the question."""

    question: str = dspy.InputField()
    candidate_entities: list[str] = dspy.InputField(desc="name (matched words): what the graph relates it to")
    entities_meant: list[str] = dspy.OutputField(desc="the candidates the question is about")
