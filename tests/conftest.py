"""Shared fixtures: the demo KG on every backend, and the real data beside the project."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from kgqa.env import stay_offline  # noqa: E402

stay_offline()

import pyoxigraph as ox  # noqa: E402
import pytest  # noqa: E402

from kgqa.data.demo import DEMO_KG  # noqa: E402
from kgqa.kg import EmbeddedStore, KnowledgeGraph, SparqlEndpoint, virtuoso  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
IN_CI = os.environ.get("CI", "").lower() == "true"


def run_kgqa(*args: str, home: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    """`python -m kgqa ARGS` as a user runs it, with HOME as its work directory ($KGQA_HOME)."""
    env = {**os.environ, "KGQA_HOME": str(home), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "kgqa", *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)


def require_local_lm(*modules: str) -> None:
    """Skip unless the local LM (llama-cpp-python, the assembled model, and MODULES) is installed;
    in CI, where `make setup` installs it, fail instead."""
    import importlib

    from kgqa.lm.model import LocalModelError, model_path

    try:
        for module in ("llama_cpp", *modules):
            importlib.import_module(module)
        model_path()
    except (ImportError, LocalModelError) as exc:
        if IN_CI:
            pytest.fail(f"CI installs the local LM: {exc}")
        pytest.skip(f"local LM not installed: {exc}")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        if IN_CI:
            pytest.fail(f"CI runs need the real data at {SHARED_DATA}")
        pytest.skip(f"real data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def demo_store() -> EmbeddedStore:
    store = EmbeddedStore()
    store.load_file(DEMO_KG, format="ntriples")
    return store


@pytest.fixture(scope="session")
def embedded_demo_kg(demo_store) -> KnowledgeGraph:
    """The demo KG on the embedded store with its Freebase-style profile, as `kgqa --kg demo` opens it."""
    return KnowledgeGraph(demo_store, profile="freebase")


@pytest.fixture(scope="session")
def demo_train() -> list:
    """The demo's training questions, with their gold relation paths."""
    from kgqa.data.demo import split_path
    from kgqa.data.jsonl import load_jsonl

    return list(load_jsonl(split_path("train")))


@pytest.fixture(scope="session")
def unindexed_demo_store() -> EmbeddedStore:
    """The demo KG in a store without the relation index (as stores made before it): the scanning queries."""
    store = EmbeddedStore()
    store.store.bulk_load(path=str(DEMO_KG), format=ox.RdfFormat.N_TRIPLES)
    assert store.relation_table is None
    return store


@pytest.fixture(scope="session")
def virtuoso_installed() -> None:
    """Skips a test where virtuoso-t is missing; fails it in CI, which must run them."""
    if not virtuoso.available():
        if IN_CI:
            pytest.fail("CI must run the Virtuoso contract tests: virtuoso-t is missing")
        pytest.skip("virtuoso-t not installed (apt-get install virtuoso-opensource)")


@pytest.fixture(scope="session")
def virtuoso_server(tmp_path_factory, virtuoso_installed):
    """A real Virtuoso on 127.0.0.1 (free ports, temp dir), bulk-loaded with the demo KG, stopped by PID."""
    server = virtuoso.LocalVirtuoso.start(tmp_path_factory.mktemp("virtuoso"), [DEMO_KG])
    yield server
    server.stop()


@pytest.fixture(params=["embedded", "embedded-unindexed", "virtuoso"])
def demo_kg(request, demo_store) -> KnowledgeGraph:
    """The demo KG (Freebase profile) on the embedded store (with and without its relation index)
    and on Virtuoso: one contract, every backend and query shape."""
    if request.param == "embedded":
        return KnowledgeGraph(demo_store, profile="freebase")
    if request.param == "embedded-unindexed":
        return KnowledgeGraph(request.getfixturevalue("unindexed_demo_store"), profile="freebase")
    server = request.getfixturevalue("virtuoso_server")
    return KnowledgeGraph(SparqlEndpoint(server.url, timeout=10), profile="freebase")


@pytest.fixture()
def read_backs(monkeypatch) -> list:
    """One entry each time an embedded store builds its relation index by reading its graph back
    (`kg.relation_index.build_relation_index`), not from what a load gathered."""
    from kgqa.kg import embedded

    calls = []
    real = embedded.build_relation_index
    monkeypatch.setattr(embedded, "build_relation_index", lambda *a, **k: (calls.append(1), real(*a, **k))[1])
    return calls
