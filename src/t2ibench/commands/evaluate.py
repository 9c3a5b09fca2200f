"""The verbs every registered benchmark shares: ``evaluate <benchmark> IMAGES`` (scan, judge, summarise, and store
where the entry can) and ``generate <benchmark>`` (images for its prompts), each benchmark's options from its entry."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from t2ibench.commands.common import EXIT_FAILED, EXIT_OK, Device, write_json
from t2ibench.errors import InputError
from t2ibench.fields import Option, Range
from t2ibench.options import add_fields, from_args, spec_or_error


@dataclass(frozen=True)
class EvaluateRequest:
    """``t2ibench evaluate <benchmark> IMAGES``: the options every benchmark's command shares (its suite's and its
    evaluator's are its entry's, ``--device`` is ``Device``'s)."""

    images: Annotated[str, Option(positional=True)]
    """The images to judge."""
    out: str | None = None
    """results.jsonl path (default: IMAGES/results.jsonl, or beside an image map); resumes from OUT.partial."""
    allow_missing: bool = False
    """Evaluate even if prompts/images are missing."""
    images_per_prompt: Annotated[int | None, Range(1, 10_000)] = None
    """Expected samples per prompt."""
    json: str | None = None
    """Also write the tables as JSON."""
    store: str | None = None
    """Also write the answers and tables into this results store."""
    model: str | None = None
    """The model the images are of, as the store names it (with --store; default: the folder's or the map's
    name)."""
    quiet: bool = False
    """No progress bar."""


