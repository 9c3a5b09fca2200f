"""Shared fixtures and helpers for the test suite."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
# GenEval's released files (prompts, MTurk annotations): the documented local-path override, for offline machines
# and CI; defaults to ../shared/geneval beside the checkout. The product fetches them (`t2ibench data fetch`).
GENEVAL_DATA = Path(os.environ.get("T2IBENCH_GENEVAL_DATA") or REPO.parent / "shared" / "geneval")


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


def clusters(m: int, per: int, dim: int, *, spread: float, separation: float, seed: int) -> np.ndarray:
    """m equal clusters of ``per`` points each, centres ``separation`` apart on orthogonal axes."""
    gen = np.random.default_rng(seed)
    centres = np.eye(m, dim) * separation
    return np.concatenate([c + spread * gen.standard_normal((per, dim)) for c in centres])
