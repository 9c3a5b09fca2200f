"""Streaming reads of embedding matrices stored as .npy files (numpy only), and atomic text writes."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from t2ibench.errors import InputError
from t2ibench.metrics._validate import check_positive_int


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write UTF-8 text through a temporary file renamed into place: a kill leaves the old file or the new one."""
    target = Path(path)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, target)
    return target


def read_jsonl(path: str | Path) -> Iterator[tuple[str, Any]]:
    """(``file:line``, decoded object) for each non-blank line; InputError names the file (and line) on failure."""
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(f"{p}: cannot read ({exc.strerror})") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{p}:{number}: not valid JSON ({exc.msg})") from None
        yield f"{p}:{number}", record


def remove_stale_tmp(folder: str | Path) -> list[Path]:
    """Delete ``*.<pid>.tmp`` files in ``folder`` left by processes that no longer run; returns them."""
    removed = []
    for tmp in Path(folder).glob("*.tmp"):
        pid = tmp.suffixes[-2][1:] if len(tmp.suffixes) >= 2 else ""
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # still running: its write is in flight
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        tmp.unlink(missing_ok=True)
        removed.append(tmp)
    return removed


@dataclass(frozen=True)
class NpyLayout:
    """Where the rows of a C-ordered 2-D .npy file lie: shape (n, d), dtype and the byte offset of row 0."""

    path: Path
    shape: tuple[int, int]
    dtype: np.dtype[Any]
    offset: int

    @property
    def n(self) -> int:
        """Number of rows."""
        return self.shape[0]

    @property
    def dim(self) -> int:
        """Row length d."""
        return self.shape[1]


def npy_layout(path: str | Path) -> NpyLayout:
    """Read the header of a 2-D, C-ordered .npy file (no data is read); InputError names the file otherwise."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such file")
    try:
        with open(p, "rb") as fh:
            major, _minor = np.lib.format.read_magic(fh)
            if major == 1:
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
            else:
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
            offset = fh.tell()
    except (ValueError, OSError) as exc:
        raise InputError(f"{p}: not a readable .npy file ({exc})") from None
    if len(shape) != 2:
        raise InputError(f"{p}: embeddings must be 2-D (n, d); got shape {tuple(shape)}")
    if fortran:
        raise InputError(f"{p}: Fortran-ordered arrays cannot be streamed by rows; save with np.ascontiguousarray")
    if dtype.hasobject:
        raise InputError(f"{p}: object arrays are not embeddings (and would need pickle)")
    expected = offset + int(np.prod(shape)) * dtype.itemsize
    if p.stat().st_size < expected:
        raise InputError(f"{p}: truncated: {p.stat().st_size} bytes, header promises {expected}")
    return NpyLayout(path=p, shape=(int(shape[0]), int(shape[1])), dtype=dtype, offset=offset)


def iter_npy_batches(
    path: str | Path, batch_size: int, *, limit: int | None = None
) -> Iterator[tuple[int, NDArray[Any]]]:
    """Yield (first row index, rows (b, d)) of a .npy file, mapping one batch at a time.

    Each batch is memory-mapped, copied and unmapped, so resident memory stays at one batch however large
    the file is (a single whole-file memmap would keep every page it touched resident).
    """
    layout = npy_layout(path)
    check_positive_int(batch_size, name="batch_size")
    stop = layout.n if limit is None else min(layout.n, check_positive_int(limit, name="limit"))
    row_bytes = layout.dim * layout.dtype.itemsize
    for start in range(0, stop, batch_size):
        rows = min(batch_size, stop - start)
        view = np.memmap(
            layout.path,
            dtype=layout.dtype,
            mode="r",
            offset=layout.offset + start * row_bytes,
            shape=(rows, layout.dim),
        )
        batch = np.array(view)
        del view
        yield start, batch


@dataclass(frozen=True)
class EmbeddingFile:
    """An (n, d) embedding matrix on disk: .npy is streamed batch by batch, .npz is read whole."""

    path: Path
    n: int
    dim: int

    def batches(self, batch_size: int) -> Iterator[tuple[int, NDArray[Any]]]:
        """Yield (first row index, rows (b, d)) in file order."""
        if self.path.suffix == ".npy":
            yield from iter_npy_batches(self.path, batch_size)
            return
        data = self.load()
        for start in range(0, self.n, check_positive_int(batch_size, name="batch_size")):
            yield start, data[start : start + batch_size]

    def rows(self, indices: NDArray[np.intp]) -> NDArray[Any]:
        """The rows at ``indices`` (k, d), touching only their pages for .npy files."""
        if self.path.suffix == ".npy":
            mm = np.load(self.path, mmap_mode="r", allow_pickle=False)
            out = np.array(mm[np.sort(indices)])
            del mm
            return out
        return self.load()[indices]

    def load(self) -> NDArray[Any]:
        """All rows (n, d) in memory."""
        if self.path.suffix == ".npy":
            whole: NDArray[Any] = np.load(self.path, allow_pickle=False)
            return whole
        with np.load(self.path, allow_pickle=False) as data:
            arr: NDArray[Any] = data[_npz_key(data.files, self.path)]
        return arr


def _npz_key(files: list[str], path: Path) -> str:
    """The embedding array of an .npz: the one named 'embeddings', or its only array."""
    if "embeddings" in files:
        return "embeddings"
    if len(files) == 1:
        return files[0]
    raise InputError(f"{path}: expected an 'embeddings' array (or exactly one array) in the .npz, found {files}")


def open_embeddings(path: str | Path) -> EmbeddingFile:
    """Open an (n, d) embedding file (.npy streamed, or .npz holding one array); InputError names the problem."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such file")
    if p.suffix == ".npy":
        layout = npy_layout(p)
        return EmbeddingFile(path=p, n=layout.n, dim=layout.dim)
    if p.suffix == ".npz":
        try:
            with np.load(p, allow_pickle=False) as data:
                shape = data[_npz_key(data.files, p)].shape
        except (ValueError, OSError) as exc:
            raise InputError(f"{p}: not a readable .npz file ({exc})") from None
        if len(shape) != 2:
            raise InputError(f"{p}: embeddings must be 2-D (n, d); got shape {shape}")
        return EmbeddingFile(path=p, n=int(shape[0]), dim=int(shape[1]))
    raise InputError(f"{p}: unsupported embeddings format {p.suffix!r} (use .npy or .npz)")


