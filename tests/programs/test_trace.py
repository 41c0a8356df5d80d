"""The typed trace: what programs write, what records keep, and failures told apart."""

from __future__ import annotations

import json
from pathlib import Path

import dspy
import pytest

from kgqa.evaluate.runner import summarize
from kgqa.kg import KnowledgeGraph
from kgqa.lm.faulty import FaultyEngine
from kgqa.programs import KGQA
from kgqa.programs.trace import StopReason, Trace
from tests.programs.oracle import demo_oracle, oracle

OLD_RECORDS = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "earlier-records-2hop.jsonl"  # the first walk's


@pytest.fixture(scope="module")
def kg(demo_store) -> KnowledgeGraph:
    return KnowledgeGraph(demo_store, profile="freebase")


def test_a_trace_round_trips_through_its_json_shape(kg):
    with dspy.context(lm=oracle(["film.film.directed_by"])):
        trace = KGQA(kg)(question="Who directed Parasite?").trace
    assert isinstance(trace, Trace) and trace.stop_reason is StopReason.CHOSEN and not trace.stop_reason.failed
    data = json.loads(json.dumps(trace.to_dict()))
    assert data["stop_reason"] == "chosen" and data["relation_path"] == [["film.film.directed_by", "out"]]
    assert Trace.from_dict(data) == trace


def test_records_written_by_an_older_kgqa_still_read():
    records = [json.loads(line) for line in OLD_RECORDS.read_text().splitlines()]
    assert "parse_failures" not in records[0]["trace"] and "walk" not in records[0]["trace"]  # an old shape
    traces = [Trace.from_dict(r["trace"]) for r in records]
    assert all(isinstance(t.stop_reason, StopReason) for t in traces) and all(t.parse_failures == 0 and t.walk == [] for t in traces)
    assert summarize(records).llm_calls == pytest.approx(sum(r["trace"]["llm_calls"] for r in records) / len(records))
    assert Trace.from_dict({"stop_reason": "no_such_reason", "future_key": 1}).stop_reason is None


def test_an_unparseable_reply_falls_back_and_the_walk_goes_on(kg):
    engine = FaultyEngine(demo_oracle().scripted, rate=1.0, faults=("garbage",))
    with dspy.context(lm=dspy.LM("scripted/faulty", engine=engine, cache=False, num_retries=0)):
        trace = KGQA(kg)(question="Who directed Parasite?").trace
    assert trace.parse_failures == trace.llm_calls >= 1 and trace.llm_failures == 0
    assert trace.fallbacks >= 1 and not trace.stop_reason.failed  # the model's answer quality: the walk fell back


@pytest.mark.parametrize("fault", ["exception", "timeout"])
def test_an_lm_that_does_not_answer_ends_the_question_with_an_error_not_a_fallback(kg, fault):
    engine = FaultyEngine(demo_oracle().scripted, rate=1.0, faults=(fault,))
    with dspy.context(lm=dspy.LM("scripted/faulty", engine=engine, cache=False, num_retries=0)):
        pred = KGQA(kg)(question="Who directed Parasite?")
    trace = pred.trace
    assert pred.answers == [] and pred.paths == [] and trace.fallbacks == 0 and trace.parse_failures == 0
    assert trace.llm_calls == trace.llm_failures == 1  # the first call failed: no further step was taken
    assert trace.stop_reason is StopReason.LM_ERROR and trace.stop_reason.failed and trace.stop_reason.unfinished
    assert "scripted/faulty did not answer" in trace.error and "injected" in trace.error
