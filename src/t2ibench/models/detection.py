"""Instance detectors for GenEval: Hugging Face Mask2Former (default) and GenEval's own mmdet model (optional).

Both return, per image, ``DetectionSet``: detections labelled in the caller's ``LabelSpace`` (GenEval's 80 class
names, when GenEval builds them; the model's own labels without one), boxes
(x1, y1, x2, y2) in pixels of the original image, confidences, and one boolean mask per detection (the colour
classifier crops with it). The verdict engine (``t2ibench.benchmarks.geneval.metrics``) applies the score thresholds.

Hugging Face post-processing follows mmdet's Mask2Former instance head, which GenEval used: the top
``max_per_image`` (query, class) pairs by class probability (softmax without the no-object class); each
query's mask logits are upsampled to the padded input, cropped to the resized image, resized to the original
image (bilinear) and thresholded at 0; the score is class probability × mean sigmoid inside the mask; the
box is the mask's tight bounding box (x2, y2 exclusive, as mmdet's ``mask2bbox``). Transformers' own
``post_process_instance_segmentation`` instead rescales masks to 384×384 first, which coarsens boxes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from t2ibench.errors import InputError
from t2ibench.models._torch import loads_models, quiet_loading
from t2ibench.specs import DetectorConfig, ModelSource
from t2ibench.vision import Detection, LabelSpace

# mmdetection's Mask2Former Swin-S, 8×2 batch, LSJ 50 epochs, COCO: the detector GenEval published its scores with.
MMDET_MASK2FORMER_CONFIG = "mask2former_swin-s-p4-w7-224_lsj_8x2_50e_coco.py"
MMDET_MASK2FORMER_CHECKPOINT = (
    "https://download.openmmlab.com/mmdetection/v2.0/mask2former/"
    "mask2former_swin-s-p4-w7-224_lsj_8x2_50e_coco/mask2former_swin-s-p4-w7-224_lsj_8x2_50e_coco_20220504_001756-743b7d99.pth"
)


@dataclass
class DetectionSet:
    """Detections of one image and their masks (k, H, W) booleans, indexed by ``Detection.ref``."""

    detections: list[Detection]
    masks: NDArray[np.bool_] | None = None
    image_size: tuple[int, int] = (0, 0)  # (width, height)
    meta: dict[str, Any] = field(default_factory=dict)
    # backends without mask output derive a mask on demand (e.g. GrabCut from the box), only for the objects
    # whose colour a verdict needs; results are memoised per ref
    mask_fn: Callable[[int], NDArray[np.bool_]] | None = None
    _derived: dict[int, NDArray[np.bool_]] = field(default_factory=dict, repr=False)

    def mask(self, ref: int) -> NDArray[np.bool_] | None:
        """The mask of detection ``ref`` (H, W), or None if the backend gives none."""
        if ref < 0:
            return None
        if self.masks is None:
            if self.mask_fn is None:
                return None
            if ref not in self._derived:
                self._derived[ref] = self.mask_fn(ref)
            return self._derived[ref]
        mask: NDArray[np.bool_] = self.masks[ref]
        return mask


@runtime_checkable
class Detector(Protocol):
    """What the GenEval runner needs from a detector."""

    name: str

    def describe(self) -> dict[str, Any]:
        """Model id, revision and settings, for provenance and cache keys."""

    def detect(self, images: Sequence[Any]) -> list[DetectionSet]:
        """Detections for each PIL image (RGB)."""


def label_in(space: LabelSpace | None, label: str) -> str:
    """A model's ``label`` in the caller's label ``space`` (None: the model's own label); InputError when the space
    cannot place it (checked when the model loads, before any image)."""
    return label if space is None else space.canonical(label)


def masks_to_boxes(masks: NDArray[np.bool_]) -> NDArray[np.float64]:
    """Tight boxes (k, 4) [x1, y1, x2, y2) of boolean masks (k, H, W); empty masks give all-zero boxes."""
    k = masks.shape[0]
    boxes = np.zeros((k, 4), dtype=np.float64)
    cols = np.asarray(masks.any(axis=1))  # (k, W)
    rows = np.asarray(masks.any(axis=2))  # (k, H)
    for i in range(k):
        xs, ys = np.flatnonzero(cols[i]), np.flatnonzero(rows[i])
        if xs.size and ys.size:
            boxes[i] = (xs[0], ys[0], xs[-1] + 1, ys[-1] + 1)
    return boxes


class HFMask2Former:
    """Mask2Former through Hugging Face transformers; any hub id or local directory with a COCO-instance head.

    Reads the spec's ``model``, ``revision`` and ``resize`` = (shortest edge, longest edge) of the network input:
    (800, 1333), the COCO test scale GenEval's mmdet config and the original Mask2Former use, unless None (then the
    checkpoint's processor setting).
    """

    name = "hf-mask2former"

    def __init__(
        self,
        spec: DetectorConfig,
        *,
        device: str = "auto",
        dtype: str = "float32",
        max_per_image: int = 100,
        local_files_only: bool | None = None,
        label_space: LabelSpace | None = None,
    ) -> None:
        self.spec = spec
        self.label_space = label_space
        self.device_spec = device
        self.dtype_spec = dtype
        self.max_per_image = max_per_image
        self.local_files_only = local_files_only
        self._loaded: tuple[Any, Any, list[str], Any, Any] | None = None

    def describe(self) -> dict[str, Any]:
        """Model id, revision, input resize, dtype and the post-processing rule."""
        return {
            "backend": self.name,
            "model": self.spec.model,
            "revision": self.spec.revision,
            "resize": list(self.spec.resize) if self.spec.resize else None,
            "dtype": self.dtype_spec,
            "max_per_image": self.max_per_image,
            "postprocess": "mmdet-mask2former-instance",
        }

    @loads_models
    def _load(self) -> tuple[Any, Any, list[str], Any, Any]:
        if self._loaded is None:
            from transformers import AutoImageProcessor, Mask2FormerForUniversalSegmentation

            from t2ibench.models._torch import resolve_device, resolve_dtype

            device = resolve_device(self.device_spec)
            dtype = resolve_dtype(self.dtype_spec, device)
            from t2ibench.models.tiny import ensure_tiny_mask2former, parse_tiny

            model_id, resize = self.spec.model, self.spec.resize
            kwargs: dict[str, Any] = {"revision": self.spec.revision}
            if self.local_files_only is not None:
                kwargs["local_files_only"] = self.local_files_only
            tiny_seed = parse_tiny(model_id)
            if tiny_seed is None:
                from t2ibench.models.hub import load_from

                resolved = load_from(ModelSource("model", model_id, self.spec.revision), "detector")
                source = resolved.source
                if resolved.local_files_only:
                    kwargs["local_files_only"] = True
            else:
                source = str(ensure_tiny_mask2former(tiny_seed))
            try:
                with quiet_loading():
                    processor = AutoImageProcessor.from_pretrained(source, **kwargs)
                    model = Mask2FormerForUniversalSegmentation.from_pretrained(source, dtype=dtype, **kwargs)
            except (OSError, ValueError) as exc:
                raise InputError(
                    f"cannot load Mask2Former {model_id!r}: {exc}. Offline? Pass a local directory "
                    "(save_pretrained of model and image processor)."
                ) from None
            if resize is not None:
                processor.size = {"shortest_edge": resize[0], "longest_edge": resize[1]}
            id2label: Any = model.config.id2label
            labels = [label_in(self.label_space, str(id2label[i])) for i in range(len(id2label))]
            model.to(device).eval()
            self._loaded = (processor, model, labels, device, dtype)
        return self._loaded

    def detect(self, images: Sequence[Any]) -> list[DetectionSet]:
        """Detections and masks for each PIL image, mmdet-style post-processing (see module docstring)."""
        import torch
        from torch.nn import functional

        processor, model, labels, device, dtype = self._load()
        rgb = [im.convert("RGB") for im in images]
        inputs = processor(images=rgb, return_tensors="pt")
        pixel_values = inputs["pixel_values"].to(device=device, dtype=dtype)
        pixel_mask = inputs.get("pixel_mask")
        with torch.inference_mode():
            outputs = model(pixel_values=pixel_values)
        padded_hw = pixel_values.shape[-2:]
        results = []
        for i, image in enumerate(rgb):
            if pixel_mask is not None:
                valid = pixel_mask[i].bool()
                h_in, w_in = int(valid.any(dim=1).sum()), int(valid.any(dim=0).sum())
            else:
                h_in, w_in = int(padded_hw[0]), int(padded_hw[1])
            results.append(
                self._postprocess(
                    outputs.class_queries_logits[i].float(),
                    outputs.masks_queries_logits[i].float(),
                    padded_hw,
                    (h_in, w_in),
                    (image.height, image.width),
                    labels,
                    functional,
                    torch,
                )
            )
        return results

    def _postprocess(
        self,
        class_logits: Any,
        mask_logits: Any,
        padded_hw: Any,
        input_hw: tuple[int, int],
        original_hw: tuple[int, int],
        labels: list[str],
        functional: Any,
        torch: Any,
    ) -> DetectionSet:
        num_queries, num_classes = class_logits.shape[0], class_logits.shape[1] - 1
        scores = functional.softmax(class_logits, dim=-1)[:, :-1]
        k = min(self.max_per_image, num_queries * num_classes)
        top_scores, top_index = scores.flatten().topk(k, sorted=True)
        query = torch.div(top_index, num_classes, rounding_mode="floor")
        label_index = top_index % num_classes
        # a query picked with several labels has one mask: each distinct query's mask is upsampled and scored once
        # (per channel, the same numbers as upsampling the k picked masks), then handed to each of its detections
        distinct, inverse = torch.unique(query, return_inverse=True)
        logits = mask_logits[distinct][None]  # (1, q, h/4, w/4)
        logits = functional.interpolate(logits, size=tuple(padded_hw), mode="bilinear", align_corners=False)
        logits = logits[:, :, : input_hw[0], : input_hw[1]]
        logits = functional.interpolate(logits, size=original_hw, mode="bilinear", align_corners=False)[0]
        binary = logits > 0
        mask_scores = (logits.sigmoid() * binary).flatten(1).sum(1) / (binary.flatten(1).sum(1) + 1e-6)
        final = (top_scores * mask_scores[inverse]).cpu().numpy()
        picked = inverse.cpu().numpy()
        distinct_masks = binary.cpu().numpy()
        masks = distinct_masks[picked]
        boxes = masks_to_boxes(distinct_masks)[picked]
        detections = [
            Detection(label=labels[int(c)], box=tuple(float(v) for v in boxes[j]), score=float(final[j]), ref=j)  # type: ignore[arg-type]
            for j, c in enumerate(label_index.cpu().numpy())
        ]
        return DetectionSet(detections=detections, masks=masks, image_size=(original_hw[1], original_hw[0]))


class MMDetMask2Former:
    """GenEval's original detector through mmdet 2.x (extra ``mmdet``; mmcv-full builds from source).

    The spec's ``mmdet_config`` is a path to GenEval's ``mask2former_swin-s-p4-w7-224_lsj_8x2_50e_coco.py`` (from
    mmdetection's configs) and its ``mmdet_checkpoint`` a local file or URL of the weights (default
    ``MMDET_MASK2FORMER_CHECKPOINT``).
    """

    name = "mmdet-mask2former"

    def __init__(self, spec: DetectorConfig, *, device: str = "cuda:0", label_space: LabelSpace | None = None) -> None:
        if not spec.mmdet_config:
            raise InputError("the mmdet backend needs GenEval's Mask2Former config file (detector.mmdet_config)")
        self.spec = spec
        self.device = device
        self.label_space = label_space
        self._model: Any = None
        self._labels: list[str] = []

    @property
    def config(self) -> str:
        """GenEval's mmdet config file (the spec's ``mmdet_config``)."""
        return self.spec.mmdet_config or ""

    @property
    def checkpoint(self) -> str:
        """The weights: the spec's ``mmdet_checkpoint``, else GenEval's published checkpoint."""
        return self.spec.mmdet_checkpoint or MMDET_MASK2FORMER_CHECKPOINT

    def describe(self) -> dict[str, Any]:
        """Config, checkpoint and device."""
        return {"backend": self.name, "config": self.config, "checkpoint": self.checkpoint}

    @loads_models
    def _load(self) -> Any:
        if self._model is None:
            try:
                from mmdet.apis import init_detector
            except ImportError as exc:
                raise InputError(
                    "the mmdet backend needs the optional extra: pip install 't2ibench[mmdet]' "
                    f"(mmcv-full builds from source) ({exc})"
                ) from None
            self._model = init_detector(self.config, self.checkpoint, device=self.device)
            self._labels = [label_in(self.label_space, str(c)) for c in self._model.CLASSES]
        return self._model

    def detect(self, images: Sequence[Any]) -> list[DetectionSet]:
        """Run mmdet's inference_detector per image and convert (bbox, segm) per class to a DetectionSet."""
        model = self._load()  # first: it explains a missing mmdet
        from mmdet.apis import inference_detector

        out = []
        for image in images:
            rgb = image.convert("RGB")
            result = inference_detector(model, np.asarray(rgb)[:, :, ::-1])  # mmdet expects BGR arrays
            bbox, segm = (
                (result[0], result[1] if len(result) > 1 else None) if isinstance(result, tuple) else (result, None)
            )
            detections: list[Detection] = []
            masks: list[NDArray[np.bool_]] = []
            for class_index, rows in enumerate(bbox):
                for j, row in enumerate(np.asarray(rows)):
                    ref = len(detections)
                    detections.append(
                        Detection(
                            label=self._labels[class_index],
                            box=(float(row[0]), float(row[1]), float(row[2]), float(row[3])),
                            score=float(row[4]),
                            ref=ref if segm is not None else -1,
                        )
                    )
                    if segm is not None:
                        masks.append(np.asarray(segm[class_index][j], dtype=bool))
            stacked = np.stack(masks) if masks else None
            out.append(DetectionSet(detections=detections, masks=stacked, image_size=rgb.size))
        return out
