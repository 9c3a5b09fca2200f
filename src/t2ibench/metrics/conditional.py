"""Conditional and information VENDI (Jalali, Ospanov, Gohari, Farnia 2024, arXiv 2411.02817).

Given n aligned pairs (image embedding x_i, prompt embedding t_i) and unit-diagonal kernels k_X, k_T (Gaussian
with its own bandwidth per modality, or cosine), with K_X[i, j] = k_X(x_i, x_j) and K_T[i, j] = k_T(t_i, t_j):

* H_α(X) = matrix-based Rényi entropy of order α (natural log) of the trace-normalised K_X / n, i.e. of its
  eigenvalues λ (which sum to 1): (1/(1−α)) log Σ λ^α, −Σ λ log λ at α = 1, −log max λ at α = ∞;
* H_α(T) the same of K_T / n;
* H_α(X, T) the same of the normalised Hadamard product (K_X ⊙ K_T) / n (its trace is n: unit diagonals);
* H_α(X | T) = H_α(X, T) − H_α(T) and I_α(X; T) = H_α(X) + H_α(T) − H_α(X, T);
* VENDI_α(X) = exp H_α(X), cond-VENDI_α = exp H_α(X | T), info-VENDI_α = exp I_α(X; T), so that
  VENDI_α(X) = cond-VENDI_α · info-VENDI_α exactly, for every α.

These are the definitions of the paper's reference code (mjalali/conditional-vendi: kernels divided by n, the
joint ``K_x * K_y / trace``, natural logarithms, the conditional entropy as joint minus prompt entropy and the
information as the sum of the marginals minus the joint), written for every order α > 0 (the reference code
offers α ∈ {1, 1.5, 2, ∞}).

Bounds. K_T is a correlation matrix (PSD, unit diagonal), so the spectrum of (K_X ⊙ K_T)/n is majorised by that
of K_X/n (Bapat and Sunder 1985), and symmetrically by that of K_T/n: H_α(X, T) ≥ max(H_α(X), H_α(T)) for
every α, hence cond-VENDI_α ≥ 1 and info-VENDI_α ≤ min(VENDI_α(X), VENDI_α(T)). The exact path asserts both.
info-VENDI_α ≥ 1 is *not* guaranteed: Rényi entropies of order α ≠ 1 are not subadditive (on 300 small random
sets, info-VENDI_2 went down to 0.994 and info-VENDI_∞ to 0.95 with Gaussian kernels, to 0.88 at α = ∞ with
cosine; none fell below 1 at α = 0.5 or α = 1). cond-VENDI_α = 1 needs more than images being a function of the
prompt: K_X must be 1 wherever K_T is non-zero. With a kernel that does not decay (cosine), two distinct but
similar prompts with different images keep K_T > 0 where K_X ⊙ K_T drops it, and cond-VENDI exceeds 1 (1.008 in
the tests for paraphrases with cosines ≈ 0.05 between prompts).

Two ways to compute them:

* ``conditional_vendi``: the three n × n kernel matrices (n ≤ ``EXACT_MAX_N``, the exact limit of
  ``exact_entropy``), built in tiles; peak memory two n × n float64 matrices.
* ``ConditionalVendiEstimator`` (streaming: ``update``/``merge``/``compute``, ``save``/``load``) and its one-shot
  ``conditional_vendi_features``: explicit feature maps and three additive covariance states, as FKEA.

  - Gaussian kernels: the product kernel exp(−‖x−x'‖²/(2σ_x²)) · exp(−‖t−t'‖²/(2σ_t²)) is the unit-bandwidth
    Gaussian kernel of the concatenation [x/σ_x, t/σ_t], whose spectral measure is N(0, I/σ_x²) ⊗ N(0, I/σ_t²).
    So the joint random Fourier features pair the i-th image frequency with the i-th text frequency:
    φ_J(x, t) = [cos(ω_iᵀx + ν_iᵀt), sin(ω_iᵀx + ν_iᵀt)]_i / √r. The image frequencies ω are FKEA's
    (``default_rng(seed)``, so VENDI of X equals ``FKEA(sigma=image_sigma, rff_dim=r, seed=seed)``'s), the text
    frequencies ν are Scendi's (``default_rng(text_seed(seed))``). Sharing the draws between the marginal and
    the joint maps (as the reference code does) correlates their errors: at n = 1000 (10 prompt clusters,
    images = prompt-driven part + 3 styles), the RMS error in nats of H(X|T) / I(X;T) over 4 seeds (2 at r = 4000) was
    0.030 / 0.018, 0.016 / 0.010, 0.006 / 0.006 at r = 250, 1000, 4000, against 0.044 / 0.021, 0.021 / 0.025,
    0.011 / 0.009 with independent joint frequencies. Each covariance is 2r × 2r.
  - Cosine kernels: the product kernel's feature map is the Kronecker product of the normalised vectors,
    φ_J(x, t) = (x/‖x‖) ⊗ (t/‖t‖) ∈ R^{d_x·d_t}, exact. It is used while d_x·d_t ≤ ``MAX_JOINT_FEATURES``;
    beyond that the estimator refuses (use the exact path, n ≤ ``EXACT_MAX_N``, or Gaussian kernels).

Each covariance C = Σφφᵀ/n has the non-zero spectrum of the corresponding kernel matrix over n (exactly for
cosine, approximately for random features: FKEA's Theorem-2 radius, ``error_radius``, bounds each spectrum's ℓ2
error). Random features bias VENDI_1 low for flat spectra at small r (see docs/metrics.md), and the differences
H(X|T), I(X;T) inherit the errors of the three spectra: the RFF cond-VENDI_α may fall slightly below 1 where the
exact value is 1 (images a function of the prompt); nothing is clipped.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self

import numpy as np
import scipy.linalg
from numpy.typing import ArrayLike, NDArray
from scipy.linalg import blas

from t2ibench.errors import InputError
from t2ibench.metrics.additive import AdditiveEstimator
from t2ibench.metrics.checks import (
    KERNELS,
    as_matrix,
    check_alphas,
    check_kernel,
    check_memory,
    check_nonzero_rows,
    check_positive_int,
    check_seed,
    check_sigma,
)
from t2ibench.metrics.covariance import CovarianceAccumulator
from t2ibench.metrics.entropy import DEFAULT_ALPHAS, DEFAULT_BATCH, DEFAULT_DELTA, DEFAULT_MAX_N, fkea_error_radius
from t2ibench.metrics.kernels import DEFAULT_BLOCK, MAX_PHASE, RandomFourierFeatures, gaussian_blocks, l2_normalize
from t2ibench.metrics.scendi import check_aligned, text_seed
from t2ibench.metrics.spectrum import InvariantError, check_vendi_invariants, clean_spectrum, renyi_vendi

CONDITIONAL_KERNELS = KERNELS
EXACT_MAX_N = DEFAULT_MAX_N
"""Largest n of the exact path (three n × n kernel matrices, O(n³) eigensolves): the limit of ``exact_entropy``."""
MAX_JOINT_FEATURES = 8192
"""Largest d_x·d_t of the cosine Kronecker feature map (its covariance alone is d_x·d_t squared doubles)."""
_CHUNK_ELEMENTS = 1 << 24
"""Feature elements one chunk of rows may hold per map (bounds the per-batch feature memory)."""
_PARTS = ("x", "t", "joint")


def _alpha_name(alpha: float) -> str:
    return "inf" if math.isinf(alpha) else f"{alpha:.12g}"


@dataclass(frozen=True)
class ConditionalVendiResult:
    """Per order α: VENDI of images, prompts and the joint, cond-VENDI and info-VENDI (effective numbers of modes).

    ``vendi_x[α] = conditional[α] · information[α]`` exactly; ``joint[α] = exp H_α(X, T)``. ``method`` is
    "exact" (kernel matrices, or the exact cosine feature maps) or "rff" (random Fourier features, approximate;
    ``error_radius`` is FKEA's Theorem-2 ℓ2 bound on each of the three spectra with probability ≥ 1 − ``delta``).
    ``clipped_fraction`` is the largest round-off mass removed from the three spectra.
    """

    method: str
    kernel: str
    n: int
    vendi_x: Mapping[float, float]
    vendi_t: Mapping[float, float]
    joint: Mapping[float, float]
    conditional: Mapping[float, float]
    information: Mapping[float, float]
    clipped_fraction: float
    image_sigma: float | None = None
    text_sigma: float | None = None
    rff_dim: int | None = None
    seed: int | None = None
    error_radius: float | None = None
    delta: float | None = None

    def entropies(self, alpha: float) -> dict[str, float]:
        """H_α(X), H_α(T), H_α(X,T), H_α(X|T), I_α(X;T) in nats for a computed α (KeyError otherwise)."""
        key = float(alpha)
        if key not in self.vendi_x:
            raise KeyError(f"order {_alpha_name(key)} was not computed; available: {sorted(self.vendi_x)}")
        return {
            "image": math.log(self.vendi_x[key]),
            "text": math.log(self.vendi_t[key]),
            "joint": math.log(self.joint[key]),
            "conditional": math.log(self.conditional[key]),
            "information": math.log(self.information[key]),
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable summary (α keys as strings: '1', '2', 'inf')."""
        out: dict[str, Any] = {"method": self.method, "kernel": self.kernel, "n": self.n}
        for name in ("vendi_x", "vendi_t", "joint", "conditional", "information"):
            out[name] = {_alpha_name(a): v for a, v in getattr(self, name).items()}
        for name in ("clipped_fraction", "image_sigma", "text_sigma", "rff_dim", "seed", "error_radius", "delta"):
            out[name] = getattr(self, name)
        return out


def _assemble(
    spectra: Sequence[NDArray[np.float64]],
    clipped: float,
    orders: tuple[float, ...],
    *,
    n: int,
    bounds: Sequence[int],
    exact: bool,
    **fields: Any,
) -> ConditionalVendiResult:
    """Scores from normalised spectra (image, text, joint); asserts VENDI bounds (and, if exact, majorisation)."""
    scores = [{a: renyi_vendi(p, a) for a in orders} for p in spectra]
    slack = 1e-6 + 4 * clipped
    for values, bound, what in zip(scores, bounds, ("image VENDI", "text VENDI", "joint VENDI"), strict=True):
        check_vendi_invariants(values, None, bound=bound, slack=slack, what=what)
    vx, vt, vj = scores
    conditional = {a: math.exp(math.log(vj[a]) - math.log(vt[a])) for a in orders}
    information = {a: math.exp(math.log(vx[a]) + math.log(vt[a]) - math.log(vj[a])) for a in orders}
    if exact:
        for a in orders:
            if vj[a] < max(vx[a], vt[a]) * (1 - slack):
                raise InvariantError(
                    f"joint VENDI_{_alpha_name(a)} = {vj[a]:.6g} is below max(image {vx[a]:.6g}, text {vt[a]:.6g}), "
                    "which the Hadamard product's majorisation forbids: the spectra are dominated by round-off; "
                    "refusing a wrong number"
                )
    return ConditionalVendiResult(
        n=n,
        vendi_x=vx,
        vendi_t=vt,
        joint=vj,
        conditional=conditional,
        information=information,
        clipped_fraction=clipped,
        **fields,
    )


def _paired(
    X: ArrayLike,
    T: ArrayLike,
    image_ids: Sequence[Hashable] | None,
    text_ids: Sequence[Hashable] | None,
    *,
    row_offset: int = 0,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """X (n, d_x) and T (n, d_t) validated as float64, with equal row counts and (if given) aligned ids."""
    Xm = as_matrix(X, name="X")
    Tm = as_matrix(T, name="T")
    if Xm.shape[0] != Tm.shape[0]:
        raise InputError(
            f"X has {Xm.shape[0]} rows but T has {Tm.shape[0]}: row i of T must be the prompt embedding of image i"
        )
    if (image_ids is None) != (text_ids is None):
        raise InputError("give both image_ids and text_ids (pairs are checked by id), or neither")
    if image_ids is not None and text_ids is not None:
        if len(image_ids) != Xm.shape[0]:
            raise InputError(f"image_ids has {len(image_ids)} ids for {Xm.shape[0]} rows of X")
        check_aligned(image_ids, text_ids, row_offset=row_offset)
    return Xm, Tm


def _kernel_tiles(
    M: NDArray[np.float64], kernel: str, sigma: float | None, block_size: int
) -> Iterator[tuple[slice, slice, NDArray[np.float64]]]:
    """Upper-triangular tiles (rows, cols, K[rows, cols]) of the unit-diagonal kernel matrix of rows M (n, d)."""
    if kernel == "gaussian":
        assert sigma is not None
        yield from gaussian_blocks(M - M.mean(axis=0), sigma=sigma, block_size=block_size)
        return
    U = l2_normalize(M)
    n = U.shape[0]
    for i0 in range(0, n, block_size):
        rows = slice(i0, min(i0 + block_size, n))
        for j0 in range(i0, n, block_size):
            cols = slice(j0, min(j0 + block_size, n))
            yield rows, cols, U[rows] @ U[cols].T


def _fill(
    target: NDArray[np.float64], tiles: Iterable[tuple[slice, slice, NDArray[np.float64]]], *, multiply: bool
) -> None:
    """Write (or multiply in) symmetric tiles into ``target`` (n, n); the diagonal is set to exactly 1."""
    for rows, cols, tile in tiles:
        if multiply:
            target[rows, cols] *= tile
            if rows != cols:
                target[cols, rows] *= tile.T
        else:
            target[rows, cols] = tile
            if rows != cols:
                target[cols, rows] = tile.T
    np.fill_diagonal(target, 1.0)


def _kernel_spectrum(K: NDArray[np.float64]) -> tuple[NDArray[np.float64], float]:
    """Normalised spectrum (n,) of K/n for a unit-diagonal K (n, n), overwriting K; and the clipped fraction."""
    K /= K.shape[0]
    spec = clean_spectrum(scipy.linalg.eigvalsh(K, overwrite_a=True, check_finite=False))
    return spec.probabilities, spec.clipped_fraction


def conditional_vendi(
    X: ArrayLike,
    T: ArrayLike,
    *,
    kernel: str = "gaussian",
    image_sigma: float | None = None,
    text_sigma: float | None = None,
    alphas: float | str | Iterable[float | str] = DEFAULT_ALPHAS,
    max_n: int = EXACT_MAX_N,
    block_size: int = DEFAULT_BLOCK,
    image_ids: Sequence[Hashable] | None = None,
    text_ids: Sequence[Hashable] | None = None,
) -> ConditionalVendiResult:
    """Exact cond-/info-VENDI_α of pairs X (n, d_x), T (n, d_t) via n × n kernels (n ≤ max_n; σ in embedding units).

    Row i of T is the prompt embedding of image i (pass ``image_ids``/``text_ids`` to have the pairing checked).
    The σ's are the Gaussian bandwidths of each modality and are ignored by the cosine kernel. Peak memory is two
    n × n float64 matrices (the joint kernel is formed by multiplying the prompt kernel in tile by tile).
    """
    orders = check_alphas(alphas)
    check_kernel(kernel)
    sx = check_sigma(image_sigma, name="image_sigma") if kernel == "gaussian" else None
    st = check_sigma(text_sigma, name="text_sigma") if kernel == "gaussian" else None
    check_positive_int(max_n, name="max_n")
    check_positive_int(block_size, name="block_size")
    Xm, Tm = _paired(X, T, image_ids, text_ids)
    if kernel == "cosine":
        check_nonzero_rows(Xm, name="X")
        check_nonzero_rows(Tm, name="T")
    n = Xm.shape[0]
    if n > max_n:
        raise InputError(
            f"exact conditional VENDI needs three {n}×{n} kernel matrices and O(n³) eigensolves; n={n} exceeds the "
            f"exact limit max_n={max_n}: use conditional_vendi_features() (random Fourier features / cosine features)"
        )
    check_memory(2 * 8 * n * n, what=f"exact conditional VENDI of n={n} (two {n}×{n} kernel matrices)")
    K = np.empty((n, n), dtype=np.float64)
    _fill(K, _kernel_tiles(Xm, kernel, sx, block_size), multiply=False)
    J = K.copy()
    _fill(J, _kernel_tiles(Tm, kernel, st, block_size), multiply=True)  # K_X ⊙ K_T, tile by tile
    p_joint, c_joint = _kernel_spectrum(J)
    del J
    p_x, c_x = _kernel_spectrum(K)
    _fill(K, _kernel_tiles(Tm, kernel, st, block_size), multiply=False)
    p_t, c_t = _kernel_spectrum(K)
    del K
    return _assemble(
        (p_x, p_t, p_joint),
        max(c_x, c_t, c_joint),
        orders,
        bounds=(n, n, n),
        exact=True,
        method="exact",
        kernel=kernel,
        n=n,
        image_sigma=sx,
        text_sigma=st,
    )


# -- feature maps and the streaming estimator ---------------------------------------------------------------------


class ConditionalVendiEstimator(AdditiveEstimator):
    """Streaming cond-/info-VENDI over (image, prompt) pairs: three additive covariance states (image, text, joint).

    ``kernel="gaussian"``: seeded random Fourier features, r = ``rff_dim`` frequencies per map (covariances 2r × 2r),
    image frequencies from ``default_rng(seed)`` (FKEA's), text frequencies from ``default_rng(text_seed(seed))``
    (Scendi's), joint features on the paired frequencies (see the module docstring); float32 features, float64
    accumulation. ``kernel="cosine"``: exact maps x/‖x‖ (d_x), t/‖t‖ (d_t) and their Kronecker product (d_x·d_t ≤
    ``MAX_JOINT_FEATURES``), float64. ``image_center``/``text_center`` (Gaussian only) are subtracted before
    projecting (exact for a shift-invariant kernel; keeps float32 phases accurate far from the origin).
    n, the spec, merge and save/load are the base's (``AdditiveEstimator``, statistics ``x``, ``t``, ``joint``).
    """

    statistics = _PARTS

    def __init__(
        self,
        *,
        kernel: str = "gaussian",
        image_sigma: float | None = None,
        text_sigma: float | None = None,
        rff_dim: int | None = None,
        seed: int | None = None,
        image_center: ArrayLike | None = None,
        text_center: ArrayLike | None = None,
        batch_size: int = DEFAULT_BATCH,
        image_dim: int | None = None,
        text_dim: int | None = None,
    ) -> None:
        super().__init__(batch_size=batch_size)
        self.kernel = check_kernel(kernel)
        self.image_sigma: float | None = None
        self.text_sigma: float | None = None
        self.rff_dim: int | None = None
        self.seed: int | None = None
        self.image_center: tuple[float, ...] | None = None
        self.text_center: tuple[float, ...] | None = None
        if kernel == "gaussian":
            self.image_sigma = check_sigma(image_sigma, name="image_sigma")
            self.text_sigma = check_sigma(text_sigma, name="text_sigma")
            if rff_dim is None:
                raise InputError("rff_dim is required for the Gaussian kernel (random frequencies per map, e.g. 1000)")
            self.rff_dim = check_positive_int(rff_dim, name="rff_dim")
            if seed is None:
                raise InputError("seed is required for the Gaussian kernel (it fixes the random Fourier frequencies)")
            self.seed = check_seed(seed)
            self.image_center = _center(image_center, "image_center")
            self.text_center = _center(text_center, "text_center")
        elif image_center is not None or text_center is not None:
            raise InputError(
                "image_center/text_center apply to the Gaussian kernel only (cosine is not shift-invariant)"
            )
        self.compute_dtype: type[np.floating] = np.float32 if kernel == "gaussian" else np.float64
        self._dims: tuple[int, int] | None = None
        self._maps: tuple[RandomFourierFeatures, RandomFourierFeatures] | None = None
        self._omega: tuple[NDArray[np.float32], NDArray[np.float32]] | None = None
        if (image_dim is None) != (text_dim is None):
            raise InputError("give both image_dim and text_dim, or neither")
        if image_dim is not None and text_dim is not None:
            self._initialise(
                image_dim=check_positive_int(image_dim, name="image_dim"),
                text_dim=check_positive_int(text_dim, name="text_dim"),
            )

    # -- state ------------------------------------------------------------------------------------------------
    def feature_dims(self, image_dim: int, text_dim: int) -> tuple[int, int, int]:
        """Feature dimensions (image, text, joint) for input dimensions d_x, d_t; refuses too large a Kronecker map."""
        if self.kernel == "gaussian":
            assert self.rff_dim is not None
            return 2 * self.rff_dim, 2 * self.rff_dim, 2 * self.rff_dim
        joint = image_dim * text_dim
        if joint > MAX_JOINT_FEATURES:
            raise InputError(
                f"the cosine joint feature map x/‖x‖ ⊗ t/‖t‖ has d_x·d_t = {image_dim}·{text_dim} = {joint} "
                f"dimensions, above the limit MAX_JOINT_FEATURES={MAX_JOINT_FEATURES} (its covariance is {joint}² "
                f"doubles): use the exact path conditional_vendi() for n ≤ {EXACT_MAX_N}, or the Gaussian kernel's "
                "random features"
            )
        return image_dim, text_dim, joint

    def _initialise(self, **input_dims: int) -> None:
        image_dim, text_dim = input_dims["image_dim"], input_dims["text_dim"]
        dims = self.feature_dims(image_dim, text_dim)
        for name, center, dim in (
            ("image_center", self.image_center, image_dim),
            ("text_center", self.text_center, text_dim),
        ):
            if center is not None and len(center) != dim:
                raise InputError(f"{name} has {len(center)} values but the embeddings have dimension {dim}")
        if self.kernel == "gaussian":
            assert self.image_sigma is not None
            assert self.text_sigma is not None
            assert self.rff_dim is not None
            assert self.seed is not None
            fx = RandomFourierFeatures(image_dim, self.image_sigma, self.rff_dim, self.seed, self.image_center)
            ft = RandomFourierFeatures(text_dim, self.text_sigma, self.rff_dim, text_seed(self.seed), self.text_center)
            self._maps = (fx, ft)
            self._omega = (fx.omega.astype(np.float32), ft.omega.astype(np.float32))
        self._start(dict(zip(_PARTS, dims, strict=True)))
        self._dims = (image_dim, text_dim)

    def _params(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "image_sigma": self.image_sigma,
            "text_sigma": self.text_sigma,
            "rff_dim": self.rff_dim,
            "seed": self.seed,
            "image_center": None if self.image_center is None else list(self.image_center),
            "text_center": None if self.text_center is None else list(self.text_center),
        }

    def _input_dims(self) -> dict[str, int | None]:
        dims = (None, None) if self._dims is None else self._dims
        return {"image_dim": dims[0], "text_dim": dims[1]}

    def _accumulators(self) -> tuple[CovarianceAccumulator, ...]:
        """The three statistics (image, text, joint), in declared order."""
        return tuple(self._stat(name) for name in _PARTS)

    # -- features ---------------------------------------------------------------------------------------------
    def _rows_per_chunk(self) -> int:
        widest = max(self.statistic_dims().values())
        return max(1, min(self.batch_size, _CHUNK_ELEMENTS // widest))

    def _phases(self, rows: NDArray[np.float64], which: int) -> NDArray[np.float32]:
        """ω-projections (b, r) in float32 of validated rows (b, d) of map ``which`` (0 image, 1 text)."""
        assert self._maps is not None
        assert self._omega is not None
        center = self._maps[which].center
        shifted = rows if center is None else rows - np.asarray(center, dtype=np.float64)
        with np.errstate(over="ignore"):
            proj: NDArray[np.float32] = shifted.astype(np.float32) @ self._omega[which]
        return proj

    def _checked_phases(
        self, a: NDArray[np.float64], b: NDArray[np.float64]
    ) -> tuple[NDArray[np.float32], NDArray[np.float32], NDArray[np.float32]]:
        """Image, text and joint phases (b, r) of validated rows; InputError if any lies beyond float32's precision."""
        px, pt = self._phases(a, 0), self._phases(b, 1)
        pj = px + pt
        limit = MAX_PHASE[np.dtype(np.float32).itemsize]
        peak = max((float(np.abs(p).max()) for p in (px, pt, pj) if p.size), default=0.0)
        if not peak <= limit:
            raise InputError(
                f"random-Fourier phases reach {peak:.3g} rad, beyond {limit:.0e} where float32 keeps no useful "
                "precision: the embeddings lie far from the origin relative to σ; pass image_center/text_center "
                "(e.g. their means; the Gaussian kernel is shift-invariant) or check image_sigma/text_sigma"
            )
        return px, pt, pj

    def _trig(self, proj: NDArray[np.float32]) -> NDArray[np.float32]:
        """Interleaved [cos, sin] features (b, 2r) / √r of phases (b, r)."""
        phi = np.empty((proj.shape[0], 2 * proj.shape[1]), dtype=np.float32)
        np.cos(proj, out=phi[:, 0::2])
        np.sin(proj, out=phi[:, 1::2])
        phi *= np.float32(1.0 / math.sqrt(proj.shape[1]))
        return phi

    def _features(
        self, a: NDArray[np.float64], b: NDArray[np.float64]
    ) -> tuple[NDArray[np.floating], NDArray[np.floating], NDArray[np.floating]]:
        """(image, text, joint) features of validated rows a (b, d_x), b (b, d_t)."""
        if self.kernel == "gaussian":
            px, pt, pj = self._checked_phases(a, b)
            return self._trig(px), self._trig(pt), self._trig(pj)
        ux = a / np.linalg.norm(a, axis=1, keepdims=True)
        ut = b / np.linalg.norm(b, axis=1, keepdims=True)
        joint = (ux[:, :, None] * ut[:, None, :]).reshape(a.shape[0], -1)
        return ux, ut, joint

    def _validated(
        self,
        X: ArrayLike,
        T: ArrayLike,
        image_ids: Sequence[Hashable] | None,
        text_ids: Sequence[Hashable] | None,
        row_offset: int,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        Xm, Tm = _paired(X, T, image_ids, text_ids, row_offset=row_offset)
        if self._dims is not None and (Xm.shape[1], Tm.shape[1]) != self._dims:
            raise InputError(
                f"dimensions (X {Xm.shape[1]}, T {Tm.shape[1]}) differ from earlier batches (or the dims given) "
                f"{self._dims}"
            )
        if self.kernel == "cosine":
            check_nonzero_rows(Xm, name="X", row_offset=row_offset)
            check_nonzero_rows(Tm, name="T", row_offset=row_offset)
        if self._dims is None:
            self.feature_dims(Xm.shape[1], Tm.shape[1])  # refuse an oversized Kronecker map before any state exists
        return Xm, Tm

    def _chunks(
        self, Xm: NDArray[np.float64], Tm: NDArray[np.float64]
    ) -> Iterator[tuple[slice, tuple[NDArray[np.floating], NDArray[np.floating], NDArray[np.floating]]]]:
        step = self._rows_per_chunk()
        for start in range(0, Xm.shape[0], step):
            rows = slice(start, start + step)
            yield rows, self._features(Xm[rows], Tm[rows])

    def features(
        self, X: ArrayLike, T: ArrayLike
    ) -> tuple[NDArray[np.floating], NDArray[np.floating], NDArray[np.floating]]:
        """Features (image (n, D_x), text (n, D_t), joint (n, D_J)) of pairs X (n, d_x), T (n, d_t); no state change."""
        Xm, Tm = self._validated(X, T, None, None, 0)
        if self._stats is None:
            self._initialise(image_dim=Xm.shape[1], text_dim=Tm.shape[1])
        n = Xm.shape[0]
        itemsize = np.dtype(self.compute_dtype).itemsize
        widths = [self.statistic_dims()[name] for name in _PARTS]
        check_memory(n * sum(widths) * itemsize, what=f"the features of n={n} pairs")
        out = tuple(np.empty((n, width), dtype=self.compute_dtype) for width in widths)
        for rows, feats in self._chunks(Xm, Tm):
            for target, f in zip(out, feats, strict=True):
                target[rows] = f
        return out[0], out[1], out[2]

    def update(
        self,
        X: ArrayLike,
        T: ArrayLike,
        *,
        image_ids: Sequence[Hashable] | None = None,
        text_ids: Sequence[Hashable] | None = None,
    ) -> Self:
        """Add pairs: images X (b, d_x), prompts T (b, d_t), row i with row i (checked by id when ids are given).

        All rows are validated (and random-Fourier phases checked) before any is added: the update is atomic.
        """
        Xm, Tm = self._validated(X, T, image_ids, text_ids, self.n)
        if self._stats is None:
            self._initialise(image_dim=Xm.shape[1], text_dim=Tm.shape[1])
        step = self._rows_per_chunk()
        if self.kernel == "gaussian" and Xm.shape[0] > step:  # several chunks: check every phase before adding any
            for start in range(0, Xm.shape[0], step):
                self._checked_phases(Xm[start : start + step], Tm[start : start + step])
        for _, feats in self._chunks(Xm, Tm):
            self._add(*feats)
        return self

    def covariances(self) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """Feature covariances Σφφᵀ/n (image (D_x, D_x), text (D_t, D_t), joint (D_J, D_J)), float64, trace 1."""
        if self.n == 0:
            raise InputError("no pairs: call update() before compute()")
        a, b, c = (acc.second_moment() for acc in self._accumulators())
        return a, b, c

    def _result(
        self,
        spectra: Sequence[NDArray[np.float64]],
        clipped: float,
        orders: tuple[float, ...],
        delta: float,
        n: int,
    ) -> ConditionalVendiResult:
        """Scores of spectra (image, text, joint) computed from n pairs with this estimator's maps."""
        radius = None if self.rff_dim is None else fkea_error_radius(n, self.rff_dim, delta)
        return _assemble(
            spectra,
            clipped,
            orders,
            bounds=tuple(min(n, self.statistic_dims()[name]) for name in _PARTS),
            exact=False,
            method="rff" if self.kernel == "gaussian" else "exact",
            kernel=self.kernel,
            n=n,
            image_sigma=self.image_sigma,
            text_sigma=self.text_sigma,
            rff_dim=self.rff_dim,
            seed=self.seed,
            error_radius=radius,
            delta=None if radius is None else delta,
        )

    def compute(
        self, alphas: float | str | Iterable[float | str] = DEFAULT_ALPHAS, *, delta: float = DEFAULT_DELTA
    ) -> ConditionalVendiResult:
        """cond-/info-VENDI_α and the three VENDI_α from the covariance spectra (each eigensolve O(D³))."""
        orders = check_alphas(alphas)
        eps = float(np.finfo(self.compute_dtype).eps)
        spectra, clipped = [], 0.0
        for C in self.covariances():
            spec = clean_spectrum(scipy.linalg.eigvalsh(C, overwrite_a=True), eps=eps, rank=self.n)
            spectra.append(spec.probabilities)
            clipped = max(clipped, spec.clipped_fraction)
        return self._result(spectra, clipped, orders, delta, self.n)


def _center(value: ArrayLike | None, name: str) -> tuple[float, ...] | None:
    if value is None:
        return None
    c = np.asarray(value, dtype=np.float64).ravel()
    if not np.isfinite(c).all():
        raise InputError(f"{name} must be finite numbers (one per embedding dimension)")
    return tuple(float(v) for v in c)


def _gram_spectrum(F: NDArray[np.floating], eps: float, block_size: int) -> tuple[NDArray[np.float64], float]:
    """Normalised spectrum of FFᵀ/n (n, n) (the non-zero spectrum of FᵀF/n), float64 tiles; clipped fraction.

    Only the upper triangle is built (SYRK on the diagonal tiles, GEMM above) and read by the eigensolver.
    """
    n = F.shape[0]
    check_memory(8 * n * n + 8 * min(n, block_size) * F.shape[1], what=f"the {n}×{n} Gram matrix of the features")
    G = np.zeros((n, n), dtype=np.float64, order="F")
    for i0 in range(0, n, block_size):
        rows = slice(i0, min(i0 + block_size, n))
        left = F[rows].astype(np.float64)
        G[rows, rows] = blas.dsyrk(1.0, left.T, trans=1, lower=0)  # leftᵀ is Fortran-ordered: no copy
        for j0 in range(i0 + block_size, n, block_size):
            cols = slice(j0, min(j0 + block_size, n))
            G[rows, cols] = left @ F[cols].astype(np.float64).T
    G /= n
    values = scipy.linalg.eigvalsh(G, lower=False, overwrite_a=True, check_finite=False)
    spec = clean_spectrum(values, eps=eps, rank=min(n, F.shape[1]))
    return spec.probabilities, spec.clipped_fraction


def conditional_vendi_features(
    X: ArrayLike,
    T: ArrayLike,
    *,
    kernel: str = "gaussian",
    image_sigma: float | None = None,
    text_sigma: float | None = None,
    rff_dim: int | None = None,
    seed: int | None = None,
    alphas: float | str | Iterable[float | str] = DEFAULT_ALPHAS,
    delta: float = DEFAULT_DELTA,
    batch_size: int = DEFAULT_BATCH,
    image_ids: Sequence[Hashable] | None = None,
    text_ids: Sequence[Hashable] | None = None,
) -> ConditionalVendiResult:
    """cond-/info-VENDI_α of pairs X (n, d_x), T (n, d_t) via feature maps (Gaussian: RFF, r = rff_dim; or cosine).

    σ's are Gaussian bandwidths in embedding units (ignored by cosine). Each spectrum is taken on its smaller side:
    the n × n Gram matrix ΦΦᵀ/n when n < D, else the D × D covariance (the same non-zero spectrum), so the result
    equals ``ConditionalVendiEstimator(...).update(X, T).compute()`` up to float32 round-off. Gaussian embeddings
    are centred first (exact: the kernel is shift-invariant).
    """
    orders = check_alphas(alphas)
    Xm, Tm = _paired(X, T, image_ids, text_ids)
    gaussian = check_kernel(kernel) == "gaussian"
    est = ConditionalVendiEstimator(
        kernel=kernel,
        image_sigma=image_sigma,
        text_sigma=text_sigma,
        rff_dim=rff_dim,
        seed=seed,
        image_center=Xm.mean(axis=0) if gaussian else None,
        text_center=Tm.mean(axis=0) if gaussian else None,
        batch_size=batch_size,
    )
    n = Xm.shape[0]
    dims = est.feature_dims(Xm.shape[1], Tm.shape[1])
    if n >= max(dims) or n > EXACT_MAX_N:
        return est.update(Xm, Tm).compute(orders, delta=delta)
    feats = est.features(Xm, Tm)
    eps = float(np.finfo(est.compute_dtype).eps)
    spectra, clipped = [], 0.0
    for F in feats:
        if n < F.shape[1]:
            p, c = _gram_spectrum(F, eps, DEFAULT_BLOCK)
        else:
            Fd = F.astype(np.float64)
            spec = clean_spectrum(scipy.linalg.eigvalsh(Fd.T @ Fd / n, overwrite_a=True), eps=eps, rank=n)
            p, c = spec.probabilities, spec.clipped_fraction
        spectra.append(p)
        clipped = max(clipped, c)
    return est._result(spectra, clipped, orders, delta, n)
