"""A refresh's lifecycle in the store: started (abandoning a killed predecessor), then completed or failed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from t2ibench.errors import InputError
from t2ibench.hashing import code_version, section_hash
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
        "details": {"flow": flow, "lite": ws.config.evaluators.lite},
    }
    return Store(ws.store).start_run(run)


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
