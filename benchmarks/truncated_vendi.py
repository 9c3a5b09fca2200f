"""Truncated VENDI-1 from the exact spectrum, FKEA and Nyström: relative error and time; prints a Markdown table.

    python benchmarks/truncated_vendi.py            # n = 10 000, d = 512, t = 2000 (exact eigendecomposition included)
    python benchmarks/truncated_vendi.py --n 2000 --t 400 --fkea 500 1000 --nystrom 250 500 --repeats 1   # smoke

Data (seeded): a two-level Gaussian mixture in R^d, 20 groups × 25 sub-clusters with unit-norm-scale centres, and
per-point noise, so the kernel spectrum has a few dominant modes, hundreds of medium ones and a long tail (the
regime where plain VENDI-1 keeps growing with n and truncation matters). σ is half the median heuristic
(``--sigma-scale 0.5``; at the full median the 20 groups dominate and VENDI-1 is only ~12). The exact truncated
VENDI-1 comes from the n × n kernel built in 2048² tiles (``exact_entropy``) and is computed once; FKEA (2r
features, ``rff_dim`` = r) and Nyström (m landmarks drawn with the seed from the data) are timed end to end
(update + eigendecomposition + scores), median of ``--repeats`` runs. Relative errors are against the exact
values: truncated against exact truncated, plain against exact plain. FKEA with 2r ≤ t has a complete spectrum of
at most t values, so its truncated score is its plain score.
Nothing is written unless ``--json PATH`` is given.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _perfdoc import machine_facts
from t2ibench.metrics import FKEA, exact_entropy, median_heuristic_sigma
from t2ibench.metrics.nystrom import NystromEntropy
from t2ibench.metrics.truncated import truncated_vendi


def mixture(n: int, d: int, *, seed: int, groups: int = 20, sub: int = 25) -> np.ndarray:
    """n rows (n, d) float32: group centre + sub-cluster offset + point noise (scales 1, 0.5, 0.35 per unit norm)."""
    gen = np.random.default_rng(seed)
    group_centres = gen.standard_normal((groups, d)) / np.sqrt(d)
    sub_offsets = 0.5 * gen.standard_normal((groups, sub, d)) / np.sqrt(d)
    g = gen.integers(0, groups, n)
    s = gen.integers(0, sub, n)
    noise = 0.35 * gen.standard_normal((n, d)) / np.sqrt(d)
    X: np.ndarray = (group_centres[g] + sub_offsets[g, s] + noise).astype(np.float32)
    return X


def timed(fn: Any, repeats: int) -> tuple[list[float], Any]:
    """Wall times (s) of ``repeats`` calls of fn() and the last call's value."""
    times, value = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - t0)
    return times, value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--d", type=int, default=512)
    ap.add_argument("--t", type=int, default=2000)
    ap.add_argument("--fkea", type=int, nargs="*", default=[1000, 2000, 4000], help="FKEA feature counts 2r")
    ap.add_argument("--nystrom", type=int, nargs="*", default=[1000, 2000, 4000], help="Nyström landmark counts m")
    ap.add_argument("--landmarks", nargs="*", default=["uniform", "rpcholesky"], help="Nyström landmark methods")
    ap.add_argument("--orthogonal", action="store_true", help="also run FKEA with orthogonal random features")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0, help="seed of the frequencies and landmarks")
    ap.add_argument(
        "--data-seed",
        type=int,
        default=1,
        help="seed of the data (keep it apart from --seed: the same default_rng stream for the data and the "
        "frequencies correlates them)",
    )
    ap.add_argument("--sigma-scale", type=float, default=0.5)
    ap.add_argument("--no-exact", action="store_true", help="skip the exact eigendecomposition")
    ap.add_argument("--json", type=Path, default=None, help="also write the rows as JSON here")
    args = ap.parse_args()

    if args.data_seed == args.seed:
        ap.error("--data-seed must differ from --seed: one default_rng stream for both correlates data and frequencies")
    X = mixture(args.n, args.d, seed=args.data_seed)
    sigma = args.sigma_scale * median_heuristic_sigma(X, seed=args.seed)
    centre = X.astype(np.float64).mean(axis=0)
    t = args.t
    facts = machine_facts()
    print(f"machine: {facts['cpu']}, {facts['cores']} cores, {facts['memory']}, BLAS {facts.get('blas', '?')}")
    print(
        f"data: n={args.n}, d={args.d}, two-level mixture seed {args.data_seed}; estimators' seed {args.seed}; "
        f"σ = {sigma:.4g}; t = {t}\n"
    )

    rows: list[dict[str, Any]] = []
    exact_t = exact_plain = None
    if not args.no_exact:
        seconds, res = timed(lambda: exact_entropy(X, sigma=sigma, alphas=[1.0]), 1)
        exact_plain = res.vendi[1.0]
        exact_t = truncated_vendi(res.eigenvalues, [1.0], t)[1.0]
        rows.append(
            {
                "method": "exact",
                "size": f"n = {args.n}",
                "seconds": statistics.median(seconds),
                "times": seconds,
                "runs": 1,
                "truncated": exact_t,
                "plain": exact_plain,
            }
        )
        print(f"exact: {seconds[0]:.1f} s, VENDI-1 {exact_plain:.2f}, truncated VENDI-1 {exact_t:.2f}", flush=True)

    for orth, features in [(o, f) for o in ([False, True] if args.orthogonal else [False]) for f in args.fkea]:
        r = features // 2

        def run_fkea(r: int = r, orth: bool = orth) -> tuple[float, float]:
            est = FKEA(sigma=sigma, rff_dim=r, seed=args.seed, center=centre, orthogonal=orth)
            res = est.update(X).compute([1.0])
            return truncated_vendi(res.eigenvalues, [1.0], t)[1.0], res.vendi[1.0]

        seconds, (trunc, plain) = timed(run_fkea, args.repeats)
        rows.append(
            {
                "method": "FKEA (ORF)" if orth else "FKEA",
                "size": f"2r = {2 * r}",
                "seconds": statistics.median(seconds),
                "times": seconds,
                "runs": args.repeats,
                "truncated": trunc,
                "plain": plain,
            }
        )
        print(f"FKEA{' ORF' if orth else ''} 2r={2 * r}: {seconds} s {trunc}", flush=True)

    for how, m in [(how, m) for how in args.landmarks for m in args.nystrom]:

        def run_nystrom(m: int = m, how: str = how) -> tuple[float, float]:
            est = NystromEntropy(sigma=sigma, m=m, seed=args.seed, landmark_method=how)
            res = est.update(X).compute([1.0], t=t)
            assert res.truncated is not None
            return res.truncated[1.0], res.vendi[1.0]

        seconds, (trunc, plain) = timed(run_nystrom, args.repeats)
        rows.append(
            {
                "method": f"Nyström ({how} landmarks)",
                "size": f"m = {m}",
                "seconds": statistics.median(seconds),
                "times": seconds,
                "runs": args.repeats,
                "truncated": trunc,
                "plain": plain,
            }
        )
        print(f"Nyström {how} m={m}: {seconds} s {trunc}", flush=True)

    def rel(value: float, ref: float | None) -> str:
        return "—" if ref is None else f"{value / ref - 1:+.2%}"

    print()
    print(
        f"| method | size | time (s): median (min–max) of {args.repeats} | truncated VENDI-1 (t = {t}) | "
        "error vs exact truncated | VENDI-1 | error vs exact VENDI-1 |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        lo, hi = min(row["times"]), max(row["times"])
        runs = "" if row["runs"] == 1 else f" ({lo:.2f}–{hi:.2f})"
        trunc_err = "—" if row["method"] == "exact" else rel(row["truncated"], exact_t)
        plain_err = "—" if row["method"] == "exact" else rel(row["plain"], exact_plain)
        print(
            f"| {row['method']} | {row['size']} | {row['seconds']:.2f}{runs} | {row['truncated']:.2f} | "
            f"{trunc_err} | {row['plain']:.2f} | {plain_err} |"
        )
    if args.json is not None:
        payload = {
            "n": args.n,
            "d": args.d,
            "t": t,
            "sigma": sigma,
            "seed": args.seed,
            "data_seed": args.data_seed,
            "machine": facts,
            "rows": rows,
        }
        args.json.write_text(json.dumps(payload, indent=2))


if __name__ == "__main__":
    main()
