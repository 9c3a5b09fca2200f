"""FKEA's covariance update on a torch device (a GPU): the optional accelerated backend of ``metrics.FKEA``.

``TorchFKEA`` is an ``FKEA`` whose per-batch work — projecting the rows on the seeded frequencies, cos/sin, and the
2r × 2r Gram φᵀφ — runs in torch on ``device`` (float32, like the numpy path), summed there in float64. The
frequencies are the numpy estimator's own (drawn from the same seed by ``RandomFourierFeatures``), and the sum is
added to the same host ``CovarianceAccumulator`` whenever the state is read (``compute``, ``rke``, ``merge``,
``save``, ``covariance``). So its state *is* an FKEA state: it merges with shards computed by ``FKEA`` on a CPU,
saves files ``FKEA.load`` reads, and gives the numpy path's scores (tests/unit/test_torch_fkea.py compares them on
CPU torch). It lives here, not in ``t2ibench.metrics``, which stays importable without torch.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from t2ibench.errors import InputError
from t2ibench.metrics.entropy import DEFAULT_BATCH, FKEA
from t2ibench.metrics.kernels import MAX_PHASE, RandomFourierFeatures


def _torch() -> Any:
    import torch

    return torch


class TorchFKEA(FKEA):
    """FKEA with the covariance update on a torch ``device`` ('cuda', 'cuda:1', 'cpu'; default: CUDA if present).

    Same parameters, seed semantics, scores and state as ``FKEA``; only where the per-batch arithmetic runs
    differs. Memory on the device: the 2r × 2r float64 sum plus one batch's features and Gram.
    """

    state_kind: ClassVar[str | None] = "FKEA"

    def __init__(
        self,
        *,
        sigma: float,
        rff_dim: int,
        seed: int,
        dim: int | None = None,
        batch_size: int = DEFAULT_BATCH,
        center: ArrayLike | None = None,
        orthogonal: bool = False,
        device: str | None = None,
    ) -> None:
        torch = _torch()
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        try:
            self.device = torch.device(device)
        except (RuntimeError, TypeError):
            raise InputError(
                f"device must be a torch device such as 'cuda', 'cuda:1' or 'cpu'; got {device!r}"
            ) from None
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise InputError(f"device {device!r}: CUDA is not available on this machine (use device='cpu' or FKEA)")
        self._sum: Any = None  # float64 Σφφᵀ on the device, rows not yet added to the host state
        self._unsynced_rows = 0
        self._device_map: tuple[Any, Any] | None = None
        super().__init__(
            sigma=sigma,
            rff_dim=rff_dim,
            seed=seed,
            dim=dim,
            batch_size=batch_size,
            center=center,
            orthogonal=orthogonal,
        )

    def _device_frequencies(self) -> tuple[Any, Any]:
        """(ω float32 (d, r), centre float64 (d,) or None) on the device, built once from the numpy map."""
        if self._device_map is None:
            torch = _torch()
            fmap = self.feature_map
            assert isinstance(fmap, RandomFourierFeatures)
            omega = torch.from_numpy(np.ascontiguousarray(fmap.omega, dtype=np.float32)).to(self.device)
            centre = None
            if self.center is not None:
                centre = torch.tensor(self.center, dtype=torch.float64, device=self.device)
            self._device_map = (omega, centre)
        return self._device_map

    def _accumulate(self, chunk: NDArray[np.floating], dtype: type[np.floating]) -> None:
        torch = _torch()
        omega, centre = self._device_frequencies()
        x = torch.from_numpy(np.ascontiguousarray(chunk)).to(self.device)
        if centre is not None:  # the numpy path subtracts in float64, then rounds to float32
            x = x.to(torch.float64) - centre
        proj = x.to(torch.float32) @ omega
        peak = float(proj.abs().max()) if proj.numel() else 0.0
        limit = MAX_PHASE[4]
        if not peak <= limit:
            raise InputError(
                f"random-Fourier phases ω·x reach {peak:.3g} rad, beyond {limit:.0e} where float32 keeps no useful "
                "precision: centre the embeddings (pass center=, e.g. their mean) or check σ"
            )
        r = omega.shape[1]
        phi = torch.empty((proj.shape[0], 2 * r), dtype=torch.float32, device=self.device)
        phi[:, 0::2] = torch.cos(proj)
        phi[:, 1::2] = torch.sin(proj)
        phi *= 1.0 / math.sqrt(self.rff_dim)
        gram = (phi.T @ phi).to(torch.float64)
        self._sum = gram if self._sum is None else self._sum.add_(gram)
        self._unsynced_rows += int(proj.shape[0])

    def _sync(self) -> None:
        if self._sum is None or self._stats is None:
            return
        total = self._sum.cpu().numpy()
        rows = self._unsynced_rows
        self._sum = None
        self._unsynced_rows = 0
        self._add_sum(total, rows)
