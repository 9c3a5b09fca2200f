"""Flow ``leaderboard_refresh``: for each model — prompts → generate → embed → GenEval → FKEA shards → merge →
Scendi → store — then the reports. Run: ``python -m flows.leaderboard_refresh --config configs/smoke.yaml``
(or ``t2ibench run --config ...``)."""

from __future__ import annotations

import argparse
import atexit
import dataclasses
import json
import sys
import uuid
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
from t2ibench.pipeline import failure_cause, finish_run, start_run
from t2ibench.store import run_lock
from t2ibench.workspace import Workspace


@flow(name="leaderboard_refresh", task_runner=ThreadPoolTaskRunner(max_workers=1), log_prints=True)
def leaderboard_refresh(config: str, wait: float = 0.0) -> dict[str, Any]:
    """Refresh the leaderboard of one config; returns each task's final state name per model."""
    logger = get_run_logger()
    # import the model stack once, in this thread, before tasks run side by side in threads: a half-imported torch
    # in sys.modules breaks scipy's array-API checks in a concurrent task ("partially initialized module 'torch'")
    import torch  # noqa: F401

    cfg = load_config(config)
    ws = Workspace.for_config(cfg, config)
    run_id = uuid.uuid4().hex[:12]
    states: dict[str, dict[str, str]] = {}
    model_work_s = 0.0
    with run_lock(ws.store, wait=wait, holder=f"leaderboard_refresh {run_id} ({cfg.name})"):
        start_run(ws, run_id, "leaderboard_refresh")
        try:
            prompts = prompts_task(cfg.geneval)
            retry = {"retries": cfg.runtime.retries, "retry_delay_seconds": list(cfg.runtime.retry_delay_seconds)}
            for model in cfg.models:
                logger.info("model %s: %d prompts", model.name, len(prompts))

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
                generated.result()  # a generation failure surfaces as itself, not as a pending embedding
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
                for future in (embedded, judged, sigma, *shards, diversity, scendi, stored):
                    future.result()
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
                logger.info("model %s stored: %s", model.name, json.dumps(dataclasses.asdict(stored.result())))
        except BaseException as exc:
            finish_run(ws, run_id, "failed", {"error": failure_cause(exc)})
            raise
        finish_run(ws, run_id, "completed", {"states": states})
        report = report_task(ws)
    logger.info("reports: %s", report.get("markdown"))
    return {"run_id": run_id, "states": states, "report": report, "model_work_s": round(model_work_s, 3)}


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
    """Command-line entry: ``python -m flows.leaderboard_refresh --config FILE [--dask N] [--wait S]``."""
    parser = argparse.ArgumentParser(prog="flows.leaderboard_refresh", description=__doc__)
    parser.add_argument("--config", required=True)
    parser.add_argument("--wait", type=float, default=0.0, help="wait this long for another refresh to finish")
    parser.add_argument("--dask", type=int, metavar="WORKERS", help="fan tasks out over a local Dask cluster")
    parser.add_argument("--summary", help="write the run summary (states per task) as JSON here")
    args = parser.parse_args(argv)
    from t2ibench.errors import InputError

    try:
        runner = leaderboard_refresh.with_options(task_runner=task_runner(load_config(args.config), args.dask))
    except InputError as exc:
        print(f"leaderboard_refresh: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2

    # The verdict is printed at exit, after Prefect's own shutdown lines (atexit runs handlers registered earlier
    # later), so a failed run's real cause is always the last line of its log.
    verdict: list[str] = []
    atexit.register(lambda: verdict and print(verdict[0], file=sys.stderr, flush=True))
    try:
        result = runner(config=args.config, wait=args.wait)
    except InputError as exc:
        verdict.append(f"leaderboard_refresh: error: {' '.join(str(exc).split())}")
        return 2
    except KeyboardInterrupt:
        verdict.append("leaderboard_refresh: interrupted")
        return 130
    except Exception as exc:  # the real cause as the last line (the traceback is in the Prefect log above)
        verdict.append(f"leaderboard_refresh: failed: {failure_cause(exc)}")
        return 1
    if args.summary:
        with open(args.summary, "w") as fh:
            json.dump(result, fh, indent=2, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
