"""A compiled program on disk: `DIR/program.json` (DSPy state, JSON only), `DIR/config.json`
(graph, profile, LM, knobs, data, optimizer, versions) and, once compiled, `DIR/linking.json` (the
entity linker's counts and weights), `DIR/chains.json` (the chain prior: training questions and
their gold relation chains) and `DIR/path_scorer.safetensors` with `DIR/path_scorer.json` (the path
scorer's fitted layers and settings: `programs.scorer`). Loading checks the JSON's shape before DSPy
sees it, so a tampered file is a clear error and nothing in it is executed; weights are safetensors,
never pickles. `config.json` carries the program format (`PROGRAM_FORMAT`): a program saved in
another one, by an earlier kgqa, is one clear error that says to recompile, not a branch that reads it."""

from __future__ import annotations

import json
import logging
import platform
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from kgqa.errors import KGQAError
from kgqa.kg import KnowledgeGraph
from kgqa.programs.base import KGProgram
from kgqa.programs.chains import ChainPrior
from kgqa.programs.config import WalkConfig
from kgqa.programs.linking import Linker
from kgqa.programs.scorer import PathScorer

log = logging.getLogger(__name__)
PROGRAM_FILE, CONFIG_FILE, LINKING_FILE, CHAINS_FILE = "program.json", "config.json", "linking.json", "chains.json"
# The shape of a saved program: its predictors, its parts beside it and its walk settings. Raised
# whenever one of them changes shape; 2 is the first stamped (the one program with the path scorer),
# 3 holds each step's predictor inside its step module ("plan.predict"), 4 leaves the hand-set
# constants (`programs.tuned`) out of the walk settings, 5 has no `agreed_answers` switch.
PROGRAM_FORMAT = 5
MAX_FILE_BYTES = 50_000_000
MAX_STRING = 200_000
_PREDICTOR_KEYS = {"traces", "train", "demos", "signature", "lm"}


class ProgramFileError(KGQAError, ValueError):
    """A program directory that cannot be loaded safely."""


def versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for package in ("kgqa", "dspy", "pyoxigraph", "SPARQLWrapper", "mlflow"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    return found


def save_program(program: KGProgram, directory: str | Path, *, settings: dict) -> Path:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    program.save(str(directory / PROGRAM_FILE))
    _write_part(directory / LINKING_FILE, program.linker)
    _write_part(directory / CHAINS_FILE, program.chain_prior)
    program.path_scorer.save(directory)
    saved = {**settings, "format": PROGRAM_FORMAT, "walk": program.config.to_dict(), "versions": versions()}
    (directory / CONFIG_FILE).write_text(json.dumps(saved, indent=2, default=str) + "\n")
    return directory


def _write_part(path: Path, part: Linker | ChainPrior) -> None:
    """A compiled part beside the program (the linker, the chain prior): written once trained; an
    untrained one leaves no file, so a stale part of an earlier compile is removed."""
    if part.trained:
        path.write_text(json.dumps(part.to_dict(), ensure_ascii=False, sort_keys=True))  # sorted: counts gathered in sets follow the hash seed
    else:
        path.unlink(missing_ok=True)


def read_settings(directory: str | Path) -> dict:
    """The settings a program was compiled with (`config.json`): KG, profile, LM, walk, versions. Its
    format stamp is checked first, so nothing reads the settings of a program this kgqa cannot load."""
    path = Path(directory) / CONFIG_FILE
    if not path.is_file():
        raise ProgramFileError(f"no {CONFIG_FILE} in {directory} (make one with `kgqa compile ... --out {directory}`)")
    settings = _read_json(path)
    if not isinstance(settings, dict):
        raise ProgramFileError(f"{path} must hold a JSON object")
    check_format(settings, directory)
    return settings


def check_format(settings: dict, directory: str | Path) -> None:
    """One line naming both formats and the command that recompiles, for a program saved in another
    format than this kgqa reads (unstamped: format 1, saved before the stamp)."""
    found = settings.get("format") or 1
    if found == PROGRAM_FORMAT:
        return
    recompile = f"recompile it with `kgqa compile ... --out {directory}`"
    if not isinstance(found, int) or isinstance(found, bool):
        raise ProgramFileError(f"{Path(directory) / CONFIG_FILE}: the program format must be a number, not {found!r}: {recompile}")
    if found > PROGRAM_FORMAT:
        raise ProgramFileError(f"{directory} was saved by a newer kgqa (program format {found}, this kgqa reads {PROGRAM_FORMAT}): "
                               f"upgrade kgqa, or {recompile}")
    raise ProgramFileError(f"{directory} was saved by an earlier kgqa (program format {found}, this kgqa reads {PROGRAM_FORMAT}): "
                           f"{recompile}")


def load_program(directory: str | Path, kg: KnowledgeGraph, *, settings: dict | None = None) -> KGProgram:
    """The program saved in `directory`, on `kg`. A program saved in another format (by an earlier
    kgqa) is a clear error that says to recompile."""
    from kgqa.programs import KGQA

    directory = Path(directory)
    settings = settings if settings is not None else read_settings(directory)
    path = directory / PROGRAM_FILE
    if not path.is_file():
        raise ProgramFileError(f"no {PROGRAM_FILE} in {directory}")
    check_format(settings, directory)
    state = _read_json(path)
    check_state(state, expected={name for name, _ in KGQA(kg).named_predictors()}, source=path)
    try:
        walk = WalkConfig(**settings.get("walk", {}))
    except (TypeError, ValueError) as exc:
        raise ProgramFileError(f"{directory / CONFIG_FILE}: bad walk settings: {exc}") from None
    program = KGQA(kg, config=walk)
    try:
        program.load_state(state)
    except Exception as exc:  # DSPy raises many kinds on a state that does not fit
        raise ProgramFileError(f"{path}: cannot load: {type(exc).__name__}: {exc}") from None
    if (directory / LINKING_FILE).is_file():
        program.linker = _read_part(directory / LINKING_FILE, Linker.from_dict)
    if (directory / CHAINS_FILE).is_file():
        program.chain_prior = _read_part(directory / CHAINS_FILE, ChainPrior.from_dict)
    try:  # a program compiled with the scorer off (or by the `none` teleprompter) has none: the hand-set order
        program.path_scorer = PathScorer.load(directory)
    except (ValueError, OSError) as exc:
        raise ProgramFileError(f"{directory}: {exc}") from None
    if not program.path_scorer.trained:
        log.info("%s has no path scorer: the candidates keep the hand-set order", directory)
    return program


def _read_part(path: Path, parse: Callable[[object], object]) -> object:
    """A compiled part saved beside the program (the linker, the chain prior), its shape checked by `parse`."""
    state = _read_json(path)
    _check_strings(state, path)
    try:
        return parse(state)
    except (ValueError, TypeError) as exc:
        raise ProgramFileError(f"{path}: {exc}") from None


def _read_json(path: Path) -> object:
    if path.stat().st_size > MAX_FILE_BYTES:
        raise ProgramFileError(f"{path} is {path.stat().st_size} bytes (limit {MAX_FILE_BYTES})")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProgramFileError(f"{path} is not JSON (programs are saved as state JSON, never pickles): {exc}") from None


def check_state(state: object, *, expected: set[str], source: Path) -> None:
    """The state must have exactly our predictors, each with DSPy's keys and plain JSON values."""
    if not isinstance(state, dict):
        raise ProgramFileError(f"{source}: expected a JSON object of predictor states")
    names = set(state) - {"metadata"}
    if names != expected:
        unknown, missing = sorted(names - expected), sorted(expected - names)
        raise ProgramFileError(f"{source}: predictors do not match this program (unknown: {unknown}, missing: {missing})")
    for name in expected & names:
        predictor = state[name]
        if not isinstance(predictor, dict) or not set(predictor) <= _PREDICTOR_KEYS:
            raise ProgramFileError(f"{source}: {name}: unexpected state keys {sorted(set(predictor) - _PREDICTOR_KEYS) if isinstance(predictor, dict) else type(predictor).__name__}")
        if not isinstance(predictor.get("demos", []), list) or not all(isinstance(d, dict) for d in predictor.get("demos", [])):
            raise ProgramFileError(f"{source}: {name}: demos must be a list of objects")
        signature = predictor.get("signature", {})
        if not isinstance(signature, dict) or not isinstance(signature.get("instructions", ""), str):
            raise ProgramFileError(f"{source}: {name}: signature must hold instruction text")
        if predictor.get("lm") not in (None, {}):
            raise ProgramFileError(f"{source}: {name}: a saved program must not carry an LM (set it with --lm)")
    _check_strings(state, source)


def _check_strings(value: object, source: Path) -> None:
    if isinstance(value, str):
        if len(value) > MAX_STRING:
            raise ProgramFileError(f"{source}: a string of {len(value)} characters (limit {MAX_STRING})")
    elif isinstance(value, dict):
        for item in value.values():
            _check_strings(item, source)
    elif isinstance(value, list):
        for item in value:
            _check_strings(item, source)
