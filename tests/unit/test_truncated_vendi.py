"""Truncated VENDI (Ospanov & Farnia 2025) from exact, FKEA and Nyström spectra; the streaming Nyström estimator.

References are independent: a brute-force truncated VENDI from numpy's eigenvalues of a kernel built with scipy's
cdist, and scikit-learn's ``Nystroem`` feature map fitted on the same landmarks.
"""

import math

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from t2ibench.errors import InputError, StateMismatchError
from t2ibench.metrics import FKEA, exact_entropy, median_heuristic_sigma
from t2ibench.metrics.nystrom import NystromEntropy, choose_landmarks
from t2ibench.metrics.truncated import truncate_spectrum, truncated_vendi

ALPHAS = (0.5, 1.0, 2.0, 3.0, math.inf)


def blobs(n: int, d: int, k: int, *, seed: int, scale: float = 3.0) -> np.ndarray:
    """n points around k Gaussian centres (centres ~ N(0, scale² I), unit spread) in R^d."""
    gen = np.random.default_rng(seed)
    centres = gen.standard_normal((k, d)) * scale
    return centres[gen.integers(0, k, n)] + gen.standard_normal((n, d))


def brute_truncated_vendi(K: np.ndarray, t: int, alpha: float) -> float:
    """The definition, literally: top t eigenvalues of K/n, plus (1 − their sum)/t each, Rényi entropy, exp."""
    lam = np.sort(np.linalg.eigvalsh(K / K.shape[0]))[::-1]
    top = lam[:t] + (1.0 - lam[:t].sum()) / t
    if alpha == 1.0:
        return float(np.exp(-np.sum(top * np.log(top))))
    if math.isinf(alpha):
        return float(1.0 / top.max())
    return float(np.sum(top**alpha) ** (1.0 / (1.0 - alpha)))


@pytest.fixture(scope="module")
def small():
    X = blobs(300, 5, 6, seed=7)
    return X, 0.5 * median_heuristic_sigma(X, seed=0)


# -- (a) exact spectrum against brute force ---------------------------------------------------------------------


@pytest.mark.parametrize("t", [1, 5, 50, 299])
def test_truncated_vendi_of_the_exact_spectrum_matches_brute_force(small, t):
    X, sigma = small
    K = np.exp(-cdist(X, X, "sqeuclidean") / (2 * sigma**2))
    exact = exact_entropy(X, sigma=sigma, alphas=[1.0])
    for spectrum in (exact.eigenvalues, np.linalg.eigvalsh(K / len(X))):  # cleaned and raw
        got = truncated_vendi(spectrum, ALPHAS, t)
        for alpha in ALPHAS:
            assert got[alpha] == pytest.approx(brute_truncated_vendi(K, t, alpha), rel=1e-6), (t, alpha)
    if t == 1:
        assert all(v == pytest.approx(1.0) for v in got.values())


def test_truncate_spectrum_by_hand():
    np.testing.assert_allclose(truncate_spectrum([0.5, 0.3, 0.2], 2), [0.6, 0.4])
    np.testing.assert_allclose(truncate_spectrum([0.2, 0.5, 0.3], 3), [0.5, 0.3, 0.2])  # sorted, nothing left over
    # an incomplete spectrum (Nyström: trace 0.8): the deficit is spread over the t kept entries, zeros padded
    np.testing.assert_allclose(truncate_spectrum([0.5, 0.3], 4), [0.55, 0.35, 0.05, 0.05])
    np.testing.assert_allclose(truncate_spectrum([0.5, 0.3], 2), [0.6, 0.4])
    # a complete spectrum of rank 2 with t = 3: its zero stays zero, so the score is plain VENDI
    np.testing.assert_allclose(truncate_spectrum([0.6, 0.4, 0.0, 0.0], 3), [0.6, 0.4, 0.0])
    assert truncated_vendi([0.6, 0.4, 0.0], [1.0], 3)[1.0] == pytest.approx(
        math.exp(-0.6 * math.log(0.6) - 0.4 * math.log(0.4))
    )
    # round-off negatives are zeroed; spectra of K (sum n) are accepted with total=n
    np.testing.assert_allclose(truncate_spectrum([0.5, 0.5, -1e-18], 2), [0.5, 0.5])
    np.testing.assert_allclose(truncate_spectrum([5.0, 3.0, 2.0], 2, total=10.0), [0.6, 0.4])


