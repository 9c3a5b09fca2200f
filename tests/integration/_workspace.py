"""Helpers for tests that run the smoke refresh as a separate process in a scratch workspace."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from tests.integration._warm import PYTHONPATH, WarmProcess, launch

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
        config["benchmarks"]["geneval"]["limit_per_task"] = per_task
    config["outputs"] = {"data": "data", "reports": "reports", "store": "data/t2ibench.duckdb", "cache": "data/cache"}
    path = root / "configs" / f"{source}.yaml"
    path.write_text(yaml.safe_dump(config))
    env = dict(os.environ)
    env.update(
        {
            "PYTHONPATH": PYTHONPATH,  # this checkout's library
            "PREFECT_HOME": str(root / ".prefect"),
            "PREFECT_LOCAL_STORAGE_PATH": str(root / ".prefect" / "storage"),
            "T2IBENCH_CACHE": str(model_cache),
        }
    )
    if threads is not None:
        env.update({k: str(threads) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")})
    return path, env


def refresh_cmd(config: Path, **request: Any) -> list[str]:
    """The refresh program itself (what `t2ibench run` starts): its one argument, the request as JSON (``request``:
    the other RefreshRequest fields, e.g. ``wait=600``)."""
    from t2ibench.requests import RefreshRequest

    return [sys.executable, "-m", "flows.leaderboard_refresh", RefreshRequest(config=str(config), **request).to_json()]


def start(config: Path, env: dict[str, str], **request: Any) -> subprocess.Popen[str] | WarmProcess:
    """A refresh in its own process group (so a kill takes its Prefect server with it), its stderr merged into its
    stdout: ``spawn`` of ``refresh_cmd``."""
    return spawn(refresh_cmd(config, **request), env)


def spawn(cmd: list[str], env: dict[str, str], *, merged: bool = True) -> subprocess.Popen[str] | WarmProcess:
    """``cmd`` (a ``python -m`` program) in its own process group, with text pipes for stdout and stderr (one pipe
    for both with ``merged``): forked from the test worker's warm server (``_warm``: the model libraries already
    imported) when it can be, else a plain process."""
    warm = launch(cmd, env, REPO, merged=merged)
    if warm is not None:
        return warm
    return subprocess.Popen(
        cmd,
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merged else subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def run(config: Path, env: dict[str, str], timeout: float = 900, **request: Any) -> tuple[int, str]:
    proc = start(config, env, **request)
    out, _ = proc.communicate(timeout=timeout)
    return proc.returncode, out


def refresh_log(config: Path) -> Path:
    """The log file a refresh of a ``make_workspace`` config writes Prefect's and the libraries' output to."""
    return config.parents[1] / "data" / "logs" / "refresh.log"


def kill_after(
    proc: subprocess.Popen[str] | WarmProcess, anchor: str, delay: float, *, log: Path, timeout: float = 900
) -> tuple[bool, str]:
    """Follow the refresh's log file ``log`` (Prefect's lines land there, not on the console); ``delay`` seconds after
    a line containing ``anchor`` appears, SIGKILL the process group.

    Returns (killed, console output + what the run logged). ``killed`` is False when the run finished before the
    kill landed.
    """
    offset = log.stat().st_size if log.exists() else 0  # the log is appended run after run: only this run's lines
    logged = ""
    kill_at: float | None = None
    killed = False
    deadline = time.monotonic() + timeout
    while True:
        if log.exists():
            with open(log, "rb") as fh:
                fh.seek(offset)
                chunk = fh.read()
            offset += len(chunk)
            logged += chunk.decode("utf-8", errors="replace")
        now = time.monotonic()
        if kill_at is None and anchor in logged:
            kill_at = now + delay
        if proc.poll() is not None:
            break  # finished before the kill
        if (kill_at is not None and now >= kill_at) or now > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            killed = True
            break
        time.sleep(0.005)
    out, _ = proc.communicate()
    return killed, (out or "") + logged


STEP_COLUMNS = ("generate", "embed", "geneval", "diversity", "scendi", "store")
PROGRESS_RATES = ("it/s]", "s/it]")
"""How a library progress bar (tqdm) ends its line: a rate in it/s, or in s/it when an item takes over a second (as
on a loaded machine)."""
# what must never reach a run's console: warnings, Prefect's log lines and logger names, library progress bars
CONSOLE_NOISE = (
    "warn",
    "prefect",
    "created task run",
    "finished in state",
    "task run '",
    "flow run '",
    *PROGRESS_RATES,
)


def summary_table(output: str) -> dict[str, dict[str, str]]:
    """model → step → cell ('computed (24 new)', 'cached', ...) from the summary table a run prints at its end."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == ["model", "generate"])
    header = lines[start]
    names = header.split()
    bounds = [header.index(name) for name in names] + [None]
    table = {}
    for line in lines[start + 1 :]:
        if line.startswith("cached:"):  # the legend ends the rows
            break
        cells = {name: line[bounds[i] : bounds[i + 1]].strip() for i, name in enumerate(names)}
        table[cells.pop("model")] = cells
    return table


def summary_paths(output: str) -> dict[str, Path]:
    """The 'report:', 'store:' and 'log:' paths a run's summary ends with."""
    found = {}
    for line in output.splitlines():
        name, _, value = line.partition(":")
        if name in ("report", "store", "log") and value.strip().startswith("/"):
            found[name] = Path(value.strip().split("  ")[0])  # the report's path may be followed by a note
    return found


def noise(output: str) -> list[str]:
    """The console lines that are not t2ibench's own (warnings, Prefect log lines, library progress bars)."""
    return [line for line in output.splitlines() if any(word in line.lower() for word in CONSOLE_NOISE)]


def summary(path: Path) -> dict:
    return json.loads(path.read_text())
