"""The benchmark's Prefect tasks. Each calls one ``t2ibench.pipeline`` step and returns its typed result (cached
as JSON: the results are frozen dataclasses). Cache keys are content keys: task name + code version + the config
section the step reads + the content hashes of its inputs, so an unchanged model is a cache hit and a changed one
recomputes only itself."""

from __future__ import annotations

import dataclasses
import time
from datetime import timedelta
from typing import Any, TypeVar

from prefect import task
from prefect.context import TaskRunContext

from t2ibench import pipeline
from t2ibench.config import DiversityConfig, GenEvalSuite, ModelConfig
from t2ibench.hashing import code_version, content_hash, section_hash
from t2ibench.pipeline import Embedded, Generated, Judged, Scores, ShardState, Stored
from t2ibench.workspace import Workspace

RESULTS = {"persist_result": True, "result_serializer": "json", "cache_expiration": timedelta(days=365)}
# Cache keys cover inputs only. A cached result whose output files have gone (deleted, or removed by
# ``dvc checkout``) is refreshed by the flow, which passes ``refresh_cache=True`` for that task.

R = TypeVar("R")
PromptList = list[list[Any]]  # [index, record] pairs (JSON-friendly)


def _timed(result: R, start: float) -> R:
    """The step's result with the seconds it took (model work, for the run summary)."""
    return dataclasses.replace(result, elapsed_s=round(time.perf_counter() - start, 3))  # type: ignore[type-var]


def _key(*parts: Any) -> str:
    return content_hash([code_version(), *parts])


def _records(prompts: PromptList) -> list[tuple[int, dict[str, Any]]]:
    return [(int(i), r) for i, r in prompts]


def _generate_key(context: TaskRunContext, p: dict[str, Any]) -> str:
    sources = p["ws"].local_inputs_digest(p["model"].name)  # replaced source images or local weights
    return "generate-" + _key(section_hash(p["model"]), content_hash(p["prompts"]), sources)


def _embed_key(context: TaskRunContext, p: dict[str, Any]) -> str:
    ev = p["ws"].config.evaluators
    images = p["generated"].images_hash()
    return "embed-" + _key(section_hash(ev.image_embedder), section_hash(ev.clip), images, content_hash(p["prompts"]))


def _geneval_key(context: TaskRunContext, p: dict[str, Any]) -> str:
    images = p["generated"].images_hash()
    geneval = section_hash(p["ws"].config.evaluators.geneval)
    return "geneval-" + _key(geneval, images, content_hash(p["prompts"]), p.get("shard"))


def _shard_key(context: TaskRunContext, p: dict[str, Any]) -> str:
    return "fkea-shard-" + _key(
        p["embedded"].sha256.image,
        p["shard"],
        p["shards"],
        section_hash(p["ws"].config.evaluators.diversity),
        p["sigma"],
    )


def _diversity_key(context: TaskRunContext, p: dict[str, Any]) -> str:
    states = [s.state and s.n for s in p["shards"]]
    return "diversity-" + _key(
        p["model"], p["embedded"].sha256, states, section_hash(p["ws"].config.evaluators.diversity), p["sigma"]
    )


def _scendi_key(context: TaskRunContext, p: dict[str, Any]) -> str:
    e = p["embedded"]
    ids = [e.image_prompt_ids, e.samples, e.text_prompt_ids]
    return "scendi-" + _key(p["model"], e.sha256, ids, section_hash(p["ws"].config.evaluators.scendi))


@task(name="prompts", **RESULTS, cache_key_fn=lambda c, p: "prompts-" + _key(section_hash(p["suite"])))
def prompts_task(suite: GenEvalSuite) -> PromptList:
    """The selected prompt records as [index, record] pairs."""
    return [[i, r] for i, r in pipeline.select_prompts(suite)]


@task(name="generate", **RESULTS, cache_key_fn=_generate_key, task_run_name="generate-{model.name}")
def generate_task(ws: Workspace, model: ModelConfig, prompts: PromptList) -> Generated:
    """Images of one model (resumes an interrupted generation)."""
    start = time.perf_counter()
    return _timed(pipeline.step_generate(ws, model, _records(prompts), show_progress=False), start)


