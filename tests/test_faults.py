"""Faults survived, nothing lost: a misbehaving LM, a failing graph, hostile files and rows."""

from __future__ import annotations

import json
import pickle
import re
import threading
import time

import dspy
import pytest

from kgqa.data.demo import DEMO_KG, split_path
from kgqa.data.examples import DatasetError
from kgqa.data.jsonl import load_jsonl, row_example
from kgqa.evaluate.runner import LMDown, evaluate, read_records
from kgqa.kg import KnowledgeGraph, SparqlEndpoint, virtuoso
from kgqa.kg.virtuoso import free_port
from kgqa.lm.faulty import OUTAGES, TEXT_FAULTS, FaultyEngine
from kgqa.programs import KGQA
from kgqa.programs.saving import ProgramFileError, load_program, save_program
from tests.kg.scripted_server import XML_OK, ScriptedServer
from tests.programs.oracle import demo_oracle


@pytest.fixture(scope="module")
def questions():
    everything = [ex for split in ("train", "dev", "test") for ex in load_jsonl(split_path(split))]
    return everything[:50]


@pytest.fixture(scope="module")
def kg(demo_store):
    return KnowledgeGraph(demo_store, profile="freebase")


def _faulty_lm(faulty: FaultyEngine) -> dspy.LM:
    return dspy.LM("scripted/faulty", engine=faulty, cache=False, num_retries=0)


class CountsFaults(KGQA):
    """KGQA that notes how many faults each question met."""

    def __init__(self, kg, faulty):
        super().__init__(kg)
        self.faulty, self.met = faulty, {}

    def forward(self, question, topic_entities=None):
        before = sum(self.faulty.injected.values())
        try:
            return super().forward(question, topic_entities)
        finally:
            self.met[question] = sum(self.faulty.injected.values()) - before


def test_faulty_model_text_over_fifty_questions(kg, questions, tmp_path):
    """Garbage, truncated JSON, wrong types and invented names on two in five of the calls of an
    evaluation run: every question gets a record with its stop reason, the walk falls back where a
    reply is unusable, and a question that met no fault answers right."""
    faulty = FaultyEngine(demo_oracle().scripted, rate=0.4, seed=7, faults=TEXT_FAULTS)  # ~2.5 calls a question: 40+ faults
    program = CountsFaults(kg, faulty)
    with dspy.context(lm=_faulty_lm(faulty)):
        summary = evaluate(program, questions, out=tmp_path / "p.jsonl", progress=False)
    lines = (tmp_path / "p.jsonl").read_text().splitlines()
    records = list(read_records(tmp_path / "p.jsonl").values())
    injected = sum(faulty.injected.values())
    print(f"injected={injected} {dict(faulty.injected)} questions={len(questions)} records={len(records)} "
          f"met_a_fault={sum(1 for n in program.met.values() if n)} errors={summary.errors} hits1={summary.hits1:.2f}")
    assert set(faulty.injected) == set(TEXT_FAULTS) and injected >= 40 and len(program.met) == len(questions)
    assert len(lines) == len(questions)  # none twice
    assert sorted(r["id"] for r in records) == sorted(ex.id for ex in questions)  # none lost
    assert all(r["trace"]["stop_reason"] and not r["error"] for r in records) and summary.lm_errors == 0
    assert not any({"made.up.relation", "Imaginary Person"} & set(r["answers"]) for r in records)
    untouched = [r["scores"]["hits1"] for r in records if not program.met[r["question"]]]
    assert len(untouched) >= 10 and all(untouched)  # a question that met no fault answers right
    assert summary.hits1 >= 0.6  # and most of the others still do
    assert summary.fallbacks > 0 and 0 < summary.degraded < 1  # and the summary shows what was not the model's choice


def test_lm_outages_are_error_records_that_a_rerun_answers_as_an_uninterrupted_run(kg, questions, tmp_path):
    """Exceptions and timeouts on a share of the calls: the questions that met one end as LM-error
    records with no answer (never a fallback answer); a rerun with a working LM asks exactly those
    again, and the final records equal those of a run that never met an outage."""
    with dspy.context(lm=demo_oracle()):
        clean = evaluate(KGQA(kg), questions, out=tmp_path / "clean.jsonl", progress=False)
    faulty = FaultyEngine(demo_oracle().scripted, rate=0.15, seed=3, faults=OUTAGES)
    program = CountsFaults(kg, faulty)
    with dspy.context(lm=_faulty_lm(faulty)):
        first = evaluate(program, questions, out=tmp_path / "p.jsonl", progress=False, stop_after=0)
    records = read_records(tmp_path / "p.jsonl")
    outaged = {r["id"] for r in records.values() if r["trace"]["stop_reason"] == "lm_error"}
    assert set(faulty.injected) == set(OUTAGES) and len(outaged) == sum(1 for n in program.met.values() if n) >= 5
    for question_id in outaged:
        record = records[question_id]
        assert record["answers"] == [] and record["error"] and "injected" in record["error"] and record["trace"]["fallbacks"] == 0
    assert first.lm_errors == len(outaged) and first.errors == len(outaged) and first.llm_failures > 0
    with dspy.context(lm=demo_oracle()):
        second = evaluate(CountsFaults(kg, faulty), questions, out=tmp_path / "p.jsonl", progress=False)
    lines = (tmp_path / "p.jsonl").read_text().splitlines()
    assert len(lines) == len(questions) + len(outaged)  # only the LM-error records were asked again
    final, reference = read_records(tmp_path / "p.jsonl"), read_records(tmp_path / "clean.jsonl")
    assert {i: r["answers"] for i, r in final.items()} == {i: r["answers"] for i, r in reference.items()}
    assert second.lm_errors == 0 and second.errors == 0 and second.hits1 == clean.hits1


