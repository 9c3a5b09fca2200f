"""Flow ``leaderboard_refresh``: every model's prompts → generate (prompt shards) → embed and GenEval (shards) →
FKEA shards → merge → Scendi → store, submitted up front as one task graph, then the reports. Run:
``python -m flows.leaderboard_refresh --config configs/smoke.yaml`` (or ``t2ibench run --config ...``).

Dependencies are futures, so independent models and shards run side by side on the configured task runner
(``runtime.task_runner``: local threads, a local Dask cluster, or a running Dask scheduler; ``flows/runners.py``);
the store writes are chained (each waits for the previous model's, failed or not), so they stay serialised and in
config order. A model that fails does not stop the others: they finish and are stored, and the run then fails
with the first failed model's own cause.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import dataclasses
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
from tasks.benchmark import (
    diversity_task,
    embed_task,
    fkea_shard_task,
    generate_task,
    geneval_task,
    merge_geneval_task,
    merge_images_task,
    prompts_task,
    report_task,
    scendi_task,
    sigma_task,
    store_task,
)

from flows.runners import Done, Submitter, describe, task_runner
from t2ibench.config import Config, ModelConfig, load_config
from t2ibench.logs import console, route_to_log
from t2ibench.pipeline import failure_cause, finish_run, prompt_shards, shard_label, start_run
from t2ibench.pipeline.runs import log_file
from t2ibench.pipeline.summary import (
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
from t2ibench.store import run_lock
from t2ibench.workspace import Workspace

PROGRAM = "leaderboard_refresh"


@dataclass(frozen=True)
class Refresh:
    """What a refresh did: its run id, each task's final Prefect state per model, the report's files, the seconds of
    model work it did (cache hits excluded), and the summary (computed or cached per model and step)."""

    run_id: str
    states: dict[str, dict[str, str]]
    report: dict[str, Any]
    model_work_s: float
    summary: RunSummary


def _cached(future: Any) -> bool:
    """True when a finished task's result came from Prefect's cache (its content key was unchanged)."""
    return bool(future.state.name == "Cached")


@dataclass
class ModelGraph:
    """One model's submitted tasks, by summary step, and what was on disk before they ran."""

    model: ModelConfig
    on_disk: dict[str, Any]
    vectors: frozenset[str]
    generate: list[Any]  # one per prompt shard
    geneval: list[Any]  # one per prompt shard
    merged: list[Any]  # with several shards: the merges of the images and of the verdicts
    embed: Any
    judged: Any
    sigma: Any
    shards: list[Any]
    diversity: Any
    scendi: Any
    stored: Any
    done_s: float = 0.0
    finished: set[str] = field(default_factory=set)

    def steps(self) -> dict[str, list[Any]]:
        """The futures of each summary step (STEPS order), upstream first within a step."""
        return {
            "generate": [*self.generate, *self.merged[:1]],
            "embed": [self.embed],
            "geneval": [*self.geneval, *self.merged[1:]],
            "diversity": [self.sigma, *self.shards, self.diversity],
            "scendi": [self.scendi],
            "store": [self.stored],
        }

    def pending(self) -> str:
        """The first step not finished yet ('' when all are)."""
        return next((step for step in STEPS if step not in self.finished), "")


