"""The benchmark's steps as plain functions (no Prefect): the Prefect tasks in ``tasks/`` are thin wrappers.

Every step takes the parts of the configuration it needs and the content hashes of its inputs, writes its
outputs under the workspace, and returns a small JSON-serialisable dict (paths and hashes) — so a Prefect task
can cache it by content and a plain Python caller can chain the steps without any orchestration.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from t2ibench import __version__
from t2ibench.config import (
    Config,
    DiversityConfig,
    FieldError,
    GenEvalSuite,
    ModelConfig,
    ScendiConfig,
    parse_indices,
    section_hash,
    to_plain,
    workspace_root,
)
from t2ibench.errors import InputError
from t2ibench.metrics.geneval import TASKS

# -- identities -------------------------------------------------------------------------------------------------


@cache
def code_version() -> str:
    """Package version plus a hash of the library's Python sources (a code change invalidates caches)."""
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return f"{__version__}+{digest.hexdigest()[:12]}"


def content_hash(value: Any) -> str:
    """16-hex-digit SHA-256 of a JSON-serialisable value (inputs of a step)."""
    return hashlib.sha256(json.dumps(to_plain(value), sort_keys=True, default=str).encode()).hexdigest()[:16]


def outputs_digest(paths: Sequence[str | Path]) -> str:
    """'absent' if any path is missing, else a hash of their names, sizes and modification times.

    Part of every cache key whose step writes files, so a cached result never points at files that were deleted
    (e.g. by ``dvc checkout``) or replaced: the step runs again (and resumes from whatever is left).
    """
    stamps = []
    for p in map(Path, paths):
        if not p.exists():
            return "absent"
        info = p.stat()
        stamps.append([str(p), info.st_size, info.st_mtime_ns])
    return content_hash(stamps)


def file_digest(path: str | Path) -> str:
    """SHA-256 (16 hex digits) of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class Workspace:
    """Where a config's outputs go: paths relative to the workspace root (the folder holding ``configs/``)."""

    root: Path
    config: Config

    def __post_init__(self) -> None:
        try:
            self.config.outputs.check_inside(self.root)
        except FieldError as exc:
            raise InputError(f"outputs.{exc.field}: {exc.message}") from None

    @classmethod
    def for_config(cls, config: Config, config_path: str | Path) -> Workspace:
        """The workspace of a config file: the parent of its ``configs/`` folder, else the file's folder."""
        return cls(root=workspace_root(config_path), config=config)

    def path(self, relative: str) -> Path:
        """A workspace path (absolute paths stay as they are)."""
        p = Path(relative)
        return p if p.is_absolute() else self.root / p

    @property
    def data(self) -> Path:
        """The config's data folder."""
        return self.path(self.config.outputs.data)

    @property
    def reports(self) -> Path:
        """The config's reports folder."""
        return self.path(self.config.outputs.reports)

    @property
    def store(self) -> Path:
        """The DuckDB file."""
        return self.path(self.config.outputs.store)

    @property
    def cache(self) -> Path:
        """The embedding cache root."""
        return self.path(self.config.outputs.cache)

    def model_dir(self, kind: str, model: str) -> Path:
        """Where one version of a model's outputs live: data/<kind>/<model>/<version>.

        The version is the model's hash (generator and prompt selection) for images, plus the hash of the
        evaluator section for results and embeddings — so a changed model or evaluator never overwrites, or is
        confused with, an earlier version's files, which the store's history still points to.
        """
        version = model_hash(self.config.model(model), self.config.geneval)
        if kind == "images":
            return self.data / kind / model / version
        section = {"results": self.config.evaluators.geneval, "embeddings": self.config.evaluators}[kind]
        return self.data / kind / model / f"{version}-{section_hash(section)}"


# -- prompts --------------------------------------------------------------------------------------------------


def suite_id(suite: GenEvalSuite) -> str:
    """Name of a generated suite in the store: 'geneval' for the official one, else with seed and size."""
    official = suite.seed == 43 and suite.per_task == 100
    return "geneval" if official else f"geneval-s{suite.seed}-n{suite.per_task}"


