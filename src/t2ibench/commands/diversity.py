"""``t2ibench diversity``: kernel-entropy diversity of an embedding file, or the bundled digits example."""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from t2ibench.commands.common import EXIT_OK, write_json
from t2ibench.errors import InputError
from t2ibench.options import add_fields, from_args

if TYPE_CHECKING:
    from t2ibench.commands.diversity_request import DiversityRequest


def _cmd_diversity(args: argparse.Namespace) -> int:
    from t2ibench.commands.diversity_request import DiversityRequest

    req = from_args(DiversityRequest, args, args.request_options)
    if req.example is not None and req.embeddings is not None:
        raise InputError("give either an EMBEDDINGS file or --example, not both")
    if req.gallery and not req.modes:
        raise InputError("--gallery DIR renders modes: add --modes K")
    _diversity_outputs(req)
    if req.example == "digits":
        return _diversity_digits(req)
    if req.embeddings is None:
        raise InputError("nothing to measure: give an EMBEDDINGS file (.npy/.npz) or --example digits")
    if req.prompts is True:
        raise InputError("--prompts needs a PROMPTS.npz file ('embeddings' and 'ids') for an embeddings file")
    if isinstance(req.prompts, str) and req.prompts:
        return _diversity_pairs(req, req.embeddings, req.prompts)
    return _diversity_file(req, req.embeddings)


def _diversity_outputs(req: DiversityRequest) -> None:
    """Refuse --json/--gallery outputs that would overwrite the embeddings, the record of their embedding space, the
    prompts or the images shown."""
    from t2ibench.features import SPACES_FILE
    from t2ibench.paths import place, refuse_outputs

    inputs = [
        place("EMBEDDINGS", req.embeddings),
        place("--prompts", req.prompts if isinstance(req.prompts, str) else None),
        place("the embedding-space record beside EMBEDDINGS", Path(req.embeddings).parent / SPACES_FILE)
        if req.embeddings
        else None,
    ]
    if req.gallery and req.embeddings and Path(req.embeddings).suffix == ".npz" and Path(req.embeddings).is_file():
        from t2ibench.io import load_embedding_table

        table = load_embedding_table(req.embeddings)
        inputs += [place("an image the gallery shows", p) for p in table.paths or ()]
    gallery = place(
        "--gallery", req.gallery, tree=True, covers=lambda rel: len(rel.parts) > 1 or rel.name.endswith("_modes.md")
    )
    refuse_outputs([place("--json", req.json), gallery], inputs)


def _diversity_digits(req: DiversityRequest) -> int:
    from t2ibench.examples import digits
    from t2ibench.metrics.checks import parse_alpha
    from t2ibench.report import diversity as render

    payload: dict[str, Any] = {"example": "digits"}
    scendi_config = digits.DigitsScendiConfig(
        per_prompt=req.per_prompt,
        repeats=3 if req.repeats is None else req.repeats,
        sigma_scale=req.sigma_scale,
        rff_dim=digits.DigitsScendiConfig.rff_dim if req.rff_dim is None else req.rff_dim,
        epsilon=req.epsilon,
        seed=req.seed,
    )
    if req.prompts:
        result = digits.digits_scendi_comparison(scendi_config, show_progress=not req.quiet)
        print(digits.render_digits_scendi(result))
        payload["scendi"] = dataclasses.asdict(result)
    else:
        alphas = list(req.alphas or ("1",))
        if len(alphas) != 1:
            raise InputError("--example digits reports one order: pass a single value to --alphas (e.g. 1)")
        config = digits.DigitsSweepConfig(
            n_per_condition=req.n_per_condition,
            repeats=digits.DigitsSweepConfig.repeats if req.repeats is None else req.repeats,
            sigma_scale=req.sigma_scale,
            rff_dim=digits.DigitsSweepConfig.rff_dim if req.rff_dim is None else req.rff_dim,
            alpha=parse_alpha(alphas[0]),
            seed=req.seed,
        )
        sweep = digits.digits_class_sweep(config, show_progress=not req.quiet)
        print(digits.render_digits_sweep(sweep))
        payload["sweep"] = dataclasses.asdict(sweep) | {
            "monotone": {c: sweep.is_monotone(c) for c in ("vendi_exact", "vendi_fkea", "rke_exact", "rke_fkea")}
        }
        payload["sweep"]["config"]["alpha"] = _json_alpha(config.alpha)
    if req.modes:
        found = digits.digits_modes(k=req.modes, top=req.top, config=scendi_config, with_scendi=bool(req.prompts))
        print()
        print(render.render_modes(found.fkea, labels=found.fkea_labels))
        payload["modes"] = {"fkea": found.fkea.to_dict()}
        if found.scendi is not None:
            print()
            print(render.render_modes(found.scendi, labels=found.scendi_labels))
            payload["modes"]["scendi"] = found.scendi.to_dict()
        if req.gallery:
            _galleries(
                Path(req.gallery),
                [("fkea", found.fkea, found.fkea_images), ("scendi", found.scendi, found.scendi_images)],
                title="digits",
            )
    if req.json:
        write_json(Path(req.json), payload)
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


