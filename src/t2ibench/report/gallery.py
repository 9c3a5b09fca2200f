"""Mode galleries: a PNG grid per mode, one summary sheet and a JSON index (images), or top texts per mode.

Rendering only: the modes (sample indices, scores, eigenvalue shares) come from ``t2ibench.metrics.modes``.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from t2ibench.errors import InputError
from t2ibench.io import PNG_COMPRESS_LEVEL
from t2ibench.metrics.modes import ModeSet
from t2ibench.report.markdown import markdown_table

ImageSource = str | Path | Image.Image | np.ndarray[Any, Any]
BACKGROUND = (255, 255, 255)
LABEL_HEIGHT = 18


def to_pil(source: ImageSource, *, size: int) -> Image.Image:
    """An RGB thumbnail (size × size, aspect kept, padded) from a path, a PIL image or an (H, W[, C]) array."""
    if isinstance(source, (str, Path)):
        try:
            if not stat.S_ISREG(os.stat(source).st_mode):  # a pipe or a device: opening it would hang
                raise InputError(f"{source}: not a regular file (a pipe, socket or device), not an image")
            with Image.open(source) as im:
                img = im.convert("RGB")
        except (OSError, ValueError, Image.DecompressionBombError) as exc:  # the last: more pixels than PIL allows
            raise InputError(f"{source}: cannot read image ({' '.join(str(exc).split())})") from None
    elif isinstance(source, Image.Image):
        img = source.convert("RGB")
    else:
        arr = np.asarray(source)
        if arr.ndim not in (2, 3):
            raise InputError(f"image arrays must be (H, W) or (H, W, C); got shape {arr.shape}")
        if arr.dtype != np.uint8:  # scale any numeric range to 0..255
            lo, hi = float(arr.min()), float(arr.max())
            arr = np.zeros(arr.shape, np.uint8) if hi <= lo else ((arr - lo) / (hi - lo) * 255).round().astype(np.uint8)
        img = Image.fromarray(arr).convert("RGB")
    scale = size / max(img.size)
    # upscale small sources (8×8 digits) without smoothing; downscale photographs with a proper filter
    resample = Image.Resampling.NEAREST if scale > 1 else Image.Resampling.LANCZOS
    img = img.resize((max(1, round(img.width * scale)), max(1, round(img.height * scale))), resample)
    canvas = Image.new("RGB", (size, size), BACKGROUND)
    canvas.paste(img, ((size - img.width) // 2, (size - img.height) // 2))
    return canvas


def _grid(tiles: Sequence[Image.Image], cols: int, size: int, pad: int = 2) -> Image.Image:
    rows = max(1, -(-len(tiles) // cols))
    sheet = Image.new("RGB", (cols * (size + pad) + pad, rows * (size + pad) + pad), BACKGROUND)
    for i, tile in enumerate(tiles):
        r, c = divmod(i, cols)
        sheet.paste(tile, (pad + c * (size + pad), pad + r * (size + pad)))
    return sheet


def write_image_gallery(
    modes: ModeSet,
    images: Sequence[ImageSource],
    out_dir: str | Path,
    *,
    thumb: int = 96,
    cols: int = 8,
    per_mode_in_summary: int = 8,
    title: str = "",
) -> Path:
    """Write mode_XX.png (top, then bottom samples), summary.png and modes.json to ``out_dir``; return the JSON path.

    ``images[j]`` is the picture of sample j (the order the modes were scored in).
    """
    if len(images) != modes.n:
        raise InputError(f"{len(images)} images given for modes scored over {modes.n} samples")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    from t2ibench.report.thumbs import font as load_font

    font = load_font(11)  # DejaVu Sans (matplotlib's copy): every glyph of the titles exists offline
    entries = []
    summary_rows = []
    for mode in modes.modes:
        label = f"mode {mode.index}  share {100 * mode.share:.1f}%  entropy share {100 * mode.entropy_share:.1f}%"
        parts = [(f"{title + ': ' if title else ''}{label} – top {len(mode.top)}", mode.top)]
        if mode.bottom:
            parts.append((f"bottom {len(mode.bottom)} of this mode", mode.bottom))
        grids = [(text, _grid([to_pil(images[j], size=thumb) for j in rows], cols, thumb)) for text, rows in parts]
        sheet = Image.new(
            "RGB",
            (max(g.width for _, g in grids), sum(g.height + LABEL_HEIGHT for _, g in grids)),
            BACKGROUND,
        )
        y = 0
        for text, grid in grids:
            ImageDraw.Draw(sheet).text((4, y + 3), text, fill=(0, 0, 0), font=font)
            sheet.paste(grid, (0, y + LABEL_HEIGHT))
            y += grid.height + LABEL_HEIGHT
        name = f"mode_{mode.index:02d}.png"
        sheet.save(out / name, compress_level=PNG_COMPRESS_LEVEL)
        summary_rows.append((label, [to_pil(images[j], size=thumb) for j in mode.top[:per_mode_in_summary]]))
        entries.append(
            {
                "index": mode.index,
                "eigenvalue": _value(mode.eigenvalue),
                "share": _value(mode.share),
                "entropy_share": _value(mode.entropy_share),
                "mass": _value(mode.mass),
                "file": name,
                "top": [
                    {"sample": j, "score": _value(s), "image": _describe(images[j])}
                    for j, s in zip(mode.top, mode.top_scores, strict=True)
                ],
                "bottom": [
                    {"sample": j, "score": _value(s), "image": _describe(images[j])}
                    for j, s in zip(mode.bottom, mode.bottom_scores, strict=True)
                ],
            }
        )
    width = per_mode_in_summary * (thumb + 2) + 2
    header = LABEL_HEIGHT if title else 0
    summary = Image.new("RGB", (width, header + len(summary_rows) * (thumb + LABEL_HEIGHT + 4)), BACKGROUND)
    draw = ImageDraw.Draw(summary)
    if title:
        draw.text((4, 3), title, fill=(0, 0, 0), font=font)
    y = header
    for label, tiles in summary_rows:
        draw.text((4, y + 3), label, fill=(0, 0, 0), font=font)
        summary.paste(_grid(tiles, per_mode_in_summary, thumb), (0, y + LABEL_HEIGHT))
        y += thumb + LABEL_HEIGHT + 4
    summary.save(out / "summary.png", compress_level=PNG_COMPRESS_LEVEL)
    index = out / "modes.json"
    index.write_text(
        json.dumps(
            {"source": modes.source, "n": modes.n, "title": title, "summary": "summary.png", "modes": entries}, indent=2
        )
        + "\n"
    )
    return index


def _value(x: float) -> float | None:
    """A number for JSON: None where unknown (NaN), never an invented value."""
    return None if x != x else float(x)


def _describe(source: ImageSource) -> str | None:
    return str(source) if isinstance(source, (str, Path)) else None


def render_text_modes(modes: ModeSet, texts: Sequence[str], *, top: int = 5) -> str:
    """Markdown: for each mode its share and its top (and bottom) texts."""
    if len(texts) != modes.n:
        raise InputError(f"{len(texts)} texts given for modes scored over {modes.n} samples")
    rows = []
    for m in modes.modes:
        rows.append(
            [
                m.index,
                f"{100 * m.share:.1f} %",
                "<br>".join(texts[j] for j in m.top[:top]),
                "<br>".join(texts[j] for j in m.bottom[:top]),
            ]
        )
    return markdown_table(["mode", "share", "top texts", "bottom texts"], rows)
