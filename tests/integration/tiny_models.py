"""Tiny random-weight models, built offline and saved the way real checkpoints are, for the production loaders."""

from __future__ import annotations

import json
from pathlib import Path

# Hugging Face's COCO-instance label names (note "mouse", "remote", "keyboard": GenEval renames them).
HF_COCO_LABELS = [
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat", "traffic light",
    "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog", "horse", "sheep", "cow",
    "elephant", "bear", "zebra", "giraffe", "backpack", "umbrella", "handbag", "tie", "suitcase", "frisbee",
    "skis", "snowboard", "sports ball", "kite", "baseball bat", "baseball glove", "skateboard", "surfboard",
    "tennis racket", "bottle", "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple",
    "sandwich", "orange", "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair", "couch",
    "potted plant", "bed", "dining table", "toilet", "tv", "laptop", "mouse", "remote", "keyboard",
    "cell phone", "microwave", "oven", "toaster", "sink", "refrigerator", "book", "clock", "vase", "scissors",
    "teddy bear", "hair drier", "toothbrush",
]  # fmt: skip

TINY_CLIP = "t2ibench-tiny-clip"


def build_tiny_mask2former(path: Path, seed: int = 0) -> Path:
    """A 80-class Mask2Former (Swin backbone) with random weights, saved with save_pretrained (+ processor)."""
    import torch
    from transformers import (
        Mask2FormerConfig,
        Mask2FormerForUniversalSegmentation,
        Mask2FormerImageProcessor,
        SwinConfig,
    )

    torch.manual_seed(seed)
    backbone = SwinConfig(
        image_size=64,
        patch_size=4,
        embed_dim=16,
        depths=[1, 1, 1, 1],
        num_heads=[1, 1, 2, 2],
        window_size=4,
        out_features=["stage1", "stage2", "stage3", "stage4"],
    )
    config = Mask2FormerConfig(
        backbone_config=backbone,
        feature_size=32,
        mask_feature_size=32,
        hidden_dim=32,
        encoder_feedforward_dim=64,
        encoder_layers=1,
        decoder_layers=2,
        num_attention_heads=2,
        dim_feedforward=64,
        num_queries=12,
        num_labels=80,
        id2label=dict(enumerate(HF_COCO_LABELS)),
        label2id={n: i for i, n in enumerate(HF_COCO_LABELS)},
    )
    model = Mask2FormerForUniversalSegmentation(config).eval()
    model.save_pretrained(path)
    Mask2FormerImageProcessor(size={"shortest_edge": 64, "longest_edge": 96}).save_pretrained(path)
    return path


def build_tiny_open_clip(folder: Path, seed: int = 0) -> Path:
    """Register a tiny open_clip architecture and save a random-weight checkpoint; returns the checkpoint path."""
    import open_clip
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "embed_dim": 16,
        "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "patch_size": 16, "head_width": 16},
        "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
    }
    (folder / f"{TINY_CLIP}.json").write_text(json.dumps(config))
    open_clip.add_model_config(folder / f"{TINY_CLIP}.json")
    torch.manual_seed(seed)
    model = open_clip.create_model(TINY_CLIP)
    checkpoint = folder / f"{TINY_CLIP}.pt"
    torch.save({"state_dict": model.state_dict()}, checkpoint)
    return checkpoint


def build_tiny_dinov2(path: Path, seed: int = 0, *, crop: int = 32) -> Path:
    """A tiny DINOv2 (random weights) and its image processor, saved with save_pretrained."""
    import torch
    from transformers import BitImageProcessor, Dinov2Config, Dinov2Model

    torch.manual_seed(seed)
    config = Dinov2Config(
        hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64, image_size=crop, patch_size=8
    )
    Dinov2Model(config).eval().save_pretrained(path)
    BitImageProcessor(
        size={"shortest_edge": crop}, crop_size={"height": crop, "width": crop}, do_center_crop=True
    ).save_pretrained(path)
    return path