def select_prompts(suite: GenEvalSuite) -> list[tuple[int, dict[str, Any]]]:
    """(index, record) of the suite's prompts, restricted by ``prompts`` and/or ``limit_per_task``."""
    from t2ibench.suites.geneval import generate_suite

    records = generate_suite(seed=suite.seed, per_task=suite.per_task)
    selected = list(enumerate(records))
    if suite.prompts:
        try:
            wanted = set(parse_indices(suite.prompts, size=len(records)))
        except InputError as exc:
            raise InputError(f"geneval.prompts: {exc}") from None
        selected = [(i, r) for i, r in selected if i in wanted]
    if suite.limit_per_task is not None:
        counts: dict[str, int] = {}
        kept = []
        for i, r in selected:
            if counts.get(r["tag"], 0) < suite.limit_per_task:
                counts[r["tag"]] = counts.get(r["tag"], 0) + 1
                kept.append((i, r))
        selected = kept
    if not selected:
        raise InputError("geneval: the prompt selection is empty")
    return selected


# -- generation ---------------------------------------------------------------------------------------------------


def generation_spec(model: ModelConfig) -> Any:
    """The GenerationSpec of a model's diffusers generator."""
    from t2ibench.models.generation import GenerationSpec

    g = model.generator
    return GenerationSpec(
        model=g.model,
        revision=g.revision,
        stage2=g.stage2,
        steps=g.steps,
        guidance=g.guidance,
        negative_prompt=g.negative_prompt,
        height=g.height,
        width=g.width,
        images_per_prompt=g.images_per_prompt,
        seed=g.seed,
        seeding=g.seeding,
        batch_size=g.batch_size or g.images_per_prompt,
        dtype=g.dtype,
        scheduler=g.scheduler,
    )


def step_generate(
    ws: Workspace, model: ModelConfig, prompts: Sequence[tuple[int, Mapping[str, Any]]], *, show_progress: bool = True
) -> dict[str, Any]:
    """Generate (or import) the model's images; returns image records and the manifest."""
    from t2ibench.models.generation import DiffusersGenerator, FolderImporter

    out = ws.model_dir("images", model.name)
    if model.generator.backend == "folder":
        if not model.generator.source:
            raise InputError(f"models.{model.name}.generator: the folder backend needs 'source'")
        generator: Any = FolderImporter(
            ws.path(model.generator.source), label=model.name, images_per_prompt=model.generator.images_per_prompt
        )
    else:
        generator = DiffusersGenerator(
            generation_spec(model), device=ws.config.runtime.device, show_progress=show_progress
        )
    records = generator.generate(list(prompts), out)
    manifest = json.loads((out / "manifest.json").read_text())
    return {
        "model": model.name,
        "folder": str(out),
        "images": [
            {
                "prompt_index": r.prompt_index,
                "sample": r.sample,
                "path": str(r.path),
                "sha256": r.sha256,
                "seed": r.seed,
            }
            for r in records
        ],
        "manifest": manifest,
    }


def local_inputs_digest(ws: Workspace, model: ModelConfig) -> str:
    """A stat digest (path, size, mtime) of the local files a model's images come from: the folder backend's
    source, or a diffusers model given as a local directory; '' for hub ids. Part of the generate cache key, so
    replacing those files (same config) re-imports or regenerates instead of reusing stale images."""
    g = model.generator
    where = ws.path(g.source) if g.backend == "folder" and g.source else Path(g.model)
    if not where.is_dir():
        return ""
    stamps = []
    for path in sorted(where.rglob("*")):
        if path.is_file():
            info = path.stat()
            stamps.append([str(path.relative_to(where)), info.st_size, info.st_mtime_ns])
    return content_hash(stamps)


def expected_outputs(ws: Workspace, step: str, model: str) -> list[Path]:
    """The files a step leaves behind for ``model`` (what its cache entry relies on)."""
    if step == "generate":
        folder = ws.model_dir("images", model)
        return [folder / "manifest.json", folder / "samples.jsonl"]
    if step == "embed":
        folder = ws.model_dir("embeddings", model)
        return [folder / f for f in ("image_features.npy", "clip_image_features.npy", "clip_text_features.npy")]
    if step == "geneval":
        return [ws.model_dir("results", model) / "geneval_results.jsonl"]
    raise InputError(f"unknown step {step!r}")


def images_hash(images: Sequence[Mapping[str, Any]]) -> str:
    """Content hash of a list of image records (their prompt, sample and bytes)."""
    return content_hash([[i["prompt_index"], i["sample"], i["sha256"]] for i in images])


