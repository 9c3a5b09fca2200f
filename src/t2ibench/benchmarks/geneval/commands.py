"""GenEval's own verbs: ``prompts`` (write its suite), ``selftest`` (its evaluator against known truth), ``summary``
(Table 2 of a results.jsonl, ours or the reference's), ``agreement`` (human agreement with its verdicts) and
``failures`` (its failure patterns of stored models)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from t2ibench.benchmarks.geneval.benchmark import GenEvalBenchmark
from t2ibench.benchmarks.geneval.benchmark_cli import (
    COLOUR_OPTIONS,
    DETECTOR_OPTIONS,
    evaluator_inputs,
    evaluator_options,
    geneval_config,
    suite_options,
    suite_records,
)
from t2ibench.commands.common import EXIT_FAILED, EXIT_OK, Device, write_json
from t2ibench.commands.evaluate import check_models
from t2ibench.commands.flows import checkout, run_flow
from t2ibench.commands.store import StoreChoice, store_path
from t2ibench.config import SelftestConfig
from t2ibench.errors import InputError
from t2ibench.fields import Option, Range
from t2ibench.options import add_fields, from_args
from t2ibench.specs import MAX_SEED


@dataclass(frozen=True)
class PromptsRequest:
    """``t2ibench prompts geneval``: where the suite its options name is written (the suite's options are
    ``GenEvalSuite``'s fields)."""

    suite: Annotated[Literal["geneval"], Option(positional=True)]
    """The benchmark whose suite is written."""
    out: str | None = None
    """Write JSON lines here (default: standard output)."""


@dataclass(frozen=True)
class SelftestRequest:
    """``t2ibench selftest``: the compositor's suite, the truth sets and the calibration (the evaluator's options
    are its sections' fields: ``benchmark_cli.evaluator_options``)."""

    out: str
    """Folder for the images, selftest.json/.md, calibrated.yaml."""
    per_task: Annotated[int, Range(1, 1000)] = 20
    """Prompts per task."""
    images_per_prompt: Annotated[int, Range(1, 100)] = 2
    """Images per prompt."""
    variants: str = ",".join(SelftestConfig.variants)
    """Compositor variants, comma-separated."""
    seed: Annotated[int, Range(0, MAX_SEED)] = 0
    """Seed of the compositor and of the folds."""
    calibrate: Annotated[int | None, Range(2, 100), Option(metavar="K")] = None
    """Also calibrate, K folds."""
    photo_truth: Annotated[str | None, Option(metavar="FILE", exclusive="photos")] = None
    """A photo truth set of the built-in's shape (default: the built-in)."""
    no_photos: Annotated[bool, Option(exclusive="photos")] = False
    """Judge the compositor set only."""
    quiet: bool = False
    """No progress bar."""


@dataclass(frozen=True)
class SummaryRequest:
    """``t2ibench summary``: a results.jsonl and how strictly it must cover the suite (the suite's options are
    ``GenEvalSuite``'s fields and ``SuiteFile``'s)."""

    results: Annotated[str, Option(positional=True)]
    """A results.jsonl, ours or the reference's."""
    images_per_prompt: Annotated[int, Range(1, 10_000)] = GenEvalBenchmark.images_per_prompt
    """Expected images per prompt."""
    allow_missing: bool = False
    """Exit 0 even if the results miss prompts."""
    json: str | None = None
    """Also write the summary as JSON."""


@dataclass(frozen=True)
class AgreementMode:
    """How ``t2ibench agreement`` runs (its analysis is ``AgreementRequest``'s fields)."""

    flow: bool = False
    """Run it as the workspace's Prefect flow human_agreement (from a checkout; needs --metadata and --out): the
    same files."""


def _cmd_prompts(args: argparse.Namespace) -> int:
    from t2ibench.benchmarks.geneval.suite import suite_jsonl, write_suite

    req = from_args(PromptsRequest, args, args.request_options)
    records = suite_records(args)
    if req.out:
        from t2ibench.paths import refuse_output

        refuse_output(req.out, flag="--out")  # e.g. never over a results store
        write_suite(req.out, records)
        tags: dict[str, int] = {}
        for r in records:
            tags[r["tag"]] = tags.get(r["tag"], 0) + 1
        summary = ", ".join(f"{t} {n}" for t, n in tags.items())
        print(f"wrote {len(records)} prompts to {req.out} ({summary})", file=sys.stderr)
    else:
        sys.stdout.write(suite_jsonl(records))
    return EXIT_OK


def _cmd_selftest(args: argparse.Namespace) -> int:
    from t2ibench.benchmarks.geneval.evaluate import build_models
    from t2ibench.benchmarks.geneval.selftest import render_selftest, run_selftest, write_selftest
    from t2ibench.models.compositor import parse_variant

    req = from_args(SelftestRequest, args, args.request_options)
    cfg = geneval_config(args)
    variants = [v.strip() for v in req.variants.split(",") if v.strip()]
    for v in variants:
        parse_variant(v)
    from t2ibench.benchmarks.geneval.suite_photos import load_photo_truth
    from t2ibench.paths import refuse_output

    written = {v.replace(":", "-") for v in variants} | {"selftest.json", "selftest.md", "calibrated.yaml", "photos"}
    from t2ibench.paths import place

    truth_file = [place("--photo-truth", req.photo_truth)] if req.photo_truth and Path(req.photo_truth).exists() else []
    inputs = evaluator_inputs(args) + truth_file
    refuse_output(req.out, flag="--out", inputs=inputs, tree=True, covers=lambda rel: rel.parts[0] in written)
    photos = None if req.no_photos else load_photo_truth(req.photo_truth)
    check_models((cfg.detector, DETECTOR_OPTIONS), (cfg.colour, COLOUR_OPTIONS))
    detector, colour = build_models(cfg, device=args.device)
    report = run_selftest(
        detector,
        colour,
        cfg.params,
        Path(req.out),
        per_task=req.per_task,
        images_per_prompt=req.images_per_prompt,
        variants=variants,
        seed=req.seed,
        calibrate_folds=req.calibrate,
        photos=photos,
        show_progress=not req.quiet,
    )
    files = write_selftest(report, req.out)
    print(render_selftest(report), end="")
    print(f"wrote {', '.join(str(f) for f in files)}", file=sys.stderr)
    return EXIT_OK


def _cmd_summary(args: argparse.Namespace) -> int:
    from t2ibench.benchmarks.geneval.evaluate import read_results, summarise
    from t2ibench.benchmarks.geneval.report import render_summary
    from t2ibench.paths import place, refuse_outputs

    req = from_args(SummaryRequest, args, args.request_options)
    refuse_outputs([place("--json", req.json)], [place("RESULTS", req.results), place("--metadata", args.metadata)])
    rows = read_results(req.results)
    suite = suite_records(args)
    roots = sorted({str(Path(r.filename).parents[2]) for r in rows if r.prompt_index is not None})
    if len(roots) > 1:
        shown = ", ".join(roots[:3]) + (" ..." if len(roots) > 3 else "")
        raise InputError(
            f"{req.results}: results for images under {len(roots)} folders ({shown}); a summary is of one "
            "model's folder: split the file"
        )
    keys = {json.dumps(r, sort_keys=True): i for i, r in enumerate(suite)}
    per_prompt: dict[int, int] = {}
    unknown = 0
    for row in rows:
        index = row.prompt_index
        if (
            index is None
            or index >= len(suite)
            or json.dumps(dict(row.metadata), sort_keys=True) != json.dumps(suite[index], sort_keys=True)
        ):
            index = keys.get(json.dumps(dict(row.metadata), sort_keys=True))
        if index is None:
            unknown += 1
            continue
        per_prompt[index] = per_prompt.get(index, 0) + 1
    missing = [i for i in range(len(suite)) if i not in per_prompt]
    odd = {i: n for i, n in per_prompt.items() if req.images_per_prompt and n != req.images_per_prompt}
    print(
        f"{req.results}: prompts expected {len(suite)}, found {len(per_prompt)}; images expected "
        f"{len(suite) * req.images_per_prompt if req.images_per_prompt else '?'}, found {len(rows)}",
        file=sys.stderr,
    )
    problems = bool(missing or odd or unknown)
    if missing:
        shown = ", ".join(f"{i:05d}" for i in missing[:20]) + (" ..." if len(missing) > 20 else "")
        print(f"missing prompts ({len(missing)}): {shown}", file=sys.stderr)
    if odd:
        shown = ", ".join(f"{i:05d}: {n}" for i, n in list(odd.items())[:20])
        print(f"prompts with other than {req.images_per_prompt} images ({len(odd)}): {shown}", file=sys.stderr)
    if unknown:
        print(f"results whose prompt is not in the suite: {unknown}", file=sys.stderr)
    summary = summarise(rows)
    print(render_summary(summary, label=Path(req.results).parent.name or str(req.results)))
    if req.json:
        write_json(Path(req.json), summary.to_dict())
    if problems and not req.allow_missing:
        print("t2ibench summary: results do not cover the suite; pass --allow-missing to accept", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def add_prompts(verbs: Any) -> None:
    """``t2ibench prompts``: its options, ``GenEvalSuite``'s fields and ``PromptsRequest``'s."""

    prompts = verbs.add_parser("prompts", help="write a prompt suite (GenEval: the official 553 prompts by default)")
    suite_options(prompts, metadata=False, wording=True)
    options = add_fields(prompts, PromptsRequest)
    prompts.set_defaults(func=_cmd_prompts, request_options=options)


def add_selftest(verbs: Any) -> None:
    """``t2ibench selftest``: its options, ``SelftestRequest``'s fields and the evaluator's sections'."""

    selftest = verbs.add_parser(
        "selftest",
        help="measure a GenEval evaluator against construction truth and real photographs, optionally calibrate it",
        description="Compose a GenEval suite over the compositor's classes with a faithful and a sloppy model, judge "
        "every image with the evaluator given by the options, and report per task the agreement with the truth, "
        "the false pass and false fail rates and the false passes on absent objects; then the same on the bundled "
        "real-photograph truth set (reviewed truth), scored separately. --calibrate K also tunes the two score "
        "thresholds (correct verdicts on images and absent-object probes, each truth set weighing the same) and "
        "reports the agreement held out by K-fold cross-validation over prompts and over images.",
    )
    options = add_fields(selftest, SelftestRequest, skip=("quiet",))
    evaluator_options(selftest, device=Device)
    options += add_fields(selftest, SelftestRequest, only=("quiet",))
    selftest.set_defaults(func=_cmd_selftest, request_options=options)


def add_summary(verbs: Any) -> None:
    """``t2ibench summary``: its options, ``GenEvalSuite``'s and ``SuiteFile``'s fields and ``SummaryRequest``'s."""

    summary = verbs.add_parser("summary", help="GenEval Table-2 summary of a results.jsonl (ours or the reference's)")
    suite_options(summary, metadata=True, wording=True)
    options = add_fields(summary, SummaryRequest)
    summary.set_defaults(func=_cmd_summary, request_options=options)


def _cmd_agreement(args: argparse.Namespace) -> int:
    from t2ibench.benchmarks.geneval.agreement import run_agreement
    from t2ibench.benchmarks.geneval.report_agreement import render_agreement, write_agreement
    from t2ibench.paths import place, refuse_outputs

    if args.out:  # the files write_agreement makes
        inputs = [place("--annotations", a) for a in args.annotations]
        inputs += [place("--auto", part) for a in args.auto or [] for part in {a, a.split("=", 1)[-1]}]
        inputs += [place("--metadata", args.metadata), place("--scores", args.scores)]
        names = ("agreement.json", "agreement.md", "metrics.json")
        refuse_outputs([place("--out", Path(args.out) / name) for name in names], inputs)
    if args.store:  # a damaged store is refused before the analysis (in-process or as the flow), not after it
        from t2ibench.store import Store

        Store(args.store).verify()
    if args.flow:
        return _agreement_flow(args)
    run = run_agreement(
        args.annotations,
        suite_records(args),
        auto=args.auto or [],
        auto_label=args.auto_label,
        scores=args.scores,
        folds=args.folds,
        seed=args.seed_cv,
        resamples=args.resamples,
        ci_level=args.ci_level,
        ci_seed=args.seed_ci,
    )
    for load in run.loads:
        print(load.summary(), file=sys.stderr)
    print(render_agreement(run.report))
    if args.out:
        files = write_agreement(run, args.out)
        print(f"wrote {', '.join(str(f) for f in files)}", file=sys.stderr)
    if args.store:
        from t2ibench.benchmarks.geneval.agreement import store_agreement

        count = store_agreement(run, args.store)
        print(f"stored {count} annotations and the agreement statistics in {args.store}", file=sys.stderr)
    return EXIT_OK


def _agreement_flow(args: argparse.Namespace) -> int:
    """``agreement --flow``: the same analysis as the workspace's Prefect flow ``human_agreement``."""
    from t2ibench.benchmarks.geneval.options_agreement import AgreementRequest

    if not args.metadata:
        raise InputError("--flow reads the suite from a file: add --metadata evaluation_metadata.jsonl")
    if not args.out:
        raise InputError("--flow writes agreement.json, agreement.md and metrics.json: add --out DIR")
    from t2ibench.benchmarks.geneval.agreement import load_agreement_inputs

    # every input file read and checked now (under a second), not after the flow's start-up (≈ 15 s)
    load_agreement_inputs(args.annotations, suite_records(args), auto=args.auto or [], scores=args.scores)
    request = from_args(AgreementRequest, args, args.request_options)
    root = checkout(Path.cwd(), request.program)  # paths stay as given: the flow runs in this folder
    return run_flow(root, request, cwd=root, program="t2ibench agreement")


def add_agreement(verbs: Any) -> None:
    """``t2ibench agreement``: its options (defaults from the typed classes)."""
    from t2ibench.benchmarks.geneval.options_agreement import AgreementRequest

    agree = verbs.add_parser(
        "agreement",
        help="human verdicts, inter-annotator and automatic-vs-human agreement from GenEval's MTurk annotations",
    )
    # the request's fields are the options (--metadata and --out only the flow needs), beside GenEval's suite
    options = add_fields(agree, AgreementRequest, optional=("metadata", "out"))
    suite_options(agree, metadata=False, wording=False)
    add_fields(agree, AgreementMode)
    agree.set_defaults(func=_cmd_agreement, request=AgreementRequest, request_options=options)


@dataclass(frozen=True, kw_only=True)
class FailuresRequest(StoreChoice):
    """``t2ibench failures``: the stored models whose GenEval failures are shown."""

    model: Annotated[tuple[str, ...], Option(repeat=True)] = ()
    """A stored model (repeatable; default: every current model)."""


def _cmd_failures(args: argparse.Namespace) -> int:
    from t2ibench.benchmarks.geneval import report_failures as failures
    from t2ibench.store import Store

    req = from_args(FailuresRequest, args, args.request_options)
    store = Store(store_path(req), timeout=req.wait)
    data = failures.collect(store, list(req.model) or None)
    models = list(req.model) or sorted({r["model"] for r in data["summary"]})
    if not models:
        raise InputError(f"{store.path}: no completed model yet")
    print("\n".join(failures.headline_markdown(data, m) for m in models), end="")
    return EXIT_OK


def add_failures(verbs: Any) -> None:
    """``t2ibench failures``: its options, ``FailuresRequest``'s fields."""

    fail = verbs.add_parser(
        "failures",
        help="where a model fails GenEval: position confusion, colour swaps, counting errors, missing objects",
    )
    options = add_fields(fail, FailuresRequest, only=("model",))  # the models first, then the store's choice
    options += add_fields(fail, FailuresRequest, skip=("model",))
    fail.set_defaults(func=_cmd_failures, request_options=options)


def add_verbs(verbs: Any) -> None:
    """GenEval's own verbs on the ``t2ibench`` subparsers ``verbs`` (the command line gathers every registered
    benchmark's ``commands.add_verbs``)."""
    add_prompts(verbs)
    add_selftest(verbs)
    add_summary(verbs)
    add_agreement(verbs)
    add_failures(verbs)
