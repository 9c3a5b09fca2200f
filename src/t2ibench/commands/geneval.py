"""The GenEval verbs and ``evaluate``: ``prompts``, ``evaluate`` (every registered benchmark's), ``selftest``,
``summary`` and ``generate``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from t2ibench.commands.common import EXIT_FAILED, EXIT_OK, SEED, suite_options, suite_records, write_json
from t2ibench.errors import InputError
from t2ibench.options import add_fields, float_in, from_args, int_from, spec_or_error

POSITIVE = int_from(1)


UNIT = float_in(0.0, 1.0, open_high=True)


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


def _resize(args: argparse.Namespace) -> tuple[int, int] | None:
    if args.resize == "checkpoint":
        return None
    try:
        short, long = (int(v) for v in args.resize.split(","))
    except ValueError:
        raise InputError(f"--resize must be SHORT,LONG (e.g. 800,1333) or 'checkpoint'; got {args.resize!r}") from None
    return short, long


def _check_models(*sections: tuple[Any, dict[str, str]]) -> None:
    """Each model a spec section names by hub id or folder can be read, checked after the command's own inputs and
    before any model loads (``models.hub``): a missing folder, or a hub model neither cached nor reachable, is one
    line naming the option (``_spec``'s), not minutes of download retries."""
    from t2ibench.models.hub import check_sources

    for section, options in sections:
        spec_or_error(lambda: check_sources(section.hub_sources()), options)  # noqa: B023  (called at once)


_DETECTOR_OPTIONS = {"backend": "--detector", "model": "--detector-model", "revision": "--detector-revision"}
"""The detector spec's fields whose options are not ``--field-name``."""
_COLOUR_OPTIONS = {"backend": "--colour", "arch": "--clip-arch", "pretrained": "--clip-pretrained"}
"""The colour spec's fields whose options are not ``--field-name``."""


def _geneval_config(args: argparse.Namespace) -> Any:
    """The GenEvalConfig the options describe, validated by the config's own rules before any model is loaded."""
    from t2ibench.benchmarks.geneval.options import GenEvalConfig
    from t2ibench.config import ColourConfig, DetectorConfig

    detector, colour, params = args.geneval_options
    return from_args(
        GenEvalConfig,
        args,
        params,
        detector=from_args(DetectorConfig, args, detector, resize=_resize(args)),
        colour=from_args(ColourConfig, args, colour),
    )


def _evaluator_inputs(args: argparse.Namespace) -> list[Any]:
    """The evaluator options naming local files or folders, as inputs no output may overwrite (``t2ibench.paths``)."""
    from t2ibench.paths import place

    named = {
        "--detector-model": args.detector_model,
        "--mmdet-config": args.detector_mmdet_config,
        "--mmdet-checkpoint": args.detector_mmdet_checkpoint,
        "--clip-pretrained": args.colour_pretrained,
    }
    return [place(flag, v, tree=Path(v).is_dir()) for flag, v in named.items() if v and Path(v).exists()]


def _cmd_selftest(args: argparse.Namespace) -> int:
    from t2ibench.benchmarks.geneval.selftest import render_selftest, run_selftest, write_selftest
    from t2ibench.models.compositor import parse_variant
    from t2ibench.models.registry import COLOUR_CLASSIFIERS, DETECTORS

    cfg = _geneval_config(args)
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
    inputs = _evaluator_inputs(args) + truth_file
    refuse_output(args.out, flag="--out", inputs=inputs, tree=True, covers=lambda rel: rel.parts[0] in written)
    photos = None if args.no_photos else load_photo_truth(args.photo_truth)
    _check_models((cfg.detector, _DETECTOR_OPTIONS), (cfg.colour, _COLOUR_OPTIONS))
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


def _cmd_evaluate(args: argparse.Namespace) -> int:
    """``t2ibench evaluate <benchmark> IMAGES``: one path over ``t2ibench.benchmarks`` (scan, judge, summarise)."""
    from t2ibench.benchmarks import benchmark, evaluate_images
    from t2ibench.paths import place, refuse_outputs
    from t2ibench.suites.layout import PROMPT_DIR

    bench = benchmark(args.suite)
    suite_of, evaluator_of, inputs_of = (
        (bench.suite_from, bench.evaluator_from, bench.inputs_from) if bench.has_command() else _GENEVAL_COMMAND
    )
    evaluator = evaluator_of(args)  # validated before anything is read
    images = Path(args.images)
    default_out = images / "results.jsonl" if images.is_dir() else images.with_name(images.stem + ".results.jsonl")
    out = Path(args.out) if args.out else default_out
    if out.exists() and not out.is_file():
        raise InputError(f"--out {out}: is a folder or a special file; give the results.jsonl file name")
    partial = out.with_name(out.name + ".partial")
    covers = (lambda rel: bool(PROMPT_DIR.fullmatch(rel.parts[0]))) if images.is_dir() else None
    store = getattr(args, "store", None)
    if getattr(args, "model", None) and not store:
        raise InputError("--model names the model in a results store: give --store too")
    refuse_outputs(
        [place("--out", out), place("--out's partial file", partial), place("--json", args.json)],
        [
            place("--store", store),  # written by the store's own transaction: no other output may land on it
            place("IMAGEDIR" if images.is_dir() else "IMAGES", images, tree=images.is_dir(), covers=covers),
            *inputs_of(args),
        ],
    )
    if store:  # a store this evaluation may not be written into is refused before any judging
        from t2ibench.store import Store

        Store(store).check_evaluation_target()
    suite = suite_of(args)
    scan = bench.scan(images, suite, images_per_prompt=args.images_per_prompt)
    print(scan.report(), file=sys.stderr)
    _refuse_scanned(scan, {"--out": out, "--out's partial file": partial, "--json": args.json, "--store": store})
    if not scan.ok and not args.allow_missing:
        print(
            "t2ibench evaluate: the images do not match the suite (see above); fix them or pass --allow-missing "
            "to evaluate only what is there",
            file=sys.stderr,
        )
        return EXIT_FAILED
    sections = bench.model_sections(evaluator) if bench.has_command() else _geneval_models(evaluator)
    _check_models(*sections)
    done = evaluate_images(
        bench, scan, evaluator, suite=suite, out=out, device=args.device, show_progress=not args.quiet
    )
    print(f"wrote {out}", file=sys.stderr)
    if done.tables is None:
        raise InputError(f"{images}: no image to judge")
    caveats = [c for c in (bench.caveat(suite, evaluator), _coverage(scan)) if c]
    print(bench.render(done.tables, label=images.name + (f" ({'; '.join(caveats)})" if caveats else "")))
    if args.json:
        payload = bench.tables_json(done.tables)
        payload["evaluation"] = {
            "benchmark": bench.name,
            "images": str(images),
            "caveats": caveats,
            **bench.provenance(suite, evaluator, done.records),
        }
        write_json(Path(args.json), payload)
    if store:
        model = args.model or (images.name if images.is_dir() else images.stem)
        print(
            bench.store(Path(store), model=model, scan=scan, suite=suite, records=done.records, tables=done.tables),
            file=sys.stderr,
        )
    return EXIT_OK


def _geneval_models(evaluator: Any) -> list[tuple[Any, dict[str, str]]]:
    """The spec sections of a GenEval evaluator that name models, with the options that set their fields."""
    return [(evaluator.detector, _DETECTOR_OPTIONS), (evaluator.colour, _COLOUR_OPTIONS)]


def _refuse_scanned(scan: Any, outputs: dict[str, Any]) -> None:
    """An output that is one of the images a scan found (an image map may name files anywhere) is refused."""
    from t2ibench.paths import same_file

    for flag, path in outputs.items():
        if path is None or not Path(path).exists():
            continue
        for item in getattr(scan, "items", ()):
            if same_file(path, item.path):
                raise InputError(f"{flag} {path}: is the image {item.path} being judged; write the output elsewhere")


def _coverage(scan: Any) -> str | None:
    """'3 of 800 prompts' when fewer of the suite's prompts have an image to judge (with --allow-missing)."""
    expected = getattr(scan, "expected_prompts", None)
    items = getattr(scan, "items", ())
    judged = {item.prompt.index if hasattr(item, "prompt") else item.prompt_index for item in items}
    if expected is None or len(judged) >= expected:
        return None
    return f"{len(judged)} of {expected} prompts"


def _geneval_inputs(args: argparse.Namespace) -> list[Any]:
    from t2ibench.paths import place

    return [place("--metadata", args.metadata), *_evaluator_inputs(args)]


# GenEval's `evaluate` command: its suite, evaluator and the local files its options name, from the options it
# shares with `selftest`, `summary` and `generate` (every other benchmark's entry declares its own: ``add_options``)
_GENEVAL_COMMAND = (suite_records, lambda args: _geneval_config(args), _geneval_inputs)


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


def _cmd_generate(args: argparse.Namespace) -> int:
    from t2ibench.config import GeneratorConfig, select_indices
    from t2ibench.models.registry import GENERATORS

    suite = _generation_suite(args)
    selected = select_indices(suite, args.prompts, where="--prompts")
    if args.limit is not None:
        selected = selected[: args.limit]
    backend = "folder" if args.import_from else "diffusers"
    fields = (
        {"source": args.import_from}
        if args.import_from
        else {
            "model": args.model,
            "revision": args.revision,
            "stage2": args.stage2,
            "steps": args.steps,
            "guidance": args.guidance,
            "negative_prompt": args.negative_prompt,
            "height": args.height,
            "width": args.width,
            "seed": args.seed_images,
            "seeding": args.seeding,
            "batch_size": args.batch_size,
            "dtype": args.dtype,
            "scheduler": args.scheduler,
            "grid": args.grid,
        }
    )
    options = {"seed": "--seed-images", "source": "--import-from", "images_per_prompt": "--images-per-prompt"}
    spec = spec_or_error(
        lambda: GeneratorConfig(backend=backend, images_per_prompt=args.images_per_prompt, **fields), options
    )
    source = Path(args.import_from).resolve() if args.import_from else None
    from t2ibench.benchmarks import benchmark
    from t2ibench.paths import place, refuse_output
    from t2ibench.suites.layout import PROMPT_DIR

    layout = {"manifest.json", "samples.jsonl"}  # and the prompt folders <NNNNN>/
    refuse_output(
        args.out,
        flag="--out",
        inputs=[
            place("--metadata", args.metadata),
            *(benchmark(args.suite).suite_inputs_from(args) if args.suite != "geneval" else ()),
            place("--import-from", args.import_from, tree=True),
            place("--model", args.model, tree=True) if Path(args.model).is_dir() else None,
        ],
        tree=True,
        covers=lambda rel: rel.parts[0] in layout or bool(PROMPT_DIR.fullmatch(rel.parts[0])),
    )
    _check_models((spec, {"model": "--model", "stage2": "--stage2", "revision": "--revision"}))
    generator = GENERATORS.build(backend, spec, device=args.device, show_progress=not args.quiet, source=source)
    records = generator.generate(selected, args.out, overwrite=args.overwrite)
    if getattr(generator, "reimported", None):
        print(f"note: re-imported {len(generator.reimported)} images whose source changed", file=sys.stderr)
    if spec.smoke:
        print("note: tiny-random is a smoke model with random weights; its images are labelled smoke", file=sys.stderr)
    print(f"{args.out}: {len(records)} images for {len(selected)} prompts (manifest.json, samples.jsonl)")
    return EXIT_OK


def _generation_suite(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The prompt records ``generate`` makes images for: GenEval's (generated or --metadata) or another benchmark's
    (its suite options, read by its entry as `evaluate <benchmark>` reads them); a suite option of a benchmark not
    chosen is refused, never ignored."""
    from t2ibench.benchmarks import benchmark

    given = [
        (name, action.option_strings[0])
        for name, actions in args.suite_actions.items()
        if name != args.suite
        for action in actions
        if getattr(args, action.dest) != action.default
    ]
    if given:
        flags = ", ".join(flag for _, flag in given)
        raise InputError(f"{flags}: suite options of {given[0][0]}, not of {args.suite} (the suite generated for)")
    if args.suite == "geneval":
        return suite_records(args)
    if args.import_from:
        raise InputError(
            f"--import-from: a folder made elsewhere is judged as it is: `t2ibench evaluate {args.suite} DIR`"
        )
    bench = benchmark(args.suite)
    return bench.prompt_records(bench.suite_from(args))


def add_prompts(verbs: Any) -> None:
    """``t2ibench prompts``: its options (defaults from the typed classes)."""

    prompts = verbs.add_parser("prompts", help="write a prompt suite (GenEval: the official 553 prompts by default)")
    prompts.add_argument("suite", choices=["geneval"])
    suite_options(prompts, metadata=False)
    prompts.add_argument("--out", help="write JSON lines here (default: standard output)")
    prompts.set_defaults(func=_cmd_prompts)


def add_evaluate(verbs: Any) -> None:
    """``t2ibench evaluate``: GenEval's options here, every other benchmark's from its registry entry."""
    from t2ibench.benchmarks import benchmark, names

    evaluate_verb = verbs.add_parser(
        "evaluate",
        help=f"judge an image folder with a benchmark ({', '.join(names())}): `t2ibench evaluate BENCHMARK --help`",
    )
    benchmarks = evaluate_verb.add_subparsers(dest="suite", required=True, metavar="BENCHMARK")
    evaluate = benchmarks.add_parser(
        "geneval",
        help="GenEval verdicts for an image folder (<dir>/<NNNNN>/metadata.jsonl, samples/*.png)",
        description="Detect objects (Mask2Former), classify colours (CLIP), judge each image with GenEval's rules, "
        "write results.jsonl and print the Table-2 summary. Every image is accounted for.",
    )
    evaluate.add_argument("images", metavar="IMAGEDIR")
    suite_options(evaluate, metadata=True)
    evaluate.add_argument("--out", help="results.jsonl path (default IMAGEDIR/results.jsonl); resumes from OUT.partial")
    evaluate.add_argument("--allow-missing", action="store_true", help="evaluate even if prompts/images are missing")
    evaluate.add_argument(
        "--images-per-prompt", type=int_from(1, 10_000), default=4, help="expected samples per prompt (default 4)"
    )
    _evaluator_options(evaluate)
    evaluate.add_argument("--json", help="also write the summary as JSON")
    evaluate.add_argument("--quiet", action="store_true")
    evaluate.set_defaults(func=_cmd_evaluate)
    for name in names():  # every other benchmark's command: its entry's options, then the ones all share
        bench = benchmark(name)
        if not bench.has_command():
            continue
        command = benchmarks.add_parser(name, help=bench.command_help, description=bench.command_description)
        command.add_argument("images", help=bench.images_help)
        bench.add_options(command)
        command.add_argument("--out", help="results.jsonl path (default: beside IMAGES); resumes from OUT.partial")
        command.add_argument("--allow-missing", action="store_true", help="evaluate even if prompts/images are missing")
        command.add_argument("--images-per-prompt", type=int_from(1, 10_000), help="expected samples per prompt (any)")
        command.add_argument("--device", default="auto")
        command.add_argument("--json", help="also write the tables as JSON")
        command.add_argument("--store", help="also write the answers and tables into this results store")
        command.add_argument(
            "--model", help="the model the images are of, as the store names it (with --store; default: the folder's "
            "or the map's name)",
        )  # fmt: skip
        command.add_argument("--quiet", action="store_true")
        command.set_defaults(func=_cmd_evaluate)


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
    _evaluator_options(selftest)
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


def add_generate(verbs: Any) -> None:
    """``t2ibench generate``: its options (defaults from the typed classes)."""
    from t2ibench.benchmarks import benchmark, names
    from t2ibench.config import GeneratorConfig

    gen = verbs.add_parser(
        "generate",
        help="generate images for a prompt suite into GenEval's layout (diffusers, or 'tiny-random' offline)",
        description="Defaults follow GenEval's generation script: 4 images per prompt, 50 steps, guidance 9, seed 42 "
        "re-seeded per prompt. Re-running resumes: a finished image is kept when its file matches its "
        "samples.jsonl hash and it was made for the same prompt record.",
    )
    gen.add_argument("suite", choices=names())
    # each benchmark's suite options in a group of its own: GenEval's here, every other one's from its entry (an
    # option of a benchmark not chosen is refused)
    own = gen.add_argument_group("geneval: GenEval's suite")
    suite_options(own, metadata=True)
    actions = {"geneval": list(own._group_actions)}
    for name in names():
        entry = benchmark(name)
        if not entry.has_command():  # GenEval's options are the CLI's (above)
            continue
        group = gen.add_argument_group(f"{name}: {entry.label}'s suite")
        entry.add_suite_options(group)
        actions[name] = list(group._group_actions)
    gen.set_defaults(suite_actions=actions)
    gen.add_argument("--out", required=True, help="output folder (<NNNNN>/samples/*.png, manifest.json)")
    gen.add_argument("--model", default=GeneratorConfig.model, help="hub id, local directory, or tiny-random[:SEED]")
    gen.add_argument("--revision")
    gen.add_argument("--stage2", help="DeepFloyd IF stage-II model (stage I is --model)")
    gen.add_argument("--import-from", help="import images made elsewhere (GenEval layout) instead of generating")
    gen.add_argument("--steps", type=int_from(1, 10_000), default=GeneratorConfig.steps)
    gen.add_argument("--guidance", type=float_in(-1e6, 1e6), default=GeneratorConfig.guidance)
    gen.add_argument("--negative-prompt")
    gen.add_argument("--height", type=int_from(8, 16_384))
    gen.add_argument("--width", type=int_from(8, 16_384))
    gen.add_argument("--images-per-prompt", type=int_from(1, 10_000), default=GeneratorConfig.images_per_prompt)
    gen.add_argument("--seed-images", type=SEED, default=GeneratorConfig.seed, help="generation seed (GenEval: 42)")
    gen.add_argument("--seeding", choices=["prompt", "sample"], default=GeneratorConfig.seeding)
    gen.add_argument(
        "--batch-size", type=int_from(1, 10_000), help="images per pipeline call (default: images per prompt)"
    )
    gen.add_argument(
        "--dtype", default=GeneratorConfig.dtype, help="float32, float16, bfloat16 or auto (float16 on CUDA)"
    )
    gen.add_argument("--scheduler", help="diffusers scheduler class to swap in, e.g. DDIMScheduler")
    gen.add_argument("--grid", action="store_true", help="also save grid.png per prompt")
    gen.add_argument("--device", default="auto")
    gen.add_argument("--prompts", help="only these prompt indices, e.g. 0-9,20")
    gen.add_argument("--limit", type=POSITIVE, help="only the first N selected prompts")
    gen.add_argument("--overwrite", action="store_true", help="replace a folder made with another specification")
    gen.add_argument("--quiet", action="store_true")
    gen.set_defaults(func=_cmd_generate)


def _evaluator_options(p: argparse.ArgumentParser) -> None:
    """The detector's, colour classifier's and verdict thresholds' options: ``DetectorConfig``'s,
    ``ColourConfig``'s and ``GenEvalParams``' fields (``t2ibench.options``; ``--resize`` is the detector's resize
    field as SHORT,LONG or 'checkpoint')."""
    from t2ibench.benchmarks.geneval.metrics import GenEvalParams
    from t2ibench.config import ColourConfig, DetectorConfig
    from t2ibench.models.registry import COLOUR_CLASSIFIERS, DETECTORS

    detector = add_fields(
        p, DetectorConfig, skip=("resize",), flags=_DETECTOR_OPTIONS, choices={"backend": DETECTORS.names()},
        dest_prefix="detector_",
    )  # fmt: skip
    default_resize = ",".join(map(str, DetectorConfig.resize)) if DetectorConfig.resize else "checkpoint"
    p.add_argument("--resize", default=default_resize, help="detector input SHORT,LONG edge, or 'checkpoint'")
    colour = add_fields(
        p, ColourConfig, flags=_COLOUR_OPTIONS, choices={"backend": COLOUR_CLASSIFIERS.names()}, dest_prefix="colour_"
    )
    p.add_argument("--device", default="auto")
    params = add_fields(p, GenEvalParams)
    p.set_defaults(geneval_options=(detector, colour, params))
