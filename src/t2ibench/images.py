"""Reading images defensively: every file either opens as 8-bit RGB (with a note saying what was converted) or
fails with an error naming it; paths that lead outside the folder they belong to are refused."""

from __future__ import annotations

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
    """Open an image file fully as 8-bit RGB (EXIF orientation applied); InputError names an unreadable file."""
    from PIL import Image, ImageOps

    p = Path(path)
    if root is not None:
        check_inside(p, root)
    try:
        if p.stat().st_size == 0:
            raise InputError(f"{p}: zero-byte image")
        with Image.open(p) as raw:
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
