"""Writes the saved-state fixtures of tests/unit/test_estimator_base.py (run once, with the code of the format).

The .npz files and expected.json were written by commit b79f110 (before the estimators shared one base), so
the test proves that states saved by that format still load and give the same numbers. Re-running this script
with newer code would only test the code against itself: don't, unless the state format changes on purpose.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from t2ibench.metrics import FKEA, CosineEntropy, Scendi
from t2ibench.metrics.conditional import ConditionalVendiEstimator
from t2ibench.metrics.nystrom import NystromEntropy

HERE = Path(__file__).parent


def main() -> None:
    """Save one small state per estimator and the scores it computes."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(60, 5))
    T = np.repeat(rng.normal(size=(6, 3)), 10, axis=0) + 0.1 * rng.normal(size=(60, 3))
    ids = list(range(60))
    expected: dict[str, object] = {}
    fkea = FKEA(sigma=1.5, rff_dim=16, seed=3, orthogonal=True).update(X)
    fkea.save(HERE / "fkea.npz")
    expected["fkea"] = fkea.compute().to_dict(top_eigenvalues=100)
    cos = CosineEntropy().update(X)
    cos.save(HERE / "cosine.npz")
    expected["cosine"] = cos.compute().to_dict(top_eigenvalues=100)
    nys = NystromEntropy(kernel="gaussian", sigma=2.0, m=12, seed=5).update(X)
    nys.save(HERE / "nystrom.npz")
    expected["nystrom"] = nys.compute(t=4).to_dict(top_eigenvalues=100)
    sc = Scendi(kernel="gaussian", image_sigma=2.0, text_sigma=1.0, rff_dim=8, seed=2)
    sc.update(X, T, image_ids=ids, text_ids=ids).save(HERE / "scendi.npz")
    expected["scendi"] = sc.compute().to_dict(top_eigenvalues=100)
    cv = ConditionalVendiEstimator(
        kernel="gaussian", image_sigma=2.0, text_sigma=1.0, rff_dim=8, seed=4, image_center=X.mean(0)
    )
    cv.update(X, T).save(HERE / "conditional.npz")
    expected["conditional"] = cv.compute().to_dict()
    cvc = ConditionalVendiEstimator(kernel="cosine").update(X, T)
    cvc.save(HERE / "conditional_cosine.npz")
    expected["conditional_cosine"] = cvc.compute().to_dict()
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True, default=float) + "\n")


if __name__ == "__main__":
    main()