def submit_model(
    ws: Workspace, cfg: Config, model: ModelConfig, prompts: list[Any], run_id: str, after: Any, submit: Submitter
) -> ModelGraph:
    """Submit one model's whole task graph (nothing waits here); its store waits for ``after``, failed or not."""
    name = model.name
    # what is already there, to tell work done from work kept
    on_disk, vectors = images_on_disk(ws.images_dir(name)), embedding_cache_shards(ws.cache)
    retry = {"retries": cfg.runtime.retries, "retry_delay_seconds": list(cfg.runtime.retry_delay_seconds)}

    def refresh(step: str) -> dict[str, bool]:
        if ws.outputs_gone(step, name):
            return {"refresh_cache": True}
        return {}

    parts = prompt_shards(prompts, cfg.runtime.prompts_per_shard)
    labels = [shard_label(part) for part in parts] if len(parts) > 1 else [None]
    generate, geneval, merged = [], [], []
    for part, label in zip(parts, labels, strict=True):
        suffix = f"-{label}" if label else ""
        generating = generate_task.with_options(
            task_run_name=f"generate-{name}{suffix}", **retry, **refresh("generate")
        )
        generate.append(submit(generating, ws=ws, model=model, prompts=part))
        if label is None:
            gone = refresh("geneval")
        else:  # a shard's own results file: gone means judge that shard again
            gone = {"refresh_cache": not ws.geneval_shard_file(name, label).exists()}
        judging = geneval_task.with_options(task_run_name=f"geneval-{name}{suffix}", **retry, **gone)
        geneval.append(submit(judging, ws=ws, model=name, generated=generate[-1], prompts=part, shard=label))
    if len(parts) > 1:
        generated = submit(merge_images_task, cheap=True, model=name, shards=generate)
        judged = submit(merge_geneval_task, cheap=True, ws=ws, model=name, shards=geneval)
        merged = [generated, judged]
    else:
        generated, judged = generate[0], geneval[0]
    embedded = submit(
        embed_task.with_options(**refresh("embed")), ws=ws, model=name, generated=generated, prompts=prompts
    )
    div_cfg = cfg.evaluators.diversity
    sigma = submit(sigma_task, embedded=embedded, cfg=div_cfg)
    shards = [
        submit(
            fkea_shard_task.with_options(refresh_cache=not ws.shard_state(name, i, div_cfg.shards).exists()),
            ws=ws,
            model=name,
            embedded=embedded,
            shard=i,
            shards=div_cfg.shards,
            sigma=sigma,
        )
        for i in range(div_cfg.shards)
    ]
    diversity = submit(diversity_task, ws=ws, model=name, embedded=embedded, shards=shards, sigma=sigma)
    scendi = submit(scendi_task, ws=ws, model=name, embedded=embedded)
    stored = submit(
        store_task,
        cheap=True,
        wait_for=[allow_failure(after)] if after is not None else None,
        ws=ws,
        run_id=run_id,
        model=model,
        prompts=prompts,
        generated=generated,
        judged=judged,
        diversity=diversity,
        scendi=scendi,
    )
    return ModelGraph(
        model, on_disk, vectors, generate, geneval, merged, embedded, judged, sigma, shards, diversity, scendi, stored
    )


def first_failure(graphs: list[ModelGraph]) -> Any | None:
    """The first failed task in config order, upstream first (its own exception, not a downstream 'NotReady')."""
    for graph in graphs:
        for futures in graph.steps().values():
            for future in futures:
                if future.state.is_failed() or future.state.is_crashed():
                    return future
    for graph in graphs:
        for futures in graph.steps().values():
            for future in futures:
                if not future.state.is_completed():
                    return future
    return None


def summarise_model(ws: Workspace, graph: ModelGraph) -> ModelSummary:
    """Computed or cached per step, from the finished futures."""
    images = [i.path for f in graph.generate for i in f.result().images]
    return ModelSummary(
        model=graph.model.name,
        steps=(
            generate_outcome(all(_cached(f) for f in graph.generate), images, graph.on_disk),
            embed_outcome(_cached(graph.embed), graph.vectors, embedding_cache_shards(ws.cache)),
            step_outcome("geneval", [_cached(f) for f in graph.geneval]),
            step_outcome("diversity", [_cached(f) for f in (graph.sigma, *graph.shards, graph.diversity)]),
            step_outcome("scendi", [_cached(graph.scendi)]),
            store_outcome(graph.stored.result().unchanged),
        ),
        seconds=graph.done_s,
    )


