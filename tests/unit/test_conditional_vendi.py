import math

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from vendi_score import vendi as reference

from t2ibench.errors import InputError, StateMismatchError
from t2ibench.metrics import FKEA, exact_entropy, median_heuristic_sigma
from t2ibench.metrics.conditional import (
    MAX_JOINT_FEATURES,
    ConditionalVendiEstimator,
    conditional_vendi,
    conditional_vendi_features,
)

ALPHAS = [0.5, 1.0, 2.0, math.inf]
PARTS = ("vendi_x", "vendi_t", "joint", "conditional", "information")


def orthonormal(k: int, dim: int, seed: int) -> np.ndarray:
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((dim, k)))
    return q.T  # k orthonormal rows


def mixed_pairs(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Prompts from 10 clusters; images = a linear function of the prompt + one of 3 styles + noise (both parts)."""
    rng = np.random.default_rng(seed)
    prompt = rng.integers(0, 10, n)
    T = rng.standard_normal((10, 16))[prompt] * 3 + 0.3 * rng.standard_normal((n, 16))
    style = rng.standard_normal((3, 32))[rng.integers(0, 3, n)] * 2
    X = T @ rng.standard_normal((16, 32)) / 2 + style + 0.5 * rng.standard_normal((n, 32))
    return X, T


def brute_force(X, T, kernel, sx=None, st=None, q=1.0):
    """Independent reference: kernel matrices by cdist / normalised dot products, entropies by vendi-score."""
    if kernel == "gaussian":
        KX = np.exp(-cdist(X, X, "sqeuclidean") / (2 * sx**2))
        KT = np.exp(-cdist(T, T, "sqeuclidean") / (2 * st**2))
    else:
        U, V = X / np.linalg.norm(X, axis=1)[:, None], T / np.linalg.norm(T, axis=1)[:, None]
        KX, KT = U @ U.T, V @ V.T
    qq = "inf" if math.isinf(q) else q
    return [float(reference.score_K(K, q=qq)) for K in (KX, KT, KX * KT)]  # score_K divides by n itself


# -- definitions --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", ["gaussian", "cosine"])
def test_exact_matches_an_independent_brute_force_reference(kernel):
    X, T = mixed_pairs(150)
    res = conditional_vendi(X, T, kernel=kernel, image_sigma=8.0, text_sigma=6.0, alphas=ALPHAS)
    for a in ALPHAS:
        vx, vt, vj = brute_force(X, T, kernel, 8.0, 6.0, q=a)
        # the reference keeps round-off eigenvalues (~1e-16 each, rank-deficient cosine K), which α < 1 counts
        tol = 1e-8 if a >= 1 else 1e-5
        assert res.vendi_x[a] == pytest.approx(vx, rel=tol)
        assert res.vendi_t[a] == pytest.approx(vt, rel=tol)
        assert res.joint[a] == pytest.approx(vj, rel=tol)
        assert res.conditional[a] == pytest.approx(vj / vt, rel=tol)
        assert res.information[a] == pytest.approx(vx * vt / vj, rel=tol)
        ent = res.entropies(a)
        assert ent["conditional"] == pytest.approx(ent["joint"] - ent["text"], abs=1e-12)


def test_gaussian_joint_is_the_unit_bandwidth_kernel_of_the_scaled_concatenation():
    X, T = mixed_pairs(200, seed=1)
    res = conditional_vendi(X, T, image_sigma=8.0, text_sigma=6.0, alphas=ALPHAS)
    concat = exact_entropy(np.hstack([X / 8.0, T / 6.0]), sigma=1.0, alphas=ALPHAS)
    for a in ALPHAS:
        assert res.joint[a] == pytest.approx(concat.vendi[a], rel=1e-9)
        assert res.vendi_x[a] == pytest.approx(exact_entropy(X, sigma=8.0, alphas=[a]).vendi[a], rel=1e-9)


def test_vendi_is_conditional_times_information_on_every_path():
    X, T = mixed_pairs(300, seed=2)
    results = [
        conditional_vendi(X, T, image_sigma=8.0, text_sigma=6.0, alphas=ALPHAS),
        conditional_vendi(X, T, kernel="cosine", alphas=ALPHAS),
        conditional_vendi_features(X, T, image_sigma=8.0, text_sigma=6.0, rff_dim=128, seed=0, alphas=ALPHAS),  # Gram
        conditional_vendi_features(X, T, image_sigma=8.0, text_sigma=6.0, rff_dim=100, seed=0, alphas=ALPHAS),  # cov
        conditional_vendi_features(X[:, :8], T[:, :8], kernel="cosine", alphas=ALPHAS),
    ]
    for res in results:
        for a in ALPHAS:
            assert res.vendi_x[a] == pytest.approx(res.conditional[a] * res.information[a], rel=1e-12)
            assert res.vendi_x[a] == pytest.approx(
                math.exp(sum(res.entropies(a)[k] for k in ("conditional", "information"))), rel=1e-12
            )


def test_the_majorisation_bounds_hold_for_every_order():
    """H_α(X,T) ≥ max(H_α(X), H_α(T)): cond-VENDI ≥ 1 and info-VENDI ≤ min(VENDI(X), VENDI(T)), for every α."""
    rng = np.random.default_rng(3)
    for trial in range(6):
        X, T = rng.standard_normal((60, 3)) * (trial + 1) / 3, rng.standard_normal((60, 2))
        for kernel in ("gaussian", "cosine"):
            res = conditional_vendi(X, T, kernel=kernel, image_sigma=1.0, text_sigma=1.0, alphas=ALPHAS)
            for a in ALPHAS:
                assert res.conditional[a] >= 1 - 1e-9
                assert res.information[a] <= min(res.vendi_x[a], res.vendi_t[a]) * (1 + 1e-9)


# -- the two limits -----------------------------------------------------------------------------------------------


def determined_pairs(prompts: int = 8, per: int = 25):
    """Images a function of the prompt: one image per prompt, repeated; prompts far apart, paraphrases jittered."""
    rng = np.random.default_rng(5)
    label = np.repeat(np.arange(prompts), per)
    T = orthonormal(prompts, 32, 0)[label] * 10 + 0.5 * rng.standard_normal((prompts * per, 32)) / np.sqrt(32)
    X = orthonormal(prompts, 64, 1)[label] * 10
    return X, T


def test_images_determined_by_the_prompt_have_conditional_vendi_one():
    X, T = determined_pairs()
    exact = conditional_vendi(X, T, image_sigma=2.0, text_sigma=2.0, alphas=ALPHAS)
    for a in ALPHAS:
        # off-prompt kernel values are exp(−100/4): K_X ⊙ K_T = K_T to ~1e-11, so H(X, T) = H(T)
        assert exact.conditional[a] == pytest.approx(1.0, abs=1e-9)
        assert exact.information[a] == pytest.approx(exact.vendi_x[a], rel=1e-9)
        assert exact.vendi_x[a] == pytest.approx(8.0, rel=1e-9)
    # cosine does not decay: jittered paraphrases of different prompts keep cosines ~0.05 that K_X ⊙ K_T zeroes,
    # so H(X, T) > H(T) (measured cond-VENDI_1 = 1.008); with exact (orthogonal) prompts it is 1
    label = np.repeat(np.arange(8), 25)
    cosine = conditional_vendi(X, orthonormal(8, 32, 0)[label], kernel="cosine", alphas=ALPHAS)
    for a in ALPHAS:
        assert cosine.conditional[a] == pytest.approx(1.0, abs=1e-9)
    rff = conditional_vendi_features(X, T, image_sigma=2.0, text_sigma=2.0, rff_dim=1000, seed=0, alphas=[1, 2])
    # measured |cond − 1| ≤ 1e-3 over seeds 0–2 at r = 1000 (≤ 1e-3 at r = 256); 5e-3 leaves room for the seed
    assert rff.conditional[1.0] == pytest.approx(1.0, abs=5e-3)
    assert rff.conditional[2.0] == pytest.approx(1.0, abs=5e-3)


def independent_pairs(n: int = 1000, prompts: int = 5, modes: int = 4, *, seed: int = 7):
    """Prompt and image labels drawn independently; each label is one point, labels orthogonal and far apart."""
    rng = np.random.default_rng(seed)
    p, m = rng.integers(0, prompts, n), rng.integers(0, modes, n)
    return orthonormal(modes, 16, 3)[m] * 10, orthonormal(prompts, 16, 2)[p] * 10, p, m


def plug_in_mutual_information(p, m) -> float:
    def h(labels):
        q = np.bincount(labels) / len(labels)
        q = q[q > 0]
        return float(-(q * np.log(q)).sum())

    return h(p) + h(m) - h(p * (m.max() + 1) + m)


def test_images_independent_of_the_prompt_have_information_vendi_one():
    """Balanced design: exactly 1. Random independent draws: the finite-n plug-in bias, within a justified bound.

    With one point per label and off-label kernels ≈ 0, the kernel entropies are the Shannon entropies of the label
    frequencies, so log info-VENDI_1 is the empirical plug-in mutual information of the two labels (checked to
    1e-9). Under independence 2n·Î ~ χ²(k), k = (P−1)(m−1) = 12: mean k/(2n) = 0.006 nats, sd √(2k)/(2n) = 0.0024;
    the bound mean + 5 sd = 0.018 nats holds with probability > 1 − 1e-4 for any seed.
    """
    modes, prompts = orthonormal(4, 16, 3) * 10, orthonormal(6, 16, 2) * 10
    X = np.array([modes[k] for p in range(6) for k in range(4) for _ in range(5)])
    T = np.array([prompts[p] for p in range(6) for k in range(4) for _ in range(5)])
    balanced = conditional_vendi(X, T, image_sigma=2.0, text_sigma=2.0, alphas=ALPHAS)
    for a in ALPHAS:
        assert balanced.information[a] == pytest.approx(1.0, abs=1e-9)
        assert balanced.conditional[a] == pytest.approx(4.0, rel=1e-9)

    n = 1000
    X, T, p, m = independent_pairs(n)
    exact = conditional_vendi(X, T, image_sigma=2.0, text_sigma=2.0, alphas=[1])
    log_info = math.log(exact.information[1.0])
    assert log_info == pytest.approx(plug_in_mutual_information(p, m), abs=1e-9)
    k = (5 - 1) * (4 - 1)
    assert 0 <= log_info <= k / (2 * n) + 5 * math.sqrt(2 * k) / (2 * n)
    rff = conditional_vendi_features(X, T, image_sigma=2.0, text_sigma=2.0, rff_dim=1000, seed=0, alphas=[1])
    # RFF cross-cluster noise (~1/√r per entry) adds joint entropy: measured +0.003 nats at r = 1000 (seeds 0–2)
    assert math.log(rff.information[1.0]) == pytest.approx(log_info, abs=0.01)


# -- random Fourier features --------------------------------------------------------------------------------------


@pytest.mark.slow  # ~4 s: six feature maps of up to 8000 features on n = 1000
def test_rff_estimates_approach_the_exact_values_as_the_feature_count_grows():
    """n = 1000, σ's from the median heuristic, 2r = 500 / 2000 / 8000, seeds 0 and 1 (errors printed with -s).

    Measured mean |relative error| over the five VENDI-1 values and seeds 0–2: 2.5 %, 1.1 %, 0.6 %; single
    seeds are noisy (seed 2 gave 0.2 % at 2000 and 0.7 % at 8000), so two seeds are averaged.
    """
    X, T = mixed_pairs(1000)
    sx, st = median_heuristic_sigma(X, seed=0), median_heuristic_sigma(T, seed=0)
    exact = conditional_vendi(X, T, image_sigma=sx, text_sigma=st, alphas=[1])
    mean_error, worst = {}, {}
    print("\n2r    seed " + "  ".join(f"{p:>12}" for p in PARTS) + "   (relative error of the VENDI-1 values)")
    for features in (500, 2000, 8000):
        errors = []
        for seed in (0, 1):
            res = conditional_vendi_features(
                X, T, image_sigma=sx, text_sigma=st, rff_dim=features // 2, seed=seed, alphas=[1]
            )
            row = [getattr(res, p)[1.0] / getattr(exact, p)[1.0] - 1 for p in PARTS]
            print(f"{features:<5} {seed:<4} " + "  ".join(f"{e:>+12.4f}" for e in row))
            errors += row
        mean_error[features] = float(np.mean(np.abs(errors)))
        worst[features] = float(np.max(np.abs(errors)))
    print("mean |error|:", {f: round(e, 4) for f, e in mean_error.items()})
    # measured (seeds 0, 1): mean 2.4 %, 1.6 %, 0.5 %; worst 4.6 %, 2.6 %, 1.1 %
    assert mean_error[500] > mean_error[2000] > mean_error[8000]
    assert mean_error[8000] < 0.01
    assert worst[8000] < 0.02


def test_rff_image_part_is_fkea_and_streaming_matches_one_shot():
    X, T = mixed_pairs(700, seed=4)
    cx, ct = X.mean(axis=0), T.mean(axis=0)
    est = ConditionalVendiEstimator(
        image_sigma=8.0, text_sigma=6.0, rff_dim=256, seed=11, image_center=cx, text_center=ct, batch_size=128
    )
    est.update(X[:300], T[:300]).update(X[300:], T[300:])
    streamed = est.compute(ALPHAS)
    one_shot = conditional_vendi_features(X, T, image_sigma=8.0, text_sigma=6.0, rff_dim=256, seed=11, alphas=ALPHAS)
    fkea = FKEA(sigma=8.0, rff_dim=256, seed=11, center=cx).update(X).compute(ALPHAS)
    for a in ALPHAS:
        assert streamed.vendi_x[a] == pytest.approx(fkea.vendi[a], rel=1e-6)
        for part in PARTS:
            # float32 SYRK covariance vs float64 Gram of the same float32 features; α = 0.5 weighs the tail most
            assert getattr(streamed, part)[a] == pytest.approx(getattr(one_shot, part)[a], rel=2e-5)
    assert streamed.method == "rff"
    assert streamed.error_radius == pytest.approx(math.sqrt(8 * math.log(700 / 0.1) / 256))


def test_shards_merge_and_states_round_trip(tmp_path):
    X, T = mixed_pairs(400, seed=6)
    params = {"image_sigma": 8.0, "text_sigma": 6.0, "rff_dim": 64, "seed": 2}
    whole = ConditionalVendiEstimator(**params).update(X, T).compute(ALPHAS)
    a = ConditionalVendiEstimator(**params).update(X[:150], T[:150])
    b = ConditionalVendiEstimator(**params).update(X[150:], T[150:])
    merged = ConditionalVendiEstimator(**params).merge(a).merge(b)
    loaded = ConditionalVendiEstimator.load(merged.save(tmp_path / "state.npz"))
    for est in (merged, loaded):
        res = est.compute(ALPHAS)
        assert res.n == 400
        for a_ in ALPHAS:
            for part in PARTS:
                # shards round their float32 SYRK differently from one batch (α = 0.5 amplifies it most)
                assert getattr(res, part)[a_] == pytest.approx(getattr(whole, part)[a_], rel=1e-6)
    with pytest.raises(StateMismatchError, match="parameters differ"):
        merged.merge(ConditionalVendiEstimator(**{**params, "seed": 3}).update(X[:5], T[:5]))
    cosine = ConditionalVendiEstimator(kernel="cosine").update(X[:, :4], T[:, :4])
    assert (
        ConditionalVendiEstimator.load(cosine.save(tmp_path / "c.npz")).compute([1]).joint == cosine.compute([1]).joint
    )


def test_determinism_per_seed():
    X, T = mixed_pairs(300, seed=8)
    kw = {"image_sigma": 8.0, "text_sigma": 6.0, "rff_dim": 128, "alphas": ALPHAS}
    first = conditional_vendi_features(X, T, seed=5, **kw)
    again = conditional_vendi_features(X, T, seed=5, **kw)
    other = conditional_vendi_features(X, T, seed=6, **kw)
    for part in PARTS:
        assert getattr(first, part) == getattr(again, part)  # bit-identical
    assert first.joint[1.0] != other.joint[1.0]
    assert first.joint[1.0] == pytest.approx(other.joint[1.0], rel=0.05)


def test_cosine_kronecker_features_are_exact_and_limited():
    X, T = mixed_pairs(500, seed=9)
    X, T = X[:, :12], T[:, :10]  # joint map of 120 features: covariance route (n ≥ D)
    features = conditional_vendi_features(X, T, kernel="cosine", alphas=ALPHAS)
    exact = conditional_vendi(X, T, kernel="cosine", alphas=ALPHAS)
    small = conditional_vendi_features(X[:100], T[:100], kernel="cosine", alphas=ALPHAS)  # Gram route (n < D)
    small_exact = conditional_vendi(X[:100], T[:100], kernel="cosine", alphas=ALPHAS)
    for a in ALPHAS:
        for part in PARTS:
            assert getattr(features, part)[a] == pytest.approx(getattr(exact, part)[a], rel=1e-7)
            assert getattr(small, part)[a] == pytest.approx(getattr(small_exact, part)[a], rel=1e-7)
    assert features.method == "exact"
    wide = np.ones((3, 91)), np.ones((3, 91))  # 91² = 8281 > 8192
    with pytest.raises(InputError, match=f"MAX_JOINT_FEATURES={MAX_JOINT_FEATURES}"):
        conditional_vendi_features(*wide, kernel="cosine")
    with pytest.raises(InputError, match="MAX_JOINT_FEATURES"):
        ConditionalVendiEstimator(kernel="cosine").update(*wide)


# -- bad inputs ---------------------------------------------------------------------------------------------------

GOOD_X = np.random.default_rng(0).standard_normal((6, 3))
GOOD_T = np.random.default_rng(1).standard_normal((6, 2))
NAN_X = GOOD_X.copy()
NAN_X[4, 1] = np.nan
INF_T = GOOD_T.copy()
INF_T[2, 0] = np.inf


def exact_call(**kw):
    args = {"X": GOOD_X, "T": GOOD_T, "image_sigma": 1.0, "text_sigma": 1.0} | kw
    return conditional_vendi(args.pop("X"), args.pop("T"), **args)


def features_call(**kw):
    args = {"X": GOOD_X, "T": GOOD_T, "image_sigma": 1.0, "text_sigma": 1.0, "rff_dim": 8, "seed": 0} | kw
    return conditional_vendi_features(args.pop("X"), args.pop("T"), **args)


def streaming_call(**kw):
    args = {"X": GOOD_X, "T": GOOD_T, "image_sigma": 1.0, "text_sigma": 1.0, "rff_dim": 8, "seed": 0} | kw
    X, T = args.pop("X"), args.pop("T")
    ids = {k: args.pop(k) for k in ("image_ids", "text_ids") if k in args}
    return ConditionalVendiEstimator(**args).update(X, T, **ids).compute()


@pytest.mark.parametrize("call", [exact_call, features_call, streaming_call])
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"T": GOOD_T[:5]}, r"X has 6 rows but T has 5"),
        ({"X": NAN_X}, r"X has non-finite values .* 1 row\(s\): 4"),
        ({"T": INF_T}, r"T has non-finite values .* 1 row\(s\): 2"),
        ({"X": GOOD_X[0]}, r"X must be a 2-D array"),
        ({"image_sigma": 0.0}, r"image_sigma must be a finite number > 0"),
        ({"text_sigma": -1.0}, r"text_sigma must be a finite number > 0"),
        ({"text_sigma": float("nan")}, r"text_sigma must be a finite number > 0"),
        ({"image_sigma": None}, r"image_sigma is required"),
        ({"image_sigma": "1"}, r"image_sigma must be a number"),
        ({"kernel": "gausian"}, r"unknown kernel 'gausian'; did you mean 'gaussian'"),
        ({"image_ids": list(range(6)), "text_ids": [0, 1, 2, 9, 4, 5]}, r"row 3 has image id 3 but text id 9"),
        ({"image_ids": list(range(6))}, r"give both image_ids and text_ids"),
    ],
)
def test_bad_inputs_raise_one_line_errors_naming_the_parameter(call, kwargs, message):
    with pytest.raises(InputError, match=message) as info:
        call(**kwargs)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rff_dim": 0}, r"rff_dim must be ≥ 1"),
        ({"rff_dim": None}, r"rff_dim is required"),
        ({"seed": None}, r"seed is required"),
        ({"seed": -1}, r"seed must be ≥ 0"),
        ({"alphas": [0]}, r"alpha must be > 0"),
    ],
)
def test_bad_feature_parameters(kwargs, message):
    with pytest.raises(InputError, match=message):
        features_call(**kwargs)


def test_exact_refuses_beyond_its_limit_and_cosine_refuses_zero_rows():
    with pytest.raises(InputError, match=r"n=6 exceeds the exact limit max_n=5: use conditional_vendi_features"):
        exact_call(max_n=5)
    zero = GOOD_T.copy()
    zero[3] = 0
    with pytest.raises(InputError, match=r"T has all-zero rows.*: 3"):
        conditional_vendi(GOOD_X, zero, kernel="cosine")


def test_update_is_atomic_and_far_embeddings_need_a_centre():
    est = ConditionalVendiEstimator(image_sigma=1.0, text_sigma=1.0, rff_dim=8, seed=0, batch_size=2)
    est.update(GOOD_X, GOOD_T)
    with pytest.raises(InputError, match="X has non-finite values"):
        est.update(NAN_X, GOOD_T)
    with pytest.raises(InputError, match=r"dimensions \(X 3, T 3\) differ"):
        est.update(GOOD_X, GOOD_X)
    assert est.n == 6
    far = GOOD_X.copy()
    far[5] += 1e6  # only the last chunk's phases exceed float32's precision: nothing of the call may be added
    with pytest.raises(InputError, match="pass image_center/text_center"):
        est.update(far, GOOD_T)
    assert est.n == 6
    centred = conditional_vendi_features(GOOD_X + 1e6, GOOD_T, image_sigma=1.0, text_sigma=1.0, rff_dim=8, seed=0)
    plain = conditional_vendi_features(GOOD_X, GOOD_T, image_sigma=1.0, text_sigma=1.0, rff_dim=8, seed=0)
    assert centred.joint[1.0] == pytest.approx(plain.joint[1.0], rel=1e-4)
