"""The bundled diversity example: scikit-learn's handwritten digits, 1 to 10 classes (FKEA paper, Figure 2).

For k = 1..10 a fixed number n of images is drawn, stratified over the digit classes 0..k−1 without
replacement, and diversity is measured on raw pixel features (64 dims, values 0–16). Fixing n isolates the
effect of the number of modes from the sample size. Each condition is repeated ``repeats`` times with
independent seeded draws and the mean ± standard deviation is reported; repeat j uses the same random
Fourier frequencies (seed + j) in every condition, so conditions are compared on identical features.

σ is ``sigma_scale`` × the median pairwise distance of the whole data set (the median heuristic). At the plain
median (scale 1) pixel-space distances are too concentrated for the kernel to resolve the classes (VENDI-1
≈ 7.7 at 10 classes and not monotone; RKE flat at ≈ 2.6); at 0.4 every score rises strictly with k.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from t2ibench import artifacts
from t2ibench.metrics import exact_entropy, fkea_scores, median_heuristic_sigma
from t2ibench.metrics.checks import check_positive_int, check_seed, check_sigma, parse_alpha
from t2ibench.metrics.modes import ModeSet
from t2ibench.progress import progress
from t2ibench.report.markdown import markdown_table
from t2ibench.requests import DigitsRequest


@dataclass(frozen=True)
class DigitsSweepConfig:
    """Parameters of the digits sweep (all randomness derives from ``seed``)."""

    n_per_condition: int = DigitsRequest.n_per_condition  # the defaults are the request's (t2ibench.requests)
    repeats: int = DigitsRequest.repeats
    sigma_scale: float = DigitsRequest.sigma_scale
    rff_dim: int = DigitsRequest.rff_dim
    alpha: float = 1.0
    seed: int = DigitsRequest.seed

    def __post_init__(self) -> None:
        check_positive_int(self.n_per_condition, name="n_per_condition", minimum=10)
        check_positive_int(self.repeats, name="repeats")
        check_sigma(self.sigma_scale, name="sigma_scale")
        check_positive_int(self.rff_dim, name="rff_dim")
        parse_alpha(self.alpha)
        check_seed(self.seed)


@dataclass(frozen=True)
class MeanSd:
    """Mean and sample standard deviation over repeats."""

    mean: float
    sd: float

    @classmethod
    def of(cls, values: list[float]) -> MeanSd:
        """Summarise a list of repeat values."""
        arr = np.asarray(values, dtype=np.float64)
        return cls(float(arr.mean()), float(arr.std(ddof=1)) if arr.size > 1 else 0.0)


@dataclass(frozen=True)
class DigitsSweepRow:
    """Scores for one number of classes."""

    classes: int
    n: int
    vendi_exact: MeanSd
    vendi_fkea: MeanSd
    rke_exact: MeanSd
    rke_fkea: MeanSd
    error_radius: float


@dataclass(frozen=True)
class DigitsSweep:
    """The whole sweep: configuration, the σ used (and the median it came from), one row per class count."""

    config: DigitsSweepConfig
    median_distance: float
    sigma: float
    rows: tuple[DigitsSweepRow, ...]

    def is_monotone(self, column: str) -> bool:
        """Whether the mean of ``column`` (e.g. 'vendi_exact') strictly increases with the number of classes."""
        means = [getattr(r, column).mean for r in self.rows]
        return bool(np.all(np.diff(means) > 0))


def load_digits_pixels() -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """scikit-learn's bundled 8×8 digits: pixels (1797, 64) in [0, 16] and labels (1797,)."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    return np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.int64)


