"""Flow ``leaderboard_refresh``: for each model — prompts → generate → embed → GenEval → FKEA shards → merge →
Scendi → store — then the reports. Run: ``python -m flows.leaderboard_refresh --config configs/smoke.yaml``
(or ``t2ibench run --config ...``)."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import dataclasses
import json
import sys
import time
import uuid
from dataclasses import dataclass
from typing import Any

import tasks  # noqa: F401  (project Prefect settings first)
from prefect import flow, get_run_logger
from prefect.task_runners import ThreadPoolTaskRunner
from tasks.benchmark import (
    diversity_task,
    embed_task,
    fkea_shard_task,
    generate_task,
    geneval_task,
    prompts_task,
    report_task,
    scendi_task,
    sigma_task,
    store_task,
)

from t2ibench.config import Config, load_config
from t2ibench.logs import console, route_to_log
from t2ibench.pipeline import failure_cause, finish_run, start_run
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


@flow(name="leaderboard_refresh", task_runner=ThreadPoolTaskRunner(max_workers=1), log_prints=True)
def leaderboard_refresh(config: str, wait: float = 0.0) -> Refresh:
    """Refresh the leaderboard of one config; returns what it did (states per task, computed/cached per step)."""
    logger = get_run_logger()
    # import the model stack once, in this thread, before tasks run side by side in threads: a half-imported torch
    # in sys.modules breaks scipy's array-API checks in a concurrent task ("partially initialized module 'torch'")
    import torch  # noqa: F401

    started = time.perf_counter()
    cfg = load_config(config)
    ws = Workspace.for_config(cfg, config)
    run_id = uuid.uuid4().hex[:12]
    states: dict[str, dict[str, str]] = {}
    outcomes: list[ModelSummary] = []
    model_work_s = 0.0
    progress = RunProgress(len(cfg.models), len(STEPS), label=f"refresh {cfg.name}")
    holder = f"leaderboard_refresh {run_id} ({cfg.name})"
    with run_lock(ws.store, wait=wait, holder=holder), contextlib.closing(progress) as display:
        start_run(ws, run_id, "leaderboard_refresh")
        try:
            prompts = prompts_task(cfg.geneval)
            retry = {"retries": cfg.runtime.retries, "retry_delay_seconds": list(cfg.runtime.retry_delay_seconds)}
            for model in cfg.models:
                logger.info("model %s: %d prompts", model.name, len(prompts))
                model_started = time.perf_counter()
                # what is already there, to tell work done from work kept
                on_disk, vectors = images_on_disk(ws.images_dir(model.name)), embedding_cache_shards(ws.cache)

                def refresh(step: str, name: str = model.name) -> dict[str, bool]:
                    if ws.outputs_gone(step, name):
                        logger.info("%s/%s: outputs missing, recomputing", name, step)
                        return {"refresh_cache": True}
                    return {}

                generated = generate_task.with_options(**retry, **refresh("generate")).submit(ws, model, prompts)
                embedded = embed_task.with_options(**refresh("embed")).submit(ws, model.name, generated, prompts)
                judged = geneval_task.with_options(**retry, **refresh("geneval")).submit(
                    ws, model.name, generated, prompts
                )
                display.at(model.name, "generate")
                generated.result()  # a generation failure surfaces as itself, not as a pending embedding
                display.advance()
                div_cfg = cfg.evaluators.diversity
                sigma = sigma_task.submit(embedded, div_cfg)
                shards = [
                    fkea_shard_task.with_options(
                        refresh_cache=not ws.shard_state(model.name, i, div_cfg.shards).exists()
                    ).submit(ws, model.name, embedded, i, div_cfg.shards, sigma)
                    for i in range(div_cfg.shards)
                ]
                diversity = diversity_task.submit(ws, model.name, embedded, shards, sigma)
                scendi = scendi_task.submit(ws, model.name, embedded)
                stored = store_task.submit(ws, run_id, model, prompts, generated, judged, diversity, scendi)
                # upstream first: a failure surfaces as its own exception, never as a downstream 'UnfinishedRun'
                waits = [("embed", [embedded]), ("geneval", [judged]), ("diversity", [sigma, *shards, diversity])]
                for step, futures in [*waits, ("scendi", [scendi]), ("store", [stored])]:
                    display.at(model.name, step)
                    for future in futures:
                        future.result()
                    display.advance()
                work = [generated, embedded, judged, *shards, diversity, scendi]
                model_work_s += sum(f.result().elapsed_s for f in work if f.state.name == "Completed")
                states[model.name] = {
                    "generate": generated.state.name,
                    "embed": embedded.state.name,
                    "geneval": judged.state.name,
                    "sigma": sigma.state.name,
                    "fkea-shard": ",".join(s.state.name for s in shards),
                    "diversity": diversity.state.name,
                    "scendi": scendi.state.name,
                }
                outcome = ModelSummary(
                    model=model.name,
                    steps=(
                        generate_outcome(_cached(generated), [i.path for i in generated.result().images], on_disk),
                        embed_outcome(_cached(embedded), vectors, embedding_cache_shards(ws.cache)),
                        step_outcome("geneval", [_cached(judged)]),
                        step_outcome("diversity", [_cached(f) for f in (sigma, *shards, diversity)]),
                        step_outcome("scendi", [_cached(scendi)]),
                        store_outcome(stored.result().unchanged),
                    ),
                    seconds=round(time.perf_counter() - model_started, 3),
                )
                outcomes.append(outcome)
                display.model_done(model.name, outcome.seconds)
                logger.info("model %s stored: %s", model.name, json.dumps(dataclasses.asdict(stored.result())))
        except BaseException as exc:
            finish_run(ws, run_id, "failed", {"error": failure_cause(exc)})
            raise
        finish_run(ws, run_id, "completed", {"states": states})
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


def task_runner(config: Config, dask_workers: int | None = None) -> Any:
    """The task runner ``runtime.task_runner`` names (``--dask N`` overrides): local threads or a local Dask cluster,
    with ``runtime.workers`` workers (single-threaded Dask workers: each task's BLAS uses the worker's core)."""
    runtime = config.runtime
    if dask_workers or runtime.task_runner == "dask":
        from prefect_dask import DaskTaskRunner

        workers = dask_workers or runtime.workers
        return DaskTaskRunner(cluster_kwargs={"n_workers": workers, "threads_per_worker": 1})
    return ThreadPoolTaskRunner(max_workers=runtime.workers)


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
        runner = leaderboard_refresh.with_options(task_runner=task_runner(cfg, args.dask))
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
        result = runner(config=args.config, wait=args.wait)
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
