"""Diversity workflows on embedding files: what ``t2ibench diversity FILE`` does, callable from Python.

* ``diversity_of_file``: VENDI_α/RKE of one (n, d) file — exact and/or FKEA (Gaussian kernel), or exact at any n
  for the cosine kernel — streamed batch by batch, with optional modes. σ by default is the leaderboard's: the
  reference bandwidth of the file's embedding space where the file names one (a refresh's feature files do:
  ``t2ibench.features``), computed as the refresh computes it; otherwise the file's own median pairwise distance,
  said to be not comparable with a leaderboard. FKEA accumulates as the refresh does (the rows in ``shards``
  interleaved shards of ``batch_size``-row batches, centred on the mean row), with the refresh's defaults
  (``DiversityConfig``), so on a refresh's features the one-call numbers are the leaderboard's, bit for bit.
* ``diversity_of_pairs``: Scendi of image embeddings paired by id with prompt embeddings, with optional modes.

Both return results (``t2ibench.metrics`` objects) and a sentence saying where σ came from; rendering them is
``t2ibench.report.diversity``'s job.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from t2ibench.config import DiversityConfig, Runtime, ScendiConfig
from t2ibench.errors import InputError
from t2ibench.features import EmbeddingSpace, space_of
from t2ibench.io import EmbeddingFile, EmbeddingTable, load_embedding_table, open_embeddings
from t2ibench.metrics import (
    FKEA,
    CosineEntropy,
    EntropyResult,
    ModeSet,
    Scendi,
    ScendiResult,
    StreamingKernelEntropy,
    choose_method,
    exact_entropy,
    gather_by_id,
    kernel_modes,
    median_heuristic_sigma,
    scendi_modes,
)
from t2ibench.metrics.checks import DiversityMethod, KernelName, ScendiInverse, check_sigma, parse_alpha
from t2ibench.metrics.entropy import CENTER_BLOCK, DEFAULT_BATCH, mean_of_blocks
from t2ibench.progress import progress

SIGMA_SAMPLE = 2000  # rows the median heuristic looks at

# σ rules, spelled as in a config's ``sigma:`` (``t2ibench.config.BANDWIDTH_RULES``): ``median``, each file's own
# median pairwise distance (the median heuristic); ``reference``, the reference bandwidth of the file's embedding
# space (the leaderboard's σ), which only a file that names its embedding space has
Median = Literal["median"]
MEDIAN: Median = "median"
Reference = Literal["reference"]
REFERENCE: Reference = "reference"
SigmaRule = float | Median | Reference | None  # None: the file's reference σ where it names its space, else median


@dataclass(frozen=True)
class Sigma:
    """The Gaussian bandwidth a file was measured under (embedding units), where it comes from — 'fixed' (given),
    'reference:<set>@<digest>' (the leaderboard's σ of the file's embedding space) or 'median:<file>' (the file's
    own: comparable with nothing else) — and a sentence saying so."""

    value: float
    source: str
    sentence: str

    @property
    def comparable(self) -> bool:
        """False for a file's own median: numbers under it are not comparable with a leaderboard's or another's."""
        return not self.source.startswith("median:")

    def to_dict(self) -> dict[str, Any]:
        """value, source, whether comparable with a leaderboard, and the sentence."""
        return {"value": self.value, "source": self.source, "comparable": self.comparable, "note": self.sentence}


@dataclass(frozen=True)
class FileDiversity:
    """Scores of one embedding file: results (exact and/or FKEA, or cosine), what σ is, the settings that identify
    the numbers, and the modes if asked."""

    path: Path
    n: int
    dim: int
    results: tuple[EntropyResult, ...]
    note: str
    modes: ModeSet | None = None
    table: EmbeddingTable | None = None  # the .npz's ids/paths/texts (for labels and galleries)
    truncation: int | None = None  # t of the truncated scores (None: not asked for)
    truncated: tuple[dict[float, float], ...] = ()  # truncated VENDI_α of each result's spectrum
    sigma: Sigma | None = None  # None: the cosine kernel has no bandwidth
    settings: dict[str, Any] = field(default_factory=dict)  # what identifies the numbers beside σ


