"""The built-in ``tiny-random`` smoke models: seeded random weights, built offline, saved like real checkpoints.

* a Stable-Diffusion-shaped pipeline: small UNet, VAE and CLIP text encoder from configs, and a real CLIP BPE
  tokenizer made from open_clip's bundled vocabulary (identical token ids to OpenAI's CLIP tokenizer);
* an 80-class COCO-instance Mask2Former (Swin backbone) with Hugging Face's label names;
* an open_clip model (registered from a config JSON) and its checkpoint file;
* a DINOv2 model and its image processor.

Each is saved once per seed under the model cache and then loaded through the same code path as real
checkpoints (``from_pretrained`` / open_clip ``pretrained=``). Their outputs are meaningless by construction;
everything made with them is labelled smoke.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

from t2ibench.errors import InputError
from t2ibench.models._torch import loads_models

TINY_RANDOM = "tiny-random"
TINY_RESOLUTION = 64


def clip_bpe_files(folder: Path) -> tuple[Path, Path]:
    """Write CLIP's vocab.json and merges.txt, built from open_clip's bundled BPE file, into ``folder``."""
    from open_clip.tokenizer import bytes_to_unicode, default_bpe

    folder.mkdir(parents=True, exist_ok=True)
    with gzip.open(default_bpe()) as fh:
        lines = fh.read().decode("utf-8").split("\n")[1 : 49152 - 256 - 2 + 1]
    merges = [tuple(line.split()) for line in lines]
    vocab = list(bytes_to_unicode().values())
    vocab += [v + "</w>" for v in vocab]
    vocab += ["".join(m) for m in merges]
    vocab += ["<|startoftext|>", "<|endoftext|>"]
    vocab_file, merges_file = folder / "vocab.json", folder / "merges.txt"
    vocab_file.write_text(json.dumps({token: i for i, token in enumerate(vocab)}), encoding="utf-8")
    merges_file.write_text("#version: 0.2\n" + "\n".join(" ".join(m) for m in merges) + "\n", encoding="utf-8")
    return vocab_file, merges_file


def default_model_cache() -> Path:
    """Where built-in models are saved: $T2IBENCH_CACHE/models, else ~/.cache/t2ibench/models."""
    root = os.environ.get("T2IBENCH_CACHE")
    return (Path(root) if root else Path.home() / ".cache" / "t2ibench") / "models"


def build_tiny_random(folder: Path, seed: int = 0) -> Path:
    """Build the tiny SD-style pipeline with weights from ``torch.manual_seed(seed)`` and save it to ``folder``."""
    import torch
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

    torch.manual_seed(seed)
    unet = UNet2DConditionModel(
        sample_size=TINY_RESOLUTION // 2,
        in_channels=4,
        out_channels=4,
        block_out_channels=(16, 32),
        layers_per_block=1,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=32,
        attention_head_dim=4,
        norm_num_groups=8,
    )
    vae = AutoencoderKL(
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
        block_out_channels=(16, 32),
        latent_channels=4,
        norm_num_groups=8,
        sample_size=TINY_RESOLUTION,
    )
    text_encoder = CLIPTextModel(
        CLIPTextConfig(
            vocab_size=49408,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            max_position_embeddings=77,
            bos_token_id=49406,
            eos_token_id=49407,
            pad_token_id=49407,
        )
    )
    vocab_file, merges_file = clip_bpe_files(folder / "_bpe")
    tokenizer = CLIPTokenizer(str(vocab_file), str(merges_file), pad_token="<|endoftext|>", model_max_length=77)
    scheduler = DDIMScheduler(
        beta_start=0.00085,
        beta_end=0.012,
        beta_schedule="scaled_linear",
        clip_sample=False,
        set_alpha_to_one=False,
        steps_offset=1,
    )
    pipe = StableDiffusionPipeline(
        unet=unet,
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        scheduler=scheduler,
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    pipe.save_pretrained(folder)  # type: ignore[attr-defined]  # diffusers' mixin methods are untyped
    return folder


@loads_models
def _ensure(kind: str, seed: int, build: Callable[[Path, int], object], cache: Path | None) -> Path:
    """The saved tiny model ``kind`` for ``seed``: built on first use into a staging folder, renamed into place."""
    root = cache or default_model_cache()
    target = root / f"{TINY_RANDOM}-{kind}-seed{seed}"
    if (target / "COMPLETE").exists():
        return target
    root.mkdir(parents=True, exist_ok=True)
    staging = root / f".{target.name}.{os.getpid()}.{threading.get_ident()}"  # threads of one process too
    shutil.rmtree(staging, ignore_errors=True)
    build(staging, seed)
    (staging / "COMPLETE").write_text(f"{TINY_RANDOM} {kind} seed {seed}: random weights, smoke outputs only\n")
    try:
        staging.rename(target)
    except OSError:  # another process won the race: use its copy
        shutil.rmtree(staging, ignore_errors=True)
    return target


def parse_tiny(name: str) -> int | None:
    """The seed of a 'tiny-random' or 'tiny-random:SEED' model name, or None for any other name."""
    if name == TINY_RANDOM:
        return 0
    if name.startswith(TINY_RANDOM + ":"):
        try:
            return int(name.split(":", 1)[1])
        except ValueError:
            raise InputError(f"{name!r}: the tiny-random seed must be an integer") from None
    return None


def ensure_tiny_random(seed: int = 0, cache: Path | None = None) -> Path:
    """The saved tiny Stable-Diffusion-shaped pipeline for ``seed``."""
    return _ensure("sd", seed, build_tiny_random, cache)


def ensure_tiny_mask2former(seed: int = 0, cache: Path | None = None) -> Path:
    """The saved tiny Mask2Former (model + image processor) for ``seed``."""
    return _ensure("mask2former", seed, build_tiny_mask2former, cache)


def ensure_tiny_dinov2(seed: int = 0, cache: Path | None = None) -> Path:
    """The saved tiny DINOv2 (model + image processor) for ``seed``."""
    return _ensure("dinov2", seed, build_tiny_dinov2, cache)


def ensure_tiny_open_clip(seed: int = 0, cache: Path | None = None) -> tuple[Path, Path]:
    """(model-config JSON, checkpoint file) of the tiny open_clip model for ``seed``."""
    folder = _ensure("open-clip", seed, build_tiny_open_clip, cache)
    return folder / f"{TINY_CLIP_ARCH}.json", folder / f"{TINY_CLIP_ARCH}.pt"


# Hugging Face's COCO-instance label names (note "mouse", "remote", "keyboard": GenEval renames them).
HF_COCO_LABELS = [
    "person",
    "bicycle",
    "car",
    "motorcycle",
    "airplane",
    "bus",
    "train",
    "truck",
    "boat",
    "traffic light",
    "fire hydrant",
    "stop sign",
    "parking meter",
    "bench",
    "bird",
    "cat",
    "dog",
    "horse",
    "sheep",
    "cow",
    "elephant",
    "bear",
    "zebra",
    "giraffe",
    "backpack",
    "umbrella",
    "handbag",
    "tie",
    "suitcase",
    "frisbee",
    "skis",
    "snowboard",
    "sports ball",
    "kite",
    "baseball bat",
    "baseball glove",
    "skateboard",
    "surfboard",
    "tennis racket",
    "bottle",
    "wine glass",
    "cup",
    "fork",
    "knife",
    "spoon",
    "bowl",
    "banana",
    "apple",
    "sandwich",
    "orange",
    "broccoli",
    "carrot",
    "hot dog",
    "pizza",
    "donut",
    "cake",
    "chair",
    "couch",
    "potted plant",
    "bed",
    "dining table",
    "toilet",
    "tv",
    "laptop",
    "mouse",
    "remote",
    "keyboard",
    "cell phone",
    "microwave",
    "oven",
    "toaster",
    "sink",
    "refrigerator",
    "book",
    "clock",
    "vase",
    "scissors",
    "teddy bear",
    "hair drier",
    "toothbrush",
]
TINY_CLIP_ARCH = "t2ibench-tiny-clip"


def build_tiny_mask2former(path: Path, seed: int = 0) -> Path:
    """An 80-class Mask2Former (Swin backbone) with random weights, saved with save_pretrained (+ processor)."""
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
        out_features=["stage1", "stage2", "stage3", "stage4"],  # type: ignore[call-arg]
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
        num_labels=80,  # type: ignore[call-arg]
        id2label=dict(enumerate(HF_COCO_LABELS)),
        label2id={n: i for i, n in enumerate(HF_COCO_LABELS)},
    )
    Mask2FormerForUniversalSegmentation(config).eval().save_pretrained(path)
    Mask2FormerImageProcessor(size={"shortest_edge": 64, "longest_edge": 96}).save_pretrained(path)
    return path


def build_tiny_open_clip(folder: Path, seed: int = 0) -> Path:
    """Register a tiny open_clip architecture (config JSON) and save a random-weight checkpoint beside it."""
    import open_clip
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "embed_dim": 16,
        "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "patch_size": 16, "head_width": 16},
        "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
    }
    config_file = folder / f"{TINY_CLIP_ARCH}.json"
    config_file.write_text(json.dumps(config))
    open_clip.add_model_config(config_file)
    torch.manual_seed(seed)
    model = open_clip.create_model(TINY_CLIP_ARCH)
    torch.save({"state_dict": model.state_dict()}, folder / f"{TINY_CLIP_ARCH}.pt")
    return folder


def build_tiny_dinov2(path: Path, seed: int = 0, *, crop: int = 32) -> Path:
    """A tiny DINOv2 (random weights) and its image processor, saved with save_pretrained."""
    import torch
    from transformers import BitImageProcessor, Dinov2Config, Dinov2Model

    torch.manual_seed(seed)
    config = Dinov2Config(
        hidden_size=32, num_hidden_layers=1, num_attention_heads=2, mlp_ratio=2, image_size=crop, patch_size=8
    )
    Dinov2Model(config).eval().save_pretrained(path)
    BitImageProcessor(
        size={"shortest_edge": crop}, crop_size={"height": crop, "width": crop}, do_center_crop=True
    ).save_pretrained(path)
    return path
