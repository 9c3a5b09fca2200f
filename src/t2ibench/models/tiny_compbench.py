"""The built-in ``tiny-random`` models of T2I-CompBench++'s evaluators: seeded random weights, built offline, saved like
the real checkpoints and loaded through the same ``from_pretrained`` calls (``models.tiny`` builds the others).

* BLIP VQA (``BlipForQuestionAnswering``): a BERT-uncased-shaped WordPiece tokenizer made here (the prompts' words,
  'yes' at 2748 and 'no' at 2053 as in bert-base-uncased, BLIP's [DEC] at 30522 and [ENC] at 30523);
* OWLv2 (``Owlv2ForObjectDetection``) with a real CLIP BPE tokenizer (``models.tiny.clip_bpe_files``);
* DPT (``DPTForDepthEstimation``, hybrid like DPT-Hybrid: a small BiT backbone under the ViT).

Their outputs mean nothing; everything made with them is labelled smoke.
"""

from __future__ import annotations

import re
from pathlib import Path

from t2ibench.models.tiny import _ensure, clip_bpe_files, keep_bpe_files

BLIP_YES, BLIP_NO = 2748, 2053  # bert-base-uncased's ids of 'yes' and 'no' (BLIP's vqa_prob reads them)
BLIP_DEC, BLIP_ENC = 30522, 30523  # BLIP's added [DEC] (the decoder's start) and [ENC] (the question's first token)


def _blip_vocab() -> list[str]:
    """A 30,522-entry WordPiece vocabulary: BERT's special tokens and 'yes'/'no' at their ids, the suite's words."""
    from t2ibench.benchmarks.t2i_compbench.suite import load_suite

    vocab = [f"[unused{i}]" for i in range(30522)]
    for i, token in {0: "[PAD]", 100: "[UNK]", 101: "[CLS]", 102: "[SEP]", 103: "[MASK]", BLIP_NO: "no",
                     BLIP_YES: "yes"}.items():  # fmt: skip
        vocab[i] = token
    words = sorted({w for p in load_suite().prompts for w in re.findall(r"[a-z]+|[^a-z\s]", p.text.lower())})
    free = (i for i in range(1000, 30522) if vocab[i].startswith("[unused"))
    for word in words:
        if word not in ("yes", "no"):
            vocab[next(free)] = word
    return vocab


def build_tiny_blip_vqa(folder: Path, seed: int = 0) -> Path:
    """Build the tiny BLIP VQA model and its processor (tokenizer + image processor) into ``folder``."""
    import torch
    from transformers import (
        BertTokenizer,
        BlipConfig,
        BlipForQuestionAnswering,
        BlipImageProcessor,
        BlipProcessor,
    )

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = BertTokenizer(vocab={token: i for i, token in enumerate(_blip_vocab())}, do_lower_case=True)
    tokenizer.add_special_tokens({"bos_token": "[DEC]", "additional_special_tokens": ["[ENC]"]})
    if tokenizer.convert_tokens_to_ids(["[DEC]", "[ENC]", "yes", "no"]) != [BLIP_DEC, BLIP_ENC, BLIP_YES, BLIP_NO]:
        raise AssertionError("the tiny BLIP tokenizer does not hold BLIP's token ids")
    text = {"vocab_size": 30524, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
            "intermediate_size": 37, "max_position_embeddings": 64, "bos_token_id": BLIP_DEC, "pad_token_id": 0,
            "sep_token_id": 102}  # fmt: skip
    vision = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 37,
              "image_size": 32, "patch_size": 16}  # fmt: skip
    torch.manual_seed(seed)
    model = BlipForQuestionAnswering(BlipConfig(text_config=text, vision_config=vision)).eval()
    model.save_pretrained(folder)
    BlipProcessor(BlipImageProcessor(size={"height": 32, "width": 32}), tokenizer).save_pretrained(folder)
    return folder


def build_tiny_owlv2(folder: Path, seed: int = 0) -> Path:
    """Build the tiny OWLv2 detector and its processor (CLIP BPE tokenizer, 64-pixel image processor)."""
    import torch
    from transformers import (
        CLIPTokenizer,
        Owlv2Config,
        Owlv2ForObjectDetection,
        Owlv2ImageProcessor,
        Owlv2Processor,
    )

    folder.mkdir(parents=True, exist_ok=True)
    vocab, merges = clip_bpe_files(folder / "bpe")
    text = {"vocab_size": 49408, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
            "intermediate_size": 37, "max_position_embeddings": 16}  # fmt: skip
    # the real checkpoints' tokenizer knows its 16 text positions: the processor pads every query to them, so names
    # of different token lengths ("dog", "traffic light") make one batch (unbounded, they could not)
    tokenizer = CLIPTokenizer(str(vocab), str(merges), pad_token="!", model_max_length=text["max_position_embeddings"])
    vision = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 37,
              "image_size": 64, "patch_size": 16}  # fmt: skip
    torch.manual_seed(seed)
    model = Owlv2ForObjectDetection(Owlv2Config(text_config=text, vision_config=vision, projection_dim=32)).eval()
    model.save_pretrained(folder)
    Owlv2Processor(Owlv2ImageProcessor(size={"height": 64, "width": 64}), tokenizer).save_pretrained(folder)
    keep_bpe_files(folder, vocab, merges)  # the real checkpoints ship these two files too
    return folder


def build_tiny_dpt(folder: Path, seed: int = 0) -> Path:
    """Build the tiny DPT depth model into ``folder``: a hybrid one (a BiT backbone under the ViT) like
    DPT-Hybrid, made for 64-pixel inputs, so the 480-pixel input the adapter feeds exercises its resizing."""
    import torch
    from transformers import DPTConfig, DPTForDepthEstimation

    torch.manual_seed(seed)
    backbone = {"model_type": "bit", "global_padding": "same", "layer_type": "bottleneck", "depths": [1, 1, 1],
                "hidden_sizes": [64, 128, 256], "embedding_size": 16, "num_groups": 4,
                "out_features": ["stage1", "stage2", "stage3"], "embedding_dynamic_padding": True}  # fmt: skip
    config = DPTConfig(is_hybrid=True, hidden_size=32, num_hidden_layers=4, num_attention_heads=2, intermediate_size=37,
                       image_size=64, patch_size=16, backbone_out_indices=[0, 1, 2, 3],
                       neck_hidden_sizes=[64, 128, 32, 32], fusion_hidden_size=16,
                       backbone_featmap_shape=[1, 256, 4, 4], backbone_config=backbone)  # fmt: skip
    DPTForDepthEstimation(config).eval().save_pretrained(folder)
    return folder


def ensure_tiny_blip_vqa(seed: int = 0, cache: Path | None = None) -> Path:
    """The saved tiny BLIP VQA model for ``seed``."""
    return _ensure("blip-vqa", seed, build_tiny_blip_vqa, cache)


def ensure_tiny_owlv2(seed: int = 0, cache: Path | None = None) -> Path:
    """The saved tiny OWLv2 detector for ``seed``."""
    return _ensure("owlv2", seed, build_tiny_owlv2, cache)


def ensure_tiny_dpt(seed: int = 0, cache: Path | None = None) -> Path:
    """The saved tiny DPT depth model for ``seed``."""
    return _ensure("dpt", seed, build_tiny_dpt, cache)
