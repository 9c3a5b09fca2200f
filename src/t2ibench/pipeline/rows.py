"""Store rows of the pipeline's results: the steps' scores shaped as records (keys, intervals, provenance), and one
model version as one ``VersionRows`` the store writes whole. The steps compute; the shaping of what they computed
into rows lives here."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from t2ibench.benchmarks import SpineRows
from t2ibench.config import DiversityConfig, ModelConfig, ScendiConfig
from t2ibench.hashing import content_hash, to_plain
from t2ibench.pipeline.estimators import kernel_choice
from t2ibench.pipeline.results import Bandwidth, Generated, MetricRecord, ModeRecord, Scores
from t2ibench.store import BenchmarkRows, VersionRows


def metric_row(record: MetricRecord) -> dict[str, Any]:
    """A ``metrics`` row (without the version columns); α = ∞ stays the float inf (a DOUBLE that round-trips)."""
    return {**to_plain(record), "alpha": record.alpha}


def mode_row(record: ModeRecord) -> dict[str, Any]:
    """A ``modes`` row (without the version columns)."""
    return {
        **to_plain(record),
        "top": list(record.top),
        "bottom": list(record.bottom),
        "top_scores": [float(x) for x in record.top_scores],
        "bottom_scores": [float(x) for x in record.bottom_scores],
    }


def version_rows(
    *,
    model: ModelConfig,
    model_hash: str,
    evaluator_hash: str,
    suite: str,
    smoke: bool,
    prompts: Sequence[tuple[int, Mapping[str, Any]]],
    generated: Generated,
    spine: SpineRows,
    scores: Sequence[Scores],
    protocol: Mapping[str, Any],
    lite: Sequence[str] = (),
    benchmarks: Sequence[BenchmarkRows] = (),
    selftest: Mapping[str, Any] | None = None,
) -> VersionRows:
    """Every row of one model/evaluation version, and the content hash that says whether it changed (every row
    written, the model's label and settings included; ``spine``: the spine benchmark's rows; ``benchmarks``: the
    other benchmarks' rows)."""
    metrics = [metric_row(m) for s in scores for m in s.metrics]
    modes = [mode_row(m) for s in scores for m in s.modes]
    model_row = {
        "label": model.label or model.name,
        "backend": model.generator.backend,
        "model_id": model.generator.model,
        "revision": model.generator.revision,
        "sampling": to_plain(model.generator),
        "manifest": generated.manifest,
        "smoke": smoke,
        # a checkpoint series' point: its series and step (only then: a version stored before keeps its hash)
        **({"series": model.series, "step": model.step} if model.series is not None else {}),
    }
    content = content_hash(
        [
            generated.images_hash(),
            spine.results_sha256,
            [[m.metrics, m.modes] for m in scores],
            list(spine.scores),
            model_row,
            [[int(i), dict(r)] for i, r in prompts],
            [[i.prompt_index, i.sample, i.path, i.sha256, i.seed] for i in generated.images],
            [  # a benchmark's judged images join only when it has any (a version stored before keeps its hash)
                [b.benchmark, b.evaluator_hash, to_plain(b.settings), list(b.answers), list(b.scores)]
                + ([list(b.images)] if b.images else [])
                for b in benchmarks
            ],
        ]
    )
    return VersionRows(
        model=model.name,
        model_hash=model_hash,
        evaluator_hash=evaluator_hash,
        suite=suite,
        content_hash=content,
        model_row=model_row,
        prompts=[
            {"prompt_index": i, "task": r["tag"], "prompt": r["prompt"], "metadata": json.loads(json.dumps(dict(r)))}
            for i, r in prompts
        ],
        images=[
            {"prompt_index": i.prompt_index, "sample": i.sample, "path": i.path, "sha256": i.sha256, "seed": i.seed}
            for i in generated.images
        ],
        spine={name: list(rows) for name, rows in spine.tables.items()},
        metrics=metrics,
        modes=modes,
        evaluator_settings={"settings": to_plain(protocol), "lite": list(lite)},
        benchmarks=tuple(benchmarks),
        selftest=selftest,
    )


def selftest_rows(selftest: Any) -> dict[str, Any]:
    """The ``evaluator_selftests`` row of a ``SelfTest`` result: its content digest, the evaluator it measured
    (detector and colour identities, thresholds) and the whole report."""
    report = to_plain(selftest.report)
    evaluator = {**report.get("evaluator", {}), "params": report.get("params")}
    return {"selftest_hash": selftest.digest(), "evaluator": evaluator, "report": report}


# -- score records (the steps' results as rows) -----------------------------------------------------------------


def metric_record(
    metric: str,
    alpha: float,
    value: float,
    result: Any,
    sigma: Bandwidth | None,
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
        "sigma": sigma.value if sigma is not None else None,
        "rff_dim": cfg.rff_dim,
        "seed": cfg.seed,
        "kernel": cfg.kernel,
    }
    return MetricRecord(
        metric=metric,
        params_key=json.dumps(params, sort_keys=True),
        kernel=cfg.kernel,
        alpha=alpha,  # ∞ is stored as the value inf
        sigma=sigma.value if sigma is not None else None,
        rff_dim=kernel_choice(cfg.kernel).rff_dim(cfg.rff_dim),
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
        sigma_source=sigma.source if sigma is not None else None,
    )


def convergence_records(
    name: str,
    report: Any,
    sigma: Bandwidth | None,
    *,
    kernel: str,
    rff_dim: int,
    seed: int,
    truncation: int | None,
) -> list[MetricRecord]:
    """One ``convergence`` row per fraction of a convergence report: the score there, its band, the verdict."""
    rows = []
    choice = kernel_choice(kernel)
    for p in report.points:
        params = {
            "score": name,
            "fraction": p.fraction,
            "kernel": kernel,
            "sigma": sigma.value if sigma is not None else None,
            "rff_dim": choice.rff_dim(rff_dim),
            "seed": seed,
            "resamples": report.resamples,
            **({"t": truncation} if truncation is not None else {}),
        }
        banded = not (math.isnan(p.low) or math.isnan(p.high))
        rows.append(
            MetricRecord(
                metric="convergence",
                params_key=json.dumps(params, sort_keys=True),
                kernel=kernel,
                alpha=None,
                sigma=params["sigma"],
                rff_dim=params["rff_dim"],
                n=p.n_images,
                seed=seed,
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
                    **({"t": truncation} if truncation is not None else {}),
                },
                ci_low=float(p.low) if banded else None,
                ci_high=float(p.high) if banded else None,
                ci_level=float(report.level) if banded else None,
                ci_method=(
                    f"centred percentile bootstrap over the subset's prompts, B={report.resamples}"
                    if banded
                    else "not computed: the score is refitted per subset (no bootstrap); change rule only"
                ),
                sigma_source=sigma.source if sigma is not None else None,
            )
        )
    return rows


