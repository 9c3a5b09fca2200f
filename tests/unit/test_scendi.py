import itertools
import math

import numpy as np
import pytest

from t2ibench.errors import InputError, StateMismatchError
from t2ibench.metrics.scendi import Scendi, check_aligned, gather_by_id, pinv_rtol, scendi_score, text_seed


def orthonormal(k: int, dim: int, seed: int) -> np.ndarray:
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((dim, k)))
    return q.T  # k orthonormal rows


def pairs_following_prompts(prompts: int, variants: int, per_variant: int, *, seed: int = 0):
    """Images determined by (prompt, variant): prompt p's images are `variants` far-apart points."""
    texts = orthonormal(prompts, 32, seed) * 3
    images = orthonormal(prompts * variants, 64, seed + 1) * 40
    rows_img, rows_txt, ids = [], [], []
    for p in range(prompts):
        for v in range(variants):
            for _ in range(per_variant):
                rows_img.append(images[p * variants + v])
                rows_txt.append(texts[p])
                ids.append(f"p{p}")
    return np.array(rows_img), np.array(rows_txt), ids


def gaussian(images, texts, ids, **kw):
    params = {"image_sigma": 1.0, "text_sigma": 1.0, "rff_dim": 500, "seed": 3} | kw
    return scendi_score(images, texts, image_ids=ids, text_ids=ids, **params)


def cosine(images, texts, ids, **kw):
    return scendi_score(images, texts, image_ids=ids, text_ids=ids, kernel="cosine", **kw)


# -- behaviour ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("score", [gaussian, cosine])
def test_images_determined_by_prompt_score_one_while_image_vendi_is_large(score):
    images, texts, ids = pairs_following_prompts(prompts=12, variants=1, per_variant=15)
    res = score(images, texts, ids)
    assert res.scendi == pytest.approx(1.0, abs=0.02)
    assert res.model_share < 0.01
    assert res.image_vendi == pytest.approx(12, rel=0.05)
    assert res.prompt_vendi == pytest.approx(12, rel=0.05)


@pytest.mark.parametrize("m", [3, 5, 8])
@pytest.mark.parametrize("score", [gaussian, cosine])
def test_images_independent_of_prompts(score, m):
    """Balanced design: every prompt gets every image mode equally often (exact empirical independence).

    Prompts can only explain the mean image, so Λ_I is the centred covariance of m equal orthogonal modes:
    m − 1 equal eigenvalues with trace (m − 1)/m, i.e. exp(H) = m − 1 and Scendi = (m − 1)^{(m−1)/m}.
    """
    texts = orthonormal(6, 32, 0) * 3
    modes = orthonormal(m, 64, 1) * 40
    images = np.array([modes[k] for p in range(6) for k in range(m) for _ in range(4)])
    txt = np.array([texts[p] for p in range(6) for k in range(m) for _ in range(4)])
    ids = [p for p in range(6) for k in range(m) for _ in range(4)]
    res = score(images, txt, ids)
    tol = 0.03 if score is gaussian else 1e-4  # cosine: exact up to the O(ε/s) bias of the ridge
    assert res.image_vendi == pytest.approx(m, rel=tol)
    assert res.conditional_vendi == pytest.approx(m - 1, rel=tol)
    assert res.model_share == pytest.approx((m - 1) / m, rel=tol)
    assert res.scendi == pytest.approx((m - 1) ** ((m - 1) / m), rel=tol)


@pytest.mark.parametrize("score", [gaussian, cosine])
def test_scendi_grows_with_within_prompt_variants(score):
    """P prompts × k variants: Λ_I holds the within-prompt spread, Scendi = (P(k−1))^{(k−1)/k}."""
    P = 5
    values = []
    for k in (1, 2, 4, 8):
        images, texts, ids = pairs_following_prompts(prompts=P, variants=k, per_variant=3)
        res = score(images, texts, ids)
        expected = (P * (k - 1)) ** ((k - 1) / k) if k > 1 else 1.0
        assert res.scendi == pytest.approx(expected, rel=0.05 if score is gaussian else 1e-4)
        values.append(res.scendi)
    assert all(b > a for a, b in itertools.pairwise(values))


