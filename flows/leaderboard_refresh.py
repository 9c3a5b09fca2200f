"""Flow ``leaderboard_refresh``: every model's prompts → generate (prompt shards) → embed and GenEval (shards) →
FKEA shards → merge → Scendi → store, submitted up front as one task graph, then the reports. Run it with
``t2ibench run --config configs/smoke.yaml``, which starts this module as a program whose one argument is the
request (``t2ibench.requests.RefreshRequest`` as JSON); ``run(request)`` is that program, ``refresh(config)`` the
refresh itself (what a deployment's ``scheduled_refresh`` runs).

Dependencies are futures, so independent models and shards run side by side on the configured task runner
(``runtime.task_runner``: local threads, a local Dask cluster, or a running Dask scheduler; ``flows/runners.py``);
the store writes are chained (each waits for the previous model's, failed or not), so they stay serialised and in
config order. A model that fails does not stop the others: they finish and are stored, and the run then fails
with the first failed model's own cause.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import itertools
import json
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import tasks  # noqa: F401  (project Prefect settings first)
from prefect import allow_failure, flow, get_run_logger
from prefect.context import FlowRunContext
from prefect.futures import as_completed
from prefect.task_runners import ThreadPoolTaskRunner
from tasks.benchmark import TASKS, prompts_task, report_task

from flows.runners import Done, Submitter, describe, prestart, task_runner
from t2ibench.benchmarks import SPINE
from t2ibench.config import Config, load_config
from t2ibench.logs import console, route_to_log
from t2ibench.pipeline import Call, ModelPlan, answer, failure_cause, finish_run, plan_refresh, start_run
from t2ibench.pipeline.plan import acquire_suites, step_specs
from t2ibench.pipeline.runs import log_file, record_folders
from t2ibench.pipeline.summary import (
    BENCHMARK_COLUMNS,
    STEPS,
    ModelSummary,
    RunSummary,
    embed_outcome,
    embedding_cache_shards,
    generate_outcome,
    images_on_disk,
    step_outcome,
    store_outcome,
)
from t2ibench.progress import RunProgress
from t2ibench.requests import RefreshRequest, request_main
from t2ibench.signals import exit_code, signal_name, signal_number, stop_on_signals, take_over_signals
from t2ibench.store import run_lock
from t2ibench.workspace import Workspace

PROGRAM = "leaderboard_refresh"
MODEL_WORK = frozenset(step for step, spec in step_specs().items() if spec.model_work)
"""Steps that do model or metric work (cached, not cheap): retried on failure, and what a run's model-work seconds
add up."""


@dataclass(frozen=True)
class Refresh:
    """What a refresh did: its run id, each call's final Prefect state per model and step (and of the calls all
    models share), the report's files, the seconds of model work it did (cache hits excluded), and the summary
    (computed or cached per model and step)."""

    run_id: str
    states: dict[str, dict[str, str]]
    shared: dict[str, str]
    report: dict[str, Any]
    model_work_s: float
    summary: RunSummary


def run_summary(
    cfg: Config,
    ws: Workspace,
    run_id: str,
    prompts: int,
    outcomes: list[ModelSummary],
    report: dict[str, Any],
    since: float,
    plan: Any = None,
    shared: tuple[tuple[str, float], ...] = (),
) -> RunSummary:
    """The console summary of a finished refresh (``since``: its start, a ``time.perf_counter()`` reading;
    ``plan``: the refresh's plan, for the GenEval 2 prompt count)."""
    log = console().log
    return RunSummary(
        config=cfg.name,
        run_id=run_id,
        prompts=prompts,
        models=tuple(outcomes),
        report_html=str(report.get("html", "")),
        store=str(ws.store),
        log=str(log) if log is not None else None,
        seconds=round(time.perf_counter() - since, 3),
        report_rendered=bool(report.get("rendered", True)),
        benchmark_prompts=benchmark_prompts(plan),
        shared=shared,
    )


def benchmark_prompts(plan: Any) -> tuple[tuple[str, int], ...]:
    """(benchmark, prompts per model) of every benchmark besides GenEval some model in ``plan`` runs (none: no plan)."""
    found: dict[str, int] = {}
    for model in plan.models if plan is not None else ():
        for name, count in model.benchmark_prompts.items():
            found[name] = max(found.get(name, 0), count)
    return tuple(found.items())


def shared_label(call: Call) -> str:
    """A shared call as the console names it: its step, and what it is of when several share the step
    ('reference-bandwidth (photos-v1)'; ids end with a settings hash)."""
    parts = call.id.split("/")
    return call.step + (f" ({'/'.join(parts[1:-1])})" if len(parts) > 2 else "")


def work_of(futures: list[Any]) -> float:
    """Seconds of work the finished calls did (their results' ``elapsed_s``; a cache hit or a failed call: 0)."""
    done = [f for f in futures if f.state.is_completed() and f.state.name != "Cached"]
    return float(sum(getattr(f.result(), "elapsed_s", 0.0) for f in done))


def _cached(future: Any) -> bool:
    """True when a finished task's result came from Prefect's cache (its content key was unchanged)."""
    return bool(future.state.name == "Cached")


@dataclass
class ModelGraph:
    """One model's submitted calls (futures by call id), by summary column, and what was on disk before."""

    plan: ModelPlan
    futures: dict[str, Any]
    on_disk: dict[str, Any]
    vectors: frozenset[str]
    done_s: float = 0.0
    work_s: float = 0.0
    finished: set[str] = field(default_factory=set)

    @property
    def name(self) -> str:
        """The model's name."""
        return self.plan.model.name

    def steps(self) -> dict[str, list[Any]]:
        """The futures of each summary column the model has (STEPS order), upstream first within a column."""
        columns = self.plan.by_column()
        return {step: [self.futures[c.id] for c in columns[step]] for step in STEPS if step in columns}

    def of(self, step: str) -> list[Any]:
        """The futures of the calls of one step (task name), in plan order."""
        return [self.futures[c.id] for c in self.plan.calls if c.step == step]

    def pending(self) -> str:
        """The first column not finished yet ('' when all are)."""
        return next((step for step in self.steps() if step not in self.finished), "")


def submit_call(call: Call, futures: dict[str, Any], cfg: Config, submit: Submitter, stale: set[str]) -> Any:
    """Submit one call as its step's task: ``Ref``s become the futures of earlier calls; a cached call whose output
    files are gone, or changed behind its cached result (``stale``), runs again (``refresh_cache``); model work is
    retried as the runtime section says."""
    options: dict[str, Any] = {"task_run_name": call.id.replace("/", "-")}
    if call.spec.cached and (call.id in stale or not all(p.exists() for p in call.outputs)):
        options["refresh_cache"] = True
    if call.step in MODEL_WORK:
        options |= {"retries": cfg.runtime.retries, "retry_delay_seconds": list(cfg.runtime.retry_delay_seconds)}
    params = call.resolve(futures)  # Refs become the futures of earlier calls
    waits = [allow_failure(futures[a]) for a in call.after] or None
    return submit(TASKS[call.step].with_options(**options), cheap=call.spec.cheap, wait_for=waits, **params)


def first_failure(graphs: list[ModelGraph], shared: dict[str, Any]) -> Any | None:
    """The first failed call, shared calls first, then in config order, upstream first (its own exception, not a
    downstream 'NotReady')."""
    every = [*shared.values(), *(f for g in graphs for fs in g.steps().values() for f in fs)]
    for future in every:
        if future.state.is_failed() or future.state.is_crashed():
            return future
    for future in every:
        if not future.state.is_completed():
            return future
    return None


def summarise_model(ws: Workspace, graph: ModelGraph) -> ModelSummary:
    """Computed or cached per column, from the finished futures."""
    generate = graph.of("generate")
    images = [i.path for f in generate for i in f.result().images]
    columns = graph.steps()
    return ModelSummary(
        model=graph.name,
        steps=(
            generate_outcome(all(_cached(f) for f in generate), images, graph.on_disk),
            embed_outcome(_cached(graph.of("embed")[0]), graph.vectors, embedding_cache_shards(ws.cache)),
            step_outcome(SPINE, [_cached(f) for f in [*graph.of(SPINE), *graph.of("scores")]]),
            *(step_outcome(b, _keyed_cached(graph, b)) for b in BENCHMARK_COLUMNS if b in columns),
            step_outcome("diversity", [_cached(f) for f in columns["diversity"]]),
            step_outcome("scendi", [_cached(f) for f in columns["scendi"]]),
            store_outcome(graph.of("store")[0].result().unchanged),
        ),
        seconds=graph.done_s,
        work=round(graph.work_s, 3),
    )


def _keyed_cached(graph: ModelGraph, column: str) -> list[bool]:
    """Whether each of a column's content-keyed calls was answered from the cache: a call that always runs (a
    benchmark's rows for the store, re-read and checked every run) is bookkeeping, not work the column reused or
    redid (counted only when the column has no other)."""
    calls = graph.plan.by_column()[column]
    keyed = [c for c in calls if c.spec.cached] or calls
    return [_cached(graph.futures[c.id]) for c in keyed]


def since(begun: float | None) -> float:
    """A ``time.perf_counter()`` reading for the moment ``begun`` (Unix seconds; None: now): where a run's times
    count from."""
    return time.perf_counter() - (max(0.0, time.time() - begun) if begun is not None else 0.0)


@flow(name="leaderboard_refresh", task_runner=ThreadPoolTaskRunner(max_workers=2), log_prints=True)
def leaderboard_refresh(config: str, wait: float = 0.0, begun: float | None = None) -> Refresh:
    """Refresh the leaderboard of one config; returns what it did (states per task, computed/cached per step).
    ``begun``: when the command asking for it started (Unix seconds), which the run's times count from."""
    take_over_signals(PROGRAM)  # the engine's SIGTERM handler reports to an API the same signal may have stopped
    logger = get_run_logger()
    started = since(begun)
    context = FlowRunContext.get()
    runner = context.task_runner if context is not None else None
    if isinstance(runner, ThreadPoolTaskRunner) and getattr(runner, "_max_workers", 1) > 1:
        # tasks in several threads of this process: import the model stack once, here, before they run side by side
        # (a half-imported torch in sys.modules breaks scipy's array-API checks: "partially initialized module")
        import torch  # noqa: F401
    # a Dask runner starts its cluster at the first task that must run there: a fully cached refresh starts none

    cfg = load_config(config)
    ws = Workspace.for_config(cfg, config)
    run_id = uuid.uuid4().hex[:12]
    progress = RunProgress(len(cfg.models), len(STEPS), label=f"refresh {cfg.name}", started=started)
    holder = f"leaderboard_refresh {run_id} ({cfg.name})"
    with run_lock(ws.store, wait=wait, holder=holder), contextlib.closing(progress) as display:
        start_run(ws, cfg, config, run_id, "leaderboard_refresh")
        try:
            acquire_suites(cfg, ws.root)  # released suite files a benchmark reads, fetched where missing
            prompts = prompts_task(cfg.spine_prompts)
            plan = plan_refresh(cfg, ws, prompts, run_id)
            record_folders(ws, run_id, {m.model.name: m.folders for m in plan.models})  # before any is written
            display.total(sum(len(m.by_column()) for m in plan.models))
            # GenEval's generation shards (GenEval 2's generation is one call of its own)
            shards = max(sum(c.id.split("/")[1] == "generate" for c in m.calls) for m in plan.models)
            logger.info(
                "%d models × %d prompts (%d shard%s each) on %s",
                len(cfg.models),
                len(prompts),
                shards,
                "" if shards == 1 else "s",
                describe(runner),
            )
            submit = Submitter(runner)
            stale = answer(plan, local_lookup(), run_uncached=False).stale  # cached, files changed: run again
            futures: dict[str, Any] = {}
            graphs: list[ModelGraph] = []
            for call in plan.shared:
                futures[call.id] = submit_call(call, futures, cfg, submit, stale)
            for model_plan in plan.models:
                # what is already there, to tell work done from work kept
                on_disk = {k: v for folder in model_plan.image_folders for k, v in images_on_disk(folder).items()}
                graph = ModelGraph(model_plan, futures, on_disk, embedding_cache_shards(ws.cache))
                for call in model_plan.calls:
                    futures[call.id] = submit_call(call, futures, cfg, submit, stale)
                graphs.append(graph)
            shared = {c.id: futures[c.id] for c in plan.shared}
            shared_ids = {id(futures[c.id]): shared_label(c) for c in plan.shared}
            owner = {id(f): (g, step) for g in graphs for step, fs in g.steps().items() for f in fs}
            left = {(g.name, step): len(fs) for g in graphs for step, fs in g.steps().items()}
            every = [*shared.values(), *(f for g in graphs for fs in g.steps().values() for f in fs)]
            pending_shared = set(shared_ids.values())
            display.at(*(("shared", ", ".join(sorted(pending_shared))) if shared else (graphs[0].name, "generate")))
            ran_here = [f for f in every if isinstance(f, Done)]
            # followed as they finish: a chain, never a list (unpacking as_completed would wait for all of them)
            for future in itertools.chain(ran_here, as_completed([f for f in every if not isinstance(f, Done)])):
                future.wait()  # its final state, as the engine returned it (the API's copy may lag behind)
                if id(future) not in owner:  # a shared call (self-test, reference bandwidth): said when long
                    label = shared_ids.get(id(future), "")
                    pending_shared.discard(label)
                    display.step_done("shared", label, time.perf_counter() - started, work_of([future]))
                    if pending_shared:
                        display.at("shared", ", ".join(sorted(pending_shared)))
                    continue
                graph, step = owner[id(future)]
                left[(graph.name, step)] -= 1
                if left[(graph.name, step)] == 0:
                    graph.finished.add(step)
                    display.advance()
                    work = work_of(graph.steps()[step])
                    graph.work_s += work
                    display.step_done(graph.name, step, time.perf_counter() - started, work)
                    if len(graph.finished) == len(graph.steps()):
                        graph.done_s = round(time.perf_counter() - started, 3)
                        failed = any(not f.state.is_completed() for fs in graph.steps().values() for f in fs)
                        display.model_done(graph.name, graph.done_s, failed=failed)
                waiting = [f"{g.name} {g.pending()}" for g in graphs if g.pending()]
                if waiting:
                    display.at(waiting[0], "" if len(waiting) == 1 else f"(+{len(waiting) - 1} models)")
            failed = first_failure(graphs, shared)
            if failed is not None:
                failed.result()  # raises the task's own exception
                raise RuntimeError(f"task {failed.task_run_id} ended {failed.state.name}")
            states: dict[str, dict[str, str]] = {}
            model_work_s = 0.0
            outcomes = []
            work = [f for f in every if f.state.name == "Completed"]
            model_work_s = sum(getattr(f.result(), "elapsed_s", 0.0) for f in work)
            for graph in graphs:
                by_step: dict[str, list[str]] = {}
                for call in graph.plan.calls:
                    by_step.setdefault(call.step, []).append(futures[call.id].state.name)
                states[graph.name] = {step: ",".join(names) for step, names in by_step.items()}
                outcomes.append(summarise_model(ws, graph))
                stored = graph.of("store")[0].result()
                logger.info("model %s stored: %s", graph.name, json.dumps(dataclasses.asdict(stored)))
        except BaseException as exc:
            record_end(ws, run_id, exc)
            raise
        finish_run(ws, run_id, "completed", {"states": states, "task_runner": describe(runner)})
        display.at("all models", "report")
        report = report_task(
            ws.store, ws.reports, cfg.name, list(cfg.report.published_paths(ws.root)), ws.root, cfg.evaluators.ci_level
        )
    shared_work = tuple((shared_label(c), round(work_of([futures[c.id]]), 3)) for c in plan.shared)
    summary = run_summary(cfg, ws, run_id, len(prompts), outcomes, report, started, plan, shared_work)
    logger.info("reports: %s\n%s", report.get("markdown"), summary.render())
    return Refresh(
        run_id=run_id,
        states=states,
        shared={k: f.state.name for k, f in shared.items()},
        report=report,
        model_work_s=round(model_work_s, 3),
        summary=summary,
    )


def record_end(ws: Workspace, run_id: str, exc: BaseException) -> None:
    """Record a run that ended early: 'interrupted' by a signal, else 'failed' with its cause."""
    signum = signal_number(exc)
    if signum is None:
        finish_run(ws, run_id, "failed", {"error": failure_cause(exc)})
    else:
        name = signal_name(signum)
        finish_run(ws, run_id, "interrupted", {"error": f"interrupted ({name})", "signal": name})


def cached_results(plan: Any) -> dict[str, Any] | None:
    """Every call's result but the store writes' when the workspace's task cache answers the whole plan
    (``pipeline.answer``; merges run here), else None."""
    found = answer(plan, local_lookup(), run_uncached=True)
    return found.results if found.complete else None


def local_lookup() -> Any:
    """``answer``'s lookup in the workspace's local task cache: a call's cached result by its key, or None."""
    store = local_result_store()
    return lambda call, key: store.read(key).result if store.exists(key) else None


def local_result_store() -> Any:
    """Prefect's result store of this workspace's tasks (``PREFECT_LOCAL_STORAGE_PATH``, JSON results), opened without
    asking an API for a default storage block."""
    from prefect.filesystems import LocalFileSystem
    from prefect.results import ResultStore
    from prefect.settings import PREFECT_LOCAL_STORAGE_PATH

    storage = LocalFileSystem(basepath=str(PREFECT_LOCAL_STORAGE_PATH.value()))
    from prefect.serializers import JSONSerializer

    return ResultStore(result_storage=storage, serializer=JSONSerializer())


def refresh_without_prefect(config: str, cfg: Config, wait: float = 0.0, begun: float | None = None) -> Refresh | None:
    """The refresh when there is nothing to compute: if every step's result is in the task cache (its content key
    unchanged, its files there), the store writes run here and the report is re-rendered only if its rows changed —
    without starting Prefect, whose API server alone costs seconds. None when any step must run (the caller then
    runs the flow, which takes the store's run lock itself)."""
    from t2ibench.pipeline import PromptSet, select_prompts, step_key

    started = since(begun)
    ws = Workspace.for_config(cfg, config)
    key = step_key("prompts", select_prompts, {"suite": cfg.spine_prompts})
    store = local_result_store()
    if not store.exists(key):
        return None
    prompts = store.read(key).result
    if not isinstance(prompts, PromptSet):
        return None
    run_id = uuid.uuid4().hex[:12]
    progress = RunProgress(len(cfg.models), len(STEPS), label=f"refresh {cfg.name}")
    holder = f"leaderboard_refresh {run_id} ({cfg.name})"
    with run_lock(ws.store, wait=wait, holder=holder), contextlib.closing(progress) as display:
        if not all(p.is_file() for p in acquire_suites(cfg, ws.root)):
            return None
        plan = plan_refresh(cfg, ws, prompts, run_id)
        display.total(sum(len(m.by_column()) for m in plan.models))
        results = cached_results(plan)
        if results is None:
            return None
        print(
            f"{PROGRAM}: every step's result is in the task cache (keys unchanged, files present): Prefect not started",
            flush=True,
        )
        start_run(ws, cfg, config, run_id, "leaderboard_refresh")
        try:
            record_folders(ws, run_id, {m.model.name: m.folders for m in plan.models})
            outcomes, states = [], {}
            for model in plan.models:
                for call in model.calls:
                    if call.step == "store":
                        results[call.id] = call.spec.fn(**call.resolve(results))
                stored = results[model.store]
                images = [i.path for c in model.calls if c.step == "generate" for i in results[c.id].images]
                seconds = round(time.perf_counter() - started, 3)
                outcomes.append(
                    ModelSummary(
                        model=model.model.name,
                        steps=(
                            generate_outcome(True, images, {}),
                            embed_outcome(True, frozenset(), frozenset()),
                            step_outcome(SPINE, [True]),
                            *(step_outcome(b, [True]) for b in BENCHMARK_COLUMNS if b in model.by_column()),
                            step_outcome("diversity", [True]),
                            step_outcome("scendi", [True]),
                            store_outcome(stored.unchanged),
                        ),
                        seconds=seconds,
                    )
                )
                by_step: dict[str, list[str]] = {}
                for call in model.calls:
                    by_step.setdefault(call.step, []).append("Cached" if call.spec.cached else "Completed")
                states[model.model.name] = {step: ",".join(names) for step, names in by_step.items()}
                display.model_done(model.model.name, seconds)
        except BaseException as exc:
            record_end(ws, run_id, exc)
            raise
        finish_run(ws, run_id, "completed", {"states": states, "task_runner": "none: every step cached"})
        display.at("all models", "report")
        report = report_task.fn(
            ws.store, ws.reports, cfg.name, list(cfg.report.published_paths(ws.root)), ws.root, cfg.evaluators.ci_level
        )
    summary = run_summary(cfg, ws, run_id, len(prompts), outcomes, report, started, plan)
    shared = {c.id: "Cached" for c in plan.shared}
    return Refresh(run_id=run_id, states=states, shared=shared, report=report, model_work_s=0.0, summary=summary)


def refresh(config: str, wait: float = 0.0, loaded: Config | None = None, begun: float | None = None) -> Refresh:
    """Run ``leaderboard_refresh`` on the task runner the config's ``runtime`` names (the CLI's and a deployment's
    one way in: the task runner is chosen per run, from the config, never fixed by the flow's decorator);
    ``loaded`` is the config already loaded (and possibly overridden, as by ``--dask``); ``begun``: when the
    command started (Unix seconds; None: when the flow starts)."""
    cfg = loaded or load_config(config)
    runner = task_runner(cfg.runtime)
    prestart(cfg.runtime)  # a local cluster's fork server imports the model libraries while Prefect starts
    return leaderboard_refresh.with_options(task_runner=runner)(config=config, wait=wait, begun=begun)


@flow(name="scheduled_refresh", log_prints=True)
def scheduled_refresh(config: str, wait: float = 3600.0) -> dict[str, Any]:
    """What a deployment runs: the same refresh (as a subflow, on the config's task runner); waits up to ``wait``
    seconds for a refresh already running on the store. Returns the run summary as JSON-friendly data."""
    result = refresh(config, wait=wait)
    return {"run_id": result.run_id, "states": result.states, "model_work_s": result.model_work_s}


def run(request: RefreshRequest) -> int:
    """The refresh ``t2ibench run`` asks for: run it, print its summary; returns the exit status.

    The console shows the run's progress and ends with its summary (computed or cached per model and step, the report,
    store and log paths); what Prefect and the model libraries print goes to the config's log file
    (``<data>/logs/refresh.log``). A failed run ends with its one-line cause on stderr."""
    from t2ibench.errors import InputError

    try:
        cfg = load_config(request.config)
        log = log_file(Workspace.for_config(cfg, request.config))
        if request.dask:  # a local Dask cluster of N workers, whatever the config says
            cfg = dataclasses.replace(
                cfg,
                runtime=dataclasses.replace(
                    cfg.runtime, task_runner="dask", workers=request.dask, devices=0, address=None
                ),
            )
    except InputError as exc:
        print(f"{PROGRAM}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    out = route_to_log(log, program=PROGRAM)  # from here on, only t2ibench's own lines reach the console
    print(f"refresh {cfg.name}: started (its full log: {log})", file=out.err, flush=True)
    # in the log, the verdict comes at exit, after Prefect's own shutdown lines (atexit runs handlers registered
    # earlier later), so a failed run's real cause is the last line there too
    verdict: list[str] = []
    atexit.register(lambda: verdict and print(verdict[0], file=sys.stderr, flush=True))

    def failed(cause: str, code: int) -> int:
        """The cause as the console's last line, after the log's path (the traceback is in the log)."""
        verdict.append(cause)
        print(f"{PROGRAM}: the full log is {log}", file=out.err)
        print(cause, file=out.err, flush=True)
        return code

    try:
        with stop_on_signals(PROGRAM):  # SIGTERM/SIGHUP as Ctrl-C, each bounded to the grace period
            fast = not (request.flow or request.dask)
            begun = request.begun if request.begun is not None else time.time()
            result = refresh_without_prefect(request.config, cfg, request.wait, begun) if fast else None
            if result is None:
                result = refresh(request.config, wait=request.wait, loaded=cfg, begun=begun)
    except InputError as exc:
        return failed(f"{PROGRAM}: error: {' '.join(str(exc).split())}", 2)
    except BaseException as exc:
        signum = signal_number(exc)
        if signum is None:
            if isinstance(exc, Exception):
                return failed(f"{PROGRAM}: failed: {failure_cause(exc)}", 1)
            raise
        return failed(
            f"{PROGRAM}: interrupted ({signal_name(signum)}); the run lock is released and finished work is kept",
            exit_code(signum),
        )
    if request.summary:
        with open(request.summary, "w") as fh:
            json.dump(dataclasses.asdict(result), fh, indent=2, default=str)
    out.out.write(result.summary.render())
    out.out.flush()
    return changes(cfg, request, out)


def changes(cfg: Config, request: RefreshRequest, out: Any) -> int:
    """What the paired tests flagged since the last refresh, one line each on the console; with
    ``fail_on_regression``, status 3 (``EXIT_REGRESSION``) when one is a regression."""
    from t2ibench.commands.common import EXIT_OK, EXIT_REGRESSION
    from t2ibench.comparisons import flagged_lines
    from t2ibench.store import Store, queries

    store = Workspace.for_config(cfg, request.config).store
    rows = queries.latest_comparisons(Store(store)) if store.exists() else []
    lines = flagged_lines(rows)
    for line in lines:
        print(f"since the last refresh: {line}", file=out.err)
    out.err.flush()
    regression = any(r["kind"] == "since" and r["flagged"] == "regression" for r in rows)
    return EXIT_REGRESSION if request.fail_on_regression and regression else EXIT_OK


if __name__ == "__main__":
    sys.exit(request_main(RefreshRequest, run, PROGRAM))
