"""A refresh's lifecycle in the store: started (abandoning a killed predecessor), then completed or failed."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from t2ibench.errors import InputError
from t2ibench.hashing import code_version, section_hash
from t2ibench.models.registry import device_name
from t2ibench.store import Store
from t2ibench.workspace import Workspace


def start_run(ws: Workspace, run_id: str, flow: str) -> int:
    """Record a run as started; runs still 'running' (killed ones: the run lock excludes live ones) are marked
    'abandoned' (returns how many)."""
    run = {
        "run_id": run_id,
        "config_name": ws.config.name,
        "config_hash": section_hash(ws.config),
        "code_version": code_version(),
        "finished_at": None,
        "smoke": ws.config.smoke,
        "details": {
            "flow": flow,
            "lite": ws.config.evaluators.lite,
            "environment": {
                **environment(ws.root),
                "device": device_name(ws.config.runtime.device),  # what the model registries will run on
                "device_setting": ws.config.runtime.device,
            },
        },
    }
    return Store(ws.store).start_run(run)


def environment(root: Path) -> dict[str, Any]:
    """Where a run ran: the workspace's git commit (None outside a git checkout; '+dirty' with local changes),
    Python, the platform, and the versions of the libraries that make or judge images (None when not installed)."""
    import importlib.metadata
    import platform
    import subprocess

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit and git("status", "--porcelain", "--untracked-files=no"):
        commit += "+dirty"
    packages: dict[str, str | None] = {}
    for name in ("t2ibench", "torch", "diffusers", "transformers", "open_clip_torch", "opencv-python-headless",
                 "numpy", "duckdb", "prefect"):  # fmt: skip
        try:
            packages[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            packages[name] = None
    return {
        "git_commit": commit,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "packages": packages,
    }


def log_file(ws: Workspace) -> Path:
    """The refresh log of a config, ``<data>/logs/refresh.log``: what Prefect and the model libraries print during a
    run (``t2ibench.logs.route_to_log``), appended run after run."""
    return ws.data / "logs" / "refresh.log"


def finish_run(ws: Workspace, run_id: str, status: str, details: Mapping[str, Any] | None = None) -> None:
    """Mark a run completed or failed (its models become current only when completed)."""
    Store(ws.store).finish_run(run_id, status, details)


def failure_cause(exc: BaseException) -> str:
    """One line naming what really failed: the innermost cause of ``exc``, as 'Type: message'."""
    seen = set()
    while exc.__cause__ is not None and id(exc) not in seen:
        seen.add(id(exc))
        exc = exc.__cause__
    text = " ".join(str(exc).split()) or "(no message)"
    return text if isinstance(exc, InputError) else f"{type(exc).__name__}: {text}"