@task(name="embed", **RESULTS, cache_key_fn=_embed_key, task_run_name="embed-{model}")
def embed_task(ws: Workspace, model: str, generated: Generated, prompts: PromptList) -> Embedded:
    """Image-embedder and CLIP features of one model's images and prompts."""
    start = time.perf_counter()
    return _timed(pipeline.step_embed(ws, model, generated, dict(_records(prompts)), show_progress=False), start)


@task(name="images", task_run_name="images-{model}")
def merge_images_task(model: str, shards: list[Generated]) -> Generated:
    """One model's images from its generation shards (always runs: a concatenation)."""
    return pipeline.merge_generated(shards)


@task(name="geneval", **RESULTS, cache_key_fn=_geneval_key, task_run_name="geneval-{model}")
def geneval_task(
    ws: Workspace, model: str, generated: Generated, prompts: PromptList, shard: str | None = None
) -> Judged:
    """GenEval verdicts of one model's images (or of one prompt shard's, into that shard's file)."""
    start = time.perf_counter()
    records = dict(_records(prompts))
    return _timed(pipeline.step_geneval(ws, model, generated, records, show_progress=False, shard=shard), start)


@task(name="verdicts", task_run_name="verdicts-{model}")
def merge_geneval_task(ws: Workspace, model: str, shards: list[Judged]) -> Judged:
    """The model's results file joined from its GenEval shards (always runs: rewrites only a changed file)."""
    return pipeline.merge_judged(ws, model, shards)


@task(
    name="sigma",
    **RESULTS,
    cache_key_fn=lambda c, p: "sigma-" + _key(p["embedded"].sha256.image, section_hash(p["cfg"])),
)
def sigma_task(embedded: Embedded, cfg: DiversityConfig) -> float:
    """The Gaussian bandwidth: as configured, or the median heuristic on the image features."""
    return pipeline.step_sigma(embedded.files.image, cfg)


@task(name="fkea-shard", **RESULTS, cache_key_fn=_shard_key, task_run_name="fkea-shard-{shard}")
def fkea_shard_task(ws: Workspace, model: str, embedded: Embedded, shard: int, shards: int, sigma: float) -> ShardState:
    """The additive FKEA state of one shard of a model's features."""
    start = time.perf_counter()
    cfg = ws.config.evaluators.diversity
    state = str(ws.shard_state(model, shard, shards))
    return _timed(pipeline.step_fkea_shard(embedded.files.image, state, shard, shards, cfg, sigma), start)


@task(name="diversity", **RESULTS, cache_key_fn=_diversity_key, task_run_name="diversity-{model}")
def diversity_task(ws: Workspace, model: str, embedded: Embedded, shards: list[ShardState], sigma: float) -> Scores:
    """Merged FKEA scores, the diversity-vs-n curve and FKEA modes."""
    start = time.perf_counter()
    return _timed(pipeline.step_diversity(ws, model, embedded, shards, sigma), start)


@task(name="scendi", **RESULTS, cache_key_fn=_scendi_key, task_run_name="scendi-{model}")
def scendi_task(ws: Workspace, model: str, embedded: Embedded) -> Scores:
    """Scendi and its modes on CLIP (image, prompt) pairs."""
    start = time.perf_counter()
    return _timed(pipeline.step_scendi(ws, model, embedded), start)


@task(name="store", task_run_name="store-{model.name}")
def store_task(
    ws: Workspace,
    run_id: str,
    model: ModelConfig,
    prompts: PromptList,
    generated: Generated,
    judged: Judged,
    diversity: Scores,
    scendi: Scores,
) -> Stored:
    """Idempotent upsert of one model version's rows (always runs: cheap, and the store may be new)."""
    return pipeline.step_store(ws, run_id, model, _records(prompts), generated, judged, diversity, scendi)


@task(name="report")
def report_task(ws: Workspace) -> dict[str, Any]:
    """Render the leaderboard (Markdown + HTML), plots and mode galleries from the store."""
    from t2ibench.report.leaderboard import render_reports

    return render_reports(
        ws.store, ws.reports, config_name=ws.config.name, published=ws.config.report.published_paths(ws.root)
    )
