"""Paper tables from the store (the spine benchmark's table, diversity/Scendi) and the digits figure (rendering
only)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from t2ibench import artifacts
from t2ibench.benchmarks import spine_report
from t2ibench.report.markdown import markdown_table
from t2ibench.store import Store, queries


def _f(x: Any, digits: int = 2) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def write_tables(store_path: str | Path, out_dir: str | Path) -> dict[str, Any]:
    """The spine benchmark's table (its ``paper_table``), diversity.md (FKEA/RKE/Scendi) and metrics.json (headline
    numbers) for current models, every number at the paper artifacts' stated precision (``t2ibench.artifacts``: the
    same bytes on any machine)."""
    store = Store(store_path)
    store.initialise()  # a store written by an older version gains the current schema first (additive migration)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    board = artifacts.stated(queries.leaderboard_by_model(store))  # every rendering below shows these values
    metrics = artifacts.stated(queries.headline_metrics(store))
    smoke = any(r["smoke"] for r in board)
    note = "Smoke run (random-weight models): numbers test the pipeline only.\n\n" if smoke else ""
    spine = spine_report()
    spine_file, spine_table = spine.paper_table(board, note, spine.paper_marks(store))
    artifacts.write_text(out / spine_file, spine_table)

    def value(model: str, metric: str, alpha: float | None) -> dict[str, Any] | None:
        return next(
            (
                m
                for m in metrics
                if m["model"] == model and m["metric"] == metric and (alpha is None or m["alpha"] == alpha)
            ),
            None,
        )

    rows, headline = [], {}
    for r in board:
        fkea, rke = value(r["model"], "fkea", 1.0), value(r["model"], "rke", 2.0)
        scendi, share = value(r["model"], "scendi", None), value(r["model"], "scendi_model_share", None)
        rows.append(
            [
                r["model"],
                fkea["n"] if fkea else "—",
                _f(fkea["value"] if fkea else None),
                _f(fkea["error_bound"] if fkea else None, 3),
                _f(rke["value"] if rke else None),
                _f(scendi["value"] if scendi else None),
                _f(share["value"] if share else None, 3),
            ]
        )
        headline[r["model"]] = {
            spine.HEADLINE: r["overall"],
            "fkea_vendi_1": None if fkea is None else fkea["value"],
            "scendi": None if scendi is None else scendi["value"],
        }
    diversity = markdown_table(["Model", "n", "FKEA VENDI-1", "FKEA radius", "RKE", "Scendi", "model share"], rows)
    artifacts.write_text(out / "diversity.md", f"# Diversity\n\n{note}{diversity}\n")
    artifacts.write_json(out / "metrics.json", {"smoke": smoke, "models": headline})
    return {"table2": str(out / spine_file), "diversity": str(out / "diversity.md"), "models": len(board)}
