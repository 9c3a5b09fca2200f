"""GenEval's slice of a refresh plan, the spine every model's plan grows from: per prompt shard, the generation of
GenEval's prompts (the model version's images, which the diversity steps measure too) and the detector's judging,
their merges, and Table 2. Its calls' identities come from the one mechanism (``t2ibench.pipeline.identity``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from t2ibench.benchmarks.geneval.options import GenEvalConfig, GenEvalSuite
from t2ibench.benchmarks.geneval.steps import photo_truth_digest, step_geneval, step_selftest
from t2ibench.benchmarks.geneval.suite import REWRITTEN, REWRITTEN_DATA
from t2ibench.pipeline.identity import settings, version_hash
from t2ibench.pipeline.plan import Call, ModelScope, Ref, building
from t2ibench.pipeline.results import LocalFiles, PromptSet
from t2ibench.pipeline.stamps import stamp_of
from t2ibench.pipeline.steps import prompt_shards, shard_label


def evaluator_weights(geneval: GenEvalConfig) -> LocalFiles:
    """The stamp of the detector's and colour classifier's local files (model folder, mmdet files, a CLIP
    checkpoint given as a path), if any."""
    d, c = geneval.detector, geneval.colour
    return stamp_of([d.model, d.mmdet_config or "", d.mmdet_checkpoint or "", c.arch, c.pretrained or ""])


@dataclass(frozen=True)
class SpinePart:
    """GenEval's part of one model's plan: the ids of the calls whose results the model-level steps and the store
    take (its images, verdicts and Table 2), the unsharded settings its sharded calls count under in the protocol
    record (shards are placement, not versions), its results file and its images folder."""

    generated: str
    judged: str
    scores: str
    protocol: dict[str, Any]
    results: Path
    images: Path


def plan_model(scope: ModelScope, prompts: PromptSet) -> SpinePart:
    """One model's GenEval calls, ``add``ed in order: generation and judging per prompt shard, their merges when
    sharded, Table 2."""
    config, ws, name, device = scope.config, scope.ws, scope.model.name, scope.device
    ev = config.evaluators
    shards = prompt_shards(prompts, config.runtime.prompts_per_shard)
    labels: list[str | None] = [shard_label(list(p)) for p in shards] if len(shards) > 1 else [None]
    with building(f"{name}/generate"):
        images_per_prompt = scope.model.generator.images_per_prompt
        imported = scope.model.generator.backend == "folder"
    images = ws.images_dir(name, scope.model_hash)
    with building(f"{name}/geneval"):
        geneval: GenEvalConfig = ev.of("geneval")
        geneval_settings = {"geneval": geneval, "prompts": prompts}
    geneval_hash = version_hash(settings(step_geneval, geneval_settings))
    results = ws.results_file(name, scope.model_hash, geneval_hash, "geneval")
    generated_parts, judged_parts = [], []
    for part, label in zip(shards, labels, strict=True):
        suffix = f"/{label}" if label else ""
        gen_id = f"{name}/generate{suffix}"
        with building(gen_id):
            params = {**scope.generation, "prompts": part, "out": images, "device": device}
        image_files = tuple(
            images / f"{i:05d}" / "samples" / f"{k:05d}.png" for i, _ in part for k in range(images_per_prompt)
        )
        # an imported folder's count per prompt is its source's: only the manifest and log are known in advance
        outputs = (images / "manifest.json", images / "samples.jsonl", *(() if imported else image_files))
        generated_parts.append(scope.add(Call(gen_id, "generate", params, name, "generate", outputs)))
        judge_id = f"{name}/geneval{suffix}"
        out = (
            results if label is None else ws.shard_results_file(name, scope.model_hash, geneval_hash, "geneval", label)
        )
        with building(judge_id):
            params = {
                "geneval": geneval,
                "generated": Ref(gen_id),
                "prompts": part,
                "weights": evaluator_weights(geneval),
                "out": out,
                "names_from": ws.root,
                "device": device,
            }
        judged_parts.append(scope.add(Call(judge_id, "geneval", params, name, "geneval", (out,))))
    if len(shards) > 1:
        shards_of = {"shards": [Ref(p) for p in generated_parts]}
        generated = scope.add(Call(f"{name}/images", "images", shards_of, name, "generate"))
        merged = {"shards": [Ref(p) for p in judged_parts], "out": results}
        judged = scope.add(Call(f"{name}/verdicts", "verdicts", merged, name, "geneval"))
    else:
        generated, judged = generated_parts[0], judged_parts[0]
    with building(f"{name}/scores"):
        params = {"judged": Ref(judged), "ci_level": ev.ci_level}
    scores = scope.add(Call(f"{name}/scores", "scores", params, name, "geneval"))
    protocol = {"geneval": settings(step_geneval, geneval_settings)}
    return SpinePart(generated, judged, scores, protocol, results, images)


def acquire_rewritten(config: Any, root: Path) -> list[Path]:
    """The rewritten prompts' file a refresh of ``config`` (workspace ``root``) reads when a model is given them,
    fetched where it is missing: at its default place (``benchmarks.geneval.rewritten`` left as is) it comes from
    ``$T2IBENCH_GENEVAL_REWRITTEN_DATA`` or the pinned release, as ``t2ibench data fetch geneval_rewritten`` would,
    and is verified against the release's SHA-256 every time. A file named elsewhere is the user's own and is never
    fetched over (each of its lines is still checked against its official record when the run is planned)."""
    from t2ibench.datasets import check_release_copy, fetch_release
    from t2ibench.errors import note

    suite: GenEvalSuite = config.spine_prompts
    if all(m.wording == "original" for m in config.models) or suite.rewritten != REWRITTEN_DATA:
        return []
    target = root / suite.rewritten
    if target.is_file():
        return [check_release_copy(REWRITTEN.name, target, where="benchmarks.geneval.rewritten")]
    note(f"{suite.rewritten}: fetching GenEval's rewritten prompts (as `t2ibench data fetch {REWRITTEN.name}`)")
    return [p for p in fetch_release(REWRITTEN.name, target.parent) if p.name == target.name]


def plan_selftest(config: Any, ws: Any) -> tuple[str, str, dict[str, Any]]:
    """The one self-test call of the run's GenEval evaluator (``evaluators.selftest``), shared by every model's store
    call: its id, step and parameters (its folder named by its key)."""
    ev = config.evaluators
    with building("selftest"):
        geneval: GenEvalConfig = ev.of("geneval")
        params = {
            "geneval": geneval,
            "selftest": ev.selftest,
            "photo_truth": photo_truth_digest() if ev.selftest.photos else None,
            "weights": evaluator_weights(geneval),
        }
    key = version_hash(settings(step_selftest, params))
    return f"selftest/{key}", "selftest", {**params, "out": ws.selftest_dir(key)}