# -- GenEval -------------------------------------------------------------------------------------------------------


def step_geneval(
    ws: Workspace,
    model: str,
    images: Sequence[Mapping[str, Any]],
    prompts: Mapping[int, Mapping[str, Any]],
    *,
    show_progress: bool = True,
) -> dict[str, Any]:
    """Detect, colour and judge every image; writes results.jsonl and returns its path, hash and summary."""
    from t2ibench.geneval_eval import FolderScan, ImageItem, evaluate_scan, summarise
    from t2ibench.metrics.geneval import GenEvalParams
    from t2ibench.models.colour import ClipColourClassifier
    from t2ibench.models.detection import HFMask2Former, MMDetMask2Former

    cfg = ws.config.evaluators.geneval
    device = ws.config.runtime.device
    if cfg.detector.backend == "mmdet":
        if not cfg.detector.mmdet_config:
            raise InputError("evaluators.geneval.detector: the mmdet backend needs 'mmdet_config'")
        detector: Any = MMDetMask2Former(cfg.detector.mmdet_config, cfg.detector.mmdet_checkpoint or "", device=device)
    else:
        detector = HFMask2Former(
            cfg.detector.model, revision=cfg.detector.revision, device=device, resize=cfg.detector.resize
        )
    colour = ClipColourClassifier(
        cfg.colour.arch, cfg.colour.pretrained, device=device, background=cfg.colour.background
    )
    params = GenEvalParams(
        threshold=cfg.threshold,
        counting_threshold=cfg.counting_threshold,
        max_objects=cfg.max_objects,
        max_overlap=cfg.max_overlap,
        position_margin=cfg.position_margin,
    )
    items = tuple(
        ImageItem(int(i["prompt_index"]), f"{int(i['sample']):05d}", Path(i["path"]), prompts[int(i["prompt_index"])])
        for i in images
    )
    scan = FolderScan(
        root=Path(images[0]["path"]).parents[2],
        items=items,
        expected_prompts=len(prompts),
        found_prompts=len({i.prompt_index for i in items}),
        expected_images=len(items),
    )
    out = ws.model_dir("results", model) / "geneval_results.jsonl"
    rows = evaluate_scan(scan, detector, colour, params=params, out=out, show_progress=show_progress)
    summary = summarise(rows)
    return {"model": model, "results": str(out), "sha256": file_digest(out), "summary": summary.to_dict()}


# -- embeddings ------------------------------------------------------------------------------------------------


def _embedder(cfg: Any, device: str, *, show_progress: bool) -> Any:
    from t2ibench.models.embedding import DINOv2Embedder, OpenCLIPEmbedder

    if cfg.backend == "open_clip":
        return OpenCLIPEmbedder(
            cfg.model, cfg.pretrained, device=device, normalize=cfg.normalize, show_progress=show_progress
        )
    return DINOv2Embedder(
        cfg.model,
        pooling=cfg.pooling,
        device=device,
        dtype=cfg.dtype,
        normalize=cfg.normalize,
        show_progress=show_progress,
    )


def step_embed(
    ws: Workspace,
    model: str,
    images: Sequence[Mapping[str, Any]],
    prompts: Mapping[int, Mapping[str, Any]],
    *,
    show_progress: bool = True,
) -> dict[str, Any]:
    """Image features (image embedder), CLIP image and text features per image; cached by content."""
    from t2ibench.models.embedding import embed_images_cached, embed_texts_cached

    cfg = ws.config.evaluators
    device = ws.config.runtime.device
    out = ws.model_dir("embeddings", model)
    out.mkdir(parents=True, exist_ok=True)
    paths = [Path(i["path"]) for i in images]
    image_vectors, _ = embed_images_cached(
        _embedder(cfg.image_embedder, device, show_progress=show_progress), paths, ws.cache
    )
    clip = _embedder(cfg.clip, device, show_progress=show_progress)
    clip_images, _ = embed_images_cached(clip, paths, ws.cache)
    prompt_ids = sorted({int(i["prompt_index"]) for i in images})
    texts = [str(prompts[p]["prompt"]) for p in prompt_ids]
    clip_texts, truncated, _ = embed_texts_cached(clip, texts, ws.cache)
    files = {
        "image": out / "image_features.npy",
        "clip_image": out / "clip_image_features.npy",
        "clip_text": out / "clip_text_features.npy",
    }
    for key, array in (("image", image_vectors), ("clip_image", clip_images), ("clip_text", clip_texts)):
        tmp = files[key].with_name(files[key].name + ".tmp")
        with open(tmp, "wb") as fh:
            np.save(fh, np.asarray(array, dtype=np.float32), allow_pickle=False)
        tmp.replace(files[key])
    ids = {
        "image_prompt_ids": [int(i["prompt_index"]) for i in images],
        "samples": [int(i["sample"]) for i in images],
        "text_prompt_ids": prompt_ids,
    }
    (out / "ids.json").write_text(json.dumps(ids) + "\n")
    return {
        "model": model,
        "files": {k: str(v) for k, v in files.items()},
        "sha256": {k: file_digest(v) for k, v in files.items()},
        "ids": ids,
        "truncated_prompts": [prompt_ids[i] for i in truncated],
        "image_embedder": section_hash(cfg.image_embedder),
        "clip": section_hash(cfg.clip),
    }


