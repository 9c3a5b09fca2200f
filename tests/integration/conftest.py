"""Fixtures for integration tests: tiny random-weight models saved to temp dirs (session-scoped)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

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


def shared_dir(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A folder every pytest-xdist worker of this run sees (the workers' base temp folders' parent; without xdist, the
    session's own base temp folder)."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # pytest-N/, holding popen-gw0/, popen-gw1/, ...
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """An exclusive lock on ``folder``'s lock file, across the workers' processes."""
    with open(folder / ".lock", "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory):
    """A run-wide T2IBENCH_CACHE, shared by the xdist workers, so the tiny-random models and the compositor's
    cut-outs (~15 s of GrabCut) are built once per run, not once per worker. Safe to share: each model is built in a
    staging folder and renamed into place, each cut-out file and the cut-out index are replaced atomically, and what
    they hold is a function of their seeds (a race builds the same bytes twice)."""
    return shared_dir(tmp_path_factory, "t2ibench-cache")


@pytest.fixture
def tiny_env(model_cache, monkeypatch):
    monkeypatch.setenv("T2IBENCH_CACHE", str(model_cache))
    return model_cache


@pytest.fixture(scope="session")
def tiny_dinov2(tmp_path_factory):
    from tests.integration.tiny_models import build_tiny_dinov2

    return build_tiny_dinov2(tmp_path_factory.mktemp("dinov2"))


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def _start_server(home: Path) -> tuple[subprocess.Popen, str]:
    """A Prefect API server on a free port, its home and log in ``home``; returns once it answers.

    It runs without Prefect's background services (scheduler, late-run marker, event persister, vacuum, ...): they
    halve its CPU when idle (measured ~16 % → ~8 % of a core) and cut its share of the flow tests by half, and no
    test needs what they do (the deployment test's worker picks up a run created through the API)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
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
    with open(home / "server.log", "w") as log:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "prefect",
                "server",
                "start",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--no-services",
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}/api"
    deadline = time.monotonic() + 120
    while not _healthy(url):
        if server.poll() is not None or time.monotonic() > deadline:
            _stop(server.pid)
            raise RuntimeError(f"the test Prefect server did not start: {(home / 'server.log').read_text()[-2000:]}")
        time.sleep(0.25)
    return server, url


def _gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (reaped, or a zombie its parent has not reaped yet)."""
    with contextlib.suppress(ChildProcessError):  # our own child: reap it
        if os.waitpid(pid, os.WNOHANG)[0]:
            return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return True
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False


def _stop(pid: int) -> None:
    """Stop the server ``pid`` (SIGTERM, then SIGKILL after 20 s) and wait until it has ended."""
    for signum in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if _gone(pid):
                return
            time.sleep(0.1)


@pytest.fixture(scope="session", autouse=True)
def prefect_server(tmp_path_factory):
    """One Prefect API server for the whole run (~12 s of CPU to start, and its services' upkeep while it lives):
    every refresh a test starts, in a subprocess or in this process, talks to it through PREFECT_API_URL instead of
    starting a temporary server of its own (~10-25 s each). Results stay in each workspace's own storage, so
    workspaces remain isolated.

    Under pytest-xdist the workers share it: the first worker that needs it starts it (under a file lock in the
    run's shared temp folder) and records its URL, pid and users; each worker counts itself in and out, and the last
    one out stops it. A worker that comes later finds no server recorded and starts a fresh one."""
    if os.environ.get("PREFECT_API_URL"):  # a developer's own server: use it
        yield os.environ["PREFECT_API_URL"]
        return
    shared = shared_dir(tmp_path_factory, "prefect-server")
    state = shared / "server.json"
    with locked(shared):
        record = json.loads(state.read_text()) if state.exists() else None
        if record is None or not _healthy(record["url"]):
            if record is not None:  # recorded but not answering (it died): replace it
                _stop(record["pid"])
            home = Path(tempfile.mkdtemp(prefix="home-", dir=shared))
            server, url = _start_server(home)
            record = {"url": url, "pid": server.pid, "users": 0}
        record["users"] += 1
        state.write_text(json.dumps(record))
    url = record["url"]
    os.environ["PREFECT_API_URL"] = url
    try:
        yield url
    finally:
        del os.environ["PREFECT_API_URL"]
        with locked(shared):
            record = json.loads(state.read_text())
            record["users"] -= 1
            if record["users"] > 0:
                state.write_text(json.dumps(record))
            else:
                state.unlink()
                _stop(record["pid"])
