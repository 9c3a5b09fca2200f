"""Registry.reuse: a worker thread loads a model once for consecutive shards, never shares it with another thread."""

from __future__ import annotations

import threading

import pytest

from t2ibench.models.registry import Registry


def counting(keep: int = 1) -> tuple[Registry, list[tuple]]:
    built: list[tuple] = []
    registry = Registry("test backend", keep=keep)

    @registry.register("m", "a model")
    def build(spec: str, *, device: str = "cpu") -> object:
        built.append((spec, device))
        return object()

    return registry, built


def test_same_arguments_in_one_thread_build_once_and_others_rebuild():
    registry, built = counting()
    a = registry.reuse("m", "sd", device="cuda")
    assert registry.reuse("m", "sd", device="cuda") is a
    assert registry.reuse("m", "sd", device="cpu") is not a  # other arguments, another object
    assert registry.reuse("m", "sd", device="cuda") is not a  # keep=1: the first was dropped
    assert len(built) == 3


def test_keep_two_alternates_without_rebuilding():
    registry, built = counting(keep=2)
    dino, clip = registry.reuse("m", "dinov2"), registry.reuse("m", "clip")
    for _ in range(3):
        assert registry.reuse("m", "dinov2") is dino
        assert registry.reuse("m", "clip") is clip
    assert len(built) == 2


def test_threads_never_share_an_object():
    registry, built = counting()
    seen: list[object] = []
    threads = [threading.Thread(target=lambda: seen.append(registry.reuse("m", "sd"))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(x) for x in seen}) == 3
    assert len(built) == 3


@pytest.mark.parametrize(
    ("dtype", "precision"), [("auto", "fp32"), ("float32", "fp32"), ("float16", "fp16"), ("bfloat16", "bf16")]
)
def test_an_open_clip_embedders_dtype_is_the_precision_it_runs_in(dtype: str, precision: str):
    """EmbedderConfig.dtype reaches open_clip (it was silently ignored: every open_clip embedder ran in fp32)."""
    from t2ibench.models.registry import EMBEDDERS
    from t2ibench.specs import DTYPES, EmbedderConfig

    assert set(DTYPES) <= {"auto", "float32", "float16", "bfloat16"}  # every dtype a spec accepts is mapped
    spec = EmbedderConfig(backend="open_clip", model="ViT-B-32", pretrained="openai", dtype=dtype)
    assert EMBEDDERS.build("open_clip", spec, device="cpu", show_progress=False).precision == precision
