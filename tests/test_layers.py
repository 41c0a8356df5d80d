"""Layers import downward only: the graph at the bottom, the command line and the LM engines on top."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# each folder's layer (its import name), lowest first
LAYERS = ["kg", "data", "signatures", "programs", "evaluate", "optimizers"]
# below them all: the one error base, progress bars, the cache of joined files
FOUNDATION = {"kgqa.errors", "kgqa.progress", "kgqa.cache"}
TOP = "kgqa"  # kgqa/: the command line, its use cases and the LM engines
# the gold-path teacher that labels compiling is a scripted LM; it lives with the LM engines for now
KNOWN = {("optimizers/labels.py", "kgqa.lm.scripted")}


def imported(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
    return {name for name in names if name == TOP or name.startswith(TOP + ".")}


def layer(module: str) -> int:
    """The layer a kgqa module belongs to: its folder's, the top for the rest of kgqa/, -1 for the foundation."""
    if module in FOUNDATION:
        return -1
    part = module.split(".")[1] if module.count(".") else ""
    return LAYERS.index(part) if part in LAYERS else len(LAYERS)


def test_no_layer_imports_a_layer_above_it():
    upward = []
    for level, folder in enumerate(LAYERS):
        for path in sorted((ROOT / folder).rglob("*.py")):
            where = path.relative_to(ROOT).as_posix()
            upward += [f"{where} imports {name}" for name in sorted(imported(path))
                       if layer(name) > level and (where, name) not in KNOWN]
    assert not upward, "\n".join(upward)


def test_the_foundation_imports_nothing_but_the_graph_s_error():
    above = {f"{name} imports {other}" for name in FOUNDATION
             for other in imported(ROOT / (name.replace(".", "/") + ".py")) - FOUNDATION - {"kgqa.kg.errors"}}
    assert not above, "\n".join(sorted(above))


def test_the_check_sees_an_upward_import(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("from kgqa.lm.adapter import choices\nimport kgqa.errors\nfrom kgqa.kg import Node\n")
    assert imported(module) == {"kgqa.lm.adapter", "kgqa.errors", "kgqa.kg"}
    assert [layer(name) for name in sorted(imported(module))] == [-1, 0, len(LAYERS)]
