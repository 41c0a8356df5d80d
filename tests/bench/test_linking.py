"""The linking bench's samples: tuning on dev never links a test question."""

from __future__ import annotations

import dspy
import pytest

from bench.linking import cwq_split, main


def rows(prefix: str, count: int) -> list[dspy.Example]:
    return [dspy.Example(id=f"{prefix}{i}", question=f"q {i}", topic_entities=[f"e{i}"]) for i in range(count)]


def test_the_dev_split_scores_dev_rows_the_linker_was_not_compiled_on():
    dev, test = rows("dev", 30), rows("test", 12)
    train, samples = cwq_split(dev, test, split="dev", size=5, seed=0)
    (held,) = samples.values()
    assert list(samples) == ["dev held out"]
    assert len(train) == 20 and len(held) == 10
    assert {ex.id for ex in train} | {ex.id for ex in held} == {ex.id for ex in dev}
    assert not {ex.id for ex in train} & {ex.id for ex in held}
    again, _ = cwq_split(dev, test, split="dev", size=5, seed=0)
    other, _ = cwq_split(dev, test, split="dev", size=5, seed=1)
    assert [ex.id for ex in again] == [ex.id for ex in train]  # seeded
    assert [ex.id for ex in other] != [ex.id for ex in train]


def test_the_test_split_compiles_on_every_dev_row_and_scores_test_questions():
    dev, test = rows("dev", 30), rows("test", 12)
    train, samples = cwq_split(dev, test, split="test", size=5, seed=0)
    assert train == dev
    assert list(samples) == ["sample", "all test"]
    assert len(samples["sample"]) == 5 and {ex.id for ex in samples["sample"]} <= {ex.id for ex in test}
    assert samples["all test"] == test


def test_end_to_end_on_the_dev_split_is_refused(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["--split", "dev", "--end-to-end", "5", "--program", "somewhere"])
    assert stopped.value.code == 2
    assert "leave out --split dev" in capsys.readouterr().err


def test_linking_records_are_written_gzipped_one_question_a_line(tmp_path):
    import gzip
    import json

    from bench.linking import Scored, write_records

    scored = [Scored("q1", "who directed [Heat]", ["m.1"], ["m.1"], 3, 0.01234, [{"id": "m.1"}], 0),
              Scored("q2", "where is Lyon", ["m.2"], [], 0, 0.5, [], 1)]
    write_records(tmp_path / "links.jsonl.gz", scored)
    rows = [json.loads(line) for line in gzip.open(tmp_path / "links.jsonl.gz", "rt", encoding="utf-8")]
    assert [(r["id"], r["linked"], r["seconds"], r["llm_calls"]) for r in rows] == [("q1", ["m.1"], 0.0123, 0), ("q2", [], 0.5, 1)]
    assert rows[0]["best"] == [{"id": "m.1"}] and rows[1]["candidates"] == 0
