"""A local Dask cluster's workers start from multiprocessing's fork server, which imports what every worker needs once
(the model libraries, Prefect and the workspace's tasks): spawned workers import it all themselves, each again —
seconds of CPU per worker, taken from the others on a machine with as many cores as workers. The refresh starts the
fork server as soon as it knows it has work for a local cluster (``prestart``, before the flow and Prefect's
temporary API start), so the imports run beside that start instead of after it. Nothing here imports Prefect or
distributed.
"""

from __future__ import annotations

import os

PRELOAD = (
    *("numpy", "scipy.linalg", "PIL.Image", "torch", "transformers", "diffusers", "open_clip", "cv2"),
    "distributed",
    "tasks.benchmark",
)
"""What a worker imports before its first task, in the fork server: once for every worker."""
THREADS = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
"""One math-library thread per worker (a worker runs one task at a time: one core each)."""


def fork_server() -> None:
    """Have Dask start local workers from the fork server, which preloads ``PRELOAD`` with one math thread (it and so
    every worker inherits ``THREADS``, set before it imports numpy). Prefect read its settings when the fork server
    imported it: each worker reads them again from its own environment as it starts (``runners.dask_setup``)."""
    import multiprocessing

    import dask

    os.environ.update(THREADS)  # the fork server's environment: this process's numpy has its threads already
    dask.config.set({"distributed.worker.multiprocessing-method": "forkserver"})
    multiprocessing.get_context("forkserver").set_forkserver_preload(list(PRELOAD))


def prestart(runtime: object) -> None:
    """For a local Dask cluster (``runtime``: a config's ``Runtime``), start its fork server now, importing beside
    the flow's own start; nothing for other task runners or a running cluster. Idempotent. The fork server, and so
    every worker forked from it, writes where this process's stdout and stderr point when it starts: the refresh
    program calls this once they point at the run's log (a fully cached run starts none: it needs no worker)."""
    if getattr(runtime, "task_runner", None) != "dask" or getattr(runtime, "address", None):
        return
    import multiprocessing.forkserver

    fork_server()
    multiprocessing.forkserver.ensure_running()