# -- diversity -----------------------------------------------------------------------------------------------------


def resolve_sigma(value: float | str, X: np.ndarray, seed: int) -> float:
    """A configured bandwidth, or the median heuristic on X (n, d) for "median"."""
    from t2ibench.metrics import median_heuristic_sigma

    return float(median_heuristic_sigma(X, seed=seed)) if value == "median" else float(value)


def feature_center(X: np.ndarray) -> np.ndarray:
    """The mean feature vector (d,), float64: every shard of a model subtracts the same one before FKEA's random
    Fourier features (exact, the Gaussian kernel being shift-invariant; it keeps float32 phases precise)."""
    center: np.ndarray = np.asarray(X, dtype=np.float64).mean(axis=0)
    return center


def step_fkea_shard(features: str, shard: int, shards: int, cfg: DiversityConfig, sigma: float) -> dict[str, Any]:
    """FKEA (or cosine) state of one shard (rows shard::shards) saved next to the features: an additive statistic."""
    from t2ibench.metrics import FKEA, CosineEntropy

    X = np.load(features, allow_pickle=False)
    rows = X[shard::shards]
    est: Any = (
        FKEA(sigma=sigma, rff_dim=cfg.rff_dim, seed=cfg.seed, dim=X.shape[1], center=feature_center(X))
        if cfg.kernel == "gaussian"
        else CosineEntropy(dim=X.shape[1])
    )
    if len(rows):
        est.update(rows)
    path = Path(features).with_name(f"diversity_state_{shard}of{shards}.npz")
    if est.n:
        est.save(path)
    return {"shard": shard, "n": est.n, "state": str(path) if est.n else None}


def step_diversity(
    ws: Workspace, model: str, embedded: Mapping[str, Any], shard_states: Sequence[Mapping[str, Any]], sigma: float
) -> dict[str, Any]:
    """Merge shard states into the model's FKEA scores, the diversity-vs-n curve and the FKEA modes."""
    from t2ibench.metrics import FKEA, CosineEntropy
    from t2ibench.metrics.modes import kernel_modes

    cfg = ws.config.evaluators.diversity
    cls: Any = FKEA if cfg.kernel == "gaussian" else CosineEntropy
    merged = None
    for s in shard_states:
        if s["state"]:
            state = cls.load(s["state"])
            merged = state if merged is None else merged.merge(state)
    if merged is None:
        raise InputError(f"{model}: no images to measure")
    result = merged.compute(cfg.alphas)
    X = np.load(embedded["files"]["image"], allow_pickle=False)
    rows = [
        _metric_row("fkea" if cfg.kernel == "gaussian" else "cosine_vendi", a, v, result, sigma, cfg)
        for a, v in result.vendi.items()
    ]
    rows.append(_metric_row("rke", 2.0, result.rke, result, sigma, cfg))
    rng = np.random.default_rng(cfg.seed)
    order = rng.permutation(len(X))
    for n in sorted({n for n in cfg.n_curve if 0 < n <= len(X)}):
        part = (
            cls(sigma=sigma, rff_dim=cfg.rff_dim, seed=cfg.seed, center=feature_center(X))
            if cfg.kernel == "gaussian"
            else cls()
        )
        curve = part.update(X[order[:n]]).compute([1.0])
        rows.append(_metric_row("fkea_curve", 1.0, curve.vendi[1.0], curve, sigma, cfg))
    modes = kernel_modes(merged, _ordered_shards(X, cfg.shards), k=min(cfg.modes, len(X)), top=min(cfg.top, len(X)))
    # kernel_modes scored rows in shard order; map back to image positions
    positions = np.concatenate([np.arange(len(X))[s :: cfg.shards] for s in range(cfg.shards)])
    return {
        "model": model,
        "metrics": rows,
        "modes": [_mode_row(m, positions, "fkea") for m in modes.modes],
        "n": merged.n,
    }


