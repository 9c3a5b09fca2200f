"""The benchmark's steps as plain functions (no Prefect): ``tasks/`` wraps each in a cached Prefect task.

Every step takes the workspace (which owns every output path and the config), the typed results of the steps it
depends on, and returns a typed result (``t2ibench.pipeline.results``). A plain Python caller can chain them
without any orchestration:

    prompts → generate → (embed, geneval) → sigma → fkea shards → diversity, scendi → store
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from t2ibench.config import DiversityConfig, GenEvalSuite, ModelConfig, ScendiConfig, select_indices
from t2ibench.errors import InputError
from t2ibench.hashing import file_digest, section_hash
from t2ibench.pipeline.results import (
    Embedded,
    Generated,
    ImageInfo,
    Judged,
    MetricRecord,
    ModeRecord,
    Scores,
    ShardState,
    Stored,
)
from t2ibench.workspace import EmbeddingFiles, Workspace

Prompts = Sequence[tuple[int, Mapping[str, Any]]]


def select_prompts(suite: GenEvalSuite) -> list[tuple[int, dict[str, Any]]]:
    """(index, record) of the suite's prompts, restricted by ``prompts`` and/or ``limit_per_task``."""
    from t2ibench.suites.geneval import generate_suite

    records = generate_suite(seed=suite.seed, per_task=suite.per_task, classes=suite.classes)
    selected = select_indices(records, suite.prompts, where="geneval.prompts")
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


def step_generate(ws: Workspace, model: ModelConfig, prompts: Prompts, *, show_progress: bool = True) -> Generated:
    """Generate (or import) the model's images into its images folder; resumes what is already there."""
    from t2ibench.models.registry import GENERATORS

    spec = model.generator
    generator = GENERATORS.reuse(
        spec.backend, spec, device=ws.config.runtime.device, show_progress=show_progress, base=ws.root
    )
    out = ws.images_dir(model.name)
    records = generator.generate(list(prompts), out)
    manifest = json.loads((out / "manifest.json").read_text())
    return Generated(
        model=model.name,
        folder=str(out),
        images=tuple(ImageInfo(r.prompt_index, r.sample, str(r.path), r.sha256, r.seed) for r in records),
        manifest=manifest,
    )


def prompt_shards(prompts: Prompts, size: int) -> list[list[tuple[int, Mapping[str, Any]]]]:
    """Consecutive shards of ``size`` prompts in suite order (``size`` 0, or ≥ the count: one shard)."""
    items = list(prompts)
    if size < 0:
        raise InputError(f"prompts_per_shard: must be ≥ 0; got {size}")
    if not size or size >= len(items):
        return [items]
    return [items[i : i + size] for i in range(0, len(items), size)]


def shard_label(prompts: Prompts) -> str:
    """'p00012-p00023': the first and last prompt index of a shard (names its files and task runs)."""
    indices = [int(i) for i, _ in prompts]
    if not indices:
        raise InputError("a prompt shard is empty")
    return f"p{indices[0]:05d}-p{indices[-1]:05d}"


def merge_generated(parts: Sequence[Generated]) -> Generated:
    """One model's images from its prompt shards, in shard order: exactly what one unsharded generation returns
    (the manifest is the folder's, read now); a shard of another model or folder, or an image twice, is refused."""
    if not parts:
        raise InputError("no generation shards to merge")
    first = parts[0]
    for part in parts[1:]:
        if (part.model, part.folder) != (first.model, first.folder):
            raise InputError(f"{first.model}: cannot merge shards of {part.model} ({part.folder}) into {first.folder}")
    images = tuple(i for part in parts for i in part.images)
    keys = [(i.prompt_index, i.sample) for i in images]
    if len(set(keys)) != len(keys):
        twice = next(k for k in keys if keys.count(k) > 1)
        raise InputError(f"{first.model}: prompt {twice[0]} sample {twice[1]} is in two generation shards")
    manifest_file = Path(first.folder) / "manifest.json"
    manifest = json.loads(manifest_file.read_text()) if manifest_file.is_file() else first.manifest
    return Generated(model=first.model, folder=first.folder, images=images, manifest=manifest)


