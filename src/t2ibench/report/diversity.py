"""Markdown rendering of diversity results (computed elsewhere)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from t2ibench.examples.digits import DigitsScendi, DigitsSweep, MeanSd
from t2ibench.metrics.entropy import EntropyResult
from t2ibench.metrics.modes import ModeSet
from t2ibench.metrics.scendi import ScendiResult
from t2ibench.report.markdown import markdown_table


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


def render_entropy_results(results: Sequence[EntropyResult], *, sigma_note: str = "") -> str:
    """One Markdown row per result: method, kernel, n, VENDI_α columns, RKE, σ, r and the FKEA radius."""
    alphas: list[float] = []
    for res in results:
        alphas += [a for a in res.vendi if a not in alphas]
    headers = [
        "method",
        "kernel",
        "n",
        *[f"VENDI-{_alpha_label(a)}" for a in alphas],
        "RKE",
        "σ",
        "r",
        "radius",
    ]
    rows = []
    for res in results:
        rows.append(
            [
                res.method,
                res.kernel,
                res.n,
                *[f"{res.vendi[a]:.4f}" if a in res.vendi else "" for a in alphas],
                f"{res.rke:.4f}",
                "" if res.sigma is None else f"{res.sigma:.4g}",
                "" if res.rff_dim is None else res.rff_dim,
                "" if res.error_radius is None else f"{res.error_radius:.3f}",
            ]
        )
    table = markdown_table(headers, rows)
    return f"{sigma_note}\n\n{table}" if sigma_note else table


def render_scendi_results(rows: Sequence[tuple[str, ScendiResult]], *, note: str = "") -> str:
    """One Markdown row per (label, result): Scendi, its decomposition and the images' plain VENDI-1."""
    table = markdown_table(
        ["set", "n", "Scendi", "exp H(Λ)", "model share", "prompt-driven", "image VENDI-1", "kernel", "ε"],
        [
            [
                label,
                r.n,
                f"{r.scendi:.3f}",
                f"{r.conditional_vendi:.2f}",
                f"{r.model_share:.3f}",
                f"{r.prompt_score:.3f}",
                f"{r.image_vendi:.2f}",
                r.kernel if r.rff_dim is None else f"{r.kernel} (r = {r.rff_dim})",
                f"{r.epsilon:g}",
            ]
            for label, r in rows
        ],
    )
    legend = (
        "Scendi = exp(Σ λ log(Tr Λ/λ)) over the Schur complement Λ = C_II − C_IT (C_TT + ε)⁻¹ C_TI: model-driven "
        "modes; exp H(Λ): the same spectrum's effective number, undiscounted; model share: Tr Λ / Tr C_II; "
        "prompt-driven: the Scendi formula on C_IT (C_TT + ε)⁻¹ C_TI."
    )
    return "\n\n".join(part for part in (note, table, legend) if part)


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


def render_modes(modes: ModeSet, *, labels: Sequence[str] | None = None, top: int = 6) -> str:
    """Markdown table of modes: eigenvalue share, entropy share and the first ``top`` samples (labels or indices)."""

    def show(rows: Sequence[int]) -> str:
        return ", ".join(labels[j] if labels is not None else str(j) for j in rows[:top])

    has_bottom = any(m.bottom for m in modes.modes)
    headers = ["mode", "share", "entropy share", "top samples", *(["bottom samples"] if has_bottom else [])]
    rows = [
        [
            m.index,
            f"{100 * m.share:.1f} %",
            f"{100 * m.entropy_share:.1f} %",
            show(m.top),
            *([show(m.bottom)] if has_bottom else []),
        ]
        for m in modes.modes
    ]
    return f"{modes.source} modes over n = {modes.n}:\n\n" + markdown_table(headers, rows)
