"""The ``t2ibench`` command. Argument parsing lives here only; library code never reads command-line state."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from t2ibench import __version__
from t2ibench.errors import InputError, StateMismatchError
from t2ibench.progress import progress

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def _parse_alphas(text: str) -> list[str]:
    return [part for part in text.split(",") if part.strip()]


def _write_json(path: Path, payload: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=True, allow_nan=False) + "\n")
    tmp.replace(path)


# -- diversity ---------------------------------------------------------------------------------------------------


def _cmd_diversity(args: argparse.Namespace) -> int:
    if args.example is not None and args.embeddings is not None:
        raise InputError("give either an EMBEDDINGS file or --example, not both")
    if args.example == "digits":
        return _diversity_digits(args)
    if args.embeddings is None:
        raise InputError("nothing to measure: give an EMBEDDINGS file (.npy/.npz) or --example digits")
    return _diversity_file(args)


def _diversity_digits(args: argparse.Namespace) -> int:
    from t2ibench.examples.digits import DigitsSweepConfig, digits_class_sweep
    from t2ibench.report.diversity import render_digits_sweep

    alphas = _parse_alphas(args.alphas or "1")
    if len(alphas) != 1:
        raise InputError("--example digits reports one order: pass a single value to --alphas (e.g. 1)")
    from t2ibench.metrics._validate import parse_alpha

    config = DigitsSweepConfig(
        n_per_condition=args.n_per_condition,
        repeats=args.repeats,
        sigma_scale=args.sigma_scale,
        rff_dim=DigitsSweepConfig.rff_dim if args.rff_dim is None else args.rff_dim,
        alpha=parse_alpha(alphas[0]),
        seed=args.seed,
    )
    sweep = digits_class_sweep(config, show_progress=not args.quiet)
    print(render_digits_sweep(sweep))
    if args.json:
        payload = {
            "example": "digits",
            "config": config.__dict__ | {"alpha": _json_alpha(config.alpha)},
            "sigma": sweep.sigma,
            "median_distance": sweep.median_distance,
            "rows": [
                {
                    "classes": r.classes,
                    "n": r.n,
                    **{
                        f"{col}_{stat}": getattr(getattr(r, col), stat)
                        for col in ("vendi_exact", "vendi_fkea", "rke_exact", "rke_fkea")
                        for stat in ("mean", "sd")
                    },
                    "error_radius": r.error_radius,
                }
                for r in sweep.rows
            ],
            "monotone": {c: sweep.is_monotone(c) for c in ("vendi_exact", "vendi_fkea", "rke_exact", "rke_fkea")},
        }
        _write_json(Path(args.json), payload)
    return EXIT_OK


def _json_alpha(alpha: float) -> str | float:
    return "inf" if math.isinf(alpha) else alpha


def _diversity_file(args: argparse.Namespace) -> int:
    from t2ibench.io import open_embeddings
    from t2ibench.metrics import CosineEntropy, exact_entropy, median_heuristic_sigma
    from t2ibench.metrics.entropy import FKEA, EntropyResult, StreamingKernelEntropy
    from t2ibench.report.diversity import render_entropy_results

    source = open_embeddings(args.embeddings)
    alphas = _parse_alphas(args.alphas or "1,2,inf")
    note = f"{source.path} — n = {source.n}, d = {source.dim}."
    streams: list[StreamingKernelEntropy] = []
    results: list[EntropyResult] = []
    if args.kernel == "cosine":
        streams.append(CosineEntropy(batch_size=args.batch_size))
    else:
        if args.sigma is None:
            rng = np.random.default_rng(args.seed)
            sample = source.rows(rng.choice(source.n, size=min(source.n, 2000), replace=False))
            sigma = median_heuristic_sigma(sample, seed=args.seed)
            note += f" σ = {sigma:.6g} (median heuristic: median pairwise distance of ≤ 2000 rows, seed {args.seed})."
        else:
            sigma = args.sigma
            note += f" σ = {sigma:.6g} (given)."
        method = args.method
        if method == "auto":
            method = "both" if source.n <= 5000 else "fkea"
        if method in ("exact", "both"):
            results.append(exact_entropy(source.load(), sigma=sigma, alphas=alphas))
        if method in ("fkea", "both"):
            rff = 2000 if args.rff_dim is None else args.rff_dim
            streams.append(FKEA(sigma=sigma, rff_dim=rff, seed=args.seed, batch_size=args.batch_size))
    if streams:
        bar = progress(source.n, "embeddings", enabled=not args.quiet, unit="row")
        for _start, batch in source.batches(args.batch_size):
            for est in streams:
                est.update(batch)
            bar.update(len(batch))
        bar.close()
        results += [est.compute(alphas, delta=args.delta) for est in streams]
    print(render_entropy_results(results, sigma_note=note))
    if args.json:
        _write_json(Path(args.json), {"input": str(source.path), "results": [r.to_dict() for r in results]})
    return EXIT_OK


# -- parser ------------------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every verb."""
    parser = argparse.ArgumentParser(prog="t2ibench", description="Benchmark system for text-to-image models.")
    parser.add_argument("--version", action="version", version=f"t2ibench {__version__}")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    div = verbs.add_parser(
        "diversity",
        help="VENDI/RKE diversity of an embedding file (exact and FKEA), or the bundled digits example",
        description=(
            "Kernel-entropy diversity. Gaussian kernel: exact VENDI from the n×n kernel (n ≤ 5000 by default) "
            "and FKEA from 2r random Fourier features; cosine kernel: exact at any n from the d×d covariance."
        ),
    )
    div.add_argument("embeddings", nargs="?", help="(n, d) embeddings as .npy (streamed) or .npz")
    div.add_argument("--example", choices=["digits"], help="run a bundled example instead of a file")
    div.add_argument("--kernel", choices=["gaussian", "cosine"], default="gaussian")
    div.add_argument("--sigma", type=float, help="Gaussian bandwidth (default: median pairwise distance)")
    div.add_argument(
        "--method",
        choices=["auto", "exact", "fkea", "both"],
        default="auto",
        help="auto: both if n ≤ 5000, else fkea",
    )
    div.add_argument("--rff-dim", type=int, help="FKEA frequencies r (2r features); default 2000 (512 for digits)")
    div.add_argument(
        "--alphas",
        help="comma-separated entropy orders α > 0, inf allowed (default 1,2,inf; digits: one order, 1)",
    )
    div.add_argument("--seed", type=int, default=0, help="seed for frequencies and subsampling (default 0)")
    div.add_argument("--batch-size", type=int, default=8192, help="rows per streamed batch (default 8192)")
    div.add_argument("--delta", type=float, default=0.05, help="failure probability of the FKEA radius")
    div.add_argument("--n-per-condition", type=int, default=170, help="digits: images per class count")
    div.add_argument("--repeats", type=int, default=10, help="digits: seeded repeats per class count")
    div.add_argument("--sigma-scale", type=float, default=0.4, help="digits: σ as a multiple of the median distance")
    div.add_argument("--json", help="also write the results as JSON to this path")
    div.add_argument("--quiet", action="store_true", help="no progress bar")
    div.set_defaults(func=_cmd_diversity)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``t2ibench`` console script; returns the process exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status: int = args.func(args)
    except (InputError, StateMismatchError) as exc:
        print(f"t2ibench {args.verb}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
