"""The demo KG (`demo.nt`, Freebase-shaped) and its questions (`train/dev/test.jsonl`); see `build.py`."""

from pathlib import Path

DEMO_DIR = Path(__file__).parent
DEMO_KG = DEMO_DIR / "demo.nt"
DEMO_PROFILE = "freebase"


def split_path(split: str) -> Path:
    """Path of a demo question split: train, dev or test."""
    if split not in {"train", "dev", "test"}:
        raise ValueError(f"demo splits are train, dev and test, not {split!r}")
    return DEMO_DIR / f"{split}.jsonl"
