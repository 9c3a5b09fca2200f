"""``t2ibench diversity``: kernel-entropy diversity of an embedding file, or the bundled digits example."""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from t2ibench.commands.common import EXIT_OK, SEED, write_json
from t2ibench.errors import InputError
from t2ibench.options import float_in, int_from

POSITIVE_FLOAT = float_in(0.0, math.inf, open_low=True, open_high=True)


def _bandwidth(text: str) -> float | str:
    """A σ option: a positive number (embedding units) or 'median' (the median heuristic), as in a config."""
    from t2ibench.diversity import MEDIAN

    if text == MEDIAN:
        return MEDIAN
    try:
        return float(POSITIVE_FLOAT(text))
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{exc} (or {MEDIAN!r}: the median heuristic)") from None


def _file_bandwidth(text: str) -> float | str:
    """The σ option of a file: a number, 'median', or 'reference' (the reference σ of the file's embedding space)."""
    from t2ibench.diversity import MEDIAN, REFERENCE

    if text in (MEDIAN, REFERENCE):
        return text
    try:
        return float(POSITIVE_FLOAT(text))
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(
            f"{exc} (or {MEDIAN!r}: the median heuristic; {REFERENCE!r}: the file's embedding space's)"
        ) from None


def _parse_alphas(text: str) -> list[str]:
    return [part for part in text.split(",") if part.strip()]


def _cmd_diversity(args: argparse.Namespace) -> int:
    if args.example is not None and args.embeddings is not None:
        raise InputError("give either an EMBEDDINGS file or --example, not both")
    if args.gallery and not args.modes:
        raise InputError("--gallery DIR renders modes: add --modes K")
    _diversity_outputs(args)
    if args.example == "digits":
        return _diversity_digits(args)
    if args.embeddings is None:
        raise InputError("nothing to measure: give an EMBEDDINGS file (.npy/.npz) or --example digits")
    if args.prompts is True:
        raise InputError("--prompts needs a PROMPTS.npz file ('embeddings' and 'ids') for an embeddings file")
    if args.prompts:
        return _diversity_pairs(args)
    return _diversity_file(args)


def _diversity_outputs(args: argparse.Namespace) -> None:
    """Refuse --json/--gallery outputs that would overwrite the embeddings, the record of their embedding space, the
    prompts or the images shown."""
    from t2ibench.features import SPACES_FILE
    from t2ibench.paths import place, refuse_outputs

    inputs = [
        place("EMBEDDINGS", args.embeddings),
        place("--prompts", args.prompts if args.prompts is not True else None),
        place("the embedding-space record beside EMBEDDINGS", Path(args.embeddings).parent / SPACES_FILE)
        if args.embeddings
        else None,
    ]
    if args.gallery and args.embeddings and Path(args.embeddings).suffix == ".npz" and Path(args.embeddings).is_file():
        from t2ibench.io import load_embedding_table

        table = load_embedding_table(args.embeddings)
        inputs += [place("an image the gallery shows", p) for p in table.paths or ()]
    gallery = place(
        "--gallery", args.gallery, tree=True, covers=lambda rel: len(rel.parts) > 1 or rel.name.endswith("_modes.md")
    )
    refuse_outputs([place("--json", args.json), gallery], inputs)