def _diversity_file(req: DiversityRequest, embeddings: str) -> int:
    from t2ibench.config import DiversityConfig
    from t2ibench.diversity import diversity_of_file, gallery_samples, labels
    from t2ibench.metrics.entropy import DEFAULT_BATCH
    from t2ibench.report.diversity import render_entropy_results, render_modes

    if req.gallery:  # fail before the computation, not after it
        from t2ibench.io import load_embedding_table

        path = Path(embeddings)
        gallery_samples(load_embedding_table(path) if path.suffix == ".npz" else None, path)
    found = diversity_of_file(
        embeddings,
        kernel=req.kernel,
        sigma=req.sigma,
        method=req.method,
        rff_dim=DiversityConfig.rff_dim if req.rff_dim is None else req.rff_dim,
        alphas=list(req.alphas) if req.alphas else DiversityConfig.alphas,
        seed=req.seed,
        shards=req.shards,
        orthogonal=req.orthogonal,
        batch_size=DEFAULT_BATCH if req.batch_size is None else req.batch_size,
        delta=req.delta,
        modes=req.modes,
        top=req.top,
        show_progress=not req.quiet,
        truncation=req.truncation,
        device=req.device,
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
        if req.gallery:
            samples = gallery_samples(found.table, found.path)
            _galleries(Path(req.gallery), [(found.modes.source, found.modes, samples)], title=found.path.name)
    if req.json:
        write_json(Path(req.json), payload)
    return EXIT_OK


def _pairs_sigma(sigma: float | str | None) -> float | Literal["median"]:
    """--sigma for Scendi on paired files: a number or the median heuristic (the default); no embedding space."""
    from t2ibench.diversity import MEDIAN, REFERENCE

    if sigma == REFERENCE:
        raise InputError("--sigma reference: Scendi of paired files takes σ as a number or 'median'")
    return MEDIAN if sigma is None or sigma == MEDIAN else float(sigma)


def _diversity_pairs(req: DiversityRequest, embeddings: str, prompts: str) -> int:
    from t2ibench.config import ScendiConfig
    from t2ibench.diversity import diversity_of_pairs, gallery_samples, labels
    from t2ibench.report.diversity import render_modes, render_scendi_results

    found = diversity_of_pairs(
        embeddings,
        prompts,
        kernel=req.kernel,
        image_sigma=_pairs_sigma(req.sigma),
        text_sigma=req.text_sigma,
        rff_dim=ScendiConfig.rff_dim if req.rff_dim is None else req.rff_dim,
        epsilon=req.epsilon,
        seed=req.seed,
        modes=req.modes,
        top=req.top,
        inverse=req.inverse,
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
        if req.gallery:
            samples = gallery_samples(found.images, found.images.path)
            parts = [(found.image_modes.source, found.image_modes, samples), ("scendi", found.scendi_modes, samples)]
            _galleries(Path(req.gallery), parts, title=found.images.path.name)
    if req.json:
        write_json(Path(req.json), payload)
    return EXIT_OK


def add_diversity(verbs: Any) -> None:
    """``t2ibench diversity``: its options, ``DiversityRequest``'s fields (the defaults a refresh's sections hold read
    from them)."""
    from t2ibench.commands.diversity_request import DiversityRequest
    from t2ibench.config import DiversityConfig, ScendiConfig
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
    refresh_alphas = ",".join(str(a).removesuffix(".0") for a in DiversityConfig.alphas)
    notes = {  # defaults that depend on what is measured: a file's are a refresh's sections', the digits' its own
        "rff_dim": f"(default {DiversityConfig.rff_dim}, Scendi {ScendiConfig.rff_dim}, digits "
        f"{DigitsRequest.rff_dim}/500)",
        "alphas": f"(default {refresh_alphas}; digits: one order, 1)",
        "repeats": f"(default {DigitsRequest.repeats}; 3 with --prompts)",
    }
    options = add_fields(div, DiversityRequest, choices={"kernel": KERNELS}, notes=notes)
    div.set_defaults(func=_cmd_diversity, request_options=options)
