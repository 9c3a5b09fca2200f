"""GenEval's stored rows of one model version: its judged images' verdicts and kept detections (keyed by prompt index
and sample) and its Table 2 rows, as the spine's ``SpineRows`` the refresh's store write takes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from t2ibench.benchmarks import SpineRows
from t2ibench.benchmarks.geneval.evaluate import ResultRow, read_results


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


def spine_rows(judged: Any, scores: Any, generated: Any, *, suite: str, model: str) -> SpineRows:
    """The version's rows from its results file (``judged``: path and SHA-256, refused when missing or changed since
    judging), its Table 2 (``scores.rows``) and its images (``generated``: each must have a verdict)."""
    path = judged.checked()
    results = read_results(path)
    generated.check_judged({(int(r.prompt_index or 0), int(r.sample)) for r in results}, "GenEval verdict")
    verdicts, detections = result_rows(results, suite)
    table2 = [dict(r) for r in scores.rows]
    return SpineRows(
        tables={"verdicts": verdicts, "detections": detections, "geneval_scores": table2},
        judged=len(verdicts),
        results_sha256=judged.sha256,
        scores=list(scores.rows),
    )
