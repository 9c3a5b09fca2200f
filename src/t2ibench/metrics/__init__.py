"""Metric core (numpy/scipy only): kernels, kernel-entropy diversity (exact VENDI/RKE and FKEA)."""

from t2ibench.metrics.covariance import CovarianceAccumulator
from t2ibench.metrics.entropy import (
    DEFAULT_ALPHAS,
    FKEA,
    CosineEntropy,
    EntropyResult,
    StreamingKernelEntropy,
    exact_entropy,
    fkea_error_radius,
    fkea_scores,
    rke_score,
    vendi_score,
)
from t2ibench.metrics.kernels import (
    FeatureMap,
    NormalizedLinearFeatures,
    RandomFourierFeatures,
    cosine_kernel,
    gaussian_kernel,
    median_heuristic_sigma,
)
from t2ibench.metrics.spectrum import (
    SpectrumClippingWarning,
    clean_spectrum,
    renyi_vendi,
    vendi_spectrum_scores,
)

__all__ = [
    "DEFAULT_ALPHAS",
    "FKEA",
    "CosineEntropy",
    "CovarianceAccumulator",
    "EntropyResult",
    "FeatureMap",
    "NormalizedLinearFeatures",
    "RandomFourierFeatures",
    "SpectrumClippingWarning",
    "StreamingKernelEntropy",
    "clean_spectrum",
    "cosine_kernel",
    "exact_entropy",
    "fkea_error_radius",
    "fkea_scores",
    "gaussian_kernel",
    "median_heuristic_sigma",
    "renyi_vendi",
    "rke_score",
    "vendi_score",
    "vendi_spectrum_scores",
]