@dataclass(frozen=True)
class PairsDiversity:
    """Scendi of (image, prompt) pairs, what σ is per modality, and the image and Scendi modes if asked."""

    images: EmbeddingTable
    prompts: EmbeddingTable
    result: ScendiResult
    note: str
    image_modes: ModeSet | None = None
    scendi_modes: ModeSet | None = None


def _no_bandwidth(**given: SigmaRule) -> None:
    """Refuse a σ given with the cosine kernel, which has none (it would be silently ignored)."""
    for name, value in given.items():
        if value is not None and value != MEDIAN:
            raise InputError(f"{name}={value!r}: the cosine kernel has no bandwidth (σ applies to kernel 'gaussian')")


def _median_sentence(value: float, seed: int, what: str) -> str:
    return (
        f"{what} σ = {value:.6g} (sigma: median — the median heuristic, the median pairwise distance of "
        f"≤ {SIGMA_SAMPLE} rows, seed {seed})."
    )


def sigma_note(
    sigma: float | Median, rows: Any, seed: int, what: str, *, source: str | Path, option: str
) -> tuple[float, str]:
    """σ as given (embedding units), or for ``"median"`` the median heuristic on ``rows``, with a sentence saying
    which; an error names the ``what`` embeddings of file ``source`` and the ``option`` that sets this σ."""
    if sigma == MEDIAN:
        value = median_heuristic_sigma(rows, seed=seed, name=f"{source} ({what} embeddings)", option=option)
        return value, _median_sentence(value, seed, what)
    try:  # a rule only a config or a refresh's file knows ('reference'), or a misspelling, is not a number either
        value = check_sigma(sigma)
    except InputError as exc:
        raise InputError(f"{option}: {what} {exc} (or {MEDIAN!r}: the median heuristic)") from None
    return value, f"{what} σ = {value:.6g} (given)."


def reference_bandwidth(space: EmbeddingSpace, *, device: str, show_progress: bool) -> tuple[float, str, str]:
    """The leaderboard's σ of an embedding space (embedding units), its source and a sentence: the space's embedder
    built through the ``EMBEDDERS`` registry and checked against the identity recorded, its features of the space's
    reference set, their median pairwise distance — what the refresh's ``reference-bandwidth`` step computes
    (``models.embedding.reference_sigma``). InputError saying why when it cannot be computed here."""
    try:
        from t2ibench.hashing import content_hash
        from t2ibench.models.embedding import reference_sigma
        from t2ibench.models.registry import EMBEDDERS
        from t2ibench.suites.reference import load_reference, reference_source

        built = EMBEDDERS.build(space.embedder.backend, space.embedder, device=device, show_progress=show_progress)
        identity = built.identity()
        if content_hash(identity) != content_hash(dict(space.identity)):
            differ = sorted(k for k in {*identity, *space.identity} if identity.get(k) != space.identity.get(k))
            raise InputError(
                f"the embedder {space.describe()} here is not the one that made {space.file} (its identity differs "
                f"in {', '.join(differ) or 'its values'})"
            )
        ref = load_reference(space.reference)
        value, n = reference_sigma(built, ref)
    except ImportError as exc:  # the models extra is not installed
        raise InputError(f"building the embedder {space.describe()} needs the 'models' extra ({exc})") from None
    except OSError as exc:
        raise InputError(f"cannot build the embedder {space.describe()} ({exc})") from None
    sentence = (
        f"σ = {value:.6g} (sigma: reference — the leaderboard's σ of this file's embedding space: the median pairwise "
        f"distance of {space.describe()}'s features of the reference set {ref.name}, {n} {ref.kind}s, computed "
        f"here (device {device}))."
    )
    return value, reference_source(ref), sentence