# -- (c) t ≥ n is plain VENDI ---------------------------------------------------------------------------------


def test_truncated_vendi_with_t_at_least_n_is_plain_vendi(small):
    X, sigma = small
    exact = exact_entropy(X, sigma=sigma, alphas=ALPHAS)
    K = np.exp(-cdist(X, X, "sqeuclidean") / (2 * sigma**2))
    for t in (len(X), len(X) + 1, 10 * len(X)):
        for spectrum in (exact.eigenvalues, np.linalg.eigvalsh(K / len(X))):
            got = truncated_vendi(spectrum, ALPHAS, t)
            for alpha in ALPHAS:
                assert got[alpha] == pytest.approx(exact.vendi[alpha], rel=1e-9), (t, alpha)
    # FKEA's spectrum is complete too (unit-norm features): t ≥ 2r gives FKEA's own VENDI
    fkea = FKEA(sigma=sigma, rff_dim=64, seed=0).update(X).compute(ALPHAS)
    for t in (128, 1000):
        got = truncated_vendi(fkea.eigenvalues, ALPHAS, t)
        assert all(got[a] == pytest.approx(fkea.vendi[a], rel=1e-9) for a in ALPHAS)


def test_raw_float32_fkea_eigenvalues_need_their_precision(small):
    X, sigma = small
    est = FKEA(sigma=sigma, rff_dim=256, seed=1).update(X)  # 2r = 512 > n: hundreds of round-off eigenvalues
    raw = np.linalg.eigvalsh(est.covariance())
    cleaned = est.compute([1.0]).eigenvalues
    got = truncated_vendi(raw, ALPHAS, 100, eps=float(np.finfo(np.float32).eps))
    want = truncated_vendi(cleaned, ALPHAS, 100)
    assert all(got[a] == pytest.approx(want[a], rel=1e-6) for a in ALPHAS)


# -- (b) Nyström against scikit-learn ---------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", ["gaussian", "cosine"])
def test_nystrom_spectrum_matches_scikit_learn_on_the_same_landmarks(kernel):
    from sklearn.kernel_approximation import Nystroem

    X = blobs(1500, 8 if kernel == "gaussian" else 256, 10, seed=1)  # cosine: rank ≤ d, so d > m here
    n, m = len(X), 200
    sigma = 0.5 * median_heuristic_sigma(X, seed=0) if kernel == "gaussian" else None
    est = NystromEntropy(kernel=kernel, sigma=sigma, m=m, seed=3, batch_size=400)
    est.update(X[:700]).update(X[700:])  # landmarks drawn from the first call's rows
    L = est.landmarks
    assert L.shape == (m, X.shape[1])
    assert any(np.array_equal(L[0], row) for row in X[:700])
    if kernel == "gaussian":
        ref = Nystroem(kernel="rbf", gamma=1.0 / (2.0 * sigma**2), n_components=m, random_state=0).fit(L)
    else:
        ref = Nystroem(kernel="cosine", n_components=m, random_state=0).fit(L)  # sklearn API: fit picks the basis
    Phi = ref.transform(X)
    expected = np.sort(np.linalg.eigvalsh(Phi.T @ Phi / n))[::-1]
    got = est.spectrum()
    assert est.rank == m  # well-conditioned K_mm: sklearn's 1e-12 clip and our floor coincide
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert got.sum() <= 1 + 1e-12
    for t in (20, 100, 200, 500):
        ours, theirs = truncated_vendi(got, ALPHAS, t), truncated_vendi(expected, ALPHAS, t)
        assert all(ours[a] == pytest.approx(theirs[a], rel=1e-6) for a in ALPHAS), t
    result = est.compute(ALPHAS, t=100)
    assert result.truncated == pytest.approx(truncated_vendi(expected, ALPHAS, 100), rel=1e-6)
    # φ(z)ᵀφ(z) = 1 at the landmarks and ≤ 1 elsewhere (the Nyström kernel never exceeds k(x, x) = 1)
    norms = np.einsum("ij,ij->i", est.features(L), est.features(L))
    np.testing.assert_allclose(norms, 1.0, atol=1e-8)
    assert np.einsum("ij,ij->i", est.features(X), est.features(X)).max() <= 1 + 1e-8


