# Two entry points (README.md opens with them); everything installs into ./.venv from the package registry.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check -q

# Quiet, offline-friendly settings for every tool the targets run.
export DO_NOT_TRACK := 1
export PIP_NO_INPUT := 1
# Python writes its bytecode caches (src/**/__pycache__, ignored by git and DVC): an environment that forbids it
# (PYTHONDONTWRITEBYTECODE, set on some build machines) makes each of the hundreds of Python processes the tests and
# a refresh start compile the package's modules again (~1 s of CPU each).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: run test lint unit repro bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip

# The main job needs the model adapters (torch, from the machine's local wheels via constraints/ci.txt) and
# the orchestration stack (Prefect, DuckDB, DVC).
$(VENV)/.installed-core: pyproject.toml constraints/ci.txt | $(PY)
	$(PIP) install -c constraints/ci.txt -e ".[models,orchestration]"
	touch $@

# The tests exercise the model adapters with tiny random-weight models, so they need the models extra;
# constraints/ci.txt pins the torch wheels found on the build machines' disk.
$(VENV)/.installed-dev: pyproject.toml constraints/ci.txt | $(PY)
	$(PIP) install -c constraints/ci.txt -e ".[dev,models,orchestration]"
	touch $@ $(VENV)/.installed-core

## run: install and run the main job: the offline leaderboard on real content (configs/offline.yaml)
run: $(VENV)/.installed-core
	$(VENV)/bin/t2ibench run --config configs/offline.yaml

## test: install the test dependencies, lint (ruff, mypy) and run the whole test suite on two workers
## (pytest-xdist; a file stays on one worker, so its module fixtures are built once; one math thread per worker,
## since two workers × two OpenMP threads on two cores spin and stall each other)
## (T2IBENCH_REQUIRE_MODELS=1 turns a skipped model test into a failure, as in CI)
## (--no-loadscope-reorder: files go out in tests/conftest.py's LONGEST_FIRST order; by default xdist re-sorts them
## by their number of tests, which starts the many-case files first and leaves the long end-to-end files to the end)
## (lint runs beside the tests, its output held back and shown after theirs: its ~40 s on one core would otherwise
## leave the other core idle; either failing fails the target, pytest's own exit status first)
test: $(VENV)/.installed-dev
	@lint_log=$$(mktemp); \
	( $(LINT) ) > "$$lint_log" 2>&1 & lint_pid=$$!; \
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m pytest -n 2 --dist loadfile --no-loadscope-reorder --durations=15; \
	tests=$$?; wait $$lint_pid; linted=$$?; \
	echo "---- make lint (ruff, mypy; run beside the tests) ----"; cat "$$lint_log"; rm -f "$$lint_log"; \
	if [ $$linted -ne 0 ]; then echo "make test: lint failed (above)" >&2; fi; \
	if [ $$tests -ne 0 ]; then exit $$tests; fi; exit $$linted

## unit: the fast tier for the edit loop (unit tests not marked slow, on two workers; no lint): ~1 min here
unit: $(VENV)/.installed-dev
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m pytest tests/unit -m "not slow" -q -n 2 --dist loadfile

## repro: the DVC pipeline (paper tables), from the project's environment
repro: $(VENV)/.installed-core
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/dvc repro

LINT = $(VENV)/bin/ruff check src tests benchmarks flows tasks && \
	$(VENV)/bin/ruff format --check src tests benchmarks flows tasks && \
	$(VENV)/bin/mypy

lint: $(VENV)/.installed-dev
	$(LINT)

## bench: the performance benchmarks that write docs/performance.md (slow: ~25 min)
bench: $(VENV)/.installed-dev
	$(PY) benchmarks/fkea_throughput.py
	$(PY) benchmarks/system_runtime.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .prefect benchmarks/_scratch data/smoke reports/smoke data/offline reports/offline
