"""What the verbs share: exit codes, JSON output, the --data check."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from t2ibench.errors import InputError
from t2ibench.fields import Option
from t2ibench.options import FieldOption, add_fields

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_REGRESSION = 3  # `run --fail-on-regression`: the refresh flagged a regression
EXIT_INTERRUPTED = 130


def write_json(path: Path, payload: dict[str, Any]) -> None:
    """Write ``payload`` as JSON to ``path`` (atomically)."""
    from t2ibench.io import write_text_atomic

    write_text_atomic(path, json.dumps(payload, indent=2, sort_keys=True, allow_nan=False) + "\n")


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


@dataclass(frozen=True)
class DataFolder:
    """The check of the verbs that write a config's data folder (``run``, ``gc``, ``paper tables``): DVC's stages
    name the folder their outputs are in, and the config must write there."""

    data: Annotated[str | None, Option(metavar="DIR")] = None
    """Refuse to start unless the config's outputs.data is this folder (DVC's outs must be what it writes)."""


@dataclass(frozen=True)
class Device:
    """Where a verb that loads models runs them (``evaluate``, ``generate``, ``selftest``)."""

    device: str = "auto"
    """Where the models run: auto, cpu, cuda, cuda:N or mps."""


def data_option(p: Any) -> list[FieldOption]:
    """``--data DIR`` (``DataFolder``'s field) on the argparse parser ``p``: ``check_data`` reads it."""
    return add_fields(p, DataFolder)
