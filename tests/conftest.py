"""Shared fixtures and helpers for the test suite."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


def clusters(m: int, per: int, dim: int, *, spread: float, separation: float, seed: int) -> np.ndarray:
    """m equal clusters of ``per`` points each, centres ``separation`` apart on orthogonal axes."""
    gen = np.random.default_rng(seed)
    centres = np.eye(m, dim) * separation
    return np.concatenate([c + spread * gen.standard_normal((per, dim)) for c in centres])