def test_nystrom_floor_drops_the_null_space_of_a_rank_deficient_landmark_kernel():
    from t2ibench.metrics import CosineEntropy

    X = blobs(600, 6, 5, seed=4)  # cosine kernel on R^6: rank 6, and 50 landmarks span it
    est = NystromEntropy(kernel="cosine", m=50, seed=0).update(X)
    assert est.rank == 6
    exact = np.sort(np.linalg.eigvalsh(CosineEntropy().update(X).covariance()))[::-1]
    got = est.spectrum()
    np.testing.assert_allclose(got[:6], exact, rtol=1e-8)
    assert np.abs(got[6:]).max() < 1e-12
    exact_scores = truncated_vendi(exact, ALPHAS, 6)
    assert est.compute(ALPHAS, t=6).truncated == pytest.approx(exact_scores, rel=1e-8)


# -- (d) FKEA and Nyström converge to the truncated score, plain FKEA VENDI does not ---------------------------


def test_fkea_and_nystrom_approximate_truncated_vendi_better_than_fkea_approximates_vendi():
    X = blobs(2000, 16, 20, seed=11)
    sigma = 0.3 * median_heuristic_sigma(X, seed=0)
    t = 200
    exact = exact_entropy(X, sigma=sigma, alphas=[1.0])
    exact_t = truncated_vendi(exact.eigenvalues, [1.0], t)[1.0]
    fkea = FKEA(sigma=sigma, rff_dim=1000, seed=0, center=X.mean(axis=0)).update(X).compute([1.0])
    fkea_t = truncated_vendi(fkea.eigenvalues, [1.0], t)[1.0]
    nys = NystromEntropy(sigma=sigma, m=400, seed=0).update(X).compute([1.0], t=t)
    errors = {
        "FKEA 2r=2000 VENDI-1 vs exact VENDI-1": fkea.vendi[1.0] / exact.vendi[1.0] - 1,
        f"FKEA 2r=2000 truncated (t={t}) vs exact truncated": fkea_t / exact_t - 1,
        f"Nyström m=400 truncated (t={t}) vs exact truncated": nys.score(1.0, truncated=True) / exact_t - 1,
    }
    print(f"\nexact VENDI-1 {exact.vendi[1.0]:.2f}, exact truncated VENDI-1 (t={t}) {exact_t:.2f}")
    print(
        f"FKEA VENDI-1 {fkea.vendi[1.0]:.2f}, FKEA truncated {fkea_t:.2f}, Nyström truncated {nys.truncated[1.0]:.2f}"
    )
    for name, err in errors.items():
        print(f"  {name}: {err:+.2%}")
    plain, fkea_err, nys_err = (abs(e) for e in errors.values())
    assert fkea_err < 0.03
    assert nys_err < 0.03
    assert plain > 0.05
    assert plain > 3 * max(fkea_err, nys_err)


# -- (e) streaming: merge, determinism, persistence --------------------------------------------------------------


@pytest.fixture(scope="module")
def stream():
    X = blobs(1200, 6, 8, seed=5)
    return X, 0.5 * median_heuristic_sigma(X, seed=0)


