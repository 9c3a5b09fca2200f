"""A refresh's lifecycle in the store: started (abandoning a killed predecessor), then completed or failed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from t2ibench.config import Config
from t2ibench.errors import InputError
from t2ibench.hashing import code_version, section_hash
from t2ibench.models.registry import device_name
from t2ibench.pipeline.ownership import check_data_folder, claim_data_folder
from t2ibench.store import Store
from t2ibench.workspace import Workspace


def start_run(ws: Workspace, config: Config, config_path: str | Path, run_id: str, flow: str) -> int:
    """Record a run of ``config`` as started in the workspace's store (which must belong to this config: see
    ``Store.claim``); runs still 'running' (killed ones: the run lock excludes live ones) are marked 'abandoned'
    (returns how many)."""
    run = {
        "run_id": run_id,
        "config_name": config.name,
        "config_hash": section_hash(config),
        "code_version": code_version(),
        "finished_at": None,
        "smoke": config.smoke,
        "details": {
            "flow": flow,
            "config_file": config_file(ws, config_path),
            "lite": config.evaluators.lite,
            "environment": {
                **environment(ws.root),
                "device": device_name(config.runtime.device),  # what the model registries will run on
                "device_setting": config.runtime.device,
            },
        },
    }
    file = config_file(ws, config_path)
    check_data_folder(ws, config.name, file)  # another config's data folder is refused before the store is touched
    stale = Store(ws.store).start_run(run, owner=(config.name, file))
    claim_data_folder(ws, config.name, file)
    return stale


def record_folders(ws: Workspace, run_id: str, folders: Mapping[str, Sequence[Path]]) -> None:
    """Record in the store every version folder a run planned (model → folders; kept relative to the data folder),
    before any is written: what ``t2ibench gc`` may later attribute to this config."""
    data = ws.data.resolve()
    rows = []
    for model, paths in folders.items():
        for path in paths:
            try:
                rows.append(((path.parent.resolve() / path.name).relative_to(data).as_posix(), model))
            except ValueError:
                continue  # not under the data folder: gc never prunes it
    Store(ws.store).record_folders(run_id, rows)


def config_file(ws: Workspace, config_path: str | Path) -> str:
    """The config file's path relative to the workspace (what a store's owner records: the same in every clone),
    or its absolute path when it lies outside the workspace."""
    path = Path(config_path).resolve()
    try:
        return str(path.relative_to(ws.root.resolve()))
    except ValueError:
        return str(path)


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
    return ws.log


def finish_run(ws: Workspace, run_id: str, status: str, details: Mapping[str, Any] | None = None) -> bool:
    """Mark a run completed or failed (its models become current only when completed). Returns False, writing
    nothing and raising nothing, when the store cannot be verified (found damaged, a newer schema, its tables
    changed): a run that failed on such a store keeps its own error as the one shown."""
    return Store(ws.store).finish_run(run_id, status, details)


def failure_cause(exc: BaseException) -> str:
    """One line naming what really failed: the innermost cause of ``exc``, as 'Type: message'."""
    seen = set()
    while exc.__cause__ is not None and id(exc) not in seen:
        seen.add(id(exc))
        exc = exc.__cause__
    text = " ".join(str(exc).split()) or "(no message)"
    return text if isinstance(exc, InputError) else f"{type(exc).__name__}: {text}"


def mark_killed(ws: Workspace, signal: str, error: str) -> bool:
    """Record the latest run still 'running' as interrupted by ``signal`` (its refresh was killed before it could
    say so itself); False when there is none or the store cannot be verified."""
    return Store(ws.store).interrupt_latest_running({"signal": signal, "error": error})
