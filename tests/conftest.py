"""Shared fixtures and helpers for the test suite."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

import numpy as np
import pytest

from t2ibench.benchmarks.geneval.suite import REWRITTEN
from t2ibench.benchmarks.t2i_compbench.suite import ENV as T2I_COMPBENCH_ENV

REPO = Path(__file__).resolve().parents[1]
# GenEval's released files (prompts, MTurk annotations): the documented local-path override, for offline machines
# and CI; defaults to ../shared/geneval beside the checkout. The product fetches them (`t2ibench data fetch`).
GENEVAL_DATA = Path(os.environ.get("T2IBENCH_GENEVAL_DATA") or REPO.parent / "shared" / "geneval")
# GenEval 2's file (CC BY-NC 4.0: read from this copy, never copied into the repository): $T2IBENCH_GENEVAL2_DATA,
# default ../shared/geneval2; the product fetches it (`t2ibench data fetch geneval2`, the geneval2_data stage).
GENEVAL2_DATA = Path(os.environ.get("T2IBENCH_GENEVAL2_DATA") or REPO.parent / "shared" / "geneval2")
# GenEval's prompts rewritten long (BAGEL's file, Apache-2.0): $T2IBENCH_GENEVAL_REWRITTEN_DATA (the release's env),
# default ../shared/geneval_rewritten; the product fetches it (`t2ibench data fetch geneval_rewritten`)
GENEVAL_REWRITTEN_DATA = Path(os.environ.get(REWRITTEN.env) or REPO.parent / "shared" / "geneval_rewritten")
# T2I-CompBench++'s prompt files (MIT, shipped in the package): a local copy the tests compare the shipped ones with,
# $T2IBENCH_T2I_COMPBENCH_DATA (its name: the suite module's ENV), default ../shared/t2i_compbench
T2I_COMPBENCH_DATA = Path(os.environ.get(T2I_COMPBENCH_ENV) or REPO.parent / "shared" / "t2i_compbench")


# The longest files first: with `pytest -n 2 --dist loadfile` (make test) files are handed to the workers in this
# order, so the long poles start at once instead of ending the run alone on one worker. Ordered by their measured
# time in `make test` (--durations, December 2026: the first two ~150-200 s each, the rest ~15-100 s); xdist hands
# each worker two files up front, then one whenever it is down to one, so the two longest start side by side.
# (This order holds only with xdist's --no-loadscope-reorder, as make test runs it: by default xdist re-sorts the
# files by their number of tests.)
LONGEST_FIRST = (
    "integration/test_real_content.py",
    "integration/test_flows.py",
    "integration/test_dvc.py",
    "integration/test_inputs_are_keys.py",
    "integration/test_crash_resume.py",
    "integration/test_signals.py",
    "integration/test_bad_inputs.py",
    "integration/test_concurrency.py",
    "unit/test_sql_security.py",
    "integration/test_geneval2.py",
    "integration/test_smoke_benchmarks.py",
    "unit/test_entropy.py",
    "unit/test_digits_example.py",
    "unit/test_geneval_reference.py",
    "integration/test_generation.py",
    "unit/test_failure_patterns.py",
    "unit/test_one_call_diversity.py",
)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Order the collected tests longest file first (stable within and after those files)."""

    def rank(item: pytest.Item) -> int:
        path = item.path.as_posix()
        return next((i for i, name in enumerate(LONGEST_FIRST) if path.endswith(name)), len(LONGEST_FIRST))

    items.sort(key=rank)


T = TypeVar("T")


def pick(rng: np.random.Generator, options: Sequence[T]) -> T:
    """``rng.choice(options)``'s draw (the same integer from the same stream: the same tests), without converting
    ``options`` to an array on every call (several times slower; the property tests draw a few hundred thousand
    times)."""
    return options[int(rng.integers(len(options)))]


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


def clusters(m: int, per: int, dim: int, *, spread: float, separation: float, seed: int) -> np.ndarray:
    """m equal clusters of ``per`` points each, centres ``separation`` apart on orthogonal axes."""
    gen = np.random.default_rng(seed)
    centres = np.eye(m, dim) * separation
    return np.concatenate([c + spread * gen.standard_normal((per, dim)) for c in centres])
