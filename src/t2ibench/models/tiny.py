"""The built-in ``tiny-random`` smoke models: seeded random weights, built offline, saved like real checkpoints.

* a Stable-Diffusion-shaped pipeline: small UNet, VAE and CLIP text encoder from configs, and a real CLIP BPE
  tokenizer made from open_clip's bundled vocabulary (identical token ids to OpenAI's CLIP tokenizer), saved as
  vocab.json + merges.txt like SD 1.x checkpoints;
* an 80-class COCO-instance Mask2Former (Swin backbone) with Hugging Face's label names;
* an open_clip model (registered from a config JSON) and its checkpoint file;
* a DINOv2 model and its image processor;
* a Qwen3-VL judge (``build_tiny_qwen3_vl``): a byte-level BPE tokenizer trained here on GenEval 2-style questions
  with Qwen's special tokens, Qwen3-VL's processor settings (small pixel bounds) and chat format, random weights.

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
from t2ibench.specs import TINY_RANDOM

TINY_RESOLUTION = 32
"""The tiny SD pipeline's image side (px); 32, not 64: its UNet runs on 16×16 latents, a smoke image costs less than
half as much."""
# The builders' format, part of each saved model's folder name: bumped whenever a builder saves different files, so
# a model cached by an older builder (whose files, and so weights checksum and identity, differ) is built anew
# (2: the CLIP BPE tokenizers saved as vocab.json + merges.txt instead of tokenizer.json; 3: the OWLv2 tokenizer's
# model_max_length is its 16 text positions; 4: the SD pipeline makes 32 px images, its UNet with 2 attention heads)
TINY_BUILD = 4


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
        attention_head_dim=2,  # diffusers' name for the number of heads: 2 of 16 dimensions (4 of 8 are slower on CPU)
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
    pipe.save_pretrained(folder)
    keep_bpe_files(folder / "tokenizer", vocab_file, merges_file)
    return folder


def keep_bpe_files(saved: Path, vocab_file: Path, merges_file: Path) -> None:
    """Leave a saved CLIP BPE tokenizer in ``saved`` as vocab.json + merges.txt (``clip_bpe_files``' two files, moved
    there; their scratch folder removed) instead of save_pretrained's tokenizer.json: the layout SD 1.x checkpoints
    ship, the same token ids, and a load several times faster (tokenizer.json is parsed twice in Python)."""
    scratch = vocab_file.parent
    (saved / "tokenizer.json").unlink()
    vocab_file.replace(saved / "vocab.json")
    merges_file.replace(saved / "merges.txt")
    shutil.rmtree(scratch)


@loads_models
def _ensure(kind: str, seed: int, build: Callable[[Path, int], object], cache: Path | None) -> Path:
    """The saved tiny model ``kind`` for ``seed``: built on first use into a staging folder, renamed into place."""
    root = cache or default_model_cache()
    target = root / f"{TINY_RANDOM}-{kind}-seed{seed}-b{TINY_BUILD}"  # a cache from an older builder is not reused
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


def ensure_tiny_qwen3_vl(seed: int = 0, cache: Path | None = None) -> Path:
    """The saved tiny Qwen3-VL judge (model, tokenizer, processor, chat template) for ``seed``."""
    return _ensure("qwen3-vl", seed, build_tiny_qwen3_vl, cache)


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


# -- a tiny Qwen3-VL judge --------------------------------------------------------------------------------------------

# Qwen's special tokens, in the hub tokenizer's order (ids follow the trained vocabulary here, not Qwen's 151643…)
QWEN_SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
)
# Qwen3-VL's chat format for user/assistant turns (no default system message), images and texts in content order;
# with add_generation_prompt a user turn renders as
# '<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>{text}<|im_end|>\n<|im_start|>assistant\n'
TINY_QWEN3_VL_CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' }}"
    "{%- if message['content'] is string %}{{- message['content'] }}"
    "{%- else %}{%- for content in message['content'] %}"
    "{%- if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{{- '<|vision_start|><|image_pad|><|vision_end|>' }}"
    "{%- elif 'text' in content %}{{- content['text'] }}{%- endif %}"
    "{%- endfor %}{%- endif %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
TINY_QWEN3_VL_PIXELS = (32 * 32 * 4, 32 * 32 * 64)  # min, max pixels: 4 to 64 image tokens per image


def _judge_corpus() -> list[str]:
    """GenEval 2-style questions and the answer words, the corpus the tiny judge's BPE is trained on."""
    words = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
    objects = ["dogs", "cats", "bicycles", "cows", "pigs", "backpacks", "cars", "birds", "clocks", "benches"]
    corpus = []
    for name in objects:
        corpus += [
            f"How many {name} are in the image? Answer in one word.",
            f"Are there any {name} in the image? Answer in one word.",
            f"Is the {name[:-1]} green? Answer in one word.",
            f'Does this image show "a green {name[:-1]}"? Answer the question with Yes or No.',
        ]
    answers = [*words, *(w.capitalize() for w in words), *map(str, range(11)), "Yes", "yes", "No", "no", "other"]
    corpus += [" ".join(answers), " ".join(reversed(answers))]
    return corpus


