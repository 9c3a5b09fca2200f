"""T2I-CompBench++'s stored rows: the one protocol of an evaluation (its categories' protocols merged), its table
cells (``benchmark_scores``: each category and the mean, ×100), every judged image with what its models said
(``benchmark_images``), and the evaluation's ``BenchmarkRows`` — the one way the refresh and ``t2ibench evaluate
--store`` make them."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from t2ibench.benchmarks.t2i_compbench.columns import TABLE
from t2ibench.benchmarks.t2i_compbench.evaluate import CompResult
from t2ibench.benchmarks.t2i_compbench.metrics import CATEGORIES, CategoryScore, category_scores, mean_score
from t2ibench.benchmarks.t2i_compbench.suite import Prompt
from t2ibench.errors import InputError
from t2ibench.hashing import content_hash, to_plain
from t2ibench.store import BenchmarkRows

BENCHMARK = "t2i_compbench"
RESAMPLES = 1000


def prompt_record(prompt: Prompt) -> dict[str, Any]:
    """A prompt's record in a refresh (what an image folder's metadata.jsonl holds): its category, 0-based line in
    the category's file, text and task tag (the category)."""
    return {"category": prompt.category, "line": prompt.line, "prompt": prompt.text, "tag": prompt.category}


def one_protocol(results: Sequence[CompResult], prompts: Sequence[tuple[int, Mapping[str, Any]]]) -> dict[str, Any]:
    """The one protocol an evaluation was measured under: every category's protocol merged (the rule, the suite,
    t2ibench, each model's identity by kind, np_num, the detection frame, the phrase table: where two categories
    record one of them, they must agree), the judged categories in the benchmark's order, and ``prompt_set`` (a
    digest of the prompts judged: a subset and the whole suite differ). InputError when images of one category
    were judged under two protocols, or two categories disagree."""
    by_category: dict[str, Mapping[str, Any]] = {}
    for r in results:
        seen = by_category.setdefault(r.category, r.protocol)
        if seen != r.protocol:
            raise InputError(f"{r.filename}: {r.category} images judged under two protocols (re-judge them together)")
    merged: dict[str, Any] = {}
    models: dict[str, Any] = {}
    for category, protocol in by_category.items():
        entries = [(models, kind, identity) for kind, identity in protocol.get("models", {}).items()]
        entries += [(merged, key, value) for key, value in protocol.items() if key != "models"]
        for target, key, value in entries:
            if target.setdefault(key, value) != value:
                raise InputError(f"T2I-CompBench++: {category} was judged with another {key!r} than the others")
    if not by_category:
        raise InputError("T2I-CompBench++: no judged images")
    judged = {int(r.prompt_index) for r in results}
    return {
        **merged,
        "models": dict(sorted(models.items())),
        "categories": ",".join(c for c in CATEGORIES if c in by_category),
        "prompt_set": content_hash([[int(i), dict(r)] for i, r in prompts if int(i) in judged]),
    }


def score_rows(results: Sequence[CompResult], *, level: float) -> list[dict[str, Any]]:
    """``benchmark_scores`` rows: each judged category's score (``metrics.category_scores``) and the mean over them
    (``metrics.mean_score``), ×100 with their percentile bootstrap intervals over prompts at ``level``."""
    rows = [(r.category, r.prompt_index, r.score) for r in results]
    scores: list[CategoryScore] = [*category_scores(rows, resamples=RESAMPLES, level=level),
                                   mean_score(rows, resamples=RESAMPLES, level=level)]  # fmt: skip
    return [
        {
            "benchmark": BENCHMARK,
            "table_name": TABLE,
            "key": s.category,
            "estimate": 100.0 * s.score,
            "ci_low": 100.0 * s.ci_low,
            "ci_high": 100.0 * s.ci_high,
            "ci_level": level,
            "ci_method": f"percentile bootstrap over prompts, B={RESAMPLES}"
            + (" (stratified by category)" if s.category not in CATEGORIES else ""),
            "prompts": s.prompts,
            "questions": s.images,  # the images it averages
        }
        for s in scores
    ]


def image_rows(results: Sequence[CompResult]) -> list[dict[str, Any]]:
    """``benchmark_images`` rows: every judged image with its score and what its models said (``details``);
    InputError when two results are of one (prompt, sample): the store keeps one row per image, never silently one
    of two."""
    seen: dict[tuple[int, int], str] = {}
    for r in results:
        other = seen.setdefault((int(r.prompt_index), int(r.sample)), r.filename)
        if other != r.filename:
            raise InputError(f"{r.filename}: prompt {r.prompt_index} sample {r.sample} again (also {other})")
    return [
        {
            "benchmark": BENCHMARK,
            "prompt_index": int(r.prompt_index),
            "sample": f"{int(r.sample):05d}",
            "image": r.filename,
            "prompt": r.prompt,
            "category": r.category,
            "score": float(r.score),
            "details": json.dumps(r.details, sort_keys=True, allow_nan=False),
        }
        for r in results
    ]


def evaluation_rows(
    results: Sequence[CompResult],
    cells: Sequence[Mapping[str, Any]],
    protocol: Mapping[str, Any],
    evaluator_hash: str,
) -> BenchmarkRows:
    """T2I-CompBench++'s rows of one evaluation under its own version ``evaluator_hash``: the protocol, the table
    cells (``score_rows``) and every judged image (``image_rows``); no VQA answers (BLIP's probabilities are in each
    image's details)."""
    return BenchmarkRows(
        benchmark=BENCHMARK,
        evaluator_hash=evaluator_hash,
        settings=to_plain(dict(protocol)),
        answers=[],
        scores=[dict(c) for c in cells],
        images=image_rows(results),
    )
