"""What a refresh changed, and how its models compare — by paired tests on the prompts both sides share
(``t2ibench.metrics.paired``), over each benchmark's stored per-prompt results: GenEval's correct images of images
per task (the spine's ``paired_results`` read), and every stored benchmark's ``StoredColumns.paired`` read (GenEval
2: each prompt's mean Soft-TIFA GM; T2I-CompBench++: each prompt's image scores, per category).

* **Since the last refresh** (kind ``since``): per benchmark, each model of the latest completed run against its
  version in the completed run before it — new, not in this run (its last version stays current), not measured in
  this run (the model ran without this benchmark), unchanged, changed and compared old → new, or changed with
  another judge (a judge setting both versions record differs, the prompts chosen aside: measured differently, so
  not compared).
* **Pairs** (kind ``pair``): per benchmark, every two current models measured under one protocol (GenEval: its
  measured protocol — prompts, detector, images per prompt; a stored benchmark: its protocol key, the leaderboard's
  protocol letter), the better first, smoke models aside — what the leaderboard's "≈" and shared ranks read.

Scores and differences are in each benchmark's headline units (GenEval: a fraction; the stored benchmarks: percent
points). Each kind's p-values form one family per run, over every benchmark, adjusted by Holm's step-down method; a
comparison is flagged (improvement / regression, or separated) when its adjusted p-value is ≤ 1 − the configured
confidence level. Two versions without a shared prompt are not compared (status says so). Every draw is seeded:
the same store gives the same rows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from t2ibench.benchmarks import SPINE
from t2ibench.metrics.levels import CI_LEVEL
from t2ibench.metrics.paired import METHOD, PairedDifference, holm, paired_difference
from t2ibench.store import Store, queries
from t2ibench.store.schema import STORED_BENCHMARKS

Key = tuple[str, str, str]  # (model, model_hash, evaluator_hash): the benchmark's own evaluator_hash
Results = Mapping[tuple[str, int], tuple[str, float, float]]  # (suite, prompt) → (stratum, successes, trials)
SEED = 0


@dataclass(frozen=True)
class Measured:
    """One benchmark's stored results as the comparisons read them: every version's results per prompt, how each
    version was judged (``judge_of``; absent or None: unrecorded), the headline units per unit of the paired score
    and whether a prompt's successes lie in [0, trials] (a rate) or are any soft score (CLIPScore may be negative)."""

    benchmark: str
    results: Mapping[Key, Results]
    judges: Mapping[Key, Any]
    scale: float
    bounded: bool


def judge_of(settings: str | Mapping[str, Any] | None, paths: Sequence[str] | None) -> Any:
    """A version's judge as compared (``same_judge``): its stored settings (JSON text or parsed; None: unrecorded),
    for a stored benchmark only the protocol's settings at ``paths`` (dotted; one the version does not record is
    left out)."""
    if settings is None:
        return None
    value = json.loads(settings) if isinstance(settings, str) else settings
    if paths is None:
        return value
    out = {}
    for path in paths:
        node: Any = value
        for part in path.split("."):
            if not isinstance(node, Mapping) or part not in node:
                break
            node = node[part]
        else:
            out[path] = node
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return all(_same(a[k], b[k]) for k in a.keys() & b.keys())
    return bool(a == b)


def same_judge(a: Any, b: Any) -> bool:
    """Whether two versions' judges (``judge_of``) judged the same way: every setting both record is equal (mappings
    compared on the keys both have: a model or setting only one side's categories use does not count); an
    unrecorded judge (None) is taken as the same, so such versions are compared as before judges were recorded."""
    return a is None or b is None or _same(a, b)


def compared_benchmarks() -> list[str]:
    """The benchmarks whose models are compared: the spine, then each stored benchmark with a ``paired`` read."""
    return [SPINE, *(name for name, c in STORED_BENCHMARKS.items() if c.paired is not None)]


