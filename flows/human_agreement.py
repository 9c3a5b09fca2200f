"""Flow ``human_agreement``: GenEval's MTurk annotations → human verdicts → agreement tables → files (+ store).

``python -m flows.human_agreement --annotations A.csv B.csv --metadata evaluation_metadata.jsonl --out DIR
[--store data/t2ibench.duckdb] [--auto SOURCE=results.jsonl] [--auto-label L] [--scores S.jsonl] [--folds K]
[--seed S]`` writes agreement.json / agreement.md / metrics.json
(the headline numbers DVC tracks) — the same files ``t2ibench agreement --out DIR`` writes — and upserts the
annotations and statistics into the DuckDB store.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import tasks  # noqa: F401  (project Prefect settings first)
from prefect import flow, task

RESULTS = {"persist_result": False}


@task(name="agreement", **RESULTS)
def agreement_task(
    annotations: list[str], metadata: str, auto: list[str], auto_label: str, scores: str | None, folds: int, seed: int
) -> Any:
    """Load the annotations and compute every agreement table (t2ibench.human_agreement.run_agreement)."""
    from t2ibench.human_agreement import run_agreement
    from t2ibench.suites.geneval import read_suite

    run = run_agreement(
        annotations, read_suite(metadata), auto=auto, auto_label=auto_label, scores=scores, folds=folds, seed=seed
    )
    for load in run.loads:
        print(load.summary())
    return run


@task(name="write-agreement", **RESULTS)
def write_task(run: Any, out: str) -> list[str]:
    """agreement.json, agreement.md and metrics.json."""
    from t2ibench.report.agreement import write_agreement

    return [str(p) for p in write_agreement(run, out)]


@task(name="store-agreement", **RESULTS)
def store_task(run: Any, store: str) -> int:
    """Upsert annotations (with their human verdicts) and agreement statistics."""
    from t2ibench.human_agreement import store_agreement

    return store_agreement(run, store)


@flow(name="human_agreement", log_prints=True)
def human_agreement(
    annotations: list[str],
    metadata: str,
    out: str,
    store: str | None = None,
    auto: list[str] | None = None,
    auto_label: str = "geneval",
    scores: str | None = None,
    folds: int = 5,
    seed: int = 0,
) -> dict[str, Any]:
    """Recompute GenEval's trust numbers from its annotations; write files and (optionally) the store."""
    from t2ibench.human_agreement import headline

    run = agreement_task(annotations, metadata, auto or [], auto_label, scores, folds, seed)
    files = write_task(run, out)
    stored = store_task(run, store) if store else 0
    return {"headline": headline(run), "files": files, "stored": stored}


def main(argv: list[str] | None = None) -> int:
    """Command-line entry."""
    parser = argparse.ArgumentParser(prog="flows.human_agreement", description=__doc__)
    parser.add_argument("--annotations", nargs="+", required=True)
    parser.add_argument("--metadata", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--store")
    parser.add_argument("--auto", action="append", metavar="[SOURCE=]RESULTS")
    parser.add_argument("--auto-label", default="geneval")
    parser.add_argument("--scores")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    from t2ibench.errors import InputError
    from t2ibench.params import add_params_option, expand_params

    add_params_option(parser)
    try:
        args = parser.parse_args(expand_params(parser, sys.argv[1:] if argv is None else argv))
        result = human_agreement(
            args.annotations,
            args.metadata,
            args.out,
            store=args.store,
            auto=args.auto,
            auto_label=args.auto_label,
            scores=args.scores,
            folds=args.folds,
            seed=args.seed,
        )
    except InputError as exc:
        print(f"human_agreement: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    print(json.dumps(result["headline"], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
