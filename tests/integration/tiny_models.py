"""Tiny random-weight models for tests: the library's own builders (``t2ibench.models.tiny``)."""

from t2ibench.models.tiny import (  # noqa: F401  (re-exported for the fixtures)
    HF_COCO_LABELS,
    TINY_CLIP_ARCH,
    build_tiny_dinov2,
    build_tiny_mask2former,
    build_tiny_open_clip,
)

TINY_CLIP = TINY_CLIP_ARCH