def measured(store: Store, name: str) -> Measured:
    """Benchmark ``name``'s stored per-prompt results and judges (``queries.paired_results``, ``queries.judges``)."""
    found: dict[Key, dict[tuple[str, int], tuple[str, float, float]]] = {}
    for r in queries.paired_results(store, name):
        key = (r["model"], r["model_hash"], r["evaluator_hash"])
        found.setdefault(key, {})[(str(r["suite"]), int(r["prompt_index"]))] = (
            str(r["stratum"]),
            float(r["successes"]),
            float(r["trials"]),
        )
    stored = STORED_BENCHMARKS.get(name)
    paths = None if stored is None else [p for p in stored.protocol if p not in stored.selection]
    judged = {
        (r["model"], r["model_hash"], r["evaluator_hash"]): judge_of(r["judge"], paths)
        for r in queries.judges(store, name)
    }
    scale = 1.0 if stored is None else stored.paired_scale
    return Measured(name, found, judged, scale, bounded=stored is None)


def compare(mine: Results, other: Results, *, level: float, bounded: bool = True) -> PairedDifference | None:
    """``mine`` against ``other`` on their shared prompts (same suite and index, same stratum): the paired difference
    mine − other, its interval at ``level``, p-value and each side's score there (None: no shared prompt)."""
    shared = sorted(k for k in mine.keys() & other.keys() if mine[k][0] == other[k][0])
    if not shared:
        return None
    strata = [mine[k][0] for k in shared]
    b = np.array([mine[k][1:] for k in shared], dtype=np.float64)
    a = np.array([other[k][1:] for k in shared], dtype=np.float64)
    return paired_difference(a, b, strata, level=level, seed=SEED, bounded=bounded)


