"""bench.scorer_sure: the paired outcome of letting the path scorer answer where it is sure."""

from __future__ import annotations

import gzip
import json

import pytest

from bench import scorer_sure
from kgqa.evaluate.runner import read_records
from kgqa.lm.scripted import scripted_lm
from tests.bench.test_reproduce import demo_bench


def record(qid: str, *, gold: str, answered: str, shown: list[str], share: float | None, usage: dict | None = None) -> dict:
    return {"id": qid, "gold": {"answers": [gold], "aliases": {}}, "answers": [answered],
            "scores": {"hits1": float(answered == gold)},
            "trace": {"candidates": shown, "first_share": share, "path_scorer": share is not None,
                      "step_usage": usage or {"plan": [1, 500, 20], "extract_answers": [1, 1000, 9]}}}


RECORDS = [
    record("sure-and-right", gold="Paris", answered="Lyon", shown=["Paris", "Lyon"], share=0.9),  # gained at 0.9 and below
    record("sure-and-wrong", gold="Lyon", answered="Lyon", shown=["Paris", "Lyon"], share=0.7,  # lost at 0.7 and below
           usage={"extract_answers": [1, 1000, 9], "filter_facts": [1, 600, 80]}),
    record("unsure", gold="Lyon", answered="Lyon", shown=["Paris", "Lyon"], share=0.2),
    record("no-scorer", gold="Paris", answered="Nice", shown=["Paris"], share=None),  # never answered by the scorer
]


def test_each_threshold_pairs_the_scorers_first_with_the_run_question_by_question():
    high, middle = scorer_sure.sweep(RECORDS, thresholds=(0.8, 0.6))
    assert (high.answered, high.gained, high.lost) == (1, 1, 0)
    assert high.hits_run == pytest.approx(2 / 4) and high.hits_sure == pytest.approx(3 / 4)
    assert (high.calls_saved, high.tokens_saved) == (1, 1000)
    assert (middle.answered, middle.gained, middle.lost) == (2, 1, 1)
    assert middle.hits_sure == pytest.approx(2 / 4)
    assert (middle.calls_saved, middle.tokens_saved) == (3, 2600)  # the fact filter read for extraction alone too
    assert "| 0.80 | 1 | 0.500 | 0.750 | +1 / -0 | 0.25 | 250 |" in scorer_sure.table([high])


def test_the_break_even_is_the_share_of_right_firsts_above_which_the_first_should_answer_alone():
    # right firsts: "sure-and-right" (extraction lost it), "no-scorer" (lost); wrong firsts: "sure-and-wrong", "unsure"
    # (both rescued): kept 0 of 2, rescued 2 of 2
    assert scorer_sure.break_even(RECORDS).endswith("right more than 0.50 of the time")
    kept = [record("a", gold="x", answered="x", shown=["x"], share=0.5), record("b", gold="x", answered="x", shown=["x"], share=0.5),
            record("c", gold="x", answered="x", shown=["x"], share=0.5), record("d", gold="x", answered="y", shown=["x"], share=0.5),
            record("e", gold="x", answered="x", shown=["y"], share=0.5), record("f", gold="x", answered="y", shown=["y"], share=0.5)]
    # kept 3 of 4 right firsts (0.75), rescued 1 of 2 wrong (0.5): 0.5 / (0.5 + 0.25)
    assert "3 of 4 (0.750)" in scorer_sure.break_even(kept) and scorer_sure.break_even(kept).endswith("0.67 of the time")
    assert "not measured" in scorer_sure.break_even(kept[:4])


def test_records_without_the_share_or_none_at_all_are_a_clear_error(tmp_path, capsys):
    old = [{**r, "trace": {k: v for k, v in r["trace"].items() if k != "first_share"}} for r in RECORDS]
    with pytest.raises(ValueError, match="run them again"):
        scorer_sure.sweep(old)
    with pytest.raises(ValueError, match="no records"):
        scorer_sure.sweep([])
    path = tmp_path / "dev.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    assert scorer_sure.main(["--records", str(path), "--thresholds", "0.8"]) == 0
    assert "| 0.80 | 1 |" in capsys.readouterr().out
    packed = tmp_path / "dev.jsonl.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    assert scorer_sure.load(packed) == scorer_sure.load(path) == RECORDS
    with pytest.raises(SystemExit):
        scorer_sure.main(["--records", str(tmp_path / "missing.jsonl")])


def test_one_command_compiles_once_asks_with_extraction_deciding_and_resumes(tmp_path, monkeypatch):
    monkeypatch.setenv("KGQA_HOME", str(tmp_path / "home"))
    bench, lm = demo_bench(), scripted_lm({}, default=lambda inputs: "no idea")
    path = scorer_sure.ask(bench, tmp_path / "sure", lm=lm, sample="test", progress=False)
    records = list(read_records(path, repair=False).values())
    assert len(records) == 4 and (tmp_path / "sure" / "program-bootstrap" / "program.json").is_file()
    assert any(r["trace"]["first_share"] is not None for r in records)  # the compiled scorer ordered them
    assert not any("path scorer is sure" in s["why"] for r in records for s in r["trace"]["steps"])
    calls = len(lm.scripted.calls)
    assert scorer_sure.ask(bench, tmp_path / "sure", lm=lm, sample="test", progress=False) == path
    assert len(lm.scripted.calls) == calls  # resumed: nothing asked again, nothing compiled again
    assert len(scorer_sure.sweep(records)) == len(scorer_sure.THRESHOLDS)
    with path.open("a") as f:  # a record of a question the program was compiled on, copied in from another run
        f.write(json.dumps({**records[0], "id": bench.train[0].id}) + "\n")
    with pytest.raises(ValueError, match="1 records of questions the program was compiled on"):
        scorer_sure.ask(bench, tmp_path / "sure", lm=lm, sample="test", progress=False)
    assert scorer_sure.foreign_records(path, sample=[r["id"] for r in records] + [bench.train[0].id], compiled_on=[]) is None
    assert "1 records of questions outside the sample" in scorer_sure.foreign_records(path, sample=[r["id"] for r in records], compiled_on=[])


def test_the_threshold_the_compile_measured_is_swept_and_marked(tmp_path, monkeypatch, capsys):
    from kgqa.programs.scorer import Calibration, PathScorer

    monkeypatch.setenv("KGQA_HOME", str(tmp_path / "home"))
    bench, lm = demo_bench(), scripted_lm({}, default=lambda inputs: "no idea")
    path = scorer_sure.ask(bench, tmp_path / "sure", lm=lm, sample="test", progress=False)
    program = tmp_path / "sure" / "program-bootstrap"
    assert scorer_sure.main(["--records", str(path), "--program", str(program), "--thresholds", "0.8"]) == 0
    assert "trusts the scorer at no share" in capsys.readouterr().out  # fitted on 4 questions: too few to measure
    scorer = PathScorer.load(program)
    scorer.calibration = Calibration(held_out=120, precision=0.36, sure_at=0.45, measured=100, right=70)
    scorer.save(tmp_path / "calibrated")
    assert scorer_sure.main(["--records", str(path), "--program", str(tmp_path / "calibrated"), "--thresholds", "0.8"]) == 0
    out = capsys.readouterr().out
    assert "from a share of 0.45 (its first was a gold answer on 70 of 100" in out
    assert "| 0.45 (compiled) |" in out and "| 0.80 |" in out
    with pytest.raises(SystemExit):  # a program whose scorer is spoiled
        (tmp_path / "calibrated" / "path_scorer.json").write_text("{}")
        scorer_sure.main(["--records", str(path), "--program", str(tmp_path / "calibrated")])
