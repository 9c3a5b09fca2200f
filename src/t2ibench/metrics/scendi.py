"""Scendi: prompt-aware diversity from the Schur complement of the joint image–text kernel covariance.

Given n aligned pairs (image embedding x_j, prompt embedding t_j) and feature maps φ_I, φ_T (random Fourier
features for Gaussian kernels, or x/‖x‖ for the cosine kernel), the joint covariance

    C = (1/n) Σ_j [φ_I(x_j); φ_T(t_j)] [φ_I(x_j); φ_T(t_j)]ᵀ = [[C_II, C_IT], [C_TI, C_TT]]

is accumulated as one additive statistic (one SYRK per batch, mergeable across shards). Its Schur complement

    Λ_I = C_II − C_IT (C_TT + εI)⁻¹ C_TI

is the part of the image covariance that no linear function of the prompt features explains; the removed part
P = C_IT (C_TT + εI)⁻¹ C_TI is the prompt-driven component, and C_II = Λ_I + P.

Scendi (Ospanov et al., arXiv 2412.18645) = exp(Σ_j λ_j log(Tr Λ_I / λ_j)) over the eigenvalues λ_j of Λ_I.
Writing T = Tr Λ_I and p = λ/T, this equals exp(T · H(p)) with H the Shannon entropy: the effective number of
model-driven modes, exp(H(p)), discounted by the share T of the image variance that is model-driven
(Tr C_II = 1 for unit-norm features). Scendi is 1 when images are a function of their prompts (T → 0).

Regularisation. C_TT is singular whenever there are fewer distinct prompts than text features (always, for
GenEval-sized prompt sets), and how it is inverted decides the number. Two settings (``inverse=``):

* ``"ridge"`` (default): (C_TT + εI)⁻¹ with ε = ``epsilon`` × Tr C_TT (default 1e-6; Tr C_TT = 1 for unit-norm
  features), in float64. Because the joint matrix is PSD, the range of C_TI lies in that of C_TT, so as ε → 0
  the ridge converges to the pseudo-inverse and Λ_I to the exact Schur complement; Λ_I is PSD for every ε > 0
  and changes by O(ε) (tested over ε = 1e-9 … 1e-4).
* ``"pinv"``: the reference implementation's choice (aziksh-ospanov/scendi-score,
  ``scendi/metric/algorithm_utils.py::rff_schur_complement``): C_TT held in float32, plus 1e-12·I added in
  float32, then ``torch.linalg.pinv`` with its default cut-off: singular values σ ≤ rtol·σ_max are discarded,
  rtol = max(rows, cols)·eps(float32) = D_T · 1.19e-7 (the dtype the reference runs in), the rest inverted
  without shrinkage. ``epsilon`` is not used. The rule is applied in float64 arithmetic to the float32 matrix
  (one eigendecomposition, as for the ridge); the reference's float32 SVD and products add their own round-off
  on top (on the n = 5000 case in docs/metrics.md, torch's CPU float32 path keeps the same 162 of 2000
  directions and lands 1.2e-5 relative below), which no reimplementation reproduces bit for bit.

Every ``ScendiResult`` carries ``inverse`` and ``regularisation`` (the exact rule, with its data-dependent
cut-off and, for ``"pinv"``, how many text directions were kept) so that it can be stored beside the value.

A consequence worth knowing: with the uncentred covariances above, the mean image feature is "explained" by
any prompt set (a constant function lies in the span of the prompt features), so when images ignore their
prompts Λ_I is the *centred* image covariance: m equal far-apart image modes give exp(H(p)) = m − 1 and
Scendi = (m − 1)^{(m−1)/m}, not m.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Self, get_args

import numpy as np
import scipy.linalg
from numpy.typing import ArrayLike, NDArray

from t2ibench.errors import InputError, unknown_choice
from t2ibench.metrics.additive import AdditiveEstimator
from t2ibench.metrics.checks import (
    KERNELS,
    ScendiInverse,
    as_matrix,
    check_kernel,
    check_nonzero_rows,
    check_positive_int,
    check_seed,
    check_sigma,
)
from t2ibench.metrics.kernels import FeatureMap, NormalizedLinearFeatures, RandomFourierFeatures
from t2ibench.metrics.spectrum import InvariantError, check_vendi_invariants, clean_spectrum, renyi_vendi

DEFAULT_EPSILON = 1e-6
SCENDI_KERNELS = KERNELS
SCENDI_INVERSES: tuple[str, ...] = get_args(ScendiInverse)
DEFAULT_INVERSE = "ridge"
REFERENCE_DTYPE = np.float32  # the reference computes its covariances and their pseudo-inverse in float32
REFERENCE_JITTER = 1e-12  # the reference adds this (absolute) to C_TT's diagonal before torch.linalg.pinv


def pinv_rtol(dim: int) -> float:
    """torch.linalg.pinv's default relative cut-off for a (dim, dim) float32 matrix: max(rows, cols)·eps(float32)."""
    return check_positive_int(dim, name="dim") * float(np.finfo(REFERENCE_DTYPE).eps)