def file_sigma(source: EmbeddingFile, sigma: SigmaRule, *, seed: int, device: str, show_progress: bool) -> Sigma:
    """The Gaussian σ of a file for the rule ``sigma`` (see ``SigmaRule``), its source and a sentence. The default
    (None) takes the reference σ of the embedding space the file names (``t2ibench.features``: a broken record is an
    InputError) and falls back to the file's median where it names none or the σ cannot be computed here, saying
    why and that the numbers are not comparable with a leaderboard's."""
    if sigma is not None and sigma not in (MEDIAN, REFERENCE):
        value = check_sigma(sigma)
        return Sigma(value, "fixed", f"Gaussian σ = {value:.6g} (given).")
    why = ""
    if sigma != MEDIAN:
        found = space_of(source.path)
        try:
            if found.space is None:
                raise InputError(f"{source.path}: {found.why}")
            value, where, sentence = reference_bandwidth(found.space, device=device, show_progress=show_progress)
            return Sigma(value, where, "Gaussian " + sentence)
        except InputError as exc:
            if sigma == REFERENCE:
                raise InputError(f"--sigma reference: {exc}") from None
            why = f" The leaderboard's σ of its embedding space is not known here: {exc}."
    rng = np.random.default_rng(seed)
    sample = source.rows(rng.choice(source.n, size=min(source.n, SIGMA_SAMPLE), replace=False))
    value = median_heuristic_sigma(sample, seed=seed, name=f"{source.path} (Gaussian embeddings)", option="--sigma")
    sentence = (
        _median_sentence(value, seed, "Gaussian")
        + why
        + " Its numbers are not comparable with a leaderboard's or another file's (each is measured under its own"
        " kernel)."
    )
    return Sigma(value, f"median:{source.path.name}", sentence)


def _settings_sentence(settings: dict[str, Any]) -> str:
    """The FKEA settings in words, and the ones a refresh with the default ``evaluators.diversity`` would differ in."""
    differ = {
        key: settings[key]
        for key in ("rff_dim", "seed", "shards", "orthogonal")
        if settings[key] != getattr(DiversityConfig, key)
    }
    batch = settings["batch_size"]
    words = (
        f"FKEA: r = {settings['rff_dim']}, seed {settings['seed']}, "
        f"{'orthogonal' if settings['orthogonal'] else 'plain'} random features, the rows in {settings['shards']} "
        f"interleaved shard{'s' if settings['shards'] != 1 else ''} of {batch}-row batches, centred on the mean row"
    )
    if batch != DEFAULT_BATCH:
        words += f"; a refresh uses {DEFAULT_BATCH}-row batches: the last digits differ"
    if differ:
        section = ", ".join(f"{k}: {str(v).lower() if isinstance(v, bool) else v}" for k, v in differ.items())
        return f"{words} — as a refresh whose evaluators.diversity sets {section} measures them."
    return f"{words} — as a refresh with the default evaluators.diversity measures them."