def mode_record(mode: Any, positions: np.ndarray, source: str) -> ModeRecord:
    """A computed mode as a stored row, its extreme rows mapped to image positions (``positions``: row → image)."""
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


def vendi_records(
    name: str, result: Any, boot: Any, sigma: Bandwidth | None, cfg: DiversityConfig, ci_method: str, level: float
) -> list[MetricRecord]:
    """The VENDI_α rows (stored as ``name``) and the RKE row of merged FKEA/cosine scores, with their bootstrap
    intervals where ``boot`` (a ``DiversityIntervals`` or None) has them; VENDI-∞ never gets one (a maximum: the
    bootstrap undercovers it everywhere, docs/metrics.md)."""
    unreliable = "not computed: the bootstrap is unreliable for VENDI-∞ (a maximum)"
    records = [
        metric_record(name, a, v, result, sigma, cfg, None, unreliable, None)
        if math.isinf(a) and boot is not None
        else metric_record(name, a, v, result, sigma, cfg, None if boot is None else boot.vendi[a], ci_method, level)
        for a, v in result.vendi.items()
    ]
    records.append(
        metric_record("rke", 2.0, result.rke, result, sigma, cfg, None if boot is None else boot.rke, ci_method, level)
    )
    return records


def truncated_records(
    truncated: Mapping[float, float],
    band: Any,
    result: Any,
    sigma: Bandwidth | None,
    cfg: DiversityConfig,
    *,
    bootstrapped: bool,
    ci_method: str,
    level: float,
) -> list[MetricRecord]:
    """The truncated VENDI_α rows (``fkea_truncated``, t = ``cfg.truncation`` in key and details); α = 1 carries
    ``band`` (the convergence report's point at n, or None) as its interval."""
    records = []
    for a, v in truncated.items():
        if a == 1.0 and band is not None:  # the convergence report's band at n: this score's interval
            base = dataclasses.replace(
                metric_record("fkea_truncated", a, v, result, sigma, cfg, None, ci_method, level),
                ci_low=band.low,
                ci_high=band.high,
                ci_level=level,
            )
        else:
            why = ci_method if not bootstrapped else "not computed: bootstrapped for α = 1 only (convergence report)"
            if bootstrapped and a == 1.0:
                why = "not computed: needs the convergence report (evaluators.diversity.convergence, ≥ 9 prompts)"
            base = metric_record("fkea_truncated", a, v, result, sigma, cfg, None, why, None)
        key = {**json.loads(base.params_key), "t": cfg.truncation}
        records.append(
            dataclasses.replace(
                base, params_key=json.dumps(key, sort_keys=True), details={**base.details, "t": cfg.truncation}
            )
        )
    return records