# -- GenEval -------------------------------------------------------------------------------------------------------


def step_geneval(
    ws: Workspace,
    model: str,
    generated: Generated,
    prompts: Mapping[int, Mapping[str, Any]],
    *,
    show_progress: bool,
    shard: str | None = None,
) -> Judged:
    """Detect, colour and judge every image; writes the model version's results file (resuming a partial one), or
    with ``shard`` (a ``shard_label``) that shard's file, which ``merge_judged`` joins into the model's."""
    from t2ibench.geneval_eval import FolderScan, ImageItem, judge_scan, summarise

    cfg = ws.config.evaluators.geneval
    items = tuple(
        ImageItem(i.prompt_index, f"{i.sample:05d}", Path(i.path), prompts[i.prompt_index]) for i in generated.images
    )
    scan = FolderScan(
        root=Path(generated.folder),
        items=items,
        expected_prompts=len(prompts),
        found_prompts=len({i.prompt_index for i in items}),
        expected_images=len(items),
    )
    out = ws.results_file(model) if shard is None else ws.geneval_shard_file(model, shard)
    rows = judge_scan(scan, cfg, out=out, device=ws.config.runtime.device, show_progress=show_progress)
    return Judged(model=model, results=str(out), sha256=file_digest(out), summary=summarise(rows).to_dict())


def merge_judged(ws: Workspace, model: str, parts: Sequence[Judged]) -> Judged:
    """The model version's results file from its shards' files, joined in shard order: byte for byte the file an
    unsharded run writes (each shard's rows are in folder order, and shards are consecutive prompt ranges). The
    file is rewritten only when its bytes change; a shard file that changed since its verdicts were made is refused."""
    from t2ibench.geneval_eval import read_results, summarise
    from t2ibench.io import write_bytes_atomic

    if not parts:
        raise InputError(f"{model}: no GenEval shards to merge")
    chunks = []
    for part in parts:
        if part.model != model:
            raise InputError(f"{model}: cannot merge the GenEval shard of {part.model} ({part.results})")
        path = Path(part.results)
        if not path.is_file() or file_digest(path) != part.sha256:
            raise InputError(f"{path}: this GenEval shard's file is missing or changed since it was judged")
        chunks.append(path.read_bytes())
    out = ws.results_file(model)
    data = b"".join(chunks)
    if not out.is_file() or out.read_bytes() != data:
        write_bytes_atomic(out, data)
    rows = read_results(out)
    return Judged(model=model, results=str(out), sha256=file_digest(out), summary=summarise(rows).to_dict())


# -- embeddings ------------------------------------------------------------------------------------------------


def step_embed(
    ws: Workspace, model: str, generated: Generated, prompts: Mapping[int, Mapping[str, Any]], *, show_progress: bool
) -> Embedded:
    """Image features (image embedder), CLIP image and text features per image; cached by content."""
    from t2ibench.models.embedding import embed_images_cached, embed_texts_cached
    from t2ibench.models.registry import EMBEDDERS

    cfg = ws.config.evaluators
    device = ws.config.runtime.device
    files = ws.embedding_files(model)
    Path(files.image).parent.mkdir(parents=True, exist_ok=True)
    paths = [Path(i.path) for i in generated.images]
    image_embedder = EMBEDDERS.reuse(
        cfg.image_embedder.backend, cfg.image_embedder, device=device, show_progress=show_progress
    )
    image_vectors, _ = embed_images_cached(image_embedder, paths, ws.cache)
    clip = EMBEDDERS.reuse(cfg.clip.backend, cfg.clip, device=device, show_progress=show_progress)
    clip_images, _ = embed_images_cached(clip, paths, ws.cache)
    prompt_ids = sorted({i.prompt_index for i in generated.images})
    clip_texts, truncated, _ = embed_texts_cached(clip, [str(prompts[p]["prompt"]) for p in prompt_ids], ws.cache)
    for target, array in ((files.image, image_vectors), (files.clip_image, clip_images), (files.clip_text, clip_texts)):
        tmp = Path(target).with_name(Path(target).name + ".tmp")
        with open(tmp, "wb") as fh:
            np.save(fh, np.asarray(array, dtype=np.float32), allow_pickle=False)
        tmp.replace(target)
    ids = {
        "image_prompt_ids": [i.prompt_index for i in generated.images],
        "samples": [i.sample for i in generated.images],
        "text_prompt_ids": prompt_ids,
    }
    ws.embedding_ids(model).write_text(json.dumps(ids) + "\n")
    return Embedded(
        model=model,
        files=files,
        sha256=EmbeddingFiles(*(file_digest(p) for p in files.paths())),
        image_prompt_ids=tuple(ids["image_prompt_ids"]),
        samples=tuple(ids["samples"]),
        text_prompt_ids=tuple(prompt_ids),
        truncated_prompts=tuple(prompt_ids[i] for i in truncated),
        image_embedder=section_hash(cfg.image_embedder),
        clip=section_hash(cfg.clip),
    )