def check_inverse(inverse: str) -> str:
    """Raise InputError unless ``inverse`` is one of SCENDI_INVERSES ("ridge", "pinv"); return it."""
    if inverse not in SCENDI_INVERSES:
        raise unknown_choice("inverse", inverse, SCENDI_INVERSES)
    return inverse


def check_epsilon(epsilon: float) -> float:
    """Raise InputError unless the ridge ``epsilon`` (relative to Tr C_TT, dimensionless) is finite and > 0."""
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise InputError(f"epsilon must be a finite number > 0; got {epsilon!r}")
    return float(epsilon)


@dataclass(frozen=True)
class PromptPart:
    """The prompt-driven part P = C_IT A C_TI (D_I, D_I) with A the chosen inverse of C_TT, and how A was made.

    ``cutoff`` is the absolute ridge ε·Tr C_TT (``"ridge"``) or the singular-value cut-off rtol·σ_max
    (``"pinv"``); ``kept`` the number of text directions ``"pinv"`` inverted (None for the ridge).
    """

    matrix: NDArray[np.float64] = field(repr=False)
    inverse: str
    description: str
    cutoff: float
    kept: int | None


def prompt_part(
    C_IT: ArrayLike, C_TT: ArrayLike, *, inverse: str = DEFAULT_INVERSE, epsilon: float = DEFAULT_EPSILON
) -> PromptPart:
    """P = C_IT A C_TI for C_IT (D_I, D_T) and a PSD C_TT (D_T, D_T), A the ridge or reference pseudo-inverse."""
    check_inverse(inverse)
    check_epsilon(epsilon)
    cross = np.asarray(C_IT, dtype=np.float64)
    text = np.asarray(C_TT, dtype=np.float64)
    dim = text.shape[0]
    kept: int | None = None
    if inverse == "ridge":
        ridge = epsilon * float(np.trace(text))
        s, V = scipy.linalg.eigh(text)
        s = np.clip(s, 0.0, None)  # round-off negatives: the ridge keeps the inverse bounded either way
        B = cross @ V
        P = (B / (s + ridge)) @ B.T
        description = f"ridge (C_TT + εI)⁻¹, ε = {epsilon:g}·Tr C_TT = {ridge:.3g}"
        cutoff = ridge
    else:
        # the matrix the reference holds: C_TT in float32, + 1e-12·I added in float32 (usually below half an ulp)
        held = text.astype(REFERENCE_DTYPE)
        held[np.diag_indices(dim)] += REFERENCE_DTYPE(REFERENCE_JITTER)
        # its pseudo-inverse by the reference's rule, computed in float64: held is exactly symmetric, so its
        # singular values are |eigenvalues| and pinv = V_k diag(1/λ_k) V_kᵀ over |λ_k| > rtol·max|λ|
        lam, V = scipy.linalg.eigh(held.astype(np.float64))
        rtol = pinv_rtol(dim)
        cutoff = rtol * float(np.abs(lam).max())
        keep = np.abs(lam) > cutoff
        kept = int(keep.sum())
        B = cross @ V[:, keep]
        P = (B / lam[keep]) @ B.T
        description = (
            f"pinv of C_TT + 1e-12·I held in float32 (torch.linalg.pinv's default cut-off): rtol = "
            f"{dim}·eps(float32) = {rtol:.3g}, cut-off rtol·σ_max = {cutoff:.3g}, kept {kept}/{dim} text directions"
        )
    P = (P + P.T) / 2
    return PromptPart(matrix=P, inverse=inverse, description=description, cutoff=cutoff, kept=kept)


