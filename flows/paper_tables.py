"""Flow ``paper_tables``: the paper's tables and figures from stored results and bundled data.

* ``t2ibench paper tables --config configs/smoke.yaml --out data/paper/tables`` — GenEval Table 2 and the
  diversity/Scendi table of the config's current models, from its DuckDB store (a ``PaperTablesRequest``).
* ``t2ibench paper digits --out data/paper/digits [--repeats N ...]`` — the FKEA digits figure (a
  ``DigitsRequest``).

The command starts this module as a program whose one argument is the request as JSON (``t2ibench.requests``);
``run(request)`` is that program.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import tasks  # noqa: F401  (project Prefect settings first)
from prefect import flow, task

from t2ibench.requests import DigitsRequest, PaperTablesRequest, request_main

PROGRAM = "paper_tables"


@task(name="tables")
def tables_task(store: str, out: str) -> dict[str, Any]:
    """Table 2 and the diversity table from the store."""
    from t2ibench.report.paper import write_tables

    return write_tables(store, out)


@task(name="digits")
def digits_task(
    out: str, n_per_condition: int, repeats: int, sigma_scale: float, rff_dim: int, seed: int
) -> dict[str, Any]:
    """The digits class sweep and its figure."""
    from t2ibench.examples.digits import DigitsSweepConfig, digits_class_sweep, write_digits_figure

    config = DigitsSweepConfig(
        n_per_condition=n_per_condition, repeats=repeats, sigma_scale=sigma_scale, rff_dim=rff_dim, seed=seed
    )
    return write_digits_figure(digits_class_sweep(config, show_progress=False), out)


@flow(name="paper_tables", log_prints=True)
def paper_tables(
    kind: str, out: str, config: str | None = None, options: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Regenerate one group of paper artefacts."""
    if kind == "tables":
        from t2ibench.config import load_config
        from t2ibench.workspace import Workspace

        if config is None:
            raise ValueError("tables need a config")
        ws = Workspace.for_config(load_config(config), config)
        return tables_task(str(ws.store), out)
    return digits_task(out, **(options or {}))


def run(request: PaperTablesRequest | DigitsRequest) -> int:
    """What ``t2ibench paper tables`` / ``t2ibench paper digits`` ask for: run the flow, print what it wrote as JSON;
    returns the exit status. Prefect's log lines and the libraries' output go to ``<out>/logs/paper_tables.log``."""
    from t2ibench.errors import InputError
    from t2ibench.logs import route_to_log

    log = request.log_file() or Path(f"{PROGRAM}.log")
    out = route_to_log(log, program=PROGRAM)
    print(f"{PROGRAM}: started (its full log: {log})", file=out.err, flush=True)
    try:
        if isinstance(request, PaperTablesRequest):
            result = paper_tables("tables", request.out, config=request.config)
        else:
            options = {k: v for k, v in dataclasses.asdict(request).items() if k != "out"}
            result = paper_tables("digits", request.out, options=options)
    except InputError as exc:
        print(f"{PROGRAM}: error: {' '.join(str(exc).split())}", file=out.err, flush=True)
        return 2
    print(json.dumps(result, indent=2, default=str), file=out.out, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(request_main((PaperTablesRequest, DigitsRequest), run, PROGRAM))
