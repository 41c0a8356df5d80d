"""A bad question is a bad question (issue 64), as a client sends it to a real `kgqa serve` and a
user types it to `kgqa ask`: a 4xx that says why in a few hundred bytes, never an LM outage, never a
5xx, never the input echoed back; and the server log holds kgqa's lines only."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import run_kgqa
from tests.test_server import BATCH, Served, program  # noqa: F401 (the served program fixture)

BAD_TEXT = {
    "a lone surrogate": "Who directed \ud800 Parasite?",
    "a NUL": "Who directed\x00 Parasite?",
    "an RTL override": "Who directed \u202eetisaraP?",
}


@pytest.fixture(scope="module")
def server(program, tmp_path_factory):  # noqa: F811 (the fixture imported above)
    served = Served(program, tmp_path_factory.mktemp("bad-requests"), delay=0.0)
    yield served
    served.close()


def post_text(server: Served, text: str) -> tuple[int, dict, int]:
    """POST a body whose JSON holds `text` as JSON escapes (a lone surrogate has no UTF-8 bytes)."""
    return server.post(json.dumps({"inputs": [{"question": text}]}).encode())


@pytest.mark.parametrize("what", BAD_TEXT)
def test_a_question_that_is_not_plain_text_is_400_and_never_reaches_the_lm(server, what):
    asked = len(server.calls())
    status, body, size = post_text(server, BAD_TEXT[what])
    assert (status, body["error_code"]) == (400, "BAD_REQUEST") and "bad question" in body["message"] and size < 400
    assert len(server.calls()) == asked and server.post({"inputs": [BATCH]})[0] == 200  # and the server answers on


def test_json_nested_too_deep_is_400(server):
    status, body, size = server.post(b'{"inputs": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    assert (status, body["error_code"]) == (400, "BAD_REQUEST") and "nested too deep" in body["message"] and size < 300


def test_too_many_topic_entities_are_400_and_unknown_ones_are_named_by_a_few(server):
    status, body, size = server.post({"inputs": [{"question": BATCH, "topic_entities": [f"m.x{n}" for n in range(10_000)]}]})
    assert status == 400 and "10,000 topic entities (limit 32)" in body["message"] and size < 300
    status, body, size = server.post({"inputs": [{"question": BATCH, "topic_entities": [f"m.x{n}" for n in range(30)]}]})
    trace = body["predictions"][0]["trace"]
    assert status == 200 and trace["stop_reason"] == "no_topic_entity"
    assert trace["error"] == "unknown topic entities: 'm.x0', 'm.x1', 'm.x2' and 27 more" and size < 2_000


def test_the_topic_limit_is_the_servers_to_set(program, tmp_path):  # noqa: F811
    served = Served(program, tmp_path, "--max-topic-entities", "2", delay=0.0)
    try:
        status, body, _ = served.post({"inputs": [{"question": BATCH, "topic_entities": ["m.0dm159"] * 3}]})
        assert status == 400 and "3 topic entities (limit 2)" in body["message"]
    finally:
        served.close()


def test_the_server_log_holds_kgqas_lines_only(server):
    server.post({"inputs": [BATCH]})
    log = "".join(server.output)
    assert "POST /invocations 200" in log  # -v: kgqa's own line for each request
    assert "Batches" not in log and "it/s]" not in log and "Warning" not in log, log[-2000:]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=10,
)
requests = st.one_of(
    json_values,
    st.fixed_dictionaries({"inputs": json_values}),
    st.fixed_dictionaries({"inputs": st.lists(st.one_of(st.text(max_size=30), st.fixed_dictionaries(
        {"question": st.text(max_size=30) | json_values}, optional={"topic_entities": json_values})), max_size=3)}),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(body=requests)
def test_any_json_gets_an_answer_or_a_4xx_that_stays_short(server, body):
    status, answer, size = server.post(json.dumps(body).encode())
    assert status == 200 or 400 <= status < 500, (status, answer)
    if status != 200:
        assert size < 1_000 and answer["error_code"] and answer["message"]


def test_kgqa_ask_with_bytes_that_are_not_utf8_says_bad_question(program, tmp_path):  # noqa: F811
    """A terminal that sends bytes that are not UTF-8: Python reads them as lone surrogates."""
    done = run_kgqa("ask", "Who directed \udc80 Parasite?", "--program", str(program), home=tmp_path, timeout=300)
    assert done.returncode == 1 and "no answer (bad_question): the question is not valid Unicode" in done.stderr
    assert "lm_error" not in done.stderr and "Traceback" not in done.stderr


def test_kgqa_evaluate_writes_a_record_for_every_row_and_resumes_past_bad_ones(program, tmp_path):  # noqa: F811
    data, out = tmp_path / "q.jsonl", tmp_path / "records.jsonl"
    rows = [{"question": f"Who directed \ud800 Parasite {n}?", "topic_entities": ["m.0dm159"], "answers": ["x"]} for n in range(4)]
    data.write_text("\n".join(map(json.dumps, [*rows, {"question": BATCH, "topic_entities": ["m.0dm159"], "answers": ["Bong Joon-ho"]}]))
                    + "\n{not json\n")
    for _ in range(2):  # the second run resumes: nothing left to ask, and nothing crashes
        done = run_kgqa("evaluate", "--program", str(program), "--data", f"jsonl:{data}", "--out", str(out), "--quiet",
                        home=tmp_path, timeout=300)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
        records = [json.loads(line) for line in out.read_text().splitlines()]
        assert len(records) == 6 and sum(r["trace"]["stop_reason"] == "bad_question" for r in records) == 5
    assert records[-1]["error"].endswith(":6: not valid JSON (Expecting property name enclosed in double quotes)")
