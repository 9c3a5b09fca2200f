"""Cluster-bootstrap intervals of VENDI/RKE: every resample equals FKEA (or exact cosine) on explicitly duplicated
rows, the draws are seeded and order-free, bad parameters are named, and the pipeline stores the intervals."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from t2ibench.config import DiversityConfig, parse_config
from t2ibench.errors import InputError
from t2ibench.metrics import FKEA, CosineEntropy, bootstrap_entropy, cluster_draws
from t2ibench.metrics.bootstrap import cluster_index

ALPHAS = (1.0, 2.0, math.inf)
PROMPTS, PER = 15, 3


def sample(seed: int = 0) -> tuple[np.ndarray, list[int]]:
    """45 images in 15 prompts of 3: prompts spread out, images near their prompt (prompt-level correlation)."""
    rng = np.random.default_rng(seed)
    centres = 2.0 * rng.standard_normal((PROMPTS, 5))
    X = np.repeat(centres, PER, axis=0) + 0.4 * rng.standard_normal((PROMPTS * PER, 5))
    return X, np.repeat(np.arange(100, 100 + PROMPTS), PER).tolist()


def brute_force(X, ids, draws, make):
    """Per resample: the drawn prompts' rows, duplicated as drawn, through the ordinary estimator (no weights)."""
    distinct, _ = cluster_index(ids, len(ids))
    rows_of = {c: [i for i, p in enumerate(ids) if p == c] for c in distinct}
    out = []
    for drawn in draws:
        rows = [i for j in drawn for i in rows_of[distinct[j]]]
        res = make().update(X[rows]).compute(ALPHAS)
        out.append([*(res.vendi[a] for a in ALPHAS), res.rke])
    return np.array(out)


@pytest.mark.parametrize(
    ("kernel", "rff_dim", "side"),
    [("gaussian", 8, "covariance"), ("gaussian", 64, "gram"), ("cosine", None, "covariance")],
    ids=["fkea-covariance-side", "fkea-gram-side", "cosine-exact"],
)
def test_every_resample_equals_the_estimator_on_duplicated_rows(kernel, rff_dim, side):
    X, ids = sample()
    if kernel == "gaussian":

        def make():
            return FKEA(sigma=2.0, rff_dim=rff_dim, seed=4, center=X.mean(axis=0))
    else:

        def make():
            return CosineEntropy()

    B = 12
    ours = bootstrap_entropy(make().features(X), ids, alphas=ALPHAS, resamples=B, seed=9, method="percentile")
    assert ours.side == side
    assert ours.clusters == PROMPTS
    assert ours.n == len(X)
    reference = brute_force(X, ids, cluster_draws(PROMPTS, B, 9), make)
    np.testing.assert_allclose(ours.replicates, reference, rtol=2e-5)
    whole = make().update(X).compute(ALPHAS)
    for a in ALPHAS:
        assert ours.vendi[a].estimate == pytest.approx(whole.vendi[a], rel=1e-5)
    assert ours.rke.estimate == pytest.approx(whole.rke, rel=1e-5)
    # the intervals are the stated quantiles of those replicates (numpy's default linear interpolation)
    lo, hi = np.quantile(reference, [0.025, 0.975], axis=0)
    got = [(ours.vendi[a].low, ours.vendi[a].high) for a in ALPHAS] + [(ours.rke.low, ours.rke.high)]
    np.testing.assert_allclose(np.array(got), np.stack([lo, hi], axis=1), rtol=2e-5)
    phi = make().features(X)
    basic = bootstrap_entropy(phi, ids, alphas=ALPHAS, resamples=B, seed=9, method="basic")
    est = np.array([whole.vendi[a] for a in ALPHAS] + [whole.rke])
    # reflected about the estimate, then clipped to the scores' range [1, D] (D = 5 for the cosine case)
    want = np.clip(np.stack([2 * est - hi, 2 * est - lo], axis=1), 1.0, phi.shape[1])
    got = [(basic.vendi[a].low, basic.vendi[a].high) for a in ALPHAS] + [(basic.rke.low, basic.rke.high)]
    np.testing.assert_allclose(np.array(got), want, rtol=2e-5)
    assert basic.describe() == "basic bootstrap over prompts, B=12"
    centred = bootstrap_entropy(phi, ids, alphas=ALPHAS, resamples=B, seed=9)  # the default
    shift = reference.mean(axis=0) - est
    want = np.clip(np.stack([lo - shift, hi - shift], axis=1), 1.0, phi.shape[1])
    got = [(centred.vendi[a].low, centred.vendi[a].high) for a in ALPHAS] + [(centred.rke.low, centred.rke.high)]
    np.testing.assert_allclose(np.array(got), want, rtol=2e-5)
    assert centred.describe() == "centred percentile bootstrap over prompts, B=12"