# -- diversity -----------------------------------------------------------------------------------------------------


def resolve_sigma(value: float | str, X: np.ndarray, seed: int) -> float:
    """A configured bandwidth, or the median heuristic on X (n, d) for "median"."""
    from t2ibench.metrics import median_heuristic_sigma

    return float(median_heuristic_sigma(X, seed=seed)) if value == "median" else float(value)


def step_sigma(features: str, cfg: DiversityConfig) -> float:
    """The Gaussian bandwidth of a model's image features: as configured, or the median heuristic."""
    return resolve_sigma(cfg.sigma, np.load(features, allow_pickle=False), cfg.seed)


def feature_center(X: np.ndarray) -> np.ndarray:
    """The mean feature vector (d,), float64: every shard of a model subtracts the same one before FKEA's random
    Fourier features (exact, the Gaussian kernel being shift-invariant; it keeps float32 phases precise)."""
    center: np.ndarray = np.asarray(X, dtype=np.float64).mean(axis=0)
    return center


def _estimator(cfg: DiversityConfig, sigma: float, X: np.ndarray) -> Any:
    from t2ibench.metrics import FKEA, CosineEntropy

    if cfg.kernel == "gaussian":
        return FKEA(
            sigma=sigma,
            rff_dim=cfg.rff_dim,
            seed=cfg.seed,
            dim=X.shape[1],
            center=feature_center(X),
            orthogonal=cfg.orthogonal,
        )
    return CosineEntropy(dim=X.shape[1])


def step_fkea_shard(
    features: str, state: str, shard: int, shards: int, cfg: DiversityConfig, sigma: float
) -> ShardState:
    """FKEA (or cosine) state of one shard (rows shard::shards) of the features, saved to ``state``: additive."""
    X = np.load(features, allow_pickle=False)
    rows = X[shard::shards]
    est = _estimator(cfg, sigma, X)
    if len(rows):
        est.update(rows)
        est.save(state)
    return ShardState(shard=shard, shards=shards, n=est.n, state=state if est.n else None)


def _metric(
    metric: str,
    alpha: float,
    value: float,
    result: Any,
    sigma: float,
    cfg: DiversityConfig,
    interval: Any = None,
    ci_method: str | None = None,
    ci_level: float | None = None,
) -> MetricRecord:
    """One diversity score as a stored row; ``interval`` (a ``ScoreInterval`` or None) fills ci_low/ci_high."""
    key_alpha: float | str = "inf" if math.isinf(alpha) else alpha
    params = {
        "alpha": key_alpha,
        "n": result.n,
        "sigma": sigma,
        "rff_dim": cfg.rff_dim,
        "seed": cfg.seed,
        "kernel": cfg.kernel,
    }
    return MetricRecord(
        metric=metric,
        params_key=json.dumps(params, sort_keys=True),
        kernel=cfg.kernel,
        alpha=alpha,  # ∞ is stored as the value inf
        sigma=sigma,
        rff_dim=cfg.rff_dim if cfg.kernel == "gaussian" else None,
        n=int(result.n),
        seed=cfg.seed,
        value=float(value),
        error_bound=getattr(result, "error_radius", None),
        # the bootstrap's shift (mean resample score − score) and standard error, in the score's units
        details={"alpha": key_alpha}
        if interval is None
        else {"alpha": key_alpha, "ci_bias": float(interval.bias), "ci_se": float(interval.se)},
        ci_low=None if interval is None else float(interval.low),
        ci_high=None if interval is None else float(interval.high),
        ci_level=None if interval is None else ci_level,
        ci_method=ci_method,
    )


