"""BLIP VQA as a judge (registry name ``blip-vqa``): T2I-CompBench++'s attribute-binding evaluator.

``BlipVQAJudge`` loads ``BlipForQuestionAnswering`` through transformers — ``Salesforce/blip-vqa-capfilt-large`` (the
weights of the reference's ``model_base_vqa_capfilt_large.pth``), any hub id or local folder — and answers a
``JudgeRequest`` as the reference's ``vqa_prob`` inference does (BLIPvqa_eval/models/blip_vqa.py at 1b70949):

* the image opened as the reference's dataset opens it (``convert("RGB")``, no EXIF rotation), resized to 480 × 480
  (PIL bicubic), scaled to [0, 1] and normalised with CLIP's mean and standard deviation (the reference's test
  transform); the ViT's position embeddings are interpolated to 480 per forward pass (bicubic). The reference's
  checkpoint was fine-tuned at 480 (30 × 30 positions) and loads as it is; transformers' conversion of it is at 384,
  so its positions come back to 480 through two resamplings, and its vision LayerNorm eps is its config's (the
  reference's: 1e-6) — both recorded in ``describe()``: the probabilities are close to the reference's, not
  bit-equal (docs/t2i_compbench.md);
* the question tokenised by the model's BERT-uncased tokenizer (padded to the longest of its batch, at most 35
  tokens), its first token replaced by BLIP's [ENC] (id 30523), run through the text encoder over the image;
* the decoder run one step from BLIP's [DEC] (id 30522) over the question's states (its padding masked); the answer
  is the softmax over the whole vocabulary of that step's logits, float32, at the requested ids — the benchmark asks
  for 'yes' (2748) and 'no' (2053) and divides.

Batching groups ``batch_size`` questions per forward pass (the reference's batch: 32); padding is masked, so a
question's answer does not depend on its batch beyond float32 rounding.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from t2ibench.errors import InputError
from t2ibench.models._torch import loads_models, quiet_loading, resolve_device
from t2ibench.models.pretrained import Pretrained
from t2ibench.models.vqa import JudgeAnswer, JudgeRequest
from t2ibench.specs import VQAJudgeConfig

IMAGE_SIZE = 480  # the reference's configs/vqa.yaml
MAX_QUESTION_TOKENS = 35
ENC_TOKEN, DEC_TOKEN = 30523, 30522  # BLIP's init_tokenizer: [DEC] the bos token, [ENC] the additional special one
MEAN = (0.48145466, 0.4578275, 0.40821073)
STD = (0.26862954, 0.26130258, 0.27577711)


def plain_rgb(image: Any) -> Any:
    """The image as the reference's dataset opens it: ``Image.open(path).convert("RGB")`` (no EXIF rotation, alpha
    dropped), refused in one line when unreadable or of a degenerate size."""
    from PIL import Image

    from t2ibench.images import size_problem

    if not isinstance(image, (str, Path)):
        return image.convert("RGB")
    try:
        with Image.open(image) as raw:
            problem = size_problem(*raw.size)
            if problem is None:
                return raw.convert("RGB")
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
        raise InputError(f"{image}: unreadable image ({type(exc).__name__})") from None
    raise InputError(f"{image}: {problem}")


class BlipVQAJudge(Pretrained):
    """BLIP VQA answering questions with next-token probabilities (module docstring), built from its
    ``VQAJudgeConfig`` whole."""

    what = "VQA judge"

    def __init__(self, spec: VQAJudgeConfig, *, device: str = "auto") -> None:
        from t2ibench.models.tiny_compbench import ensure_tiny_blip_vqa

        super().__init__(spec, ensure_tiny_blip_vqa, device=device)
        self._loaded: tuple[Any, Any, Any] | None = None  # (model, tokenizer, device)

    @loads_models
    def _load(self) -> tuple[Any, Any, Any]:
        if self._loaded is None:
            import torch
            from transformers import AutoTokenizer, BlipForQuestionAnswering

            source, kwargs = self.resolved().source, self.pretrained_kwargs()
            dtype = None if self.spec.dtype == "auto" else getattr(torch, self.spec.dtype)
            try:
                with quiet_loading():
                    tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
                    model = BlipForQuestionAnswering.from_pretrained(source, dtype=dtype, **kwargs)
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise self.load_error(exc) from None
            vocab_size = int(getattr(model.config.text_config, "vocab_size", 0))
            if vocab_size <= ENC_TOKEN:
                raise self.refuse(f"its vocabulary ({vocab_size}) lacks BLIP's [ENC] token")
            device = resolve_device(self.device_spec)
            model.to(device).eval()
            self._loaded = (model, tokenizer, device)
        return self._loaded

    def describe(self) -> dict[str, Any]:
        """Identity for the store: backend, model, revision and the resolved commit, weights' checksum, dtype, the
        reference's constants."""
        import transformers

        model, _, _ = self._load()
        vision = model.config.vision_config
        return {
            "backend": "blip-vqa",
            "model": self.spec.model,
            "revision": self.spec.revision,
            "commit": self.commit(model),
            "weights": self.weights(),
            "dtype": self.spec.dtype,
            "transformers": transformers.__version__,
            "image_size": IMAGE_SIZE,
            "max_question_tokens": MAX_QUESTION_TOKENS,
            "first_token": ENC_TOKEN,
            "decoder_start": DEC_TOKEN,
            # the loaded vision tower's own settings: the reference's ViT is 480-pixel with LayerNorm eps 1e-6
            "vision_image_size": int(vision.image_size),
            "vision_layer_norm_eps": float(vision.layer_norm_eps),
        }

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without special tokens."""
        _, tokenizer, _ = self._load()
        return list(tokenizer.encode(text, add_special_tokens=False))

    def decode(self, token_id: int) -> str:
        """The text of one token id, special tokens kept."""
        _, tokenizer, _ = self._load()
        return str(tokenizer.decode([token_id]))

    def pixels(self, image: Any) -> Any:
        """The reference's test transform of one image: a (3, 480, 480) float32 tensor."""
        import numpy as np
        import torch
        from PIL import Image

        rgb = plain_rgb(image).resize((IMAGE_SIZE, IMAGE_SIZE), Image.Resampling.BICUBIC)
        tensor = torch.from_numpy(np.asarray(rgb, dtype=np.uint8).copy()).permute(2, 0, 1).float().div(255)
        mean = torch.tensor(MEAN).view(3, 1, 1)
        std = torch.tensor(STD).view(3, 1, 1)
        return tensor.sub(mean).div(std)

    def ask(self, requests: Sequence[JudgeRequest]) -> list[JudgeAnswer]:
        """One answer per request, in request order (``batch_size`` per forward pass)."""
        import torch

        model, tokenizer, device = self._load()
        dtype = next(model.parameters()).dtype
        answers: list[JudgeAnswer] = []
        for start in range(0, len(requests), self.spec.batch_size):
            batch = requests[start : start + self.spec.batch_size]
            pixels = torch.stack([self.pixels(r.image) for r in batch]).to(device=device, dtype=dtype)
            question = tokenizer([r.text for r in batch], padding="longest", truncation=True,
                                 max_length=MAX_QUESTION_TOKENS, return_tensors="pt").to(device)  # fmt: skip
            ids = question["input_ids"].clone()
            ids[:, 0] = ENC_TOKEN
            with torch.inference_mode():
                image = model.vision_model(pixel_values=pixels, interpolate_pos_encoding=True).last_hidden_state
                image_mask = torch.ones(image.shape[:-1], dtype=torch.long, device=device)
                states = model.text_encoder(input_ids=ids, attention_mask=question["attention_mask"],
                                            encoder_hidden_states=image, encoder_attention_mask=image_mask,
                                            return_dict=True).last_hidden_state  # fmt: skip
                start_ids = torch.full((len(batch), 1), DEC_TOKEN, dtype=torch.long, device=device)
                logits = model.text_decoder(input_ids=start_ids, encoder_hidden_states=states,
                                            encoder_attention_mask=question["attention_mask"],
                                            return_dict=True).logits[:, 0, :]  # fmt: skip
                probs = torch.softmax(logits.float(), dim=1)
            for row, request in zip(probs, batch, strict=True):
                top = int(torch.argmax(row))
                wanted = tuple(float(row[i]) for i in request.token_ids)
                answers.append(JudgeAnswer(wanted, top, str(tokenizer.decode([top]))))
        return answers
