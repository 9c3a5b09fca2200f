"""T2I-CompBench++'s calls in the refresh: choosing its prompts from the shipped suite, judging a model's images by
each category's rule (``step_t2i_compbench``), its tables (``step_t2i_compbench_scores``) and its rows for the
store write (``step_t2i_compbench_rows``).

Plain functions like every step (``t2ibench.pipeline.steps``): their parameters' roles are read off their
signatures, so their cache keys, T2I-CompBench++'s own evaluation version and its protocol record are derived,
never listed. ``STEPS`` is what the benchmark adds to the refresh (``T2ICompBenchBenchmark.refresh_steps``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from t2ibench.benchmarks.t2i_compbench.evaluate import CompImage, CompScan, judge_with, read_results
from t2ibench.benchmarks.t2i_compbench.options import T2ICompBenchConfig, T2ICompBenchPrompts
from t2ibench.benchmarks.t2i_compbench.rows import evaluation_rows, one_protocol, prompt_record, score_rows
from t2ibench.benchmarks.t2i_compbench.suite import Prompt, Suite, load_suite, select
from t2ibench.errors import InputError
from t2ibench.hashing import file_digest
from t2ibench.pipeline.identity import Device, Out, Progress, StepSpec
from t2ibench.pipeline.results import BenchmarkScores, Generated, Judged, LocalFiles, PromptSet
from t2ibench.pipeline.stamps import check_stamp
from t2ibench.store import BenchmarkRows


def select_t2i_compbench(selection: T2ICompBenchPrompts) -> PromptSet:
    """T2I-CompBench++'s prompts a refresh runs (``benchmarks.t2i_compbench``): the shipped suite (verified against
    its pinned SHA-256 when read), its chosen categories' first ``per_category`` prompts, each record keyed by the
    prompt's index in the whole suite (0..2399, categories in the benchmark's order)."""
    suite = load_suite()
    chosen = select(suite, selection.categories, selection.per_category)
    return PromptSet.of([(p.index, prompt_record(p)) for p in chosen])


def selected_prompts(prompts: PromptSet) -> tuple[Suite, list[Prompt]]:
    """The suite and the prompts of ``prompts``, read again: refused when the shipped suite no longer holds them."""
    suite = load_suite()
    chosen = []
    for index, record in prompts:
        prompt = suite.prompts[index] if 0 <= index < len(suite.prompts) else None
        if prompt is None or prompt_record(prompt) != record:
            raise InputError(f"T2I-CompBench++ prompt {index}: not the one selected ({record.get('prompt')!r})")
        chosen.append(prompt)
    return suite, chosen


def step_t2i_compbench(
    t2i_compbench: T2ICompBenchConfig,
    generated: Generated,
    prompts: PromptSet,
    weights: LocalFiles,
    phrases: LocalFiles,
    out: Out,
    names_from: Out,
    device: Device = "auto",
    show_progress: Progress = False,
) -> Judged:
    """Judge every image of ``generated`` (those of ``prompts``) by its category's rule; writes the results file
    ``out`` (resuming a partial one); results name each image relative to ``names_from`` (the workspace).
    ``weights`` stamps the models given as local folders, ``phrases`` the phrase table given as a file (its resolved
    path is the one read)."""
    check_stamp(weights)
    check_stamp(phrases)
    if t2i_compbench.phrases is not None:
        t2i_compbench = dataclasses.replace(t2i_compbench, phrases=phrases.path)
    suite, chosen = selected_prompts(prompts)
    scan = CompScan.of_generated(generated, {p.index: p for p in chosen},
                                 lambda prompt, i: CompImage(prompt, i.sample, Path(i.path)),
                                 names_from=Path(names_from), label="T2I-CompBench++")  # fmt: skip
    results = judge_with(scan, t2i_compbench, suite=suite, out=Path(out), device=device, show_progress=show_progress)
    summary = {"images": len(results), "prompts": len({r.prompt_index for r in results})}
    summary["categories"] = len({r.category for r in results})
    return Judged(model=generated.model, results=str(out), sha256=file_digest(out), summary=summary)


def step_t2i_compbench_scores(judged: Judged, prompts: PromptSet, ci_level: float) -> BenchmarkScores:
    """T2I-CompBench++'s table of a model version from its judged images: each category's score and the mean over
    the judged categories (×100), with bootstrap intervals over prompts at ``ci_level``, and the one protocol its
    images were judged under."""
    results = read_results(judged.checked())
    protocol = one_protocol(results, list(prompts))
    rows = tuple(score_rows(results, level=ci_level))
    return BenchmarkScores(model=judged.model, benchmark="t2i_compbench", rows=rows, protocol=protocol, level=ci_level)


def step_t2i_compbench_rows(
    model: str, images: Generated, judged: Judged, scores: BenchmarkScores, evaluator_hash: str
) -> BenchmarkRows:
    """T2I-CompBench++'s rows for the store write of a model version (``rows.evaluation_rows``, as ``t2ibench
    evaluate --store`` makes them), under its own evaluation version ``evaluator_hash``: refused when the results
    file changed since it was judged or an image of ``images`` has no result."""
    results = read_results(judged.checked())
    images.check_judged({(r.prompt_index, r.sample) for r in results}, "T2I-CompBench++ result")
    return evaluation_rows(results, scores.rows, scores.protocol, evaluator_hash)


STEPS = {
    "t2i_compbench": StepSpec(step_t2i_compbench),
    "t2i_compbench-scores": StepSpec(step_t2i_compbench_scores, cheap=True),
    "t2i_compbench-rows": StepSpec(step_t2i_compbench_rows, cached=False, cheap=True),
}
"""T2I-CompBench++'s steps in the refresh, by task name."""
