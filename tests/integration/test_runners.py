"""The task runners a config's runtime section names (flows/runners.py)."""

from __future__ import annotations

import logging
import os

from flows.runners import Submitter, describe, local_cluster, task_runner

from t2ibench.config import Runtime


def _visible() -> tuple[str | None, str | None, str | None]:
    return os.environ.get("CUDA_VISIBLE_DEVICES"), os.environ.get("PREFECT_API_URL"), os.environ.get("OMP_NUM_THREADS")


def test_one_worker_per_device_sees_only_its_device_and_closes_cleanly(caplog, monkeypatch):
    """devices: 2 → two single-threaded workers, worker i with CUDA_VISIBLE_DEVICES=i and the refresh's Prefect API;
    closing the cluster logs nothing at warning level (no nanny killing a worker)."""
    from distributed import Client

    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.setattr("flows.runners.api_url", lambda: "http://127.0.0.1:9/api")
    with caplog.at_level(logging.WARNING), local_cluster(workers=0, devices=2) as cluster, Client(cluster) as client:
        seen = client.run(_visible)
        names = {w["name"]: w["nthreads"] for w in client.scheduler_info()["workers"].values()}
    assert sorted(seen.values()) == [("0", "http://127.0.0.1:9/api", "1"), ("1", "http://127.0.0.1:9/api", "1")]
    assert names == {"device-0": 1, "device-1": 1}
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_the_runtime_section_picks_the_runner():
    assert describe(task_runner(Runtime())) == "local threads (1)"
    assert describe(task_runner(Runtime(workers=3))) == "local threads (3)"
    assert (
        describe(task_runner(Runtime(task_runner="dask", workers=4)))
        == "local Dask cluster (4 single-threaded workers)"
    )
    assert describe(task_runner(Runtime(task_runner="dask", devices=8))).endswith("one worker per device (8)")
    assert describe(task_runner(Runtime(task_runner="dask", address="tcp://10.1.2.3:8786"))) == (
        "Dask cluster at tcp://10.1.2.3:8786"
    )


def test_the_submitter_keeps_tasks_with_pending_inputs_for_the_runner():
    """A task whose inputs are still futures is never run in the flow's process (its cache key is not known yet)."""
    from unittest.mock import Mock

    from prefect.futures import PrefectFuture

    pending = Mock(spec=PrefectFuture)  # isinstance(pending, PrefectFuture); any call on it would be recorded

    submitted = []

    class FakeTask:
        refresh_cache = None
        cache_key_fn = staticmethod(lambda context, parameters: "never-looked-up")

        def submit(self, **parameters):
            submitted.append(parameters)
            return "future"

        def __call__(self, **parameters):  # pragma: no cover
            raise AssertionError("ran in the flow's process")

    submit = Submitter(task_runner(Runtime(task_runner="dask", workers=2)))
    assert submit(FakeTask(), x=[pending]) == "future"
    assert pending.mock_calls == []  # neither waited for nor resolved here
    assert len(submitted) == 1
