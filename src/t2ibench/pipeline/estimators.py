"""Which estimator measures a kernel's diversity, as a table: one row per kernel, read by the steps and the rows.

A step never branches on the kernel's name: it looks the kernel up here and asks the row what it needs —
the estimator class that accumulates its states, the stored metric name of its VENDI rows, and whether the kernel
has a bandwidth and random features (so σ, ``rff_dim`` and the seed identify its numbers). A new kernel is one
more row (and its estimator in ``t2ibench.metrics``); an unknown name is a did-you-mean error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from t2ibench.errors import InputError, unknown_choice
from t2ibench.metrics.checks import KERNELS
from t2ibench.metrics.entropy import FKEA, CosineEntropy, StreamingKernelEntropy, feature_center


@dataclass(frozen=True)
class KernelChoice:
    """One kernel's estimator: the class, the stored name of its VENDI rows, whether σ and random features apply."""

    kernel: str
    estimator: type[StreamingKernelEntropy]
    metric: str  # the ``metrics.metric`` of its VENDI_α rows
    bandwidth: bool  # the kernel takes σ (embedding units); its estimator then draws seeded random features
    make: Callable[[float | None, int, int, bool, np.ndarray], StreamingKernelEntropy]  # (σ, r, seed, orthogonal, X)

    def rff_dim(self, rff_dim: int) -> int | None:
        """``rff_dim`` where random features make the numbers (stored beside them), else None."""
        return rff_dim if self.bandwidth else None

    def sigma(self, sigma: float | None) -> float | None:
        """σ where the kernel has a bandwidth, else None (a bandwidth handed to a cosine kernel is not used)."""
        return sigma if self.bandwidth else None

    def build(
        self, *, sigma: float | None, rff_dim: int, seed: int, orthogonal: bool, X: np.ndarray
    ) -> StreamingKernelEntropy:
        """An empty estimator for features like X (n, d), from the step's settings (those the kernel uses)."""
        return self.make(sigma, rff_dim, seed, orthogonal, X)


def _fkea(sigma: float | None, rff_dim: int, seed: int, orthogonal: bool, X: np.ndarray) -> StreamingKernelEntropy:
    """FKEA centred on X's mean (exact for the shift-invariant Gaussian kernel; keeps float32 phases precise)."""
    if sigma is None:
        raise InputError("the Gaussian kernel needs a bandwidth σ")
    return FKEA(
        sigma=sigma, rff_dim=rff_dim, seed=seed, dim=X.shape[1], center=feature_center(X), orthogonal=orthogonal
    )


def _cosine(sigma: float | None, rff_dim: int, seed: int, orthogonal: bool, X: np.ndarray) -> StreamingKernelEntropy:
    """The exact cosine-kernel estimator (no bandwidth, no random draw)."""
    return CosineEntropy(dim=X.shape[1])


KERNEL_CHOICES: dict[str, KernelChoice] = {
    "gaussian": KernelChoice("gaussian", FKEA, "fkea", bandwidth=True, make=_fkea),
    "cosine": KernelChoice("cosine", CosineEntropy, "cosine_vendi", bandwidth=False, make=_cosine),
}
if tuple(KERNEL_CHOICES) != KERNELS:  # the estimator table covers exactly the kernel names (metrics.checks)
    raise TypeError(f"KERNEL_CHOICES {tuple(KERNEL_CHOICES)} must cover the kernels {KERNELS}, in order")


def kernel_choice(kernel: str) -> KernelChoice:
    """The table's row for ``kernel`` (InputError with a did-you-mean suggestion for an unknown one)."""
    if kernel not in KERNEL_CHOICES:
        raise unknown_choice("kernel", kernel, tuple(KERNEL_CHOICES))
    return KERNEL_CHOICES[kernel]