def test_merge_of_two_nystrom_shards_equals_one_pass(stream, tmp_path):
    X, sigma = stream
    L = choose_landmarks(X, 80, seed=2)
    whole = NystromEntropy(sigma=sigma, landmarks=L).update(X)
    a = NystromEntropy(sigma=sigma, landmarks=L, batch_size=100).update(X[:500])
    b = NystromEntropy(sigma=sigma, landmarks=L).update(X[500:])
    path = a.save(tmp_path / "shard_a.npz")
    merged = NystromEntropy.load(path).merge(b)
    assert merged.n == whole.n == len(X)
    np.testing.assert_allclose(merged.covariance(), whole.covariance(), rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(merged.spectrum(), whole.spectrum(), rtol=1e-8, atol=1e-14)
    got, want = merged.compute(ALPHAS, t=40), whole.compute(ALPHAS, t=40)
    assert got.truncated == pytest.approx(want.truncated, rel=1e-10)
    assert got.vendi == pytest.approx(want.vendi, rel=1e-10)
    assert merged.spec() == whole.spec()


def test_nystrom_is_deterministic_per_seed(stream):
    X, sigma = stream
    one = NystromEntropy(sigma=sigma, m=60, seed=9).update(X)
    two = NystromEntropy(sigma=sigma, m=60, seed=9).update(X)
    other = NystromEntropy(sigma=sigma, m=60, seed=10).update(X)
    np.testing.assert_array_equal(one.landmarks, two.landmarks)
    np.testing.assert_array_equal(one.spectrum(), two.spectrum())
    assert one.compute(ALPHAS, t=30).truncated == two.compute(ALPHAS, t=30).truncated
    assert not np.array_equal(one.landmarks, other.landmarks)
    np.testing.assert_array_equal(choose_landmarks(X, 60, seed=9), one.landmarks)


def test_nystrom_merge_refuses_different_landmarks_or_kernels(stream, tmp_path):
    X, sigma = stream
    a = NystromEntropy(sigma=sigma, m=50, seed=0).update(X[:600])
    b = NystromEntropy(sigma=sigma, m=50, seed=0).update(X[600:])  # same seed, other rows: other landmarks
    with pytest.raises(StateMismatchError, match="landmarks"):
        a.merge(b)
    c = NystromEntropy(sigma=2 * sigma, landmarks=a.landmarks).update(X[600:])
    with pytest.raises(StateMismatchError, match="sigma"):
        a.merge(c)
    with pytest.raises(StateMismatchError, match="no landmarks yet"):
        NystromEntropy(sigma=sigma, m=50, seed=0).merge(a)
    n_before = a.n
    with pytest.raises(StateMismatchError):
        a.merge(FKEA(sigma=sigma, rff_dim=8, seed=0).update(X))  # type: ignore[arg-type]
    assert a.n == n_before
    fkea_file = FKEA(sigma=sigma, rff_dim=8, seed=0).update(X).save(tmp_path / "fkea.npz")
    with pytest.raises(StateMismatchError, match="not NystromEntropy"):
        NystromEntropy.load(fkea_file)
    with pytest.raises(StateMismatchError, match="not FKEA"):
        FKEA.load(a.save(tmp_path / "nys.npz"))


def test_nystrom_update_is_atomic_and_names_rows(stream):
    X, sigma = stream
    est = NystromEntropy(sigma=sigma, m=40, seed=0, batch_size=64).update(X[:100])
    before = est.covariance().copy()
    bad = X[100:300].copy()
    bad[150, 2] = np.nan
    with pytest.raises(InputError, match="250"):  # global row: 100 seen + 150
        est.update(bad)
    assert est.n == 100
    np.testing.assert_array_equal(est.covariance(), before)
    with pytest.raises(InputError, match="dimension"):
        est.update(X[:10, :3])


# -- bad parameters ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"t": 0}, "t must be ≥ 1"),
        ({"t": -3}, "t must be ≥ 1"),
        ({"t": 2.5}, "t must be an integer"),
        ({"t": 3.0}, "t must be an integer"),
        ({"t": True}, "t must be an integer"),
        ({"t": "3"}, "t must be an integer"),
        ({"eigenvalues": [0.5, np.nan, 0.2]}, "eigenvalues contain NaN"),
        ({"eigenvalues": [0.5, np.inf]}, "eigenvalues contain NaN or inf"),
        ({"eigenvalues": [0.7, 0.5, -0.2]}, "negative values carry"),
        ({"eigenvalues": [[0.5, 0.5]]}, "1-D"),
        ({"eigenvalues": []}, "empty"),
        ({"eigenvalues": [3.0, 2.0]}, "more than total"),
        ({"eigenvalues": [0.0, -1e-20]}, "no positive value"),
        ({"eigenvalues": np.array([0.5, 0.5], dtype=complex)}, "complex"),
        ({"eigenvalues": ["a", "b"]}, "eigenvalues must be numeric"),
        ({"total": 0.0}, "total must be"),
        ({"total": float("nan")}, "total must be"),
        ({"eps": 2.0}, "eps must be"),
        ({"alphas": [0.0]}, "alpha must be > 0"),
    ],
)
def test_truncated_vendi_rejects_bad_parameters(kwargs, match):
    args = {"eigenvalues": [0.5, 0.3, 0.2], "alphas": [1.0], "t": 2, **kwargs}
    with pytest.raises(InputError, match=match):
        truncated_vendi(args.pop("eigenvalues"), args.pop("alphas"), args.pop("t"), **args)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"m": 10}, "seed is required"),
        ({"seed": 0}, "m .the number of landmarks. is required"),
        ({"m": 0, "seed": 0}, "m must be ≥ 1"),
        ({"m": True, "seed": 0}, "m must be an integer"),
        ({"m": 10, "seed": -1}, "seed must be ≥ 0"),
        ({"m": 10, "seed": 0, "kernel": "gausian"}, "did you mean 'gaussian'"),
        ({"m": 10, "seed": 0, "sigma": None}, "sigma is required"),
        ({"m": 10, "seed": 0, "kernel": "cosine"}, "sigma applies to the gaussian kernel only"),
        ({"landmarks": np.ones((3, 2)), "seed": 0}, "not both"),
        ({"landmarks": np.eye(3), "m": 4}, "m=4 but landmarks has 3 rows"),
        ({"landmarks": np.eye(3), "rcond": 0.0}, "rcond must be in"),
        ({"landmarks": np.eye(3), "rcond": True}, "rcond must be a number"),
        ({"landmarks": np.array([[1.0, np.nan]])}, "landmarks has non-finite values"),
        ({"m": 10, "seed": 0, "batch_size": 0}, "batch_size must be ≥ 1"),
    ],
)
def test_nystrom_rejects_bad_parameters(kwargs, match):
    args = {"sigma": 1.0, **kwargs}
    with pytest.raises(InputError, match=match):
        NystromEntropy(**args)


