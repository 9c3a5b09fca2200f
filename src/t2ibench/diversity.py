"""Diversity workflows on embedding files: what ``t2ibench diversity FILE`` does, callable from Python.

* ``diversity_of_file``: VENDI_α/RKE of one (n, d) file — exact and/or FKEA (Gaussian kernel, σ a number or
  ``"median"``: the median heuristic), or exact at any n for the cosine kernel — streamed batch by batch, with
  optional modes.
* ``diversity_of_pairs``: Scendi of image embeddings paired by id with prompt embeddings, with optional modes.

Both return results (``t2ibench.metrics`` objects) and a sentence saying where σ came from; rendering them is
``t2ibench.report.diversity``'s job.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from t2ibench.errors import InputError
from t2ibench.io import EmbeddingTable, load_embedding_table, open_embeddings
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
from t2ibench.metrics.checks import check_sigma
from t2ibench.progress import progress

SIGMA_SAMPLE = 2000  # rows the median heuristic looks at

# σ as each file's own median pairwise distance (the median heuristic): spelled as in a config's ``sigma: median``
# (``t2ibench.config.BANDWIDTH_RULES``); on a file there is no embedder, so no ``reference`` set to take σ from
Median = Literal["median"]
MEDIAN: Median = "median"


@dataclass(frozen=True)
class FileDiversity:
    """Scores of one embedding file: results (exact and/or FKEA, or cosine), what σ is, and the modes if asked."""

    path: Path
    n: int
    dim: int
    results: tuple[EntropyResult, ...]
    note: str
    modes: ModeSet | None = None
    table: EmbeddingTable | None = None  # the .npz's ids/paths/texts (for labels and galleries)
    truncation: int | None = None  # t of the truncated scores (None: not asked for)
    truncated: tuple[dict[float, float], ...] = ()  # truncated VENDI_α of each result's spectrum


@dataclass(frozen=True)
class PairsDiversity:
    """Scendi of (image, prompt) pairs, what σ is per modality, and the image and Scendi modes if asked."""

    images: EmbeddingTable
    prompts: EmbeddingTable
    result: ScendiResult
    note: str
    image_modes: ModeSet | None = None
    scendi_modes: ModeSet | None = None


def _no_bandwidth(**given: float | Median) -> None:
    """Refuse a σ given with the cosine kernel, which has none (it would be silently ignored)."""
    for name, value in given.items():
        if value != MEDIAN:
            raise InputError(f"{name}={value!r}: the cosine kernel has no bandwidth (σ applies to kernel 'gaussian')")


def sigma_note(
    sigma: float | Median, rows: Any, seed: int, what: str, *, source: str | Path, option: str
) -> tuple[float, str]:
    """σ as given (embedding units), or for ``"median"`` the median heuristic on ``rows``, with a sentence saying
    which; an error names the ``what`` embeddings of file ``source`` and the ``option`` that sets this σ."""
    if sigma == MEDIAN:
        value = median_heuristic_sigma(rows, seed=seed, name=f"{source} ({what} embeddings)", option=option)
        return value, (
            f"{what} σ = {value:.6g} (sigma: median — the median heuristic, the median pairwise distance of "
            f"≤ {SIGMA_SAMPLE} rows, seed {seed})."
        )
    try:  # a rule only a config knows ('reference'), or a misspelling, is not a number either
        value = check_sigma(sigma)
    except InputError as exc:
        raise InputError(f"{option}: {what} {exc} (or {MEDIAN!r}: the median heuristic)") from None
    return value, f"{what} σ = {value:.6g} (given)."


def diversity_of_file(
    path: str | Path,
    *,
    kernel: Literal["gaussian", "cosine"] = "gaussian",
    sigma: float | Median = MEDIAN,
    method: Literal["auto", "exact", "fkea", "both"] = "auto",
    rff_dim: int = 2000,
    alphas: Sequence[float | str] = (1.0, 2.0, "inf"),
    seed: int = 0,
    batch_size: int = 8192,
    delta: float = 0.05,
    modes: int | None = None,
    top: int = 16,
    show_progress: bool = True,
    truncation: int | None = None,
) -> FileDiversity:
    """VENDI_α and RKE of an (n, d) .npy (streamed) or .npz file; ``sigma`` a number or ``"median"``; ``method``
    auto = exact when the cost model says it is no slower than FKEA (or under a second), else FKEA
    (``metrics.choose_method``; the note says why)."""
    source = open_embeddings(path)
    note = f"{source.path} — n = {source.n}, d = {source.dim}."
    streams: list[StreamingKernelEntropy] = []
    results: list[EntropyResult] = []
    chosen: str = method
    if kernel == "cosine":
        _no_bandwidth(sigma=sigma)
        streams.append(CosineEntropy(batch_size=batch_size))
    else:
        rng = np.random.default_rng(seed)
        sample = source.rows(rng.choice(source.n, size=min(source.n, SIGMA_SAMPLE), replace=False))
        value, sentence = sigma_note(sigma, sample, seed, "Gaussian", source=source.path, option="--sigma")
        note += " " + sentence
        if method == "auto":
            choice = choose_method(source.n, source.dim, rff_dim=rff_dim)
            chosen = choice.method
            note += f" Method auto → {choice.method}: {choice.reason}."
        if chosen in ("exact", "both"):
            results.append(exact_entropy(source.load(), sigma=value, alphas=alphas))
        if chosen in ("fkea", "both") or modes:
            center = np.asarray(sample, dtype=np.float64).mean(axis=0)  # any fixed centre is exact; keeps digits
            streams.append(FKEA(sigma=value, rff_dim=rff_dim, seed=seed, batch_size=batch_size, center=center))
    if streams:
        with progress(
            source.n, "embeddings", enabled=show_progress, unit="row"
        ) as bar:  # closed before an interruption's message
            for _start, batch in source.batches(batch_size):
                for est in streams:
                    est.update(batch)
                bar.update(len(batch))
        if kernel == "cosine" or chosen != "exact":
            results += [est.compute(alphas, delta=delta) for est in streams]
    found = None
    table = load_embedding_table(source.path) if source.path.suffix == ".npz" else None
    if modes:
        found = kernel_modes(streams[-1], (b for _, b in source.batches(batch_size)), k=modes, top=top)
    truncated: tuple[dict[float, float], ...] = ()
    if truncation is not None:
        from t2ibench.metrics import truncated_vendi

        truncated = tuple(truncated_vendi(r.eigenvalues, tuple(r.vendi), truncation) for r in results)
    return FileDiversity(source.path, source.n, source.dim, tuple(results), note, found, table, truncation, truncated)


def diversity_of_pairs(
    images: str | Path,
    prompts: str | Path,
    *,
    kernel: Literal["gaussian", "cosine"] = "gaussian",
    image_sigma: float | Median = MEDIAN,
    text_sigma: float | Median = MEDIAN,
    rff_dim: int = 1000,
    epsilon: float = 1e-6,
    seed: int = 0,
    modes: int | None = None,
    top: int = 16,
    inverse: Literal["ridge", "pinv"] = "ridge",
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