def _diversity_digits(args: argparse.Namespace) -> int:
    from t2ibench.examples import digits
    from t2ibench.metrics.checks import parse_alpha
    from t2ibench.report import diversity as render

    payload: dict[str, Any] = {"example": "digits"}
    scendi_config = digits.DigitsScendiConfig(
        per_prompt=args.per_prompt,
        repeats=3 if args.repeats is None else args.repeats,
        sigma_scale=args.sigma_scale,
        rff_dim=digits.DigitsScendiConfig.rff_dim if args.rff_dim is None else args.rff_dim,
        epsilon=args.epsilon,
        seed=args.seed,
    )
    if args.prompts:
        result = digits.digits_scendi_comparison(scendi_config, show_progress=not args.quiet)
        print(digits.render_digits_scendi(result))
        payload["scendi"] = dataclasses.asdict(result)
    else:
        alphas = _parse_alphas(args.alphas or "1")
        if len(alphas) != 1:
            raise InputError("--example digits reports one order: pass a single value to --alphas (e.g. 1)")
        config = digits.DigitsSweepConfig(
            n_per_condition=args.n_per_condition,
            repeats=digits.DigitsSweepConfig.repeats if args.repeats is None else args.repeats,
            sigma_scale=args.sigma_scale,
            rff_dim=digits.DigitsSweepConfig.rff_dim if args.rff_dim is None else args.rff_dim,
            alpha=parse_alpha(alphas[0]),
            seed=args.seed,
        )
        sweep = digits.digits_class_sweep(config, show_progress=not args.quiet)
        print(digits.render_digits_sweep(sweep))
        payload["sweep"] = dataclasses.asdict(sweep) | {
            "monotone": {c: sweep.is_monotone(c) for c in ("vendi_exact", "vendi_fkea", "rke_exact", "rke_fkea")}
        }
        payload["sweep"]["config"]["alpha"] = _json_alpha(config.alpha)
    if args.modes:
        found = digits.digits_modes(k=args.modes, top=args.top, config=scendi_config, with_scendi=bool(args.prompts))
        print()
        print(render.render_modes(found.fkea, labels=found.fkea_labels))
        payload["modes"] = {"fkea": found.fkea.to_dict()}
        if found.scendi is not None:
            print()
            print(render.render_modes(found.scendi, labels=found.scendi_labels))
            payload["modes"]["scendi"] = found.scendi.to_dict()
        if args.gallery:
            _galleries(
                Path(args.gallery),
                [("fkea", found.fkea, found.fkea_images), ("scendi", found.scendi, found.scendi_images)],
                title="digits",
            )
    if args.json:
        write_json(Path(args.json), payload)
    return EXIT_OK


def _json_alpha(alpha: float) -> str | float:
    return "inf" if math.isinf(alpha) else alpha


def _galleries(root: Path, parts: Sequence[tuple[str, Any, Sequence[Any] | None]], *, title: str) -> None:
    """Write one image gallery (or text table) per (name, ModeSet, images-or-texts) under ``root``."""
    from t2ibench.report.gallery import render_text_modes, write_image_gallery

    for name, modes, samples in parts:
        if modes is None or samples is None:
            continue
        if (
            samples
            and isinstance(samples[0], str)
            and not samples[0].lower().endswith((".png", ".jpg", ".jpeg", ".webp"))
        ):
            root.mkdir(parents=True, exist_ok=True)
            (root / f"{name}_modes.md").write_text(render_text_modes(modes, samples) + "\n")
            print(f"wrote {root / f'{name}_modes.md'}", file=sys.stderr)
        else:
            index = write_image_gallery(modes, samples, root / name, title=f"{title} — {name} modes")
            print(f"wrote {index.parent}/ (summary.png, mode_XX.png, modes.json)", file=sys.stderr)


def _diversity_file(args: argparse.Namespace) -> int:
    from t2ibench.config import DiversityConfig
    from t2ibench.diversity import diversity_of_file, gallery_samples, labels
    from t2ibench.metrics.entropy import DEFAULT_BATCH
    from t2ibench.report.diversity import render_entropy_results, render_modes

    if args.gallery:  # fail before the computation, not after it
        from t2ibench.io import load_embedding_table

        path = Path(args.embeddings)
        gallery_samples(load_embedding_table(path) if path.suffix == ".npz" else None, path)
    found = diversity_of_file(
        args.embeddings,
        kernel=args.kernel,
        sigma=args.sigma,
        method=args.method,
        rff_dim=DiversityConfig.rff_dim if args.rff_dim is None else args.rff_dim,
        alphas=_parse_alphas(args.alphas) if args.alphas else DiversityConfig.alphas,
        seed=args.seed,
        shards=args.shards,
        orthogonal=args.orthogonal,
        batch_size=DEFAULT_BATCH if args.batch_size is None else args.batch_size,
        delta=args.delta,
        modes=args.modes,
        top=args.top,
        show_progress=not args.quiet,
        truncation=args.truncation,
        device=args.device,
    )
    print(
        render_entropy_results(
            list(found.results), sigma_note=found.note, truncated=found.truncated, truncation=found.truncation
        )
    )
    payload: dict[str, Any] = {
        "input": str(found.path),
        "note": found.note,
        "sigma": None if found.sigma is None else found.sigma.to_dict(),
        "settings": found.settings,
        "results": [r.to_dict() for r in found.results],
    }
    if found.truncated:
        payload["truncated"] = {
            "t": found.truncation,
            "vendi": [{str(_json_alpha(a)): v for a, v in t.items()} for t in found.truncated],
        }
    if found.modes is not None:
        print()
        print(render_modes(found.modes, labels=labels(found.table)))
        payload["modes"] = found.modes.to_dict()
        if args.gallery:
            samples = gallery_samples(found.table, found.path)
            _galleries(Path(args.gallery), [(found.modes.source, found.modes, samples)], title=found.path.name)
    if args.json:
        write_json(Path(args.json), payload)
    return EXIT_OK


