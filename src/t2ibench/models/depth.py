"""Monocular depth (registry ``DEPTH_MODELS``): a relative depth map per image, larger = nearer.

``DPTDepth`` (registry name ``dpt``) loads ``DPTForDepthEstimation`` through transformers — ``Intel/dpt-hybrid-midas``
by default (the weights of T2I-CompBench's ``dpt_hybrid-midas-501f0c75.pt``), any hub id or local folder — and makes
the map as T2I-CompBench's 3-D script does (UniDet_eval/3D_spatial_eval.py and its depth dataset, at 1b70949): the
image resized to 480 × 480 (PIL bilinear), scaled to [0, 1] and normalised with mean 0.5 and standard deviation 0.5;
the prediction min-max normalised, upsampled to the image's size (bilinear, corners aligned), and stored as an 8-bit
greyscale image (255 × depth, PIL's float → 'L' conversion); ``depth_map`` returns that image as a float32 array in
[0, 1], at the image's size (the benchmark resizes it to its detection frame, as the reference reloads it).
"""

from __future__ import annotations

from typing import Any, Protocol

from t2ibench.models._torch import loads_models, quiet_loading, resolve_device
from t2ibench.models.pretrained import Pretrained
from t2ibench.specs import DepthConfig

INPUT_SIZE = 480


class DepthModel(Protocol):
    """What ``DEPTH_MODELS`` builds."""

    def describe(self) -> dict[str, Any]:
        """Identity for the store: backend, model, revision, weights' checksum."""

    def depth_image(self, image: Any) -> Any:
        """The 8-bit greyscale PIL depth image (larger = nearer) of the PIL ``image``, at its size."""


class DPTDepth(Pretrained):
    """DPT through transformers (module docstring), built from its ``DepthConfig`` whole."""

    what = "depth model"

    def __init__(self, spec: DepthConfig, *, device: str = "auto") -> None:
        from t2ibench.models.tiny_compbench import ensure_tiny_dpt

        super().__init__(spec, ensure_tiny_dpt, device=device)
        self._loaded: tuple[Any, Any] | None = None

    @loads_models
    def _load(self) -> tuple[Any, Any]:
        if self._loaded is None:
            from transformers import DPTForDepthEstimation

            source, kwargs = self.resolved().source, self.pretrained_kwargs()
            try:
                with quiet_loading():
                    model = DPTForDepthEstimation.from_pretrained(source, **kwargs)
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise self.load_error(exc) from None
            if getattr(model.config, "is_hybrid", False):
                # a hybrid DPT refuses inputs of another size than its config's (384 for DPT-Hybrid) unless told the
                # size; its position embeddings are then resized bilinearly per forward pass, as the reference's
                # DPT resizes them for its 480-pixel input
                model.dpt.embeddings.image_size = (INPUT_SIZE, INPUT_SIZE)
            device = resolve_device(self.device_spec)
            model.to(device).eval()
            self._loaded = (model, device)
        return self._loaded

    def describe(self) -> dict[str, Any]:
        """Backend, model, revision and the resolved commit, weights' checksum and the input size."""
        import transformers

        model, _ = self._load()
        return {
            "backend": "dpt",
            "model": self.spec.model,
            "revision": self.spec.revision,
            "commit": self.commit(model),
            "weights": self.weights(),
            "input_size": INPUT_SIZE,
            "transformers": transformers.__version__,
        }

    def depth_image(self, image: Any) -> Any:
        """The 8-bit greyscale PIL depth image of the PIL ``image`` (module docstring)."""
        import numpy as np
        import torch
        from PIL import Image

        model, device = self._load()
        rgb = image.convert("RGB")
        small = rgb.resize((INPUT_SIZE, INPUT_SIZE), Image.Resampling.BILINEAR)
        tensor = torch.from_numpy(np.asarray(small, dtype=np.uint8).copy()).permute(2, 0, 1).float().div(255)
        tensor = tensor.sub(0.5).div(0.5).unsqueeze(0).to(device)
        with torch.inference_mode():
            depth = model(pixel_values=tensor).predicted_depth[0].float()
        span = depth.max() - depth.min()
        depth = (depth - depth.min()) / span if float(span) > 0 else torch.zeros_like(depth)
        depth = torch.nn.functional.interpolate(
            depth[None, None], size=(rgb.height, rgb.width), mode="bilinear", align_corners=True
        )
        return Image.fromarray(255 * depth[0, 0].cpu().numpy()).convert("L")
