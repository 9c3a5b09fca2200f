"""Cost of the diversity bootstrap intervals at the default rff_dim (docs/performance.md#diversity-bootstrap-intervals).

Synthetic d = 768 float32 embeddings, n/4 prompts × 4 images around random centres; σ by the median heuristic;
FKEA r = 2000; ``bootstrap_entropy`` with B = 200 over prompts. Prints, per n, the median (min–max) of ``--repeats``
runs of features + bootstrap. Pin BLAS threads from the environment (OPENBLAS_NUM_THREADS) on a shared machine.

    python benchmarks/diversity_bootstrap.py --n 200,1000,3000 --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from t2ibench.metrics import FKEA, bootstrap_entropy, median_heuristic_sigma


def data(n: int, seed: int = 0) -> tuple[np.ndarray, list[int]]:
    """(n, 768) float32 embeddings in n/4 prompts of 4 images each, and each image's prompt id."""
    rng = np.random.default_rng(seed)
    prompts = n // 4
    centres = rng.standard_normal((prompts, 768))
    X = (np.repeat(centres, 4, axis=0) + 0.7 * rng.standard_normal((4 * prompts, 768))).astype(np.float32)
    return X, np.repeat(np.arange(prompts), 4).tolist()


def main() -> None:
    """Measure and print one Markdown row per n."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", default="200,1000,3000")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print("| n | prompts | side | bootstrap, B = 200 (s) | min–max (s) | VENDI-1 [interval] |")
    print("| ---: | ---: | --- | ---: | ---: | --- |")
    for n in (int(v) for v in args.n.split(",")):
        X, ids = data(n)
        sigma = median_heuristic_sigma(X, seed=0)
        est = FKEA(sigma=sigma, rff_dim=2000, seed=0, center=X.astype(np.float64).mean(axis=0)).update(X)
        vendi = est.compute().vendi[1.0]
        runs = []
        for rep in range(args.repeats):
            start = time.perf_counter()
            boot = bootstrap_entropy(est.features(X), ids, resamples=200, seed=rep)
            runs.append(time.perf_counter() - start)
        ci = boot.vendi[1.0]
        print(
            f"| {n} | {n // 4} | {boot.side} | {statistics.median(runs):.2f} | {min(runs):.2f}–{max(runs):.2f} | "
            f"{vendi:.2f} [{ci.low:.2f}, {ci.high:.2f}] |",
            flush=True,
        )


if __name__ == "__main__":
    main()