def _pairs_sigma(sigma: float | str | None) -> float | Literal["median"]:
    """--sigma for Scendi on paired files: a number or the median heuristic (the default); no embedding space."""
    from t2ibench.diversity import MEDIAN, REFERENCE

    if sigma == REFERENCE:
        raise InputError("--sigma reference: Scendi of paired files takes σ as a number or 'median'")
    return MEDIAN if sigma is None or sigma == MEDIAN else float(sigma)


def _diversity_pairs(args: argparse.Namespace) -> int:
    from t2ibench.config import ScendiConfig
    from t2ibench.diversity import diversity_of_pairs, gallery_samples, labels
    from t2ibench.report.diversity import render_modes, render_scendi_results

    found = diversity_of_pairs(
        args.embeddings,
        args.prompts,
        kernel=args.kernel,
        image_sigma=_pairs_sigma(args.sigma),
        text_sigma=args.text_sigma,
        rff_dim=ScendiConfig.rff_dim if args.rff_dim is None else args.rff_dim,
        epsilon=args.epsilon,
        seed=args.seed,
        modes=args.modes,
        top=args.top,
        inverse=args.inverse,
    )
    print(render_scendi_results([(found.images.path.name, found.result)], note=found.note))
    payload: dict[str, Any] = {
        "images": str(found.images.path),
        "prompts": str(found.prompts.path),
        "scendi": found.result.to_dict(),
    }
    if found.image_modes is not None and found.scendi_modes is not None:
        names = labels(found.images)
        print()
        print(render_modes(found.image_modes, labels=names))
        print()
        print(render_modes(found.scendi_modes, labels=names))
        payload["modes"] = {"image": found.image_modes.to_dict(), "scendi": found.scendi_modes.to_dict()}
        if args.gallery:
            samples = gallery_samples(found.images, found.images.path)
            parts = [(found.image_modes.source, found.image_modes, samples), ("scendi", found.scendi_modes, samples)]
            _galleries(Path(args.gallery), parts, title=found.images.path.name)
    if args.json:
        write_json(Path(args.json), payload)
    return EXIT_OK