MIN_CONVERGENCE_PROMPTS = 9  # the n/8 subset needs ≥ 2 prompts to bootstrap over


def _convergence_records(
    name: str, report: Any, result: Any, sigma: float | None, cfg: Any, truncated: bool
) -> list[MetricRecord]:
    """One ``convergence`` row per fraction of a convergence report: the score there, its band, the verdict."""
    rows = []
    for p in report.points:
        params = {
            "score": name,
            "fraction": p.fraction,
            "kernel": cfg.kernel,
            "sigma": sigma,
            "rff_dim": cfg.rff_dim if cfg.kernel == "gaussian" else None,
            "seed": cfg.seed,
            "resamples": report.resamples,
            **({"t": cfg.truncation} if truncated else {}),
        }
        banded = not (math.isnan(p.low) or math.isnan(p.high))
        rows.append(
            MetricRecord(
                metric="convergence",
                params_key=json.dumps(params, sort_keys=True),
                kernel=cfg.kernel,
                alpha=None,
                sigma=sigma,
                rff_dim=params["rff_dim"],
                n=p.n_images,
                seed=cfg.seed,
                value=float(p.value),
                error_bound=None,
                details={
                    "score": name,
                    "label": report.score,
                    "fraction": p.fraction,
                    "n_images": p.n_images,
                    "n_prompts": p.n_prompts,
                    "verdict": report.verdict,
                    "reason": report.reason,
                    "relative_change": report.relative_change,
                    "tolerance": report.tolerance,
                    **({"t": cfg.truncation} if truncated else {}),
                },
                ci_low=float(p.low) if banded else None,
                ci_high=float(p.high) if banded else None,
                ci_level=float(report.level) if banded else None,
                ci_method=(
                    f"centred percentile bootstrap over the subset's prompts, B={report.resamples}"
                    if banded
                    else "not computed: the score is refitted per subset (no bootstrap); change rule only"
                ),
            )
        )
    return rows


def _mode(mode: Any, positions: np.ndarray, source: str) -> ModeRecord:
    return ModeRecord(
        source=source,
        mode_index=mode.index,
        eigenvalue=mode.eigenvalue,
        share=mode.share,
        entropy_share=mode.entropy_share,
        top=tuple(int(positions[j]) for j in mode.top),
        bottom=tuple(int(positions[j]) for j in mode.bottom),
        mass=mode.mass,
        top_scores=tuple(float(x) for x in mode.top_scores),
        bottom_scores=tuple(float(x) for x in mode.bottom_scores),
    )