def diversity_of_file(
    path: str | Path,
    *,
    kernel: KernelName = DiversityConfig.kernel,
    sigma: SigmaRule = None,
    method: DiversityMethod = "auto",
    rff_dim: int = DiversityConfig.rff_dim,
    alphas: Sequence[float | str] = DiversityConfig.alphas,
    seed: int = DiversityConfig.seed,
    shards: int = DiversityConfig.shards,
    orthogonal: bool = DiversityConfig.orthogonal,
    batch_size: int = DEFAULT_BATCH,
    delta: float = 0.05,
    modes: int | None = None,
    top: int = 16,
    show_progress: bool = True,
    truncation: int | None = None,
    device: str = Runtime.device,
) -> FileDiversity:
    """VENDI_α and RKE of an (n, d) .npy (streamed) or .npz file; ``sigma`` a number, ``"median"``,
    ``"reference"`` or None (the file's embedding space's reference σ where it names one, else its median);
    ``method`` auto = FKEA for a file in a named embedding space (the refresh's estimator), else exact when the
    cost model says it is no slower than FKEA (or under a second), else FKEA (``metrics.choose_method``; the note
    says why); FKEA accumulates in ``shards`` interleaved shards as the refresh does (``device``: where the
    reference σ's embedder runs)."""
    source = open_embeddings(path)
    note = f"{source.path} — n = {source.n}, d = {source.dim}."
    make: Callable[[], StreamingKernelEntropy] | None = None  # an empty estimator for one shard
    results: list[EntropyResult] = []
    chosen: str = method
    found_sigma: Sigma | None = None
    settings: dict[str, Any] = {"kernel": kernel, "alphas": [_alpha_json(a) for a in alphas]}
    if kernel == "cosine":
        _no_bandwidth(sigma=sigma)
        make = functools.partial(CosineEntropy, dim=source.dim, batch_size=batch_size)
        settings |= {"method": "exact", "shards": shards, "batch_size": batch_size}
    else:
        found_sigma = file_sigma(source, sigma, seed=seed, device=device, show_progress=show_progress)
        value = found_sigma.value
        note += " " + found_sigma.sentence
        if method == "auto" and found_sigma.source.startswith("reference:"):
            chosen = "fkea"
            note += (
                " Method auto → fkea: the refresh's estimator, as the leaderboard measured these features "
                "(--method exact for the exact kernel)."
            )
        elif method == "auto":
            choice = choose_method(source.n, source.dim, rff_dim=rff_dim)
            chosen = choice.method
            note += f" Method auto → {choice.method}: {choice.reason}."
        settings["method"] = chosen
        if chosen in ("exact", "both"):
            results.append(exact_entropy(source.load(), sigma=value, alphas=alphas))
        if chosen in ("fkea", "both") or modes:
            center = mean_of_blocks(b for _, b in source.batches(CENTER_BLOCK))  # the refresh's centre, same bits
            make = functools.partial(
                FKEA,
                sigma=value,
                rff_dim=rff_dim,
                seed=seed,
                dim=source.dim,
                batch_size=batch_size,
                center=center,
                orthogonal=orthogonal,
            )
            settings |= {
                "rff_dim": rff_dim,
                "seed": seed,
                "shards": shards,
                "orthogonal": orthogonal,
                "batch_size": batch_size,
            }
            note += " " + _settings_sentence(settings)
    merged: StreamingKernelEntropy | None = None
    if make is not None:
        merged = _accumulate(source, make, shards, batch_size, show_progress)
        if kernel == "cosine" or chosen != "exact":
            results.append(merged.compute(alphas, delta=delta))
    found = None
    table = load_embedding_table(source.path) if source.path.suffix == ".npz" else None
    if modes:
        assert merged is not None
        found = kernel_modes(merged, (b for _, b in source.batches(batch_size)), k=modes, top=top)
    truncated: tuple[dict[float, float], ...] = ()
    if truncation is not None:
        from t2ibench.metrics import truncated_vendi

        truncated = tuple(truncated_vendi(r.eigenvalues, tuple(r.vendi), truncation) for r in results)
    return FileDiversity(
        source.path,
        source.n,
        source.dim,
        tuple(results),
        note,
        found,
        table,
        truncation,
        truncated,
        found_sigma,
        settings,
    )


def _accumulate(
    source: EmbeddingFile, make: Callable[[], StreamingKernelEntropy], shards: int, batch_size: int, show_progress: bool
) -> StreamingKernelEntropy:
    """The file's rows added to ``shards`` estimators (``make``) as the refresh's FKEA shards take them — shard s the
    rows s, s + k, s + 2k, … in ``batch_size``-row batches — merged in shard order: one shard at a time (two
    states in memory), each reading the file in blocks of k × ``batch_size`` rows (each block starts at a multiple
    of k, so block[s::k] is exactly shard s's next batch)."""
    merged: StreamingKernelEntropy | None = None
    with progress(source.n, "embeddings", enabled=show_progress, unit="row") as bar:  # closed before an interruption
        for s in range(shards):
            est = make()
            for _start, block in source.batches(shards * batch_size):
                rows = block[s::shards]
                if len(rows):
                    est.update(rows)
                    bar.update(len(rows))
            if merged is None:
                merged = est
            elif est.n:
                merged.merge(est)
    assert merged is not None
    return merged


