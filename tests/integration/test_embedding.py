"""Embedders through their production loaders (tiny random weights) and the content-keyed cache."""

import numpy as np
import pytest
from PIL import Image

from t2ibench.embed_cache import EmbeddingCache, content_key
from t2ibench.errors import InputError
from t2ibench.models.embedding import DINOv2Embedder, OpenCLIPEmbedder, embed_images_cached, embed_texts_cached
from t2ibench.specs import EmbedderConfig


@pytest.fixture
def image_files(tmp_path):
    gen = np.random.default_rng(0)
    paths = []
    for i in range(5):
        path = tmp_path / f"img{i}.png"
        Image.fromarray(gen.integers(0, 255, (40, 48, 3), dtype=np.uint8)).save(path)
        paths.append(path)
    return paths


def clip(tiny_clip, normalize=True):
    arch, checkpoint = tiny_clip
    spec = EmbedderConfig(backend="open_clip", model=arch, pretrained=str(checkpoint), normalize=normalize)
    return OpenCLIPEmbedder(spec, device="cpu", show_progress=False)


def dinov2(folder, **fields):
    return DINOv2Embedder(EmbedderConfig(model=str(folder), **fields), device="cpu", show_progress=False)


def test_open_clip_images_and_texts(tiny_clip, image_files):
    emb = clip(tiny_clip)
    images = emb.embed_images(image_files)
    assert images.shape == (5, 16)
    assert images.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(images, axis=1), 1.0, rtol=1e-5)
    texts = emb.embed_texts(["a photo of a cat", "a photo of a dog"])
    assert texts.vectors.shape == (2, 16)
    assert texts.truncated == []
    raw = clip(tiny_clip, normalize=False).embed_images(image_files)
    assert not np.allclose(np.linalg.norm(raw, axis=1), 1.0)  # normalisation is explicit, not implicit


def test_a_78_token_caption_is_truncated_keeping_end_of_text(tiny_clip):
    emb = clip(tiny_clip)
    _, _, tokenizer, _ = emb._load()
    long_caption = " ".join(["cat"] * 76)  # 76 word tokens + start + end = 78 > 77
    assert len(tokenizer.encode(long_caption)) + 2 == 78
    tokens, truncated = emb.tokenize([long_caption, "a cat"])
    assert truncated == [0]
    assert int(tokens[0, -1]) == tokenizer.eot_token_id  # CLIP reads the feature at the end-of-text token
    assert int(tokens[0, 0]) == tokenizer.sot_token_id
    # the truncated caption embeds exactly like the caption cut to 75 word tokens
    cut = " ".join(["cat"] * 75)
    result = emb.embed_texts([long_caption, cut])
    assert result.truncated == [0]
    np.testing.assert_allclose(result.vectors[0], result.vectors[1], rtol=1e-5, atol=1e-6)


def test_dinov2_cls_and_mean_pooling(tiny_dinov2, image_files):
    cls = dinov2(tiny_dinov2).embed_images(image_files)
    mean = dinov2(tiny_dinov2, pooling="mean").embed_images(image_files)
    assert cls.shape == mean.shape == (5, 32)
    assert not np.allclose(cls, mean)
    with pytest.raises(InputError, match="unknown pooling 'max'"):
        dinov2(tiny_dinov2, pooling="max")


def test_dinov2_loads_the_saved_weights(tiny_dinov2):
    import torch
    from transformers import Dinov2Model

    emb = dinov2(tiny_dinov2)
    loaded = emb._load()[1].state_dict()
    saved = Dinov2Model.from_pretrained(tiny_dinov2).state_dict()
    assert all(torch.equal(loaded[k], saved[k]) for k in saved)


class Counting:
    """Wraps an embedder and counts the items it actually embeds."""

    def __init__(self, inner):
        self.inner, self.seen = inner, 0

    def identity(self):
        return self.inner.identity()

    def embed_images(self, items):
        self.seen += len(items)
        return self.inner.embed_images(items)

    def tokenize(self, texts):
        return self.inner.tokenize(texts)

    def embed_texts(self, texts):
        self.seen += len(texts)
        return self.inner.embed_texts(texts)


def test_cache_hits_misses_and_invalidation(tiny_clip, tiny_dinov2, image_files, tmp_path):
    cache_root = tmp_path / "cache"
    first = Counting(clip(tiny_clip))
    vectors, cache = embed_images_cached(first, image_files, cache_root)
    assert first.seen == 5
    assert (cache.hits, cache.misses) == (0, 5)
    again = Counting(clip(tiny_clip))
    cached, cache2 = embed_images_cached(again, image_files, cache_root)
    assert again.seen == 0
    assert cache2.hits == 5
    np.testing.assert_array_equal(cached, vectors)
    # a changed file is a new key: only it is recomputed
    Image.new("RGB", (40, 48), (255, 0, 0)).save(image_files[2])
    third = Counting(clip(tiny_clip))
    embed_images_cached(third, image_files, cache_root)
    assert third.seen == 1
    # a changed model option (normalisation) or model (DINOv2) never returns the old vectors
    unnormalised = Counting(clip(tiny_clip, normalize=False))
    embed_images_cached(unnormalised, image_files, cache_root)
    assert unnormalised.seen == 5
    dino = Counting(dinov2(tiny_dinov2))
    embed_images_cached(dino, image_files, cache_root)
    assert dino.seen == 5
    # preprocessing is part of the identity: a processor with another crop is another fingerprint
    from tests.integration.tiny_models import build_tiny_dinov2

    other = build_tiny_dinov2(tmp_path / "dino48", crop=48)
    a = dinov2(tiny_dinov2).identity()
    b = dinov2(other).identity()
    assert EmbeddingCache(cache_root, a).fingerprint != EmbeddingCache(cache_root, b).fingerprint


def test_text_cache_reports_truncation_on_hits_too(tiny_clip, tmp_path):
    texts = ["a photo of a cat", " ".join(["dog"] * 80)]
    first = Counting(clip(tiny_clip))
    v1, truncated, _ = embed_texts_cached(first, texts, tmp_path / "c")
    second = Counting(clip(tiny_clip))
    v2, truncated2, _ = embed_texts_cached(second, texts, tmp_path / "c")
    assert truncated == truncated2 == [1]
    assert (first.seen, second.seen) == (2, 0)
    np.testing.assert_array_equal(v1, v2)


def test_cache_survives_a_torn_index_line(tmp_path):
    cache = EmbeddingCache(tmp_path, {"model": "m"})
    cache.put(["a", "b"], np.eye(2, 3))
    with open(cache.folder / "index.jsonl", "a") as fh:
        fh.write('{"key": "c", "sha')  # a crash mid-append
    reread = EmbeddingCache(tmp_path, {"model": "m"})
    assert len(reread) == 2
    np.testing.assert_array_equal(reread.get(["b"])["b"], [0, 1, 0])
    assert content_key("a") != content_key(b"a")
