"""bench.reproduce: a row compiled fresh, its records stamped and resumed, the README checked against them."""

from __future__ import annotations

import gzip
import json
import shutil

import pytest

from bench import reproduce
from bench.accuracy import Bench
from kgqa.data.demo import DEMO_KG, DEMO_PROFILE, split_path
from kgqa.data.jsonl import load_jsonl
from kgqa.kg import EmbeddedStore, KnowledgeGraph
from kgqa.lm.scripted import scripted_lm

ROW = reproduce.Row("metaqa", seed=0, per_hop=4, train=12, about="demo")


def demo_bench() -> Bench:
    store = EmbeddedStore()
    store.load_file(DEMO_KG, format="ntriples")
    test = list(load_jsonl(split_path("test")))[:4]
    return Bench("demo", KnowledgeGraph(store, profile=DEMO_PROFILE), {"test": test}, list(load_jsonl(split_path("train")))[:12])


@pytest.fixture()
def row(tmp_path, monkeypatch):
    """A row of the demo's questions in a scratch results folder, answered by an LM that says nothing useful."""
    monkeypatch.setitem(reproduce.ROWS, "demo-row", ROW)
    monkeypatch.setenv("KGQA_HOME", str(tmp_path / "home"))  # its MLflow runs
    lm = scripted_lm({}, default=lambda inputs: "no idea")
    folder = tmp_path / "results" / "demo-row"

    def run(**options):
        return reproduce.run_row("demo-row", ROW, folder=folder, lm=lm, lm_spec="scripted", bench=demo_bench(),
                                 progress=False, **options)

    return folder, run, lm


def readme_with(tmp_path, lines: list[str]):
    readme = tmp_path / "README.md"
    readme.write_text("# kgqa\n\n" + reproduce.TABLE_HEAD + "\n" + "\n".join(lines) + "\n")
    return readme


def test_a_row_is_compiled_evaluated_stamped_and_described_by_its_manifest(row):
    folder, run, lm = row
    manifest = run()
    records = reproduce.read_packed(folder, "test")
    assert len(records) == 4 and all(r["stamp"] == manifest["stamp"] for r in records)
    assert not reproduce.live_records(folder, "test").exists()  # packed once the sample is done
    assert manifest["stamp"] == {"program": reproduce.program_hash(folder / "program"), "code": reproduce.code_hash()}
    assert manifest["spec"]["seed"] == 0 and manifest["samples"]["test"]["questions"] == 4
    assert manifest["runs"][0]["questions_asked"] == 4 and manifest["compile_seconds"] > 0
    assert set(manifest["runs"][0]) >= {"commit", "clean", "engine", "wall_seconds", "started"}
    assert json.loads((folder / "manifest.json").read_text()) == manifest
    table = (folder / "table.md").read_text()
    assert table.splitlines()[2:3] == reproduce.row_lines("demo-row", folder) and "| first | " in table


def test_a_second_run_asks_nothing_and_compiles_the_same_program(row):
    folder, run, lm = row
    first = run()
    calls = len(lm.scripted.calls)
    assert calls > 0
    second = run(fresh=True)  # compiled again from scratch: the same program, so every record is kept
    assert second["stamp"] == first["stamp"]
    assert second["runs"][-1]["questions_asked"] == 0 and len(second["runs"]) == 2
    assert len(lm.scripted.calls) == calls


def test_records_of_another_program_or_code_are_asked_again(row, monkeypatch):
    folder, run, _ = row
    run()
    monkeypatch.setattr(reproduce, "code_hash", lambda root=reproduce.ROOT: "another-code")
    manifest = run()
    assert manifest["stamp"]["code"] == "another-code"
    assert manifest["runs"] == manifest["runs"][-1:] and manifest["runs"][0]["questions_asked"] == 4
    assert all(r["stamp"]["code"] == "another-code" for r in reproduce.read_packed(folder, "test"))


