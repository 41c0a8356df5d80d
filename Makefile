# kgqa: `make demo` sets up and runs the main job; `make test` sets up and runs the tests.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.kgqa-installed
export HF_HUB_OFFLINE := 1
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: setup demo test bench

# torch first, from its CPU wheel, so sentence-transformers does not pull CUDA packages;
# llama-cpp-python compiles from source the first time (minutes on 2 cores), then comes from pip's cache.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check torch==2.13.0
	$(BIN)/python -m pip install -q --disable-pip-version-check -e '.[test,local]'
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/kgqa demo

# pytest exits 5 when it collected no test: that must not pass.
test: setup
	$(BIN)/python -m pytest; rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests were collected" >&2; exit 1; fi; exit $$rc

bench: setup
	$(BIN)/python -m bench.kg_queries