def test_joint_permutation_of_pairs_changes_nothing(rng):
    images, texts, ids = pairs_following_prompts(prompts=6, variants=3, per_variant=4)
    images = images + rng.normal(0, 0.5, images.shape)
    base = gaussian(images, texts, ids)
    perm = rng.permutation(len(ids))
    moved = gaussian(images[perm], texts[perm], [ids[i] for i in perm])
    assert moved.scendi == pytest.approx(base.scendi, rel=1e-5)
    assert moved.image_vendi == pytest.approx(base.image_vendi, rel=1e-5)


def test_independent_shuffle_of_prompts_changes_the_score(rng):
    """A pipeline that pairs by file order after one side was reordered: prompts no longer explain images."""
    images, texts, ids = pairs_following_prompts(prompts=6, variants=2, per_variant=10)
    good = cosine(images, texts, ids)
    perm = rng.permutation(len(ids))
    shuffled = cosine(images, texts[perm], ids)  # the ids now vouch for wrong pairs
    assert shuffled.scendi > 1.5 * good.scendi
    assert shuffled.model_share > good.model_share + 0.2
    # with honest ids the misalignment is caught instead of silently scored
    with pytest.raises(InputError, match=r"row \d+ has image id 'p\d' but text id 'p\d'"):
        Scendi(kernel="cosine").update(images, texts[perm], image_ids=ids, text_ids=[ids[i] for i in perm])


@pytest.mark.parametrize("kernel", ["gaussian", "cosine"])
def test_result_is_stable_across_regularisation(kernel):
    """ε spans six orders of magnitude; the singular C_TT (12 prompts, 1000-dim features) makes this matter."""
    gen = np.random.default_rng(5)
    texts = orthonormal(12, 32, 0)
    prompt_of = gen.integers(0, 12, size=600)
    style = gen.integers(0, 3, size=600)
    centres = orthonormal(36, 64, 2) * 2
    images = centres[prompt_of * 3 + style] + gen.normal(0, 0.3, (600, 64))
    ids = list(prompt_of)
    est = Scendi(kernel=kernel, image_sigma=2.0, text_sigma=1.0, rff_dim=500, seed=0)
    est.update(images, texts[prompt_of], image_ids=ids, text_ids=ids)
    scores = [est.compute(epsilon=e).scendi for e in (1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4)]
    assert max(scores) / min(scores) - 1 < 0.01, scores
    assert scores == sorted(scores)  # a larger ridge removes (weakly) less: Λ_I grows with ε


def test_decomposition_adds_up_and_is_psd(rng):
    images, texts, ids = pairs_following_prompts(prompts=4, variants=3, per_variant=5)
    est = Scendi(image_sigma=1.0, text_sigma=1.0, rff_dim=100, seed=1)
    est.update(images + rng.normal(0, 0.3, images.shape), texts, image_ids=ids, text_ids=ids)
    Lam, P, C_II = est.decompose()
    np.testing.assert_allclose(Lam + P, C_II, atol=1e-12)
    assert np.linalg.eigvalsh(Lam).min() > -1e-7
    assert np.linalg.eigvalsh(P).min() > -1e-7


def test_scendi_formula_matches_its_definition(rng):
    images, texts, ids = pairs_following_prompts(prompts=4, variants=3, per_variant=5)
    est = Scendi(kernel="cosine").update(images + rng.normal(0, 3, images.shape), texts, image_ids=ids, text_ids=ids)
    lam = np.linalg.eigvalsh(est.decompose()[0])
    lam = lam[lam > 1e-12]
    expected = math.exp(np.sum(lam * np.log(lam.sum() / lam)))
    assert est.compute().scendi == pytest.approx(expected, rel=1e-6)