def step_diversity(ws: Workspace, model: str, embedded: Embedded, shards: Sequence[ShardState], sigma: float) -> Scores:
    """Merge shard states into the model's FKEA scores (with cluster-bootstrap intervals over prompts where
    n ≤ ``bootstrap_max_n``), the diversity-vs-n curve and the FKEA modes."""
    from t2ibench.metrics import FKEA, CosineEntropy, bootstrap_entropy
    from t2ibench.metrics.modes import kernel_modes

    cfg = ws.config.evaluators.diversity
    cls: Any = FKEA if cfg.kernel == "gaussian" else CosineEntropy
    merged = None
    for s in shards:
        if s.state:
            state = cls.load(s.state)
            merged = state if merged is None else merged.merge(state)
    if merged is None:
        raise InputError(f"{model}: no images to measure")
    result = merged.compute(cfg.alphas)
    X = np.load(embedded.files.image, allow_pickle=False)
    name = "fkea" if cfg.kernel == "gaussian" else "cosine_vendi"
    # intervals: prompts resampled with all their images; the resample spectra come from the same features φ(x)
    # the state accumulated (the k × k weighted Gram or the D × D covariance, whichever is smaller)
    boot = None
    if cfg.bootstrap == 0:
        ci_method = "not computed: bootstrap: 0"
    elif len(X) > cfg.bootstrap_max_n:
        ci_method = f"not computed: n > {cfg.bootstrap_max_n} (bootstrap_max_n)"
    elif len(set(embedded.image_prompt_ids)) < 2:
        ci_method = "not computed: fewer than 2 prompts"
    else:
        boot = bootstrap_entropy(
            merged.features(X),
            embedded.image_prompt_ids,
            alphas=tuple(result.vendi),
            resamples=cfg.bootstrap,
            level=ws.config.evaluators.ci_level,
            seed=cfg.seed,
        )
        ci_method = boot.describe()
    level = ws.config.evaluators.ci_level
    # VENDI-∞ = 1/λ_max is a maximum: the bootstrap undercovers it everywhere (docs/metrics.md), so none is stored
    unreliable = "not computed: the bootstrap is unreliable for VENDI-∞ (a maximum)"
    records = [
        _metric(name, a, v, result, sigma, cfg, None, unreliable, None)
        if math.isinf(a) and boot is not None
        else _metric(name, a, v, result, sigma, cfg, None if boot is None else boot.vendi[a], ci_method, level)
        for a, v in result.vendi.items()
    ]
    records.append(
        _metric("rke", 2.0, result.rke, result, sigma, cfg, None if boot is None else boot.rke, ci_method, level)
    )
    # the convergence report (nested prompt subsets n/8 … n, bootstrap bands, a verdict) of the family, from one
    # spectrum per subset and resample; at n its band is the stored interval (same draws, rows in order)
    reports: dict[str, Any] = {}
    prompts = len(set(embedded.image_prompt_ids))
    if boot is not None and cfg.convergence and prompts >= MIN_CONVERGENCE_PROMPTS:
        from t2ibench.metrics import convergence_reports

        names = ("vendi_1", "vendi_2", "rke") + (("truncated_vendi_1",) if cfg.truncation is not None else ())
        reports = convergence_reports(
            merged.features(X),
            embedded.image_prompt_ids,
            scores=names,
            t=cfg.truncation,
            resamples=cfg.bootstrap,
            level=level,
            seed=cfg.seed,
        )
        for name, report in reports.items():
            records += _convergence_records(name, report, result, sigma, cfg, name == "truncated_vendi_1")
    if cfg.truncation is not None:
        from t2ibench.metrics import truncated_vendi

        truncated = truncated_vendi(result.eigenvalues, tuple(result.vendi), cfg.truncation)
        band = reports["truncated_vendi_1"].points[-1] if "truncated_vendi_1" in reports else None
        for a, v in truncated.items():
            if a == 1.0 and band is not None:  # the convergence report's band at n: this score's interval
                base = dataclasses.replace(
                    _metric("fkea_truncated", a, v, result, sigma, cfg, None, ci_method, level),
                    ci_low=band.low,
                    ci_high=band.high,
                    ci_level=level,
                )
            else:
                why = ci_method if boot is None else "not computed: bootstrapped for α = 1 only (convergence report)"
                if boot is not None and a == 1.0:
                    why = "not computed: needs the convergence report (evaluators.diversity.convergence, ≥ 9 prompts)"
                base = _metric("fkea_truncated", a, v, result, sigma, cfg, None, why, None)
            key = {**json.loads(base.params_key), "t": cfg.truncation}
            records.append(
                dataclasses.replace(
                    base, params_key=json.dumps(key, sort_keys=True), details={**base.details, "t": cfg.truncation}
                )
            )
    order = np.random.default_rng(cfg.seed).permutation(len(X))
    for n in sorted({n for n in cfg.n_curve if 0 < n <= len(X)}):
        curve = _estimator(cfg, sigma, X).update(X[order[:n]]).compute([1.0])
        records.append(_metric("fkea_curve", 1.0, curve.vendi[1.0], curve, sigma, cfg))
    count = len(shards)
    parts = [X[s::count] for s in range(count) if len(X[s::count])]
    modes = kernel_modes(merged, parts, k=min(cfg.modes, len(X)), top=min(cfg.top, len(X)))
    # kernel_modes scored rows in shard order; map back to image positions
    positions = np.concatenate([np.arange(len(X))[s::count] for s in range(count)])
    return Scores(
        model=model, metrics=tuple(records), modes=tuple(_mode(m, positions, "fkea") for m in modes.modes), n=merged.n
    )


