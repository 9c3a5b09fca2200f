"""GenEval's steps in the refresh: judge a model's images (per prompt shard), join the shards' verdicts, and
Table 2 with its intervals. Plain functions: their typed parameters are their cache keys, versions and protocol
(``t2ibench.pipeline.identity``); ``STEPS`` declares them, the registry entry hands them to the refresh."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from t2ibench.benchmarks.geneval.options import GenEvalConfig, GenEvalSuite
from t2ibench.config import SelftestConfig
from t2ibench.errors import InputError
from t2ibench.hashing import file_digest
from t2ibench.pipeline.identity import Device, Out, Progress, StepSpec
from t2ibench.pipeline.results import Generated, Judged, LocalFiles, PromptSet, SelfTest, TaskScores
from t2ibench.pipeline.stamps import check_stamp
from t2ibench.suites.selection import select_indices


def select_prompts(suite: GenEvalSuite) -> PromptSet:
    """The suite's prompts as (index, record) pairs, restricted by ``prompts`` and/or ``limit_per_task``."""
    from t2ibench.benchmarks.geneval.suite import generate_suite

    records = generate_suite(seed=suite.seed, per_task=suite.per_task, classes=suite.classes)
    selected = select_indices(records, suite.prompts, where="geneval.prompts")
    if suite.limit_per_task is not None:
        counts: dict[str, int] = {}
        kept = []
        for i, r in selected:
            if counts.get(r["tag"], 0) < suite.limit_per_task:
                counts[r["tag"]] = counts.get(r["tag"], 0) + 1
                kept.append((i, r))
        selected = kept
    if not selected:
        raise InputError("geneval: the prompt selection is empty")
    return PromptSet.of(selected)


def check_wording(wording: str, config: Any, *, where: str) -> None:
    """InputError naming ``where`` unless a model of ``config`` can be given GenEval's prompts in ``wording``: the
    rewrites are of the official suite's 553 prompts (seed 43, 100 per task, no class subset; a subset of its prompts
    is fine), and the structure embedder reads templated prompts back, so it cannot embed them."""
    from t2ibench.benchmarks.geneval.suite import WORDINGS

    if wording == WORDINGS[0]:
        return
    if wording not in WORDINGS:
        raise InputError(f"{where}: GenEval has no {wording!r} prompts (choose from: {', '.join(WORDINGS)})")
    suite: GenEvalSuite = config.spine_prompts
    if not suite.official:
        raise InputError(
            f"{where}: {wording} prompts exist for GenEval's official suite only (benchmarks.geneval: seed 43, "
            f"per_task 100, no classes; a subset by prompts or limit_per_task is fine); got seed {suite.seed}, "
            f"per_task {suite.per_task}" + (f", classes {list(suite.classes)}" if suite.classes else "")
        )
    if config.evaluators.clip.backend == "mobilenet+structure":
        raise InputError(
            f"{where}: the structure embedder (evaluators.clip backend mobilenet+structure) reads GenEval's templated "
            f"prompts back and cannot read {wording} ones; use a text encoder (backend open_clip)"
        )


def reword_prompts(prompts: PromptSet, wording: str, config: Any, workspace: Any, *, where: str) -> PromptSet:
    """``prompts`` (GenEval's, selected by ``config``'s ``benchmarks.geneval``) with each record's text in
    ``wording`` (``check_wording``): the first as they are, 'rewritten' from the workspace's rewritten file
    (``read_rewritten``: every line checked to be its official record's rewrite)."""
    from t2ibench.benchmarks.geneval.suite import WORDINGS, read_rewritten

    check_wording(wording, config, where=where)
    if wording == WORDINGS[0]:
        return prompts
    suite: GenEvalSuite = config.spine_prompts
    path = workspace.path(suite.rewritten)
    if not path.is_file():
        raise InputError(
            f"{where}: {path}: no rewritten prompt file (benchmarks.geneval.rewritten); `t2ibench data fetch "
            "geneval_rewritten --out data/external/geneval_rewritten` fetches the pinned one (a refresh does so itself)"
        )
    texts = read_rewritten(path)
    return PromptSet.of([(i, {**r, "prompt": texts[i]}) for i, r in prompts])