def test_the_draws_are_the_documented_stream_and_deterministic():
    expected = np.random.default_rng(np.random.SeedSequence((5, 2))).integers(0, PROMPTS, size=(7, PROMPTS))
    np.testing.assert_array_equal(cluster_draws(PROMPTS, 7, 5), expected)
    X, ids = sample(1)
    phi = FKEA(sigma=2.0, rff_dim=16, seed=0, center=X.mean(axis=0)).features(X)
    a = bootstrap_entropy(phi, ids, resamples=20, seed=3)
    b = bootstrap_entropy(phi, ids, resamples=20, seed=3)
    c = bootstrap_entropy(phi, ids, resamples=20, seed=4)
    np.testing.assert_array_equal(a.replicates, b.replicates)
    assert a.vendi == b.vendi
    assert a.rke == b.rke
    assert not np.array_equal(a.replicates, c.replicates)
    # the image order does not matter: clusters are ordered by id, weights follow the images
    perm = np.random.default_rng(0).permutation(len(ids))
    d = bootstrap_entropy(phi[perm], [ids[i] for i in perm], resamples=20, seed=3)
    np.testing.assert_allclose(d.replicates, a.replicates, rtol=1e-5)  # float32 eigenvalues, like FKEA


def test_images_of_a_prompt_move_together():
    """Identical copies of each image add no information: the bootstrap over prompts does not narrow."""
    X, ids = sample(2)
    firsts = X[::PER]
    est = FKEA(sigma=2.0, rff_dim=32, seed=1, center=X.mean(axis=0))
    one = bootstrap_entropy(est.features(firsts), ids[::PER], resamples=30, seed=0)
    three = bootstrap_entropy(est.features(np.repeat(firsts, PER, axis=0)), ids, resamples=30, seed=0)
    np.testing.assert_allclose(three.replicates, one.replicates, rtol=1e-5)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"level": 1.0}, r"^level must be in \(0, 1\), e\.g\. 0\.95; got 1\.0$"),
        ({"level": 0}, r"^level must be in \(0, 1\)"),
        ({"level": "0.95"}, r"^level must be a number in \(0, 1\)"),
        ({"level": True}, r"^level must be a number"),
        ({"resamples": 0}, r"^resamples must be ≥ 1; got 0$"),
        ({"resamples": 2.5}, r"^resamples must be an integer"),
        ({"seed": -1}, r"^seed must be ≥ 0; got -1$"),
        ({"method": "bca"}, r"^unknown method 'bca'.*choose from: centred, basic, percentile"),
        ({"alphas": [0]}, r"^alpha must be > 0"),
        ({"block_size": 0}, r"^block_size must be ≥ 1"),
        ({"cluster_ids": [0, 1, 2]}, r"^cluster_ids has 3 entries for 6 feature rows"),
        ({"cluster_ids": [7] * 6}, r"^cluster_ids: need at least 2 clusters .*got 1$"),
        ({"features": np.full((6, 4), np.nan)}, r"^features has non-finite values"),
    ],
)
def test_bad_parameters_are_named_in_one_line(kwargs, message):
    args = {"features": np.eye(6, 4) + 0.1, "cluster_ids": [0, 0, 1, 1, 2, 2], "seed": 0, **kwargs}
    with pytest.raises(InputError, match=message) as info:
        bootstrap_entropy(args.pop("features"), args.pop("cluster_ids"), **args)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("bootstrap", -1, r"^bootstrap: must be in \[0, 100000\]; got -1$"),
        ("bootstrap_max_n", 1, r"^bootstrap_max_n: must be ≥ 2; got 1$"),
    ],
)
def test_the_config_fields_are_validated(field, value, message):
    assert DiversityConfig().bootstrap == 200
    assert DiversityConfig(bootstrap=0).bootstrap == 0
    with pytest.raises(InputError, match=message):
        DiversityConfig(**{field: value})


