"""GenEval 2's calls in the refresh: choosing its prompts from the suite file, judging a model's images with the VQA
judge (``step_geneval2``) and its tables (``step_geneval2_scores``).

Plain functions like every step (``t2ibench.pipeline.steps``): their parameters' roles are read off their
signatures, so their cache keys, GenEval 2's own evaluation version and its protocol record are derived, never
listed. ``STEPS`` is what the benchmark adds to the refresh (``Geneval2Benchmark.refresh_steps``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from t2ibench.benchmarks import benchmark_score_rows
from t2ibench.benchmarks.geneval2.evaluate import (
    Geneval2Image,
    Geneval2Scan,
    check_one_protocol,
    judge_with,
    prompt_set_digest,
    read_results,
    summarise,
)
from t2ibench.benchmarks.geneval2.options import GENEVAL2_DATA, Geneval2Config, Geneval2Prompts
from t2ibench.benchmarks.geneval2.rows import evaluation_rows
from t2ibench.benchmarks.geneval2.suite import first_per_atom_count, read_geneval2, subset
from t2ibench.datasets import check_release_copy
from t2ibench.errors import InputError, note
from t2ibench.hashing import file_digest
from t2ibench.pipeline.identity import Device, Out, Progress, StepSpec
from t2ibench.pipeline.results import BenchmarkScores, Generated, Judged, LocalFiles, PromptSet, SuiteFile
from t2ibench.pipeline.stamps import check_stamp
from t2ibench.store import BenchmarkRows
from t2ibench.suites.selection import select_indices


def select_geneval2(selection: Geneval2Prompts, path: Path) -> tuple[PromptSet, SuiteFile]:
    """GenEval 2's prompts chosen by ``selection`` from the suite file ``path`` (each record the publisher's line,
    keyed by its 0-based index; the release's shape checked unless a subset is chosen) and the file's stamp."""
    if not path.is_file() and selection.data != GENEVAL2_DATA:
        raise InputError(f"benchmarks.geneval2.data {selection.data}: no such file ({path})")
    if not path.is_file():
        raise InputError(
            f"{path}: GenEval 2's suite is not in the workspace (benchmarks.geneval2.data): run "
            "`t2ibench data fetch geneval2` (offline: --from DIR, or $T2IBENCH_GENEVAL2_DATA=DIR), or "
            "`dvc repro geneval2_data`"
        )
    if selection.data == GENEVAL2_DATA:  # the release's own place holds the release, checked at every read
        check_release_copy("geneval2", path, where="benchmarks.geneval2.data")
    suite = read_geneval2(path, full=selection.per_atom_count is None and selection.prompts is None)
    if not suite.released:
        note(
            f"benchmarks.geneval2.data {selection.data}: not GenEval 2's released file (SHA-256 {suite.sha256[:16]}…); "
            "its GenEval 2 numbers are stored and shown as measured on another suite"
        )
    chosen = list(range(len(suite.prompts)))
    if selection.prompts is not None:
        chosen = [i for i, _ in select_indices(suite.prompts, selection.prompts, where="benchmarks.geneval2.prompts")]
    if selection.per_atom_count is not None:
        first = set(first_per_atom_count(suite, selection.per_atom_count))
        chosen = [i for i in chosen if i in first]
    if not chosen:
        raise InputError("benchmarks.geneval2: the prompt selection is empty")
    return PromptSet.of([(i, suite.prompts[i].record()) for i in chosen]), SuiteFile(str(path), suite.sha256)


def selected_geneval2(prompts: PromptSet, suite: SuiteFile) -> Any:
    """The suite (``Geneval2Suite``) of the selected prompts, read again from its file: refused when the file
    changed since the prompts were selected from it (its SHA-256) or no longer holds them."""
    read = read_geneval2(suite.path, full=False)
    if read.sha256 != suite.sha256:
        raise InputError(f"{suite.path}: the GenEval 2 suite file changed since the prompts were selected from it")
    chosen = subset(read, [i for i, _ in prompts])
    for (i, record), prompt in zip(prompts, chosen.prompts, strict=True):
        if prompt.record() != record:
            raise InputError(f"{suite.path}:{prompt.line}: prompt {i} is not the one selected")
    return chosen


def step_geneval2(
    geneval2: Geneval2Config,
    generated: Generated,
    prompts: PromptSet,
    suite: SuiteFile,
    weights: LocalFiles,
    out: Out,
    names_from: Out,
    device: Device = "auto",
    show_progress: Progress = False,
) -> Judged:
    """Ask the VQA judge every question of GenEval 2 about every image of ``generated`` (those of ``prompts``);
    writes the results file ``out`` (resuming a partial one); results name each image relative to ``names_from``
    (the workspace); ``weights`` stamps the judge's local weights, if any."""
    check_stamp(weights)
    chosen = selected_geneval2(prompts, suite)
    scan = Geneval2Scan.of_generated(generated, {p.index: p for p in chosen.prompts},
                                     lambda prompt, i: Geneval2Image(prompt, f"{i.sample:05d}", Path(i.path)),
                                     names_from=Path(names_from), label="GenEval 2")  # fmt: skip
    rows = judge_with(scan, geneval2, suite=chosen, out=out, device=device, show_progress=show_progress)
    summary = {"images": len(rows), "prompts": len({r.prompt_index for r in rows})}
    summary["questions"] = sum(len(r.questions) for r in rows)
    return Judged(model=generated.model, results=str(out), sha256=file_digest(out), summary=summary)


def step_geneval2_scores(judged: Judged, prompts: PromptSet, ci_level: float) -> BenchmarkScores:
    """GenEval 2's tables of a model version from its answers (overall ×100, per skill AM, per atom count GM), with
    bootstrap intervals over prompts at ``ci_level``, and the one protocol its answers were measured under."""
    results = read_results(judged.checked())
    tables = summarise(results, level=ci_level)
    protocol = {**check_one_protocol(results), "prompt_set": prompt_set_digest(list(prompts))}
    rows = tuple(benchmark_score_rows(tables, "geneval2"))
    return BenchmarkScores(model=judged.model, benchmark="geneval2", rows=rows, protocol=protocol, level=ci_level)


def step_geneval2_rows(
    model: str, images: Generated, judged: Judged, scores: BenchmarkScores, evaluator_hash: str
) -> BenchmarkRows:
    """GenEval 2's rows for the store write of a model version (``evaluation_rows``, as ``t2ibench evaluate
    --store`` makes them), under its own evaluation version ``evaluator_hash``: refused when the answers file
    changed since it was judged or an image of ``images`` has no answers."""
    answered = read_results(judged.checked())
    images.check_judged({(r.prompt_index, int(r.sample)) for r in answered}, "GenEval 2 answers")
    return evaluation_rows(answered, scores.rows, scores.protocol, evaluator_hash)


STEPS = {
    "geneval2": StepSpec(step_geneval2),
    "geneval2-scores": StepSpec(step_geneval2_scores, cheap=True),
    "geneval2-rows": StepSpec(step_geneval2_rows, cached=False, cheap=True),
}
"""GenEval 2's steps in the refresh, by task name."""
