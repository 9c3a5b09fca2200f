"""Conditional / information VENDI next to Scendi on synthetic (image, prompt) pairs; prints a Markdown table.

    python benchmarks/conditional_vs_scendi.py                 # P = 10 prompts, 40 images each (n = 400), ~1 min
    python benchmarks/conditional_vs_scendi.py --per-prompt 100 --rff-dim 2000 --jitter 0.05

Geometry: prompts are P = 10 orthonormal directions × 10 in R^32, image "content" modes are P orthonormal
directions × 10 in R^64 and style modes m = 4 further orthonormal directions × 10; images sit exactly on their
modes (image noise would be variation the prompt does not explain, i.e. model-driven diversity). Modes are 14
apart and σ = 2 for both modalities, so the kernel is ≈ e^{−25} across modes and, without jitter, the kernel
entropies are those of the mode labels ("labels' cond" = exp(H(prompt, image mode) − H(prompt)) of the labels).
Each table is printed twice: without and with paraphrase jitter on the prompts (--jitter per axis, default 0.05:
kernel ≈ 0.98 between two paraphrases of one prompt, so every image has its own prompt embedding). Regimes:

* determined: every image is its prompt's content mode (a function of the prompt);
* independent: every image is a style mode drawn uniformly, whatever its prompt;
* content + style: the image embedding is [content of its prompt, an independent style] (the concatenation,
  so the image kernel is the product of a prompt-determined and a prompt-independent kernel);
* half follow: half the images (drawn at random) are their prompt's content mode, the other half a random style.

Columns: the exact VENDI-1 / cond-VENDI-1 / info-VENDI-1 (``conditional_vendi``), the RFF cond-VENDI-1
(``conditional_vendi_features``, r = --rff-dim), the value the mode labels predict for cond-VENDI-1, and Scendi,
Scendi's exp H(p) (its ``conditional_vendi``) and model share (``scendi_score``, r = --rff-dim, same σ's).
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable

import numpy as np

from t2ibench.metrics.conditional import conditional_vendi, conditional_vendi_features
from t2ibench.metrics.scendi import scendi_score

PROMPTS = 10
STYLES = 4
SIGMA = 2.0


def orthonormal(k: int, dim: int, seed: int) -> np.ndarray:
    """k orthonormal rows in R^dim (seeded)."""
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((dim, k)))
    return q.T


def shannon(labels: np.ndarray) -> float:
    """Plug-in Shannon entropy (nats) of integer labels (n,)."""
    p = np.bincount(labels) / len(labels)
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


Regime = Callable[[np.ndarray, np.random.Generator], tuple[np.ndarray, np.ndarray]]


def regimes() -> dict[str, Regime]:
    """Each regime maps prompt labels (n,) to (image embeddings (n, d), image mode labels (n,))."""
    modes = orthonormal(PROMPTS + STYLES, 64, 1) * 10
    content, style = modes[:PROMPTS], modes[PROMPTS:]

    def determined(p: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        return content[p], p

    def independent(p: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        s = rng.integers(0, STYLES, len(p))
        return style[s], s

    def content_and_style(p: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        s = rng.integers(0, STYLES, len(p))
        return np.hstack([content[p], style[s]]), p * STYLES + s

    def half_follow(p: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        follow = rng.random(len(p)) < 0.5
        s = rng.integers(0, STYLES, len(p))
        return np.where(follow[:, None], content[p], style[s]), np.where(follow, p, PROMPTS + s)

    return {
        "determined": determined,
        "independent": independent,
        "content + style": content_and_style,
        "half follow": half_follow,
    }


def main() -> None:
    """Print the comparison tables (Markdown) for the four regimes, without and with prompt jitter."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--per-prompt", type=int, default=40, help="images per prompt (n = 10 × this)")
    parser.add_argument("--rff-dim", type=int, default=1000, help="random frequencies r (Scendi and RFF path)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data and of the random features")
    parser.add_argument("--jitter", type=float, default=0.05, help="paraphrase jitter per axis of the second table")
    args = parser.parse_args()
    for jitter in (0.0, args.jitter):
        table(args.per_prompt, args.rff_dim, args.seed, jitter)
        print()


def table(per_prompt: int, rff_dim: int, seed: int, jitter: float) -> None:
    """Print one Markdown table: the four regimes at this prompt jitter (per axis, embedding units)."""

    rng = np.random.default_rng(seed)
    prompt_modes = orthonormal(PROMPTS, 32, 0) * 10
    labels = np.repeat(np.arange(PROMPTS), per_prompt)
    n = len(labels)
    ids = [f"image-{i}" for i in range(n)]
    print(
        f"n = {n} ({PROMPTS} prompts × {per_prompt}), {STYLES} styles, σ = {SIGMA} (both), r = {rff_dim}, "
        f"prompt jitter {jitter} per axis"
    )
    print()
    print(
        "| regime | VENDI-1 | cond-VENDI-1 | info-VENDI-1 | cond-VENDI-1 (RFF) | labels' cond | Scendi | "
        "Scendi exp H | model share | time |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, make in regimes().items():
        images, image_labels = make(labels, rng)
        texts = prompt_modes[labels] + jitter * rng.standard_normal((n, prompt_modes.shape[1]))
        start = time.perf_counter()
        exact = conditional_vendi(images, texts, image_sigma=SIGMA, text_sigma=SIGMA, alphas=[1])
        rff = conditional_vendi_features(
            images, texts, image_sigma=SIGMA, text_sigma=SIGMA, rff_dim=rff_dim, seed=seed, alphas=[1]
        )
        scendi = scendi_score(
            images,
            texts,
            image_ids=ids,
            text_ids=ids,
            image_sigma=SIGMA,
            text_sigma=SIGMA,
            rff_dim=rff_dim,
            seed=seed,
        )
        elapsed = time.perf_counter() - start
        joint_labels = labels * (int(image_labels.max()) + 1) + image_labels
        predicted = math.exp(shannon(joint_labels) - shannon(labels))
        print(
            f"| {name} | {exact.vendi_x[1.0]:.2f} | {exact.conditional[1.0]:.3f} | {exact.information[1.0]:.3f} | "
            f"{rff.conditional[1.0]:.3f} | {predicted:.3f} | {scendi.scendi:.3f} | {scendi.conditional_vendi:.3f} | "
            f"{scendi.model_share:.3f} | {elapsed:.1f} s |"
        )


if __name__ == "__main__":
    main()
