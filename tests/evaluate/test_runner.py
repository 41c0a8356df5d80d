"""Reading evaluation records: a crash's cut line is repaired, unless a reader must not write."""

from __future__ import annotations

import json

from kgqa.evaluate.runner import read_records


def test_a_cut_last_line_is_dropped_and_repaired_only_when_asked(tmp_path):
    path = tmp_path / "records.jsonl"
    whole = "".join(json.dumps({"id": f"q{i}", "answers": []}) + "\n" for i in range(2))
    path.write_text(whole + '{"id": "q2", "ans')
    assert list(read_records(path, repair=False)) == ["q0", "q1"]
    assert path.read_text().endswith('"ans')  # left as it was: a run may still be writing it
    assert list(read_records(path)) == ["q0", "q1"]
    assert path.read_text() == whole