# -- how C_TT is inverted: the project's ridge and the reference repository's pseudo-inverse -------------------


def paraphrase_pairs(kernel: str, delta: float, *, prompts: int = 4, per: int = 12, text_dim: int = 32):
    """Each prompt has two paraphrases c_p ± δ·u_p; paraphrase a's images are modes {0, 1}, b's modes {2, 3}.

    C_TT has `prompts` strong directions and `prompts` weak ones (variance ∝ δ², the paraphrase axes), the rest
    zero. Whether the weak axes count decides the number: if they explain nothing, prompt p's images are four
    equal orthonormal modes (3 centred eigenvalues 1/(4·prompts) each) and Scendi = (3·prompts)^{3/4} = 12^{3/4};
    if they are fully inverted the paraphrase also explains a vs b and Scendi = (2·prompts)^{1/2} = 8^{1/2}.
    """
    base = orthonormal(2 * prompts, text_dim, 0)
    centres, axes = base[:prompts] * (3 if kernel == "gaussian" else 1), base[prompts:]
    modes = orthonormal(4 * prompts, 64, 1) * (6 if kernel == "gaussian" else 1)
    images, texts, ids = [], [], []
    for p in range(prompts):
        for side, sign in enumerate((1, -1)):
            for j in range(per):
                t = centres[p] + sign * delta * axes[p]
                texts.append(t / np.linalg.norm(t) if kernel == "cosine" else t)
                images.append(modes[4 * p + 2 * side + j % 2])
                ids.append(f"p{p}")
    if kernel == "gaussian":
        est = Scendi(kernel="gaussian", image_sigma=1.0, text_sigma=1.0, rff_dim=100, seed=0)
    else:
        est = Scendi(kernel="cosine")
    return est.update(np.array(images), np.array(texts), image_ids=ids, text_ids=ids)


def reference_inverse(C_TT: np.ndarray) -> tuple[np.ndarray, int]:
    """aziksh-ospanov/scendi-score's inverse, transcribed independently: (C_TT + 1e-12·I) held in float32, then
    the Moore–Penrose inverse with torch.linalg.pinv's default cut-off rtol = max(rows, cols)·eps(float32)."""
    D = C_TT.shape[0]
    held = (C_TT.astype(np.float32) + np.float32(1e-12) * np.eye(D, dtype=np.float32)).astype(np.float64)
    rtol = max(held.shape) * float(np.finfo(np.float32).eps)
    rank = int(np.linalg.matrix_rank(held, tol=rtol * np.linalg.norm(held, 2)))
    return np.linalg.pinv(held, rcond=rtol), rank


def scendi_by_definition(Lam: np.ndarray, floor: float = 1e-12) -> float:
    lam = np.linalg.eigvalsh(Lam)
    lam = lam[lam > floor]
    return math.exp(np.sum(lam * np.log(lam.sum() / lam)))


def test_pinv_rtol_is_torchs_float32_default():
    assert pinv_rtol(2000) == 2000 * 2.0**-23 == pytest.approx(2.384e-4, rel=1e-3)


def test_pinv_reproduces_the_reference_where_the_ridge_differs():
    """Weak paraphrase axes (C_TT eigenvalues 2.2e-6, between the ridge 1e-6·Tr and the cut-off 512·eps32·σ_max
    = 1.5e-5): the ridge inverts them (weight s/(s+ε) ≈ 0.7) and explains part of a-vs-b; the pinv drops them."""
    est = paraphrase_pairs("cosine", 3e-3, text_dim=512)
    C_II, C_IT, C_TT = est.blocks()
    A, rank = reference_inverse(C_TT)
    expected = scendi_by_definition(C_II - C_IT @ A @ C_IT.T)
    pinv = est.compute(inverse="pinv")
    assert pinv.scendi == pytest.approx(expected, rel=1e-6)
    assert pinv.scendi == pytest.approx(12**0.75, rel=1e-6)  # the weak axes explain nothing
    assert pinv.pinv_kept == rank == 4
    ridge = est.compute()
    assert 8**0.5 < ridge.scendi < 0.7 * pinv.scendi  # 3.95 vs 6.45: the inverse alone moves Scendi by 39 %
    assert pinv.inverse == "pinv"
    assert "rtol = 512·eps(float32)" in pinv.regularisation
    assert "kept 4/512 text directions" in pinv.regularisation
    assert ridge.inverse == "ridge"
    assert "ε = 1e-06·Tr C_TT" in ridge.regularisation
    assert ridge.pinv_kept is None
    assert {"inverse", "regularisation", "pinv_kept"} <= pinv.to_dict().keys()


