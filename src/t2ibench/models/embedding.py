"""Image and text embedders behind one protocol: OpenCLIP (images and texts) and DINOv2 (images), with caching.

Each is built from its spec (``t2ibench.specs.EmbedderConfig``), whole, and reads its fields from it.

* ``OpenCLIPEmbedder``: any open_clip architecture (the spec's ``model``) and ``pretrained`` tag or local checkpoint
  (ViT-L-14 / openai for CLIP). Texts longer than the context (77 tokens for CLIP) are truncated keeping the
  end-of-text token — CLIP reads the text feature at that token — and every truncated text is reported.
* ``DINOv2Embedder``: ``facebook/dinov2-base`` (or any id/directory) through transformers; ``pooling: cls`` is
  the final-layer-normed CLS token (transformers' ``pooler_output``), ``mean`` the mean of the patch tokens
  (register tokens excluded).

Both batch, show progress, choose device and dtype, and L2-normalise only when ``normalize: true`` (stated in
their identity, hence in the cache fingerprint). ``embed_images_cached`` and ``embed_texts_cached`` reuse vectors by
content (see ``t2ibench.embed_cache``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from t2ibench.embed_cache import EmbeddingCache, content_key, weights_checksum
from t2ibench.errors import InputError
from t2ibench.models._torch import loads_models, quiet_loading
from t2ibench.models.hub import Resolved
from t2ibench.progress import progress
from t2ibench.specs import EmbedderConfig, ModelSource
from t2ibench.suites.reference import ReferenceSet

ImageInput = str | Path | Any  # a path or a PIL image


@dataclass
class TextEmbeddings:
    """Text vectors (n, d) and the indices of texts that were truncated to fit the model's context."""

    vectors: NDArray[np.float32]
    truncated: list[int] = field(default_factory=list)


class Embedder(Protocol):
    """What the pipeline needs from an embedder (what ``EMBEDDERS`` builds): images always; texts from the backends
    that pair them (open_clip, mobilenet+structure) — the image-only ones (``ImagesOnly``) refuse texts."""

    def identity(self) -> dict[str, Any]:
        """Model id, revision or weights checksum, preprocessing, dtype, pooling, normalisation."""

    def embed_images(self, images: Sequence[ImageInput]) -> NDArray[np.float32]:
        """Vectors (n, d) for images given as paths or PIL images."""

    def tokenize(self, texts: Sequence[str]) -> tuple[Any, list[int]]:
        """The model's input for ``texts`` and the indices of the texts truncated to fit its context."""

    def embed_texts(self, texts: Sequence[str]) -> TextEmbeddings:
        """Text vectors (n, d) and which texts were truncated."""


class ImagesOnly:
    """Base of the embedders without a text side: asked for texts (e.g. named as ``evaluators.clip``, which pairs
    images with their prompts), they say so instead of failing on a missing method."""

    backend = "this embedder"

    def _refuse(self) -> InputError:
        return InputError(
            f"{self.backend} embeds images only; an embedder of prompts (evaluators.clip) needs a backend with a "
            "text side: open_clip or mobilenet+structure"
        )

    def tokenize(self, texts: Sequence[str]) -> tuple[Any, list[int]]:
        """Refused: an InputError naming the backends that embed texts."""
        raise self._refuse()

    def embed_texts(self, texts: Sequence[str]) -> TextEmbeddings:
        """Refused: an InputError naming the backends that embed texts."""
        raise self._refuse()


def _open_image(item: ImageInput) -> Any:
    from t2ibench.images import load_rgb, to_rgb

    if isinstance(item, (str, Path)):
        return load_rgb(item)[0]
    return to_rgb(item)[0]


def _normalize(x: NDArray[np.float32]) -> NDArray[np.float32]:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    out: NDArray[np.float32] = x / np.maximum(norms, 1e-12)
    return out