@flow(name="leaderboard_refresh", task_runner=ThreadPoolTaskRunner(max_workers=2), log_prints=True)
def leaderboard_refresh(config: str, wait: float = 0.0) -> Refresh:
    """Refresh the leaderboard of one config; returns what it did (states per task, computed/cached per step)."""
    logger = get_run_logger()
    started = time.perf_counter()
    context = FlowRunContext.get()
    runner = context.task_runner if context is not None else None
    if isinstance(runner, ThreadPoolTaskRunner):
        # tasks in this process's threads: import the model stack once, here, before they run side by side (a
        # half-imported torch in sys.modules breaks scipy's array-API checks: "partially initialized module")
        import torch  # noqa: F401
    # a Dask runner starts its cluster at the first task that must run there: a fully cached refresh starts none

    cfg = load_config(config)
    ws = Workspace.for_config(cfg, config)
    run_id = uuid.uuid4().hex[:12]
    progress = RunProgress(len(cfg.models), len(STEPS), label=f"refresh {cfg.name}")
    holder = f"leaderboard_refresh {run_id} ({cfg.name})"
    with run_lock(ws.store, wait=wait, holder=holder), contextlib.closing(progress) as display:
        start_run(ws, run_id, "leaderboard_refresh")
        try:
            prompts = prompts_task(cfg.geneval)
            shards = len(prompt_shards(prompts, cfg.runtime.prompts_per_shard))
            logger.info(
                "%d models × %d prompts (%d shard%s each) on %s",
                len(cfg.models),
                len(prompts),
                shards,
                "" if shards == 1 else "s",
                describe(runner),
            )
            submit = Submitter(runner)
            graphs: list[ModelGraph] = []
            for model in cfg.models:
                after = graphs[-1].stored if graphs else None
                graphs.append(submit_model(ws, cfg, model, prompts, run_id, after, submit))
            owner = {id(f): (g, step) for g in graphs for step, fs in g.steps().items() for f in fs}
            left = {(g.model.name, step): len(fs) for g in graphs for step, fs in g.steps().items()}
            every = [f for g in graphs for fs in g.steps().values() for f in fs]
            display.at(graphs[0].model.name, "generate")
            ran_here = [f for f in every if isinstance(f, Done)]
            for future in [*ran_here, *as_completed([f for f in every if not isinstance(f, Done)])]:
                future.wait()  # its final state, as the engine returned it (the API's copy may lag behind)
                graph, step = owner[id(future)]
                left[(graph.model.name, step)] -= 1
                if left[(graph.model.name, step)] == 0:
                    graph.finished.add(step)
                    display.advance()
                    if len(graph.finished) == len(STEPS):
                        graph.done_s = round(time.perf_counter() - started, 3)
                        failed = any(not f.state.is_completed() for fs in graph.steps().values() for f in fs)
                        display.model_done(graph.model.name, graph.done_s, failed=failed)
                waiting = [f"{g.model.name} {g.pending()}" for g in graphs if g.pending()]
                if waiting:
                    display.at(waiting[0], "" if len(waiting) == 1 else f"(+{len(waiting) - 1} models)")
            failed = first_failure(graphs)
            if failed is not None:
                failed.result()  # raises the task's own exception
                raise RuntimeError(f"task {failed.task_run_id} ended {failed.state.name}")
            states: dict[str, dict[str, str]] = {}
            model_work_s = 0.0
            outcomes = []
            for graph in graphs:
                work = [*graph.generate, *graph.geneval, graph.embed, *graph.shards, graph.diversity, graph.scendi]
                model_work_s += sum(f.result().elapsed_s for f in work if f.state.name == "Completed")
                states[graph.model.name] = {
                    "generate": ",".join(f.state.name for f in graph.generate),
                    "embed": graph.embed.state.name,
                    "geneval": ",".join(f.state.name for f in graph.geneval),
                    "sigma": graph.sigma.state.name,
                    "fkea-shard": ",".join(s.state.name for s in graph.shards),
                    "diversity": graph.diversity.state.name,
                    "scendi": graph.scendi.state.name,
                    **({"merge": ",".join(f.state.name for f in graph.merged)} if graph.merged else {}),
                }
                outcomes.append(summarise_model(ws, graph))
                logger.info(
                    "model %s stored: %s", graph.model.name, json.dumps(dataclasses.asdict(graph.stored.result()))
                )
        except BaseException as exc:
            finish_run(ws, run_id, "failed", {"error": failure_cause(exc)})
            raise
        finish_run(ws, run_id, "completed", {"states": states, "task_runner": describe(runner)})
        display.at("all models", "report")
        report = report_task(ws)
    log = console().log
    summary = RunSummary(
        config=cfg.name,
        run_id=run_id,
        prompts=len(prompts),
        models=tuple(outcomes),
        report_html=str(report.get("html", "")),
        store=str(ws.store),
        log=str(log) if log is not None else None,
        seconds=round(time.perf_counter() - started, 3),
    )
    logger.info("reports: %s\n%s", report.get("markdown"), summary.render())
    return Refresh(run_id=run_id, states=states, report=report, model_work_s=round(model_work_s, 3), summary=summary)


