"""Flow ``human_agreement``: GenEval's MTurk annotations → human verdicts → agreement tables → files (+ store).

``t2ibench agreement --flow --annotations A.csv B.csv --metadata evaluation_metadata.jsonl --out DIR
[--store data/t2ibench.duckdb] [--auto SOURCE=results.jsonl] [--auto-label L] [--scores S.jsonl] [--folds K]
[--seed-cv S]`` runs this flow: it writes agreement.json / agreement.md / metrics.json (the headline numbers DVC
tracks) — the same files ``t2ibench agreement --out DIR`` writes in-process — and upserts the annotations and
statistics into the DuckDB store. The command starts this module as a program whose one argument is the request
(``t2ibench.benchmarks.geneval.options_agreement.AgreementRequest`` as JSON); ``run(request)`` is that program.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import tasks  # noqa: F401  (project Prefect settings first)
from prefect import flow, task

from t2ibench.benchmarks.geneval.options_agreement import AgreementRequest
from t2ibench.requests import request_main

PROGRAM = "human_agreement"
RESULTS = {"persist_result": False}


@task(name="agreement", **RESULTS)
def agreement_task(annotations: list[str], metadata: str, options: dict[str, Any]) -> Any:
    """Load the annotations and compute every agreement table (t2ibench.benchmarks.geneval.agreement.run_agreement, with
    ``options`` its keyword arguments)."""
    from t2ibench.benchmarks.geneval.agreement import run_agreement
    from t2ibench.benchmarks.geneval.suite import read_suite

    run = run_agreement(annotations, read_suite(metadata), **options)
    for load in run.loads:
        print(load.summary())
    return run


@task(name="write-agreement", **RESULTS)
def write_task(run: Any, out: str) -> list[str]:
    """agreement.json, agreement.md and metrics.json."""
    from t2ibench.benchmarks.geneval.report_agreement import write_agreement

    return [str(p) for p in write_agreement(run, out)]


@task(name="store-agreement", **RESULTS)
def store_task(run: Any, store: str) -> int:
    """Upsert annotations (with their human verdicts) and agreement statistics."""
    from t2ibench.benchmarks.geneval.agreement import store_agreement

    return store_agreement(run, store)


@flow(name="human_agreement", log_prints=True)
def human_agreement(
    annotations: list[str],
    metadata: str,
    out: str,
    store: str | None = None,
    auto: list[str] | None = None,
    auto_label: str = AgreementRequest.auto_label,
    scores: str | None = None,
    folds: int = AgreementRequest.folds,
    seed: int = AgreementRequest.seed,
    resamples: int = AgreementRequest.resamples,
    ci_level: float = AgreementRequest.ci_level,
    ci_seed: int = AgreementRequest.ci_seed,
) -> dict[str, Any]:
    """Recompute GenEval's trust numbers from its annotations; write files and (optionally) the store."""
    from t2ibench.benchmarks.geneval.agreement import headline

    options = {
        "auto": auto or [],
        "auto_label": auto_label,
        "scores": scores,
        "folds": folds,
        "seed": seed,
        "resamples": resamples,
        "ci_level": ci_level,
        "ci_seed": ci_seed,
    }
    analysis = agreement_task(annotations, metadata, options)
    files = write_task(analysis, out)
    stored = store_task(analysis, store) if store else 0
    return {"headline": headline(analysis), "files": files, "stored": stored}


def run(request: AgreementRequest) -> int:
    """What ``t2ibench agreement --flow`` asks for: run the flow, print the headline numbers as JSON; returns the
    exit status."""
    from t2ibench.errors import InputError
    from t2ibench.logs import route_to_log

    log = request.log_file() or Path(f"{PROGRAM}.log")
    out = route_to_log(log, program=PROGRAM)
    print(f"{PROGRAM}: started (its full log: {log})", file=out.err, flush=True)
    fields = dataclasses.asdict(request)
    fields |= {"annotations": list(request.annotations), "auto": list(request.auto)}
    try:
        result = human_agreement(**fields)
    except InputError as exc:
        print(f"{PROGRAM}: error: {' '.join(str(exc).split())}", file=out.err, flush=True)
        return 2
    print(json.dumps(result["headline"], indent=2), file=out.out, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(request_main(AgreementRequest, run, PROGRAM))