@dataclass(frozen=True)
class EmbeddingTable:
    """Embeddings (n, d) with optional per-row ids (pair keys), image paths and texts, all as strings."""

    path: Path
    embeddings: NDArray[Any]
    ids: tuple[str, ...] | None = None
    paths: tuple[str, ...] | None = None
    texts: tuple[str, ...] | None = None

    def require(self, column: str, purpose: str) -> tuple[str, ...]:
        """The named optional column, or an InputError saying what needs it."""
        value = getattr(self, column)
        if value is None:
            raise InputError(f"{self.path}: {purpose} needs a {column!r} array in the .npz (one entry per row)")
        return tuple(value)


TABLE_COLUMNS = ("ids", "paths", "texts")


def load_embedding_table(path: str | Path) -> EmbeddingTable:
    """Read an .npz with 'embeddings' (n, d) and optional 'ids', 'paths', 'texts' (n,), or a plain .npy.

    Ids are compared as strings, so prompt ids saved as integers in one file and strings in another match.
    Relative image paths are resolved against the .npz file's folder.
    """
    p = Path(path)
    source = open_embeddings(p)
    embeddings = source.load()
    columns: dict[str, tuple[str, ...]] = {}
    if p.suffix == ".npz":
        with np.load(p, allow_pickle=False) as data:
            for name in TABLE_COLUMNS:
                if name in data.files:
                    values = data[name]
                    if values.ndim != 1 or len(values) != source.n:
                        raise InputError(f"{p}: {name!r} must have one entry per row ({source.n}); got {values.shape}")
                    columns[name] = tuple(str(v) for v in values.tolist())
    if "paths" in columns:
        columns["paths"] = tuple(str(p.parent / q) if not Path(q).is_absolute() else q for q in columns["paths"])
    return EmbeddingTable(path=p, embeddings=embeddings, **columns)