def run_diversity(tmp_path, diversity):
    from t2ibench.hashing import file_digest
    from t2ibench.pipeline.results import Bandwidth, Embedded, EmbeddingFiles
    from t2ibench.pipeline.steps import step_diversity, step_fkea_shard

    config = parse_config({"name": "x", "models": [{"name": "a"}], "evaluators": {"diversity": diversity}})
    X, ids = sample(3)
    path = tmp_path / "image.npy"
    np.save(path, X.astype(np.float32))
    files = EmbeddingFiles(str(path), str(path), str(path))
    digests = EmbeddingFiles(*(file_digest(path),) * 3)
    embedded = Embedded("a", files, digests, tuple(ids), tuple([0, 1, 2] * PROMPTS), tuple(sorted(set(ids))))
    cfg = config.evaluators.diversity
    sigma = Bandwidth(value=1.5, source="fixed")
    shards = [
        step_fkea_shard(
            embedded, k, 2, cfg.kernel, sigma, cfg.rff_dim, cfg.seed, cfg.orthogonal, tmp_path / f"s{k}.npz"
        )
        for k in range(2)
    ]
    return step_diversity(embedded, shards, sigma, cfg, config.evaluators.ci_level), X, ids


def test_step_diversity_stores_the_intervals(tmp_path):
    diversity = {"sigma": 1.5, "rff_dim": 16, "shards": 2, "n_curve": [20], "modes": 2, "top": 3, "bootstrap": 25}
    scores, X, ids = run_diversity(tmp_path, diversity)
    by_key = {(m.metric, m.alpha): m for m in scores.metrics}
    est = FKEA(sigma=1.5, rff_dim=16, seed=0, center=X.astype(np.float32).astype(np.float64).mean(axis=0))
    want = bootstrap_entropy(est.features(X.astype(np.float32)), ids, resamples=25, seed=0)
    for a in ALPHAS:
        row = by_key[("fkea", a)]
        assert json.loads(row.params_key)["alpha"] == ("inf" if math.isinf(a) else a)
        if math.isinf(a):  # a maximum: the bootstrap is unreliable for it, and the row says so
            assert (row.ci_low, row.ci_high, row.ci_level) == (None, None, None)
            assert row.ci_method == "not computed: the bootstrap is unreliable for VENDI-∞ (a maximum)"
            continue
        assert (row.ci_low, row.ci_high) == pytest.approx((want.vendi[a].low, want.vendi[a].high), rel=1e-6)
        assert row.ci_level == 0.95
        assert row.ci_method == "centred percentile bootstrap over prompts, B=25"
    rke = by_key[("rke", 2.0)]
    assert (rke.ci_low, rke.ci_high) == pytest.approx((want.rke.low, want.rke.high), rel=1e-6)
    curve = by_key[("fkea_curve", 1.0)]
    assert curve.ci_low is None
    assert curve.ci_high is None
    assert curve.ci_method is None