@pytest.mark.parametrize("threads", [1, 2])
def test_an_lm_that_goes_down_stops_the_run_after_a_few_questions_and_keeps_every_record(kg, questions, tmp_path, threads):
    calls = {"n": 0}
    inner = demo_oracle().scripted
    lock = threading.Lock()

    class DiesAfterTen:
        def complete(self, request):
            with lock:
                calls["n"] += 1
                dead = calls["n"] > 10
            if dead:
                time.sleep(0.05)  # a refused connection, after its retries
                raise ConnectionRefusedError("[Errno 111] Connection refused")
            return inner.complete(request)

    with dspy.context(lm=dspy.LM("openai/kgqa-local", engine=DiesAfterTen(), cache=False, num_retries=0)):
        with pytest.raises(LMDown, match=rf"did not answer {3 if threads == 1 else '[34]'} questions in a row.*openai/kgqa-local "
                                         r"did not answer: ConnectionRefusedError.*run the same command again") as stopped:
            evaluate(KGQA(kg), questions[:20], out=tmp_path / "p.jsonl", progress=False, threads=threads)
    records = read_records(tmp_path / "p.jsonl")
    errors = [r for r in records.values() if r["error"]]
    # one failed call per question, then no more: the third in a row stops it, and no thread starts another question
    assert 3 <= len(errors) <= 3 + threads - 1 and len(records) < 20 and calls["n"] <= 10 + len(errors) + threads - 1
    assert all(r["trace"]["stop_reason"] == "lm_error" and r["answers"] == [] for r in errors)
    assert stopped.value.summary.questions == len(records) and stopped.value.summary.lm_errors == len(errors)
    with dspy.context(lm=demo_oracle()):
        resumed = evaluate(KGQA(kg), questions[:20], out=tmp_path / "p.jsonl", progress=False)
    assert resumed.questions == 20 and resumed.errors == 0


def test_a_graph_that_is_down_before_the_run_gives_records_not_a_crash(questions, tmp_path):
    down = KnowledgeGraph(SparqlEndpoint(f"http://127.0.0.1:{free_port()}/sparql", retries=1, backoff=0.01), profile="freebase")
    with dspy.context(lm=demo_oracle()):
        summary = evaluate(KGQA(down), questions[:5], out=tmp_path / "p.jsonl", progress=False)
    records = read_records(tmp_path / "p.jsonl")
    assert summary.questions == 5 and len(records) == 5
    assert all(r["trace"]["stop_reason"] == "kg_error" and "failed after 2 attempts" in r["trace"]["error"] for r in records.values())


@pytest.mark.parametrize("script", [[(500, b"Virtuoso 42000 Error", 0.0)] * 50, [(200, XML_OK, 2.5)] * 20], ids=["http-500", "hanging"])
def test_an_endpoint_failing_every_request_is_retried_boundedly(questions, tmp_path, script):
    server = ScriptedServer(script)
    try:
        kg = KnowledgeGraph(SparqlEndpoint(server.url, timeout=1, retries=1, backoff=0.01), profile="freebase")
        with dspy.context(lm=demo_oracle()):
            evaluate(KGQA(kg), questions[:3], out=tmp_path / "p.jsonl", progress=False)
    finally:
        server.close()
    records = read_records(tmp_path / "p.jsonl")
    assert len(records) == 3 and all(r["trace"]["stop_reason"] == "kg_error" for r in records.values())
    assert len(server.requests) == 3 * 2  # each question: one query, retried once, then its record


def test_virtuoso_dying_mid_run_loses_no_record(questions, tmp_path):
    if not virtuoso.available():
        pytest.skip("virtuoso-t not installed")
    server = virtuoso.LocalVirtuoso.start(tmp_path / "virtuoso", [DEMO_KG])
    kg = KnowledgeGraph(SparqlEndpoint(server.url, timeout=5, retries=1, backoff=0.05), profile="freebase")

    class StopsTheServer(KGQA):
        asked = 0

        def forward(self, question, topic_entities=None):
            StopsTheServer.asked += 1
            if StopsTheServer.asked == 4:
                server.stop()  # by PID, in the middle of the run
            return super().forward(question, topic_entities)

    try:
        with dspy.context(lm=demo_oracle()):
            summary = evaluate(StopsTheServer(kg), questions[:8], out=tmp_path / "p.jsonl", progress=False)
    finally:
        server.stop()
    lines = (tmp_path / "p.jsonl").read_text().splitlines()
    records = list(read_records(tmp_path / "p.jsonl").values())
    assert len(lines) == 8 and summary.questions == 8 and [r["id"] for r in records] == [ex.id for ex in questions[:8]]
    assert all(r["trace"]["stop_reason"] != "kg_error" for r in records[:3])
    assert all(r["trace"]["stop_reason"] == "kg_error" and server.url in r["trace"]["error"] for r in records[3:])


