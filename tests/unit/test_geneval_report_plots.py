"""The leaderboard's task chart: zeros drawn visibly, missing tasks marked n/a, intervals as error bars."""

from __future__ import annotations

import pytest

from t2ibench.benchmarks.geneval import report_spine
from t2ibench.benchmarks.geneval.metrics import TASKS

pytest.importorskip("matplotlib")


def test_the_task_chart_draws_zeros_missing_tasks_and_intervals(tmp_path):
    board = [
        {"model": "a", "label": "model A", **dict.fromkeys(TASKS, 0.5)},
        {"model": "b", "label": None, **dict.fromkeys(TASKS, 0.0), "position": None},  # all zero, position missing
    ]
    task_ci = [{"model": "a", "task": t, "ci_low": 0.3, "ci_high": 0.7} for t in TASKS]
    files = report_spine.plots({"board": board, "task_ci": task_ci, "metrics": []}, tmp_path)
    assert files == {"tasks": "tasks.png"}
    assert (tmp_path / "tasks.png").stat().st_size > 10_000