def add_diversity(verbs: Any) -> None:
    """``t2ibench diversity``: its options (defaults from the typed classes)."""
    from t2ibench.config import MAX_SHARDS, DiversityConfig, Runtime
    from t2ibench.metrics.checks import KERNELS
    from t2ibench.requests import DigitsRequest

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
    div.add_argument("--kernel", choices=KERNELS, default=DiversityConfig.kernel)
    div.add_argument(
        "--sigma",
        type=_file_bandwidth,
        help="Gaussian bandwidth: a number (embedding units); 'median', the median heuristic (the file's own: not "
        "comparable with a leaderboard); or 'reference', the leaderboard's σ of the file's embedding space (a "
        "refresh's feature files name theirs). Default: reference where the file names its space, else median",
    )
    div.add_argument(
        "--method",
        choices=["auto", "exact", "fkea", "both"],
        default="auto",
        help="auto (default): exact when a cost model says it is no slower than FKEA or under 1 s, else FKEA; "
        "the output says which and why",
    )
    div.add_argument(
        "--rff-dim",
        type=int_from(1, 1_000_000),
        help="random Fourier frequencies r (2r features); default 2000, Scendi 1000, digits 512/500",
    )
    div.add_argument(
        "--alphas",
        help="comma-separated entropy orders α > 0, inf allowed (default "
        f"{','.join(str(a).removesuffix('.0') for a in DiversityConfig.alphas)}; digits: one order, 1)",
    )
    div.add_argument(
        "--seed",
        type=SEED,
        default=DiversityConfig.seed,
        help=f"seed for frequencies and subsampling (default {DiversityConfig.seed}, as a refresh's)",
    )
    div.add_argument(
        "--shards",
        type=int_from(1, MAX_SHARDS),
        default=DiversityConfig.shards,
        help=f"FKEA: accumulate the rows in N interleaved shards, merged, as a refresh does (default "
        f"{DiversityConfig.shards}, evaluators.diversity.shards)",
    )
    div.add_argument(
        "--orthogonal",
        action="store_true",
        default=DiversityConfig.orthogonal,
        help="FKEA: orthogonal random features (evaluators.diversity.orthogonal)",
    )
    div.add_argument(
        "--batch-size",
        type=int_from(1, 10_000_000),
        help="rows per batch (default: a refresh's FKEA batch; the output states it)",
    )
    div.add_argument("--device", default=Runtime.device, help="where the embedder of a reference σ runs (default auto)")
    div.add_argument(
        "--delta",
        type=float_in(0.0, 1.0, open_low=True, open_high=True),
        default=0.05,
        help="failure probability of the FKEA radius",
    )
    div.add_argument(
        "--prompts",
        nargs="?",
        const=True,
        metavar="PROMPTS.npz",
        help="Scendi: prompt embeddings ('embeddings', 'ids') paired by id with the images' 'ids' "
        "(with --example digits: no value, the bundled prompts naming each digit)",
    )
    div.add_argument(
        "--text-sigma",
        type=_bandwidth,
        default="median",
        help="Scendi: text bandwidth, a number or 'median' (default)",
    )
    div.add_argument(
        "--epsilon",
        type=float_in(0.0, 1.0, open_low=True, open_high=True),
        default=1e-6,
        help="Scendi: ridge on C_TT, relative to its trace",
    )
    div.add_argument(
        "--inverse",
        choices=["ridge", "pinv"],
        default="ridge",
        help="Scendi: C_TT⁻¹ as a ridge (default) or as the reference repository's pinv cut-off (epsilon unused)",
    )
    div.add_argument(
        "--truncation",
        type=int_from(1, 1_000_000),
        help="also report truncated VENDI-α: the top T eigenvalues with the leftover mass spread over them",
    )
    div.add_argument(
        "--modes",
        type=int_from(1, 10_000),
        metavar="K",
        help="also find the top K modes (FKEA, and Scendi with --prompts)",
    )
    div.add_argument("--top", type=int_from(1, 10_000), default=16, help="samples shown per mode (default 16)")
    div.add_argument("--gallery", metavar="DIR", help="write mode galleries (PNG grids + JSON, or Markdown for texts)")
    div.add_argument(
        "--n-per-condition",
        type=int_from(1, 100_000),
        default=DigitsRequest.n_per_condition,
        help="digits: images per class count",
    )
    div.add_argument("--per-prompt", type=int_from(1, 100_000), default=100, help="digits --prompts: pairs per prompt")
    div.add_argument(
        "--repeats",
        type=int_from(1, 1000),
        help=f"digits: seeded repeats (default {DigitsRequest.repeats}; 3 with --prompts)",
    )
    div.add_argument(
        "--sigma-scale",
        type=POSITIVE_FLOAT,
        default=DigitsRequest.sigma_scale,
        help="digits: σ as a multiple of the median distance",
    )
    div.add_argument("--json", help="also write the results as JSON to this path")
    div.add_argument("--quiet", action="store_true", help="no progress bar")
    div.set_defaults(func=_cmd_diversity)
