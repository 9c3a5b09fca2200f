"""The task runner a config's ``runtime`` section names: local threads, a local Dask cluster (one worker per device
when ``devices`` is set), or a running Dask scheduler. Composition only: nothing here computes a result.

Worker processes of a local cluster talk to the refresh's own Prefect API (its temporary server, when no
PREFECT_API_URL is set) instead of each starting a temporary server of its own (~6-10 s per worker); their
``distributed`` logging stays at warnings; device *i*'s worker sees only device *i* (``CUDA_VISIBLE_DEVICES``).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from prefect.task_runners import ThreadPoolTaskRunner

from flows.forkserver import THREADS, fork_server
from flows.forkserver import prestart as prestart
from t2ibench.config import Runtime

QUIET = logging.WARNING  # Dask's own INFO lines (worker start, nanny close, ...) stay out of the log
CLOSE_TIMEOUT_S = 30.0  # a closing worker flushes its Prefect logs and events to the API first: give it time


def task_runner(runtime: Runtime) -> Any:
    """A fresh task runner for ``runtime``: ThreadPoolTaskRunner(workers) or a DaskTaskRunner."""
    if runtime.task_runner == "local":
        return ThreadPoolTaskRunner(max_workers=runtime.worker_count)
    from prefect_dask import DaskTaskRunner

    if runtime.address:
        return DaskTaskRunner(address=runtime.address)
    return DaskTaskRunner(
        cluster_class="flows.runners.local_cluster",
        cluster_kwargs={"workers": runtime.worker_count, "devices": runtime.devices},
    )


def describe(runner: Any) -> str:
    """One line for the log and the run record: what a task runner (as ``task_runner`` makes them) runs tasks on."""
    if isinstance(runner, ThreadPoolTaskRunner):
        return f"local threads ({getattr(runner, '_max_workers', '?')})"
    address = getattr(runner, "address", None)
    if address:
        return f"Dask cluster at {address}"
    kwargs = getattr(runner, "cluster_kwargs", {}) or {}
    if kwargs.get("devices"):
        return f"local Dask cluster, one worker per device ({kwargs['devices']})"
    return f"local Dask cluster ({kwargs.get('workers', '?')} single-threaded workers)"


def worker_env(device: int | None = None) -> dict[str, str]:
    """Environment of one local worker: the refresh's Prefect API, its device, one math-library thread."""
    env = {"PREFECT_API_URL": api_url()} if not os.environ.get("PREFECT_API_URL") else {}
    env |= THREADS
    if device is not None:
        env["CUDA_VISIBLE_DEVICES"] = str(device)
    return env


def api_url() -> str:
    """The Prefect API this process talks to (its temporary server's URL in ephemeral mode)."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return str(client.api_url).rstrip("/")


def dask_setup(worker: Any) -> None:
    """Dask's start-up hook of a local cluster's worker (each preloads this module): Prefect's settings, read in the
    fork server before the worker's environment was set, are read again from it."""
    from prefect.context import refresh_global_settings_context

    refresh_global_settings_context()


def _patient_nanny() -> Any:
    """distributed's Nanny, waiting CLOSE_TIMEOUT_S (not 5 s) for its worker to exit before killing it: on a busy
    machine a worker's exit (Prefect draining its log and event queues to the API) takes longer than 4 s."""
    from distributed import Nanny

    class PatientNanny(Nanny):  # type: ignore[misc]
        async def close(self, timeout: float = CLOSE_TIMEOUT_S, reason: str = "nanny-close") -> Any:
            return await super().close(timeout=max(timeout, CLOSE_TIMEOUT_S), reason=reason)

    return PatientNanny