def test_nystrom_usage_errors(stream, tmp_path):
    X, sigma = stream
    with pytest.raises(InputError, match="draws m=100 landmarks from its rows but has only 50"):
        NystromEntropy(sigma=sigma, m=100, seed=0).update(X[:50])
    with pytest.raises(InputError, match="no samples"):
        NystromEntropy(sigma=sigma, landmarks=X[:5]).compute()
    with pytest.raises(InputError, match="nothing to save"):
        NystromEntropy(sigma=sigma, m=5, seed=0).save(tmp_path / "x.npz")
    est = NystromEntropy(sigma=sigma, m=5, seed=0).update(X)
    with pytest.raises(InputError, match="t must be ≥ 1"):
        est.compute([1.0], t=0)
    with pytest.raises(InputError, match="all-zero rows"):
        NystromEntropy(kernel="cosine", m=2, seed=0).update(np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]]))
    with pytest.raises(InputError, match="no such state file"):
        NystromEntropy.load(tmp_path / "missing.npz")


# -- landmark choice: randomly pivoted Cholesky -------------------------------------------------------------------


def _unbalanced(rng):
    """One big cluster of 950 points and ten small far-apart clusters of 5 (cluster labels returned too)."""
    centres = 6.0 * rng.standard_normal((11, 4))
    labels = np.r_[np.zeros(950, int), np.repeat(np.arange(1, 11), 5)]
    return centres[labels] + 0.01 * rng.standard_normal((1000, 4)), labels


