"""Fixtures for integration tests: tiny random-weight models saved to temp dirs (session-scoped)."""

from __future__ import annotations

import os

import pytest

if os.environ.get("T2IBENCH_REQUIRE_MODELS") == "1":
    import open_clip  # noqa: F401  (fail loudly in CI instead of skipping)
    import torch  # noqa: F401
    import transformers  # noqa: F401
else:
    pytest.importorskip("torch", reason="integration tests need the 'models' extra (torch)")


@pytest.fixture(scope="session")
def tiny_mask2former(tmp_path_factory):
    from tests.integration.tiny_models import build_tiny_mask2former

    return build_tiny_mask2former(tmp_path_factory.mktemp("mask2former"))


@pytest.fixture(scope="session")
def tiny_clip(tmp_path_factory):
    from tests.integration.tiny_models import TINY_CLIP, build_tiny_open_clip

    folder = build_tiny_open_clip(tmp_path_factory.mktemp("clip"))
    return TINY_CLIP, folder / f"{TINY_CLIP}.pt"


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory):
    """A session-wide T2IBENCH_CACHE so the tiny-random pipeline is built once."""
    return tmp_path_factory.mktemp("t2ibench-cache")


@pytest.fixture
def tiny_env(model_cache, monkeypatch):
    monkeypatch.setenv("T2IBENCH_CACHE", str(model_cache))
    return model_cache


@pytest.fixture(scope="session")
def tiny_dinov2(tmp_path_factory):
    from tests.integration.tiny_models import build_tiny_dinov2

    return build_tiny_dinov2(tmp_path_factory.mktemp("dinov2"))
