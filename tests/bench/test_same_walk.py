"""Whether a change keeps the walk, with no LLM: the program under a fake LM that answers each call
from a hash of its inputs, run twice, compared question by question."""

from __future__ import annotations

import json

from bench.same_walk import GARBAGE_EVERY, by_question, differences, digest, hashed_lm, main, records, some
from kgqa.kg import KnowledgeGraph
from kgqa.programs import KGQA, WalkConfig


def fresh(demo_store, **config) -> KGQA:
    """The program on a graph of its own: what the graph finds once and keeps (a relation's inverse)
    counts its query in the first walk that needs it, as in each run of the command."""
    return KGQA(KnowledgeGraph(demo_store, profile="freebase"), config=WalkConfig(**config))


def test_the_fake_lm_answers_the_same_inputs_alike_with_candidates_offered_and_now_and_then_garbage():
    handler = hashed_lm().scripted.handlers["relations_to_follow"]
    offered = ["film.film.directed_by", "film.film.genre", "film.film.starring", "film.film.country"]
    asked = [{"question": f"which film {n}?", "candidate_relations": offered} for n in range(60)]
    replies = [handler(inputs) for inputs in asked]
    assert replies == [handler(inputs) for inputs in asked]  # the same inputs, the same reply
    garbage = [r for r, inputs in zip(replies, asked) if digest(inputs) % GARBAGE_EVERY == 0]
    assert garbage and all(r == "I cannot tell." for r in garbage)
    chosen = [r["relations_to_follow"] for r in replies if isinstance(r, dict)]
    assert all(1 <= len(c) <= 3 and set(c) <= set(offered) for c in chosen) and len({tuple(c) for c in chosen}) > 1
    assert some([], 5) == [] and some(["a", "b", "c"], 1) == ["a", "b"] and some(["a", "b", "c"], 9) == ["b"]


def test_a_walk_under_the_fake_lm_is_repeatable_and_a_change_of_the_walk_shows(demo_store, demo_train):
    asked = [("train", ex) for ex in demo_train]
    before = list(records(fresh(demo_store), asked))
    assert differences(before, list(records(fresh(demo_store), asked))) == []
    assert sum(r["trace"]["llm_calls"] for r in before) > len(before)  # the steps decided, the plan and more
    assert all("kg_seconds" not in r["trace"] for r in before)  # timings are not the walk's
    narrower = list(records(fresh(demo_store, choices_shown=1), asked))
    found = differences(before, narrower)
    assert found and any(": trace." in line for line in found)
    assert differences(before, narrower[:-1]) == [f"not the same questions: {len(before)} records before, {len(before) - 1} after"]


def test_the_command_compares_with_an_earlier_run_and_fails_on_a_difference(tmp_path, monkeypatch, capsys, demo_store,
                                                                            demo_train):
    programs = iter([fresh(demo_store), fresh(demo_store), fresh(demo_store, choices_shown=1)])
    monkeypatch.setattr("bench.same_walk._questions", lambda *args: (next(programs), [("train", ex) for ex in demo_train]))
    options = ["--dataset", "cwq", "--program", str(tmp_path)]
    first, second, third = tmp_path / "1.jsonl", tmp_path / "2.jsonl", tmp_path / "3.jsonl"
    assert main([*options, "--out", str(first)]) == 0
    assert len(first.read_text().splitlines()) == len(demo_train) and json.loads(first.read_text().splitlines()[0])["trace"]
    n = len(demo_train)
    capsys.readouterr()
    assert main([*options, "--out", str(second), "--against", str(first)]) == 0
    assert f"{n} of {n} questions walked the same" in capsys.readouterr().out
    assert main([*options, "--out", str(third), "--against", str(first)]) == 1
    walked_same = int(capsys.readouterr().out.split(f"against {first}: ")[1].split(" of ")[0])
    read = [[json.loads(line) for line in f.read_text().splitlines()] for f in (first, third)]
    assert walked_same == sum(not lines for lines in by_question(*read)) < n  # the questions with no differing field
