"""Planning the walk before it starts (RoG's relation plan, PoG's sub-objectives): how many hops,
what each one reaches, and what the answer must satisfy."""

import dspy


class Plan(dspy.Signature):
    """Plan the walk through a knowledge graph that answers the question, before walking it.

    First name what the topic entity is and what the question asks for, a short noun each. The
    walk starts at the topic entity and follows one relation per hop. Name each hop, in order,
    starting after the topic, as what it reaches followed by the relation in brackets, in the
    question's words: for "what languages are the films directed by the director of [Heat] in"
    the topic is a "movie", the answer kind is "language" and the hops are ["director (directed
    by)", "movie (directed by)", "language (in language)"]. Use as many hops as the question
    chains facts, and no more: the last hop reaches the answer kind.
    List conditions the answer must meet (a year, a country, a type), or none."""

    question: str = dspy.InputField()
    topic: str = dspy.InputField(desc="the entity the walk starts from")
    topic_kind: str = dspy.OutputField(desc="what the topic entity is, a short noun")
    answer_kind: str = dspy.OutputField(desc="what the question asks for, a short noun")
    hop_targets: list[str] = dspy.OutputField(desc="each hop in order: what it reaches (relation)")
    answer_constraints: list[str] = dspy.OutputField(desc="conditions on the answer; empty if none")