def text_seed(seed: int) -> int:
    """The seed of the text-side random Fourier features: a separate stream derived from ``seed``."""
    return int(np.random.SeedSequence((check_seed(seed), 1)).generate_state(1)[0])


def check_aligned(image_ids: Sequence[Hashable], text_ids: Sequence[Hashable], *, row_offset: int = 0) -> None:
    """Raise InputError unless the two id sequences are equal element by element (naming the first mismatch)."""
    if len(image_ids) != len(text_ids):
        raise InputError(f"unequal pairs: {len(image_ids)} image ids but {len(text_ids)} text ids")
    for i, (a, b) in enumerate(zip(image_ids, text_ids, strict=True)):
        if a != b:
            raise InputError(
                f"pairs are not aligned: row {i + row_offset} has image id {a!r} but text id {b!r} "
                "(pairs are matched by id, never by position: reorder or use gather_by_id)"
            )


def gather_by_id(
    wanted: Sequence[Hashable], ids: Sequence[Hashable], embeddings: ArrayLike, *, what: str = "prompt"
) -> NDArray[np.float64]:
    """Rows of ``embeddings`` (m, d), keyed by ``ids`` (m,), for each id in ``wanted`` (n,) → (n, d).

    Used to give every image the embedding of its own prompt: ``wanted`` holds each image's prompt id.
    Duplicate ids and ids without an embedding are errors naming the first offender.
    """
    table = as_matrix(embeddings, name=f"{what} embeddings")
    if len(ids) != table.shape[0]:
        raise InputError(f"{len(ids)} {what} ids for {table.shape[0]} {what} embeddings")
    index: dict[Hashable, int] = {}
    for row, key in enumerate(ids):
        if key in index:
            raise InputError(f"duplicate {what} id {key!r} at rows {index[key]} and {row}")
        index[key] = row
    rows = np.empty(len(wanted), dtype=np.intp)
    for i, key in enumerate(wanted):
        if key not in index:
            raise InputError(f"row {i} asks for {what} id {key!r}, which has no {what} embedding")
        rows[i] = index[key]
    gathered: NDArray[np.float64] = table[rows]
    return gathered


@dataclass(frozen=True)
class ScendiResult:
    """Scendi and its decomposition for one sample set (scores are effective numbers of modes, ≥ 1).

    ``model_share`` = Tr Λ_I / Tr C_II is the fraction of the image kernel variance not explained by the
    prompts; ``eigenvalues`` is the normalised spectrum of Λ_I (descending). ``inverse`` ("ridge" or "pinv") and
    ``regularisation`` (the exact rule with its data-dependent cut-off) say how C_TT was inverted: store them
    beside every value. ``epsilon`` is the ridge parameter asked for (not used by "pinv"); ``pinv_kept`` the
    number of text directions "pinv" inverted (None for the ridge).
    """

    scendi: float
    conditional_entropy: float
    conditional_vendi: float
    model_share: float
    prompt_score: float
    prompt_vendi: float
    image_vendi: float
    n: int
    kernel: str
    epsilon: float
    inverse: str
    regularisation: str
    eigenvalues: NDArray[np.float64] = field(repr=False)
    clipped_fraction: float
    image_sigma: float | None = None
    text_sigma: float | None = None
    rff_dim: int | None = None
    seed: int | None = None
    pinv_kept: int | None = None

    def to_dict(self, *, top_eigenvalues: int = 32) -> dict[str, Any]:
        """JSON-serialisable summary (at most ``top_eigenvalues`` eigenvalues of Λ_I)."""
        out = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "eigenvalues"}
        out["eigenvalues_top"] = [float(x) for x in self.eigenvalues[:top_eigenvalues]]
        return out


