# One place for the project's commands. `make demo` and `make test` are the README's two commands.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
SEED   ?= 1

.PHONY: setup demo test browser-deps bench bench-pasur bench-pasur-dcfr bench-openspiel clean

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

## Set up, then run the test suite (-rs: skipped tests say why) on TEST_WORKERS processes
## (pytest-xdist; a test file stays on one worker, so its module fixtures are built once; the
## slow files go first, in tests/conftest.py's order, not xdist's by test count) with one
## torch/OpenMP thread each, so two workers never oversubscribe two cores. docs/testing.md.
TEST_WORKERS ?= 2
test: setup browser-deps
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(BIN)/python -m pytest -rs -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

## The browser test (tests/test_play_browser.py) drives Debian's chromium + chromium-driver:
## installed here when missing and running as root with apt-get (as on CI); otherwise the
## browser test is skipped and names the install command.
browser-deps:
	@if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing chromium + chromium-driver for the browser test (apt-get)"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
	    --no-install-recommends chromium chromium-driver \
	  || { echo "error: could not install chromium + chromium-driver for the browser test" >&2; exit 1; }; \
	else \
	  echo "note: no chromium/chromedriver; the browser test will be skipped" \
	       "(install: sudo apt-get install -y chromium chromium-driver)"; \
	fi

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
