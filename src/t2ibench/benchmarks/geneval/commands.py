"""GenEval's own verbs: ``prompts`` (write its suite), ``selftest`` (its evaluator against known truth), ``summary``
(Table 2 of a results.jsonl, ours or the reference's) and ``agreement`` (human agreement with its verdicts)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from t2ibench.benchmarks.geneval.benchmark_cli import (
    COLOUR_OPTIONS,
    DETECTOR_OPTIONS,
    SEED,
    evaluator_inputs,
    evaluator_options,
    geneval_config,
    suite_options,
    suite_records,
)
from t2ibench.commands.common import EXIT_FAILED, EXIT_OK, write_json
from t2ibench.commands.evaluate import check_models
from t2ibench.commands.flows import checkout, run_flow
from t2ibench.errors import InputError
from t2ibench.options import add_fields, from_args, int_from


def _cmd_prompts(args: argparse.Namespace) -> int:
    from t2ibench.benchmarks.geneval.suite import suite_jsonl, write_suite

    records = suite_records(args)
    if args.out:
        from t2ibench.paths import refuse_output

        refuse_output(args.out, flag="--out")  # e.g. never over a results store
        write_suite(args.out, records)
        tags: dict[str, int] = {}
        for r in records:
            tags[r["tag"]] = tags.get(r["tag"], 0) + 1
        summary = ", ".join(f"{t} {n}" for t, n in tags.items())
        print(f"wrote {len(records)} prompts to {args.out} ({summary})", file=sys.stderr)
    else:
        sys.stdout.write(suite_jsonl(records))
    return EXIT_OK


def _cmd_selftest(args: argparse.Namespace) -> int:
    from t2ibench.benchmarks.geneval.selftest import render_selftest, run_selftest, write_selftest
    from t2ibench.models.compositor import parse_variant
    from t2ibench.models.registry import COLOUR_CLASSIFIERS, DETECTORS

    cfg = geneval_config(args)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    for v in variants:
        parse_variant(v)
    from t2ibench.benchmarks.geneval.suite_photos import load_photo_truth
    from t2ibench.paths import refuse_output

    written = {v.replace(":", "-") for v in variants} | {"selftest.json", "selftest.md", "calibrated.yaml", "photos"}
    from t2ibench.paths import place

    truth_file = (
        [place("--photo-truth", args.photo_truth)] if args.photo_truth and Path(args.photo_truth).exists() else []
    )
    inputs = evaluator_inputs(args) + truth_file
    refuse_output(args.out, flag="--out", inputs=inputs, tree=True, covers=lambda rel: rel.parts[0] in written)
    photos = None if args.no_photos else load_photo_truth(args.photo_truth)
    check_models((cfg.detector, DETECTOR_OPTIONS), (cfg.colour, COLOUR_OPTIONS))
    detector = DETECTORS.build(cfg.detector.backend, cfg.detector, device=args.device)
    colour = COLOUR_CLASSIFIERS.build(cfg.colour.backend, cfg.colour, device=args.device)
    report = run_selftest(
        detector,
        colour,
        cfg.params,
        Path(args.out),
        per_task=args.per_task,
        images_per_prompt=args.images_per_prompt,
        variants=variants,
        seed=args.seed,
        calibrate_folds=args.calibrate,
        photos=photos,
        show_progress=not args.quiet,
    )
    files = write_selftest(report, args.out)
    print(render_selftest(report), end="")
    print(f"wrote {', '.join(str(f) for f in files)}", file=sys.stderr)
    return EXIT_OK


def _cmd_summary(args: argparse.Namespace) -> int:
    from t2ibench.benchmarks.geneval.evaluate import read_results, summarise
    from t2ibench.benchmarks.geneval.report import render_summary
    from t2ibench.paths import place, refuse_outputs

    refuse_outputs([place("--json", args.json)], [place("RESULTS", args.results), place("--metadata", args.metadata)])
    rows = read_results(args.results)
    suite = suite_records(args)
    roots = sorted({str(Path(r.filename).parents[2]) for r in rows if r.prompt_index is not None})
    if len(roots) > 1:
        shown = ", ".join(roots[:3]) + (" ..." if len(roots) > 3 else "")
        raise InputError(
            f"{args.results}: results for images under {len(roots)} folders ({shown}); a summary is of one "
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
    odd = {i: n for i, n in per_prompt.items() if args.images_per_prompt and n != args.images_per_prompt}
    print(
        f"{args.results}: prompts expected {len(suite)}, found {len(per_prompt)}; images expected "
        f"{len(suite) * args.images_per_prompt if args.images_per_prompt else '?'}, found {len(rows)}",
        file=sys.stderr,
    )
    problems = bool(missing or odd or unknown)
    if missing:
        shown = ", ".join(f"{i:05d}" for i in missing[:20]) + (" ..." if len(missing) > 20 else "")
        print(f"missing prompts ({len(missing)}): {shown}", file=sys.stderr)
    if odd:
        shown = ", ".join(f"{i:05d}: {n}" for i, n in list(odd.items())[:20])
        print(f"prompts with other than {args.images_per_prompt} images ({len(odd)}): {shown}", file=sys.stderr)
    if unknown:
        print(f"results whose prompt is not in the suite: {unknown}", file=sys.stderr)
    summary = summarise(rows)
    print(render_summary(summary, label=Path(args.results).parent.name or str(args.results)))
    if args.json:
        write_json(Path(args.json), summary.to_dict())
    if problems and not args.allow_missing:
        print("t2ibench summary: results do not cover the suite; pass --allow-missing to accept", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def add_prompts(verbs: Any) -> None:
    """``t2ibench prompts``: its options (defaults from the typed classes)."""

    prompts = verbs.add_parser("prompts", help="write a prompt suite (GenEval: the official 553 prompts by default)")
    prompts.add_argument("suite", choices=["geneval"])
    suite_options(prompts, metadata=False)
    prompts.add_argument("--out", help="write JSON lines here (default: standard output)")
    prompts.set_defaults(func=_cmd_prompts)


def add_selftest(verbs: Any) -> None:
    """``t2ibench selftest``: its options (defaults from the typed classes)."""

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
    selftest.add_argument("--out", required=True, help="folder for the images, selftest.json/.md, calibrated.yaml")
    selftest.add_argument("--per-task", type=int_from(1, 1000), default=20, help="prompts per task (20)")
    selftest.add_argument("--images-per-prompt", type=int_from(1, 100), default=2)
    selftest.add_argument(
        "--variants", default="faithful,sloppy:0.5", help="compositor variants, comma-separated (faithful,sloppy:0.5)"
    )
    selftest.add_argument("--seed", type=SEED, default=0, help="seed of the compositor and of the folds")
    selftest.add_argument("--calibrate", type=int_from(2, 100), metavar="K", help="also calibrate, K folds")
    photo_set = selftest.add_mutually_exclusive_group()
    photo_set.add_argument(
        "--photo-truth", metavar="FILE", help="a photo truth set of the built-in's shape (default: the built-in)"
    )
    photo_set.add_argument("--no-photos", action="store_true", help="judge the compositor set only")
    evaluator_options(selftest)
    selftest.add_argument("--quiet", action="store_true")
    selftest.set_defaults(func=_cmd_selftest)


def add_summary(verbs: Any) -> None:
    """``t2ibench summary``: its options (defaults from the typed classes)."""

    summary = verbs.add_parser("summary", help="GenEval Table-2 summary of a results.jsonl (ours or the reference's)")
    summary.add_argument("results")
    suite_options(summary, metadata=True)
    summary.add_argument("--images-per-prompt", type=int_from(1, 10_000), default=4)
    summary.add_argument("--allow-missing", action="store_true", help="exit 0 even if the results miss prompts")
    summary.add_argument("--json", help="also write the summary as JSON")
    summary.set_defaults(func=_cmd_summary)


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
    from t2ibench.requests import AgreementRequest

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
    from t2ibench.requests import AgreementRequest

    agree = verbs.add_parser(
        "agreement",
        help="human verdicts, inter-annotator and automatic-vs-human agreement from GenEval's MTurk annotations",
    )
    # the request's fields are the options (--metadata and --out only the flow needs), beside GenEval's suite
    options = add_fields(agree, AgreementRequest, optional=("metadata", "out"))
    suite_options(agree, metadata=False)
    agree.add_argument(
        "--flow",
        action="store_true",
        help="run it as the workspace's Prefect flow human_agreement (from a checkout; needs --metadata and --out): "
        "the same files",
    )
    agree.set_defaults(func=_cmd_agreement, request=AgreementRequest, request_options=options)


def add_verbs(verbs: Any) -> None:
    """GenEval's own verbs on the ``t2ibench`` subparsers ``verbs`` (the command line gathers every registered
    benchmark's ``commands.add_verbs``)."""
    add_prompts(verbs)
    add_selftest(verbs)
    add_summary(verbs)
    add_agreement(verbs)