def build_tiny_qwen3_vl(folder: Path, seed: int = 0) -> Path:
    """A complete Qwen3-VL checkpoint folder with random weights from ``torch.manual_seed(seed)``: config and
    weights, a Qwen2 tokenizer (byte-level BPE trained here, Qwen's special tokens), Qwen3VLProcessor with the hub's
    image settings (patch 16, merge 2, temporal patch 2, mean/std 0.5) but 4–24 image tokens, and a chat template
    rendering Qwen3-VL's format; loads with AutoProcessor / Qwen3VLForConditionalGeneration.from_pretrained."""
    import torch
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import Qwen2Tokenizer, Qwen3VLConfig, Qwen3VLForConditionalGeneration, Qwen3VLProcessor
    from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor
    from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor

    folder.mkdir(parents=True, exist_ok=True)
    bpe = Tokenizer(models.BPE())  # Qwen2's normaliser and pre-tokeniser, so the merges fit its splits
    bpe.normalizer = normalizers.NFC()
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1000, min_frequency=1, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    bpe.train_from_iterator(_judge_corpus(), trainer)
    trained = json.loads(bpe.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in trained["merges"]]
    # merges as pairs: what tokenizers' BPE takes (the annotation says strings, which it refuses)
    tokenizer = Qwen2Tokenizer(vocab=trained["vocab"], merges=merges, model_max_length=32768)
    tokenizer.add_special_tokens({"additional_special_tokens": list(QWEN_SPECIAL_TOKENS[1:])})
    ids = {token: tokenizer.get_vocab()[token] for token in QWEN_SPECIAL_TOKENS}

    min_pixels, max_pixels = TINY_QWEN3_VL_PIXELS
    vision_settings = {"patch_size": 16, "temporal_patch_size": 2, "merge_size": 2}
    image_processor = Qwen2VLImageProcessor(
        size={"shortest_edge": min_pixels, "longest_edge": max_pixels},
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
        **vision_settings,
    )
    video_processor = Qwen3VLVideoProcessor(
        size={"shortest_edge": min_pixels, "longest_edge": max_pixels},
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
        **vision_settings,
    )
    processor = Qwen3VLProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        video_processor=video_processor,
        chat_template=TINY_QWEN3_VL_CHAT_TEMPLATE,
    )

    vocab_size = -(-len(tokenizer) // 64) * 64  # padded with unused rows, as Qwen's 151936 over its 151669 tokens
    config = Qwen3VLConfig(
        text_config={
            "vocab_size": vocab_size,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 16,
            "max_position_embeddings": 4096,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 5_000_000.0,
                "mrope_section": [4, 2, 2],
                "mrope_interleaved": True,
            },
            "initializer_range": 0.2,  # spread logits: probabilities that differ, a top token that means something
            "eos_token_id": ids["<|im_end|>"],
        },
        vision_config={
            "depth": 2,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_heads": 2,
            "out_hidden_size": 32,
            "num_position_embeddings": 64,
            "deepstack_visual_indexes": [0],
            "initializer_range": 0.2,
            "patch_size": 16,
            "temporal_patch_size": 2,
            "spatial_merge_size": 2,
        },
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = Qwen3VLForConditionalGeneration(config).eval()
    with torch.no_grad():  # sharper next-token distributions: top probabilities ~0.2-0.8 rather than ~0.03
        model.lm_head.weight.mul_(4.0)
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder
