"""GenEval 2's judge: a vision-language model asked questions about images, answering with next-token probabilities.

``Qwen3VLJudge`` (registry name ``qwen3-vl``) loads Qwen3-VL through transformers — ``Qwen/Qwen3-VL-8B-Instruct``
by default, any hub id or local directory — on first use, and answers a ``JudgeRequest`` exactly as
facebookresearch/GenEval2's ``evaluation.py`` asks its judge: one user message holding the image, then the text (no
system message), rendered by the model's own chat template with the generation prompt; images opened with PIL,
``ImageOps.exif_transpose``, ``convert("RGB")``; the probabilities are the softmax over the whole vocabulary of the
last position's logits cast to float32 (what ``generate(max_new_tokens=1, do_sample=False, output_scores=True)``
returns as ``scores[0]``), and the top token is their argmax decoded with special tokens kept.

Batching (``ask``): requests are grouped by image (a path as given, or a PIL object), each image's questions in
their order. Each image is decoded and preprocessed once, and its prompt prefix — the user turn up to the image's
end, ``<|im_start|>user\\n<|vision_start|><|image_pad|>×N<|vision_end|>`` — runs through the model once, up to
``batch_size`` images per pass (right-padded: no real token attends to a pad, no pad row is fully masked); its
key/value cache is then shared by all of the image's questions, whose own tokens
(``{text}<|im_end|>\\n<|im_start|>assistant\\n``, a few dozen) run ``batch_size`` questions per forward pass, several
images' questions together (prefix caches left-padded to one length, questions left-padded, so the last position
is every row's last token). Positions: Qwen3-VL's 3-D M-RoPE positions of the prefix are the model's own
``get_rope_index`` (from the attention mask and ``image_grid_thw``); a question's tokens continue from the prefix's
next position (its largest + 1) on all three axes, which is how ``get_rope_index`` numbers text after an image.
The probabilities equal one question at a time, and the reference's single forward pass, within float32 rounding
(≤ 1e-5; tests/integration/test_vqa_judge.py). In bfloat16 any change of batching changes the rounding: the
answers then agree only to that dtype's precision. docs/models.md has what was tried and measured.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from t2ibench.embed_cache import weights_checksum
from t2ibench.errors import InputError
from t2ibench.models._torch import loads_models, quiet_loading, resolve_device
from t2ibench.models.hub import Resolved, load_from
from t2ibench.progress import progress
from t2ibench.specs import VQAJudgeConfig

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

    ImageInput = Path | str | PILImage
else:
    ImageInput = Any


@dataclass(frozen=True)
class JudgeRequest:
    """One question about one image: ``text`` is the whole user text ('How many dogs are in the image? Answer in one
    word.'), ``token_ids`` the vocabulary ids whose next-token probabilities are wanted (duplicates allowed)."""

    image: ImageInput
    text: str
    token_ids: tuple[int, ...]


@dataclass(frozen=True)
class JudgeAnswer:
    """The judge's answer to one request: the probability of each requested id, in order (softmax over the full
    vocabulary of the last position, float32), and the most probable next token (id, and text with specials kept)."""

    token_probabilities: tuple[float, ...]
    top_token: int
    top_text: str


class VQAJudge(Protocol):
    """What GenEval 2 needs from a judge (what ``VQA_JUDGES`` builds)."""

    def describe(self) -> dict[str, Any]:
        """Identity for the store: backend, model, revision and resolved commit, dtype, library version, template."""

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without special tokens."""

    def decode(self, token_id: int) -> str:
        """The text of one token id, special tokens kept."""

    def ask(self, requests: Sequence[JudgeRequest]) -> list[JudgeAnswer]:
        """One answer per request, in request order."""


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:297] + "..."


def open_image(image: ImageInput) -> Any:
    """The image as transformers' ``load_image`` gives it (PIL open, EXIF orientation applied, RGB); InputError
    naming an unreadable file or one of a degenerate size (``t2ibench.images.size_problem``)."""
    from PIL import Image, ImageOps

    from t2ibench.images import size_problem

    if isinstance(image, (str, Path)):
        path = Path(image)
        try:
            with Image.open(path) as raw:
                problem = size_problem(*raw.size)
                if problem is not None:
                    raise InputError(f"{path}: {problem}")
                raw.load()
                upright = ImageOps.exif_transpose(raw)
                return upright.convert("RGB")
        except InputError:
            raise
        except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
            raise InputError(f"{path}: unreadable image ({type(exc).__name__}: {_one_line(exc)})") from None
    if not isinstance(image, Image.Image):
        raise InputError(f"a judge request's image must be a file path or a PIL image, not {type(image).__name__}")
    problem = size_problem(*image.size)
    if problem is not None:
        raise InputError(f"a judge request's image: {problem}")
    return ImageOps.exif_transpose(image).convert("RGB")


@dataclass
class _Prefix:
    """One image's shared prompt prefix, run: its key/value cache per layer ((1, kv_heads, length, head_dim) each),
    its length and the M-RoPE position its first question token takes."""

    keys: list[Any]
    values: list[Any]
    length: int
    next_position: int


class Qwen3VLJudge:
    """Qwen3-VL as GenEval 2's judge (see the module docstring), built from its ``VQAJudgeConfig`` whole."""

    def __init__(self, spec: VQAJudgeConfig, *, device: str = "auto", show_progress: bool = False) -> None:
        self.spec = spec
        self.device_spec = device
        self.show_progress = show_progress
        self._processor: Any = None
        self._loaded: tuple[Any, Any] | None = None  # (model, device)
        self._template: tuple[str, str] | None = None  # the rendered prompt around the image token: (before, after)
        self._texts: dict[str, list[int]] = {}  # question text → its token ids after the image
        self._cache_keyword = "cache"
        self._weights: str | None = None  # checksum of a local model folder ('' for a hub id), once per judge
        self._source: Resolved | None = None  # what from_pretrained reads: the hub id or folder (tiny: its build)

    # -- loading ------------------------------------------------------------------------------------------------

    def _refuse(self, what: str) -> InputError:
        return InputError(f"VQA judge {self.spec.model!r}: {what}")

    def source(self) -> str:
        """The hub id or folder the judge loads: the spec's model, or for the built-in smoke judge 'tiny-random' /
        'tiny-random:SEED' its checkpoint folder, built once (``models.tiny``) and loaded the same way."""
        return self._resolved().source

    def _resolved(self) -> Resolved:
        """The source and whether only the local cache may be read (``models.hub``: a missing folder, or a hub id
        neither cached nor reachable, is refused here, before anything loads)."""
        if self._source is None:
            from t2ibench.models.tiny import ensure_tiny_qwen3_vl, parse_tiny

            seed = parse_tiny(self.spec.model)
            if seed is None:
                self._source = load_from(self.spec.hub_sources()[0], "VQA judge")
            else:
                import transformers  # noqa: F401  (loaded first, so that quiet_loading reaches its save bars)

                with quiet_loading():
                    self._source = Resolved(str(ensure_tiny_qwen3_vl(seed)))
        return self._source

    @loads_models
    def _load_processor(self) -> Any:
        if self._processor is None:
            from transformers import AutoProcessor

            resolved = self._resolved()  # a name that cannot be read is refused here, in its own words
            try:
                with quiet_loading():
                    processor = AutoProcessor.from_pretrained(
                        resolved.source, revision=self.spec.revision, local_files_only=resolved.local_files_only
                    )
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise self._refuse(
                    f"cannot load its processor: {_one_line(exc)}. Offline? Pass a local directory."
                ) from None
            tokenizer = getattr(processor, "tokenizer", None)
            if tokenizer is None or getattr(processor, "image_processor", None) is None:
                raise self._refuse(f"not a vision-language processor ({type(processor).__name__}, no image processor)")
            if not getattr(processor, "chat_template", None):
                raise self._refuse(
                    "the processor has no chat template (chat_template.jinja or chat_template.json): the judge "
                    "renders its prompts with the model's own template"
                )
            image_token = getattr(processor, "image_token", None)
            vocab = tokenizer.get_vocab()
            if image_token is None or image_token not in vocab:
                raise self._refuse(f"the tokenizer has no image token {image_token!r} (Qwen3-VL's is <|image_pad|>)")
            if tokenizer.encode(image_token, add_special_tokens=False) != [vocab[image_token]]:
                raise self._refuse(f"the tokenizer does not keep the image token {image_token!r} as one token")
            self._processor = processor
        return self._processor

    @loads_models
    def _load(self) -> tuple[Any, Any]:
        if self._loaded is None:
            processor = self._load_processor()
            import torch

            try:
                from transformers import Qwen3VLForConditionalGeneration
            except ImportError:
                import transformers

                raise self._refuse(
                    f"Qwen3-VL needs transformers ≥ 4.57 (installed: {transformers.__version__})"
                ) from None
            device = resolve_device(self.device_spec)
            options: dict[str, Any] = {
                "revision": self.spec.revision,
                "local_files_only": self._resolved().local_files_only,
                "dtype": "auto" if self.spec.dtype == "auto" else getattr(torch, self.spec.dtype),
            }
            if self.spec.attn_implementation is not None:
                options["attn_implementation"] = self.spec.attn_implementation
            try:
                with quiet_loading():
                    model = Qwen3VLForConditionalGeneration.from_pretrained(self.source(), **options)
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise self._refuse(
                    f"cannot load the model: {_one_line(exc)}. Offline? Pass a local directory."
                ) from None
            model.to(device).eval()
            image_token_id = processor.tokenizer.get_vocab()[processor.image_token]
            if model.config.image_token_id != image_token_id:
                raise self._refuse(
                    f"the model's image token id {model.config.image_token_id} is not the tokenizer's "
                    f"{processor.image_token} ({image_token_id})"
                )
            # transformers 5.x names the key/value cache argument ``cache`` (``past_key_values`` before)
            parameters = inspect.signature(model.forward).parameters
            self._cache_keyword = "cache" if "cache" in parameters else "past_key_values"
            self._loaded = (model, device)
        return self._loaded

    # -- identity and tokens ---------------------------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        """Backend, model, revision and the resolved commit (None for a local folder), dtype (asked and loaded),
        attention implementation, transformers version, and what shapes the prompt: template digest, image settings."""
        import torch
        import transformers

        processor = self._load_processor()
        model, device = self._load()
        if self._weights is None:  # a local folder: its files' checksum (a hub id: its resolved commit below)
            local = Path(self.source())
            self._weights = "sha256:" + weights_checksum(local) if local.is_dir() else ""
        template = processor.chat_template
        loaded = str(model.dtype).removeprefix("torch.")
        image_settings = processor.image_processor.to_dict()
        return {
            "backend": self.spec.backend,
            "model": self.spec.model,
            "revision": self.spec.revision,
            "commit": getattr(model.config, "_commit_hash", None),
            "weights": self._weights or None,
            "device": str(getattr(device, "type", device)),
            "torch": torch.__version__,
            "dtype": self.spec.dtype,
            "loaded_dtype": loaded,
            "attn_implementation": getattr(model.config, "_attn_implementation", None),
            "transformers": transformers.__version__,
            "chat_template_sha256": hashlib.sha256(str(template).encode("utf-8")).hexdigest(),
            "image_processor": {k: v for k, v in image_settings.items() if not k.startswith("_")},
            # how questions share passes: in float32 any batch size gives the one-at-a-time answers within 1e-5
            # (tested); in bfloat16/float16 the rounding depends on it (up to 1.5e-2 in probability on the
            # tiny judge: benchmarks/vqa_batching.py), so there the batch size is part of what produced the numbers
            "batching": "shared-prefix",
            "batch_size": None if loaded == "float32" else self.spec.batch_size,
        }

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without special tokens (the first is what GenEval 2 reads an answer variant by)."""
        ids: list[int] = self._load_processor().tokenizer.encode(text, add_special_tokens=False)
        return ids

    def decode(self, token_id: int) -> str:
        """The text of one token id with special tokens kept (the reference's ``batch_decode([argmax])``)."""
        text: str = self._load_processor().tokenizer.decode([token_id])
        return text

    # -- prompts -----------------------------------------------------------------------------------------------------

    def _render(self, text: str) -> str:
        """The chat template's prompt for one user message: the image, then ``text``, with the generation prompt."""
        messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text}]}]
        rendered: str = self._load_processor().apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return rendered

    def _split_template(self) -> tuple[list[int], list[int]]:
        """Token ids of the prompt before the one image token and after it up to the question (the image's shared
        prefix, less its N placeholder tokens), found by rendering two probe questions."""
        if self._template is None:
            processor = self._load_processor()
            image_token = processor.image_token
            probes = [self._render(text) for text in ("A", "B b")]
            for rendered in probes:
                if rendered.count(image_token) != 1:
                    count = rendered.count(image_token)
                    raise self._refuse(f"its chat template renders {count} image tokens for one image")
            (before, after), (before_2, after_2) = (rendered.split(image_token) for rendered in probes)
            if before != before_2:
                raise self._refuse("its chat template puts question-dependent text before the image")
            end = 0
            while end < min(len(after), len(after_2)) and after[end] == after_2[end]:
                end += 1
            self._template = (before, after[:end])
        processor = self._load_processor()
        before, closing = self._template
        head = processor.tokenizer(before)["input_ids"]
        tail = processor.tokenizer(closing, add_special_tokens=False)["input_ids"] if closing else []
        return list(head), list(tail)

    def _question_ids(self, text: str, head: list[int], tail: list[int]) -> list[int]:
        """The token ids of the prompt after the image's end, for question ``text`` (checked to be exactly the
        tokenization of the whole prompt, split there)."""
        ids = self._texts.get(text)
        if ids is None:
            processor = self._load_processor()
            rendered = self._render(text)
            full: list[int] = processor.tokenizer(rendered)["input_ids"]
            image_id = processor.tokenizer.get_vocab()[processor.image_token]
            prefix = [*head, image_id, *tail]
            if full[: len(prefix)] != prefix or image_id in full[len(prefix) :]:
                raise self._refuse(f"its prompt for {text!r} does not split after the image (template or tokenizer)")
            ids = full[len(prefix) :]
            if not ids:
                raise self._refuse(f"its prompt for {text!r} ends at the image")
            self._texts[text] = ids
        return ids

    # -- asking --------------------------------------------------------------------------------------------------

    def ask(self, requests: Sequence[JudgeRequest]) -> list[JudgeAnswer]:
        """One answer per request, in request order; up to ``batch_size`` questions per forward pass (see the module
        docstring)."""
        if not requests:
            return []
        import torch

        model, _ = self._load()
        vocab_size = int(model.lm_head.out_features)
        for i, request in enumerate(requests):
            if not isinstance(request.text, str) or not request.text.strip():
                raise InputError(f"judge request {i}: the question text is empty")
            for token in request.token_ids:
                if not isinstance(token, int) or not 0 <= token < vocab_size:
                    raise InputError(
                        f"judge request {i}: token id {token!r} is outside the vocabulary [0, {vocab_size})"
                    )
        head, tail = self._split_template()
        question_ids = [self._question_ids(r.text, head, tail) for r in requests]

        # group by image, in order of first appearance; rows are (image index, request index)
        image_of: dict[Any, int] = {}
        images: list[ImageInput] = []
        for request in requests:
            if _key(request.image) not in image_of:
                image_of[_key(request.image)] = len(images)
                images.append(request.image)
        index = [image_of[_key(r.image)] for r in requests]
        rows = sorted(range(len(requests)), key=lambda i: index[i])  # stable: each image's questions in order
        last_row_of = {index[i]: n for n, i in enumerate(rows)}

        answers: list[JudgeAnswer | None] = [None] * len(requests)
        prefixes: dict[int, _Prefix] = {}  # image index → its run prefix, while questions of it remain
        pending = list(dict.fromkeys(index[i] for i in rows))  # images whose prefix is still to run, in row order
        size = self.spec.batch_size
        bar = progress(len(requests), "judge questions", enabled=self.show_progress, unit="q")
        with bar, torch.inference_mode():
            for start in range(0, len(rows), size):
                chunk = rows[start : start + size]
                chunk_images = list(dict.fromkeys(index[i] for i in chunk))
                if any(k not in prefixes for k in chunk_images):  # this chunk's new images and the next ones
                    ahead, pending = pending[:size], pending[size:]
                    prefixes.update(zip(ahead, self._run_prefixes([images[k] for k in ahead], head, tail), strict=True))
                probs = self._run_questions(
                    [prefixes[k] for k in chunk_images],
                    [chunk_images.index(index[i]) for i in chunk],
                    [question_ids[i] for i in chunk],
                )
                flat_rows = [r for r, i in enumerate(chunk) for _ in requests[i].token_ids]
                flat_ids = [t for i in chunk for t in requests[i].token_ids]
                picked = probs[flat_rows, flat_ids].tolist() if flat_ids else []
                top = probs.argmax(dim=-1).tolist()
                offset = 0
                for r, i in enumerate(chunk):
                    n = len(requests[i].token_ids)
                    token = int(top[r])
                    answers[i] = JudgeAnswer(tuple(picked[offset : offset + n]), token, self.decode(token))
                    offset += n
                for k in chunk_images:  # an image whose last question has run frees its cache
                    if last_row_of[k] < start + size:
                        del prefixes[k]
                bar.update(len(chunk))
        return [a for a in answers if a is not None]

    def _run_prefixes(self, images: list[ImageInput], head: list[int], tail: list[int]) -> list[_Prefix]:
        """Run the images' prompt prefixes (head, each image's N placeholder tokens, tail) through the model together,
        right-padded (no real token ever attends to a pad, no pad to nothing); each keeps its own cache, pads cut off,
        its length and the M-RoPE position after it (the model's ``get_rope_index``: last position + 1)."""
        import torch

        processor = self._load_processor()
        model, device = self._load()
        image_id = processor.tokenizer.get_vocab()[processor.image_token]
        merge = processor.image_processor.merge_size
        features = processor.image_processor(images=[open_image(image) for image in images], return_tensors="pt")
        grid_thw = features["image_grid_thw"]
        sequences = [[*head, *[image_id] * (int(grid.prod()) // merge**2), *tail] for grid in grid_thw]
        width = max(len(s) for s in sequences)
        input_ids = torch.full((len(images), width), processor.tokenizer.pad_token_id or 0, dtype=torch.long)
        mask = torch.zeros((len(images), width), dtype=torch.long)
        for b, sequence in enumerate(sequences):
            input_ids[b, : len(sequence)] = torch.tensor(sequence)
            mask[b, : len(sequence)] = 1
        input_ids, mask, grid_thw = input_ids.to(device), mask.to(device), grid_thw.to(device)
        mm_types = (input_ids == image_id).long()
        positions, deltas = model.model.get_rope_index(
            input_ids, mm_token_type_ids=mm_types, image_grid_thw=grid_thw, attention_mask=mask
        )
        out = model.model(
            input_ids=input_ids,
            attention_mask=mask,
            position_ids=positions,
            pixel_values=features["pixel_values"].to(device),
            image_grid_thw=grid_thw,
            mm_token_type_ids=mm_types,
            use_cache=True,
        )
        cache = out.cache if hasattr(out, "cache") else out.past_key_values
        layers = [(layer.keys, layer.values) for layer in cache.layers]
        return [
            _Prefix(
                keys=[k[b : b + 1, :, : len(sequence)] for k, _ in layers],
                values=[v[b : b + 1, :, : len(sequence)] for _, v in layers],
                length=len(sequence),
                next_position=len(sequence) + int(deltas[b]),
            )
            for b, sequence in enumerate(sequences)
        ]

    def _run_questions(self, prefixes: list[_Prefix], prefix_of: list[int], questions: list[list[int]]) -> Any:
        """Next-token probabilities (rows, vocab), float32, of each question's tokens (row r) after its image's prefix
        (``prefixes[prefix_of[r]]``): the prefixes' caches copied into the rows of their questions, left-padded to
        one length; the questions left-padded, their positions continuing the prefix's on all three M-RoPE axes."""
        import torch
        from transformers import DynamicCache

        processor = self._load_processor()
        model, device = self._load()
        rows, past, width = len(questions), max(p.length for p in prefixes), max(len(q) for q in questions)
        input_ids = torch.full((rows, width), processor.tokenizer.pad_token_id or 0, dtype=torch.long)
        mask = torch.zeros((rows, past + width), dtype=torch.long)
        positions = torch.zeros((rows, width), dtype=torch.long)
        for r, question in enumerate(questions):
            prefix, n = prefixes[prefix_of[r]], len(question)
            input_ids[r, width - n :] = torch.tensor(question)
            mask[r, past - prefix.length : past] = 1
            mask[r, past + width - n :] = 1
            positions[r, width - n :] = torch.arange(prefix.next_position, prefix.next_position + n)
        members = [torch.tensor([r for r in range(rows) if prefix_of[r] == p]) for p in range(len(prefixes))]
        layers = []
        for layer in range(len(prefixes[0].keys)):
            like = prefixes[0].keys[layer]
            keys = like.new_zeros((rows, like.shape[1], past, like.shape[3]))
            values = like.new_zeros((rows, like.shape[1], past, like.shape[3]))
            for prefix, rows_of in zip(prefixes, members, strict=True):
                keys[rows_of.to(keys.device), :, past - prefix.length :] = prefix.keys[layer]
                values[rows_of.to(keys.device), :, past - prefix.length :] = prefix.values[layer]
            layers.append((keys, values))
        out = model(
            input_ids=input_ids.to(device),
            attention_mask=mask.to(device),
            position_ids=positions.to(device)[None].expand(3, -1, -1),
            logits_to_keep=1,
            **{self._cache_keyword: DynamicCache(layers)},
        )
        return torch.softmax(out.logits[:, -1].to(torch.float32), dim=-1)


def _key(image: ImageInput) -> Any:
    """What groups requests by image: the path as given, or the PIL object itself."""
    return ("path", str(Path(image))) if isinstance(image, (str, Path)) else id(image)
