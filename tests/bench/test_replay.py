"""Replaying recorded walks without the LLM: a record's decisions walk the same candidates again,
and a ranking change shows where the gold answer moves."""

from __future__ import annotations

import dspy
import pytest

from bench.replay import replay, table, walk_changes
from kgqa.evaluate.runner import evaluate, read_records
from kgqa.lm.adapter import ConstrainedJSONAdapter
from kgqa.programs import KGQA, WalkConfig
from tests.programs.oracle import demo_oracle


@pytest.fixture(scope="module")
def records(embedded_demo_kg, demo_train, tmp_path_factory) -> dict[str, dict]:
    """The demo's training questions asked by the oracle: their records."""
    out = tmp_path_factory.mktemp("replay") / "records.jsonl"
    with dspy.context(lm=demo_oracle(), adapter=ConstrainedJSONAdapter()):
        evaluate(KGQA(embedded_demo_kg), demo_train, out=out, progress=False)
    return read_records(out)


def test_a_replay_under_the_records_decisions_shows_the_recorded_choices(records, embedded_demo_kg, demo_train):
    results = replay(KGQA(embedded_demo_kg), demo_train, records)
    assert len(results) == len(demo_train) and all(r.same_choices for r in results)
    assert [r.gold_shown for r in results] == [r.gold_shown_before for r in results]
    assert [r.gold_first for r in results] == [r.gold_first_before for r in results] and any(r.gold_first for r in results)
    assert all(r.gold_ranked >= r.gold_shown for r in results) and any(r.gold_shown for r in results)
    assert "| choices as recorded | %d |" % len(demo_train) in table(results, changes={})


def test_a_ranking_change_moves_the_choices_and_says_where_the_gold_went(records, embedded_demo_kg, demo_train):
    wider = [r for r in replay(KGQA(embedded_demo_kg), demo_train, records) if r.ranked > 1]
    assert wider, "some demo question reaches more than one candidate"
    narrowed = KGQA(embedded_demo_kg, config=WalkConfig(choices_shown=1))
    narrow = {r.id: r for r in replay(narrowed, demo_train, records)}
    assert all(not narrow[r.id].same_choices for r in wider)  # one choice where there were several
    assert all(narrow[r.id].gold_ranked == r.gold_ranked for r in wider)  # the same walk, ranked the same
    text = table(list(narrow.values()), changes={"choices_shown": 1})
    assert "choices_shown=1" in text and "gold gained / lost" in text


def test_a_record_without_its_plan_or_with_an_error_is_not_replayed(records, embedded_demo_kg, demo_train):
    first, second = demo_train[0].id, demo_train[1].id
    broken = {**records, first: {**records[first], "error": "the LM did not answer"},
              second: {**records[second], "trace": {"stop_reason": "lm_error"}}}
    ids = {r.id for r in replay(KGQA(embedded_demo_kg), demo_train, broken)}
    assert first not in ids and second not in ids and len(ids) == len(demo_train) - 2


def test_walk_changes_are_typed_and_checked():
    assert walk_changes(["choices_shown=15", "inverse_chains=false", "clear_similarity=0.25"]) == {
        "choices_shown": 15, "inverse_chains": False, "clear_similarity": 0.25}
    for bad in ("choices_shown", "no_such_knob=1", "inverse_chains=maybe", "clear_similarity=2", "choices_shown=0"):
        with pytest.raises(ValueError):
            walk_changes([bad])


def test_only_records_that_ended_without_error_and_kept_their_plan_are_replayed(records):
    from bench.replay import replayable

    record = next(iter(records.values()))
    assert replayable(record)
    assert not replayable(None) and not replayable({**record, "error": "the LM did not answer"})
    assert not replayable({**record, "trace": {**record["trace"], "raw_plan": {}}})  # an older record: no plan kept


def test_whole_answers_replay_as_recorded_and_a_change_after_extraction_moves_them(records, embedded_demo_kg, demo_train):
    from bench.replay import answers_table, replay_answers

    same = replay_answers(KGQA(embedded_demo_kg), demo_train, records, {})
    assert len(same) == len(demo_train) and all(r.as_recorded and r.before == r.after for r in same)
    assert [r.hits1_before for r in same] == [records[r.id]["scores"]["hits1"] for r in same]
    one = replay_answers(KGQA(embedded_demo_kg), demo_train, records, {"max_answers": 1})
    several = [r for r in one if len(r.before) > 1]
    assert several and all(len(r.after) == 1 and r.after[0] == r.before[0] for r in several)
    assert all(r.hits1_after == r.hits1_before for r in one) and any(r.f1_after != r.f1_before for r in several)
    text = answers_table(one, changes={"max_answers": 1})
    assert f"| answers moved by the changes | {len(several)} |" in text and "| first answer right: gained / lost | 0 / 0 |" in text


def test_records_read_the_same_from_jsonl_and_from_a_rows_gzipped_records(records, tmp_path):
    import gzip
    import json

    from bench.replay import load_records

    lines = "".join(json.dumps(r) + "\n" for r in records.values()).encode()
    (tmp_path / "r.jsonl").write_bytes(lines)
    (tmp_path / "r.jsonl.gz").write_bytes(gzip.compress(lines))
    assert load_records(tmp_path / "r.jsonl.gz") == load_records(tmp_path / "r.jsonl") == records
