"""A scripted model that walks like a careful one: picks the relations a test names, keeps
every candidate, notes the facts, and says "sufficient" once an expected answer is in the facts."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kgqa.lm.scripted import scripted_lm


def oracle(
    relations: Iterable[str],
    answers: Iterable[str],
    *,
    keep: Callable[[dict], list[str]] | None = None,
    backtrack: Callable[[dict], list[str]] | None = None,
    **overrides,
):
    """`relations`: relation labels to follow wherever offered ("rel" or "rel (reverse)");
    `answers`: what the judge accepts once it appears in the facts."""
    wanted, expected = list(relations), list(answers)

    def judge(inputs):
        facts = " || ".join(inputs["known_facts"])
        found = [a for a in expected if a in facts]
        return {"is_sufficient": bool(found), "answer_names": found}

    handlers = {
        "sub_objectives": lambda i: {"sub_objectives": [i["question"]]},
        "relations_to_follow": lambda i: {"relations_to_follow": [r for r in i["candidate_relations"] if r in wanted]},
        "entities_to_keep": lambda i: {"entities_to_keep": keep(i) if keep else i["candidate_entities"]},
        "kept_facts": lambda i: {"kept_facts": i["candidate_facts"][: i["max_facts"]]},
        "updated_memory": lambda i: {"updated_memory": ["; ".join(i["new_facts"])[:200]] * len(i["sub_objectives"])},
        "answer_names": judge,
        "should_backtrack": lambda i: (
            {"should_backtrack": bool(backtrack(i)), "entities_to_resume": backtrack(i)}
            if backtrack else {"should_backtrack": False, "entities_to_resume": []}
        ),
        "answer_entity": lambda i: {"answer_entity": i["path_entities"][-1]},
    }
    handlers.update(overrides)
    return scripted_lm(handlers)


def gold_oracle(examples):
    """An oracle for many questions at once: each question's own gold relations and answers
    (from the demo splits' `path` and `answers`)."""
    twins = {"film.film.directed_by (reverse)": "film.director.film"}  # Freebase's inverse pair
    by_question = {}
    for ex in examples:
        labels = [r if d == "out" else f"{r} (reverse)" for r, d in ex.path]
        labels += [twins[label] for label in labels if label in twins]
        by_question[ex.question] = (labels, list(ex.answers))

    def relations(inputs):
        labels, _ = by_question.get(inputs["question"], ([], []))
        return {"relations_to_follow": [r for r in inputs["candidate_relations"] if r in labels]}

    def judge(inputs):
        _, answers = by_question.get(inputs["question"], ([], []))
        facts = " || ".join(inputs["known_facts"])
        found = [a for a in answers if a in facts]
        return {"is_sufficient": bool(found), "answer_names": found}

    return oracle([], [], relations_to_follow=relations, answer_names=judge)


def demo_oracle():
    """`--lm py:tests.programs.oracle:demo_oracle`: the gold oracle over every demo question."""
    from data.demo import split_path
    from data.jsonl import load_jsonl

    return gold_oracle([ex for split in ("train", "dev", "test") for ex in load_jsonl(split_path(split))])


def slow_demo_oracle():
    """The demo oracle taking 50 ms a call: slow enough to be killed in the middle of a run."""
    import time

    lm = demo_oracle()
    handlers = lm.scripted.handlers
    for key, handler in list(handlers.items()):
        handlers[key] = (lambda h: lambda inputs: (time.sleep(0.05), h(inputs))[1])(handler)
    return lm