def test_pinv_on_gaussian_features_matches_the_transcription():
    """The reference's kernel: random Fourier features (2r = 200 text features, float32-accumulated state)."""
    est = paraphrase_pairs("gaussian", 3e-3)
    C_II, C_IT, C_TT = est.blocks()
    A, rank = reference_inverse(C_TT)
    P = C_IT @ A @ C_IT.T
    _, P_pinv, _ = est.decompose(inverse="pinv")
    np.testing.assert_allclose(P_pinv, P, rtol=0, atol=1e-9 * np.abs(P).max())
    pinv, ridge = est.compute(inverse="pinv"), est.compute()
    assert pinv.pinv_kept == rank == 4
    # the state's float32 round-off leaves ±1e-9 eigenvalues in Λ, which compute() zeroes and the plain
    # definition keeps: the two scores are 1e-5 apart here, so the score is compared at 1e-4 (P above at 1e-9)
    assert pinv.scendi == pytest.approx(scendi_by_definition(C_II - P, floor=1e-9), rel=1e-4)
    assert ridge.scendi < 0.7 * pinv.scendi  # 3.82 vs 6.19


def test_pinv_is_a_step_in_the_data_where_the_ridge_is_smooth():
    """Once the paraphrase axes pass the cut-off the pinv inverts them whole: Scendi jumps 12^{3/4} → 8^{1/2}."""
    ridge, pinv = [], []
    for delta in (3e-3, 1e-2):
        est = paraphrase_pairs("cosine", delta, text_dim=512)
        ridge.append(est.compute().scendi)
        pinv.append(est.compute(inverse="pinv"))
    assert [r.pinv_kept for r in pinv] == [4, 8]
    # 8^{1/2} to 1e-5: the weak axes are inverted from C_TT rounded to float32 (relative error ~1e-3 on them)
    assert [r.scendi for r in pinv] == pytest.approx([12**0.75, 8**0.5], rel=1e-5)
    assert pinv[1].scendi < ridge[1] < ridge[0] < pinv[0].scendi


def test_default_inverse_is_the_ridge_and_pinv_ignores_epsilon():
    images, texts, ids = pairs_following_prompts(prompts=4, variants=3, per_variant=5)
    est = Scendi(kernel="cosine").update(images, texts, image_ids=ids, text_ids=ids)
    assert est.compute().scendi == est.compute(inverse="ridge").scendi
    assert est.compute(epsilon=1e-3).scendi != est.compute().scendi
    assert est.compute(inverse="pinv", epsilon=1e-3).scendi == est.compute(inverse="pinv").scendi
    with pytest.raises(InputError, match="unknown inverse 'pinx'; did you mean 'pinv'"):
        est.compute(inverse="pinx")
    with pytest.raises(InputError, match="unknown inverse 'ridg'"):
        scendi_score(images, texts, image_ids=ids, text_ids=ids, kernel="cosine", inverse="ridg")


# -- streaming state -------------------------------------------------------------------------------------------


