"""The benchmark's Prefect tasks. Each converts arguments, calls one ``t2ibench.pipeline`` step and returns its
JSON result. Cache keys are content keys: task name + code version + the config section the step reads + the
content hashes of its inputs, so an unchanged model is a cache hit and a changed one recomputes only itself."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from prefect import task
from prefect.context import TaskRunContext

from t2ibench import pipeline
from t2ibench.config import section_hash

RESULTS = {"persist_result": True, "result_serializer": "json", "cache_expiration": timedelta(days=365)}
# Cache keys cover inputs only. A cached result whose output files have gone (deleted, or removed by
# ``dvc checkout``) is refreshed by the flow, which passes ``refresh_cache=True`` for that task.


def _timed(result: dict[str, Any], start: float) -> dict[str, Any]:
    """The step's result with the seconds it took (model work, for the run summary)."""
    return {**result, "elapsed_s": round(time.perf_counter() - start, 3)}


def _key(*parts: Any) -> str:
    return pipeline.content_hash([pipeline.code_version(), *parts])


def _generate_key(context: TaskRunContext, p: dict[str, Any]) -> str:
    sources = pipeline.local_inputs_digest(p["ws"], p["model"])  # replaced source images or local weights
    return "generate-" + _key(section_hash(p["model"]), pipeline.content_hash(p["prompts"]), sources)


def _embed_key(context: TaskRunContext, p: dict[str, Any]) -> str:
    ev = p["ws"].config.evaluators
    images = pipeline.images_hash(p["generated"]["images"])
    prompts = pipeline.content_hash(p["prompts"])
    return "embed-" + _key(section_hash(ev.image_embedder), section_hash(ev.clip), images, prompts)


def _geneval_key(context: TaskRunContext, p: dict[str, Any]) -> str:
    images = pipeline.images_hash(p["generated"]["images"])
    prompts = pipeline.content_hash(p["prompts"])
    return "geneval-" + _key(section_hash(p["ws"].config.evaluators.geneval), images, prompts)


def _shard_key(context: TaskRunContext, p: dict[str, Any]) -> str:
    return "fkea-shard-" + _key(p["features_sha"], p["shard"], p["shards"], section_hash(p["cfg"]), p["sigma"])


def _diversity_key(context: TaskRunContext, p: dict[str, Any]) -> str:
    states = [s["state"] and s["n"] for s in p["shard_states"]]
    return "diversity-" + _key(
        p["model"], p["embedded"]["sha256"], states, section_hash(p["ws"].config.evaluators.diversity), p["sigma"]
    )


def _scendi_key(context: TaskRunContext, p: dict[str, Any]) -> str:
    return "scendi-" + _key(
        p["model"], p["embedded"]["sha256"], p["embedded"]["ids"], section_hash(p["ws"].config.evaluators.scendi)
    )


@task(name="prompts", **RESULTS, cache_key_fn=lambda c, p: "prompts-" + _key(section_hash(p["suite"])))
def prompts_task(suite: Any) -> list[list[Any]]:
    """The selected prompt records as [index, record] pairs."""
    return [[i, r] for i, r in pipeline.select_prompts(suite)]


@task(name="generate", **RESULTS, cache_key_fn=_generate_key, task_run_name="generate-{model.name}")
def generate_task(ws: pipeline.Workspace, model: Any, prompts: list[list[Any]]) -> dict[str, Any]:
    """Images of one model (resumes an interrupted generation)."""
    start = time.perf_counter()
    return _timed(pipeline.step_generate(ws, model, [(int(i), r) for i, r in prompts], show_progress=False), start)


@task(name="embed", **RESULTS, cache_key_fn=_embed_key, task_run_name="embed-{model}")
def embed_task(
    ws: pipeline.Workspace, model: str, generated: dict[str, Any], prompts: list[list[Any]]
) -> dict[str, Any]:
    """Image-embedder and CLIP features of one model's images and prompts."""
    start = time.perf_counter()
    return _timed(
        pipeline.step_embed(ws, model, generated["images"], {int(i): r for i, r in prompts}, show_progress=False), start
    )


@task(name="geneval", **RESULTS, cache_key_fn=_geneval_key, task_run_name="geneval-{model}")
def geneval_task(
    ws: pipeline.Workspace, model: str, generated: dict[str, Any], prompts: list[list[Any]]
) -> dict[str, Any]:
    """GenEval verdicts of one model's images."""
    start = time.perf_counter()
    return _timed(
        pipeline.step_geneval(ws, model, generated["images"], {int(i): r for i, r in prompts}, show_progress=False),
        start,
    )


@task(name="sigma", **RESULTS, cache_key_fn=lambda c, p: "sigma-" + _key(p["features_sha"], section_hash(p["cfg"])))
def sigma_task(features: str, features_sha: str, cfg: Any) -> float:
    """The Gaussian bandwidth: as configured, or the median heuristic on the features."""
    import numpy as np

    return pipeline.resolve_sigma(cfg.sigma, np.load(features, allow_pickle=False), cfg.seed)


@task(name="fkea-shard", **RESULTS, cache_key_fn=_shard_key, task_run_name="fkea-shard-{shard}")
def fkea_shard_task(
    features: str, features_sha: str, shard: int, shards: int, cfg: Any, sigma: float
) -> dict[str, Any]:
    """The additive FKEA state of one shard of a model's features."""
    start = time.perf_counter()
    return _timed(pipeline.step_fkea_shard(features, shard, shards, cfg, sigma), start)


@task(name="diversity", **RESULTS, cache_key_fn=_diversity_key, task_run_name="diversity-{model}")
def diversity_task(
    ws: pipeline.Workspace, model: str, embedded: dict[str, Any], shard_states: list[dict[str, Any]], sigma: float
) -> dict[str, Any]:
    """Merged FKEA scores, the diversity-vs-n curve and FKEA modes."""
    start = time.perf_counter()
    return _timed(pipeline.step_diversity(ws, model, embedded, shard_states, sigma), start)


@task(name="scendi", **RESULTS, cache_key_fn=_scendi_key, task_run_name="scendi-{model}")
def scendi_task(ws: pipeline.Workspace, model: str, embedded: dict[str, Any]) -> dict[str, Any]:
    """Scendi and its modes on CLIP (image, prompt) pairs."""
    start = time.perf_counter()
    return _timed(pipeline.step_scendi(ws, model, embedded), start)


@task(name="store", task_run_name="store-{model.name}")
def store_task(
    ws: pipeline.Workspace,
    run_id: str,
    model: Any,
    prompts: list[list[Any]],
    generated: dict[str, Any],
    geneval: dict[str, Any],
    diversity: dict[str, Any],
    scendi: dict[str, Any],
) -> dict[str, Any]:
    """Idempotent upsert of one model version's rows (always runs: cheap, and the store may be new)."""
    return pipeline.step_store(
        ws, run_id, model, [(int(i), r) for i, r in prompts], generated, geneval, diversity, scendi
    )


@task(name="report")
def report_task(ws: pipeline.Workspace) -> dict[str, Any]:
    """Render the leaderboard (Markdown + HTML), plots and mode galleries from the store."""
    from t2ibench.report.leaderboard import render_reports

    return render_reports(ws.store, ws.reports, config_name=ws.config.name)
