"""Reading images defensively: every file either opens as 8-bit RGB (with a note saying what was converted) or
fails with an error naming it; paths that lead outside the folder they belong to are refused.

The size rule (``size_problem``, checked from the file's header before any pixel is decoded) is what every
evaluator can take: each side at least ``MIN_SIDE`` px (transformers' processors read a 1 or 3 px side as the
channel axis), an aspect ratio at most ``MAX_ASPECT``:1 (the detectors fit an image into 1333 × 800 px, so a longer
strip leaves its short side under 32 px, one stride of their coarsest feature map; Qwen3-VL refuses beyond 200:1,
and CLIP's shortest-side resize of a 1 × 20 000 strip would be a gigapixel), and at most PIL's
``Image.MAX_IMAGE_PIXELS`` pixels (PIL only warns up to twice that: a decompression bomb is refused here instead).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np

from t2ibench.errors import InputError


def inside(path: str | Path, root: str | Path) -> bool:
    """Whether ``path`` (symlinks resolved) lies inside ``root``."""
    try:
        Path(path).resolve().relative_to(Path(root).resolve())
    except ValueError:
        return False
    return True


def check_inside(path: str | Path, root: str | Path, *, what: str = "image") -> Path:
    """``path`` if it stays inside ``root`` after resolving symlinks and '..', else InputError naming both."""
    if not inside(path, root):
        raise InputError(f"{path}: {what} path escapes {root} (resolves to {Path(path).resolve()})")
    return Path(path)


MIN_SIDE = 8  # px: the shortest side an image to judge may have
MAX_ASPECT = 40  # the longest side over the shortest, at most


def size_problem(width: int, height: int) -> str | None:
    """Why an image of ``width`` × ``height`` px is not one to judge (the module docstring's rule), or None."""
    from PIL import Image

    limit = Image.MAX_IMAGE_PIXELS
    rule = f"each side ≥ {MIN_SIDE} px, aspect ratio ≤ {MAX_ASPECT}:1" + (f", ≤ {limit:,} pixels" if limit else "")
    short, long = min(width, height), max(width, height)
    if short < MIN_SIDE:
        why = f"a side under {MIN_SIDE} px"
    elif long / short > MAX_ASPECT:
        why = f"aspect ratio {long / short:,.0f}:1"
    elif limit and width * height > limit:
        why = f"{width * height:,} pixels"
    else:
        return None
    return f"degenerate size {width}×{height} px ({why}; images to judge have {rule})"


def to_rgb(image: Any) -> tuple[Any, str | None]:
    """(8-bit RGB PIL image, note) for any PIL image: alpha composited on white, 16-bit scaled, CMYK converted."""
    from PIL import Image

    mode = image.mode
    if mode == "RGB":
        return image, None
    if mode in ("I;16", "I;16B", "I;16L", "I", "F"):  # 16/32-bit greyscale: scale the range to 0..255
        arr = np.asarray(image, dtype=np.float64)
        if not np.isfinite(arr).all():  # a float image holding NaN or infinity: any scaling would invent pixels
            raise InputError(f"a {mode} (floating-point) image holding NaN or infinite pixels; not an image to judge")
        hi = 65535.0 if mode.startswith("I;16") else max(float(arr.max()), 1.0)
        grey = np.clip(arr / hi * 255.0 + 0.5, 0, 255).astype(np.uint8)
        return Image.fromarray(grey, mode="L").convert("RGB"), f"scaled {mode} to 8-bit RGB"
    if mode in ("RGBA", "LA", "PA") or (mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        canvas = Image.new("RGB", rgba.size, (255, 255, 255))
        canvas.paste(rgba, mask=rgba.getchannel("A"))
        return canvas, f"composited {mode} transparency on white"
    return image.convert("RGB"), f"converted {mode} to RGB"


def load_rgb(path: str | Path, *, root: str | Path | None = None) -> tuple[Any, str | None]:
    """Open an image file fully as 8-bit RGB (EXIF orientation applied); InputError names an unreadable file or one
    of a degenerate size (``size_problem``, read from the header before decoding)."""
    from PIL import Image, ImageOps

    p = Path(path)
    if root is not None:
        check_inside(p, root)
    try:
        if p.stat().st_size == 0:
            raise InputError(f"{p}: zero-byte image")
        with warnings.catch_warnings():  # PIL warns of a bomb it would still decode: refused below instead
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            raw = Image.open(p)
        with raw:
            problem = size_problem(*raw.size)
            if problem is not None:
                raise InputError(f"{p}: {problem}")
            raw.load()
            image = ImageOps.exif_transpose(raw)
            image.load()
    except InputError:
        raise
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
        raise InputError(f"{p}: unreadable image ({type(exc).__name__}: {exc})") from None
    try:
        return to_rgb(image)
    except InputError as exc:
        raise InputError(f"{p}: {exc}") from None


def image_problem(path: str | Path) -> str | None:
    """Why the image file ``path`` cannot be judged (unreadable, degenerate, or holding several frames: only
    single-frame images are judged), or None."""
    from t2ibench.paths import frame_count

    try:
        load_rgb(path)
    except InputError as exc:
        return str(exc)
    frames = frame_count(path)
    if frames > 1:
        return f"{path}: holds {frames} frames (an animated or multi-page image); only single-frame images are judged"
    return None
