"""The benchmark's Prefect tasks: one per ``t2ibench.pipeline`` step (``step_specs()``: the refresh's own and each
benchmark's), made by one function.

Each task calls its step with the parameters the plan gives (``t2ibench.pipeline.plan``) and returns the step's
typed result, cached as JSON. A cached step's key is ``step_key`` over its arguments — the one derivation that also
names the stored versions and fills the protocol record (``t2ibench.pipeline.identity``): there is no per-task key
list to keep in step with what a step reads. Steps that always run (merges, the store write) are not cached.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from prefect import Task, task
from prefect.cache_policies import NO_CACHE

from t2ibench.metrics.levels import CI_LEVEL
from t2ibench.pipeline import PromptSet, select_prompts, step_key
from t2ibench.pipeline.identity import StepSpec
from t2ibench.pipeline.plan import step_specs

RESULTS: dict[str, Any] = {"persist_result": True, "result_serializer": "json", "cache_expiration": timedelta(days=365)}
# A cached result whose output files have gone (deleted, or removed by ``dvc checkout``) is refreshed by the flow,
# which passes ``refresh_cache=True`` for that call (``Call.outputs``).


def _timed(result: Any, start: float) -> Any:
    """The step's result with the seconds it took (model work, for the run summary), where it records them."""
    if dataclasses.is_dataclass(result) and any(f.name == "elapsed_s" for f in dataclasses.fields(result)):
        return dataclasses.replace(result, elapsed_s=round(time.perf_counter() - start, 3))  # type: ignore[type-var]
    return result


def cache_key(step: str, fn: Callable[..., Any]) -> Callable[[Any, dict[str, Any]], str]:
    """The ``cache_key_fn`` of a step's task: ``step_key`` of its parameters (the task context is not used)."""

    def key(context: Any, parameters: dict[str, Any]) -> str:
        return step_key(step, fn, parameters)

    return key


def step_task(step: str, spec: StepSpec) -> Task[..., Any]:
    """The Prefect task of one step: the step's own signature, cached by ``step_key`` unless it always runs."""
    fn = spec.fn

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        return _timed(fn(*args, **kwargs), start)

    options: dict[str, Any] = {"name": step}
    if spec.cached:
        options |= {**RESULTS, "cache_key_fn": cache_key(step, fn)}
    else:
        options |= {"cache_policy": NO_CACHE, "persist_result": False}
    return task(**options)(run)


TASKS: dict[str, Task[..., Any]] = {step: step_task(step, spec) for step, spec in step_specs().items()}
"""Every step's task (the refresh's own and every benchmark's), by step name."""


@task(name="prompts", **RESULTS, cache_key_fn=cache_key("prompts", select_prompts))
def prompts_task(suite: Any) -> PromptSet:
    """The selected prompt records (a ``PromptSet``)."""
    return select_prompts(suite)


@task(name="report", cache_policy=NO_CACHE, persist_result=False)
def report_task(
    store: Path,
    reports: Path,
    config_name: str,
    published: Sequence[str],
    root: Path | None = None,
    level: float = CI_LEVEL,
) -> dict[str, Any]:
    """Record the latest run's paired comparisons (what changed since the run before it, and the current models'
    pairs, at confidence ``level``) and the published rows, then render the leaderboard
    (Markdown + HTML), plots and mode galleries from the store — only when the rows it shows changed since it was
    last rendered (its files kept otherwise); ``root``: the workspace."""
    from t2ibench.comparisons import record_for_report
    from t2ibench.report.leaderboard import render_reports

    record_for_report(store, tuple(published), level=level)
    return render_reports(store, reports, config_name=config_name, published=tuple(published), root=root)