def test_merge_and_save_load_equal_one_pass(tmp_path, rng):
    images, texts, ids = pairs_following_prompts(prompts=5, variants=2, per_variant=7)
    images = images + rng.normal(0, 0.4, images.shape)
    whole = Scendi(image_sigma=1.0, text_sigma=2.0, rff_dim=64, seed=2).update(
        images, texts, image_ids=ids, text_ids=ids
    )
    a = Scendi(image_sigma=1.0, text_sigma=2.0, rff_dim=64, seed=2).update(
        images[:31], texts[:31], image_ids=ids[:31], text_ids=ids[:31]
    )
    b = Scendi(image_sigma=1.0, text_sigma=2.0, rff_dim=64, seed=2).update(
        images[31:], texts[31:], image_ids=ids[31:], text_ids=ids[31:]
    )
    merged = Scendi.load(a.save(tmp_path / "a.npz")).merge(b)
    assert merged.n == whole.n
    assert merged.compute().scendi == pytest.approx(whole.compute().scendi, rel=1e-5)
    with pytest.raises(StateMismatchError, match="parameters differ"):
        merged.merge(
            Scendi(image_sigma=1.0, text_sigma=2.0, rff_dim=64, seed=3).update(
                images, texts, image_ids=ids, text_ids=ids
            )
        )


def test_text_features_use_a_separate_seeded_stream():
    est = Scendi(image_sigma=1.0, text_sigma=1.0, rff_dim=8, seed=4, image_dim=5, text_dim=5)
    fi, ft = est.feature_maps
    assert fi.seed == 4
    assert ft.seed == text_seed(4) != 4
    assert not np.allclose(fi.omega, ft.omega)


# -- ids and bad input ----------------------------------------------------------------------------------------


def test_gather_by_id_gives_each_image_its_prompt():
    table = np.arange(12.0).reshape(4, 3)
    got = gather_by_id(["b", "d", "b"], ["a", "b", "c", "d"], table)
    np.testing.assert_array_equal(got, table[[1, 3, 1]])


@pytest.mark.parametrize(
    ("wanted", "ids", "message"),
    [
        (["a", "z"], ["a", "b"], "row 1 asks for prompt id 'z'"),
        (["a"], ["a", "a"], "duplicate prompt id 'a' at rows 0 and 1"),
        (["a"], ["a"], "1 prompt ids for 2 prompt embeddings"),
    ],
)
def test_gather_by_id_errors(wanted, ids, message):
    with pytest.raises(InputError, match=message):
        gather_by_id(wanted, ids, np.zeros((2, 3)) + 1)


def test_check_aligned_names_the_first_mismatch():
    check_aligned([1, 2, 3], [1, 2, 3])
    with pytest.raises(InputError, match="row 12 has image id 2 but text id 3"):
        check_aligned([1, 2, 3], [1, 3, 2], row_offset=11)
    with pytest.raises(InputError, match="unequal pairs: 3 image ids but 2 text ids"):
        check_aligned([1, 2, 3], [1, 2])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"image_sigma": 0.0, "text_sigma": 1.0}, "image_sigma must be a finite number > 0"),
        ({"image_sigma": 1.0, "text_sigma": -1.0}, "text_sigma must be a finite number > 0"),
        ({"image_sigma": 1.0}, "text_sigma is required"),
        ({"image_sigma": 1.0, "text_sigma": 1.0, "rff_dim": 0}, "rff_dim must be ≥ 1"),
        ({"kernel": "cosin"}, "did you mean 'cosine'"),
    ],
)
def test_bad_parameters(kwargs, message):
    with pytest.raises(InputError, match=message):
        Scendi(**kwargs)


def test_bad_rows_and_dimensions_are_named(rng):
    est = Scendi(kernel="cosine")
    img, txt = rng.standard_normal((6, 4)), rng.standard_normal((6, 3))
    ids = list(range(6))
    bad = img.copy()
    bad[4, 0] = np.nan
    with pytest.raises(InputError, match=r"images has non-finite values .* row\(s\): 4"):
        est.update(bad, txt, image_ids=ids, text_ids=ids)
    assert est.n == 0
    est.update(img, txt, image_ids=ids, text_ids=ids)
    with pytest.raises(InputError, match=r"differ from earlier batches \(4, 3\)"):
        est.update(img[:, :3], txt, image_ids=ids, text_ids=ids)
    with pytest.raises(InputError, match="6 images with 5 ids"):
        est.update(img, txt, image_ids=ids[:5], text_ids=ids)
    with pytest.raises(InputError, match="epsilon must be a finite number > 0"):
        est.compute(epsilon=0.0)