@pytest.mark.parametrize(
    ("extra", "method"),
    [({"bootstrap": 0}, "not computed: bootstrap: 0"), ({"bootstrap_max_n": 44}, "not computed: n > 44")],
)
def test_step_diversity_says_why_an_interval_is_missing(tmp_path, extra, method):
    scores, _, _ = run_diversity(tmp_path, {"sigma": 1.5, "rff_dim": 16, "shards": 2, "modes": 2, "top": 3, **extra})
    for row in scores.metrics:
        assert row.ci_low is None
        assert row.ci_high is None
        assert row.ci_level is None
        assert row.ci_method is not None
        assert row.ci_method.startswith(method)


def test_step_diversity_uses_orthogonal_features_when_asked(tmp_path):
    diversity = {"sigma": 1.5, "rff_dim": 16, "shards": 2, "modes": 2, "top": 3, "bootstrap": 0, "orthogonal": True}
    scores, X, _ = run_diversity(tmp_path, diversity)
    got = {m.alpha: m.value for m in scores.metrics if m.metric == "fkea"}
    center = X.astype(np.float32).astype(np.float64).mean(axis=0)
    orf = FKEA(sigma=1.5, rff_dim=16, seed=0, center=center, orthogonal=True).update(X.astype(np.float32))
    plain = FKEA(sigma=1.5, rff_dim=16, seed=0, center=center).update(X.astype(np.float32))
    assert got[1.0] == pytest.approx(orf.compute(ALPHAS).vendi[1.0], rel=1e-6)
    assert got[1.0] != pytest.approx(plain.compute(ALPHAS).vendi[1.0], rel=1e-6)


def test_step_diversity_stores_truncated_vendi_from_the_same_spectrum(tmp_path):
    """The fkea_truncated rows are truncated_vendi of the merged FKEA spectrum (one spectrum, no recomputation),
    carry t in their key, and say why they have no interval."""
    from t2ibench.metrics import truncated_vendi

    diversity = {"sigma": 1.5, "rff_dim": 16, "shards": 2, "modes": 2, "top": 3, "bootstrap": 5, "truncation": 4}
    scores, X, _ = run_diversity(tmp_path, diversity)
    by_key = {(m.metric, m.alpha): m for m in scores.metrics}
    est = FKEA(sigma=1.5, rff_dim=16, seed=0, center=X.astype(np.float32).astype(np.float64).mean(axis=0))
    spectrum = est.update(X.astype(np.float32)).compute(ALPHAS).eigenvalues
    want = truncated_vendi(spectrum, ALPHAS, 4)
    for a in ALPHAS:
        row = by_key[("fkea_truncated", a)]
        assert row.value == pytest.approx(want[a], rel=1e-5)
        assert 1.0 <= row.value <= 4.0
        assert json.loads(row.params_key)["t"] == 4
        if a == 1.0:  # α = 1 carries its convergence report's band at n: the same draws as the plain intervals
            assert row.ci_method.startswith("centred percentile bootstrap over prompts")
            assert row.ci_low <= row.value <= row.ci_high
        else:
            assert row.ci_method.startswith("not computed: bootstrapped for α = 1 only")
    curve = [m for m in scores.metrics if m.metric == "convergence"]
    assert {m.details["score"] for m in curve} == {"vendi_1", "vendi_2", "rke", "truncated_vendi_1"}
    full = next(m for m in curve if m.details["score"] == "truncated_vendi_1" and m.details["fraction"] == 1.0)
    assert (full.value, full.ci_low, full.ci_high) == pytest.approx(
        (
            by_key[("fkea_truncated", 1.0)].value,
            by_key[("fkea_truncated", 1.0)].ci_low,
            by_key[("fkea_truncated", 1.0)].ci_high,
        ),
        rel=1e-4,
    )
    (tmp_path / "off").mkdir()
    off, _, _ = run_diversity(tmp_path / "off", {**diversity, "truncation": None})
    assert not [m for m in off.metrics if m.metric == "fkea_truncated"]