def _ordered_shards(X: np.ndarray, shards: int) -> list[np.ndarray]:
    return [X[s::shards] for s in range(shards) if len(X[s::shards])]


def _metric_row(metric: str, alpha: float, value: float, result: Any, sigma: float, cfg: Any) -> dict[str, Any]:
    params = {
        "alpha": "inf" if math.isinf(alpha) else alpha,
        "n": result.n,
        "sigma": sigma,
        "rff_dim": getattr(cfg, "rff_dim", None),
        "seed": cfg.seed,
        "kernel": cfg.kernel,
    }
    return {
        "metric": metric,
        "params_key": json.dumps(params, sort_keys=True),
        "kernel": cfg.kernel,
        "alpha": None if math.isinf(alpha) else alpha,
        "sigma": sigma,
        "rff_dim": getattr(cfg, "rff_dim", None) if cfg.kernel == "gaussian" else None,
        "n": int(result.n),
        "seed": cfg.seed,
        "value": float(value),
        "error_bound": getattr(result, "error_radius", None),
        "details": {"alpha": "inf" if math.isinf(alpha) else alpha},
    }


def _mode_row(mode: Any, positions: np.ndarray, source: str) -> dict[str, Any]:
    return {
        "source": source,
        "mode_index": mode.index,
        "eigenvalue": mode.eigenvalue,
        "share": mode.share,
        "entropy_share": mode.entropy_share,
        "top": [int(positions[j]) for j in mode.top],
        "bottom": [int(positions[j]) for j in mode.bottom],
    }


def step_scendi(ws: Workspace, model: str, embedded: Mapping[str, Any]) -> dict[str, Any]:
    """Scendi of (image, prompt) CLIP pairs matched by prompt id, its decomposition and its modes."""
    from t2ibench.metrics.modes import scendi_modes
    from t2ibench.metrics.scendi import Scendi, gather_by_id

    cfg: ScendiConfig = ws.config.evaluators.scendi
    images = np.load(embedded["files"]["clip_image"], allow_pickle=False)
    texts = np.load(embedded["files"]["clip_text"], allow_pickle=False)
    image_ids = embedded["ids"]["image_prompt_ids"]
    paired = gather_by_id(image_ids, embedded["ids"]["text_prompt_ids"], texts)
    image_sigma = resolve_sigma(cfg.image_sigma, images, cfg.seed) if cfg.kernel == "gaussian" else None
    text_sigma = resolve_sigma(cfg.text_sigma, texts, cfg.seed) if cfg.kernel == "gaussian" and len(texts) > 1 else 1.0
    est = Scendi(
        kernel=cfg.kernel,
        image_sigma=image_sigma,
        text_sigma=text_sigma if cfg.kernel == "gaussian" else None,
        rff_dim=cfg.rff_dim,
        seed=cfg.seed,
    )
    est.update(images, paired, image_ids=image_ids, text_ids=image_ids)
    res = est.compute(epsilon=cfg.epsilon)
    params = {
        "kernel": cfg.kernel,
        "image_sigma": image_sigma,
        "text_sigma": text_sigma,
        "rff_dim": cfg.rff_dim,
        "epsilon": cfg.epsilon,
        "seed": cfg.seed,
        "n": res.n,
    }
    rows = []
    for metric, value in (
        ("scendi", res.scendi),
        ("scendi_conditional_vendi", res.conditional_vendi),
        ("scendi_model_share", res.model_share),
        ("scendi_prompt_score", res.prompt_score),
        ("clip_image_vendi", res.image_vendi),
    ):
        rows.append(
            {
                "metric": metric,
                "params_key": json.dumps(params, sort_keys=True),
                "kernel": cfg.kernel,
                "alpha": 1.0,
                "sigma": image_sigma,
                "rff_dim": cfg.rff_dim if cfg.kernel == "gaussian" else None,
                "n": res.n,
                "seed": cfg.seed,
                "value": float(value),
                "error_bound": None,
                "details": params,
            }
        )
    k = min(cfg.modes, len(images))
    modes = scendi_modes(
        est, images, k=k, top=min(cfg.top, len(images)), bottom=min(cfg.top, len(images)), epsilon=cfg.epsilon
    )
    positions = np.arange(len(images))
    return {"model": model, "metrics": rows, "modes": [_mode_row(m, positions, "scendi") for m in modes.modes]}