def local_cluster(workers: int, devices: int = 0) -> Any:
    """A Dask cluster on this machine: ``workers`` single-threaded worker processes, or with ``devices`` one per
    device (worker *i* sees device *i* only). Loopback only, no dashboard, quiet logs."""
    from distributed import Scheduler, SpecCluster

    fork_server()
    nanny = _patient_nanny()

    count = devices or workers
    specs = {
        f"{'device' if devices else 'worker'}-{i}": {
            "cls": nanny,
            "options": {
                "nthreads": 1,
                "host": "127.0.0.1",
                "env": worker_env(i if devices else None),
                "silence_logs": QUIET,
                "preload": [__name__],  # dask_setup: Prefect's settings from the worker's own environment
            },
        }
        for i in range(count)
    }
    # the dashboard on a free loopback port (the log names it): where a long refresh's workers can be watched
    scheduler = {"cls": Scheduler, "options": {"host": "127.0.0.1", "dashboard_address": "127.0.0.1:0"}}
    return SpecCluster(workers=specs, scheduler=scheduler, silence_logs=QUIET, name="t2ibench")


class Done:
    """A task that already ran in the flow's own process (a cache hit, or a cheap task whose inputs were all ready):
    the same ``state``/``result``/``wait`` as a future, so the flow treats both alike."""

    def __init__(self, state: Any) -> None:
        self.state = state
        self.task_run_id = state.state_details.task_run_id

    def wait(self, timeout: float | None = None) -> None:
        """Already finished."""

    def result(self) -> Any:
        """The task's return value (raises its exception if it failed)."""
        return self.state.result()


def _is_future(value: Any) -> bool:
    from prefect.futures import PrefectFuture

    return isinstance(value, PrefectFuture) or (isinstance(value, list) and any(_is_future(v) for v in value))


def _resolved(value: Any) -> Any:
    """Done → its value (or, if it failed, its state: Prefect then holds the downstream task as NotReady)."""
    if isinstance(value, Done):
        return value.result() if value.state.is_completed() else value.state
    if isinstance(value, list):
        return [_resolved(v) for v in value]
    return value


def cache_hit(task: Any, parameters: dict[str, Any]) -> bool:
    """True when Prefect would answer this task from its result cache (its content key has a live record and
    ``refresh_cache`` is off); False whenever that cannot be known here (an input still a future)."""
    from prefect.results import get_result_store

    if task.refresh_cache or task.cache_key_fn is None or any(_is_future(v) for v in parameters.values()):
        return False
    try:
        key = task.cache_key_fn(None, parameters)
        return bool(key) and get_result_store().update_for_task(task).exists(key)
    except Exception:
        return False


class Submitter:
    """Submits a refresh's tasks. On a Dask runner, a task Prefect would answer from its cache, and a cheap task
    (``cheap=True``: merges, the store write) whose inputs are all ready, run here in the flow's process instead:
    a Prefect task on a Dask worker costs a third of a second of bookkeeping (benchmarks/task_overhead.py),
    more than a cache hit's whole work, so a fully
    cached refresh on Dask is as fast as on local threads while model work still goes to the workers."""

    def __init__(self, runner: Any) -> None:
        self.here = runner is not None and not isinstance(runner, ThreadPoolTaskRunner)

    def __call__(self, task: Any, *, cheap: bool = False, wait_for: list[Any] | None = None, **parameters: Any) -> Any:
        """A future (submitted to the runner) or a Done (already run here)."""
        ready = not any(_is_future(v) for v in parameters.values()) and not any(
            _is_future(w) or _is_future(getattr(w, "value", None)) for w in wait_for or []
        )
        values = {k: _resolved(v) for k, v in parameters.items()}
        waits = [_waited(w) for w in wait_for or []]
        waits = [w for w in waits if w is not None] or None
        if self.here and ready and (cheap or cache_hit(task, values)):
            return Done(task(**values, wait_for=waits, return_state=True))
        return task.submit(**values, wait_for=waits)


def _waited(item: Any) -> Any:
    """A ``wait_for`` entry with Done unwrapped: a finished one is dropped, a failed one kept as its state."""
    from prefect import allow_failure

    inner = item.value if isinstance(item, allow_failure) else item
    if not isinstance(inner, Done):
        return item
    if inner.state.is_completed():
        return None
    return allow_failure(inner.state) if isinstance(item, allow_failure) else inner.state
