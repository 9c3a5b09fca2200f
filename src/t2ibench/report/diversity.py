"""Markdown rendering of diversity results (computed elsewhere)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from t2ibench.metrics.entropy import EntropyResult
from t2ibench.metrics.modes import ModeSet
from t2ibench.metrics.scendi import ScendiResult
from t2ibench.report.markdown import markdown_table


def _alpha_label(alpha: float) -> str:
    return "∞" if math.isinf(alpha) else f"{alpha:g}"


def render_entropy_results(
    results: Sequence[EntropyResult],
    *,
    sigma_note: str = "",
    truncated: Sequence[Mapping[float, float]] = (),
    truncation: int | None = None,
) -> str:
    """One Markdown row per result: method, kernel, n, VENDI_α columns, truncated VENDI-1 (when given), RKE, σ, r
    and the FKEA radius."""
    alphas: list[float] = []
    for res in results:
        alphas += [a for a in res.vendi if a not in alphas]
    headers = [
        "method",
        "kernel",
        "n",
        *[f"VENDI-{_alpha_label(a)}" for a in alphas],
        *([f"truncated VENDI-1 (t = {truncation})"] if truncated else []),
        "RKE",
        "σ",
        "r",
        "radius",
    ]
    rows = []
    for i, res in enumerate(results):
        rows.append(
            [
                res.method,
                res.kernel,
                res.n,
                *[f"{res.vendi[a]:.4f}" if a in res.vendi else "" for a in alphas],
                *([f"{truncated[i][1.0]:.4f}" if 1.0 in truncated[i] else ""] if truncated else []),
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
        ["set", "n", "Scendi", "exp H(Λ)", "model share", "prompt-driven", "image VENDI-1", "kernel", "C_TT⁻¹"],
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
                getattr(r, "regularisation", None) or f"ridge ε = {r.epsilon:g}",
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
