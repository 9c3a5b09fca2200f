"""Markdown rendering of diversity results (computed elsewhere)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from t2ibench.examples.digits import DigitsSweep, MeanSd
from t2ibench.metrics.entropy import EntropyResult
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
