"""The built-in ``tiny-random`` smoke model: a Stable-Diffusion-shaped pipeline with seeded random weights.

Everything is built offline: a small UNet, VAE and CLIP text encoder from configs, and a real CLIP BPE tokenizer
made from open_clip's bundled vocabulary (identical token ids to OpenAI's CLIP tokenizer). The pipeline is
saved with ``save_pretrained`` once per seed and then loaded through the same ``DiffusionPipeline.from_pretrained``
path as real checkpoints. Its images are noise-like by construction; every output made with it is labelled smoke.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

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
    (folder / "T2IBENCH_SMOKE").write_text(f"tiny-random seed {seed}: random weights, smoke outputs only\n")
    return folder


def ensure_tiny_random(seed: int = 0, cache: Path | None = None) -> Path:
    """The saved tiny-random pipeline for ``seed`` (built on first use, atomically renamed into the cache)."""
    root = cache or default_model_cache()
    target = root / f"{TINY_RANDOM}-seed{seed}"
    if (target / "model_index.json").exists():
        return target
    root.mkdir(parents=True, exist_ok=True)
    staging = root / f".{TINY_RANDOM}-seed{seed}.{os.getpid()}"
    build_tiny_random(staging, seed)
    try:
        staging.rename(target)
    except OSError:  # another process won the race: use its copy
        import shutil

        shutil.rmtree(staging, ignore_errors=True)
    return target
