# kgqa: `make demo` sets up and runs the main job; `make test` sets up and runs the tests.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.kgqa-installed
export HF_HUB_OFFLINE := 1
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: setup demo test bench doctor

# torch first, from its CPU wheel, so sentence-transformers does not pull CUDA packages. Then
# llama-cpp-python, built by kgqa/lm/build.py with the flags that are safe on this CPU (native minus
# AMX; KGQA_LLAMA_BUILD=portable for the AVX2 build) and cached per CPU under $KGQA_CACHE/wheels,
# never in pip's cache. Setup ends by proving the engine in a child process (kgqa/lm/smoke.py): a
# build that crashes on this CPU stops setup with one line that says why and how to rebuild.
$(STAMP): pyproject.toml kgqa/lm/build.py
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check torch==2.13.0
	$(BIN)/python -m kgqa.lm.build
	$(BIN)/python -m pip install -q --disable-pip-version-check -e '.[test,local]'
	$(BIN)/python -m kgqa.lm.smoke
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/kgqa demo

# pytest exits 5 when it collected no test: that must not pass.
test: setup
	$(BIN)/python -m pytest; rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests were collected" >&2; exit 1; fi; exit $$rc

bench: setup
	$(BIN)/python -m bench.kg_queries

doctor: setup
	$(BIN)/kgqa doctor