def stratified_sample(labels: NDArray[np.int64], classes: int, n: int, rng: np.random.Generator) -> NDArray[np.intp]:
    """Indices of n rows spread as evenly as possible over labels 0..classes−1, without replacement."""
    counts = [n // classes + (1 if c < n % classes else 0) for c in range(classes)]
    picks = []
    for c, m in enumerate(counts):
        members = np.flatnonzero(labels == c)
        if m > members.size:
            raise ValueError(f"class {c} has {members.size} rows; cannot draw {m} without replacement")
        picks.append(rng.choice(members, size=m, replace=False))
    return np.concatenate(picks)


def digits_class_sweep(config: DigitsSweepConfig | None = None, *, show_progress: bool = True) -> DigitsSweep:
    """Exact and FKEA VENDI_α/RKE of digit pixels as the number of classes grows from 1 to 10."""
    cfg = config or DigitsSweepConfig()
    X, y = load_digits_pixels()
    median = median_heuristic_sigma(X, seed=cfg.seed)
    sigma = cfg.sigma_scale * median
    alpha = parse_alpha(cfg.alpha)
    rows = []
    with progress(
        10 * cfg.repeats, "digits sweep", enabled=show_progress, unit="eval"
    ) as bar:  # closed before an interruption's message
        for k in range(1, 11):
            vx, vf, rx, rf, radius = [], [], [], [], 0.0
            for rep in range(cfg.repeats):
                rng = np.random.default_rng((cfg.seed, k, rep))
                Z = X[stratified_sample(y, k, cfg.n_per_condition, rng)]
                exact = exact_entropy(Z, sigma=sigma, alphas=[alpha])
                approx = fkea_scores(Z, sigma=sigma, rff_dim=cfg.rff_dim, seed=cfg.seed + rep, alphas=[alpha])
                vx.append(exact.vendi[alpha])
                vf.append(approx.vendi[alpha])
                rx.append(exact.rke)
                rf.append(approx.rke)
                radius = approx.error_radius or 0.0
                bar.update()
            rows.append(
                DigitsSweepRow(
                    classes=k,
                    n=cfg.n_per_condition,
                    vendi_exact=MeanSd.of(vx),
                    vendi_fkea=MeanSd.of(vf),
                    rke_exact=MeanSd.of(rx),
                    rke_fkea=MeanSd.of(rf),
                    error_radius=radius,
                )
            )
    return DigitsSweep(config=cfg, median_distance=median, sigma=sigma, rows=tuple(rows))


# -- prompt-aware diversity (Scendi) on digits -----------------------------------------------------------------

DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
PROMPT_MODELS = ("prompt-following", "prompt-ignoring")


def digit_prompts() -> list[str]:
    """The ten prompts, one naming each digit: 'a photo of the handwritten digit three'."""
    return [f"a photo of the handwritten digit {w}" for w in DIGIT_WORDS]


def embed_prompts(prompts: list[str], *, dim: int = 256) -> NDArray[np.float64]:
    """Offline stand-in for a text encoder: L2-normalised word 1–2-gram hashing features (len(prompts), dim)."""
    from sklearn.feature_extraction.text import HashingVectorizer

    vectorizer = HashingVectorizer(n_features=dim, ngram_range=(1, 2), norm="l2", alternate_sign=False)
    return np.asarray(vectorizer.transform(prompts).toarray(), dtype=np.float64)


def digit_pairs(
    labels: NDArray[np.int64], model: str, per_prompt: int, rng: np.random.Generator
) -> tuple[NDArray[np.intp], NDArray[np.int64]]:
    """(image row per pair, prompt id per pair) for a simulated model; each prompt is asked ``per_prompt`` times.

    'prompt-following' draws an image of the named digit; 'prompt-ignoring' draws any digit image.
    """
    prompt_ids = np.repeat(np.arange(10), per_prompt)
    if model == "prompt-following":
        rows = np.concatenate(
            [rng.choice(np.flatnonzero(labels == c), size=per_prompt, replace=False) for c in range(10)]
        )
    elif model == "prompt-ignoring":
        rows = rng.choice(len(labels), size=10 * per_prompt, replace=False)
    else:
        raise ValueError(f"unknown model {model!r}; choose from {PROMPT_MODELS}")
    return rows, prompt_ids


@dataclass(frozen=True)
class DigitsScendiConfig:
    """Parameters of the digits Scendi comparison (all randomness derives from ``seed``)."""

    per_prompt: int = 100
    repeats: int = 3
    sigma_scale: float = 0.4
    rff_dim: int = 500
    epsilon: float = 1e-6
    seed: int = 0

    def __post_init__(self) -> None:
        check_positive_int(self.per_prompt, name="per_prompt")
        check_positive_int(self.repeats, name="repeats")
        check_sigma(self.sigma_scale, name="sigma_scale")
        check_positive_int(self.rff_dim, name="rff_dim")
        check_seed(self.seed)


@dataclass(frozen=True)
class DigitsScendiRow:
    """Scendi decomposition for one simulated model (mean ± sd over repeats)."""

    model: str
    scendi: MeanSd
    conditional_vendi: MeanSd
    model_share: MeanSd
    prompt_vendi: MeanSd
    image_vendi: MeanSd


@dataclass(frozen=True)
class DigitsScendi:
    """The comparison: configuration, the two bandwidths used, one row per model."""

    config: DigitsScendiConfig
    image_sigma: float
    text_sigma: float
    rows: tuple[DigitsScendiRow, ...]


def digits_scendi_comparison(config: DigitsScendiConfig | None = None, *, show_progress: bool = True) -> DigitsScendi:
    """Scendi of a prompt-following vs a prompt-ignoring 'model' on digit images and prompts naming the digit."""
    from t2ibench.metrics.scendi import scendi_score

    cfg = config or DigitsScendiConfig()
    X, y = load_digits_pixels()
    prompts = embed_prompts(digit_prompts())
    image_sigma = cfg.sigma_scale * median_heuristic_sigma(X, seed=cfg.seed)
    text_sigma = median_heuristic_sigma(prompts, seed=cfg.seed)
    with progress(
        len(PROMPT_MODELS) * cfg.repeats, "digits scendi", enabled=show_progress, unit="eval"
    ) as bar:  # closed before an interruption's message
        rows = []
        for model_index, model in enumerate(PROMPT_MODELS):
            values: dict[str, list[float]] = {k: [] for k in ("scendi", "cond", "share", "prompt", "image")}
            for rep in range(cfg.repeats):
                rng = np.random.default_rng((cfg.seed, 100 + model_index, rep))
                image_rows, prompt_ids = digit_pairs(y, model, cfg.per_prompt, rng)
                ids = prompt_ids.tolist()
                res = scendi_score(
                    X[image_rows],
                    prompts[prompt_ids],
                    image_ids=ids,
                    text_ids=ids,
                    image_sigma=image_sigma,
                    text_sigma=text_sigma,
                    rff_dim=cfg.rff_dim,
                    seed=cfg.seed + rep,
                    epsilon=cfg.epsilon,
                )
                for key, value in zip(
                    values,
                    (res.scendi, res.conditional_vendi, res.model_share, res.prompt_vendi, res.image_vendi),
                    strict=True,
                ):
                    values[key].append(value)
                bar.update()
            rows.append(DigitsScendiRow(model, *(MeanSd.of(v) for v in values.values())))
    return DigitsScendi(config=cfg, image_sigma=image_sigma, text_sigma=text_sigma, rows=tuple(rows))


@dataclass(frozen=True)
class DigitsModes:
    """FKEA modes of all digit images and Scendi modes of the prompt-following model, with their pictures."""

    fkea: ModeSet
    fkea_images: tuple[NDArray[np.float64], ...]
    fkea_labels: tuple[str, ...]
    scendi: ModeSet | None
    scendi_images: tuple[NDArray[np.float64], ...]
    scendi_labels: tuple[str, ...]
    image_sigma: float


def digits_modes(
    k: int = 6, top: int = 16, *, config: DigitsScendiConfig | None = None, with_scendi: bool = True
) -> DigitsModes:
    """Top-k FKEA modes of the 1797 digit images and (optionally) top-k Scendi modes of the prompt-following model."""
    from t2ibench.metrics import FKEA
    from t2ibench.metrics.modes import kernel_modes, scendi_modes
    from t2ibench.metrics.scendi import Scendi

    cfg = config or DigitsScendiConfig()
    X, y = load_digits_pixels()
    sigma = cfg.sigma_scale * median_heuristic_sigma(X, seed=cfg.seed)
    est = FKEA(sigma=sigma, rff_dim=cfg.rff_dim, seed=cfg.seed).update(X)
    fkea = kernel_modes(est, X, k=k, top=top)
    pictures = tuple(row.reshape(8, 8) for row in X)
    labels = tuple(f"#{j} ({DIGIT_WORDS[c]})" for j, c in enumerate(y))
    if not with_scendi:
        return DigitsModes(fkea, pictures, labels, scendi=None, scendi_images=(), scendi_labels=(), image_sigma=sigma)
    prompts = embed_prompts(digit_prompts())
    rows, prompt_ids = digit_pairs(y, "prompt-following", cfg.per_prompt, np.random.default_rng((cfg.seed, 100, 0)))
    ids = prompt_ids.tolist()
    sc = Scendi(
        image_sigma=sigma,
        text_sigma=median_heuristic_sigma(prompts, seed=cfg.seed),
        rff_dim=cfg.rff_dim,
        seed=cfg.seed,
    ).update(X[rows], prompts[prompt_ids], image_ids=ids, text_ids=ids)
    scendi = scendi_modes(sc, X[rows], k=k, top=top, bottom=top, epsilon=cfg.epsilon)
    return DigitsModes(
        fkea=fkea,
        fkea_images=pictures,
        fkea_labels=labels,
        scendi=scendi,
        scendi_images=tuple(X[j].reshape(8, 8) for j in rows),
        scendi_labels=tuple(labels[j] for j in rows),
        image_sigma=sigma,
    )


# -- presentation of the example's results (its own: the results are computed here, never stored) ----------------


def _alpha_label(alpha: float) -> str:
    return "∞" if math.isinf(alpha) else f"{alpha:g}"


def _ms(value: MeanSd, digits: int = 2) -> str:
    return f"{value.mean:.{digits}f} ± {value.sd:.{digits}f}"


def render_digits_sweep(sweep: DigitsSweep) -> str:
    """The digits class sweep as a Markdown table with a header stating every parameter."""
    cfg = sweep.config
    a = _alpha_label(cfg.alpha)
    header = (
        f"Digits (scikit-learn, 8×8 pixels), n = {cfg.n_per_condition} per condition stratified over classes, "
        f"{cfg.repeats} seeded repeats (mean ± sd), seed {cfg.seed}.\n"
        f"Gaussian kernel σ = {sweep.sigma:.3f} = {cfg.sigma_scale:g} × median pairwise distance "
        f"({sweep.median_distance:.3f}); FKEA with r = {cfg.rff_dim} frequencies (2r = {2 * cfg.rff_dim} features)."
    )
    rows = [
        [
            r.classes,
            r.n,
            _ms(r.vendi_exact),
            _ms(r.vendi_fkea),
            _ms(r.rke_exact),
            _ms(r.rke_fkea),
            f"{r.error_radius:.3f}",
        ]
        for r in sweep.rows
    ]
    table = markdown_table(
        [
            "classes",
            "n",
            f"VENDI-{a} exact",
            f"VENDI-{a} FKEA",
            "RKE exact",
            "RKE FKEA",
            "FKEA radius (δ=0.05)",
        ],
        rows,
    )
    checks = ", ".join(
        f"{name}: {'yes' if sweep.is_monotone(col) else 'NO'}"
        for name, col in [
            (f"VENDI-{a} exact", "vendi_exact"),
            (f"VENDI-{a} FKEA", "vendi_fkea"),
            ("RKE exact", "rke_exact"),
            ("RKE FKEA", "rke_fkea"),
        ]
    )
    return f"{header}\n\n{table}\n\nStrictly increasing with the number of classes — {checks}."


def render_digits_scendi(result: DigitsScendi) -> str:
    """The digits Scendi comparison (prompt-following vs prompt-ignoring) as Markdown."""
    cfg = result.config
    header = (
        f"Digits with prompts naming the digit ('a photo of the handwritten digit three'), {cfg.per_prompt} pairs "
        f"per prompt, {cfg.repeats} seeded repeats (mean ± sd), seed {cfg.seed}. Prompt embeddings: word 1–2-gram "
        f"hashing vectors (offline stand-in for a text encoder). Gaussian kernels: image σ = {result.image_sigma:.3f} "
        f"({cfg.sigma_scale:g} × median distance), text σ = {result.text_sigma:.3f} (median distance); r = "
        f"{cfg.rff_dim} per modality; ε = {cfg.epsilon:g}."
    )
    table = markdown_table(
        ["model", "Scendi", "exp H(Λ)", "model share", "prompt-driven VENDI-1", "image VENDI-1"],
        [
            [
                r.model,
                _ms(r.scendi),
                _ms(r.conditional_vendi),
                _ms(r.model_share, 3),
                _ms(r.prompt_vendi),
                _ms(r.image_vendi),
            ]
            for r in result.rows
        ],
    )
    follow, ignore = result.rows
    verdict = (
        f"The prompt-following model's images are as diverse overall (image VENDI-1 {follow.image_vendi.mean:.1f} vs "
        f"{ignore.image_vendi.mean:.1f}), but its prompts explain more of that diversity: Scendi "
        f"{follow.scendi.mean:.1f} vs {ignore.scendi.mean:.1f}."
    )
    return f"{header}\n\n{table}\n\n{verdict}"


def write_digits_figure(sweep: DigitsSweep, out_dir: str | Path) -> dict[str, Any]:
    """digits.md (table), digits.png (VENDI/RKE vs classes, exact and FKEA), digits.json and metrics.json, every
    number at the paper artifacts' stated precision (``t2ibench.artifacts``: the same bytes on any machine)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sweep = artifacts.stated(sweep)  # every rendering below shows these values
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    artifacts.write_text(out / "digits.md", render_digits_sweep(sweep) + "\n")
    k = [r.classes for r in sweep.rows]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for ax, (exact, approx, title) in zip(
        axes, [("vendi_exact", "vendi_fkea", "VENDI-1"), ("rke_exact", "rke_fkea", "RKE")], strict=True
    ):
        for col, style in ((exact, "o-"), (approx, "s--")):
            means = [getattr(r, col).mean for r in sweep.rows]
            sds = [getattr(r, col).sd for r in sweep.rows]
            ax.errorbar(k, means, yerr=sds, fmt=style, capsize=2, label=col.split("_")[1])
        ax.set_xlabel("digit classes")
        ax.set_title(title)
        ax.legend(fontsize=8)
    fig.tight_layout()
    artifacts.write_png(fig, out / "digits.png", dpi=100)
    plt.close(fig)
    payload = {
        "sigma": sweep.sigma,
        "rows": [
            {
                "classes": r.classes,
                "vendi_exact": r.vendi_exact.mean,
                "vendi_fkea": r.vendi_fkea.mean,
                "rke_exact": r.rke_exact.mean,
                "rke_fkea": r.rke_fkea.mean,
            }
            for r in sweep.rows
        ],
    }
    artifacts.write_json(out / "digits.json", payload, sort_keys=False)
    metrics = {
        "vendi_exact_10_classes": sweep.rows[-1].vendi_exact.mean,
        "vendi_fkea_10_classes": sweep.rows[-1].vendi_fkea.mean,
        "monotone": all(sweep.is_monotone(c) for c in ("vendi_exact", "vendi_fkea", "rke_exact", "rke_fkea")),
    }
    artifacts.write_json(out / "metrics.json", metrics)
    return metrics
