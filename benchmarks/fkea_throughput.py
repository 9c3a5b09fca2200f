"""FKEA throughput, memory and the exact methods' cost; writes the `fkea_throughput` section of docs/performance.md.

    python benchmarks/fkea_throughput.py                 # full run (n up to 1M, ~15 min on 2 cores)
    python benchmarks/fkea_throughput.py --sizes 10000 --repeats 1 --exact-sizes 500 --no-write   # smoke

Embeddings (d=768, float32, unit-norm rows of a 50-component Gaussian mixture, seed 0) are written once to a
.npy under benchmarks/_scratch/ and streamed from it batch by batch (`t2ibench.io.iter_npy_batches`). Each
measurement runs in a fresh interpreter so its peak RSS is its own. The machine's single-precision GEMM peak
is measured in the same run; the FKEA work counted against it is the projection (2·n·d·r flops) plus the
covariance update (n·2r·(2r+1) flops for SYRK's triangle).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _perfdoc import REPO, machine_facts, peak_rss_mib, run_child, write_section

SCRIPT = Path(__file__).resolve()
SECTION = "fkea_throughput"
RESULTS = REPO / "benchmarks" / "results" / "fkea_throughput.json"


# -- children -------------------------------------------------------------------------------------------------


def child_gemm(size: int, repeats: int) -> dict[str, float]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    a @ b  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - t0)
    return {"gflops": 2 * size**3 / statistics.median(times) / 1e9, "times": times}


def child_fkea(path: str, n: int, rff_dim: int, batch_size: int, sigma: float, seed: int) -> dict[str, float]:
    from t2ibench.io import iter_npy_batches
    from t2ibench.metrics import FKEA

    est = FKEA(sigma=sigma, rff_dim=rff_dim, seed=seed, batch_size=batch_size)
    t0 = time.perf_counter()
    for _, batch in iter_npy_batches(path, batch_size, limit=n):
        est.update(batch)
    t1 = time.perf_counter()
    res = est.compute([1, 2])
    t2 = time.perf_counter()
    return {
        "n": est.n,
        "update_s": t1 - t0,
        "compute_s": t2 - t1,
        "rss_mib": peak_rss_mib(),
        "vendi1": res.vendi[1.0],
        "rke": res.rke,
        "radius": res.error_radius or 0.0,
    }


def child_exact(path: str, n: int, sigma: float, rff_dim: int, seed: int) -> dict[str, float]:
    from t2ibench.io import iter_npy_batches
    from t2ibench.metrics import exact_entropy, fkea_scores, rke_score

    X = np.concatenate([b for _, b in iter_npy_batches(path, 8192, limit=n)])
    out: dict[str, float] = {"n": n}
    if n <= 8000:
        t0 = time.perf_counter()
        ex = exact_entropy(X, sigma=sigma, alphas=[1, 2])
        out["exact_vendi_s"] = time.perf_counter() - t0
        out["exact_vendi1"] = ex.vendi[1.0]
        t0 = time.perf_counter()
        fk = fkea_scores(X, sigma=sigma, rff_dim=rff_dim, seed=seed, alphas=[1, 2])
        out["fkea_s"] = time.perf_counter() - t0
        out["fkea_vendi1"] = fk.vendi[1.0]
    t0 = time.perf_counter()
    out["exact_rke"] = rke_score(X, sigma=sigma)
    out["exact_rke_s"] = time.perf_counter() - t0
    out["rss_mib"] = peak_rss_mib()
    return out


def child_cosine(path: str, n: int) -> dict[str, float]:
    from t2ibench.io import iter_npy_batches
    from t2ibench.metrics import CosineEntropy

    est = CosineEntropy()
    t0 = time.perf_counter()
    for _, batch in iter_npy_batches(path, 8192, limit=n):
        est.update(batch)
    res = est.compute([1])
    return {"n": n, "cosine_s": time.perf_counter() - t0, "vendi1": res.vendi[1.0], "rss_mib": peak_rss_mib()}


# -- parent ---------------------------------------------------------------------------------------------------


def make_embeddings(path: Path, n: int, dim: int, seed: int = 0) -> None:
    """Unit-norm rows of a 50-component Gaussian mixture, written in 50k-row chunks (seeded)."""
    if path.exists():
        mm = np.load(path, mmap_mode="r")
        if mm.shape == (n, dim) and mm.dtype == np.float32:
            return
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((50, dim)).astype(np.float32)
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, dim))
    for start in range(0, n, 50_000):
        m = min(50_000, n - start)
        x = centres[rng.integers(0, 50, size=m)] + 0.7 * rng.standard_normal((m, dim), dtype=np.float32)
        out[start : start + m] = x / np.linalg.norm(x, axis=1, keepdims=True)
    out.flush()
    del out


def _num(value: float | None, spec: str) -> str:
    return "" if value is None else format(value, spec)


def fmt_n(n: int) -> str:
    return f"{n // 1_000_000}M" if n % 1_000_000 == 0 else (f"{n // 1000}k" if n % 1000 == 0 else str(n))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--exact-sizes", type=int, nargs="+", default=[1000, 2000, 4000, 20_000])
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--rff-dim", type=int, default=2000)
    ap.add_argument("--batch-size", type=int, default=8192)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scratch", type=Path, default=REPO / "benchmarks" / "_scratch")
    ap.add_argument("--no-write", action="store_true", help="print, do not update docs/performance.md")
    ap.add_argument("--render-only", action="store_true", help="re-render the doc section from the last results")
    args = ap.parse_args()

    if args.render_only:
        print(f"wrote {write_section(SECTION, render(json.loads(RESULTS.read_text())))}", file=sys.stderr)
        return

    if args.child:
        kind, *rest = args.child
        fn = {"gemm": child_gemm, "fkea": child_fkea, "exact": child_exact, "cosine": child_cosine}[kind]
        params = json.loads(rest[0])
        print(json.dumps(fn(**params)))
        return

    n_max = max(args.sizes + args.exact_sizes)
    data = args.scratch / f"emb_{n_max}x{args.dim}.npy"
    print(f"preparing {data} ...", file=sys.stderr)
    make_embeddings(data, n_max, args.dim)

    from t2ibench.io import iter_npy_batches
    from t2ibench.metrics import median_heuristic_sigma

    first = next(iter_npy_batches(data, 2000))[1]
    sigma = median_heuristic_sigma(first, seed=args.seed)
    facts = machine_facts()

    gemm = run_child(SCRIPT, ["gemm", json.dumps({"size": 4096, "repeats": 5})])
    peak = gemm["gflops"]
    print(f"sgemm peak {peak:.1f} GFLOPS", file=sys.stderr)

    fkea_rows = []
    D = 2 * args.rff_dim
    for n in args.sizes:
        runs = []
        for rep in range(args.repeats):
            params = {"path": str(data), "n": n, "rff_dim": args.rff_dim, "batch_size": args.batch_size}
            runs.append(run_child(SCRIPT, ["fkea", json.dumps(params | {"sigma": sigma, "seed": args.seed})]))
            print(f"fkea n={n} rep={rep}: {runs[-1]}", file=sys.stderr)
        upd = statistics.median(r["update_s"] for r in runs)
        comp = statistics.median(r["compute_s"] for r in runs)
        flops = 2.0 * n * args.dim * args.rff_dim + float(n) * D * (D + 1)
        fkea_rows.append(
            {
                "n": n,
                "update_s": upd,
                "compute_s": comp,
                "total_s": statistics.median(r["update_s"] + r["compute_s"] for r in runs),
                "rows_per_s": n / upd,
                "gflops": flops / upd / 1e9,
                "fraction": flops / upd / 1e9 / peak,
                "rss_mib": max(r["rss_mib"] for r in runs),
                "vendi1": runs[0]["vendi1"],
                "radius": runs[0]["radius"],
                "spread": (min(r["update_s"] for r in runs), max(r["update_s"] for r in runs)),
            }
        )

    exact_rows = []
    for n in args.exact_sizes:
        runs = []
        for _ in range(args.repeats if n <= 4000 else 1):
            params = {"path": str(data), "n": n, "sigma": sigma, "rff_dim": args.rff_dim, "seed": args.seed}
            runs.append(run_child(SCRIPT, ["exact", json.dumps(params)]))
            print(f"exact n={n}: {runs[-1]}", file=sys.stderr)
        row = {"n": n, "repeats": len(runs)}
        for key in ("exact_vendi_s", "fkea_s", "exact_rke_s", "exact_vendi1", "fkea_vendi1", "rss_mib"):
            if key in runs[0]:
                row[key] = statistics.median(r[key] for r in runs)
        exact_rows.append(row)

    cos_n = max(args.sizes)
    cosine = run_child(SCRIPT, ["cosine", json.dumps({"path": str(data), "n": cos_n})])

    record = {
        "settings": {k: getattr(args, k) for k in ("dim", "rff_dim", "batch_size", "repeats", "seed")},
        "facts": facts,
        "sigma": sigma,
        "gemm": gemm,
        "fkea": fkea_rows,
        "exact": exact_rows,
        "cosine": cosine,
    }
    body = render(record)
    print(body)
    if not args.no_write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(record, indent=1) + "\n")
        print(f"wrote {RESULTS} and {write_section(SECTION, body)}", file=sys.stderr)


def render(record: dict) -> str:
    """The docs/performance.md section, from a recorded run (``--render-only`` re-renders the last one)."""
    st, facts, sigma, gemm = record["settings"], record["facts"], record["sigma"], record["gemm"]
    fkea_rows, exact_rows, cosine = record["fkea"], record["exact"], record["cosine"]
    peak = gemm["gflops"]
    lines = [
        "## FKEA throughput and the exact methods (`benchmarks/fkea_throughput.py`)",
        "",
        f"Machine: {facts['cpu']}, {facts['cores']} cores, {facts['memory']}; Python {facts['python']}, "
        f"numpy {facts['numpy']}, BLAS {facts['blas']}; measured {facts['date']}.",
        f"Input: d = {st['dim']} float32 embeddings streamed from a .npy file in batches of {st['batch_size']}; "
        f"Gaussian kernel σ = {sigma:.4f} (median heuristic); FKEA r = {st['rff_dim']} (2r = {2 * st['rff_dim']}); "
        f"medians of {st['repeats']} runs, each in a fresh process.",
        "",
        f"Single-precision GEMM peak of this machine, same run: **{peak:.0f} GFLOPS** "
        f"(4096³ sgemm, median of {len(gemm['times'])}).",
        "",
        "| n | update (s) | eig + scores (s) | total (s) | rows/s | GFLOPS | of GEMM peak | peak RSS (MiB) |"
        " min–max update (s) |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in fkea_rows:
        lines.append(
            f"| {fmt_n(r['n'])} | {r['update_s']:.1f} | {r['compute_s']:.1f} | {r['total_s']:.1f} | "
            f"{r['rows_per_s']:,.0f} | {r['gflops']:.0f} | {100 * r['fraction']:.0f} % | {r['rss_mib']:.0f} | "
            f"{r['spread'][0]:.1f}–{r['spread'][1]:.1f} |"
        )
    big, small = fkea_rows[-1], fkea_rows[0]
    ok_time = big["total_s"] <= 180
    ok_mem = big["rss_mib"] <= 2048
    per_row = ", ".join(f"{1e6 * r['update_s'] / r['n']:.0f} µs at {fmt_n(r['n'])}" for r in fkea_rows)
    lines += [
        "",
        f"Target for n = 1M: ≤ 180 s and ≤ 2048 MiB peak RSS — measured at n = {fmt_n(big['n'])}: "
        f"{big['total_s']:.0f} s ({'met' if ok_time else 'NOT met'}) and {big['rss_mib']:.0f} MiB "
        f"({'met' if ok_mem else 'NOT met'}). Update time per row: {per_row} (linear cost; the small-n rows pay "
        f"fixed start-up costs). Peak RSS goes from {small['rss_mib']:.0f} MiB at {fmt_n(small['n'])} to "
        f"{big['rss_mib']:.0f} MiB at {fmt_n(big['n'])}: the state is the {2 * st['rff_dim']}² float64 covariance "
        "plus one batch, whatever n. The eigendecomposition of the covariance (`eig + scores`) is a fixed cost.",
        "",
        "Exact methods on the same embeddings (exact VENDI builds the n×n kernel in blocks and "
        "eigendecomposes it; exact RKE streams kernel tiles and never holds n×n):",
        "",
        "| n | exact VENDI (s) | FKEA (s) | exact / FKEA | exact VENDI-1 | FKEA VENDI-1 | blocked exact RKE (s) |"
        " peak RSS (MiB) |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in exact_rows:
        ev, fk = r.get("exact_vendi_s"), r.get("fkea_s")
        ratio = None if ev is None or fk is None else ev / fk
        cells = [
            fmt_n(r["n"]),
            _num(ev, ".1f"),
            _num(fk, ".1f"),
            _num(ratio, ".2f"),
            _num(r.get("exact_vendi1"), ".2f"),
            _num(r.get("fkea_vendi1"), ".2f"),
            _num(r["exact_rke_s"], ".1f"),
            _num(r["rss_mib"], ".0f"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    rke_rows = [r for r in exact_rows if "exact_rke_s" in r]
    last = rke_rows[-1]
    lines += [
        "",
        "Exact VENDI is run only up to n = 8000 (the n×n float64 kernel alone is 0.5 GiB there, and the "
        f"eigendecomposition grows as n³). Blocked exact RKE grows as n²: {last['exact_rke_s']:.1f} s at "
        f"n = {fmt_n(last['n'])} extrapolates to {last['exact_rke_s'] * (1e6 / last['n']) ** 2 / 3600:.1f} h at "
        "n = 1M (an extrapolation, not a measurement), against FKEA's measured time above.",
        "",
        f"Exact cosine-kernel VENDI at n = {fmt_n(cosine['n'])} from the d×d covariance: "
        f"{cosine['cosine_s']:.1f} s, {cosine['rss_mib']:.0f} MiB peak RSS (one run).",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