class OpenCLIPEmbedder:
    """OpenCLIP image and text embeddings of the spec's ``model`` (an architecture) and ``pretrained`` weights,
    L2-normalised when its ``normalize`` says so (see the module docstring)."""

    def __init__(
        self,
        spec: EmbedderConfig,
        *,
        device: str = "auto",
        precision: str = "fp32",
        batch_size: int = 32,
        show_progress: bool = True,
        checksum_memo: Path | None = None,
    ) -> None:
        self.spec = spec
        self.device_spec = device
        self.precision = precision
        self.batch_size = batch_size
        self.show_progress = show_progress
        self.checksum_memo = checksum_memo
        self._loaded: tuple[Any, Any, Any, Any] | None = None

    @loads_models
    def _load(self) -> tuple[Any, Any, Any, Any]:
        if self._loaded is None:
            from t2ibench.models.colour import load_open_clip_on

            self._loaded = load_open_clip_on(self.device_spec, self.spec.model, self.spec.pretrained, self.precision)
        return self._loaded

    def identity(self) -> dict[str, Any]:
        """Architecture, weights (tag, or checksum of a local file), preprocessing, precision, normalisation."""
        import open_clip

        _, preprocess, tokenizer, _ = self._load()
        from t2ibench.models.tiny import parse_tiny

        arch, weights = self.spec.model, self.spec.pretrained
        if parse_tiny(arch) is not None:
            weights = arch  # built deterministically from its seed
        elif weights and Path(weights).exists():
            weights = "sha256:" + weights_checksum(weights, memo=self.checksum_memo)
        arch = Path(arch).stem if arch.endswith(".json") else arch
        return {
            "embedder": "open_clip",
            "arch": arch,
            "weights": weights,
            "open_clip": open_clip.__version__,
            "preprocess": repr(preprocess),
            "context_length": getattr(tokenizer, "context_length", None),
            "precision": self.precision,
            "normalize": self.spec.normalize,
        }

    def embed_images(self, images: Sequence[ImageInput]) -> NDArray[np.float32]:
        """Image vectors (n, d), float32."""
        import torch

        model, preprocess, _, device = self._load()
        out = []
        bar = progress(len(images), "clip images", enabled=self.show_progress, unit="img")
        with bar, torch.inference_mode():  # the bar closes before an interruption's message
            for start in range(0, len(images), self.batch_size):
                batch = torch.stack([preprocess(_open_image(i)) for i in images[start : start + self.batch_size]])
                out.append(model.encode_image(batch.to(device)).float().cpu().numpy())
                bar.update(len(batch))
        vectors = np.concatenate(out) if out else np.zeros((0, 0), np.float32)
        return _normalize(vectors) if self.spec.normalize else vectors

    def tokenize(self, texts: Sequence[str]) -> tuple[Any, list[int]]:
        """Token ids (n, context) with the end-of-text token kept on truncation, and the truncated indices."""
        _, _, tokenizer, _ = self._load()
        tokens = tokenizer(list(texts))
        context = int(tokens.shape[1])
        truncated: list[int] = []
        eot = getattr(tokenizer, "eot_token_id", None)
        encode = getattr(tokenizer, "encode", None)
        if encode is not None and eot is not None:
            for i, text in enumerate(texts):
                if len(encode(text)) + 2 > context:  # start and end tokens around the text
                    truncated.append(i)
                    if int(tokens[i, -1]) != eot:  # open_clip keeps EOT; make sure whatever tokenizer we got does
                        tokens[i, -1] = eot
        return tokens, truncated

    def embed_texts(self, texts: Sequence[str]) -> TextEmbeddings:
        """Text vectors (n, d), float32, and which texts were truncated."""
        import torch

        model, _, _, device = self._load()
        tokens, truncated = self.tokenize(texts)
        out = []
        with torch.inference_mode():
            for start in range(0, len(texts), self.batch_size):
                out.append(model.encode_text(tokens[start : start + self.batch_size].to(device)).float().cpu().numpy())
        vectors = np.concatenate(out) if out else np.zeros((0, 0), np.float32)
        return TextEmbeddings(_normalize(vectors) if self.spec.normalize else vectors, truncated)


class DINOv2Embedder(ImagesOnly):
    """DINOv2 image embeddings through transformers of the spec's ``model``, with its ``pooling``, ``dtype`` and
    ``normalize`` (see the module docstring); ``revision`` pins a hub revision (not a config field)."""

    backend = "dinov2"

    def __init__(
        self,
        spec: EmbedderConfig,
        *,
        revision: str | None = None,
        device: str = "auto",
        batch_size: int = 32,
        show_progress: bool = True,
        checksum_memo: Path | None = None,
    ) -> None:
        self.spec = spec
        self.revision = revision
        self.device_spec = device
        self.batch_size = batch_size
        self.show_progress = show_progress
        self.checksum_memo = checksum_memo
        self._loaded: tuple[Any, Any, Any, Any] | None = None

    @loads_models
    def _load(self) -> tuple[Any, Any, Any, Any]:
        if self._loaded is None:
            from transformers import AutoImageProcessor, AutoModel

            from t2ibench.models._torch import resolve_device, resolve_dtype
            from t2ibench.models.tiny import ensure_tiny_dinov2, parse_tiny

            model_id = self.spec.model
            device = resolve_device(self.device_spec)
            dtype = resolve_dtype(self.spec.dtype, device)
            tiny_seed = parse_tiny(model_id)
            if tiny_seed is None:
                from t2ibench.models.hub import load_from

                resolved = load_from(ModelSource("model", model_id, self.revision), "image embedder")
            else:
                resolved = Resolved(str(ensure_tiny_dinov2(tiny_seed)))
            source, offline = resolved.source, resolved.local_files_only
            try:
                with quiet_loading():
                    processor = AutoImageProcessor.from_pretrained(
                        source, revision=self.revision, local_files_only=offline
                    )
                    model = AutoModel.from_pretrained(
                        source, revision=self.revision, dtype=dtype, local_files_only=offline
                    )
            except (OSError, ValueError) as exc:
                raise InputError(f"cannot load DINOv2 {model_id!r}: {exc}. Offline? Pass a local directory.") from None
            model.to(device).eval()
            self._loaded = (processor, model, device, dtype)
        return self._loaded

    def identity(self) -> dict[str, Any]:
        """Model id and revision (or checksum of a local directory), processor config, dtype, pooling, normalisation."""
        processor, model, _, _ = self._load()
        from t2ibench.models.tiny import parse_tiny

        model_id = self.spec.model
        if parse_tiny(model_id) is not None:
            weights = model_id  # built deterministically from its seed
        elif Path(model_id).exists():
            weights = "sha256:" + weights_checksum(model_id, memo=self.checksum_memo)
        else:
            weights = f"{model_id}@{self.revision or getattr(model.config, '_commit_hash', None) or 'main'}"
        return {
            "embedder": "dinov2",
            "weights": weights,
            "processor": processor.to_dict(),
            "dtype": self.spec.dtype,
            "pooling": self.spec.pooling,
            "normalize": self.spec.normalize,
        }

    def embed_images(self, images: Sequence[ImageInput]) -> NDArray[np.float32]:
        """Image vectors (n, hidden), float32."""
        import torch

        processor, model, device, dtype = self._load()
        registers = int(getattr(model.config, "num_register_tokens", 0) or 0)
        out = []
        bar = progress(len(images), "dinov2 images", enabled=self.show_progress, unit="img")
        with bar, torch.inference_mode():  # the bar closes before an interruption's message
            for start in range(0, len(images), self.batch_size):
                batch = [_open_image(i) for i in images[start : start + self.batch_size]]
                inputs = processor(images=batch, return_tensors="pt")
                outputs = model(pixel_values=inputs["pixel_values"].to(device=device, dtype=dtype))
                if self.spec.pooling == "cls":
                    pooled = outputs.pooler_output
                else:
                    pooled = outputs.last_hidden_state[:, 1 + registers :].mean(dim=1)
                out.append(pooled.float().cpu().numpy())
                bar.update(len(batch))
        vectors = np.concatenate(out) if out else np.zeros((0, 0), np.float32)
        return _normalize(vectors) if self.spec.normalize else vectors


def reference_sigma(embedder: Embedder, reference: ReferenceSet) -> tuple[float, int]:
    """σ of ``embedder``'s space (embedding units): the median pairwise distance (the median heuristic, seed 0) of
    its features of the fixed ``reference`` set (images or texts), and how many vectors it was taken over — what
    the refresh's ``sigma: reference`` and ``t2ibench diversity FILE`` on a refresh's features both use."""
    from t2ibench.metrics import median_heuristic_sigma

    if reference.kind == "image":
        vectors = embedder.embed_images(list(reference.images))
    else:
        vectors = embedder.embed_texts(list(reference.texts)).vectors
    X = np.asarray(vectors, dtype=np.float64)
    return float(median_heuristic_sigma(X, seed=0)), len(X)


def embed_images_cached(
    embedder: Any, paths: Sequence[str | Path], cache_root: str | Path | None
) -> tuple[NDArray[np.float32], EmbeddingCache | None]:
    """Image vectors for files, reusing cached vectors keyed by the files' bytes and the embedder's identity."""
    if cache_root is None:
        return embedder.embed_images(list(paths)), None
    cache = EmbeddingCache(cache_root, embedder.identity())
    keys = [content_key(Path(p)) for p in paths]
    vectors = cache.fetch(keys, lambda positions: embedder.embed_images([paths[i] for i in positions]))
    return vectors, cache


def embed_texts_cached(
    embedder: Any, texts: Sequence[str], cache_root: str | Path | None
) -> tuple[NDArray[np.float32], list[int], EmbeddingCache | None]:
    """Text vectors (and truncated indices), reusing cached vectors keyed by the text and the embedder's identity."""
    _, truncated = embedder.tokenize(texts)
    if cache_root is None:
        result = embedder.embed_texts(list(texts))
        return result.vectors, result.truncated, None
    cache = EmbeddingCache(cache_root, embedder.identity())
    keys = [content_key(t) for t in texts]
    vectors = cache.fetch(keys, lambda positions: embedder.embed_texts([texts[i] for i in positions]).vectors)
    return vectors, truncated, cache
