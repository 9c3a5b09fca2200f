"""What a refresh changed, and how its models compare — by paired tests on the prompts both sides share
(``t2ibench.metrics.paired``), over the spine benchmark's stored per-prompt results (GenEval: correct images of
images, per task).

* **Since the last refresh** (kind ``since``): each model of the latest completed run against its version in the
  completed run before it — new, not in this run (its last version stays current), unchanged, or changed and
  compared old → new.
* **Pairs** (kind ``pair``): every two current models measured under one protocol (the spine's measured protocol:
  prompts, evaluator, images per prompt), the better first, smoke models aside — what the leaderboard's "≈" and
  shared ranks read.

Each kind's p-values form one family per run, adjusted by Holm's step-down method; a comparison is flagged
(improvement / regression, or separated) when its adjusted p-value is ≤ 1 − the configured confidence level. Two
versions without a shared prompt are not compared (status says so). Every draw is seeded: the same store gives the
same rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from t2ibench.benchmarks import SPINE
from t2ibench.metrics.levels import CI_LEVEL
from t2ibench.metrics.paired import METHOD, PairedDifference, holm, paired_difference
from t2ibench.store import Store, queries

Key = tuple[str, str, str]  # (model, model_hash, evaluator_hash)
Results = Mapping[tuple[str, int], tuple[str, float, float]]  # (suite, prompt) → (stratum, successes, trials)
SEED = 0


def stored_results(store: Store) -> dict[Key, dict[tuple[str, int], tuple[str, float, float]]]:
    """Every stored version's per-prompt results of the spine benchmark (``paired_results``)."""
    found: dict[Key, dict[tuple[str, int], tuple[str, float, float]]] = {}
    for r in queries.spine_rows(store, "paired_results"):
        key = (r["model"], r["model_hash"], r["evaluator_hash"])
        found.setdefault(key, {})[(r["suite"], int(r["prompt_index"]))] = (
            str(r["stratum"]),
            float(r["successes"]),
            float(r["trials"]),
        )
    return found


def compare(mine: Results, other: Results, *, level: float) -> PairedDifference | None:
    """``mine`` against ``other`` on their shared prompts (same suite and index, same stratum): the paired difference
    mine − other, its interval at ``level``, p-value and each side's score there (None: no shared prompt)."""
    shared = sorted(k for k in mine.keys() & other.keys() if mine[k][0] == other[k][0])
    if not shared:
        return None
    strata = [mine[k][0] for k in shared]
    b = np.array([mine[k][1:] for k in shared], dtype=np.float64)
    a = np.array([other[k][1:] for k in shared], dtype=np.float64)
    return paired_difference(a, b, strata, level=level, seed=SEED)


def _row(run_id: str, kind: str, model: str, other: str, status: str, keys: tuple[Key | None, Key | None],
         paired: PairedDifference | None, level: float, previous: str | None) -> dict[str, Any]:  # fmt: skip
    mine, theirs = keys
    return {
        "run_id": run_id, "kind": kind, "benchmark": SPINE, "model": model, "other": other, "status": status,
        "model_hash": mine[1] if mine else None, "evaluator_hash": mine[2] if mine else None,
        "other_model_hash": theirs[1] if theirs else None, "other_evaluator_hash": theirs[2] if theirs else None,
        "score": paired.score_b if paired else None, "other_score": paired.score_a if paired else None,
        "difference": paired.difference if paired else None, "ci_low": paired.low if paired else None,
        "ci_high": paired.high if paired else None, "ci_level": level, "p_value": paired.p_value if paired else None,
        "p_adjusted": None, "flagged": None, "prompts": paired.prompts if paired else 0,
        "method": METHOD if paired else None, "previous_run": previous,
    }  # fmt: skip


def _adjust(rows: list[dict[str, Any]], level: float, flag: Any) -> list[dict[str, Any]]:
    """Holm-adjust the rows' p-values as one family and flag those at ≤ 1 − level (``flag(row)``: its word)."""
    tested = [r for r in rows if r["p_value"] is not None]
    for r, adjusted in zip(tested, holm([r["p_value"] for r in tested]), strict=True):
        r["p_adjusted"] = adjusted
        r["flagged"] = flag(r) if adjusted <= 1 - level else None
    return rows


