"""The verbs every registered benchmark shares: ``evaluate <benchmark> IMAGES`` (scan, judge, summarise, and store
where the entry can) and ``generate <benchmark>`` (images for its prompts), each benchmark's options from its entry."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from t2ibench.commands.common import EXIT_FAILED, EXIT_OK, write_json
from t2ibench.errors import InputError
from t2ibench.options import add_fields, from_args, int_from, spec_or_error

POSITIVE = int_from(1)


def check_models(*sections: tuple[Any, dict[str, str]]) -> None:
    """Each model a spec section names by hub id or folder can be read, checked after the command's own inputs and
    before any model loads (``models.hub``): a missing folder, or a hub model neither cached nor reachable, is one
    line naming the option (``_spec``'s), not minutes of download retries."""
    from t2ibench.models.hub import check_sources

    for section, options in sections:
        spec_or_error(lambda: check_sources(section.hub_sources()), options)  # noqa: B023  (called at once)


def _cmd_evaluate(args: argparse.Namespace) -> int:
    """``t2ibench evaluate <benchmark> IMAGES``: one path over ``t2ibench.benchmarks`` (scan, judge, summarise)."""
    from t2ibench.benchmarks import benchmark, evaluate_images
    from t2ibench.paths import place, refuse_outputs
    from t2ibench.suites.layout import PROMPT_DIR

    bench = benchmark(args.suite)
    evaluator = bench.evaluator_from(args)  # validated before anything is read
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
            *bench.inputs_from(args),
        ],
    )
    if store:  # a store this evaluation may not be written into is refused before any judging
        from t2ibench.store import Store

        Store(store).check_evaluation_target()
    suite = bench.suite_from(args)
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
    check_models(*bench.model_sections(evaluator))
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


_GENERATOR_OPTIONS = {"seed": "--seed-images", "source": "--import-from"}
"""The generator spec's fields whose ``generate`` options are not ``--field-name``."""


def _parsed_default(option: Any) -> Any:
    """What argparse gives ``option`` when it is not on the command line."""
    return option.kwargs.get("default", False if option.kwargs.get("action") == "store_true" else None)


def _cmd_generate(args: argparse.Namespace) -> int:
    from t2ibench.config import GeneratorConfig, select_indices
    from t2ibench.models.registry import GENERATORS

    suite = _generation_suite(args)
    selected = select_indices(suite, args.prompts, where="--prompts")
    if args.limit is not None:
        selected = selected[: args.limit]
    options = args.generator_options  # GeneratorConfig's fields (backend: --import-from chooses the folder importer)
    backend = "folder" if args.import_from else "diffusers"
    given = {o.field: getattr(args, o.dest) for o in options if getattr(args, o.dest) != _parsed_default(o)}
    flags = {o.field: o.flag for o in options}
    spec_or_error(lambda: GeneratorConfig.check_given({"backend": backend, **given}), flags)  # nothing ignored
    spec = from_args(GeneratorConfig, args, options, backend=backend)
    source = Path(args.import_from).resolve() if args.import_from else None
    from t2ibench.benchmarks import benchmark
    from t2ibench.paths import place, refuse_output
    from t2ibench.suites.layout import PROMPT_DIR

    layout = {"manifest.json", "samples.jsonl"}  # and the prompt folders <NNNNN>/
    refuse_output(
        args.out,
        flag="--out",
        inputs=[
            *benchmark(args.suite).suite_inputs_from(args),
            place("--import-from", args.import_from, tree=True),
            place("--model", args.model, tree=True) if Path(args.model).is_dir() else None,
        ],
        tree=True,
        covers=lambda rel: rel.parts[0] in layout or bool(PROMPT_DIR.fullmatch(rel.parts[0])),
    )
    check_models((spec, {"model": "--model", "stage2": "--stage2", "revision": "--revision"}))
    generator = GENERATORS.build(backend, spec, device=args.device, show_progress=not args.quiet, source=source)
    records = generator.generate(selected, args.out, overwrite=args.overwrite)
    if getattr(generator, "reimported", None):
        print(f"note: re-imported {len(generator.reimported)} images whose source changed", file=sys.stderr)
    if spec.smoke:
        print("note: tiny-random is a smoke model with random weights; its images are labelled smoke", file=sys.stderr)
    print(f"{args.out}: {len(records)} images for {len(selected)} prompts (manifest.json, samples.jsonl)")
    return EXIT_OK


