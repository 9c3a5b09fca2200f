"""Fixtures for integration tests: tiny random-weight models saved to temp dirs (session-scoped)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

if os.environ.get("T2IBENCH_REQUIRE_MODELS") == "1":
    import cv2  # noqa: F401  (fail loudly in CI instead of skipping)
    import open_clip  # noqa: F401
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


@pytest.fixture(scope="session", autouse=True)
def prefect_server(tmp_path_factory):
    """One Prefect API server for the whole session (~10 s once): every refresh a test starts, in a subprocess or in
    this process, talks to it through PREFECT_API_URL instead of starting a temporary server of its own (~10-25 s
    each). Results stay in each workspace's own storage, so workspaces remain isolated."""
    if os.environ.get("PREFECT_API_URL"):  # a developer's own server: use it
        yield os.environ["PREFECT_API_URL"]
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    home = tmp_path_factory.mktemp("prefect-server")
    env = dict(os.environ)
    env.update(
        {
            "PREFECT_HOME": str(home),
            "DO_NOT_TRACK": "1",
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_UI_ENABLED": "false",
            "PREFECT_LOGGING_LEVEL": "WARNING",
        }
    )
    log = open(home / "server.log", "w")  # noqa: SIM115  (closed below)
    server = subprocess.Popen(
        [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}/api"
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                if response.status == 200:
                    break
        except OSError:
            pass
        if server.poll() is not None or time.monotonic() > deadline:
            log.close()
            raise RuntimeError(f"the test Prefect server did not start: {(home / 'server.log').read_text()[-2000:]}")
        time.sleep(0.25)
    os.environ["PREFECT_API_URL"] = url
    try:
        yield url
    finally:
        del os.environ["PREFECT_API_URL"]
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
