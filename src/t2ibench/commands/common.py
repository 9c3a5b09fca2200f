"""What the verbs share: argument types, exit codes, the GenEval suite options, the --data check."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from t2ibench.errors import InputError
from t2ibench.options import int_from

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


SEED = int_from(0, 2**31 - 1)


def write_json(path: Path, payload: dict[str, Any]) -> None:
    """Write ``payload`` as JSON to ``path`` (atomically)."""
    from t2ibench.io import write_text_atomic

    write_text_atomic(path, json.dumps(payload, indent=2, sort_keys=True, allow_nan=False) + "\n")


def suite_records(args: argparse.Namespace) -> list[dict[str, Any]]:
    """GenEval's prompt records the suite options name: generated (--seed, --per-task, --classes) or --metadata."""
    from t2ibench.benchmarks.geneval.suite import generate_suite, read_suite

    if getattr(args, "metadata", None):
        return read_suite(args.metadata)
    classes = [c.strip() for c in args.classes.split(",")] if args.classes else None
    return generate_suite(seed=args.seed, per_task=args.per_task, classes=classes)


def check_data(args: argparse.Namespace, cfg: Any) -> Any:
    """The config's workspace; with ``--data DIR``, refused unless its data folder is DIR (after resolving)."""
    from t2ibench.workspace import Workspace

    ws = Workspace.for_config(cfg, args.config)
    if args.data is not None and Path(args.data).resolve() != ws.data.resolve():
        raise InputError(
            f"--data {args.data}: config {args.config} writes its data to {ws.data}, not there "
            "(params.yaml's leaderboard.data must be the config's outputs.data)"
        )
    return ws


def data_option(p: argparse.ArgumentParser) -> None:
    """``--data DIR``: refuse to start unless the config's data folder is DIR."""
    p.add_argument(
        "--data",
        metavar="DIR",
        help="refuse to start unless the config's outputs.data is this folder (DVC's outs must be what it writes)",
    )


def suite_options(p: argparse.ArgumentParser, *, metadata: bool) -> None:
    """GenEval's suite options: --seed, --per-task, --classes (and --metadata)."""
    p.add_argument("--seed", type=SEED, default=43, help="suite seed (43: the official suite)")
    p.add_argument(
        "--per-task", type=int_from(1, 100_000), default=100, help="samples per task (100: the official suite)"
    )
    p.add_argument("--classes", help="draw prompts from these classes only, comma-separated (default: all 80)")
    if metadata:
        p.add_argument("--metadata", help="an evaluation_metadata.jsonl to use instead of generating the suite")
