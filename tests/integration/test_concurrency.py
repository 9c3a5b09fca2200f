"""Two refreshes on one store, and readers while a refresh writes."""

from __future__ import annotations

import threading
import time

import pytest

from t2ibench.errors import InputError
from t2ibench.store import Store
from tests.integration._workspace import make_workspace, start

pytestmark = pytest.mark.slow


def test_two_refreshes_on_one_store(tmp_path, model_cache):
    config, env = make_workspace(tmp_path / "ws", model_cache, per_task=1)  # 6 prompts: the race, not the load
    store = Store(config.parents[1] / "data" / "t2ibench.duckdb", timeout=60)
    reads, failures, done = [], [], threading.Event()

    def reader() -> None:
        while not done.is_set():
            try:
                reads.append(store.query("SELECT count(*) FROM images")[1][0][0])
            except InputError as exc:
                if "no results store yet" not in str(exc):
                    failures.append(str(exc))
            time.sleep(0.2)

    poller = threading.Thread(target=reader)
    poller.start()
    first, second = start(config, env), start(config, env)
    outputs = [p.communicate(timeout=900)[0] for p in (first, second)]
    done.set()
    poller.join()
    codes = sorted([first.returncode, second.returncode])
    assert codes == [0, 2], outputs
    loser = outputs[[first.returncode, second.returncode].index(2)]
    assert "another refresh is running" in loser
    assert "leaderboard_refresh" in loser  # names the holder
    # readers worked throughout, and saw the store fill up
    assert not failures, failures
    assert len(reads) >= 5
    assert reads[-1] == 24  # 2 models × 6 prompts × 2 images
    assert reads == sorted(reads)
    # the store is intact: one completed run, every row once
    runs = store.rows("SELECT status FROM runs")
    assert runs == [{"status": "completed"}]
    assert store.rows("SELECT count(*) AS n FROM (SELECT DISTINCT * FROM images)") == [{"n": 24}]


def test_a_second_refresh_can_wait_for_the_first(tmp_path, model_cache):
    config, env = make_workspace(tmp_path / "ws", model_cache, models=1, per_task=1)
    # both may wait: whichever takes the lock first, the other must wait for it rather than exit
    first, second = start(config, env, wait=600), start(config, env, wait=600)
    outputs = [p.communicate(timeout=900)[0] for p in (first, second)]
    assert [first.returncode, second.returncode] == [0, 0], outputs
    store = Store(config.parents[1] / "data" / "t2ibench.duckdb")
    assert store.rows("SELECT count(*) AS n FROM runs WHERE status = 'completed'") == [{"n": 2}]
    assert store.rows("SELECT count(*) AS n FROM images") == [{"n": 12}]