def _row(run_id: str, kind: str, bench: Measured, model: str, other: str, status: str,
         keys: tuple[Key | None, Key | None], paired: PairedDifference | None, level: float,
         previous: str | None) -> dict[str, Any]:  # fmt: skip
    mine, theirs = keys
    scaled = {} if paired is None else {
        k: bench.scale * float(v) for k, v in (("score", paired.score_b), ("other_score", paired.score_a),
                                               ("difference", paired.difference), ("ci_low", paired.low),
                                               ("ci_high", paired.high))}  # fmt: skip
    return {
        "run_id": run_id, "kind": kind, "benchmark": bench.benchmark, "model": model, "other": other,
        "status": status, "model_hash": mine[1] if mine else None, "evaluator_hash": mine[2] if mine else None,
        "other_model_hash": theirs[1] if theirs else None, "other_evaluator_hash": theirs[2] if theirs else None,
        "score": scaled.get("score"), "other_score": scaled.get("other_score"),
        "difference": scaled.get("difference"), "ci_low": scaled.get("ci_low"), "ci_high": scaled.get("ci_high"),
        "ci_level": level, "p_value": paired.p_value if paired else None,
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


def _versions(store: Store, run_id: str | None, name: str) -> dict[str, Key]:
    if run_id is None:
        return {}
    return {
        r["model"]: (r["model"], r["model_hash"], r["evaluator_hash"])
        for r in queries.run_benchmark_versions(store, run_id, name)
    }


def _since_one(
    store: Store, bench: Measured, run_id: str, previous: str | None, level: float, in_run: set[str]
) -> list[dict[str, Any]]:
    """``since``'s rows of one benchmark (``in_run``: the models of run ``run_id``)."""
    now, before = _versions(store, run_id, bench.benchmark), _versions(store, previous, bench.benchmark)
    rows = []
    for model in sorted(now.keys() | before.keys()):
        new, old = now.get(model), before.get(model)
        compared = None
        if old is None or new is None:
            # a model the run refreshed without this benchmark: its column is off the board until measured again
            status = "new" if old is None else "not measured in this run" if model in in_run else "not in this run"
        elif new == old:
            status = "unchanged"
        elif not same_judge(bench.judges.get(new), bench.judges.get(old)):
            status = "changed, judged differently: not compared"
        else:
            compared = compare(bench.results.get(new, {}), bench.results.get(old, {}), level=level,
                               bounded=bench.bounded)  # fmt: skip
            status = "changed" if compared is not None else "changed, no shared prompt stored"
        rows.append(_row(run_id, "since", bench, model, model, status, (new, old), compared, level, previous))
    return rows


def since(
    store: Store,
    run_id: str,
    previous: str | None,
    *,
    level: float = CI_LEVEL,
    benches: Sequence[Measured] | None = None,
) -> list[dict[str, Any]]:
    """Per benchmark (``compared_benchmarks``), each model of run ``run_id`` against its version in run ``previous``
    (None: every model is new): status new, not in this run, unchanged, changed (then compared new − old on their
    shared prompts) or changed with another judge (not compared); a model of the run that skipped a benchmark it had
    is "not measured in this run"; Holm-adjusted as one family."""
    benches = [measured(store, n) for n in compared_benchmarks()] if benches is None else benches
    in_run = set(_versions(store, run_id, SPINE))
    rows = [r for bench in benches for r in _since_one(store, bench, run_id, previous, level, in_run)]
    return _adjust(rows, level, lambda r: "improvement" if r["difference"] > 0 else "regression")


def _current(store: Store, name: str) -> list[tuple[Key, float, Any]]:
    """The current non-smoke versions of benchmark ``name`` with a score: (key, headline score, protocol)."""
    if name in STORED_BENCHMARKS:
        found = queries.compared_current(store, name)
        return [((r["model"], r["model_hash"], r["evaluator_hash"]), float(r["score"]), r["protocol"])
                for r in found if r["score"] is not None and not r["smoke"]]  # fmt: skip
    protocols: dict[str, list[tuple[Any, ...]]] = {}
    for m in queries.spine_rows(store, "measured_protocols"):
        protocols.setdefault(m["model"], []).append((m["prompts"], m["detector"], m["images_per_prompt"]))
    return [
        ((r["model"], r["model_hash"], r["evaluator_hash"]), float(r["overall"]), tuple(sorted(protocols[r["model"]])))
        for r in queries.leaderboard(store)
        if r.get("overall") is not None and not r.get("smoke") and protocols.get(r["model"])
    ]  # a smoke model (random weights) is never ranked: it is compared with none


def pairs(
    store: Store, run_id: str, *, level: float = CI_LEVEL, benches: Sequence[Measured] | None = None
) -> list[dict[str, Any]]:
    """Per benchmark, every two current models measured under one protocol, the one with the higher score first,
    compared on their shared prompts; Holm-adjusted as one family."""
    benches = [measured(store, n) for n in compared_benchmarks()] if benches is None else benches
    rows = []
    for bench in benches:
        order = sorted(_current(store, bench.benchmark), key=lambda c: (-c[1], c[0][0]))
        for i, (upper, _, protocol) in enumerate(order):
            for lower, _, other in order[i + 1 :]:
                if protocol != other:
                    continue
                compared = compare(bench.results.get(upper, {}), bench.results.get(lower, {}), level=level,
                                   bounded=bench.bounded)  # fmt: skip
                status = "compared" if compared is not None else "no shared prompt"
                rows.append(_row(run_id, "pair", bench, upper[0], lower[0], status, (upper, lower), compared, level,
                                 None))  # fmt: skip
    return _adjust(rows, level, lambda r: "separated")


def record(store: Store, *, level: float = CI_LEVEL) -> str | None:
    """The latest completed run's comparisons (``since`` the completed run before it, and its current ``pairs``),
    replacing any it had; the run's id (None before any completed run)."""
    store.initialise()  # a store of an older schema gains the comparisons' table and the views it reads first
    with store.session():  # every read on one connection, of one state of the store
        runs = queries.completed_runs(store)
        if not runs:
            return None
        run_id, previous = runs[0]["run_id"], (runs[1]["run_id"] if len(runs) > 1 else None)
        benches = [measured(store, name) for name in compared_benchmarks()]
        rows = since(store, run_id, previous, level=level, benches=benches) + pairs(
            store, run_id, level=level, benches=benches
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