def _schur_score(
    matrix: NDArray[np.float64], *, eps: float, reference: float
) -> tuple[float, float, float, NDArray[np.float64], float]:
    """(exp(T·H(p)), H(p) in nats, T, p descending, clipped fraction) for a PSD part of a matrix of trace ``reference``.

    A part whose trace is at the round-off level of the whole (T ≤ D·ε·reference) is numerically zero: it holds
    no modes, so the score is exactly 1 (exp(0)) and the spectrum is empty.
    """
    values = scipy.linalg.eigvalsh(matrix)
    trace = float(values.sum())
    roundoff = values.size * eps * reference
    if trace < -roundoff:
        raise InvariantError(
            f"the Schur complement has trace {trace:.3g} < 0 beyond round-off ({roundoff:.3g}): C_TT is too "
            "ill-conditioned for this epsilon; raise epsilon (refusing a wrong number)"
        )
    if trace <= roundoff:
        return 1.0, 0.0, max(trace, 0.0), np.zeros(0), 0.0
    spec = clean_spectrum(values, eps=eps, reference=reference)
    p = spec.probabilities
    nz = p[p > 0]
    entropy = float(-np.sum(nz * np.log(nz)))
    return math.exp(trace * entropy), entropy, trace, p, spec.clipped_fraction