@dataclass(frozen=True)
class GenerateRequest:
    """``t2ibench generate <benchmark>``: the suite, the folder and which prompts (the generator's options are
    ``GeneratorConfig``'s fields, the suite's its entry's, ``--device`` is ``Device``'s)."""

    suite: Annotated[str, Option(positional=True)]
    """The benchmark whose suite is generated for."""
    out: str
    """Output folder (<NNNNN>/samples/*.png, manifest.json)."""
    prompts: str | None = None
    """Only these prompt indices, e.g. 0-9,20."""
    limit: Annotated[int | None, Range(1)] = None
    """Only the first N selected prompts."""
    overwrite: bool = False
    """Replace a folder made with another specification."""
    quiet: bool = False
    """No progress bar."""


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

    req = from_args(EvaluateRequest, args, args.request_options)
    bench = benchmark(args.suite)
    evaluator = bench.evaluator_from(args)  # validated before anything is read
    images = Path(req.images)
    default_out = images / "results.jsonl" if images.is_dir() else images.with_name(images.stem + ".results.jsonl")
    out = Path(req.out) if req.out else default_out
    if out.exists() and not out.is_file():
        raise InputError(f"--out {out}: is a folder or a special file; give the results.jsonl file name")
    partial = out.with_name(out.name + ".partial")
    covers = (lambda rel: bool(PROMPT_DIR.fullmatch(rel.parts[0]))) if images.is_dir() else None
    store = req.store
    if req.model and not store:
        raise InputError("--model names the model in a results store: give --store too")
    refuse_outputs(
        [place("--out", out), place("--out's partial file", partial), place("--json", req.json)],
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
    scan = bench.scan(images, suite, images_per_prompt=req.images_per_prompt)
    print(scan.report(), file=sys.stderr)
    _refuse_scanned(scan, {"--out": out, "--out's partial file": partial, "--json": req.json, "--store": store})
    if not scan.ok and not req.allow_missing:
        print(
            "t2ibench evaluate: the images do not match the suite (see above); fix them or pass --allow-missing "
            "to evaluate only what is there",
            file=sys.stderr,
        )
        return EXIT_FAILED
    check_models(*bench.model_sections(evaluator))
    done = evaluate_images(
        bench, scan, evaluator, suite=suite, out=out, device=args.device, show_progress=not req.quiet
    )
    print(f"wrote {out}", file=sys.stderr)
    if done.tables is None:
        raise InputError(f"{images}: no image to judge")
    caveats = [c for c in (bench.caveat(suite, evaluator), _coverage(scan)) if c]
    print(bench.render(done.tables, label=images.name + (f" ({'; '.join(caveats)})" if caveats else "")))
    if req.json:
        payload = bench.tables_json(done.tables)
        payload["evaluation"] = {
            "benchmark": bench.name,
            "images": str(images),
            "caveats": caveats,
            **bench.provenance(suite, evaluator, done.records),
        }
        write_json(Path(req.json), payload)
    if store:
        model = req.model or (images.name if images.is_dir() else images.stem)
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

    req = from_args(GenerateRequest, args, args.request_options)
    suite = _generation_suite(args)
    selected = select_indices(suite, req.prompts, where="--prompts")
    if req.limit is not None:
        selected = selected[: req.limit]
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
        req.out,
        flag="--out",
        inputs=[
            *benchmark(req.suite).suite_inputs_from(args),
            place("--import-from", args.import_from, tree=True),
            place("--model", args.model, tree=True) if Path(args.model).is_dir() else None,
        ],
        tree=True,
        covers=lambda rel: rel.parts[0] in layout or bool(PROMPT_DIR.fullmatch(rel.parts[0])),
    )
    check_models((spec, {"model": "--model", "stage2": "--stage2", "revision": "--revision"}))
    generator = GENERATORS.build(backend, spec, device=args.device, show_progress=not req.quiet, source=source)
    records = generator.generate(selected, req.out, overwrite=req.overwrite)
    if getattr(generator, "reimported", None):
        print(f"note: re-imported {len(generator.reimported)} images whose source changed", file=sys.stderr)
    if spec.smoke:
        print("note: tiny-random is a smoke model with random weights; its images are labelled smoke", file=sys.stderr)
    print(f"{req.out}: {len(records)} images for {len(selected)} prompts (manifest.json, samples.jsonl)")
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
        bench.add_options(command)
        per_prompt = bench.images_per_prompt
        notes = {"images": f"— {bench.images_help}", **({"images_per_prompt": "(any)"} if per_prompt is None else {})}
        first = ("images", "out", "allow_missing", "images_per_prompt")
        how: dict[str, Any] = {"defaults": {"images_per_prompt": per_prompt}, "notes": notes}
        options = add_fields(command, EvaluateRequest, only=first, **how)
        add_fields(command, Device)
        rest = (*first, *(() if bench.can_store() else ("store", "model")))  # --store, --model: where it can store
        options += add_fields(command, EvaluateRequest, skip=rest, **how)
        command.set_defaults(func=_cmd_evaluate, request_options=options)


def add_generate(verbs: Any) -> None:
    """``t2ibench generate``: its options (defaults from the typed classes)."""
    from t2ibench.benchmarks import SPINE, benchmark, label, names
    from t2ibench.config import GeneratorConfig
    from t2ibench.specs import DTYPES

    gen = verbs.add_parser(
        "generate",
        help=f"generate images for a prompt suite into {label(SPINE)}'s folder layout (diffusers, or 'tiny-random' "
        "offline)",
        description=f"Defaults follow {label(SPINE)}'s generation script (see GeneratorConfig's fields below). "
        "Re-running resumes: a finished image is kept when its file matches its samples.jsonl hash and it was made "
        "for the same prompt record.",
    )
    options = add_fields(gen, GenerateRequest, only=("suite",), choices={"suite": names()})
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
    options += add_fields(gen, GenerateRequest, only=("out",))
    # the generator's options are GeneratorConfig's fields (t2ibench.options): the spec a refresh's models[].generator
    # holds; --import-from is its source (the folder backend), --seed-images its seed (--seed is GenEval's suite's)
    generator = add_fields(
        gen, GeneratorConfig, skip=("backend",), flags=_GENERATOR_OPTIONS, choices={"dtype": DTYPES},
    )  # fmt: skip
    add_fields(gen, Device)
    options += add_fields(gen, GenerateRequest, skip=("suite", "out"))
    gen.set_defaults(func=_cmd_generate, generator_options=generator, request_options=options)