def test_rpcholesky_landmarks_cover_small_clusters_that_uniform_misses(rng):
    X, labels = _unbalanced(rng)

    def rows_of(L):
        return [int(np.flatnonzero((row == X).all(axis=1))[0]) for row in L]

    L = choose_landmarks(X, 11, seed=0, method="rpcholesky", sigma=1.0)
    rows = rows_of(L)
    assert len(set(rows)) == 11
    assert rows == sorted(rows)
    assert len(set(labels[rows])) == 11  # one per cluster: each new pivot is drawn ∝ what is still unexplained
    uniform = [len(set(labels[rows_of(choose_landmarks(X, 11, seed=s))])) for s in range(5)]
    assert max(uniform) < 6  # uniform draws land in the big cluster (95 % of the rows)
    np.testing.assert_array_equal(L, choose_landmarks(X, 11, seed=0, method="rpcholesky", sigma=1.0))  # seeded
    rp = NystromEntropy(sigma=1.0, m=11, seed=0, landmark_method="rpcholesky").update(X).compute([1])
    un = NystromEntropy(sigma=1.0, m=11, seed=0).update(X).compute([1])
    assert rp.trace > un.trace  # the captured share of the kernel's unit trace
    assert rp.trace > 0.99


def test_rpcholesky_with_duplicate_rows_fills_up_without_repeating(rng):
    X = np.repeat(rng.standard_normal((5, 3)), 40, axis=0)  # 5 distinct rows, 200 rows
    L = choose_landmarks(X, 8, seed=1, method="rpcholesky", kernel="cosine")
    assert L.shape == (8, 3)
    assert len({tuple(r) for r in L}) == 5  # every distinct row once; the rest are (necessarily) copies
    with pytest.raises(InputError, match="method"):
        choose_landmarks(X, 3, seed=0, method="kmeans")
    with pytest.raises(InputError, match="landmark_method"):
        NystromEntropy(sigma=1.0, landmarks=X[:3], landmark_method="rpcholesky")


def test_a_truncation_past_the_memory_limit_is_refused_before_it_allocates(monkeypatch):
    """t's 16·t bytes are checked against the memory limit (one line naming t) unless the caller checked them once for
    many calls (``memory_checked``: the convergence bands' thousands of resampled spectra at one t); such a band
    refuses a t past the limit before it resamples."""
    from t2ibench.metrics import convergence

    spectrum = np.full(1000, 1e-3)
    monkeypatch.setenv("T2IBENCH_MEMORY_LIMIT", "8K")  # below the 16 kB of t = 1,000
    with pytest.raises(InputError, match=r"^a truncated spectrum of t=1000 values needs ~15.6 KiB of memory; the lim"):
        truncate_spectrum(spectrum, 1000)
    np.testing.assert_allclose(truncate_spectrum(spectrum, 1000, memory_checked=True), np.full(1000, 1e-3))
    assert truncated_vendi(spectrum, 1.0, 1000, memory_checked=True)[1.0] == pytest.approx(1000)
    with pytest.raises(InputError, match=r"t=1000 values needs"):
        convergence._resolve_score("truncated_vendi_1", 1000)
    monkeypatch.delenv("T2IBENCH_MEMORY_LIMIT")
    _, score, _, _ = convergence._resolve_score("truncated_vendi_1", 1000)
    assert score(spectrum) == pytest.approx(1000)
    with pytest.raises(InputError, match=r"^a truncated spectrum of t=1000000000000000 values needs ~"):
        truncate_spectrum(spectrum, 10**15)
