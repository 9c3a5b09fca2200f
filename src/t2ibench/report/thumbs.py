"""Report thumbnails: each stored image scaled down, with its stored kept detections drawn as boxes (rendering only:
boxes and classes come from the ``detections`` table, never from running a detector).

Titles and labels use DejaVu Sans (shipped inside matplotlib, so it exists offline) for full Unicode coverage.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw, ImageFont

from t2ibench.errors import InputError
from t2ibench.io import write_bytes_atomic

PALETTE = ("#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#42d4f4", "#f032e6", "#9a6324")


@cache
def font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """DejaVu Sans at ``size`` px (matplotlib's copy); Pillow's built-in scalable font if that is missing."""
    try:
        import matplotlib

        return ImageFont.truetype(str(Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"), size)
    except (ImportError, OSError):
        return ImageFont.load_default(size)


def class_colour(name: str, classes: Sequence[str]) -> str:
    """A stable box colour per class within one image (the order the prompt names them, then others)."""
    return PALETTE[list(classes).index(name) % len(PALETTE)] if name in classes else "#777777"


def render(
    source: str | Path,
    boxes: Sequence[dict[str, Any]],
    out: Path,
    *,
    size: int,
    labels: bool,
    classes: Sequence[str] = (),
) -> tuple[int, int]:
    """Write a JPEG of ``source`` fitted in size × size px with ``boxes`` (x1, y1, x2, y2 in source pixels, class,
    score) drawn; returns the thumbnail's (width, height). Re-drawn only when the source or the boxes changed."""
    stamp = hashlib.sha256(
        json.dumps([str(source), Path(source).stat().st_mtime_ns, list(boxes), size, labels], default=str).encode()
    ).hexdigest()[:16]
    marker = out.with_suffix(".stamp")
    if out.exists() and marker.exists() and marker.read_text() == stamp:
        with Image.open(out) as done:
            return done.size
    try:
        with Image.open(source) as im:
            img = im.convert("RGB")
    except (OSError, ValueError, Image.DecompressionBombError) as exc:  # the last: more pixels than PIL allows
        raise InputError(f"{source}: cannot read image for its thumbnail ({' '.join(str(exc).split())})") from None
    scale = size / max(img.size)
    img = img.resize((max(1, round(img.width * scale)), max(1, round(img.height * scale))), Image.Resampling.LANCZOS)
    draw = ImageDraw.Draw(img)
    order = list(classes) + sorted({str(b["class"]) for b in boxes} - set(classes))
    text_font = font(max(10, size // 28))
    for b in boxes:
        colour = class_colour(str(b["class"]), order)
        x1, y1, x2, y2 = (float(b[k]) * scale for k in ("x1", "y1", "x2", "y2"))
        draw.rectangle([x1, y1, x2, y2], outline=colour, width=max(1, size // 128))
        if labels:
            text = f"{b['class']} {float(b['score']):.2f}" + (f" {b['color']}" if b.get("color") else "")
            left, top, right, bottom = draw.textbbox((x1 + 2, y1 + 1), text, font=text_font)
            draw.rectangle([left - 1, top - 1, right + 1, bottom + 1], fill=colour)
            draw.text((x1 + 2, y1 + 1), text, fill="white", font=text_font)
    out.parent.mkdir(parents=True, exist_ok=True)
    import io

    buffer = io.BytesIO()
    img.save(buffer, format="JPEG", quality=85)
    write_bytes_atomic(out, buffer.getvalue())
    marker.write_text(stamp)
    return img.size
