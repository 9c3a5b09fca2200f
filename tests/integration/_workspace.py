"""Helpers for tests that run the smoke refresh as a separate process in a scratch workspace."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]


def make_workspace(
    root: Path,
    model_cache: Path,
    *,
    models: int | None = 2,
    threads: int | None = None,
    per_task: int | None = None,
    source: str = "smoke",
    edit: Callable[[dict[str, Any]], None] | None = None,
) -> tuple[Path, dict[str, str]]:
    """A copy of configs/{source}.yaml writing under ``root``, with its own Prefect home; returns (config, env).

    ``models`` keeps the first N models (None: all); ``threads`` caps the math libraries' threads of the refreshes
    started with ``env`` (for runs side by side); ``per_task`` overrides the prompts per task kept (limit_per_task);
    ``edit`` changes the parsed config in place before it is written.
    """
    (root / "configs").mkdir(parents=True, exist_ok=True)
    config = yaml.safe_load((REPO / "configs" / f"{source}.yaml").read_text())
    if models is not None:
        config["models"] = config["models"][:models]
    if edit is not None:
        edit(config)
    if per_task is not None:
        config["geneval"]["limit_per_task"] = per_task
    config["outputs"] = {"data": "data", "reports": "reports", "store": "data/t2ibench.duckdb", "cache": "data/cache"}
    path = root / "configs" / f"{source}.yaml"
    path.write_text(yaml.safe_dump(config))
    env = dict(os.environ)
    env.update(
        {
            "PYTHONPATH": str(REPO),
            "PREFECT_HOME": str(root / ".prefect"),
            "PREFECT_LOCAL_STORAGE_PATH": str(root / ".prefect" / "storage"),
            "T2IBENCH_CACHE": str(model_cache),
        }
    )
    if threads is not None:
        env.update({k: str(threads) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")})
    return path, env


def refresh_cmd(config: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "flows.leaderboard_refresh", "--config", str(config), *extra]


def start(config: Path, env: dict[str, str], *extra: str) -> subprocess.Popen[str]:
    """A refresh in its own process group (so a kill takes its Prefect server with it)."""
    return subprocess.Popen(
        refresh_cmd(config, *extra),
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def run(config: Path, env: dict[str, str], *extra: str, timeout: float = 900) -> tuple[int, str]:
    proc = start(config, env, *extra)
    out, _ = proc.communicate(timeout=timeout)
    return proc.returncode, out


def kill_after(proc: subprocess.Popen[str], anchor: str, delay: float, timeout: float = 900) -> tuple[bool, str]:
    """Stream the process's log; ``delay`` seconds after a line containing ``anchor``, SIGKILL its process group.

    Returns (killed, log). ``killed`` is False when the run finished before the kill landed.
    """
    lines: list[str] = []
    killed = threading.Event()
    timer: threading.Timer | None = None

    def kill() -> None:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            killed.set()

    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        if timer is None and anchor in line:
            timer = threading.Timer(delay, kill)
            timer.start()
        if time.monotonic() > deadline:
            kill()
    proc.wait()
    if timer is not None:
        timer.join()
    return killed.is_set(), "".join(lines)


def summary(path: Path) -> dict:
    return json.loads(path.read_text())