def scendi_records(
    res: Any,
    conditional: Any,
    cfg: ScendiConfig,
    *,
    image_sigma: Bandwidth | None,
    text_sigma: Bandwidth | None,
) -> tuple[MetricRecord, ...]:
    """The rows of one Scendi result (``ScendiResult``) and, when given, conditional/information VENDI-1 of the same
    pairs (a ``ConditionalVendiResult``), keyed by the kernels, σ's (where the kernel has them), r, ε and seed."""
    choice = kernel_choice(cfg.kernel)
    i_sigma = choice.sigma(None if image_sigma is None else image_sigma.value)
    t_sigma = choice.sigma(None if text_sigma is None else text_sigma.value)
    params = {
        "kernel": cfg.kernel,
        "image_sigma": i_sigma,
        "text_sigma": t_sigma if choice.bandwidth else 1.0,
        "rff_dim": cfg.rff_dim,
        "epsilon": cfg.epsilon if cfg.inverse == "ridge" else None,
        "inverse": cfg.inverse,
        "seed": cfg.seed,
        "n": res.n,
    }
    sources = {
        "image_sigma_source": image_sigma.source if choice.bandwidth and image_sigma is not None else None,
        "text_sigma_source": text_sigma.source if choice.bandwidth and text_sigma is not None else None,
    }
    # what C_TT⁻¹'s regularisation did on this data (shown next to every Scendi value; not part of the key)
    used = {"regularisation": res.regularisation, "pinv_kept": res.pinv_kept}
    records = tuple(
        MetricRecord(
            metric=metric,
            params_key=json.dumps(params, sort_keys=True),
            kernel=cfg.kernel,
            alpha=1.0,
            sigma=i_sigma,
            rff_dim=choice.rff_dim(cfg.rff_dim),
            n=res.n,
            seed=cfg.seed,
            value=float(value),
            error_bound=None,
            details={**params, **sources, **used},
            # each resample would refit the (4r)² joint image–text covariance and its Schur complement: at the
            # default r = 1000 that is B × Scendi's own cost (docs/performance.md), so no interval is computed
            ci_method="not computed: B refits of the joint image-text covariance (cost)",
            sigma_source=sources["image_sigma_source"],
        )
        for metric, value in (
            ("scendi", res.scendi),
            ("scendi_conditional_vendi", res.conditional_vendi),
            ("scendi_model_share", res.model_share),
            ("scendi_prompt_score", res.prompt_score),
            ("clip_image_vendi", res.image_vendi),
        )
    )
    if conditional is None:
        return records
    # VENDI_1(images) = cond · info: cond the prompt-aware diversity, info the prompt-driven part
    return records + tuple(
        dataclasses.replace(
            records[0], metric=metric, value=float(value), ci_method="not computed: no bootstrap for it yet"
        )
        for metric, value in (
            ("cond_vendi", conditional.conditional[1.0]),
            ("info_vendi", conditional.information[1.0]),
        )
    )
