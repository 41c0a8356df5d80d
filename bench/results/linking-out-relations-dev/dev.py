"""The dev table of this directory's README: the linker with the graph feature `graph_out_relations`
(`base`, as shipped) and without it (`without`), each compiled on two thirds of the CWQ-mini dev rows
and scored on the other third, by the protocol of `../linking-tuning-dev/dev.py`. No LLM call.

    .venv/bin/python bench/results/linking-out-relations-dev/dev.py base,without 0,1,2 0,1,2,3   # ~35 min
"""
import importlib.util
import sys
from pathlib import Path

tuning_path = Path(__file__).resolve().parents[1] / "linking-tuning-dev" / "dev.py"
spec = importlib.util.spec_from_file_location("linking_tuning_dev", tuning_path)
tuning = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tuning)

tuning.VARIANTS["without"] = {"FEATURES": tuple(f for f in tuning.linking.FEATURES if f != "graph_out_relations")}

if __name__ == "__main__":
    tuning.main(sys.argv[1].split(","), [int(a) for a in sys.argv[2].split(",")], [int(a) for a in sys.argv[3].split(",")])
