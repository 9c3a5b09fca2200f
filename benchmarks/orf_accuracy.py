"""FKEA VENDI-1 with plain random Fourier features vs orthogonal random features: error against exact; Markdown.

    python benchmarks/orf_accuracy.py                               # n = 2000, d = 64, r ∈ {250, 500, 1000, 2000}
    python benchmarks/orf_accuracy.py --n 500 --rff 50 100 --seeds 2   # smoke

Data (seeded): a Gaussian mixture in R^d, 16 clusters with unit-norm-scale centres plus per-point noise (scale
0.5 per unit norm). σ is the median heuristic times ``--sigma-scale``. The exact VENDI-1 comes from the n × n
kernel's eigenvalues (``exact_entropy``); FKEA uses r frequencies (2r features), centred on the data mean, drawn
i.i.d. (plain RFF) or as orthogonal random features (Yu et al. 2016, ``orthogonal=True``) from seeds 0..S−1.
The table reports the mean (over seeds) absolute relative error |VENDI_FKEA − VENDI_exact| / VENDI_exact and
their ratio, plus the mean signed relative error (the bias part of it). Nothing is written.
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np

from t2ibench.metrics import FKEA, exact_entropy, median_heuristic_sigma


def clustered(n: int, d: int, *, seed: int, clusters: int = 16) -> np.ndarray:
    """n rows (n, d) float64: a random cluster centre (scale 1 per unit norm) plus noise (scale 0.5)."""
    gen = np.random.default_rng(seed)
    centres = gen.standard_normal((clusters, d)) / np.sqrt(d)
    labels = gen.integers(0, clusters, n)
    X: np.ndarray = centres[labels] + 0.5 * gen.standard_normal((n, d)) / np.sqrt(d)
    return X


def fkea_vendi1(X: np.ndarray, *, sigma: float, rff_dim: int, seed: int, orthogonal: bool) -> float:
    """FKEA VENDI-1 of rows X (n, d) with r = rff_dim frequencies from ``seed``."""
    est = FKEA(sigma=sigma, rff_dim=rff_dim, seed=seed, center=X.mean(axis=0), orthogonal=orthogonal)
    return est.update(X).compute([1.0]).vendi[1.0]


def main() -> None:
    """Run the comparison and print the Markdown table."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--rff", type=int, nargs="+", default=[250, 500, 1000, 2000])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--data-seed", type=int, default=1000, help="apart from the estimator seeds 0..S−1 (see below)")
    ap.add_argument("--sigma-scale", type=float, default=1.0)
    args = ap.parse_args()

    if 0 <= args.data_seed < args.seeds:  # one default_rng stream for data and frequencies correlates them
        ap.error(f"--data-seed must lie outside the estimator seeds 0..{args.seeds - 1}")
    X = clustered(args.n, args.d, seed=args.data_seed)
    sigma = args.sigma_scale * median_heuristic_sigma(X, seed=0)
    exact = exact_entropy(X, sigma=sigma, alphas=[1.0]).vendi[1.0]
    print(f"n = {args.n}, d = {args.d}, σ = {sigma:.4g}, exact VENDI-1 = {exact:.4f}, seeds 0..{args.seeds - 1}\n")
    print(
        "| r (frequencies) | plain RFF mean abs rel. error | ORF mean abs rel. error | RFF / ORF "
        "| RFF bias | ORF bias |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    for r in args.rff:
        errs, bias = {}, {}
        for orthogonal in (False, True):
            values = [fkea_vendi1(X, sigma=sigma, rff_dim=r, seed=s, orthogonal=orthogonal) for s in range(args.seeds)]
            errs[orthogonal] = statistics.fmean(abs(v - exact) / exact for v in values)
            bias[orthogonal] = statistics.fmean((v - exact) / exact for v in values)
        ratio = errs[False] / errs[True] if errs[True] > 0 else float("inf")
        print(
            f"| {r} | {100 * errs[False]:.3f} % | {100 * errs[True]:.3f} % | {ratio:.2f} | "
            f"{100 * bias[False]:+.3f} % | {100 * bias[True]:+.3f} % |"
        )


if __name__ == "__main__":
    main()