# -- store -----------------------------------------------------------------------------------------------------------


def evaluator_hash(config: Config) -> str:
    """Hash of everything that judges images (GenEval evaluators, embedders, metric parameters)."""
    return section_hash(config.evaluators)


def model_hash(model: ModelConfig, suite: GenEvalSuite) -> str:
    """Hash of how a model's images are made (its generator section and the prompt selection)."""
    return content_hash({"generator": to_plain(model.generator), "suite": to_plain(suite)})


def result_rows(results: Sequence[Any], suite: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Store rows (verdicts, detections) of judged images (``ResultRow``s), keyed by prompt index and sample."""
    verdict_rows, detection_rows = [], []
    for row in results:
        key = {"suite": suite, "prompt_index": int(row.prompt_index or 0), "sample": int(row.sample)}
        verdict_rows.append(
            {**key, "tag": row.tag, "correct": row.correct, "reason": row.reason, "relation": row.relation}
        )
        for cls, boxes in row.details.items():
            colours = list(row.colours.get(cls) or [])
            for rank, box in enumerate(boxes):
                detection_rows.append(
                    {
                        **key,
                        "class": cls,
                        "rank": rank,
                        "x1": box[0],
                        "y1": box[1],
                        "x2": box[2],
                        "y2": box[3],
                        "score": box[4],
                        "colour": colours[rank] if rank < len(colours) else None,
                    }
                )
    return verdict_rows, detection_rows


def step_store(
    ws: Workspace,
    run_id: str,
    model: ModelConfig,
    prompts: Sequence[tuple[int, Mapping[str, Any]]],
    generated: Mapping[str, Any],
    geneval: Mapping[str, Any],
    diversity: Mapping[str, Any],
    scendi: Mapping[str, Any],
) -> dict[str, Any]:
    """Write one model version's rows in one transaction (idempotent: replaces that version's rows)."""
    from t2ibench.geneval_eval import read_results
    from t2ibench.store import Store

    cfg = ws.config
    suite = suite_id(cfg.geneval)
    mh = model_hash(model, cfg.geneval)
    eh = evaluator_hash(cfg)
    manifest = generated["manifest"]
    smoke = bool(manifest.get("generator", {}).get("smoke") or cfg.smoke)
    images = generated["images"]
    by_position = {(int(i["prompt_index"]), int(i["sample"])): i for i in images}
    verdict_rows, detection_rows = result_rows(read_results(geneval["results"]), suite)
    missing = [k for k in by_position if k not in {(r["prompt_index"], r["sample"]) for r in verdict_rows}]
    if missing:
        raise InputError(f"{model.name}: {len(missing)} images have no GenEval verdict (e.g. {missing[0]})")
    version = {"model": model.name, "model_hash": mh}
    judged = {**version, "evaluator_hash": eh}
    content = content_hash(
        [
            images_hash(images),
            geneval["sha256"],
            diversity["metrics"],
            diversity["modes"],
            scendi["metrics"],
            scendi["modes"],
            manifest,
        ]
    )
    store = Store(ws.store)
    with store.write() as con:
        stored = con.execute(
            "SELECT content_hash FROM model_versions WHERE model = ? AND model_hash = ? AND evaluator_hash = ?",
            [model.name, mh, eh],
        ).fetchone()
        unchanged = stored is not None and stored[0] == content
        if not unchanged:  # an identical re-run only records that this run produced the version
            rows = {"verdicts": verdict_rows, "detections": detection_rows}
            _write_version(store, con, model, judged, suite, prompts, images, manifest, smoke, rows, diversity, scendi)
            store.upsert(con, "model_versions", [{**judged, "content_hash": content, "stored_at": datetime.now(UTC)}])
        store.upsert(con, "run_models", [{"run_id": run_id, **judged}])
    return {
        "model": model.name,
        "unchanged": unchanged,
        "model_hash": mh,
        "evaluator_hash": eh,
        "images": len(images),
        "verdicts": len(verdict_rows),
        "metrics": len(diversity["metrics"]) + len(scendi["metrics"]),
    }


def _write_version(
    store: Any,
    con: Any,
    model: ModelConfig,
    judged: dict[str, Any],
    suite: str,
    prompts: Sequence[tuple[int, Mapping[str, Any]]],
    images: Sequence[Mapping[str, Any]],
    manifest: Any,
    smoke: bool,
    rows: Mapping[str, list[dict[str, Any]]],
    diversity: Mapping[str, Any],
    scendi: Mapping[str, Any],
) -> None:
    """All rows of one model/evaluation version (inside the caller's transaction)."""
    version = {"model": judged["model"], "model_hash": judged["model_hash"]}
    model_row = {
        **version,
        "label": model.label or model.name,
        "backend": model.generator.backend,
        "model_id": model.generator.model,
        "revision": model.generator.revision,
        "sampling": to_plain(model.generator),
        "manifest": manifest,
        "smoke": smoke,
    }
    store.upsert(con, "models", [model_row])
    prompt_rows = [
        {"suite": suite, "prompt_index": i, "tag": r["tag"], "prompt": r["prompt"], "metadata": dict(r)}
        for i, r in prompts
    ]
    store.upsert(con, "prompts", prompt_rows)
    image_rows = [
        {
            "prompt_index": int(i["prompt_index"]),
            "sample": int(i["sample"]),
            "path": i["path"],
            "sha256": i["sha256"],
            "seed": i["seed"],
        }
        for i in images
    ]
    store.replace(con, "images", {**version, "suite": suite}, image_rows)
    store.replace(con, "verdicts", {**judged, "suite": suite}, rows["verdicts"])
    store.replace(con, "detections", {**judged, "suite": suite}, rows["detections"])
    store.replace(con, "metrics", judged, [*diversity["metrics"], *scendi["metrics"]])
    store.replace(con, "modes", judged, [*diversity["modes"], *scendi["modes"]])


def start_run(ws: Workspace, run_id: str, config_hash: str, flow: str) -> int:
    """Record a run as started; runs still 'running' are marked 'abandoned' (returns how many).

    Called under the store's run lock, so no other refresh is alive: a 'running' row is a killed run's.
    """
    from t2ibench.store import Store

    store = Store(ws.store)
    with store.write() as con:
        stale = con.execute("SELECT count(*) FROM runs WHERE status = 'running'").fetchone()
        con.execute(
            "UPDATE runs SET status = 'abandoned', finished_at = ? WHERE status = 'running'", [datetime.now(UTC)]
        )
        store.upsert(
            con,
            "runs",
            [
                {
                    "run_id": run_id,
                    "config_name": ws.config.name,
                    "config_hash": config_hash,
                    "code_version": code_version(),
                    "started_at": datetime.now(UTC),
                    "finished_at": None,
                    "status": "running",
                    "smoke": ws.config.smoke,
                    "details": {"flow": flow},
                }
            ],
        )
    return int(stale[0]) if stale else 0


def failure_cause(exc: BaseException) -> str:
    """One line naming what really failed: the innermost cause of ``exc``, as 'Type: message'."""
    seen = set()
    while exc.__cause__ is not None and id(exc) not in seen:
        seen.add(id(exc))
        exc = exc.__cause__
    text = " ".join(str(exc).split()) or "(no message)"
    return text if isinstance(exc, InputError) else f"{type(exc).__name__}: {text}"


def finish_run(ws: Workspace, run_id: str, status: str, details: Mapping[str, Any] | None = None) -> None:
    """Mark a run completed or failed (its models become current only when completed)."""
    from t2ibench.store import Store

    store = Store(ws.store)
    with store.write() as con:
        con.execute(
            "UPDATE runs SET status = ?, finished_at = ?, details = ? WHERE run_id = ?",
            [status, datetime.now(UTC), json.dumps(dict(details or {}), default=str), run_id],
        )


TASK_ORDER = TASKS
