"""Coverage of the diversity bootstrap intervals (docs/metrics.md#confidence-intervals).

For a scenario (``collapsed``, ``modesK`` — K far-apart modes —, ``continuous``, ``separated``), draws ``reps`` samples
of ``prompts`` × ``per`` images (d = 8), computes the percentile, basic, bias-corrected and centred cluster-bootstrap
intervals (B resamples over prompts, FKEA with r = ``rff``) and prints one JSON line: coverage of the population value
(FKEA on 400,000 images of the same distribution) and of the mean estimate at this n, per VENDI-1 / VENDI-2 /
VENDI-∞ / RKE. The docs' table: ``modes3 200 200 50 4 128``, ``modes3 200 200 250 4 128``, ``modes10 …``, ``modes20 …``,
``separated 200 200 50 4 128``. Seeded throughout (population 12345, samples 2024, resample r, frequencies 7).

    python benchmarks/diversity_bootstrap_coverage.py modes3 200 200 50 4 128
"""

from __future__ import annotations

import json
import math
import sys
import time

import numpy as np
from scipy.stats import norm

from t2ibench.metrics import FKEA, bootstrap_entropy

ALPHAS = (1.0, 2.0, math.inf)
D_IN = 8


def scenario(name):
    # returns (prompt_centre_sampler(rng, m) -> (m, d), within-prompt sd, sigma)
    if name == "collapsed":  # 3 modes, prompts pick one, images close to their prompt
        modes = np.eye(3, D_IN) * 6.0
        return (lambda rng, m: modes[rng.integers(0, 3, m)] + 0.05 * rng.standard_normal((m, D_IN))), 0.05, 1.0
    if name.startswith("modes"):  # K modes far apart, prompts pick one, images near their prompt
        K = int(name[5:])
        modes = np.random.default_rng(99).standard_normal((K, D_IN)) * 6.0
        return (lambda rng, m: modes[rng.integers(0, K, m)] + 0.05 * rng.standard_normal((m, D_IN))), 0.05, 1.0
    if name == "continuous":  # prompt centres from a broad Gaussian, sigma comparable to the spread
        return (lambda rng, m: 1.5 * rng.standard_normal((m, D_IN))), 0.5, 1.0
    if name == "separated":  # every image far from every other (VENDI near n)
        return (lambda rng, m: 20.0 * rng.standard_normal((m, D_IN))), 5.0, 0.5
    raise SystemExit(name)


def draw(rng, sampler, within, prompts, per):
    c = sampler(rng, prompts)
    X = np.repeat(c, per, axis=0) + within * rng.standard_normal((prompts * per, D_IN))
    return X, np.repeat(np.arange(prompts), per).tolist()


def main(name, reps, B, prompts, per, rff):
    sampler, within, sigma = scenario(name)
    est = FKEA(sigma=sigma, rff_dim=rff, seed=7, center=np.zeros(D_IN))
    big_rng = np.random.default_rng(12345)
    for _ in range(20):  # population: 400k images of the marginal
        X, _ = draw(big_rng, sampler, within, 20000, 1)
        est.update(X)
    pop = est.compute(ALPHAS)
    truth = [pop.vendi[a] for a in ALPHAS] + [pop.rke]
    rng = np.random.default_rng(2024)
    hits = {m: np.zeros(4) for m in ("percentile", "basic", "bc", "centred")}
    kept = {m: [] for m in hits}
    widths = {m: np.zeros(4) for m in hits}
    estimates = np.zeros((reps, 4))
    bias_boot = np.zeros((reps, 4))
    ratio = np.zeros((reps, 4))
    t0 = time.time()
    for r in range(reps):
        X, ids = draw(rng, sampler, within, prompts, per)
        phi = FKEA(sigma=sigma, rff_dim=rff, seed=7, center=np.zeros(D_IN)).features(X)
        res = bootstrap_entropy(phi, ids, alphas=ALPHAS, resamples=B, seed=r, method="percentile")
        th = np.array([res.vendi[a].estimate for a in ALPHAS] + [res.rke.estimate])
        rep = res.replicates
        estimates[r] = th
        bias_boot[r] = rep.mean(axis=0) - th
        ratio[r] = (rep.mean(axis=0) - th) / rep.std(axis=0, ddof=1)
        lo, hi = np.quantile(rep, [0.025, 0.975], axis=0)
        ints = {"percentile": (lo, hi), "basic": (2 * th - hi, 2 * th - lo)}
        frac = np.clip((rep < th).mean(axis=0), 0.5 / B, 1 - 0.5 / B)
        z0 = norm.ppf(frac)
        blo = np.array([np.quantile(rep[:, j], norm.cdf(2 * z0[j] - 1.96)) for j in range(4)])
        bhi = np.array([np.quantile(rep[:, j], norm.cdf(2 * z0[j] + 1.96)) for j in range(4)])
        ints["bc"] = (blo, bhi)
        shift = rep.mean(axis=0) - th
        ints["centred"] = (lo - shift, hi - shift)
        for m, (a, b) in ints.items():
            hits[m] += (a <= truth) & (np.array(truth) <= b)
            widths[m] += b - a
            kept[m].append((a, b))
    out = {
        "scenario": name,
        "n": prompts * per,
        "prompts": prompts,
        "reps": reps,
        "B": B,
        "rff_dim": rff,
        "population": truth,
        "mean_estimate": estimates.mean(0).tolist(),
        "sd_estimate": estimates.std(0).tolist(),
        "mean_bootstrap_shift": bias_boot.mean(0).tolist(),
        "median_shift_over_se": np.median(ratio, axis=0).tolist(),
        "coverage": {m: (h / reps).tolist() for m, h in hits.items()},
        "mean_width": {m: (w / reps).tolist() for m, w in widths.items()},
        "coverage_of_mean_estimate": {
            m: np.mean([(a <= estimates.mean(0)) & (estimates.mean(0) <= b) for a, b in v], axis=0).tolist()
            for m, v in kept.items()
        },
        "seconds": time.time() - t0,
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))
