# The two commands a new user needs:
#   make demo   set up the virtualenv and run the main job
#   make test   set up, build (or reuse) the control-plane binaries, run every gate and test
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint typecheck imports pytest controlplane protos bench clean

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is required (set PYTHON=...)")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed-runtime: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[fakenrt]'
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.installed-runtime

demo: $(VENV)/.installed-runtime
	$(BIN)/fakenrt demo

controlplane:
	@tests/controlplane/build.sh >/dev/null

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy

imports: $(VENV)/.installed-dev
	$(BIN)/lint-imports

pytest: $(VENV)/.installed-dev
	NUMA_TESTKIT_CONTROLPLANE_BIN="$$(tests/controlplane/build.sh)" $(BIN)/pytest

test: $(VENV)/.installed-dev
	tests/controlplane/build.sh >/dev/null
	$(MAKE) --no-print-directory lint typecheck imports pytest

protos: $(VENV)/.installed-dev
	$(BIN)/python -m protos.generate

bench: $(VENV)/.installed-runtime
	for script in benchmarks/bench_*.py; do echo "== $$script"; $(BIN)/python "$$script"; done

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
