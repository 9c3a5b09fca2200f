"""Store rows of the pipeline's results: one model version becomes one ``VersionRows`` the store writes whole."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from t2ibench.config import ModelConfig
from t2ibench.geneval_eval import ResultRow
from t2ibench.hashing import content_hash, to_plain
from t2ibench.pipeline.results import Generated, MetricRecord, ModeRecord, Scores
from t2ibench.store import VersionRows


def result_rows(results: Sequence[ResultRow], suite: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Store rows (verdicts, detections) of judged images (``ResultRow``s), keyed by prompt index and sample."""
    verdict_rows, detection_rows = [], []
    for row in results:
        key = {"suite": suite, "prompt_index": int(row.prompt_index or 0), "sample": int(row.sample)}
        verdict_rows.append(
            {**key, "task": row.tag, "correct": row.correct, "reason": row.reason, "relation": row.relation}
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
                        "color": colours[rank] if rank < len(colours) else None,
                    }
                )
    return verdict_rows, detection_rows


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
    results: Sequence[ResultRow],
    judged_sha256: str,
    table2: Sequence[Mapping[str, Any]],
    scores: Sequence[Scores],
    protocol: Mapping[str, Any],
    lite: Sequence[str] = (),
) -> VersionRows:
    """Every row of one model/evaluation version, and the content hash that says whether it changed (every row
    written, the model's label and settings included)."""
    verdicts, detections = result_rows(results, suite)
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
    }
    content = content_hash(
        [
            generated.images_hash(),
            judged_sha256,
            [[m.metrics, m.modes] for m in scores],
            list(table2),
            model_row,
            [[int(i), dict(r)] for i, r in prompts],
            [[i.prompt_index, i.sample, i.path, i.sha256, i.seed] for i in generated.images],
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
        verdicts=verdicts,
        detections=detections,
        metrics=metrics,
        modes=modes,
        geneval_scores=[dict(r) for r in table2],
        evaluator_settings={"settings": to_plain(protocol), "lite": list(lite)},
    )
