"""kgqa claims one import name: the concept folders are `kgqa.*` subpackages, never top-level modules."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("kg", "data", "programs", "signatures", "optimizers", "evaluate")


def test_a_users_own_data_module_is_not_shadowed(tmp_path):
    (tmp_path / "data.py").write_text("MINE = True\n")
    others = [folder for folder in FOLDERS if folder != "data"]
    script = (
        "import importlib.util, data, kgqa.data.rog, kgqa.programs\n"
        "assert data.MINE, data.__file__\n"
        f"assert all(importlib.util.find_spec(name) is None for name in {others!r}), 'a kgqa folder is top-level'\n"
        "print(kgqa.data.__file__, kgqa.programs.KGQA.__module__)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                            env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"})
    assert result.returncode == 0, result.stderr
    kgqa_data, module = result.stdout.split()
    assert Path(kgqa_data) == ROOT / "data" / "__init__.py" and module == "kgqa.programs.kgqa"


def test_the_wheel_holds_only_the_kgqa_package(tmp_path):
    source = tmp_path / "source"  # built from a copy: building in place would leave build/ in the checkout
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".*", "build", "bench", "tests", "*.egg-info", "__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(source)],
                   check=True, capture_output=True, timeout=600)
    (wheel,) = tmp_path.glob("kgqa-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"kgqa", wheel.name.split("-py")[0] + ".dist-info"}
    assert {f"kgqa/{folder}/__init__.py" for folder in FOLDERS} <= set(names)
    assert "kgqa/data/demo/demo.nt" in names and not any(name.startswith("kgqa/tests/") for name in names)