# -- hostile files and rows ------------------------------------------------------------------


@pytest.fixture
def saved(tmp_path, demo_store):
    directory = tmp_path / "program"
    save_program(KGQA(KnowledgeGraph(demo_store, profile="freebase")), directory, settings={"kg": "demo"})
    return directory


def tamper(directory, change):
    state = json.loads((directory / "program.json").read_text())
    change(state)
    (directory / "program.json").write_text(json.dumps(state))


@pytest.mark.parametrize(
    "change,message",
    [
        (lambda s: s.update(evil={"demos": []}), "unknown: \\['evil'\\]"),
        (lambda s: s.pop("check_sufficiency.predict"), "missing: \\['check_sufficiency\\.predict'\\]"),
        (lambda s: s["check_sufficiency.predict"].update(demos="not a list"), "demos must be a list"),
        (lambda s: s["check_sufficiency.predict"].update(exec="os.system('x')"), "unexpected state keys \\['exec'\\]"),
        (lambda s: s["check_sufficiency.predict"]["signature"].update(instructions=["not", "text"]), "instruction text"),
        (lambda s: s["check_sufficiency.predict"].update(demos=[{"question": "x" * 300_000}]), "a string of 300000 characters"),
        (lambda s: s["check_sufficiency.predict"].update(lm={"model": "openai/gpt-4o", "api_base": "http://evil"}), "must not carry an LM"),
    ],
)
def test_a_tampered_program_file_is_a_clear_error(saved, demo_store, change, message):
    tamper(saved, change)
    with pytest.raises(ProgramFileError, match=message):
        load_program(saved, KnowledgeGraph(demo_store, profile="freebase"))


class _Payload:
    def __reduce__(self):
        import pathlib

        return (pathlib.Path.touch, (pathlib.Path("/tmp/kgqa-pickle-ran"),))


def test_a_pickle_payload_is_never_executed(saved, demo_store, tmp_path):
    import pathlib

    marker = pathlib.Path("/tmp/kgqa-pickle-ran")
    marker.unlink(missing_ok=True)
    (saved / "program.json").write_bytes(pickle.dumps(_Payload()))
    with pytest.raises(ProgramFileError, match="not JSON"):
        load_program(saved, KnowledgeGraph(demo_store, profile="freebase"))
    assert not marker.exists()


def test_a_tampered_config_is_a_clear_error(saved, demo_store):
    config = json.loads((saved / "config.json").read_text())
    config["walk"] = {"depth": -3}
    (saved / "config.json").write_text(json.dumps(config))
    with pytest.raises(ProgramFileError, match="bad walk settings: depth must be >= 1"):
        load_program(saved, KnowledgeGraph(demo_store, profile="freebase"))


@pytest.mark.parametrize(
    "row,message",
    [
        ({"topic_entities": ["m.0dm001"], "answers": ["x"]}, "missing field 'question'"),
        ({"question": "", "topic_entities": ["m.0dm001"], "answers": ["x"]}, "the question is missing or empty"),
        ({"question": "q" * 100_000, "topic_entities": ["m.0dm001"], "answers": ["x"]}, "100,000 characters long"),
        ({"question": "q?", "answers": ["x"]}, "missing field 'topic_entity'"),
        ({"question": "q?", "topic_entities": "m.0dm001", "answers": ["x"]}, "topic_entities must be a list"),
        ({"question": "q?", "topic_entities": ["m.0dm001"]}, "missing field 'answers'"),
        ({"question": "q?", "topic_entities": ["m.0dm001"], "answers": [{"a": 1}]}, "answers must be a list of strings"),
    ],
)
def test_malformed_dataset_rows_are_clear_errors_and_rows_of_their_own(tmp_path, row, message):
    path = tmp_path / "data.jsonl"
    path.write_text(json.dumps({"question": "fine?", "topic_entities": ["m.0dm001"], "answers": ["x"]}) + "\n" + json.dumps(row) + "\n")
    fine, bad = list(load_jsonl(path))
    assert not getattr(fine, "bad_row", None) and fine.question == "fine?"
    assert re.match(f"{path}:2: .*{message}", bad.bad_row) and bad.id == "data-1"
    with pytest.raises(DatasetError, match=f"{path}:2: .*{message}"):  # the row check itself says the same
        row_example(row, f"{path}:2", default_id="data-1")