def test_the_check_passes_on_the_records_lines_and_fails_on_a_number_edited_by_hand(row, tmp_path):
    folder, run, _ = row
    run()
    lines = reproduce.row_lines("demo-row", folder)
    results = folder.parent
    readme = readme_with(tmp_path, lines)
    assert reproduce.check(readme, results, index=None) == ([], [])
    hits = lines[0].split(" | ")[3]
    edited = lines[0].replace(f" | {hits} | ", f" | {float(hits) + 0.01:.3f} | ", 1)
    problems, _ = reproduce.check(readme_with(tmp_path, [edited]), results, index=None)
    assert len(problems) == 1 and "differs from its records" in problems[0]


def test_the_check_names_rows_without_records_and_lists_stale_rows_without_failing(row, tmp_path, monkeypatch):
    folder, run, _ = row
    run()
    results = folder.parent
    lines = reproduce.row_lines("demo-row", folder)
    missing = lines[0].replace("| test |", "| dev |")
    problems, _ = reproduce.check(readme_with(tmp_path, [missing]), results, index=None)
    assert len(problems) == 1 and "no records" in problems[0]
    monkeypatch.setattr(reproduce, "code_hash", lambda root=reproduce.ROOT: "changed")
    problems, stale = reproduce.check(readme_with(tmp_path, lines), results, index=None)
    assert problems == [] and len(stale) == 1 and "code that answers changed" in stale[0] and "re-run" in stale[0]
    monkeypatch.undo()
    shutil.rmtree(folder / "program")
    assert "program files" in reproduce.check(readme_with(tmp_path, lines), results, index=None)[1][0]


def test_a_clone_without_the_scorer_weights_is_current_and_other_weights_are_stale(row, tmp_path):
    """The weights stay out of git: a clone lacks them, and its rows still read as current; weights
    that are not the ones the program was saved with make the row stale."""
    folder, run, _ = row
    run()
    weights, lines = folder / "program" / "path_scorer.safetensors", reproduce.row_lines("demo-row", folder)
    assert weights.is_file()
    kept = weights.read_bytes()
    weights.unlink()
    assert reproduce.check(readme_with(tmp_path, lines), folder.parent, index=None) == ([], [])
    weights.write_bytes(kept[:-1] + bytes([kept[-1] ^ 1]))
    _, stale = reproduce.check(readme_with(tmp_path, lines), folder.parent, index=None)
    assert len(stale) == 1 and "path_scorer.safetensors is not the one" in stale[0]


def test_git_keeps_the_program_packed_and_a_clone_unpacks_it_and_fits_the_weights_again(row, tmp_path):
    """What a clone has of a row (the packed JSON, no live copies, no weights) hashes as the program
    did; its row command unpacks the program, compiles the weights again and asks nothing anew."""
    folder, run, lm = row
    first = run()
    program = folder / "program"
    packed = {p.name for p in program.glob("*.gz")}
    assert packed == {f"{name}.gz" for name in reproduce.PACKED}
    lines = reproduce.row_lines("demo-row", folder)
    for name in [*reproduce.PACKED, "path_scorer.safetensors"]:
        (program / name).unlink()
    assert reproduce.program_hash(program) == first["stamp"]["program"]
    assert reproduce.check(readme_with(tmp_path, lines), folder.parent, index=None) == ([], [])
    calls = len(lm.scripted.calls)
    second = run()
    assert second["stamp"] == first["stamp"] and second["runs"][-1]["questions_asked"] == 0
    assert len(lm.scripted.calls) == calls
    assert all((program / name).is_file() for name in [*reproduce.PACKED, "path_scorer.safetensors"])
    (program / "chains.json").write_text("{}")  # a live copy that is not what git keeps: the packed one is loaded
    run()
    assert (program / "chains.json").read_bytes() == gzip.decompress((program / "chains.json.gz").read_bytes())


def test_a_resumed_run_keeps_what_a_crash_left(row, monkeypatch):
    folder, run, _ = row
    run()
    live = reproduce.unpack(folder, "test")  # as a run cut short would leave it: the live file, one record fewer
    live.write_text("".join(live.read_text().splitlines(keepends=True)[:3]))
    manifest = run()
    assert manifest["runs"][-1]["questions_asked"] == 1 and len(reproduce.read_packed(folder, "test")) == 4


def test_the_readme_equals_the_records_it_cites_and_the_index_is_current():
    """What `.ci/run` checks: every published number is its records' (`python -m bench.reproduce --check`)."""
    problems, _ = reproduce.check()
    assert problems == []
    assert reproduce.cited_lines(reproduce.README.read_text()), "the README cites no rebuilt row"


