"""programs.saving: what a compiled program writes beside program.json."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Counted:
    """A compiled part whose counts were gathered in some order (a linker's n-gram shares)."""

    counts: dict
    trained: bool = True

    def to_dict(self) -> dict:
        return {"counts": self.counts}


def test_a_compiled_part_is_the_same_file_whatever_order_its_counts_were_gathered_in(tmp_path):
    from kgqa.programs.saving import _write_part

    _write_part(tmp_path / "one.json", Counted({"which country": 7, "a": 233}))
    _write_part(tmp_path / "two.json", Counted({"a": 233, "which country": 7}))
    assert (tmp_path / "one.json").read_bytes() == (tmp_path / "two.json").read_bytes()
    _write_part(tmp_path / "one.json", Counted({}, trained=False))  # untrained: a stale file of an earlier compile goes
    assert not (tmp_path / "one.json").exists()