def refresh(config: str, wait: float = 0.0, loaded: Config | None = None) -> Refresh:
    """Run ``leaderboard_refresh`` on the task runner the config's ``runtime`` names (the CLI's and a deployment's
    one way in: the task runner is chosen per run, from the config, never fixed by the flow's decorator);
    ``loaded`` is the config already loaded (and possibly overridden, as by ``--dask``)."""
    cfg = loaded or load_config(config)
    return leaderboard_refresh.with_options(task_runner=task_runner(cfg.runtime))(config=config, wait=wait)


@flow(name="scheduled_refresh", log_prints=True)
def scheduled_refresh(config: str, wait: float = 3600.0) -> dict[str, Any]:
    """What a deployment runs: the same refresh (as a subflow, on the config's task runner); waits up to ``wait``
    seconds for a refresh already running on the store. Returns the run summary as JSON-friendly data."""
    result = refresh(config, wait=wait)
    return {"run_id": result.run_id, "states": result.states, "model_work_s": result.model_work_s}


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: ``python -m flows.leaderboard_refresh --config FILE [--dask N] [--wait S]``.

    The console shows the run's progress and ends with its summary (computed or cached per model and step, the report,
    store and log paths); what Prefect and the model libraries print goes to the config's log file
    (``<data>/logs/refresh.log``). A failed run ends with its one-line cause on stderr."""
    parser = argparse.ArgumentParser(prog="flows.leaderboard_refresh", description=__doc__)
    parser.add_argument("--config", required=True)
    parser.add_argument("--wait", type=float, default=0.0, help="wait this long for another refresh to finish")
    parser.add_argument("--dask", type=int, metavar="WORKERS", help="fan tasks out over a local Dask cluster")
    parser.add_argument("--summary", help="write the run summary (states per task, computed/cached) as JSON here")
    args = parser.parse_args(argv)
    from t2ibench.errors import InputError

    try:
        cfg = load_config(args.config)
        log = log_file(Workspace.for_config(cfg, args.config))
        if args.dask:  # --dask N: a local Dask cluster of N workers, whatever the config says
            cfg = dataclasses.replace(
                cfg,
                runtime=dataclasses.replace(
                    cfg.runtime, task_runner="dask", workers=args.dask, devices=0, address=None
                ),
            )
    except InputError as exc:
        print(f"{PROGRAM}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    out = route_to_log(log, program=PROGRAM)  # from here on, only t2ibench's own lines reach the console
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
        result = refresh(args.config, wait=args.wait, loaded=cfg)
    except InputError as exc:
        return failed(f"{PROGRAM}: error: {' '.join(str(exc).split())}", 2)
    except KeyboardInterrupt:
        return failed(f"{PROGRAM}: interrupted", 130)
    except Exception as exc:
        return failed(f"{PROGRAM}: failed: {failure_cause(exc)}", 1)
    if args.summary:
        with open(args.summary, "w") as fh:
            json.dump(dataclasses.asdict(result), fh, indent=2, default=str)
    out.out.write(result.summary.render())
    out.out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