def test_every_program_under_bench_results_loads_or_says_it_needs_its_weights(tmp_path):
    """A row's program, unpacked as its command unpacks it (git keeps its JSON gzipped), loads at
    this kgqa's format; its fitted scorer weights stay out of git, and a clone without them is told
    so in one line, not a traceback."""
    from kgqa.programs.saving import ProgramFileError, load_program

    kg = demo_bench().kg
    programs = sorted(reproduce.RESULTS.glob("*/program"))
    assert programs, "no program under bench/results"
    for directory in programs:
        unpacked = tmp_path / directory.parent.name
        shutil.copytree(directory, unpacked)
        reproduce.unpack_program(unpacked)
        if (unpacked / "path_scorer.safetensors").exists() or not (unpacked / "path_scorer.json").exists():
            assert load_program(unpacked, kg) is not None
        else:
            with pytest.raises(ProgramFileError, match="safetensors.*recompile"):
                load_program(unpacked, kg)


def test_the_rank_table_places_the_gold_answer_among_the_candidates_shown():
    def record(candidates, hits1):
        return {"gold": {"answers": ["Seoul"]}, "trace": {"candidates": candidates}, "scores": {"hits1": hits1}}

    records = [record(["Seoul", "Busan"], 1.0), record(["Busan", "seoul"], 1.0), record(["Busan", "X", "Seoul"], 0.0),
               record(["A"] * 9 + ["Seoul"], 0.0), record(["Busan"], 0.0)]
    assert [reproduce.gold_rank(r) for r in records] == [1, 2, 3, 10, None]
    table = reproduce.rank_table(records).splitlines()
    assert table[2] == "| first | 0.20 (1) | 1.00 |" and table[3] == "| second or third | 0.40 (2) | 0.50 |"
    assert table[4] == "| fourth to tenth | 0.20 (1) | 0.00 |" and table[6] == "| not among them | 0.20 (1) | 0.00 |"


def test_a_run_cut_short_leaves_a_manifest_and_its_records_for_the_next(row, monkeypatch):
    folder, run, _ = row
    from kgqa.evaluate import runner

    answered = []
    real = runner.record_for

    def crash_after_two(*args, **kwargs):
        if len(answered) == 2:
            raise KeyboardInterrupt  # the session ends mid-run
        answered.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "record_for", crash_after_two)
    with pytest.raises(KeyboardInterrupt):
        run()
    cut = reproduce.read_manifest(folder)
    assert cut["running"] and cut["runs"] == [] and "wall_seconds" not in cut
    assert "in progress" in reproduce.index_text(folder.parent)
    monkeypatch.undo()
    manifest = run()
    assert [r.get("cut_short", False) for r in manifest["runs"]] == [True, False] and "running" not in manifest
    assert manifest["runs"][-1]["questions_asked"] == 2 and len(reproduce.read_packed(folder, "test")) == 4


def test_a_row_asks_each_sample_again_with_a_switch_off_and_with_the_scorer_alone_without_the_lm(tmp_path, monkeypatch):
    again = reproduce.Row("metaqa", seed=0, per_hop=4, train=12, alone=True, off=("path_scorer",), about="demo")
    monkeypatch.setitem(reproduce.ROWS, "demo-again", again)
    monkeypatch.setenv("KGQA_HOME", str(tmp_path / "home"))
    lm = scripted_lm({}, default=lambda inputs: "no idea")
    folder = tmp_path / "results" / "demo-again"
    manifest = reproduce.run_row("demo-again", again, folder=folder, lm=lm, lm_spec="scripted", bench=demo_bench(), progress=False)
    assert list(manifest["samples"]) == ["test", "test-no-path-scorer", "test-scorer-alone"]
    assert manifest["spec"]["off"] == ["path_scorer"] and manifest["spec"]["alone"] is True
    scored, unscored = reproduce.read_packed(folder, "test"), reproduce.read_packed(folder, "test-no-path-scorer")
    assert [r["id"] for r in scored] == [r["id"] for r in unscored]  # paired: the same questions, the same program
    assert any(r["trace"]["path_scorer"] for r in scored) and not any(r["trace"]["path_scorer"] for r in unscored)
    alone = reproduce.read_packed(folder, "test-scorer-alone")
    assert len(alone) == 4 and all(r["trace"]["llm_calls"] == 0 for r in alone)
    assert all(r["stamp"] == manifest["stamp"] for r in alone)
    lines = reproduce.row_lines("demo-again", folder)
    assert [line.split(" | ")[1] for line in lines] == ["test", "test-no-path-scorer", "test-scorer-alone"]
    assert " | 0.00 | 0 | " in lines[2]


