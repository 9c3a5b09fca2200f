import json

import numpy as np
import pytest
from PIL import Image

from t2ibench.errors import InputError
from t2ibench.metrics import FKEA, CosineEntropy
from t2ibench.metrics.modes import kernel_modes, scendi_modes
from t2ibench.metrics.scendi import Scendi
from t2ibench.report.gallery import render_text_modes, write_image_gallery

SIZES = (120, 90, 60, 30)


@pytest.fixture
def clustered():
    """Four far-apart tight clusters of unequal size (so the eigenvalues, hence the modes, are distinct)."""
    gen = np.random.default_rng(0)
    centres = np.eye(4, 16) * 30
    X = np.concatenate([c + 0.2 * gen.standard_normal((s, 16)) for c, s in zip(centres, SIZES, strict=True)])
    labels = np.repeat(np.arange(4), SIZES)
    perm = gen.permutation(len(X))
    return X[perm], labels[perm]


@pytest.mark.parametrize("make", [lambda: FKEA(sigma=5.0, rff_dim=400, seed=1), CosineEntropy])
def test_each_mode_is_one_cluster_in_size_order(clustered, make):
    X, labels = clustered
    est = make().update(X)
    modes = kernel_modes(est, X, k=4, top=25)
    clusters_of_modes = []
    for mode in modes.modes:
        found = set(labels[list(mode.top)])
        assert len(found) == 1, f"mode {mode.index} mixes clusters {found}"
        clusters_of_modes.append(found.pop())
        assert mode.mass > 0
        assert all(a >= b for a, b in zip(mode.top_scores, mode.top_scores[1:], strict=False))
    assert clusters_of_modes == [0, 1, 2, 3]  # biggest cluster, biggest eigenvalue
    shares = [m.share for m in modes.modes]
    np.testing.assert_allclose(shares, np.array(SIZES) / sum(SIZES), rtol=0.05)
    # the four cluster modes carry most, not all, of the entropy: within-cluster spread adds small eigenvalues
    assert 0.8 < sum(m.entropy_share for m in modes.modes) <= 1.0


def test_batched_scoring_equals_array_scoring(clustered):
    X, _ = clustered
    est = FKEA(sigma=2.0, rff_dim=64, seed=0).update(X)
    whole = kernel_modes(est, X, k=3, top=5)
    streamed = kernel_modes(est, (X[i : i + 37] for i in range(0, len(X), 37)), k=3, top=5)
    for a, b in zip(whole.modes, streamed.modes, strict=True):
        assert a.top == b.top
        np.testing.assert_allclose(a.top_scores, b.top_scores, rtol=1e-5)
        assert a.share == b.share


def test_scoring_other_samples_than_fitted_is_an_error(clustered):
    X, _ = clustered
    est = CosineEntropy().update(X)
    with pytest.raises(InputError, match="scored 299 samples but the estimator was fitted on 300"):
        kernel_modes(est, X[:-1], k=2)


def test_scendi_modes_find_model_driven_style_across_prompts():
    """Images = prompt content + a style the model adds independently of the prompt (content ⟂ style).

    Prompts explain the content, so the Schur complement's modes are styles: a mode's top images share one
    style while coming from many prompts, and its bottom images share another style.
    """
    gen = np.random.default_rng(3)
    basis = np.linalg.qr(gen.standard_normal((64, 20)))[0].T
    content, style = basis[:10] * 4, basis[10:13] * 4
    prompt_of = np.repeat(np.arange(10), 30)
    style_of = gen.choice(3, size=300, p=[0.5, 0.3, 0.2])
    images = content[prompt_of] + style[style_of] + 0.05 * gen.standard_normal((300, 64))
    texts = content[prompt_of]
    ids = list(prompt_of)
    est = Scendi(kernel="cosine").update(images, texts, image_ids=ids, text_ids=ids)
    modes = scendi_modes(est, images, k=2, top=20, bottom=20)
    first = modes.modes[0]
    assert len(set(style_of[list(first.top)])) == 1
    assert len(set(style_of[list(first.bottom)])) == 1
    assert set(style_of[list(first.top)]) != set(style_of[list(first.bottom)])
    assert len(set(prompt_of[list(first.top)])) >= 5  # a style spans prompts


def test_image_gallery_files(tmp_path, clustered):
    X, _labels = clustered
    est = FKEA(sigma=2.0, rff_dim=64, seed=0).update(X)
    modes = kernel_modes(est, X, k=3, top=6)
    gen = np.random.default_rng(0)
    pictures = [gen.integers(0, 255, size=(8, 8), dtype=np.uint8) for _ in range(len(X))]
    pictures[modes.modes[0].top[0]] = tmp_path / "real.png"
    Image.new("RGB", (40, 20), (200, 10, 10)).save(tmp_path / "real.png")
    index = write_image_gallery(modes, pictures, tmp_path / "gallery", thumb=32, cols=3, title="test")
    data = json.loads(index.read_text())
    assert data["source"] == "fkea"
    assert len(data["modes"]) == 3
    assert data["modes"][0]["top"][0]["image"].endswith("real.png")
    for mode in data["modes"]:
        with Image.open(tmp_path / "gallery" / mode["file"]) as im:
            # a label line above 6 thumbnails in a 3-column grid with 2 px gaps
            assert im.size == (3 * 34 + 2, 2 * 34 + 2 + 18)
    with Image.open(tmp_path / "gallery" / "summary.png") as im:
        assert im.width > 0
        assert im.height > 3 * 32


def test_gallery_rejects_a_wrong_number_of_images(tmp_path, clustered):
    X, _ = clustered
    modes = kernel_modes(CosineEntropy().update(X), X, k=1, top=2)
    with pytest.raises(InputError, match="299 images given for modes scored over 300 samples"):
        write_image_gallery(modes, [np.zeros((2, 2))] * 299, tmp_path)


def test_text_modes_list_top_texts(clustered):
    X, labels = clustered
    modes = kernel_modes(CosineEntropy().update(X), X, k=2, top=3)
    texts = [f"cluster {c}" for c in labels]
    table = render_text_modes(modes, texts, top=3)
    assert "cluster 0<br>cluster 0<br>cluster 0" in table
    assert "cluster 1<br>cluster 1<br>cluster 1" in table
