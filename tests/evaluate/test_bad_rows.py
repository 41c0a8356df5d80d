"""A bad row is a bad row: whatever a JSONL file holds, evaluation writes one record per row, never
crashes, never asks the LM about a question that cannot be asked, and resumes without asking again."""

from __future__ import annotations

import json
import string

import dspy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgqa.data.jsonl import load_jsonl
from kgqa.evaluate.runner import evaluate, read_records
from kgqa.programs import KGQA
from kgqa.programs.trace import StopReason
from tests.programs.oracle import demo_oracle

FINE = {"question": "Who directed Parasite?", "topic_entities": ["m.0dm159"], "answers": ["Bong Joon-ho"]}


@pytest.fixture(scope="module")
def program(embedded_demo_kg):
    return KGQA(embedded_demo_kg)


def write_rows(path, rows: list) -> None:
    path.write_bytes(b"".join((r if isinstance(r, bytes) else json.dumps(r).encode()) + b"\n" for r in rows))


def test_questions_that_are_not_valid_unicode_get_records_and_a_rerun_asks_nothing(program, tmp_path):
    """Issue 64's first row: lone surrogates (valid JSON) crashed the record writer and every rerun."""
    data, out = tmp_path / "q.jsonl", tmp_path / "records.jsonl"
    bad = [{**FINE, "id": f"s{n}", "question": f"Who directed \ud800 Parasite {n}?"} for n in range(4)]
    write_rows(data, [{**FINE, "id": "fine"}, *bad])
    lm = demo_oracle()
    with dspy.context(lm=lm):
        summary = evaluate(program, list(load_jsonl(data)), out=out, progress=False)
        asked = len(lm.scripted.calls)
        assert summary.questions == 5 and summary.errors == 4 and summary.lm_errors == 0
        records = read_records(out)
        assert all(records[f"s{n}"]["trace"]["stop_reason"] == StopReason.BAD_QUESTION.value for n in range(4))
        assert all("not valid Unicode" in records[f"s{n}"]["error"] and records[f"s{n}"]["escaped"] for n in range(4))
        assert records["s0"]["question"] == "Who directed \ud800 Parasite 0?"  # read back as it was written
        assert records["fine"]["scores"]["hits1"] == 1.0
        evaluate(program, list(load_jsonl(data)), out=out, progress=False)  # the rerun: nothing left to ask
        assert len(lm.scripted.calls) == asked and len(read_records(out)) == 5


def test_bytes_that_are_not_utf8_are_a_bad_question_of_that_row_only(tmp_path):
    data = tmp_path / "q.jsonl"
    write_rows(data, [FINE, b'{"question": "who \xff directed", "topic_entities": ["m.0dm001"], "answers": ["x"]}', FINE])
    rows = list(load_jsonl(data))
    assert [bool(getattr(r, "bad_row", None)) for r in rows] == [False, True, False]
    assert "not valid Unicode" in rows[1].bad_row and rows[1].bad_row.startswith(f"{data}:2:")


def test_control_characters_and_bidi_overrides_are_bad_questions_but_mojibake_is_not(program):
    from kgqa.data.questions import question_problem

    assert "control character (U+0000)" in question_problem("who\x00 directed Parasite")
    assert "bidirectional control" in question_problem("who directed \u202eetisaraP")
    assert question_problem("UTC\u00e2\u0088\u009205:00 time zone?") is None  # CWQ's own mojibake stays askable
    assert question_problem("tabs\tand\nnewlines are whitespace") is None
    assert "10,000 topic entities (limit 32)" in question_problem("q?", [f"m.{n}" for n in range(10_000)])
    assert "topic entity 1 is 501 characters" in question_problem("q?", ["m.1", "x" * 501])
    with dspy.context(lm=demo_oracle()):
        prediction = program(question="who\x00 directed Parasite", topic_entities=["m.0dm001"])
    assert prediction.trace.stop_reason is StopReason.BAD_QUESTION and prediction.trace.llm_calls == 0
    assert prediction.trace.sparql_queries == 0


def test_an_unknown_topic_list_is_named_by_a_few(program):
    with dspy.context(lm=demo_oracle()):
        prediction = program(question="Who directed it?", topic_entities=[f"m.nothing{n}" for n in range(30)])
    assert prediction.trace.stop_reason is StopReason.NO_TOPIC_ENTITY
    assert prediction.trace.error == "unknown topic entities: 'm.nothing0', 'm.nothing1', 'm.nothing2' and 27 more"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
row_like = st.fixed_dictionaries(
    {},
    optional={"question": st.text(max_size=40) | json_values, "topic_entities": st.lists(st.text(max_size=12), max_size=3) | json_values,
              "topic_entity": st.text(max_size=12) | json_values, "answers": st.lists(st.text(max_size=8), max_size=2) | json_values,
              "topic_names": json_values, "aliases": json_values, "id": st.text(string.ascii_letters, min_size=1, max_size=6) | json_values},
)
lines = st.lists(
    st.one_of(row_like.map(lambda r: json.dumps(r).encode()), json_values.map(lambda v: json.dumps(v).encode()),
              st.binary(max_size=40).filter(lambda b: b"\n" not in b and b"\r" not in b)),
    min_size=1, max_size=6,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rows=lines)
def test_any_jsonl_file_gets_one_record_per_row_and_never_crashes(program, tmp_path_factory, rows):
    folder = tmp_path_factory.mktemp("rows")
    data, out = folder / "q.jsonl", folder / "records.jsonl"
    data.write_bytes(b"\n".join(rows) + b"\n")
    examples = list(load_jsonl(data))
    with data.open(encoding="utf-8", errors="surrogateescape") as handle:
        assert len(examples) == sum(1 for line in handle if line.strip())  # one example per non-blank line
    with dspy.context(lm=demo_oracle()):
        summary = evaluate(program, examples, out=out, progress=False)
    ids = {ex.id for ex in examples}
    records = read_records(out)
    assert set(records) == ids and summary.questions == len(ids) and summary.lm_errors == 0
    assert all(r["error"] for r in records.values() if r["trace"].get("stop_reason") == StopReason.BAD_QUESTION.value)


def test_json_nested_too_deep_is_a_bad_row(tmp_path):
    data = tmp_path / "q.jsonl"
    write_rows(data, [b"[" * 100_000 + b"]" * 100_000, FINE])
    deep, fine = load_jsonl(data)
    assert deep.bad_row == f"{data}:1: JSON nested too deep" and not getattr(fine, "bad_row", None)


def test_a_record_keeps_only_the_first_thousand_characters_of_a_huge_question(program, tmp_path):
    from kgqa.evaluate.runner import RECORD_CHARS

    data, out = tmp_path / "q.jsonl", tmp_path / "records.jsonl"
    write_rows(data, [{**FINE, "id": "huge", "question": "Who directed " + "Parasite " * 300_000 + "?"}, {**FINE, "id": "fine"}])
    with dspy.context(lm=demo_oracle()):
        summary = evaluate(program, list(load_jsonl(data)), out=out, progress=False)
    records = read_records(out)
    assert summary.questions == 2 and records["fine"]["scores"]["hits1"] == 1.0
    huge = records["huge"]
    assert huge["question"].startswith("Who directed Parasite") and len(huge["question"]) <= RECORD_CHARS + 3
    assert "2,700,014 characters long" in huge["error"] and len(huge["error"]) <= RECORD_CHARS + 3
    assert out.stat().st_size < 20_000
