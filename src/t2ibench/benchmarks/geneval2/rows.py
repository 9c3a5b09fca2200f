"""GenEval 2's stored rows: every question asked of every image (``vqa_answers``) and the evaluation's rows for the
store's one generic benchmark write (``BenchmarkRows``: protocol, answers, table cells)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from t2ibench.benchmarks import benchmark_score_rows
from t2ibench.benchmarks.geneval2.metrics import YES_VARIANTS, vqascore_text
from t2ibench.hashing import to_plain
from t2ibench.store import BenchmarkRows


def evaluation_rows(
    results: Sequence[Any], tables: Any, protocol: Mapping[str, Any], evaluator_hash: str
) -> BenchmarkRows:
    """GenEval 2's rows of one evaluation — the one way the refresh and ``t2ibench evaluate`` make them: the protocol
    its answers were measured under, every answer of its judged images (``Geneval2Result``s) and every cell of its
    tables (``Geneval2Tables``, or rows already made of them), under its own version ``evaluator_hash``."""
    cells = tables if isinstance(tables, (list, tuple)) else benchmark_score_rows(tables, "geneval2")
    return BenchmarkRows(
        benchmark="geneval2",
        evaluator_hash=evaluator_hash,
        settings=to_plain(dict(protocol)),
        answers=vqa_answer_rows(results, "geneval2"),
        scores=[dict(r) for r in cells],
    )


def vqa_answer_rows(results: Sequence[Any], benchmark: str) -> list[dict[str, Any]]:
    """``vqa_answers`` rows of judged images (``Geneval2Result``s): every atom's question, then the image's VQAScore
    question (kind 'vqascore', question_index -1), keyed by prompt index, sample and question."""
    rows = []
    for r in results:
        key = {"benchmark": benchmark, "prompt_index": int(r.prompt_index), "sample": str(r.sample)}
        shared = {"prompt": r.prompt, "atom_count": int(r.atom_count), "image": r.filename}
        for q in r.questions:
            rows.append(
                {
                    **key,
                    **shared,
                    "question_index": int(q.index),
                    "kind": "atom",
                    "skill": q.skill,
                    "question": q.question,
                    "answer": q.answer,
                    "probability": float(q.probability),
                    "top_answer": q.top_text,
                    "correct": bool(q.correct),
                }
            )
        rows.append(
            {
                **key,
                **shared,
                "question_index": -1,
                "kind": "vqascore",
                "skill": None,
                "question": vqascore_text(r.prompt),
                "answer": YES_VARIANTS[0],
                "probability": float(r.vqascore),
                "top_answer": r.vqascore_top_text,
                "correct": r.vqascore_top_text.lower() in YES_VARIANTS,
            }
        )
    return rows