def step_scendi(ws: Workspace, model: str, embedded: Embedded) -> Scores:
    """Scendi of (image, prompt) CLIP pairs matched by prompt id, its decomposition and its modes."""
    from t2ibench.metrics.modes import scendi_modes
    from t2ibench.metrics.scendi import Scendi, gather_by_id

    cfg: ScendiConfig = ws.config.evaluators.scendi
    images = np.load(embedded.files.clip_image, allow_pickle=False)
    texts = np.load(embedded.files.clip_text, allow_pickle=False)
    image_ids = list(embedded.image_prompt_ids)
    paired = gather_by_id(image_ids, list(embedded.text_prompt_ids), texts)
    gaussian = cfg.kernel == "gaussian"
    image_sigma = resolve_sigma(cfg.image_sigma, images, cfg.seed) if gaussian else None
    text_sigma = resolve_sigma(cfg.text_sigma, texts, cfg.seed) if gaussian and len(texts) > 1 else 1.0

    def fit(rows: Any) -> Scendi:
        """Scendi of the pairs at ``rows`` (all of them: slice(None)), with this step's kernels and seed."""
        ids = [image_ids[i] for i in np.arange(len(image_ids))[rows]]
        sub = Scendi(
            kernel=cfg.kernel,
            image_sigma=image_sigma,
            text_sigma=text_sigma if gaussian else None,
            rff_dim=cfg.rff_dim,
            seed=cfg.seed,
        )
        return sub.update(images[rows], paired[rows], image_ids=ids, text_ids=ids)

    est = fit(slice(None))
    res = est.compute(epsilon=cfg.epsilon, inverse=cfg.inverse)
    params = {
        "kernel": cfg.kernel,
        "image_sigma": image_sigma,
        "text_sigma": text_sigma,
        "rff_dim": cfg.rff_dim,
        "epsilon": cfg.epsilon if cfg.inverse == "ridge" else None,
        "inverse": cfg.inverse,
        "seed": cfg.seed,
        "n": res.n,
    }
    # what C_TT⁻¹'s regularisation did on this data (shown next to every Scendi value; not part of the key)
    used = {"regularisation": res.regularisation, "pinv_kept": res.pinv_kept}
    records = tuple(
        MetricRecord(
            metric=metric,
            params_key=json.dumps(params, sort_keys=True),
            kernel=cfg.kernel,
            alpha=1.0,
            sigma=image_sigma,
            rff_dim=cfg.rff_dim if gaussian else None,
            n=res.n,
            seed=cfg.seed,
            value=float(value),
            error_bound=None,
            details={**params, **used},
            # each resample would refit the (4r)² joint image–text covariance and its Schur complement: at the
            # default r = 1000 that is B × Scendi's own cost (docs/performance.md), so no interval is computed
            ci_method="not computed: B refits of the joint image-text covariance (cost)",
        )
        for metric, value in (
            ("scendi", res.scendi),
            ("scendi_conditional_vendi", res.conditional_vendi),
            ("scendi_model_share", res.model_share),
            ("scendi_prompt_score", res.prompt_score),
            ("clip_image_vendi", res.image_vendi),
        )
    )
    # conditional and information VENDI-1 (Jalali et al. 2024) of the same pairs and kernels, beside Scendi:
    # VENDI_1(images) = cond · info, cond the prompt-aware diversity, info the prompt-driven part
    from t2ibench.metrics import conditional_vendi_features

    def conditional(rows: Any) -> Any:
        """Conditional and information VENDI-1 of the pairs at ``rows``, Scendi's kernels, σ's, rff_dim and seed."""
        return conditional_vendi_features(
            images[rows],
            paired[rows],
            kernel=cfg.kernel,
            image_sigma=image_sigma,
            text_sigma=text_sigma if gaussian else None,
            rff_dim=cfg.rff_dim if gaussian else None,
            seed=cfg.seed if gaussian else None,
            alphas=(1.0,),
        )

    if len(images) > 1:
        cv = conditional(slice(None))
        records += tuple(
            dataclasses.replace(
                records[0], metric=metric, value=float(value), ci_method="not computed: no bootstrap for it yet"
            )
            for metric, value in (("cond_vendi", cv.conditional[1.0]), ("info_vendi", cv.information[1.0]))
        )
    # Scendi and conditional/information VENDI refitted on the nested prompt subsets: their convergence reports
    prompts = len(set(image_ids))
    if cfg.convergence and prompts >= MIN_CONVERGENCE_PROMPTS and len(images) > 1:
        from t2ibench.metrics import convergence_of_values
        from t2ibench.metrics.convergence import DEFAULT_FRACTIONS, nested_subsets

        subsets = nested_subsets(image_ids, DEFAULT_FRACTIONS, seed=cfg.seed)
        values: dict[str, list[float]] = {"scendi": [], "cond_vendi": [], "info_vendi": []}
        for rows in subsets[:-1]:
            values["scendi"].append(float(fit(rows).compute(epsilon=cfg.epsilon, inverse=cfg.inverse).scendi))
            part = conditional(rows)
            values["cond_vendi"].append(float(part.conditional[1.0]))
            values["info_vendi"].append(float(part.information[1.0]))
        values["scendi"].append(float(res.scendi))
        values["cond_vendi"].append(float(cv.conditional[1.0]))
        values["info_vendi"].append(float(cv.information[1.0]))
        sizes = [(int(r.size), len({image_ids[i] for i in r})) for r in subsets]
        labels = {"scendi": "Scendi", "cond_vendi": "conditional VENDI-1", "info_vendi": "information VENDI-1"}
        div_cfg = dataclasses.replace(
            ws.config.evaluators.diversity, kernel=cfg.kernel, rff_dim=cfg.rff_dim, seed=cfg.seed
        )
        for name, vals in values.items():
            report = convergence_of_values(labels[name], DEFAULT_FRACTIONS, vals, sizes, seed=cfg.seed)
            records += tuple(_convergence_records(name, report, res, image_sigma, div_cfg, False))
    top = min(cfg.top, len(images))
    modes = scendi_modes(
        est, images, k=min(cfg.modes, len(images)), top=top, bottom=top, epsilon=cfg.epsilon, inverse=cfg.inverse
    )
    positions = np.arange(len(images))
    return Scores(
        model=model, metrics=records, modes=tuple(_mode(m, positions, "scendi") for m in modes.modes), n=res.n
    )


