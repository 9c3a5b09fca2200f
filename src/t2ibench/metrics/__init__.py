"""Metric core (numpy/scipy only): kernels, kernel-entropy diversity (exact VENDI/RKE, FKEA), Scendi, modes.

Submodules load on first use (``from t2ibench.metrics import FKEA`` works as ever): a caller that needs one input
check does not pay for scipy.linalg and every estimator (about a quarter of a second per process).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from t2ibench.metrics.bootstrap import EntropyBootstrap, ScoreInterval, bootstrap_entropy, cluster_draws
    from t2ibench.metrics.conditional import (
        ConditionalVendiEstimator,
        ConditionalVendiResult,
        conditional_vendi,
        conditional_vendi_features,
    )
    from t2ibench.metrics.convergence import (
        ConvergencePoint,
        ConvergenceReport,
        convergence_of_values,
        convergence_report,
        convergence_reports,
        nested_subsets,
    )
    from t2ibench.metrics.covariance import CovarianceAccumulator
    from t2ibench.metrics.entropy import (
        DEFAULT_ALPHAS,
        FKEA,
        CosineEntropy,
        EntropyResult,
        MethodChoice,
        StreamingKernelEntropy,
        choose_method,
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
    from t2ibench.metrics.modes import Mode, ModeSet, kernel_modes, scendi_modes
    from t2ibench.metrics.nystrom import NystromEntropy, NystromFeatures, NystromResult, choose_landmarks
    from t2ibench.metrics.scendi import Scendi, ScendiResult, check_aligned, gather_by_id, scendi_score
    from t2ibench.metrics.spectrum import (
        InvariantError,
        SpectrumClippingWarning,
        check_vendi_invariants,
        clean_spectrum,
        renyi_vendi,
        vendi_spectrum_scores,
    )
    from t2ibench.metrics.truncated import truncate_spectrum, truncated_vendi


def _homes() -> dict[str, str]:
    """Public name → the submodule it comes from, read off this file's own import block (one list, not two)."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("t2ibench.metrics."):
            found.update({alias.name: node.module for alias in node.names if node.module})
    return found


_HOMES: dict[str, str] = {}


def __getattr__(name: str) -> Any:
    """The public name ``name`` (one of ``__all__``) from its submodule, imported on first use."""
    if name in __all__:
        if not _HOMES:
            _HOMES.update(_homes())
        value = getattr(importlib.import_module(_HOMES[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 't2ibench.metrics' has no attribute {name!r}")


__all__ = [
    "DEFAULT_ALPHAS",
    "FKEA",
    "ConditionalVendiEstimator",
    "ConditionalVendiResult",
    "ConvergencePoint",
    "ConvergenceReport",
    "CosineEntropy",
    "CovarianceAccumulator",
    "EntropyBootstrap",
    "EntropyResult",
    "FeatureMap",
    "InvariantError",
    "MethodChoice",
    "Mode",
    "ModeSet",
    "NormalizedLinearFeatures",
    "NystromEntropy",
    "NystromFeatures",
    "NystromResult",
    "RandomFourierFeatures",
    "Scendi",
    "ScendiResult",
    "ScoreInterval",
    "SpectrumClippingWarning",
    "StreamingKernelEntropy",
    "bootstrap_entropy",
    "check_aligned",
    "check_vendi_invariants",
    "choose_landmarks",
    "choose_method",
    "clean_spectrum",
    "cluster_draws",
    "conditional_vendi",
    "conditional_vendi_features",
    "convergence_of_values",
    "convergence_report",
    "convergence_reports",
    "cosine_kernel",
    "exact_entropy",
    "fkea_error_radius",
    "fkea_scores",
    "gather_by_id",
    "gaussian_kernel",
    "kernel_modes",
    "median_heuristic_sigma",
    "nested_subsets",
    "renyi_vendi",
    "rke_score",
    "scendi_modes",
    "scendi_score",
    "truncate_spectrum",
    "truncated_vendi",
    "vendi_score",
    "vendi_spectrum_scores",
]
