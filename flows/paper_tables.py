"""Flow ``paper_tables``: the paper's tables and figures from stored results and bundled data.

* ``python -m flows.paper_tables tables --config configs/smoke.yaml --out data/paper/tables`` — GenEval Table 2
  and the diversity/Scendi table of the config's current models, from its DuckDB store.
* ``python -m flows.paper_tables digits --out data/paper/digits [--repeats N ...]`` — the FKEA digits figure.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import tasks  # noqa: F401  (project Prefect settings first)
from prefect import flow, task


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
            raise ValueError("tables need --config")
        ws = Workspace.for_config(load_config(config), config)
        return tables_task(str(ws.store), out)
    return digits_task(out, **(options or {}))


def main(argv: list[str] | None = None) -> int:
    """Command-line entry (``--params params.yaml:SECTION`` reads the options from a params section, as DVC does)."""
    from t2ibench.errors import InputError
    from t2ibench.params import add_params_option, expand_params

    parser = argparse.ArgumentParser(prog="flows.paper_tables", description=__doc__)
    sub = parser.add_subparsers(dest="kind", required=True)
    t = sub.add_parser("tables")
    t.add_argument("--config", required=True)
    t.add_argument("--data", help="refuse unless the config's outputs.data is this folder")
    t.add_argument("--out", required=True)
    d = sub.add_parser("digits")
    d.add_argument("--out", required=True)
    d.add_argument("--n-per-condition", type=int, default=170)
    d.add_argument("--repeats", type=int, default=10)
    d.add_argument("--sigma-scale", type=float, default=0.4)
    d.add_argument("--rff-dim", type=int, default=512)
    d.add_argument("--seed", type=int, default=0)
    for each in (t, d):
        add_params_option(each)
    try:
        args = parser.parse_args(expand_params(parser, sys.argv[1:] if argv is None else argv))
        if args.kind == "tables":
            if args.data is not None:
                from pathlib import Path

                from t2ibench.config import load_config
                from t2ibench.workspace import Workspace

                data = Workspace.for_config(load_config(args.config), args.config).data
                if Path(args.data).resolve() != data.resolve():
                    raise InputError(f"--data {args.data}: config {args.config} writes its data to {data}, not there")
            result = paper_tables("tables", args.out, config=args.config)
        else:
            options = {
                "n_per_condition": args.n_per_condition,
                "repeats": args.repeats,
                "sigma_scale": args.sigma_scale,
                "rff_dim": args.rff_dim,
                "seed": args.seed,
            }
            result = paper_tables("digits", args.out, options=options)
    except InputError as exc:
        print(f"paper_tables: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
