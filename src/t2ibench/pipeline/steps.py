"""The benchmark's steps as plain functions (no Prefect): ``tasks/`` wraps each in a cached Prefect task.

Every step takes exactly the values it uses — config sections or fields, the typed results of the steps it depends
on, the paths it writes — and returns a typed result (``t2ibench.pipeline.results``). Its parameters' roles
(setting, content, output, placement: ``t2ibench.pipeline.identity``) are read off its signature, so its cache key,
the version names and the protocol record can never miss an input. A plain Python caller can chain them without any
orchestration (``t2ibench.pipeline.plan`` lays out the calls):

    prompts → generate → (embed, geneval → scores) → bandwidths → fkea shards → diversity, scendi → store
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from t2ibench.config import (
    DiversityConfig,
    EmbedderConfig,
    GeneratorConfig,
    ModelConfig,
    ScendiConfig,
)
from t2ibench.errors import InputError
from t2ibench.features import EmbeddingSpace, write_spaces
from t2ibench.hashing import file_digest
from t2ibench.pipeline.estimators import kernel_choice
from t2ibench.pipeline.identity import Device, Out, Progress, SharedCache
from t2ibench.pipeline.results import (
    Bandwidth,
    Embedded,
    EmbeddingFiles,
    Generated,
    ImageInfo,
    Judged,
    LocalFiles,
    PromptSet,
    ReferenceStamp,
    Scores,
    SelfTest,
    ShardState,
    Stored,
    TaskScores,
)
from t2ibench.pipeline.rows import (
    convergence_records,
    metric_record,
    mode_record,
    scendi_records,
    truncated_records,
    vendi_records,
)
from t2ibench.pipeline.stamps import check_stamp
from t2ibench.store import BenchmarkRows
from t2ibench.suites.reference import IMAGE_SET, TEXT_SET

Prompts = Sequence[tuple[int, Mapping[str, Any]]]
Features = Literal["image", "clip_image", "clip_text"]


@dataclass(frozen=True)
class FeatureKind:
    """One kind of feature file a refresh writes: what it holds, the config key that sets its σ (a median-heuristic
    error names both, so a one-prompt or constant text side is not mistaken for the images') and the reference set
    whose features set its bandwidth (``sigma: reference``)."""

    what: str
    sigma_key: str
    reference: str


FEATURES: Mapping[Features, FeatureKind] = {
    "image": FeatureKind("image embeddings", "evaluators.diversity.sigma", IMAGE_SET),
    "clip_image": FeatureKind("CLIP image embeddings", "evaluators.scendi.image_sigma", IMAGE_SET),
    "clip_text": FeatureKind("CLIP text embeddings of the prompts", "evaluators.scendi.text_sigma", TEXT_SET),
}


def select_prompts(suite: Any) -> PromptSet:
    """The refresh's prompts: the spine benchmark's (``benchmarks.SPINE``) selection ``suite`` as (index, record)
    pairs."""
    from t2ibench.benchmarks import SPINE, benchmark

    prompts: PromptSet = benchmark(SPINE).select_prompts(suite)
    return prompts


def step_generate(
    generator: GeneratorConfig,
    model: str,
    prompts: PromptSet,
    local: LocalFiles,
    out: Out,
    device: Device = "auto",
    show_progress: Progress = False,
) -> Generated:
    """Generate (or import, from ``local``: the folder backend's source) the model's images into ``out``; resumes
    what is already there."""
    from t2ibench.models.registry import GENERATORS

    check_stamp(local)
    source = Path(local.path) if local.path and generator.backend == "folder" else None
    built = GENERATORS.reuse(generator.backend, generator, device=device, show_progress=show_progress, source=source)
    records = built.generate(list(prompts), out)
    manifest = json.loads((out / "manifest.json").read_text())
    return Generated(
        model=model,
        folder=str(out),
        images=tuple(ImageInfo(r.prompt_index, r.sample, str(r.path), r.sha256, r.seed) for r in records),
        manifest=manifest,
    )


def prompt_shards(prompts: PromptSet, size: int) -> list[PromptSet]:
    """Consecutive shards of ``size`` prompts in suite order (``size`` 0, or ≥ the count: one shard)."""
    if size < 0:
        raise InputError(f"runtime.prompts_per_shard: must be ≥ 0; got {size}")
    if not size or size >= len(prompts):
        return [prompts]
    return [prompts.shard(i, i + size) for i in range(0, len(prompts), size)]


def shard_label(prompts: Prompts) -> str:
    """'p00012-p00023': the first and last prompt index of a shard (names its files and task runs)."""
    indices = [int(i) for i, _ in prompts]
    if not indices:
        raise InputError("a prompt shard is empty")
    return f"p{indices[0]:05d}-p{indices[-1]:05d}"


def merge_generated(shards: list[Generated]) -> Generated:
    """One model's images from its prompt shards, in shard order: exactly what one unsharded generation returns
    (the manifest is the folder's, read now); a shard of another model or folder, or an image twice, is refused."""
    if not shards:
        raise InputError("no generation shards to merge")
    first = shards[0]
    for part in shards[1:]:
        if (part.model, part.folder) != (first.model, first.folder):
            raise InputError(f"{first.model}: cannot merge shards of {part.model} ({part.folder}) into {first.folder}")
    images = tuple(i for part in shards for i in part.images)
    keys = [(i.prompt_index, i.sample) for i in images]
    if len(set(keys)) != len(keys):
        twice = next(k for k in keys if keys.count(k) > 1)
        raise InputError(f"{first.model}: prompt {twice[0]} sample {twice[1]} is in two generation shards")
    manifest_file = Path(first.folder) / "manifest.json"
    manifest = json.loads(manifest_file.read_text()) if manifest_file.is_file() else first.manifest
    return Generated(model=first.model, folder=first.folder, images=images, manifest=manifest)


# -- the evaluator self-test -------------------------------------------------------------------------------------


# -- embeddings ------------------------------------------------------------------------------------------------


def step_embed(
    image_embedder: EmbedderConfig,
    clip: EmbedderConfig,
    generated: Generated,
    prompts: PromptSet,
    weights: LocalFiles,
    out: Out,
    cache: SharedCache,
    device: Device = "auto",
    show_progress: Progress = False,
) -> Embedded:
    """Image features (image embedder), CLIP image and text features per image, into the folder ``out``; vectors
    are reused by content from the embedding ``cache``; ``weights`` stamps the embedders' local weights, if any."""
    from t2ibench.models.embedding import embed_images_cached, embed_texts_cached
    from t2ibench.models.registry import EMBEDDERS

    check_stamp(weights)
    files = EmbeddingFiles(
        image=str(out / "image_features.npy"),
        clip_image=str(out / "clip_image_features.npy"),
        clip_text=str(out / "clip_text_features.npy"),
    )
    out.mkdir(parents=True, exist_ok=True)
    records = prompts.by_index()
    paths = [Path(i.path) for i in generated.images]
    embedder = EMBEDDERS.reuse(image_embedder.backend, image_embedder, device=device, show_progress=show_progress)
    image_vectors, _ = embed_images_cached(embedder, paths, cache)
    pairs = EMBEDDERS.reuse(clip.backend, clip, device=device, show_progress=show_progress)
    clip_images, _ = embed_images_cached(pairs, paths, cache)
    prompt_ids = sorted({i.prompt_index for i in generated.images})
    clip_texts, truncated, _ = embed_texts_cached(pairs, [str(records[p]["prompt"]) for p in prompt_ids], cache)
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
    (out / "ids.json").write_text(json.dumps(ids) + "\n")
    sha256 = EmbeddingFiles(*(file_digest(p) for p in files.paths()))
    made_by: dict[Features, tuple[EmbedderConfig, Any]] = {
        "image": (image_embedder, embedder),
        "clip_image": (clip, pairs),
        "clip_text": (clip, pairs),
    }
    write_spaces(  # what each file is: its embedder and the reference set of its space's bandwidth
        out,
        [
            EmbeddingSpace(
                file=Path(getattr(files, which)).name,
                sha256=getattr(sha256, which),
                embedder=spec,
                identity=built.identity(),
                reference=FEATURES[which].reference,
            )
            for which, (spec, built) in made_by.items()
        ],
    )
    return Embedded(
        model=generated.model,
        files=files,
        sha256=sha256,
        image_prompt_ids=tuple(ids["image_prompt_ids"]),
        samples=tuple(ids["samples"]),
        text_prompt_ids=tuple(prompt_ids),
        truncated_prompts=tuple(prompt_ids[i] for i in truncated),
    )


def load_features(embedded: Embedded, which: Features) -> np.ndarray:
    """One of a model's feature matrices (n, d), refused when the file changed since it was embedded."""
    path = getattr(embedded.files, which)
    if not Path(path).is_file() or file_digest(path) != getattr(embedded.sha256, which):
        raise InputError(f"{path}: the feature file is missing or changed since it was embedded; run the refresh again")
    array: np.ndarray = np.load(path, allow_pickle=False)
    return array


# -- bandwidths ------------------------------------------------------------------------------------------------------


def step_reference_bandwidth(
    embedder: EmbedderConfig,
    reference: ReferenceStamp,
    weights: LocalFiles,
    device: Device = "auto",
    show_progress: Progress = False,
) -> Bandwidth:
    """σ of an embedding space: the median pairwise distance (embedding units) of the embedder's features of the
    fixed, named ``reference`` set (``t2ibench.suites.reference``: photos for images, GenEval's official prompts for
    texts). The same for every model, run and leaderboard that uses this embedder; ``weights`` stamps its local
    weights, if any (weights replaced in place make the σ anew)."""
    from t2ibench.models.embedding import reference_sigma
    from t2ibench.models.registry import EMBEDDERS
    from t2ibench.suites.reference import load_reference, reference_source

    ref = load_reference(reference.name)
    if ref.digest != reference.content:
        raise InputError(f"reference set {reference.name}: its files changed while this refresh ran; run it again")
    check_stamp(weights)
    built = EMBEDDERS.reuse(embedder.backend, embedder, device=device, show_progress=show_progress)
    value, n = reference_sigma(built, ref)
    return Bandwidth(value=value, source=reference_source(ref), n=n)


def step_median_bandwidth(embedded: Embedded, features: Features, seed: int) -> Bandwidth:
    """σ as this model's own median pairwise distance of ``features`` (a seeded subsample above 2,000 rows): its
    scores are not comparable with another model's (each is measured under its own kernel)."""
    from t2ibench.metrics import median_heuristic_sigma

    X = load_features(embedded, features)
    what, key = FEATURES[features].what, FEATURES[features].sigma_key
    name = f"{embedded.model}: the {what} ({getattr(embedded.files, features)})"
    value = median_heuristic_sigma(X, seed=seed, name=name, option=f"{key} (a number or 'reference')")
    return Bandwidth(value=float(value), source=f"median:{embedded.model}", n=len(X))


def check_bandwidth(setting: float | str, bandwidth: Bandwidth | None, *, what: str) -> float | None:
    """σ's value (None without one), checked against the rule the config section asks for (a number: that value;
    'reference' or 'median': a σ of that kind) — a plan that wired another bandwidth is an error, not a number."""
    if bandwidth is None:
        return None
    if isinstance(setting, str):
        ok = bandwidth.kind == setting
    else:
        ok = bandwidth.kind == "fixed" and bandwidth.value == float(setting)
    if not ok:
        raise InputError(
            f"{what}: configured as {setting!r}, given a bandwidth of {bandwidth.source} ({bandwidth.value:g})"
        )
    return bandwidth.value


# -- diversity -----------------------------------------------------------------------------------------------------


def step_fkea_shard(
    embedded: Embedded,
    shard: int,
    shards: int,
    kernel: str,
    sigma: Bandwidth | None,
    rff_dim: int,
    seed: int,
    orthogonal: bool,
    out: Out,
) -> ShardState:
    """FKEA (Gaussian kernel of bandwidth ``sigma``; or the exact cosine) state of one shard (rows
    shard::shards) of the image features, saved to ``out``: additive, merged by ``step_diversity``."""
    X = load_features(embedded, "image")
    rows = X[shard::shards]
    value = None if sigma is None else sigma.value
    est = kernel_choice(kernel).build(sigma=value, rff_dim=rff_dim, seed=seed, orthogonal=orthogonal, X=X)
    if not len(rows):
        return ShardState(shard=shard, shards=shards, n=0, state=None)
    est.update(rows)
    out.parent.mkdir(parents=True, exist_ok=True)
    est.save(out)
    return ShardState(shard=shard, shards=shards, n=est.n, state=str(out), sha256=file_digest(out))


MIN_CONVERGENCE_PROMPTS = 9  # the n/8 subset needs ≥ 2 prompts to bootstrap over


def _load_state(cls: Any, state: ShardState) -> Any:
    """A shard's saved state, refused when its file changed since the shard was computed."""
    assert state.state is not None
    if not Path(state.state).is_file() or file_digest(state.state) != state.sha256:
        raise InputError(f"{state.state}: this FKEA shard state is missing or changed since it was computed")
    return cls.load(state.state)


def step_diversity(
    embedded: Embedded,
    shards: list[ShardState],
    sigma: Bandwidth | None,
    diversity: DiversityConfig,
    ci_level: float,
) -> Scores:
    """Merge shard states into the model's FKEA scores (with cluster-bootstrap intervals over prompts at
    ``ci_level`` where n ≤ ``bootstrap_max_n``), the diversity-vs-n curve and the FKEA modes."""
    from t2ibench.metrics import bootstrap_entropy
    from t2ibench.metrics.modes import kernel_modes

    cfg = diversity
    model = embedded.model
    choice = kernel_choice(cfg.kernel)
    check_bandwidth(cfg.sigma, sigma if choice.bandwidth else None, what="evaluators.diversity.sigma")
    if len(shards) != cfg.shards:
        raise InputError(f"{model}: {len(shards)} FKEA shard states given, evaluators.diversity.shards is {cfg.shards}")
    merged = None
    for s in shards:
        if s.state:
            state = _load_state(choice.estimator, s)
            merged = state if merged is None else merged.merge(state)
    if merged is None:
        raise InputError(f"{model}: no images to measure")
    result = merged.compute(cfg.alphas)
    X = load_features(embedded, "image")
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
            level=ci_level,
            seed=cfg.seed,
        )
        ci_method = boot.describe()
    level = ci_level
    records = vendi_records(choice.metric, result, boot, sigma, cfg, ci_method, level)
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
        for score, report in reports.items():
            records += convergence_records(
                score,
                report,
                sigma,
                kernel=cfg.kernel,
                rff_dim=cfg.rff_dim,
                seed=cfg.seed,
                truncation=cfg.truncation if score == "truncated_vendi_1" else None,
            )
    if cfg.truncation is not None:
        from t2ibench.metrics import truncated_vendi

        truncated = truncated_vendi(result.eigenvalues, tuple(result.vendi), cfg.truncation)
        band = reports["truncated_vendi_1"].points[-1] if "truncated_vendi_1" in reports else None
        records += truncated_records(
            truncated, band, result, sigma, cfg, bootstrapped=boot is not None, ci_method=ci_method, level=level
        )
    order = np.random.default_rng(cfg.seed).permutation(len(X))
    value = None if sigma is None else sigma.value
    for n in sorted({n for n in cfg.n_curve if 0 < n <= len(X)}):
        curve = choice.build(sigma=value, rff_dim=cfg.rff_dim, seed=cfg.seed, orthogonal=cfg.orthogonal, X=X)
        at_n = curve.update(X[order[:n]]).compute([1.0])
        records.append(metric_record("fkea_curve", 1.0, at_n.vendi[1.0], at_n, sigma, cfg))
    count = len(shards)
    parts = [X[s::count] for s in range(count) if len(X[s::count])]
    modes = kernel_modes(merged, parts, k=min(cfg.modes, len(X)), top=min(cfg.top, len(X)))
    # kernel_modes scored rows in shard order; map back to image positions
    positions = np.concatenate([np.arange(len(X))[s::count] for s in range(count)])
    return Scores(
        model=model,
        metrics=tuple(records),
        modes=tuple(mode_record(m, positions, "fkea") for m in modes.modes),
        n=merged.n,
    )


def step_scendi(
    embedded: Embedded, scendi: ScendiConfig, image_sigma: Bandwidth | None, text_sigma: Bandwidth | None
) -> Scores:
    """Scendi of (image, prompt) CLIP pairs matched by prompt id (Gaussian kernels of bandwidths ``image_sigma`` and
    ``text_sigma``, or the cosine kernel), its decomposition, conditional/information VENDI and its modes."""
    from t2ibench.metrics import conditional_vendi_features
    from t2ibench.metrics.modes import scendi_modes
    from t2ibench.metrics.scendi import Scendi, gather_by_id

    cfg = scendi
    model = embedded.model
    images = load_features(embedded, "clip_image")
    texts = load_features(embedded, "clip_text")
    image_ids = list(embedded.image_prompt_ids)
    paired = gather_by_id(image_ids, list(embedded.text_prompt_ids), texts)
    choice = kernel_choice(cfg.kernel)
    if choice.bandwidth and (image_sigma is None or text_sigma is None):
        raise InputError(f"scendi: the {cfg.kernel} kernel needs an image and a text bandwidth")
    image_bw, text_bw = (image_sigma, text_sigma) if choice.bandwidth else (None, None)
    i_sigma = check_bandwidth(cfg.image_sigma, image_bw, what="evaluators.scendi.image_sigma")
    t_sigma = check_bandwidth(cfg.text_sigma, text_bw, what="evaluators.scendi.text_sigma")

    def fit(rows: Any) -> Scendi:
        """Scendi of the pairs at ``rows`` (all of them: slice(None)), with this step's kernels and seed."""
        ids = [image_ids[i] for i in np.arange(len(image_ids))[rows]]
        sub = Scendi(kernel=cfg.kernel, image_sigma=i_sigma, text_sigma=t_sigma, rff_dim=cfg.rff_dim, seed=cfg.seed)
        return sub.update(images[rows], paired[rows], image_ids=ids, text_ids=ids)

    def conditional(rows: Any) -> Any:
        """Conditional and information VENDI-1 (Jalali et al. 2024) of the pairs at ``rows``, Scendi's kernels."""
        return conditional_vendi_features(
            images[rows],
            paired[rows],
            kernel=cfg.kernel,
            image_sigma=i_sigma,
            text_sigma=t_sigma,
            rff_dim=choice.rff_dim(cfg.rff_dim),
            seed=cfg.seed if choice.bandwidth else None,
            alphas=(1.0,),
        )

    est = fit(slice(None))
    res = est.compute(epsilon=cfg.epsilon, inverse=cfg.inverse)
    cv = conditional(slice(None)) if len(images) > 1 else None
    records = scendi_records(res, cv, cfg, image_sigma=image_bw, text_sigma=text_bw)
    # Scendi and conditional/information VENDI refitted on the nested prompt subsets: their convergence reports
    prompts = len(set(image_ids))
    if cfg.convergence and prompts >= MIN_CONVERGENCE_PROMPTS and cv is not None:
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
        for score, vals in values.items():
            report = convergence_of_values(labels[score], DEFAULT_FRACTIONS, vals, sizes, seed=cfg.seed)
            records += tuple(
                convergence_records(
                    score, report, image_bw, kernel=cfg.kernel, rff_dim=cfg.rff_dim, seed=cfg.seed, truncation=None
                )
            )
    top = min(cfg.top, len(images))
    modes = scendi_modes(
        est, images, k=min(cfg.modes, len(images)), top=top, bottom=top, epsilon=cfg.epsilon, inverse=cfg.inverse
    )
    positions = np.arange(len(images))
    return Scores(
        model=model, metrics=records, modes=tuple(mode_record(m, positions, "scendi") for m in modes.modes), n=res.n
    )


# -- store -----------------------------------------------------------------------------------------------------------


def step_store(
    store: Path,
    run_id: str,
    model: ModelConfig,
    suite: str,
    model_hash: str,
    evaluator_hash: str,
    protocol: dict[str, Any],
    lite: list[str],
    smoke_evaluators: bool,
    prompts: PromptSet,
    generated: Generated,
    judged: Judged,
    scores: TaskScores,
    diversity: Scores,
    scendi: Scores,
    benchmarks: Sequence[BenchmarkRows] = (),
    selftest: SelfTest | None = None,
) -> Stored:
    """Write one model version's rows into ``store`` in one transaction (idempotent: an unchanged version is not
    rewritten); ``protocol`` is the evaluator settings by step, as the evaluator hash was derived from them, and
    ``lite`` names the offline stand-ins among the evaluators (empty for the reference ones). ``benchmarks``: the
    rows of every other benchmark the model ran (each under its own evaluation hash, made by its ``<name>-rows``
    step), written in the same transaction and linked to ``run_id``; with ``selftest``, the spine evaluator's
    self-test is stored (once per content) and linked to ``run_id`` and the model."""
    from t2ibench.benchmarks import SPINE, benchmark
    from t2ibench.pipeline.rows import selftest_rows, version_rows
    from t2ibench.store import Store

    spine = benchmark(SPINE).spine_rows(judged, scores, generated, suite=suite, model=model.name)
    version = version_rows(
        model=model,
        model_hash=model_hash,
        evaluator_hash=evaluator_hash,
        suite=suite,
        smoke=generated.smoke or smoke_evaluators,
        prompts=list(prompts),
        generated=generated,
        spine=spine,
        scores=(diversity, scendi),
        protocol=protocol,
        lite=lite,
        benchmarks=benchmarks,
        selftest=None if selftest is None else selftest_rows(selftest),
    )
    unchanged = Store(store).write_version(run_id, version)
    return Stored(
        model=model.name,
        unchanged=unchanged,
        model_hash=version.model_hash,
        evaluator_hash=version.evaluator_hash,
        images=len(generated.images),
        verdicts=spine.judged,
        metrics=len(version.metrics),
        answers=sum(len(b.answers) for b in benchmarks),
    )