# -- store -----------------------------------------------------------------------------------------------------------


def step_store(
    ws: Workspace,
    run_id: str,
    model: ModelConfig,
    prompts: Prompts,
    generated: Generated,
    judged: Judged,
    diversity: Scores,
    scendi: Scores,
) -> Stored:
    """Write one model version's rows in one transaction (idempotent: an unchanged version is not rewritten)."""
    from t2ibench.geneval_eval import read_results
    from t2ibench.pipeline.rows import version_rows
    from t2ibench.store import Store

    results = read_results(judged.results)
    judged_keys = {(int(r.prompt_index or 0), int(r.sample)) for r in results}
    missing = [(i.prompt_index, i.sample) for i in generated.images if (i.prompt_index, i.sample) not in judged_keys]
    if missing:
        raise InputError(f"{model.name}: {len(missing)} images have no GenEval verdict (e.g. {missing[0]})")
    version = version_rows(
        model=model,
        model_hash=ws.model_hash(model.name),
        evaluator_hash=ws.evaluator_hash,
        suite=ws.suite_id,
        smoke=generated.smoke or ws.config.smoke_evaluators,
        prompts=prompts,
        generated=generated,
        results=results,
        judged_sha256=judged.sha256,
        scores=(diversity, scendi),
        evaluators=ws.config.evaluators,
    )
    unchanged = Store(ws.store).write_version(run_id, version)
    return Stored(
        model=model.name,
        unchanged=unchanged,
        model_hash=version.model_hash,
        evaluator_hash=version.evaluator_hash,
        images=len(generated.images),
        verdicts=len(version.verdicts),
        metrics=len(version.metrics),
    )
