"""A compiled program as an MLflow model: logged from code, registered by name, loaded by URI, served.

The model is `kgqa/mlflow_model.py` (MLflow's models-from-code: the code file is the model, no
pickle) with the program's directory as its one artifact, `program/` holding `program.json` and
`config.json`. Loading it reads those two JSON files as `programs.saving` does, so a model runs
nothing from its files but kgqa's own code. The pyfunc takes questions (a string, a list of
strings, or records / a DataFrame with `question` and optional `topic_entities`) and returns one
record per question: `answers`, `paths` (GCR reasoning paths) and `trace`.

The graph and the LM are the ones the program's `config.json` names; `KGQA_SERVE_KG` and
`KGQA_SERVE_LM` override them for a served copy (an endpoint URL, `openai/...` with
`KGQA_SERVE_API_BASE`). `kgqa serve` (kgqa.server) serves a program over HTTP, bounded and stoppable.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path

from kgqa.data.questions import QuestionLimits, question_problem
from kgqa.errors import KGQAError

MODEL_CODE = Path(__file__).with_name("mlflow_model.py")
ARTIFACT = "program"
URI_SCHEMES = ("models:/", "runs:/", "mlflow-artifacts:/")


class BadRequest(KGQAError, ValueError):
    """A request the model cannot answer as asked: no question, a question too long, wrong types."""


def log_model(directory: str | Path, *, registered_name: str | None = None):
    """Log the compiled program in `directory` to the active MLflow run as a pyfunc model, and
    register it under `registered_name` if given. Returns MLflow's ModelInfo."""
    import mlflow

    with _without_type_hint_advice():
        return mlflow.pyfunc.log_model(name="kgqa", registered_model_name=registered_name, **_model_parts(directory))


@contextlib.contextmanager
def _without_type_hint_advice() -> Iterator[None]:
    """MLflow advises typing `predict` for its own input validation, and prints the advice past any
    filter (its loader resets them). `predict` takes what MLflow's server hands over (records, a
    DataFrame, strings) and checks it itself (`questions_of`), so the advice is dropped: kgqa's own
    lines are the output."""
    shown = warnings.showwarning

    def show(message, category, *args, **kwargs):
        if "Add type hints to the `predict` method" not in str(message):
            shown(message, category, *args, **kwargs)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = shown


def _model_parts(directory: str | Path) -> dict:
    """What a kgqa model is made of: the model code, the program directory as its artifact, kgqa."""
    return {"python_model": str(MODEL_CODE), "artifacts": {ARTIFACT: str(Path(directory).resolve())}, "pip_requirements": ["kgqa"]}


def is_model_uri(location: str | Path) -> bool:
    return str(location).startswith(URI_SCHEMES)


def program_dir(location: str | Path, *, tracking_uri: str | None = None) -> Path:
    """A local directory holding program.json and config.json: `location` itself, or the program
    artifact of the MLflow model at a `models:/NAME/VERSION`, `models:/NAME@alias` or `runs:/` URI
    (looked up in `tracking_uri`, default kgqa's own tracking store)."""
    if not is_model_uri(location):
        return Path(location)
    import mlflow

    from kgqa.tracking import default_tracking_uri

    mlflow.set_tracking_uri(tracking_uri or default_tracking_uri())
    try:
        local = Path(mlflow.artifacts.download_artifacts(artifact_uri=str(location)))
    except Exception as exc:  # MLflow raises its own kinds for an unknown name, version or run
        raise KGQAError(f"cannot fetch the model {location}: {type(exc).__name__}: {exc}") from None
    found = next((p.parent for p in local.rglob("config.json") if (p.parent / "program.json").is_file()), None)
    if found is None:
        raise KGQAError(f"{location} holds no kgqa program (program.json and config.json)")
    return found


def questions_of(model_input, *, limits: QuestionLimits = QuestionLimits()) -> list[tuple[str, list[str] | None]]:
    """(question, topic entities) pairs from what a pyfunc may be given; BadRequest when unusable
    (the question check of `kgqa.data.questions`, under `limits`)."""
    rows = _rows(model_input)
    if not rows:
        raise BadRequest("no question: send {\"inputs\": [{\"question\": \"...\"}]} or a list of questions")
    pairs = []
    for n, row in enumerate(rows):
        row = _plain(row)  # MLflow's server hands JSON strings and lists over as numpy arrays
        if isinstance(row, dict):
            row = {key: _plain(value) for key, value in row.items()}
        if isinstance(row, str):
            row = {"question": row}
        if not isinstance(row, dict):
            raise BadRequest(f"input {n}: expected a question or an object with `question`, got {type(row).__name__}")
        question, topics = row.get("question"), row.get("topic_entities")
        if not isinstance(question, str) or not question.strip():
            raise BadRequest(f"input {n}: `question` must be a non-empty string")
        if topics is not None and not (isinstance(topics, list) and all(isinstance(t, str) for t in topics)):
            raise BadRequest(f"input {n}: `topic_entities` must be a list of strings")
        problem = question_problem(question, topics, limits=limits)
        if problem:
            raise BadRequest(f"input {n}: bad question: {problem}")
        pairs.append((question, topics or None))
    return pairs


def _rows(model_input) -> list:
    if hasattr(model_input, "to_dict") and hasattr(model_input, "columns"):  # a pandas DataFrame
        records = model_input.to_dict(orient="records")
        return [{k: _plain(v) for k, v in r.items()} for r in records]
    if isinstance(model_input, (str, dict)):
        return [model_input]
    if isinstance(model_input, Iterable):
        return list(model_input)
    raise BadRequest(f"expected questions, got {type(model_input).__name__}")


def _plain(value):
    """A DataFrame cell as plain Python: numpy arrays of topic ids become lists, NaN becomes None."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, float) and value != value:
        return None
    return value


def serve_settings(saved: dict) -> tuple[str, str, str | None]:
    """(KG spec, LM spec, API base) for a served program: its config.json, unless the environment says otherwise."""
    return (os.environ.get("KGQA_SERVE_KG") or saved.get("kg", "demo"), os.environ.get("KGQA_SERVE_LM") or saved.get("lm", "local"),
            os.environ.get("KGQA_SERVE_API_BASE"))
