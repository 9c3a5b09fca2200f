"""GenEval's command-line spelling, shared by its entry (``evaluate geneval``, ``generate geneval``) and its own verbs
(``prompts``, ``selftest``, ``summary``, ``agreement``): the suite options and the evaluator's options, derived from
``DetectorConfig``, ``ColourConfig`` and ``GenEvalParams`` (``t2ibench.options``), and their parsing."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from t2ibench.benchmarks.geneval.options import GenEvalConfig, GenEvalSuite
from t2ibench.benchmarks.geneval.suite import WORDINGS
from t2ibench.errors import InputError


@dataclass(frozen=True)
class SuiteFile:
    """A released suite file read instead of generating GenEval's suite (``evaluate geneval``, ``summary``,
    ``generate geneval``; ``agreement``'s request has the field itself)."""

    metadata: str | None = None
    """An evaluation_metadata.jsonl to use instead of generating the suite."""


@dataclass(frozen=True)
class SuiteWording:
    """The wording of the suite's prompts (``generate geneval``, ``evaluate geneval``, ``prompts``, ``summary``):
    a refresh's ``models[].wording`` for one command."""

    wording: str = WORDINGS[0]
    """The prompts' wording: original (GenEval's templates) or rewritten (the official suite's prompts rewritten long
    by an LLM, read from --rewritten: another protocol, marked †; same records, so the same verdicts apply)."""


DETECTOR_OPTIONS = {"backend": "--detector", "model": "--detector-model", "revision": "--detector-revision"}
"""The detector spec's fields whose options are not ``--field-name``."""
COLOUR_OPTIONS = {"backend": "--colour", "arch": "--clip-arch", "pretrained": "--clip-pretrained"}
"""The colour spec's fields whose options are not ``--field-name``."""


def suite_options(p: Any, *, metadata: bool, wording: bool) -> None:
    """GenEval's suite options on the argparse parser or group ``p``: ``GenEvalSuite``'s seed, per_task and classes
    (a refresh's ``benchmarks.geneval``; its subset fields, limit_per_task and prompts, choose prompts of a refresh and
    are not a suite's), --metadata (a released file instead of the generated suite) where ``metadata``, and
    --wording with the rewritten file it reads (``GenEvalSuite.rewritten``) where ``wording``."""
    from t2ibench.options import add_fields

    made = add_fields(p, GenEvalSuite, skip=("limit_per_task", "prompts", *(() if wording else ("rewritten",))))
    p.set_defaults(geneval_suite=made)
    if metadata:
        add_fields(p, SuiteFile)
    if wording:
        add_fields(p, SuiteWording, choices={"wording": WORDINGS})  # --rewritten: GenEvalSuite's field, above


def suite_records(args: argparse.Namespace) -> list[dict[str, Any]]:
    """GenEval's prompt records the suite options name: generated (--seed, --per-task, --classes) or --metadata, in
    the --wording asked for (where the command has it)."""
    from t2ibench.benchmarks.geneval.suite import generate_suite, read_suite, reword_records
    from t2ibench.options import from_args

    suite = from_args(GenEvalSuite, args, args.geneval_suite)  # checked as the config's, each error under its option
    if getattr(args, "metadata", None):
        records = read_suite(args.metadata)
    else:
        records = generate_suite(seed=suite.seed, per_task=suite.per_task, classes=suite.classes)
    wording = getattr(args, "wording", WORDINGS[0])
    if wording == WORDINGS[0] and suite.rewritten != GenEvalSuite.rewritten:
        raise InputError("--rewritten names the rewritten prompts' file: give --wording rewritten too")
    return reword_records(records, wording, suite.rewritten, where=f"--wording {wording} (--rewritten)")


def evaluator_options(p: argparse.ArgumentParser, *, device: type | None = None) -> None:
    """The detector's, colour classifier's and verdict thresholds' options: ``DetectorConfig``'s,
    ``ColourConfig``'s and ``GenEvalParams``' fields (``t2ibench.options``; ``--resize`` is the detector's resize
    field as SHORT,LONG or 'checkpoint'); ``device``: the class whose field is the command's ``--device``, declared
    between the models' options and the thresholds' (None: the command declares it)."""
    from t2ibench.benchmarks.geneval.metrics import GenEvalParams
    from t2ibench.models.registry import COLOUR_CLASSIFIERS, DETECTORS
    from t2ibench.options import add_fields
    from t2ibench.specs import ColourConfig, DetectorConfig

    detector = add_fields(
        p, DetectorConfig, skip=("resize",), flags=DETECTOR_OPTIONS, choices={"backend": DETECTORS.names()},
        dest_prefix="detector_",
    )  # fmt: skip
    default_resize = ",".join(map(str, DetectorConfig.resize)) if DetectorConfig.resize else "checkpoint"
    p.add_argument("--resize", default=default_resize, help="detector input SHORT,LONG edge, or 'checkpoint'")
    colour = add_fields(
        p, ColourConfig, flags=COLOUR_OPTIONS, choices={"backend": COLOUR_CLASSIFIERS.names()}, dest_prefix="colour_"
    )
    if device is not None:
        add_fields(p, device)
    params = add_fields(p, GenEvalParams)
    p.set_defaults(geneval_options=(detector, colour, params))


def _resize(args: argparse.Namespace) -> tuple[int, int] | None:
    if args.resize == "checkpoint":
        return None
    try:
        short, long = (int(v) for v in args.resize.split(","))
    except ValueError:
        raise InputError(f"--resize must be SHORT,LONG (e.g. 800,1333) or 'checkpoint'; got {args.resize!r}") from None
    return short, long


def geneval_config(args: argparse.Namespace) -> GenEvalConfig:
    """The GenEvalConfig the options describe, validated by the config's own rules before any model is loaded."""
    from t2ibench.options import from_args
    from t2ibench.specs import ColourConfig, DetectorConfig

    detector, colour, params = args.geneval_options
    made: GenEvalConfig = from_args(
        GenEvalConfig,
        args,
        params,
        detector=from_args(DetectorConfig, args, detector, resize=_resize(args)),
        colour=from_args(ColourConfig, args, colour),
    )
    return made


def evaluator_inputs(args: argparse.Namespace) -> list[Any]:
    """The evaluator options naming local files or folders, as inputs no output may overwrite (``t2ibench.paths``)."""
    from t2ibench.paths import place

    named = {
        "--detector-model": args.detector_model,
        "--mmdet-config": args.detector_mmdet_config,
        "--mmdet-checkpoint": args.detector_mmdet_checkpoint,
        "--clip-pretrained": args.colour_pretrained,
    }
    return [place(flag, v, tree=Path(v).is_dir()) for flag, v in named.items() if v and Path(v).exists()]


def model_sections(evaluator: GenEvalConfig) -> list[tuple[Any, dict[str, str]]]:
    """The spec sections of a GenEval evaluator that name models, with the options that set their fields."""
    return [(evaluator.detector, DETECTOR_OPTIONS), (evaluator.colour, COLOUR_OPTIONS)]
