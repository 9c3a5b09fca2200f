"""Flow ``human_agreement``: GenEval's MTurk annotations → human verdicts → agreement tables → store + files.

``python -m flows.human_agreement --annotations A.csv B.csv --metadata evaluation_metadata.jsonl --out DIR
[--store data/t2ibench.duckdb] [--auto SOURCE=results.jsonl]`` writes agreement.json / agreement.md / metrics.json
(the headline numbers DVC tracks) and upserts the annotations and statistics into the DuckDB store.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import tasks  # noqa: F401  (project Prefect settings first)
from prefect import flow, task

RESULTS = {"persist_result": False}


@task(name="load-annotations", **RESULTS)
def load_task(paths: list[str], metadata: str) -> dict[str, Any]:
    """Annotations of every CSV, with their load reports."""
    from t2ibench.human_agreement import load_all_annotations
    from t2ibench.suites.geneval import read_suite

    suite = read_suite(metadata)
    annotations, reports = load_all_annotations(paths, suite)
    for report in reports:
        print(report.summary())
    return {"suite": suite, "annotations": annotations, "reports": reports}


@task(name="agreement", **RESULTS)
def agreement_task(loaded: dict[str, Any], auto: list[str], folds: int, seed: int) -> dict[str, Any]:
    """Human verdicts and every agreement table."""
    from t2ibench.geneval_eval import read_results
    from t2ibench.human_agreement import agreement_report, auto_verdicts, human_verdicts, parse_auto_spec

    hv = human_verdicts(loaded["annotations"], loaded["suite"])
    automatic: dict[Any, bool] = {}
    for spec in auto:
        source, path = parse_auto_spec(spec, hv.sources)
        automatic.update(auto_verdicts(read_results(path), source))
    report = agreement_report(hv, {"geneval": automatic} if automatic else None, folds=folds, seed=seed)
    return {"verdicts": hv, "report": report}


@task(name="store-agreement", **RESULTS)
def store_task(store_path: str, loaded: dict[str, Any], result: dict[str, Any]) -> int:
    """Upsert annotations (with their human verdicts) and agreement statistics."""
    from t2ibench.store import Store

    hv, report = result["verdicts"], result["report"]
    suite = loaded["suite"]
    ann_rows = []
    for a in loaded["annotations"]:
        correct = hv.verdicts[a.image_key][a.slot]
        ann_rows.append(
            {
                "source": a.source,
                "prompt_index": a.prompt_id,
                "image_id": a.image_id,
                "slot": a.slot,
                "tag": suite[a.prompt_id]["tag"],
                "answers": {
                    "counts": a.counts,
                    "colors": [sorted(c) if c else None for c in a.colors],
                    "position_x": a.position_x,
                    "position_y": a.position_y,
                    "quality": a.quality,
                    "realism": a.realism,
                    "objects": a.objects,
                },
                "human_correct": correct,
                "reason": hv.reasons.get((a.image_key, a.slot), ""),
            }
        )
    stats = []
    for (source, task_name), h in report.human.items():
        stats += [
            {"scope": "human", "source": source, "task": task_name, "statistic": k, "value": float(v)}
            for k, v in h.to_dict().items()
            if v is not None
        ]
    for label, table in report.auto.items():
        for (source, task_name), a in table.items():
            stats += [
                {"scope": f"auto:{label}", "source": source, "task": task_name, "statistic": k, "value": float(v)}
                for k, v in a.to_dict().items()
                if v is not None
            ]
    store = Store(store_path)
    with store.write() as con:
        store.upsert(con, "annotations", ann_rows)
        store.upsert(con, "agreement", stats)
    return len(ann_rows)


@flow(name="human_agreement", log_prints=True)
def human_agreement(
    annotations: list[str],
    metadata: str,
    out: str,
    store: str | None = None,
    auto: list[str] | None = None,
    folds: int = 5,
    seed: int = 0,
) -> dict[str, Any]:
    """Recompute GenEval's trust numbers from its annotations; write files and (optionally) the store."""
    from t2ibench.report.agreement import render_agreement

    loaded = load_task(annotations, metadata)
    result = agreement_task(loaded, auto or [], folds, seed)
    report = result["report"]
    target = Path(out)
    target.mkdir(parents=True, exist_ok=True)
    (target / "agreement.json").write_text(json.dumps(report.to_dict(), indent=2, sort_keys=True, default=str) + "\n")
    text = "\n\n".join([*(r.summary() for r in loaded["reports"]), render_agreement(report)])
    (target / "agreement.md").write_text(text + "\n")
    pooled = report.human[("all", "all")]
    headline = {
        "inter_annotator_pairwise": round(pooled.pairwise_agreement, 4),
        "fleiss_kappa": round(pooled.fleiss_kappa, 4),
        "annotations": pooled.annotations,
    }
    for source in result["verdicts"].sources:
        accuracies = [h.human_accuracy for (s, t), h in report.human.items() if s == source and t != "all"]
        headline[f"human_score_{source}"] = round(sum(accuracies) / len(accuracies), 4)
    (target / "metrics.json").write_text(json.dumps(headline, indent=2, sort_keys=True) + "\n")
    stored = store_task(store, loaded, result) if store else 0
    return {"headline": headline, "stored": stored}


def main(argv: list[str] | None = None) -> int:
    """Command-line entry."""
    parser = argparse.ArgumentParser(prog="flows.human_agreement", description=__doc__)
    parser.add_argument("--annotations", nargs="+", required=True)
    parser.add_argument("--metadata", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--store")
    parser.add_argument("--auto", action="append")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    result = human_agreement(args.annotations, args.metadata, args.out, args.store, args.auto, args.folds, args.seed)
    print(json.dumps(result["headline"], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
