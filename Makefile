# Two entry points (README.md opens with them); everything installs into ./.venv from the package registry.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check -q

# Quiet, offline-friendly settings for every tool the targets run.
export DO_NOT_TRACK := 1
export PIP_NO_INPUT := 1

.PHONY: run test lint unit bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip

$(VENV)/.installed-core: pyproject.toml | $(PY)
	$(PIP) install -e .
	touch $@

# The tests exercise the model adapters with tiny random-weight models, so they need the models extra;
# constraints/ci.txt pins the torch wheels found on the build machines' disk.
$(VENV)/.installed-dev: pyproject.toml constraints/ci.txt | $(PY)
	$(PIP) install -c constraints/ci.txt -e ".[dev,models]"
	touch $@ $(VENV)/.installed-core

## run: install the core and run the main job (the bundled digits diversity example)
run: $(VENV)/.installed-core
	$(VENV)/bin/t2ibench diversity --example digits

## test: install the test dependencies, lint (ruff, mypy) and run the whole test suite
## (T2IBENCH_REQUIRE_MODELS=1 turns a skipped model test into a failure, as in CI)
test: $(VENV)/.installed-dev lint
	$(PY) -m pytest

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks
	$(VENV)/bin/mypy

## bench: the performance benchmarks that write docs/performance.md (slow: ~15 min)
bench: $(VENV)/.installed-dev
	$(PY) benchmarks/fkea_throughput.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache benchmarks/_scratch