def since(
    store: Store,
    run_id: str,
    previous: str | None,
    *,
    level: float = CI_LEVEL,
    results: Mapping[Key, Any] | None = None,
) -> list[dict[str, Any]]:
    """Each model of run ``run_id`` against its version in run ``previous`` (None: every model is new): status new,
    not in this run, unchanged or changed (then compared new − old on their shared prompts), Holm-adjusted as one
    family."""
    results = stored_results(store) if results is None else results
    now = {r["model"]: (r["model"], r["model_hash"], r["evaluator_hash"]) for r in queries.run_versions(store, run_id)}
    before = {} if previous is None else {
        r["model"]: (r["model"], r["model_hash"], r["evaluator_hash"]) for r in queries.run_versions(store, previous)
    }  # fmt: skip
    rows = []
    for model in sorted(now.keys() | before.keys()):
        new, old = now.get(model), before.get(model)
        if old is None or new is None:
            status = "new" if old is None else "not in this run"
            rows.append(_row(run_id, "since", model, model, status, (new, old), None, level, previous))
        elif new == old:
            rows.append(_row(run_id, "since", model, model, "unchanged", (new, old), None, level, previous))
        else:
            compared = compare(results.get(new, {}), results.get(old, {}), level=level)
            status = "changed" if compared is not None else "changed, no shared prompt stored"
            rows.append(_row(run_id, "since", model, model, status, (new, old), compared, level, previous))
    return _adjust(rows, level, lambda r: "improvement" if r["difference"] > 0 else "regression")


def pairs(
    store: Store, run_id: str, *, level: float = CI_LEVEL, results: Mapping[Key, Any] | None = None
) -> list[dict[str, Any]]:
    """Every two current models measured under one spine protocol, the one with the higher score first, compared on
    their shared prompts; Holm-adjusted as one family."""
    results = stored_results(store) if results is None else results
    protocols: dict[str, list[tuple[Any, ...]]] = {}
    for m in queries.spine_rows(store, "measured_protocols"):
        protocols.setdefault(m["model"], []).append((m["prompts"], m["detector"], m["images_per_prompt"]))
    current = {  # a smoke model (random weights) is never ranked: it is compared with none
        r["model"]: r for r in queries.leaderboard(store) if r.get("overall") is not None and not r.get("smoke")
    }
    keys = {r["model"]: (r["model"], r["model_hash"], r["evaluator_hash"]) for r in current.values()}
    order = sorted(current, key=lambda m: (-float(current[m]["overall"]), m))
    rows = []
    for i, upper in enumerate(order):
        for lower in order[i + 1 :]:
            if sorted(protocols.get(upper, [])) != sorted(protocols.get(lower, [])) or not protocols.get(upper):
                continue
            compared = compare(results.get(keys[upper], {}), results.get(keys[lower], {}), level=level)
            status = "compared" if compared is not None else "no shared prompt"
            rows.append(_row(run_id, "pair", upper, lower, status, (keys[upper], keys[lower]), compared, level, None))
    return _adjust(rows, level, lambda r: "separated")


def record(store: Store, *, level: float = CI_LEVEL) -> str | None:
    """The latest completed run's comparisons (``since`` the completed run before it, and its current ``pairs``),
    replacing any it had; the run's id (None before any completed run)."""
    store.initialise()  # a store of an older schema gains the comparisons' table and the views it reads first
    runs = queries.completed_runs(store)
    if not runs:
        return None
    run_id, previous = runs[0]["run_id"], (runs[1]["run_id"] if len(runs) > 1 else None)
    results = stored_results(store)
    rows = since(store, run_id, previous, level=level, results=results) + pairs(
        store, run_id, level=level, results=results
    )
    store.replace_if_changed("paired_comparisons", {"run_id": run_id}, rows)
    return str(run_id)


def record_for_report(store: Path, published: Sequence[str | Path] | None, *, level: float = CI_LEVEL) -> None:
    """What a report reads besides the versions, recorded before it renders (each only when changed): the latest run's
    comparisons (``record``) and the published rows the spine compares with (``record_published``); nothing when
    there is no store yet (the report says so)."""
    from t2ibench.benchmarks import benchmark

    if not Path(store).exists():
        return
    record(Store(store), level=level)
    benchmark(SPINE).record_published(store, published)


def flagged_lines(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """'regression: sloppy geneval 0.620 → 0.550 (−0.070 [−0.100, −0.040], Holm-adjusted p 0.001, 18 prompts)' for
    each change since the last refresh a paired test flags (regressions first)."""
    flagged = [r for r in rows if r["kind"] == "since" and r["flagged"]]
    flagged.sort(key=lambda r: (r["flagged"] != "regression", r["model"]))
    return [
        f"{r['flagged']}: {r['model']} {r['benchmark']} {r['other_score']:.3f} → {r['score']:.3f} "
        f"({r['difference']:+.3f} [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}], Holm-adjusted p {r['p_adjusted']:.3g}, "
        f"{r['prompts']} prompts)"
        for r in flagged
    ]