def test_a_row_compiled_from_answers_alone_finds_its_training_questions_paths_in_the_graph(tmp_path, monkeypatch):
    plain = reproduce.Row("metaqa", seed=0, per_hop=4, train=12, answers_alone=True, about="demo")
    assert "answers_alone" not in ROW.spec() and plain.spec()["answers_alone"] is True  # earlier rows keep their spec
    monkeypatch.setitem(reproduce.ROWS, "demo-answers", plain)
    monkeypatch.setenv("KGQA_HOME", str(tmp_path / "home"))
    folder = tmp_path / "results" / "demo-answers"
    bench = demo_bench()
    reproduce.run_row("demo-answers", plain, folder=folder, lm=scripted_lm({}, default=lambda inputs: "no idea"),
                      lm_spec="scripted", bench=bench, progress=False)
    config = json.loads((folder / "program" / "config.json").read_text())
    assert config["path_labels"] == {"given": 0, "found": 12, "none": 0}
    assert all(ex.path for ex in bench.train)  # the bench's own questions are left as they were


def test_a_transfer_row_compiles_on_longer_questions_and_asks_the_one_relation_ones():
    transfer = reproduce.Row("cwq-mini", seed=0, per_hop=4, train=12, answers_alone=True, train_hops=(2, 3), ask_hops=(1,))
    assert transfer.spec()["train_hops"] == [2, 3] and "train_hops" not in ROW.spec()
    short = demo_bench()
    bench = Bench(short.dataset, short.kg, short.test, list(load_jsonl(split_path("train"))))  # every length
    narrowed = reproduce.narrowed(transfer, bench)
    hops = {ex.question: reproduce.hops_of(ex, bench) for ex in [*bench.train, *bench.test["test"]]}
    assert narrowed.train and all(hops[ex.question] in (2, 3) for ex in narrowed.train)
    assert len(narrowed.train) == sum(hops[ex.question] in (2, 3) for ex in bench.train) < len(bench.train)
    assert [ex.question for ex in narrowed.test["test"]] == [ex.question for ex in bench.test["test"] if hops[ex.question] == 1]
    assert reproduce.narrowed(ROW, bench) is bench


def test_a_row_may_ask_one_sample_now_and_the_others_later(tmp_path, monkeypatch):
    alone = reproduce.Row("metaqa", seed=0, per_hop=4, train=12, alone=True, about="demo")
    monkeypatch.setitem(reproduce.ROWS, "demo-alone", alone)
    monkeypatch.setenv("KGQA_HOME", str(tmp_path / "home"))
    lm = scripted_lm({}, default=lambda inputs: "no idea")
    folder = tmp_path / "results" / "demo-alone"

    def run(only):
        return reproduce.run_row("demo-alone", alone, folder=folder, lm=lm, lm_spec="scripted", bench=demo_bench(),
                                 progress=False, only=only)

    first = run(["test-scorer-alone"])
    assert first["runs"][-1]["samples"] == ["test-scorer-alone"] and first["runs"][-1]["questions_asked"] == 4
    assert len(reproduce.read_packed(folder, "test-scorer-alone")) == 4 and reproduce.read_packed(folder, "test") == []
    assert [line.split(" | ")[1] for line in reproduce.row_lines("demo-alone", folder)] == ["test-scorer-alone"]
    later = run([])  # the same program: the rest asked, the sample already there not again
    assert later["runs"][-1]["questions_asked"] == 4 and len(reproduce.read_packed(folder, "test")) == 4
    with pytest.raises(ValueError, match="demo-alone has no sample nope"):
        run(["nope"])