def _generation_suite(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The prompt records ``generate`` makes images for: the chosen benchmark's (its suite options, read by its entry
    as `evaluate <benchmark>` reads them); a suite option of a benchmark not chosen is refused, never ignored."""
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
    bench = benchmark(args.suite)
    if args.import_from and not bench.spine:  # the folder backend imports the spine's images (as a refresh does)
        raise InputError(
            f"--import-from: a folder made elsewhere is judged as it is: `t2ibench evaluate {args.suite} DIR`"
        )
    return bench.prompt_records(bench.suite_from(args))


def add_evaluate(verbs: Any) -> None:
    """``t2ibench evaluate``: one command per registered benchmark, its options from its entry."""
    from t2ibench.benchmarks import benchmark, names

    evaluate_verb = verbs.add_parser(
        "evaluate",
        help=f"judge an image folder with a benchmark ({', '.join(names())}): `t2ibench evaluate BENCHMARK --help`",
    )
    benchmarks = evaluate_verb.add_subparsers(dest="suite", required=True, metavar="BENCHMARK")
    for name in names():  # every benchmark's command: its entry's options, then the ones all share
        bench = benchmark(name)
        if not bench.has_command():
            continue
        command = benchmarks.add_parser(name, help=bench.command_help, description=bench.command_description)
        command.add_argument("images", help=bench.images_help)
        bench.add_options(command)
        command.add_argument(
            "--out", help="results.jsonl path (default: IMAGES/results.jsonl, or beside an image map); resumes from "
            "OUT.partial",
        )  # fmt: skip
        command.add_argument("--allow-missing", action="store_true", help="evaluate even if prompts/images are missing")
        per_prompt = bench.images_per_prompt
        command.add_argument(
            "--images-per-prompt", type=int_from(1, 10_000), default=per_prompt,
            help=f"expected samples per prompt ({'any' if per_prompt is None else f'default {per_prompt}'})",
        )  # fmt: skip
        command.add_argument("--device", default="auto")
        command.add_argument("--json", help="also write the tables as JSON")
        if bench.can_store():
            command.add_argument("--store", help="also write the answers and tables into this results store")
            command.add_argument(
                "--model", help="the model the images are of, as the store names it (with --store; default: the "
                "folder's or the map's name)",
            )  # fmt: skip
        command.add_argument("--quiet", action="store_true")
        command.set_defaults(func=_cmd_evaluate)


def add_generate(verbs: Any) -> None:
    """``t2ibench generate``: its options (defaults from the typed classes)."""
    from t2ibench.benchmarks import benchmark, names
    from t2ibench.config import GeneratorConfig
    from t2ibench.specs import DTYPES

    gen = verbs.add_parser(
        "generate",
        help="generate images for a prompt suite into GenEval's layout (diffusers, or 'tiny-random' offline)",
        description="Defaults follow GenEval's generation script: 4 images per prompt, 50 steps, guidance 9, seed 42 "
        "re-seeded per prompt. Re-running resumes: a finished image is kept when its file matches its "
        "samples.jsonl hash and it was made for the same prompt record.",
    )
    gen.add_argument("suite", choices=names())
    # each benchmark's suite options in a group of its own, from its entry (an option of a benchmark not chosen is
    # refused)
    actions = {}
    for name in names():
        entry = benchmark(name)
        if not entry.has_command():
            continue
        group = gen.add_argument_group(f"{name}: {entry.label}'s suite")
        entry.add_suite_options(group)
        actions[name] = list(group._group_actions)
    gen.set_defaults(suite_actions=actions)
    gen.add_argument("--out", required=True, help="output folder (<NNNNN>/samples/*.png, manifest.json)")
    # the generator's options are GeneratorConfig's fields (t2ibench.options): the spec a refresh's models[].generator
    # holds; --import-from is its source (the folder backend), --seed-images its seed (--seed is GenEval's suite's)
    generator = add_fields(
        gen, GeneratorConfig, skip=("backend",), flags=_GENERATOR_OPTIONS, choices={"dtype": DTYPES},
    )  # fmt: skip
    gen.set_defaults(generator_options=generator)
    gen.add_argument("--device", default="auto")
    gen.add_argument("--prompts", help="only these prompt indices, e.g. 0-9,20")
    gen.add_argument("--limit", type=POSITIVE, help="only the first N selected prompts")
    gen.add_argument("--overwrite", action="store_true", help="replace a folder made with another specification")
    gen.add_argument("--quiet", action="store_true")
    gen.set_defaults(func=_cmd_generate)
