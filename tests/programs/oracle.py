"""A scripted model that walks like a careful one: plans the hops a test names, picks the
relations it names wherever they are offered, keeps every candidate entity, keeps no facts,
notes nothing, finds the evidence sufficient, extracts the answers its relations reach, and of a
question's plausible topic entities keeps the linker's best."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kgqa.kg.profiles import FREEBASE
from kgqa.lm.scripted import scripted_lm


def oracle(
    relations: Iterable[str],
    *,
    hops: int | None = None,
    conditions: Iterable[str] = (),
    keep: Callable[[dict], list[str]] | None = None,
    backtrack: Callable[[dict], list[str]] | None = None,
    reached: Callable[[dict], bool] | None = None,
    constrained: bool = False,
    **overrides,
):
    """`relations`: relation labels to follow wherever offered ("rel", "rel (reverse)", or a
    compound "rel -> rel" through a CVT node); `hops`: how many hops the plan says (default: one
    per relation); `conditions`: the plan's conditions on the answer; `keep`, `backtrack`,
    `reached`: the entity prune, reflection and sufficiency (default: keep all, never, sufficient).
    Extraction picks the candidates whose paths go by the named relations only."""
    wanted = list(relations)
    planned = hops if hops is not None else max(1, len(wanted))
    phrases = {FREEBASE.relation_phrase(part.removesuffix(" (reverse)")) for label in wanted for part in label.split(" -> ")}

    def extracted(inputs):
        ends = []
        for path in inputs["candidate_paths"]:  # relation phrases are lower case; names and values are not, or are numbers
            parts = path.split(" -> ")
            said = [p for p in parts[1:-1] if p == p.lower() and not p[:1].isdigit()]
            if said and all(p in phrases for p in said):
                ends.append(parts[-1])
        return {"extracted_answers": ends}

    handlers = {
        "topic_kind": lambda i: {"topic_kind": "entity", "answer_kind": f"hop {planned}", "hop_targets": [f"hop {n + 1}" for n in range(planned)],
                                  "answer_constraints": list(conditions)},
        "relations_to_follow": lambda i: {"relations_to_follow": [r for r in i["candidate_relations"] if r in wanted]},
        "entities_to_keep": lambda i: {"entities_to_keep": keep(i) if keep else i["candidate_entities"]},
        "relevant_facts": lambda i: {"relevant_facts": []},
        "memory_notes": lambda i: {"memory_notes": []},
        "evidence_sufficient": lambda i: {"evidence_sufficient": reached(i) if reached else True},
        "entities_to_resume": lambda i: {"entities_to_resume": backtrack(i) if backtrack else []},
        "extracted_answers": extracted,
        "entities_meant": lambda i: {"entities_meant": i["candidate_entities"][:1]},  # the linker's best
    }
    handlers.update(overrides)
    return scripted_lm(handlers, constrained=constrained)


def gold_oracle(examples):
    """An oracle for many questions at once: each question's own gold relations and answers
    (from the demo splits' `path` and `answers`). It plans one hop per gold relation; where a
    hop goes through a CVT node the plan is a hop too long, and the walk ends a hop early."""
    twins = {"film.film.directed_by (reverse)": "film.director.film"}  # Freebase's inverse pair
    by_question = {}
    for ex in examples:
        labels = [r if d == "out" else f"{r} (reverse)" for r, d in ex.path]
        labels += [twins[label] for label in labels if label in twins]
        labels += [f"{a} -> {b}" for a, b in zip(labels, labels[1:])]  # compound relations through CVT nodes
        by_question[ex.question] = (labels, list(ex.answers), len(ex.path))

    def extracted(inputs):
        _, answers, _ = by_question.get(inputs["question"], ([], [], 1))
        return {"extracted_answers": [p.rsplit(" -> ", 1)[-1] for p in inputs["candidate_paths"] if p.rsplit(" -> ", 1)[-1] in answers]}

    def plan(inputs):
        _, _, hops = by_question.get(inputs["question"], ([], [], 1))
        return {"topic_kind": "entity", "answer_kind": f"hop {hops}", "hop_targets": [f"hop {n + 1}" for n in range(hops)], "answer_constraints": []}

    def relations(inputs):
        labels, _, _ = by_question.get(inputs["question"], ([], [], 1))
        return {"relations_to_follow": [r for r in inputs["candidate_relations"] if r in labels]}

    return oracle([], topic_kind=plan, relations_to_follow=relations, extracted_answers=extracted)


def demo_oracle():
    """`--lm py:tests.programs.oracle:demo_oracle`: the gold oracle over every demo question."""
    from kgqa.data.demo import split_path
    from kgqa.data.jsonl import load_jsonl

    return gold_oracle([ex for split in ("train", "dev", "test") for ex in load_jsonl(split_path(split))])


def slow_demo_oracle():
    """The demo oracle taking 50 ms a call: slow enough to be killed in the middle of a run."""
    import time

    lm = demo_oracle()
    handlers = lm.scripted.handlers
    for key, handler in list(handlers.items()):
        handlers[key] = (lambda h: lambda inputs: (time.sleep(0.05), h(inputs))[1])(handler)
    return lm


def logged_demo_oracle():
    """`--lm py:tests.programs.oracle:logged_demo_oracle`: the demo oracle taking $KGQA_TEST_LM_DELAY
    seconds a call (default 0.5) and appending each call's question, as one line, to
    $KGQA_TEST_LM_LOG: a served program's tests read from it which questions still reach the LM."""
    import json
    import os
    import time

    delay, log = float(os.environ.get("KGQA_TEST_LM_DELAY", "0.5")), os.environ.get("KGQA_TEST_LM_LOG")
    lm = demo_oracle()
    handlers = lm.scripted.handlers

    def logged(handler):
        def answer(inputs):
            time.sleep(delay)
            if log:
                with open(log, "a", encoding="utf-8") as out:
                    out.write(json.dumps(inputs.get("question", "")) + "\n")
            return handler(inputs)

        return answer

    for key, handler in list(handlers.items()):
        handlers[key] = logged(handler)
    return lm



def lm_down_after_check():
    """`--lm py:tests.programs.oracle:lm_down_after_check`: answers the one-line check before a run
    (a plain prompt), then refuses every step's call, as a server that died between them would."""

    def refused(inputs):
        raise ConnectionRefusedError("[Errno 111] Connection refused")

    steps = ("topic_kind", "relations_to_follow", "entities_to_keep", "relevant_facts", "memory_notes", "evidence_sufficient",
             "entities_to_resume", "extracted_answers")
    return scripted_lm({step: refused for step in steps})