class Scendi(AdditiveEstimator):
    """Streaming Scendi estimator over aligned (image, prompt) embedding pairs; state = joint Σφφᵀ and n.

    ``kernel="gaussian"`` maps each modality with its own seeded random Fourier features (σ per modality;
    r = ``rff_dim`` frequencies each, so the joint covariance is 4r × 4r); ``kernel="cosine"`` uses the
    L2-normalised embeddings (joint (d_I + d_T)²). The image map uses ``seed``, the text map ``text_seed(seed)``.
    n, the spec, merge and save/load are the base's (``AdditiveEstimator``).
    """

    def __init__(
        self,
        *,
        kernel: str = "gaussian",
        image_sigma: float | None = None,
        text_sigma: float | None = None,
        rff_dim: int = 1000,
        seed: int = 0,
        batch_size: int = 8192,
        image_dim: int | None = None,
        text_dim: int | None = None,
    ) -> None:
        super().__init__(batch_size=batch_size)
        check_kernel(kernel)
        self.kernel = kernel
        if kernel == "gaussian":
            self.image_sigma: float | None = check_sigma(image_sigma, name="image_sigma")
            self.text_sigma: float | None = check_sigma(text_sigma, name="text_sigma")
            self.rff_dim: int | None = check_positive_int(rff_dim, name="rff_dim")
        else:
            self.image_sigma = self.text_sigma = None
            self.rff_dim = None
        self.seed = check_seed(seed)
        self.compute_dtype: type[np.floating] = np.float32 if kernel == "gaussian" else np.float64
        self._maps: tuple[FeatureMap, FeatureMap] | None = None
        if image_dim is not None and text_dim is not None:
            self._initialise(
                image_dim=check_positive_int(image_dim, name="image_dim"),
                text_dim=check_positive_int(text_dim, name="text_dim"),
            )

    # -- the base's hooks -------------------------------------------------------------------------------------
    def _initialise(self, **dims: int) -> None:
        image_dim, text_dim = dims["image_dim"], dims["text_dim"]
        if self.kernel == "gaussian":
            assert self.image_sigma is not None
            assert self.text_sigma is not None
            assert self.rff_dim is not None
            fi: FeatureMap = RandomFourierFeatures(image_dim, self.image_sigma, self.rff_dim, self.seed)
            ft: FeatureMap = RandomFourierFeatures(text_dim, self.text_sigma, self.rff_dim, text_seed(self.seed))
        else:
            fi, ft = NormalizedLinearFeatures(image_dim), NormalizedLinearFeatures(text_dim)
        self._maps = (fi, ft)
        self._start({"covariance": fi.feature_dim + ft.feature_dim})

    def _params(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "image_sigma": self.image_sigma,
            "text_sigma": self.text_sigma,
            "rff_dim": self.rff_dim,
            "seed": self.seed,
        }

    def _input_dims(self) -> dict[str, int | None]:
        if self._maps is None:
            return {"image_dim": None, "text_dim": None}
        return {"image_dim": self._maps[0].dim, "text_dim": self._maps[1].dim}

    @property
    def feature_maps(self) -> tuple[FeatureMap, FeatureMap]:
        """(image map, text map), available once the dimensions are known."""
        if self._maps is None:
            raise InputError("the input dimensions are not known yet: call update() first")
        return self._maps

    def update(
        self,
        images: ArrayLike,
        texts: ArrayLike,
        *,
        image_ids: Sequence[Hashable],
        text_ids: Sequence[Hashable],
    ) -> Self:
        """Add aligned pairs: images (b, d_I), texts (b, d_T), and each row's pair id on both sides (must match).

        All rows are validated before any is added (atomic update).
        """
        img = np.asarray(images)
        txt = np.asarray(texts)
        for arr, name in ((img, "images"), (txt, "texts")):
            if arr.ndim != 2:
                raise InputError(f"{name} must be a 2-D array of shape (n, d); got shape {arr.shape}")
        if len(img) != len(image_ids) or len(txt) != len(text_ids):
            raise InputError(
                f"ids do not match the embeddings: {len(img)} images with {len(image_ids)} ids, "
                f"{len(txt)} texts with {len(text_ids)} ids"
            )
        check_aligned(image_ids, text_ids, row_offset=self.n)
        if self._maps is not None:
            expected = (self._maps[0].dim, self._maps[1].dim)
            if (img.shape[1], txt.shape[1]) != expected:
                raise InputError(
                    f"dimensions (images {img.shape[1]}, texts {txt.shape[1]}) differ from earlier batches {expected}"
                )
        chunks = []
        for start in range(0, len(img), self.batch_size):
            stop = start + self.batch_size
            a = as_matrix(img[start:stop], name="images", dtype=self.compute_dtype, row_offset=self.n + start)
            b = as_matrix(txt[start:stop], name="texts", dtype=self.compute_dtype, row_offset=self.n + start)
            if self.kernel == "cosine":
                check_nonzero_rows(a, name="images", row_offset=self.n + start)
                check_nonzero_rows(b, name="texts", row_offset=self.n + start)
            chunks.append((a, b))
        if not chunks:
            raise InputError("images is empty: need at least 1 pair")
        if self._maps is None:
            self._initialise(image_dim=img.shape[1], text_dim=txt.shape[1])
        assert self._maps is not None
        fi, ft = self._maps
        for a, b in chunks:
            self._add(np.hstack([fi.transform(a, self.compute_dtype), ft.transform(b, self.compute_dtype)]))
        return self

    # -- results ----------------------------------------------------------------------------------------------
    def blocks(self) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """(C_II (D_I, D_I), C_IT (D_I, D_T), C_TT (D_T, D_T)) of the joint covariance, float64."""
        if self.n == 0:
            raise InputError("no pairs: call update() before compute()")
        C = self._stat().second_moment()
        di = self.feature_maps[0].feature_dim
        return C[:di, :di], C[:di, di:], C[di:, di:]

    def decompose(
        self, epsilon: float = DEFAULT_EPSILON, *, inverse: str = DEFAULT_INVERSE
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """(Λ_I, P, C_II): the model-driven Schur complement, the prompt-driven part and their sum, (D_I, D_I)."""
        Lam, part, C_II = self._decompose(epsilon, inverse)
        return Lam, part.matrix, C_II

    def _decompose(self, epsilon: float, inverse: str) -> tuple[NDArray[np.float64], PromptPart, NDArray[np.float64]]:
        check_epsilon(epsilon)
        check_inverse(inverse)
        C_II, C_IT, C_TT = self.blocks()
        part = prompt_part(C_IT, C_TT, inverse=inverse, epsilon=epsilon)
        return C_II - part.matrix, part, C_II

    def compute(self, *, epsilon: float = DEFAULT_EPSILON, inverse: str = DEFAULT_INVERSE) -> ScendiResult:
        """Scendi of the Schur complement, its normalised entropy, the prompt-driven score and image VENDI-1.

        ``inverse="ridge"`` (default) regularises C_TT by ε = ``epsilon``·Tr C_TT; ``inverse="pinv"`` reproduces
        the reference repository's float32 ``torch.linalg.pinv`` cut-off (rtol = D_T·eps(float32)).
        """
        Lam, part, C_II = self._decompose(epsilon, inverse)
        P = part.matrix
        eps = float(np.finfo(self.compute_dtype).eps)
        if inverse == "pinv":  # C_TT held in float32 puts float32 round-off into P whatever the kernel
            eps = max(eps, float(np.finfo(REFERENCE_DTYPE).eps))
        whole = float(np.trace(C_II))
        scendi, entropy, trace, p, clipped = _schur_score(Lam, eps=eps, reference=whole)
        prompt_score, prompt_entropy, _, _, _ = _schur_score(P, eps=eps, reference=whole)
        image_spec = clean_spectrum(scipy.linalg.eigvalsh(C_II), eps=eps, rank=self.n)
        image_vendi = renyi_vendi(image_spec.probabilities, 1.0)
        bound = min(self.n, C_II.shape[0])
        check_vendi_invariants({1.0: image_vendi}, None, bound=bound, slack=1e-6, what="image VENDI")
        tol = 1e-6 + C_II.shape[0] * eps
        if not (1 - tol <= scendi <= bound * (1 + tol)) or not (-tol <= trace / whole <= 1 + tol):
            raise InvariantError(
                f"Scendi = {scendi:.6g} (model share {trace / whole:.3g}) is outside [1, {bound}] / [0, 1]: the "
                "decomposition is dominated by round-off; refusing a wrong number"
            )
        return ScendiResult(
            scendi=scendi,
            conditional_entropy=entropy,
            conditional_vendi=math.exp(entropy),
            model_share=trace / whole,
            prompt_score=prompt_score,
            prompt_vendi=math.exp(prompt_entropy),
            image_vendi=image_vendi,
            n=self.n,
            kernel=self.kernel,
            epsilon=epsilon,
            inverse=inverse,
            regularisation=part.description,
            eigenvalues=p,
            clipped_fraction=clipped,
            image_sigma=self.image_sigma,
            text_sigma=self.text_sigma,
            rff_dim=self.rff_dim,
            seed=self.seed if self.kernel == "gaussian" else None,
            pinv_kept=part.kept,
        )


def scendi_score(
    images: ArrayLike,
    texts: ArrayLike,
    *,
    image_ids: Sequence[Hashable],
    text_ids: Sequence[Hashable],
    kernel: str = "gaussian",
    image_sigma: float | None = None,
    text_sigma: float | None = None,
    rff_dim: int = 1000,
    seed: int = 0,
    epsilon: float = DEFAULT_EPSILON,
    inverse: str = DEFAULT_INVERSE,
) -> ScendiResult:
    """One-shot Scendi of aligned pairs images (n, d_I) / texts (n, d_T) matched by id (``inverse``: see compute)."""
    check_inverse(inverse)
    est = Scendi(kernel=kernel, image_sigma=image_sigma, text_sigma=text_sigma, rff_dim=rff_dim, seed=seed)
    return est.update(images, texts, image_ids=image_ids, text_ids=text_ids).compute(epsilon=epsilon, inverse=inverse)
