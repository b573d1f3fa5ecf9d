# One place for the project's commands. `make demo` and `make test` are the README's two commands.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
SEED   ?= 1

.PHONY: setup demo test bench bench-pasur bench-pasur-dcfr bench-openspiel clean

$(BIN)/tensorcfr: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt torch==2.13.0
	$(BIN)/pip install -q -c constraints.txt -e '.[test]'
	@touch $@

setup: $(BIN)/tensorcfr

## Set up, then solve a Pasur deal exactly (the main job).
demo: setup
	$(BIN)/tensorcfr pasur solve --seed $(SEED)

## Set up, then run the test suite.
test: setup
	$(BIN)/python -m pytest

bench: bench-pasur bench-pasur-dcfr bench-openspiel

bench-pasur: setup
	$(BIN)/python benchmarks/bench_pasur_exact.py

bench-pasur-dcfr: setup
	$(BIN)/python benchmarks/bench_pasur_dcfr.py --seeds 0-9 --modes dag,tree

bench-openspiel: setup
	$(BIN)/pip install -q -c constraints.txt -e '.[test,bench]'
	$(BIN)/python benchmarks/bench_openspiel.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache
