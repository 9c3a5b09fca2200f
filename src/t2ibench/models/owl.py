"""Open-vocabulary detection (registry ``OPEN_DETECTORS``): boxes for objects named by text, for benchmarks whose
prompts name objects outside a fixed label set (T2I-CompBench++'s 2-D spatial, 3-D spatial and numeracy categories,
where the reference's UniDet has no maintained loader).

``Owlv2Detector`` (registry name ``owlv2``) loads ``Owlv2ForObjectDetection`` through transformers —
``google/owlv2-base-patch16-ensemble`` by default, any hub id or local folder — and queries each image with one text per
object (the spec's ``query`` template, e.g. 'a photo of a dog'). Every box scoring at least the spec's ``threshold``
is kept, boxes of one label overlapping a higher-scoring one by IoU > ``nms`` are dropped (per-class NMS, as
detectron2's test-time NMS at 0.5), and the rest are returned best first, in the image's pixel coordinates (OWLv2 pads
the image to a square at its bottom and right; its boxes are scaled to that square's side, clipped to the image, and
one left under a pixel wide or tall — wholly in the padding, or degenerate — is dropped before NMS).
Each detection's label is the object name the query was made from.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from t2ibench.benchmarks.t2i_compbench.metrics import Detection
from t2ibench.models._torch import loads_models, quiet_loading, resolve_device
from t2ibench.models.pretrained import Pretrained
from t2ibench.specs import OpenDetectorConfig


class OpenVocabDetector(Protocol):
    """What ``OPEN_DETECTORS`` builds: detections of named objects in a PIL image."""

    def describe(self) -> dict[str, Any]:
        """Identity for the store: backend, model, revision, weights' checksum and the settings."""

    def detect(self, image: Any, names: Sequence[str]) -> list[Detection]:
        """The detections of ``names`` in the PIL ``image``, best first, boxes in its pixels."""


class Owlv2Detector(Pretrained):
    """OWLv2 through transformers (module docstring), built from its ``OpenDetectorConfig`` whole."""

    what = "detector"

    def __init__(self, spec: OpenDetectorConfig, *, device: str = "auto") -> None:
        from t2ibench.models.tiny_compbench import ensure_tiny_owlv2

        super().__init__(spec, ensure_tiny_owlv2, device=device)
        self._loaded: tuple[Any, Any, Any] | None = None

    @loads_models
    def _load(self) -> tuple[Any, Any, Any]:
        if self._loaded is None:
            from transformers import Owlv2ForObjectDetection, Owlv2Processor

            source, kwargs = self.resolved().source, self.pretrained_kwargs()
            try:
                with quiet_loading():
                    processor = Owlv2Processor.from_pretrained(source, **kwargs)
                    model = Owlv2ForObjectDetection.from_pretrained(source, **kwargs)
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise self.load_error(exc) from None
            device = resolve_device(self.device_spec)
            model.to(device).eval()
            self._loaded = (processor, model, device)
        return self._loaded

    def describe(self) -> dict[str, Any]:
        """Backend, model, revision and the resolved commit, weights' checksum, query template, score threshold and
        NMS IoU."""
        import transformers

        _, model, _ = self._load()
        return {
            "backend": "owlv2",
            "model": self.spec.model,
            "revision": self.spec.revision,
            "commit": self.commit(model),
            "weights": self.weights(),
            "query": self.spec.query,
            "threshold": self.spec.threshold,
            "nms": self.spec.nms,
            "transformers": transformers.__version__,
        }

    def detect(self, image: Any, names: Sequence[str]) -> list[Detection]:
        """Detections of ``names`` (deduplicated, in order) in the PIL ``image``, best first."""
        import torch
        from torchvision.ops import batched_nms

        processor, model, device = self._load()
        names = list(dict.fromkeys(names))
        if not names:
            return []
        rgb = image.convert("RGB")
        queries = [self.spec.query.format(name) for name in names]
        inputs = processor(text=[queries], images=rgb, return_tensors="pt").to(device)
        with torch.inference_mode():
            outputs = model(**inputs)
        side = max(rgb.width, rgb.height)
        found = processor.post_process_grounded_object_detection(
            outputs, threshold=self.spec.threshold, target_sizes=[(side, side)]
        )[0]
        boxes, scores, labels = found["boxes"].float().cpu(), found["scores"].float().cpu(), found["labels"].cpu()
        boxes[:, 0::2] = boxes[:, 0::2].clamp(0, rgb.width)
        boxes[:, 1::2] = boxes[:, 1::2].clamp(0, rgb.height)
        inside = (boxes[:, 2] - boxes[:, 0] >= 1) & (boxes[:, 3] - boxes[:, 1] >= 1)  # in the padding, or < 1 pixel
        boxes, scores, labels = boxes[inside], scores[inside], labels[inside]
        if len(scores):
            keep = batched_nms(boxes, scores, labels, self.spec.nms)
            boxes, scores, labels = boxes[keep], scores[keep], labels[keep]
        order = torch.argsort(scores, descending=True, stable=True)
        return [
            Detection(names[int(labels[i])], tuple(float(v) for v in boxes[i]), float(scores[i]))  # type: ignore[arg-type]
            for i in order.tolist()
        ]
