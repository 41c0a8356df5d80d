"""Recognition memory (HippoRAG's fact filter): keep the few facts that matter."""

import dspy


class FilterFacts(dspy.Signature):
    """Keep at most the requested number of facts that help answer the question.

    Copy each kept fact exactly as [subject, relation, object] from the candidates, most
    useful first. Return an empty list if none helps. Never write a fact that is not a candidate."""

    question: str = dspy.InputField()
    candidate_facts: list[list[str]] = dspy.InputField(desc="[subject, relation, object] triples")
    max_facts: int = dspy.InputField()
    kept_facts: list[list[str]] = dspy.OutputField(desc="at most max_facts triples, copied from the candidates")
