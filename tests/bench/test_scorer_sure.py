"""bench.scorer_sure: the paired outcome of letting the path scorer answer where it is sure."""

from __future__ import annotations

import json

import pytest

from bench import scorer_sure


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


def test_records_without_the_share_or_none_at_all_are_a_clear_error(tmp_path, capsys):
    old = [{**r, "trace": {k: v for k, v in r["trace"].items() if k != "first_share"}} for r in RECORDS]
    with pytest.raises(ValueError, match="run them again"):
        scorer_sure.sweep(old)
    with pytest.raises(ValueError, match="no records"):
        scorer_sure.sweep([])
    path = tmp_path / "dev.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    assert scorer_sure.main([str(path), "--thresholds", "0.8"]) == 0
    assert "| 0.80 | 1 |" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        scorer_sure.main([str(tmp_path / "missing.jsonl")])
