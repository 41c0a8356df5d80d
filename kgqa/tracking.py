"""MLflow tracking: every compile and evaluate is a run. Local by default: a SQLite store in the
kgqa work directory (`$KGQA_HOME`, else `./.kgqa`); `mlflow ui --backend-store-uri URI` shows it.
Only LM model strings are logged, never keys or endpoint credentials."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path


def work_dir() -> Path:
    return Path(os.environ.get("KGQA_HOME", ".kgqa")).resolve()


def default_tracking_uri() -> str:
    path = work_dir() / "mlflow.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path}"


@contextlib.contextmanager
def mlflow_run(
    name: str, *, params: Mapping[str, object], tracking_uri: str | None = None, experiment: str = "kgqa"
) -> Iterator[object]:
    import logging

    import mlflow

    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # kgqa's own lines are the output
    logging.getLogger("mlflow").setLevel(logging.ERROR)
    logging.getLogger("alembic").setLevel(logging.ERROR)
    mlflow.set_tracking_uri(tracking_uri or default_tracking_uri())
    mlflow.set_experiment(experiment)
    with mlflow.start_run(run_name=name) as run:
        mlflow.log_params({k: _param(v) for k, v in params.items()})
        yield run


def log_metrics(prefix: str, metrics: Mapping[str, float]) -> None:
    import mlflow

    mlflow.log_metrics({f"{prefix}{k}": float(v) for k, v in metrics.items() if isinstance(v, (int, float))})


def set_tag(key: str, value: str) -> None:
    import mlflow

    mlflow.set_tag(key, value)


def log_artifact(path: str | Path, *, artifact_path: str | None = None) -> None:
    import mlflow

    mlflow.log_artifact(str(path), artifact_path=artifact_path)


@contextlib.contextmanager
def autolog_compile() -> Iterator[None]:
    """The optimizer's traces, through MLflow's DSPy autologging, for the duration of a compile."""
    import mlflow

    mlflow.dspy.autolog(log_traces=False, log_traces_from_compile=True, log_compiles=True, log_evals=False, silent=True)
    try:
        yield
    finally:
        mlflow.dspy.autolog(disable=True, silent=True)


def _param(value: object) -> str:
    text = str(value)
    return text if len(text) <= 500 else text[:497] + "..."