def step_geneval(
    geneval: GenEvalConfig,
    generated: Generated,
    prompts: PromptSet,
    weights: LocalFiles,
    out: Out,
    names_from: Out,
    device: Device = "auto",
    show_progress: Progress = False,
) -> Judged:
    """Detect, colour and judge every image of ``generated`` (those of ``prompts``); writes the results file ``out``
    (a model version's, or one prompt shard's that ``merge_judged`` joins), resuming a partial one. Results name
    each image by its path relative to ``names_from`` (the workspace), so the file is the same in every clone;
    ``weights`` stamps the detector's and colour model's local files, if any."""
    from t2ibench.benchmarks.geneval.evaluate import FolderScan, ImageItem, judge_scan, summarise

    check_stamp(weights)
    records = prompts.by_index()
    items = tuple(
        ImageItem(i.prompt_index, f"{i.sample:05d}", Path(i.path), records[i.prompt_index])
        for i in generated.images
        if i.prompt_index in records
    )
    scan = FolderScan(
        root=Path(generated.folder),
        items=items,
        expected_prompts=len(records),
        found_prompts=len({i.prompt_index for i in items}),
        expected_images=len(items),
        names_from=names_from,
    )
    rows = judge_scan(scan, geneval, out=out, device=device, show_progress=show_progress)
    return Judged(model=generated.model, results=str(out), sha256=file_digest(out), summary=summarise(rows).to_dict())


def merge_judged(shards: list[Judged], out: Out) -> Judged:
    """The model version's results file ``out`` from its shards' files, joined in shard order: byte for byte the
    file an unsharded run writes (each shard's rows are in folder order, and shards are consecutive prompt ranges).
    The file is rewritten only when its bytes change; a shard file that changed since its verdicts were made is
    refused."""
    from t2ibench.benchmarks.geneval.evaluate import read_results, summarise
    from t2ibench.io import write_bytes_atomic

    if not shards:
        raise InputError("no GenEval shards to merge")
    model = shards[0].model
    chunks = []
    for part in shards:
        if part.model != model:
            raise InputError(f"{model}: cannot merge the GenEval shard of {part.model} ({part.results})")
        path = Path(part.results)
        if not path.is_file() or file_digest(path) != part.sha256:
            raise InputError(f"{path}: this GenEval shard's file is missing or changed since it was judged")
        chunks.append(path.read_bytes())
    data = b"".join(chunks)
    if not out.is_file() or out.read_bytes() != data:
        write_bytes_atomic(out, data)
    rows = read_results(out)
    return Judged(model=model, results=str(out), sha256=file_digest(out), summary=summarise(rows).to_dict())


def step_scores(judged: Judged, ci_level: float) -> TaskScores:
    """GenEval's Table 2 of a model version from its verdicts: accuracy per task and overall, with bootstrap
    intervals over prompts at ``ci_level``."""
    from t2ibench.benchmarks.geneval.evaluate import read_results
    from t2ibench.benchmarks.geneval.metrics import table2_rows

    results = read_results(judged.checked())
    rows = table2_rows(((r.tag, r.correct, r.prompt) for r in results), level=ci_level)
    return TaskScores(model=judged.model, rows=tuple(rows), level=ci_level)


def photo_truth_digest() -> str:
    """SHA-256 of the built-in photo truth set's bytes (what the self-test's photo verdicts were measured against)."""
    from t2ibench.benchmarks.geneval.suite_photos import load_photo_truth

    return load_photo_truth().sha256


def step_selftest(
    geneval: GenEvalConfig,
    selftest: SelftestConfig,
    photo_truth: str | None,
    weights: LocalFiles,
    out: Out,
    device: Device = "auto",
    show_progress: Progress = False,
) -> SelfTest:
    """The GenEval evaluator ``geneval`` measured by its ``selftest`` (compositor images into ``out``, and the
    built-in photo truth set whose bytes have SHA-256 ``photo_truth``; None: compositor only), at its own thresholds."""
    from t2ibench.benchmarks.geneval.evaluate import build_models
    from t2ibench.benchmarks.geneval.selftest import run_selftest
    from t2ibench.benchmarks.geneval.suite_photos import load_photo_truth

    check_stamp(weights)
    photos = None
    if photo_truth is not None:
        photos = load_photo_truth()
        if photos.sha256 != photo_truth:
            raise InputError(f"{photos.path}: changed while this refresh ran (its SHA-256 is part of the key)")
    report = run_selftest(
        *build_models(geneval, device=device),
        geneval.params,
        out,
        per_task=selftest.per_task,
        images_per_prompt=selftest.images_per_prompt,
        variants=selftest.variants,
        seed=selftest.seed,
        photos=photos,
        show_progress=show_progress,
    )
    return SelfTest(report=report.to_dict())


STEPS: dict[str, StepSpec] = {
    "geneval": StepSpec(step_geneval, protocol=True),
    "verdicts": StepSpec(merge_judged, cached=False, cheap=True),
    "scores": StepSpec(step_scores, cheap=True, protocol=True),
    "selftest": StepSpec(step_selftest),
}
"""GenEval's steps, by task name (its column in the run summary: ``geneval``)."""
