"""The accuracy bench's bookkeeping: which records an ablation may keep from the compiled run."""

from __future__ import annotations

import gzip
import json
import random

import dspy
import pytest

from bench.accuracy import reuse_skipped
from kgqa.evaluate.runner import read_records


def record(id_: str, *statuses: str, error: str | None = None) -> dict:
    steps = [{"step": "plan", "status": "ran", "why": ""}] + [{"step": "fact_filter", "status": s, "why": ""} for s in statuses]
    return {"id": id_, "question": id_, "scores": {"hits1": 1.0}, "trace": {"steps": steps}, "seconds": 1.0, "error": error}


def test_an_ablation_keeps_the_records_where_its_step_only_skipped(tmp_path):
    rows = [record("a", "skipped"), record("b", "skipped", "ran"), record("c", "fell_back"), record("d", "skipped", error="lm down"), record("e")]
    (tmp_path / "bootstrap-test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    sample = {"a", "b", "c", "d", "e"}
    assert reuse_skipped(tmp_path, "bootstrap-no-fact-filter", "test", ids=sample - {"e"}) == 1  # only the sample's questions
    assert reuse_skipped(tmp_path, "bootstrap-no-fact-filter", "test", ids=sample) == 1  # a rerun adds nothing twice
    kept = read_records(tmp_path / "bootstrap-no-fact-filter-test.jsonl")
    assert sorted(kept) == ["a", "e"] and all(r["reused"] == "bootstrap" for r in kept.values())
    # the relation prune's skips still choose a chain: nothing is kept for its ablation
    assert reuse_skipped(tmp_path, "bootstrap-no-relation-prune", "test", ids=sample) == 0
    # nor for the chain prior's: it ranks every walk, and no step record says where it made no difference
    assert reuse_skipped(tmp_path, "bootstrap-no-chain-prior", "test", ids=sample) == 0


def test_every_switch_has_its_ablation_system():
    from bench.accuracy import ABLATIONS, SYSTEMS, ablated_step
    from kgqa.programs import SWITCHES, WalkConfig

    assert "bootstrap-no-chain-prior" in SYSTEMS and set(map(ablated_step, ABLATIONS)) == set(SWITCHES)
    assert all(not getattr(WalkConfig().without(ablated_step(system)), ablated_step(system)) for system in ABLATIONS)


def test_the_dev_split_asks_dev_questions_the_program_was_not_compiled_on(shared_data):
    from bench.accuracy import cwq_bench

    dev = cwq_bench(8, 20, 0, shared_data / "cwq_mini", split="dev")
    test = cwq_bench(8, 20, 0, shared_data / "cwq_mini")
    asked, compiled_on = {ex.id for ex in dev.test["dev"]}, {ex.id for ex in dev.train}
    assert list(dev.test) == ["dev"] and len(asked) == 8
    assert not asked & compiled_on
    assert compiled_on == {ex.id for ex in test.train}  # the same compile sample as the test run's
    assert not asked & {ex.id for ex in test.test["test"]}
    linked = dev.kg.link(ex.topic_entities[0] for ex in dev.test["dev"])  # their graphs are in the store
    assert all(linked.get(ex.topic_entities[0]) for ex in dev.test["dev"])


def test_more_adds_other_dev_questions_and_leaves_the_samples_as_they_were(shared_data):
    from bench.accuracy import cwq_bench

    plain = cwq_bench(8, 20, 0, shared_data / "cwq_mini", split="dev")
    bench = cwq_bench(8, 20, 0, shared_data / "cwq_mini", split="dev", more=5)
    assert [ex.id for ex in bench.test["dev"]] == [ex.id for ex in plain.test["dev"]]
    assert [ex.id for ex in bench.train] == [ex.id for ex in plain.train]
    more = {ex.id for ex in bench.test["more"]}
    assert len(more) == 5 and not more & {ex.id for ex in [*bench.test["dev"], *bench.train]}
    linked = bench.kg.link(ex.topic_entities[0] for ex in bench.test["more"])  # their graphs are in the store
    assert all(linked.get(ex.topic_entities[0]) for ex in bench.test["more"])


def test_types_sample_only_questions_of_those_types_and_all_of_them_when_asked_for_more(shared_data):
    from bench.accuracy import cwq_bench

    rows = [json.loads(line) for line in gzip.open(shared_data / "cwq_mini" / "cwq_mini_test.jsonl.gz", "rt")]
    superlatives = {r["id"] for r in rows if r["compositionality_type"] == "superlative"}
    assert {ex.id for ex in cwq_bench(1000, 20, 0, shared_data / "cwq_mini", types=("superlative",)).test["test"]} == superlatives
    dev = cwq_bench(8, 20, 0, shared_data / "cwq_mini", split="dev", types=("comparative", "superlative"))
    asked = dev.test["dev"]
    assert len(asked) == 8 and {ex.compositionality_type for ex in asked} <= {"comparative", "superlative"}
    assert not {ex.id for ex in asked} & {ex.id for ex in dev.train}
    usual = [r["id"] for r in random.Random(0).sample(rows, 8)]  # no types: the sample earlier runs asked
    assert [ex.id for ex in cwq_bench(8, 20, 0, shared_data / "cwq_mini").test["test"]] == usual


def test_types_are_checked(capsys):
    from bench.accuracy import main

    with pytest.raises(SystemExit):
        main(["--dataset", "cwq-mini", "--types", "superlative,tricky", "--report"])
    assert "unknown types ['tricky']" in capsys.readouterr().err


def test_a_types_sample_smaller_than_per_hop_gets_its_table_once_every_question_is_answered(shared_data, tmp_path):
    from bench.accuracy import cwq_bench, write_outputs
    from kgqa.programs.trace import Trace

    bench = cwq_bench(1000, 20, 0, shared_data / "cwq_mini", types=("superlative",))  # all 56 of them: fewer than asked for
    asked = bench.test["test"]
    scores = {"hits1": 1.0, "hit_any": 1.0, "precision": 1.0, "recall": 1.0, "f1": 1.0}
    rows = [{"id": ex.id, "question": ex.question, "gold": {"answers": list(ex.answers)}, "answers": list(ex.answers[:1]),
             "scores": scores, "trace": Trace().to_dict(), "seconds": 1.0, "error": None} for ex in asked]
    path = tmp_path / "bootstrap-test.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows[:-1]))
    _, missing = write_outputs(bench, tmp_path, ["bootstrap"], 1000)
    assert missing == [f"bootstrap test ({len(asked) - 1}/{len(asked)})"]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _, missing = write_outputs(bench, tmp_path, ["bootstrap"], 1000)
    table = (tmp_path / "table.md").read_text()
    assert missing == [] and f"| bootstrap | test | {len(asked)} | 1.000 |" in table and f"superlative (n={len(asked)})" in table


def test_candidate_recall_is_also_given_over_the_answerable_questions_alone():
    from bench.accuracy import by_type
    from kgqa.programs.trace import Trace

    def example(i, kind, graph):
        return dspy.Example(id=i, question=f"q{i}", answers=["Paris"], topic_entities=["France"], graph=graph,
                            compositionality_type=kind).with_inputs("question")

    examples = [example("a", "composition", [["France", "location.country.capital", "Paris"]]),
                example("b", "composition", [["France", "location.country.currency", "Euro"]]),  # Paris is not in its graph
                example("c", "conjunction", [["France", "location.country.capital", "Paris"]])]

    def record(i, hit, shown):
        trace = Trace()
        trace.candidates = shown
        return {"id": i, "gold": {"answers": ["Paris"]}, "scores": {"hits1": hit}, "trace": trace.to_dict()}

    records = {"bootstrap": {"a": record("a", 1.0, ["Paris"]), "b": record("b", 0.0, ["Euro"]), "c": record("c", 0.0, ["Lyon"])}}
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ")[1:] for line in by_type(records, examples).splitlines()[2:]}
    assert rows["answerable@3 (ceiling)"] == ["0.500", "1.000", "0.667 |"]
    assert rows["bootstrap"] == ["0.500", "0.000", "0.333 |"]
    # over the two answerable questions only: "a" showed Paris, "c" did not; "b" has no gold answer to show
    assert rows["bootstrap: candidate recall of the answerable"] == ["1.000", "0.000", "0.500 |"]


def test_a_program_in_the_results_folder_compiled_on_other_questions_is_not_reused(tmp_path):
    from bench.accuracy import Bench, ProgramMismatch, build
    from kgqa.kg import EmbeddedStore, KnowledgeGraph
    from kgqa.programs import WalkConfig
    from kgqa.programs.saving import PROGRAM_FORMAT

    bench = Bench("cwq-mini", KnowledgeGraph(EmbeddedStore()), {"dev": []}, [dspy.Example(question=f"q{i}") for i in range(20)])
    directory = tmp_path / "program-bootstrap"
    directory.mkdir()
    (directory / "program.json").write_text("{}")
    (directory / "config.json").write_text(json.dumps({"train": 600, "format": PROGRAM_FORMAT}))
    with pytest.raises(ProgramMismatch, match="compiled on 600 questions, not 20"):
        build("bootstrap", bench, tmp_path, WalkConfig(), "dev")


def test_a_program_in_the_results_folder_without_its_settings_is_a_clear_error(tmp_path):
    from bench.accuracy import Bench, build
    from kgqa.kg import EmbeddedStore, KnowledgeGraph
    from kgqa.programs import WalkConfig
    from kgqa.programs.saving import ProgramFileError

    bench = Bench("cwq-mini", KnowledgeGraph(EmbeddedStore()), {"dev": []}, [dspy.Example(question=f"q{i}") for i in range(20)])
    directory = tmp_path / "program-bootstrap"
    directory.mkdir()
    (directory / "program.json").write_text("{}")
    with pytest.raises(ProgramFileError, match="no config.json in"):
        build("bootstrap", bench, tmp_path, WalkConfig(), "dev")