def test_state_size_is_independent_of_n(rng):
    est = Scendi(image_sigma=1.0, text_sigma=1.0, rff_dim=16, seed=0, batch_size=100)
    ids = list(range(50))
    est.update(rng.standard_normal((50, 3)), rng.standard_normal((50, 2)), image_ids=ids, text_ids=ids)
    size = est._stat()._upper.nbytes
    ids = list(range(5000))
    est.update(rng.standard_normal((5000, 3)), rng.standard_normal((5000, 2)), image_ids=ids, text_ids=ids)
    assert est._stat()._upper.nbytes == size == (4 * 16) ** 2 * 8
    assert est.n == 5050


# -- which side's σ: the median-heuristic errors name the text side, its file and option ---------------------------


@pytest.mark.parametrize(
    ("texts", "said"),
    [
        (np.ones((1, 4)), r"p\.npz \(text embeddings\) has 1 row\(s\); 2 are needed for the median-heuristic σ "
                          r"\(or give --text-sigma\)"),
        (np.ones((3, 4)), r"p\.npz \(text embeddings\): median pairwise distance is 0 .*: set --text-sigma explicitly"),
    ],
    ids=["one-prompt", "constant-prompts"],
)  # fmt: skip
def test_a_degenerate_text_side_is_named_with_its_file_and_option(tmp_path, texts, said):
    from t2ibench.diversity import diversity_of_pairs

    rng = np.random.default_rng(0)
    ids = np.arange(30) % len(texts)
    np.savez(tmp_path / "i.npz", embeddings=rng.normal(size=(30, 6)), ids=ids)
    np.savez(tmp_path / "p.npz", embeddings=texts, ids=np.arange(len(texts)))
    with pytest.raises(InputError, match=said):
        diversity_of_pairs(tmp_path / "i.npz", tmp_path / "p.npz")
    np.savez(tmp_path / "i.npz", embeddings=np.ones((30, 6)), ids=ids)  # the image side constant: named as such
    with pytest.raises(InputError, match=r"i\.npz \(image embeddings\): median pairwise .*: set --sigma explicitly"):
        diversity_of_pairs(tmp_path / "i.npz", tmp_path / "p.npz", text_sigma=1.0)


def test_the_refresh_names_the_text_features_and_the_config_key(tmp_path):
    from t2ibench.hashing import file_digest
    from t2ibench.pipeline.results import Embedded, EmbeddingFiles
    from t2ibench.pipeline.steps import step_median_bandwidth

    images, texts = tmp_path / "clip_image.npy", tmp_path / "clip_text.npy"
    np.save(images, np.random.default_rng(0).normal(size=(4, 3)))
    np.save(texts, np.ones((1, 3)))  # one prompt
    files = EmbeddingFiles(str(images), str(images), str(texts))
    digests = EmbeddingFiles(file_digest(images), file_digest(images), file_digest(texts))
    embedded = Embedded("m", files, digests, (0, 0, 0, 0), (0, 1, 2, 3), (0,))
    assert step_median_bandwidth(embedded, "clip_image", seed=0).value > 0
    said = (
        r"m: the CLIP text embeddings of the prompts \(.*clip_text\.npy\) has 1 row\(s\); 2 are needed for the "
        r"median-heuristic σ \(or give evaluators\.scendi\.text_sigma \(a number or 'reference'\)\)"
    )
    with pytest.raises(InputError, match=said):
        step_median_bandwidth(embedded, "clip_text", seed=0)