def _alpha_json(alpha: float | str) -> float | str:
    """An order as JSON writes it: ∞ as the string 'inf'."""
    value = parse_alpha(alpha)
    return "inf" if value == float("inf") else value


def diversity_of_pairs(
    images: str | Path,
    prompts: str | Path,
    *,
    kernel: KernelName = "gaussian",
    image_sigma: float | Median = MEDIAN,
    text_sigma: float | Median = MEDIAN,
    rff_dim: int = 1000,
    epsilon: float = 1e-6,
    seed: int = 0,
    modes: int | None = None,
    top: int = 16,
    inverse: ScendiInverse = ScendiConfig.inverse,
) -> PairsDiversity:
    """Scendi of image embeddings (.npz with 'ids': each image's prompt id) paired by id with prompt embeddings."""
    image_table = load_embedding_table(images)
    prompt_table = load_embedding_table(prompts)
    image_ids = image_table.require("ids", "--prompts (each image's prompt id)")
    prompt_ids = prompt_table.require("ids", "--prompts (one id per prompt)")
    texts = gather_by_id(image_ids, prompt_ids, prompt_table.embeddings)
    note = (
        f"{image_table.path}: n = {len(image_ids)} images paired by id with {len(prompt_ids)} prompts of "
        f"{prompt_table.path}."
    )
    image_value: float | None = None  # the σ's the estimators get (None: the cosine kernel has none)
    text_value: float | None = None
    if kernel == "cosine":
        _no_bandwidth(sigma=image_sigma, text_sigma=text_sigma)
    if kernel == "gaussian":
        # each side's σ error names its file and the option that sets it (t2ibench diversity IMAGES --prompts TEXTS)
        image_value, s1 = sigma_note(
            image_sigma, image_table.embeddings, seed, "image", source=image_table.path, option="--sigma"
        )
        text_value, s2 = sigma_note(
            text_sigma, prompt_table.embeddings, seed, "text", source=prompt_table.path, option="--text-sigma"
        )
        note += f" {s1} {s2}"
    est = Scendi(kernel=kernel, image_sigma=image_value, text_sigma=text_value, rff_dim=rff_dim, seed=seed)
    est.update(image_table.embeddings, texts, image_ids=image_ids, text_ids=image_ids)
    result = est.compute(epsilon=epsilon, inverse=inverse)
    if not modes:
        return PairsDiversity(image_table, prompt_table, result, note)
    if image_value is not None:
        plain: Any = FKEA(sigma=image_value, rff_dim=rff_dim, seed=seed).update(image_table.embeddings)
    else:
        plain = CosineEntropy().update(image_table.embeddings)
    return PairsDiversity(
        image_table,
        prompt_table,
        result,
        note,
        image_modes=kernel_modes(plain, image_table.embeddings, k=modes, top=top),
        scendi_modes=scendi_modes(
            est, image_table.embeddings, k=modes, top=top, bottom=top, epsilon=epsilon, inverse=inverse
        ),
    )


def labels(table: EmbeddingTable | None) -> list[str] | None:
    """Per-row labels for mode tables: image file names, else (shortened) texts, else None (row numbers)."""
    if table is None:
        return None
    if table.paths is not None:
        return [Path(p).name for p in table.paths]
    if table.texts is not None:
        return [t if len(t) <= 40 else t[:37] + "..." for t in table.texts]
    return None


def gallery_samples(table: EmbeddingTable | None, path: Path) -> Sequence[str]:
    """What a gallery shows per row: image paths, else texts; InputError if the file has neither."""
    if table is not None and table.paths is not None:
        return list(table.paths)
    if table is not None and table.texts is not None:
        return list(table.texts)
    raise InputError(f"{path}: --gallery needs a 'paths' (images) or 'texts' array in an .npz beside 'embeddings'")
