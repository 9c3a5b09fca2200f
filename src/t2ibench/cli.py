"""The ``t2ibench`` command. Argument parsing lives here only; library code never reads command-line state."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import math
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from t2ibench import __version__
from t2ibench.errors import NOTES, InputError, StateMismatchError
from t2ibench.options import add_fields, from_args, int_from, spec_or_error

if TYPE_CHECKING:
    from t2ibench.requests import Request

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


# -- argument types: a bad number is refused by the parser, naming the option ---------------------------------


def _float_in(low: float, high: float = math.inf, *, open_low: bool = False, open_high: bool = False) -> Any:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        ok = (value > low if open_low else value >= low) and (value < high if open_high else value <= high)
        if not ok or value != value:
            left, right = "(" if open_low else "[", ")" if open_high else "]"
            raise argparse.ArgumentTypeError(f"must be in {left}{low:g}, {high:g}{right}; got {text}")
        return value

    return parse


SEED = int_from(0, 2**31 - 1)
POSITIVE = int_from(1)
SECONDS = _float_in(0.0, 1e9)
POSITIVE_FLOAT = _float_in(0.0, math.inf, open_low=True, open_high=True)
UNIT = _float_in(0.0, 1.0, open_high=True)


def _bandwidth(text: str) -> float | str:
    """A σ option: a positive number (embedding units) or 'median' (the median heuristic), as in a config."""
    from t2ibench.diversity import MEDIAN

    if text == MEDIAN:
        return MEDIAN
    try:
        return float(POSITIVE_FLOAT(text))
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{exc} (or {MEDIAN!r}: the median heuristic)") from None


def _file_bandwidth(text: str) -> float | str:
    """The σ option of a file: a number, 'median', or 'reference' (the reference σ of the file's embedding space)."""
    from t2ibench.diversity import MEDIAN, REFERENCE

    if text in (MEDIAN, REFERENCE):
        return text
    try:
        return float(POSITIVE_FLOAT(text))
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(
            f"{exc} (or {MEDIAN!r}: the median heuristic; {REFERENCE!r}: the file's embedding space's)"
        ) from None


def _parse_alphas(text: str) -> list[str]:
    return [part for part in text.split(",") if part.strip()]


def _write_json(path: Path, payload: dict[str, Any]) -> None:
    from t2ibench.io import write_text_atomic

    write_text_atomic(path, json.dumps(payload, indent=2, sort_keys=True, allow_nan=False) + "\n")


# -- diversity ---------------------------------------------------------------------------------------------------


def _cmd_diversity(args: argparse.Namespace) -> int:
    if args.example is not None and args.embeddings is not None:
        raise InputError("give either an EMBEDDINGS file or --example, not both")
    if args.gallery and not args.modes:
        raise InputError("--gallery DIR renders modes: add --modes K")
    _diversity_outputs(args)
    if args.example == "digits":
        return _diversity_digits(args)
    if args.embeddings is None:
        raise InputError("nothing to measure: give an EMBEDDINGS file (.npy/.npz) or --example digits")
    if args.prompts is True:
        raise InputError("--prompts needs a PROMPTS.npz file ('embeddings' and 'ids') for an embeddings file")
    if args.prompts:
        return _diversity_pairs(args)
    return _diversity_file(args)


def _diversity_outputs(args: argparse.Namespace) -> None:
    """Refuse --json/--gallery outputs that would overwrite the embeddings, the record of their embedding space, the
    prompts or the images shown."""
    from t2ibench.features import SPACES_FILE
    from t2ibench.paths import place, refuse_outputs

    inputs = [
        place("EMBEDDINGS", args.embeddings),
        place("--prompts", args.prompts if args.prompts is not True else None),
        place("the embedding-space record beside EMBEDDINGS", Path(args.embeddings).parent / SPACES_FILE)
        if args.embeddings
        else None,
    ]
    if args.gallery and args.embeddings and Path(args.embeddings).suffix == ".npz" and Path(args.embeddings).is_file():
        from t2ibench.io import load_embedding_table

        table = load_embedding_table(args.embeddings)
        inputs += [place("an image the gallery shows", p) for p in table.paths or ()]
    gallery = place(
        "--gallery", args.gallery, tree=True, covers=lambda rel: len(rel.parts) > 1 or rel.name.endswith("_modes.md")
    )
    refuse_outputs([place("--json", args.json), gallery], inputs)


def _diversity_digits(args: argparse.Namespace) -> int:
    from t2ibench.examples import digits
    from t2ibench.metrics.checks import parse_alpha
    from t2ibench.report import diversity as render

    payload: dict[str, Any] = {"example": "digits"}
    scendi_config = digits.DigitsScendiConfig(
        per_prompt=args.per_prompt,
        repeats=3 if args.repeats is None else args.repeats,
        sigma_scale=args.sigma_scale,
        rff_dim=digits.DigitsScendiConfig.rff_dim if args.rff_dim is None else args.rff_dim,
        epsilon=args.epsilon,
        seed=args.seed,
    )
    if args.prompts:
        result = digits.digits_scendi_comparison(scendi_config, show_progress=not args.quiet)
        print(digits.render_digits_scendi(result))
        payload["scendi"] = dataclasses.asdict(result)
    else:
        alphas = _parse_alphas(args.alphas or "1")
        if len(alphas) != 1:
            raise InputError("--example digits reports one order: pass a single value to --alphas (e.g. 1)")
        config = digits.DigitsSweepConfig(
            n_per_condition=args.n_per_condition,
            repeats=digits.DigitsSweepConfig.repeats if args.repeats is None else args.repeats,
            sigma_scale=args.sigma_scale,
            rff_dim=digits.DigitsSweepConfig.rff_dim if args.rff_dim is None else args.rff_dim,
            alpha=parse_alpha(alphas[0]),
            seed=args.seed,
        )
        sweep = digits.digits_class_sweep(config, show_progress=not args.quiet)
        print(digits.render_digits_sweep(sweep))
        payload["sweep"] = dataclasses.asdict(sweep) | {
            "monotone": {c: sweep.is_monotone(c) for c in ("vendi_exact", "vendi_fkea", "rke_exact", "rke_fkea")}
        }
        payload["sweep"]["config"]["alpha"] = _json_alpha(config.alpha)
    if args.modes:
        found = digits.digits_modes(k=args.modes, top=args.top, config=scendi_config, with_scendi=bool(args.prompts))
        print()
        print(render.render_modes(found.fkea, labels=found.fkea_labels))
        payload["modes"] = {"fkea": found.fkea.to_dict()}
        if found.scendi is not None:
            print()
            print(render.render_modes(found.scendi, labels=found.scendi_labels))
            payload["modes"]["scendi"] = found.scendi.to_dict()
        if args.gallery:
            _galleries(
                Path(args.gallery),
                [("fkea", found.fkea, found.fkea_images), ("scendi", found.scendi, found.scendi_images)],
                title="digits",
            )
    if args.json:
        _write_json(Path(args.json), payload)
    return EXIT_OK


def _json_alpha(alpha: float) -> str | float:
    return "inf" if math.isinf(alpha) else alpha


def _galleries(root: Path, parts: Sequence[tuple[str, Any, Sequence[Any] | None]], *, title: str) -> None:
    """Write one image gallery (or text table) per (name, ModeSet, images-or-texts) under ``root``."""
    from t2ibench.report.gallery import render_text_modes, write_image_gallery

    for name, modes, samples in parts:
        if modes is None or samples is None:
            continue
        if (
            samples
            and isinstance(samples[0], str)
            and not samples[0].lower().endswith((".png", ".jpg", ".jpeg", ".webp"))
        ):
            root.mkdir(parents=True, exist_ok=True)
            (root / f"{name}_modes.md").write_text(render_text_modes(modes, samples) + "\n")
            print(f"wrote {root / f'{name}_modes.md'}", file=sys.stderr)
        else:
            index = write_image_gallery(modes, samples, root / name, title=f"{title} — {name} modes")
            print(f"wrote {index.parent}/ (summary.png, mode_XX.png, modes.json)", file=sys.stderr)


def _diversity_file(args: argparse.Namespace) -> int:
    from t2ibench.config import DiversityConfig
    from t2ibench.diversity import diversity_of_file, gallery_samples, labels
    from t2ibench.metrics.entropy import DEFAULT_BATCH
    from t2ibench.report.diversity import render_entropy_results, render_modes

    if args.gallery:  # fail before the computation, not after it
        from t2ibench.io import load_embedding_table

        path = Path(args.embeddings)
        gallery_samples(load_embedding_table(path) if path.suffix == ".npz" else None, path)
    found = diversity_of_file(
        args.embeddings,
        kernel=args.kernel,
        sigma=args.sigma,
        method=args.method,
        rff_dim=DiversityConfig.rff_dim if args.rff_dim is None else args.rff_dim,
        alphas=_parse_alphas(args.alphas) if args.alphas else DiversityConfig.alphas,
        seed=args.seed,
        shards=args.shards,
        orthogonal=args.orthogonal,
        batch_size=DEFAULT_BATCH if args.batch_size is None else args.batch_size,
        delta=args.delta,
        modes=args.modes,
        top=args.top,
        show_progress=not args.quiet,
        truncation=args.truncation,
        device=args.device,
    )
    print(
        render_entropy_results(
            list(found.results), sigma_note=found.note, truncated=found.truncated, truncation=found.truncation
        )
    )
    payload: dict[str, Any] = {
        "input": str(found.path),
        "note": found.note,
        "sigma": None if found.sigma is None else found.sigma.to_dict(),
        "settings": found.settings,
        "results": [r.to_dict() for r in found.results],
    }
    if found.truncated:
        payload["truncated"] = {
            "t": found.truncation,
            "vendi": [{str(_json_alpha(a)): v for a, v in t.items()} for t in found.truncated],
        }
    if found.modes is not None:
        print()
        print(render_modes(found.modes, labels=labels(found.table)))
        payload["modes"] = found.modes.to_dict()
        if args.gallery:
            samples = gallery_samples(found.table, found.path)
            _galleries(Path(args.gallery), [(found.modes.source, found.modes, samples)], title=found.path.name)
    if args.json:
        _write_json(Path(args.json), payload)
    return EXIT_OK


def _pairs_sigma(sigma: float | str | None) -> float | Literal["median"]:
    """--sigma for Scendi on paired files: a number or the median heuristic (the default); no embedding space."""
    from t2ibench.diversity import MEDIAN, REFERENCE

    if sigma == REFERENCE:
        raise InputError("--sigma reference: Scendi of paired files takes σ as a number or 'median'")
    return MEDIAN if sigma is None or sigma == MEDIAN else float(sigma)


def _diversity_pairs(args: argparse.Namespace) -> int:
    from t2ibench.config import ScendiConfig
    from t2ibench.diversity import diversity_of_pairs, gallery_samples, labels
    from t2ibench.report.diversity import render_modes, render_scendi_results

    found = diversity_of_pairs(
        args.embeddings,
        args.prompts,
        kernel=args.kernel,
        image_sigma=_pairs_sigma(args.sigma),
        text_sigma=args.text_sigma,
        rff_dim=ScendiConfig.rff_dim if args.rff_dim is None else args.rff_dim,
        epsilon=args.epsilon,
        seed=args.seed,
        modes=args.modes,
        top=args.top,
        inverse=args.inverse,
    )
    print(render_scendi_results([(found.images.path.name, found.result)], note=found.note))
    payload: dict[str, Any] = {
        "images": str(found.images.path),
        "prompts": str(found.prompts.path),
        "scendi": found.result.to_dict(),
    }
    if found.image_modes is not None and found.scendi_modes is not None:
        names = labels(found.images)
        print()
        print(render_modes(found.image_modes, labels=names))
        print()
        print(render_modes(found.scendi_modes, labels=names))
        payload["modes"] = {"image": found.image_modes.to_dict(), "scendi": found.scendi_modes.to_dict()}
        if args.gallery:
            samples = gallery_samples(found.images, found.images.path)
            parts = [(found.image_modes.source, found.image_modes, samples), ("scendi", found.scendi_modes, samples)]
            _galleries(Path(args.gallery), parts, title=found.images.path.name)
    if args.json:
        _write_json(Path(args.json), payload)
    return EXIT_OK


# -- GenEval -------------------------------------------------------------------------------------------------------


def _suite(args: argparse.Namespace) -> list[dict[str, Any]]:
    from t2ibench.suites.geneval import generate_suite, read_suite

    if getattr(args, "metadata", None):
        return read_suite(args.metadata)
    classes = [c.strip() for c in args.classes.split(",")] if args.classes else None
    return generate_suite(seed=args.seed, per_task=args.per_task, classes=classes)


def _cmd_prompts(args: argparse.Namespace) -> int:
    from t2ibench.suites.geneval import suite_jsonl, write_suite

    records = _suite(args)
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
_COLOUR_OPTIONS = {"backend": "--colour", "arch": "--clip-arch", "pretrained": "--clip-pretrained"}


def _geneval_config(args: argparse.Namespace) -> Any:
    """The GenEvalConfig the options describe, validated by the config's own rules before any model is loaded."""
    from t2ibench.config import ColourConfig, DetectorConfig, GenEvalConfig

    detector = spec_or_error(
        lambda: DetectorConfig(
            backend=args.detector,
            model=args.detector_model,
            revision=args.detector_revision,
            resize=_resize(args),
            mmdet_config=args.mmdet_config,
            mmdet_checkpoint=args.mmdet_checkpoint,
        ),
        _DETECTOR_OPTIONS,
    )
    colour = spec_or_error(
        lambda: ColourConfig(
            backend=args.colour, arch=args.clip_arch, pretrained=args.clip_pretrained, background=args.background
        ),
        _COLOUR_OPTIONS,
    )
    return spec_or_error(
        lambda: GenEvalConfig(
            detector=detector,
            colour=colour,
            threshold=args.threshold,
            counting_threshold=args.counting_threshold,
            max_objects=args.max_objects,
            max_overlap=args.max_overlap,
            position_margin=args.position_margin,
        ),
        {},
    )


def _evaluator_inputs(args: argparse.Namespace) -> list[Any]:
    """The evaluator options naming local files or folders, as inputs no output may overwrite (``t2ibench.paths``)."""
    from t2ibench.paths import place

    named = {
        "--detector-model": args.detector_model,
        "--mmdet-config": args.mmdet_config,
        "--mmdet-checkpoint": args.mmdet_checkpoint,
        "--clip-pretrained": args.clip_pretrained,
    }
    return [place(flag, v, tree=Path(v).is_dir()) for flag, v in named.items() if v and Path(v).exists()]


def _cmd_selftest(args: argparse.Namespace) -> int:
    from t2ibench.models.compositor import parse_variant
    from t2ibench.models.registry import COLOUR_CLASSIFIERS, DETECTORS
    from t2ibench.selftest import render_selftest, run_selftest, write_selftest

    cfg = _geneval_config(args)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    for v in variants:
        parse_variant(v)
    from t2ibench.paths import refuse_output
    from t2ibench.suites.photos import load_photo_truth

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
        _write_json(Path(args.json), payload)
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
_GENEVAL_COMMAND = (_suite, lambda args: _geneval_config(args), _geneval_inputs)


def _cmd_summary(args: argparse.Namespace) -> int:
    from t2ibench.benchmarks.geneval.evaluate import read_results, summarise
    from t2ibench.paths import place, refuse_outputs
    from t2ibench.report.geneval import render_summary

    refuse_outputs([place("--json", args.json)], [place("RESULTS", args.results), place("--metadata", args.metadata)])
    rows = read_results(args.results)
    suite = _suite(args)
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
        _write_json(Path(args.json), summary.to_dict())
    if problems and not args.allow_missing:
        print("t2ibench summary: results do not cover the suite; pass --allow-missing to accept", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def _cmd_agreement(args: argparse.Namespace) -> int:
    from t2ibench.human_agreement import run_agreement
    from t2ibench.paths import place, refuse_outputs
    from t2ibench.report.agreement import render_agreement, write_agreement

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
        _suite(args),
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
        from t2ibench.human_agreement import store_agreement

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
    from t2ibench.human_agreement import load_agreement_inputs

    # every input file read and checked now (under a second), not after the flow's start-up (≈ 15 s)
    load_agreement_inputs(args.annotations, _suite(args), auto=args.auto or [], scores=args.scores)
    request = AgreementRequest(
        annotations=tuple(args.annotations),
        metadata=args.metadata,
        out=args.out,
        store=args.store,
        auto=tuple(args.auto or ()),
        auto_label=args.auto_label,
        scores=args.scores,
        folds=args.folds,
        seed=args.seed_cv,
        resamples=args.resamples,
        ci_level=args.ci_level,
        ci_seed=args.seed_ci,
    )
    root = _checkout(Path.cwd(), request.program)  # paths stay as given: the flow runs in this folder
    return _run_flow(root, request, cwd=root, program="t2ibench agreement")


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
        return _suite(args)
    if args.import_from:
        raise InputError(
            f"--import-from: a folder made elsewhere is judged as it is: `t2ibench evaluate {args.suite} DIR`"
        )
    bench = benchmark(args.suite)
    return bench.prompt_records(bench.suite_from(args))


def _workspace(config: str, program: str = "flows.leaderboard_refresh") -> tuple[Path, Path]:
    """(workspace root, absolute config path): the root holds configs/ and the flows/ of a checkout (``program``
    among them)."""
    path = Path(config).resolve()
    if not path.is_file():
        raise InputError(f"{config}: no such config file")
    root = path.parent.parent if path.parent.name == "configs" else Path.cwd()
    return _checkout(root, program), path


def _checkout(root: Path, program: str) -> Path:
    """``root``, refused unless it is a checkout holding the workspace program ``program`` (``flows.<module>``)."""
    file = Path(*program.split(".")).with_suffix(".py")
    if not (root / file).is_file():
        raise InputError(
            f"{root}: not a t2ibench workspace (no {file.as_posix()}); run from a checkout of the repository"
        )
    return root


def _run_flow(
    root: Path,
    request: Request,
    *,
    cwd: Path | None = None,
    program: str = "",
    after_stop: Any = None,
    after_killed: Any = None,
    log: Path | None = None,
) -> int:
    """Run the workspace program of a ``t2ibench.requests`` request (``python -m flows.<module> REQUEST-JSON``) as a
    child process with the workspace on sys.path, in ``cwd`` (default: the workspace root); the library never imports
    flows. Signals reach it as ``t2ibench.signals.run_child`` forwards them; a child killed by a signal it was not
    sent (the OOM killer's SIGKILL) is reported in one line naming the flow, the signal and ``log``."""
    import os

    from t2ibench.signals import run_child

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH", "")]))
    argv = [sys.executable, "-m", request.program, request.to_json()]
    return run_child(
        argv,
        cwd=cwd or root,
        env=env,
        program=program,
        after_stop=after_stop,
        after_killed=after_killed,
        child_name=f"{request.work} ({request.program})",
        log=log or request.log_file(),
    )


def flow_program(args: argparse.Namespace) -> str | None:
    """The workspace program (``flows.<module>``) a parsed command runs, or None when it runs in-process."""
    kind = getattr(args, "request", None)
    if kind is None or (getattr(args, "verb", "") == "agreement" and not args.flow):
        return None
    return str(kind.program)


def _check_data(args: argparse.Namespace, cfg: Any) -> Any:
    """The config's workspace; with ``--data DIR``, refused unless its data folder is DIR (after resolving)."""
    from t2ibench.workspace import Workspace

    ws = Workspace.for_config(cfg, args.config)
    if args.data is not None and Path(args.data).resolve() != ws.data.resolve():
        raise InputError(
            f"--data {args.data}: config {args.config} writes its data to {ws.data}, not there "
            "(params.yaml's leaderboard.data must be the config's outputs.data)"
        )
    return ws


def _check_outputs(ws: Any, name: str, config: Path) -> None:
    """Before a refresh starts: its data folder and store must be this config's and the store whole (the refresh
    checks again under its lock; this only makes the refusal come in a second, not after Prefect's start-up)."""
    from t2ibench.pipeline.ownership import check_data_folder
    from t2ibench.pipeline.runs import config_file
    from t2ibench.store import Store

    file = config_file(ws, config)
    check_data_folder(ws, name, file)
    if ws.store.exists():
        Store(ws.store).verify()
        Store(ws.store).check_claim(name, file)


def _check_hub_sources(cfg: Any, config: str, root: Path) -> None:
    """Every model the config loads by hub id or folder is readable (relative folders from the workspace ``root``,
    where the refresh runs): a missing folder, or a hub model neither cached nor reachable, is one line now, naming
    the key, before any model work (``models.hub``)."""
    from t2ibench.errors import FieldError
    from t2ibench.models.hub import resolve

    for key, source in cfg.hub_sources():
        try:
            resolve(source, base=root)
        except FieldError as exc:
            raise InputError(f"{config}:{key}.{exc.field}: {exc.message}") from None


def _cmd_run(args: argparse.Namespace) -> int:
    import time

    from t2ibench.config import load_config

    begun = time.time()
    cfg = load_config(args.config)  # validate before starting Prefect (clear errors, no 20 s start-up first)
    ws = _check_data(args, cfg)
    root, config = _workspace(args.config)
    _check_outputs(ws, cfg.name, config)
    _check_hub_sources(cfg, args.config, root)
    from t2ibench.requests import RefreshRequest

    summary = str(Path(args.summary).resolve()) if args.summary else None
    request = from_args(RefreshRequest, args, args.request_options, config=str(config), summary=summary, begun=begun)

    def stopped(signum: int) -> None:  # after a forwarded signal: a run the refresh could not record is recorded
        from t2ibench.pipeline.runs import mark_killed
        from t2ibench.signals import signal_name

        mark_killed(ws, signal_name(signum), "stopped by the signal before the refresh could record it")

    def killed(signum: int) -> None:  # killed by a signal nobody forwarded (the OOM killer): recorded for it
        from t2ibench.pipeline.runs import mark_killed
        from t2ibench.signals import killed_cause, signal_name

        cause = f"the refresh was killed by {signal_name(signum)} ({killed_cause(signum)}); its log: {ws.log}"
        mark_killed(ws, signal_name(signum), cause)

    return _run_flow(root, request, program="t2ibench run", after_stop=stopped, after_killed=killed, log=ws.log)


def _cmd_paper_tables(args: argparse.Namespace) -> int:
    from t2ibench.config import load_config
    from t2ibench.requests import PaperTablesRequest

    _check_data(args, load_config(args.config))  # validated before Prefect starts
    request = PaperTablesRequest(config=args.config, out=args.out)
    root, _ = _workspace(args.config, request.program)
    return _run_flow(root, request, cwd=Path.cwd(), program="t2ibench paper tables")


def _cmd_paper_digits(args: argparse.Namespace) -> int:
    from t2ibench.requests import DigitsRequest

    request = from_args(DigitsRequest, args, args.request_options)
    root = _checkout(Path.cwd(), request.program)
    return _run_flow(root, request, cwd=root, program="t2ibench paper digits")


def _cmd_gc(args: argparse.Namespace) -> int:
    from t2ibench.config import load_config
    from t2ibench.pipeline.gc import find_garbage, remove
    from t2ibench.pipeline.runs import config_file
    from t2ibench.store import run_lock

    cfg = load_config(args.config)
    ws = _check_data(args, cfg)
    with run_lock(ws.store, holder=f"t2ibench gc ({cfg.name})"):
        garbage = find_garbage(cfg, ws, config_file(ws, args.config))
        for path, size in garbage.stale:
            print(f"{'would remove' if args.dry_run else 'remove'} {path} ({size / 1e6:.1f} MB)")
        freed = garbage.size if args.dry_run else remove(garbage, ws)
    for path in garbage.foreign:
        print(f"left alone: {path} (not a model of config {cfg.name!r})", file=sys.stderr)
    for model, why in garbage.held:
        print(f"left alone: model {model}: {why}", file=sys.stderr)
    if not garbage.has_store:
        print(
            f"config {cfg.name!r} has no store yet ({ws.store}): nothing in {ws.data} is attributable to it; "
            "gc removes nothing",
            file=sys.stderr,
        )
    elif garbage.unattributed:
        print(
            f"left alone: {len(garbage.unattributed)} version folders or files that config {cfg.name!r}'s store does "
            f"not record as its own (made by another config, or before t2ibench recorded its folders), e.g. "
            f"{garbage.unattributed[0]}",
            file=sys.stderr,
        )
    verb = "would free" if args.dry_run else "freed"
    print(
        f"{ws.data}: {len(garbage.stale)} stale versions or files, {verb} {freed / 1e6:.1f} MB; "
        f"{len(garbage.kept)} current version folders kept",
        file=sys.stderr,
    )
    return EXIT_OK


def _cmd_report(args: argparse.Namespace) -> int:
    from t2ibench.config import load_config
    from t2ibench.report.leaderboard import render_reports
    from t2ibench.workspace import Workspace

    cfg = load_config(args.config)
    ws = Workspace.for_config(cfg, args.config)
    from t2ibench.paths import place, refuse_output, store_places

    published = [place("published table", p) for p in cfg.report.published_paths(ws.root) if Path(p).exists()]
    inputs = [*store_places(ws.store), place("--config", args.config), *published]
    refuse_output(args.out or ws.reports, flag="--out" if args.out else "outputs.reports", inputs=inputs, tree=True)
    out = render_reports(
        ws.store,
        Path(args.out) if args.out else ws.reports,
        config_name=cfg.name,
        published=cfg.report.published_paths(ws.root),
        root=ws.root,
    )
    print(f"wrote {out['markdown']} and {out['html']} ({out['models']} models, {len(out['models_html'])} model pages)")
    return EXIT_OK


def _store_path(args: argparse.Namespace) -> Path:
    if args.store:
        return Path(args.store)
    if args.config:
        from t2ibench.config import load_config
        from t2ibench.workspace import Workspace

        cfg = load_config(args.config)
        return Workspace.for_config(cfg, args.config).store
    return Path("data/t2ibench.duckdb")


def _cmd_sql(args: argparse.Namespace) -> int:
    from t2ibench.report.markdown import markdown_table
    from t2ibench.store import Store

    store = Store(_store_path(args), timeout=args.wait)
    if args.out:
        if args.write:
            raise InputError("--out exports a query's rows; it cannot be combined with --write")
        from t2ibench.paths import place, refuse_output, store_places

        refuse_output(args.out, flag="--out", inputs=[*store_places(store.path), place("--config", args.config)])
        count = store.user_export(args.query, args.out, time_limit=args.timeout)
        print(f"wrote {count} rows to {args.out}", file=sys.stderr)
        return EXIT_OK
    result = store.user_query(args.query, write=args.write, max_rows=args.limit, time_limit=args.timeout, text=True)
    if result.columns:
        print(markdown_table(list(result.columns), [["" if v is None else str(v) for v in r] for r in result.rows]))
        if result.truncated:
            print(f"(more than {args.limit} rows; raise --limit or use --out FILE.csv)", file=sys.stderr)
    return EXIT_OK


def _cmd_failures(args: argparse.Namespace) -> int:
    from t2ibench.report import failures
    from t2ibench.store import Store

    store = Store(_store_path(args), timeout=args.wait)
    data = failures.collect(store, args.model or None)
    models = args.model or sorted({r["model"] for r in data["summary"]})
    if not models:
        raise InputError(f"{store.path}: no completed model yet")
    print("\n".join(failures.headline_markdown(data, m) for m in models), end="")
    return EXIT_OK


def _cmd_data(args: argparse.Namespace) -> int:
    from t2ibench.datasets import fetch_release, local_source, release
    from t2ibench.paths import place, refuse_output

    names = {f.name for f in release(args.dataset).files}
    inputs = [place("--from", local_source(args.dataset, args.source), tree=True)]
    refuse_output(args.out, flag="--out", inputs=inputs, tree=True, covers=lambda rel: rel.parts[0] in names)
    files = fetch_release(args.dataset, args.out, source=args.source, revision=args.revision)
    print(f"{args.out}: {', '.join(f.name for f in files)} (verified)", file=sys.stderr)
    return EXIT_OK


def _cmd_schedule(args: argparse.Namespace) -> int:
    from t2ibench.requests import ScheduleRequest

    request = from_args(ScheduleRequest, args, args.request_options)  # refused here unless they make a request
    if args.config:
        root, config = _workspace(args.config, request.program)
        request = dataclasses.replace(request, config=str(config))
    else:  # listing needs no config: the checkout here runs it
        root = _checkout(Path.cwd(), request.program)
    return _run_flow(root, request, program="t2ibench schedule")


# -- parser ------------------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every verb (defaults come from the config classes: one place for each)."""
    parser = argparse.ArgumentParser(prog="t2ibench", description="Benchmark system for text-to-image models.")
    parser.add_argument("--version", action="version", version=f"t2ibench {__version__}")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    _add_diversity(verbs)
    _add_prompts(verbs)
    _add_evaluate(verbs)
    _add_selftest(verbs)
    _add_summary(verbs)
    _add_agreement(verbs)
    _add_generate(verbs)
    _add_run(verbs)
    _add_gc(verbs)
    _add_report(verbs)
    _add_sql(verbs)
    _add_failures(verbs)
    _add_data(verbs)
    _add_schedule(verbs)
    kinds = _add_paper(verbs)

    from t2ibench.params import add_params_option

    for verb in [*verbs.choices.values(), *kinds.choices.values()]:  # every verb reads a params file the same way
        add_params_option(verb)
    return parser


def _add_diversity(verbs: Any) -> None:
    """``t2ibench diversity``: its options (defaults from the typed classes)."""
    from t2ibench.config import MAX_SHARDS, DiversityConfig, Runtime
    from t2ibench.metrics.checks import KERNELS
    from t2ibench.requests import DigitsRequest

    div = verbs.add_parser(
        "diversity",
        help="VENDI/RKE diversity of an embedding file (exact and FKEA), or the bundled digits example",
        description=(
            "Kernel-entropy diversity. Gaussian kernel: exact VENDI from the n×n kernel (n ≤ 5000 by default) "
            "and FKEA from 2r random Fourier features; cosine kernel: exact at any n from the d×d covariance."
        ),
    )
    div.add_argument("embeddings", nargs="?", help="(n, d) embeddings as .npy (streamed) or .npz")
    div.add_argument("--example", choices=["digits"], help="run a bundled example instead of a file")
    div.add_argument("--kernel", choices=KERNELS, default=DiversityConfig.kernel)
    div.add_argument(
        "--sigma",
        type=_file_bandwidth,
        help="Gaussian bandwidth: a number (embedding units); 'median', the median heuristic (the file's own: not "
        "comparable with a leaderboard); or 'reference', the leaderboard's σ of the file's embedding space (a "
        "refresh's feature files name theirs). Default: reference where the file names its space, else median",
    )
    div.add_argument(
        "--method",
        choices=["auto", "exact", "fkea", "both"],
        default="auto",
        help="auto (default): exact when a cost model says it is no slower than FKEA or under 1 s, else FKEA; "
        "the output says which and why",
    )
    div.add_argument(
        "--rff-dim",
        type=int_from(1, 1_000_000),
        help="random Fourier frequencies r (2r features); default 2000, Scendi 1000, digits 512/500",
    )
    div.add_argument(
        "--alphas",
        help="comma-separated entropy orders α > 0, inf allowed (default "
        f"{','.join(str(a).removesuffix('.0') for a in DiversityConfig.alphas)}; digits: one order, 1)",
    )
    div.add_argument(
        "--seed",
        type=SEED,
        default=DiversityConfig.seed,
        help=f"seed for frequencies and subsampling (default {DiversityConfig.seed}, as a refresh's)",
    )
    div.add_argument(
        "--shards",
        type=int_from(1, MAX_SHARDS),
        default=DiversityConfig.shards,
        help=f"FKEA: accumulate the rows in N interleaved shards, merged, as a refresh does (default "
        f"{DiversityConfig.shards}, evaluators.diversity.shards)",
    )
    div.add_argument(
        "--orthogonal",
        action="store_true",
        default=DiversityConfig.orthogonal,
        help="FKEA: orthogonal random features (evaluators.diversity.orthogonal)",
    )
    div.add_argument(
        "--batch-size",
        type=int_from(1, 10_000_000),
        help="rows per batch (default: a refresh's FKEA batch; the output states it)",
    )
    div.add_argument("--device", default=Runtime.device, help="where the embedder of a reference σ runs (default auto)")
    div.add_argument(
        "--delta",
        type=_float_in(0.0, 1.0, open_low=True, open_high=True),
        default=0.05,
        help="failure probability of the FKEA radius",
    )
    div.add_argument(
        "--prompts",
        nargs="?",
        const=True,
        metavar="PROMPTS.npz",
        help="Scendi: prompt embeddings ('embeddings', 'ids') paired by id with the images' 'ids' "
        "(with --example digits: no value, the bundled prompts naming each digit)",
    )
    div.add_argument(
        "--text-sigma",
        type=_bandwidth,
        default="median",
        help="Scendi: text bandwidth, a number or 'median' (default)",
    )
    div.add_argument(
        "--epsilon",
        type=_float_in(0.0, 1.0, open_low=True, open_high=True),
        default=1e-6,
        help="Scendi: ridge on C_TT, relative to its trace",
    )
    div.add_argument(
        "--inverse",
        choices=["ridge", "pinv"],
        default="ridge",
        help="Scendi: C_TT⁻¹ as a ridge (default) or as the reference repository's pinv cut-off (epsilon unused)",
    )
    div.add_argument(
        "--truncation",
        type=int_from(1, 1_000_000),
        help="also report truncated VENDI-α: the top T eigenvalues with the leftover mass spread over them",
    )
    div.add_argument(
        "--modes",
        type=int_from(1, 10_000),
        metavar="K",
        help="also find the top K modes (FKEA, and Scendi with --prompts)",
    )
    div.add_argument("--top", type=int_from(1, 10_000), default=16, help="samples shown per mode (default 16)")
    div.add_argument("--gallery", metavar="DIR", help="write mode galleries (PNG grids + JSON, or Markdown for texts)")
    div.add_argument(
        "--n-per-condition",
        type=int_from(1, 100_000),
        default=DigitsRequest.n_per_condition,
        help="digits: images per class count",
    )
    div.add_argument("--per-prompt", type=int_from(1, 100_000), default=100, help="digits --prompts: pairs per prompt")
    div.add_argument(
        "--repeats",
        type=int_from(1, 1000),
        help=f"digits: seeded repeats (default {DigitsRequest.repeats}; 3 with --prompts)",
    )
    div.add_argument(
        "--sigma-scale",
        type=POSITIVE_FLOAT,
        default=DigitsRequest.sigma_scale,
        help="digits: σ as a multiple of the median distance",
    )
    div.add_argument("--json", help="also write the results as JSON to this path")
    div.add_argument("--quiet", action="store_true", help="no progress bar")
    div.set_defaults(func=_cmd_diversity)


def _add_prompts(verbs: Any) -> None:
    """``t2ibench prompts``: its options (defaults from the typed classes)."""

    prompts = verbs.add_parser("prompts", help="write a prompt suite (GenEval: the official 553 prompts by default)")
    prompts.add_argument("suite", choices=["geneval"])
    _suite_options(prompts, metadata=False)
    prompts.add_argument("--out", help="write JSON lines here (default: standard output)")
    prompts.set_defaults(func=_cmd_prompts)


def _add_evaluate(verbs: Any) -> None:
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
    _suite_options(evaluate, metadata=True)
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


def _add_selftest(verbs: Any) -> None:
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


def _add_summary(verbs: Any) -> None:
    """``t2ibench summary``: its options (defaults from the typed classes)."""

    summary = verbs.add_parser("summary", help="GenEval Table-2 summary of a results.jsonl (ours or the reference's)")
    summary.add_argument("results")
    _suite_options(summary, metadata=True)
    summary.add_argument("--images-per-prompt", type=int_from(1, 10_000), default=4)
    summary.add_argument("--allow-missing", action="store_true", help="exit 0 even if the results miss prompts")
    summary.add_argument("--json", help="also write the summary as JSON")
    summary.set_defaults(func=_cmd_summary)


def _add_agreement(verbs: Any) -> None:
    """``t2ibench agreement``: its options (defaults from the typed classes)."""
    from t2ibench.requests import AgreementRequest

    agree = verbs.add_parser(
        "agreement",
        help="human verdicts, inter-annotator and automatic-vs-human agreement from GenEval's MTurk annotations",
    )
    agree.add_argument("--annotations", nargs="+", required=True, metavar="CSV", help="annotations_{source}.csv files")
    _suite_options(agree, metadata=True)
    agree.add_argument(
        "--auto", action="append", metavar="[SOURCE=]RESULTS", help="results.jsonl of automatic verdicts (repeatable)"
    )
    agree.add_argument(
        "--auto-label", default=AgreementRequest.auto_label, help="name of the automatic verdict set in the report"
    )
    agree.add_argument("--scores", help="JSON lines {source, prompt_id, image_id, score} to tune per-task thresholds")
    agree.add_argument(
        "--folds", type=int_from(2, 1000), default=AgreementRequest.folds,
        help=f"cross-validation folds for tuned thresholds ({AgreementRequest.folds})",
    )  # fmt: skip
    agree.add_argument("--seed-cv", type=SEED, default=AgreementRequest.seed, help="seed of the fold assignment")
    agree.add_argument(
        "--ci-level", type=_float_in(0.0, 1.0, open_low=True, open_high=True), default=AgreementRequest.ci_level,
        help=f"confidence level of the bootstrap intervals (default {AgreementRequest.ci_level:g})",
    )  # fmt: skip
    agree.add_argument(
        "--resamples", type=int_from(1, 100_000), default=AgreementRequest.resamples,
        help=f"bootstrap resamples over prompts (default {AgreementRequest.resamples})",
    )  # fmt: skip
    agree.add_argument(
        "--seed-ci", type=SEED, default=AgreementRequest.ci_seed,
        help=f"seed of the bootstrap resampling (default {AgreementRequest.ci_seed})",
    )  # fmt: skip
    agree.add_argument("--out", help="write agreement.json, agreement.md and metrics.json to this folder")
    agree.add_argument(
        "--store", help="also upsert the annotations (with human verdicts) and the statistics into this DuckDB store"
    )
    agree.add_argument(
        "--flow",
        action="store_true",
        help="run it as the workspace's Prefect flow human_agreement (from a checkout; needs --metadata and --out): "
        "the same files",
    )
    agree.set_defaults(func=_cmd_agreement, request=AgreementRequest)


def _add_generate(verbs: Any) -> None:
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
    _suite_options(own, metadata=True)
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
    gen.add_argument("--guidance", type=_float_in(-1e6, 1e6), default=GeneratorConfig.guidance)
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


def _add_run(verbs: Any) -> None:
    """``t2ibench run``: its options (defaults from the typed classes)."""
    from t2ibench.requests import RefreshRequest

    run = verbs.add_parser(
        "run",
        help="the main job: refresh a config's leaderboard "
        "(Prefect flow: generate, embed, judge, measure, store, report)",
    )
    options = add_fields(run, RefreshRequest)  # the request's fields are the options (t2ibench.options)
    _data_option(run)
    run.set_defaults(func=_cmd_run, request=RefreshRequest, request_options=options)


def _add_gc(verbs: Any) -> None:
    """``t2ibench gc``: its options (defaults from the typed classes)."""

    gc = verbs.add_parser(
        "gc",
        help="remove the files of versions the config no longer makes (older images, results, embeddings)",
        description="Keep, under the config's data folder, only the versions its leaderboard shows: the folders "
        "its refresh would write now. Folders of models the config does not name are left alone; stored rows are "
        "never touched.",
    )
    gc.add_argument("--config", required=True)
    _data_option(gc)
    gc.add_argument("--dry-run", action="store_true", help="list what would be removed, remove nothing")
    gc.set_defaults(func=_cmd_gc)


def _add_report(verbs: Any) -> None:
    """``t2ibench report``: its options (defaults from the typed classes)."""

    report = verbs.add_parser("report", help="render the leaderboard (Markdown, HTML, plots, galleries) from the store")
    report.add_argument("--config", required=True)
    report.add_argument("--out", help="output folder (default: the config's reports folder)")
    report.set_defaults(func=_cmd_report)


def _add_sql(verbs: Any) -> None:
    """``t2ibench sql``: its options (defaults from the typed classes)."""

    sql = verbs.add_parser("sql", help="query the results store (read-only unless --write)")
    sql.add_argument("query", help='e.g. "SELECT * FROM leaderboard"')
    sql.add_argument("--store", help="DuckDB file (default: the config's store, else data/t2ibench.duckdb)")
    sql.add_argument("--config", help="take the store path from this config")
    sql.add_argument("--out", help="write the rows to FILE.csv or FILE.parquet instead of printing")
    sql.add_argument("--write", action="store_true", help="allow statements that modify the store")
    sql.add_argument(
        "--limit",
        type=int_from(0, 1_000_000),
        default=50,
        help="rows to print (default 50); the rest are never fetched",
    )
    sql.add_argument(
        "--timeout",
        type=_float_in(0.0, 1e9, open_low=True),
        default=60.0,
        help="stop the query after S seconds and release the store (default 60; a refresh waits 120 s for it)",
    )
    sql.add_argument("--wait", type=SECONDS, default=30.0, help="seconds to wait while a writer holds the store")
    sql.set_defaults(func=_cmd_sql)


def _add_failures(verbs: Any) -> None:
    """``t2ibench failures``: its options (defaults from the typed classes)."""

    fail = verbs.add_parser(
        "failures",
        help="where a model fails GenEval: position confusion, colour swaps, counting errors, missing objects",
    )
    fail.add_argument("--model", action="append", help="a stored model (repeatable; default: every current model)")
    fail.add_argument("--store", help="DuckDB file (default: the config's store, else data/t2ibench.duckdb)")
    fail.add_argument("--config", help="take the store path from this config")
    fail.add_argument("--wait", type=SECONDS, default=30.0, help="seconds to wait while a writer holds the store")
    fail.set_defaults(func=_cmd_failures)


def _add_data(verbs: Any) -> None:
    """``t2ibench data``: its options (defaults from the typed classes)."""
    from t2ibench.datasets import RELEASES

    data = verbs.add_parser(
        "data",
        help="acquire external data, verified against pinned SHA-256s: "
        + ", ".join(f"`data fetch {name}` ({r.title}, {r.licence})" for name, r in RELEASES.items()),
    )
    data.add_argument("action", choices=["fetch"])
    data.add_argument("dataset", choices=list(RELEASES))
    data.add_argument("--out", required=True, help="folder to write the files to")
    data.add_argument(
        "--from",
        dest="source",
        metavar="DIR",
        help="copy from this local folder instead of downloading (default, if set: "
        + ", ".join(f"${r.env} for {name}" for name, r in RELEASES.items())
        + ")",
    )
    data.add_argument(
        "--revision",
        help="git revision of the dataset's repository to download (default: "
        + ", ".join(f"{name} {r.revision[:7]}" for name, r in RELEASES.items())
        + "); the files' hashes are checked whatever the revision",
    )
    data.set_defaults(func=_cmd_data)


def _add_schedule(verbs: Any) -> None:
    """``t2ibench schedule``: its options (defaults from the typed classes)."""
    from t2ibench.requests import ScheduleRequest

    schedule = verbs.add_parser(
        "schedule",
        help="deploy the refresh on a cron to a Prefect work pool (run it with `prefect worker start --pool t2ibench`)",
    )
    options = add_fields(schedule, ScheduleRequest)
    schedule.set_defaults(func=_cmd_schedule, request=ScheduleRequest, request_options=options)


def _add_paper(verbs: Any) -> Any:
    """``t2ibench paper``: its options (defaults from the typed classes)."""
    from t2ibench.requests import DigitsRequest, PaperTablesRequest

    paper = verbs.add_parser(
        "paper",
        help="the paper's tables and figures (what `dvc repro` runs; the workspace's Prefect flow paper_tables)",
    )
    kinds = paper.add_subparsers(dest="kind", required=True, metavar="KIND")
    tables = kinds.add_parser(
        "tables", help="GenEval Table 2 and the diversity/Scendi table of a config's current models, from its store"
    )
    tables.add_argument("--config", required=True)
    _data_option(tables)
    tables.add_argument("--out", required=True, help="folder for table2.md, diversity.md and metrics.json")
    tables.set_defaults(func=_cmd_paper_tables, request=PaperTablesRequest)
    figure = kinds.add_parser("digits", help="the FKEA digits figure: VENDI/RKE as the digit classes grow 1 → 10")
    options = add_fields(figure, DigitsRequest)
    figure.set_defaults(func=_cmd_paper_digits, request=DigitsRequest, request_options=options)
    return kinds


def _data_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--data",
        metavar="DIR",
        help="refuse to start unless the config's outputs.data is this folder (DVC's outs must be what it writes)",
    )


def _evaluator_options(p: argparse.ArgumentParser) -> None:
    """Detector, colour classifier and verdict thresholds (defaults from the config classes)."""
    from t2ibench.config import ColourConfig, DetectorConfig
    from t2ibench.models.registry import COLOUR_CLASSIFIERS, DETECTORS

    p.add_argument("--detector", choices=DETECTORS.names(), default=DetectorConfig.backend)
    p.add_argument("--detector-model", default=DetectorConfig.model, help="hub id or folder (the backend's default)")
    p.add_argument("--detector-revision")
    default_resize = ",".join(map(str, DetectorConfig.resize)) if DetectorConfig.resize else "checkpoint"
    p.add_argument("--resize", default=default_resize, help="detector input SHORT,LONG edge, or 'checkpoint'")
    p.add_argument("--mmdet-config", help="GenEval's mmdet Mask2Former config (with --detector mmdet)")
    p.add_argument("--mmdet-checkpoint", default=None, help="mmdet checkpoint path or URL")
    p.add_argument("--colour", choices=COLOUR_CLASSIFIERS.names(), default=ColourConfig.backend)
    p.add_argument("--clip-arch", default=ColourConfig.arch)
    p.add_argument("--clip-pretrained", default=ColourConfig.pretrained, help="open_clip tag or local checkpoint file")
    p.add_argument(
        "--background", default=ColourConfig.background, help="colour crops: fill outside the mask, or 'original'"
    )
    p.add_argument("--device", default="auto")
    _param_options(p)


def _suite_options(p: argparse.ArgumentParser, *, metadata: bool) -> None:
    p.add_argument("--seed", type=SEED, default=43, help="suite seed (43: the official suite)")
    p.add_argument(
        "--per-task", type=int_from(1, 100_000), default=100, help="samples per task (100: the official suite)"
    )
    p.add_argument("--classes", help="draw prompts from these classes only, comma-separated (default: all 80)")
    if metadata:
        p.add_argument("--metadata", help="an evaluation_metadata.jsonl to use instead of generating the suite")


def _param_options(p: argparse.ArgumentParser) -> None:
    from t2ibench.metrics.geneval import GenEvalParams as P

    p.add_argument("--threshold", type=UNIT, default=P.threshold, help=f"detection score threshold ({P.threshold})")
    p.add_argument(
        "--counting-threshold", type=UNIT, default=P.counting_threshold, help=f"for counting ({P.counting_threshold})"
    )
    p.add_argument(
        "--max-objects", type=int_from(1, 10_000), default=P.max_objects, help=f"kept per class ({P.max_objects})"
    )
    p.add_argument(
        "--max-overlap",
        type=_float_in(0.0, 1.0, open_low=True),
        default=P.max_overlap,
        help=f"IoU de-duplication threshold ({P.max_overlap}: off)",
    )
    p.add_argument(
        "--position-margin",
        type=UNIT,
        default=P.position_margin,
        help=f"relative-position margin ({P.position_margin})",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``t2ibench`` console script; returns the process exit status."""
    try:
        from t2ibench.signals import exit_code, signal_name, signal_number, stop_on_signals
    except KeyboardInterrupt:  # Ctrl-C in the first tenth of a second, before any handler can be installed
        print("t2ibench: interrupted (SIGINT)", file=sys.stderr)
        return EXIT_INTERRUPTED
    try:
        with stop_on_signals("t2ibench"):
            from t2ibench.params import expand_params

            parser = build_parser()  # inside: building the parser imports modules, --params reads files
            args = parser.parse_args(expand_params(parser, sys.argv[1:] if argv is None else argv))
    except InputError as exc:
        print(f"t2ibench: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as exc:
        signum = signal_number(exc) or EXIT_INTERRUPTED - 128
        print(f"t2ibench: interrupted ({signal_name(signum)})", file=sys.stderr)
        return exit_code(signum)
    notes = logging.StreamHandler(sys.stderr)
    notes.setFormatter(logging.Formatter(f"t2ibench {args.verb}: note: %(message)s"))
    NOTES.addHandler(notes)
    NOTES.setLevel(logging.INFO)
    shown = warnings.showwarning

    def one_line(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
        print(f"t2ibench {args.verb}: warning: {' '.join(str(message).split())}", file=sys.stderr)

    warnings.showwarning = one_line  # no source paths and code lines in the user's console

    try:
        with stop_on_signals(f"t2ibench {args.verb}"):  # SIGTERM and SIGHUP stop a command as Ctrl-C does
            status: int = args.func(args)
    except (InputError, StateMismatchError) as exc:
        print(f"t2ibench {args.verb}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return int(getattr(exc, "exit_code", EXIT_USAGE))
    except KeyboardInterrupt as exc:
        signum = signal_number(exc) or EXIT_INTERRUPTED - 128
        print(f"t2ibench {args.verb}: interrupted ({signal_name(signum)})", file=sys.stderr)
        return exit_code(signum)
    finally:
        NOTES.removeHandler(notes)
        warnings.showwarning = shown
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
