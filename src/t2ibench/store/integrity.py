"""Whether a store file is whole, decided from its bytes before t2ibench opens it for writing.

DuckDB notices damage only in the blocks a statement happens to read, so a store cut short (a full disk, an
interrupted copy) or with a flipped byte can take a run row in its first pages and fail an hour later on a table
further in — or on a primary-key index that only a write reads. This module reads DuckDB's storage layout itself:

* the file opens with a 4 KiB main header (the magic ``DUCK`` at byte 8), then two 4 KiB database headers; each
  database header starts with its checksum and records an iteration counter (the higher one is live), the number
  of blocks in the file and the block size; blocks follow from byte 12,288;
* every header and block starts with a 64-bit checksum of the rest of it: 5381 XOR the XOR, over its 64-bit
  little-endian words, of each word times 0xbf58476d1ce4e5b9 (modulo 2^64) — DuckDB's ``Checksum`` in
  ``src/common/checksum.cpp``, transcribed here as arithmetic;
* the live header points to the free list (in a metadata block: a count, then the free block ids); every other block
  below the header's count is in use. Free blocks may be missing from the end of the file (DuckDB trims them), blocks
  in use may not.

``header_problem`` reads the headers, the free list and the size (microseconds: every open checks it);
``block_problem`` also checks every block in use (numpy, about a second per GiB: once per process before its first
write, ``Store.verify``). A header whose checksum this transcription does not reproduce, or a free list it cannot
read, means a storage layout it does not know: then no verdict is given rather than a wrong one, and DuckDB's own
errors remain the guard.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    import numpy as np

HEADER = 4096  # bytes of DuckDB's main header, and of each of the two database headers after it
DATA_START = 3 * HEADER  # where block 0 begins
MAGIC = b"DUCK"
_MULTIPLIER = 0xBF58476D1CE4E5B9
_SEED = 5381
_CHUNK = 64  # blocks checked per read


def checksum(words: np.ndarray) -> np.ndarray:
    """DuckDB's checksum of each row of ``words`` (shape (k, n) uint64: k buffers of n little-endian words) → (k,)."""
    import numpy as np  # here, not at import: `t2ibench sql` opens a store without checking its blocks

    with np.errstate(over="ignore"):
        mixed: np.ndarray = np.bitwise_xor.reduce(words * np.uint64(_MULTIPLIER), axis=1) ^ np.uint64(_SEED)
    return mixed


def _buffer_checksum(buffer: bytes) -> int:
    """The checksum of one buffer whose length is a multiple of 8 bytes."""
    import numpy as np

    return int(checksum(np.frombuffer(buffer, dtype="<u8").reshape(1, -1))[0])


@dataclass(frozen=True)
class Layout:
    """What the live database header says: the file's block count and block size, where its free list starts."""

    blocks: int
    block_size: int
    free_list: int  # a metadata pointer (block id in the low 56 bits, sub-block in the high 8), or -1: none

    def offset(self, block: int) -> int:
        """The byte at which ``block`` begins."""
        return DATA_START + block * self.block_size


def _layout(fh: BinaryIO, size: int) -> tuple[str | None, Layout | None]:
    """(a problem, or None; the live header's layout when it is one this module knows)."""
    fh.seek(0)
    head = fh.read(DATA_START)
    if head[8:12] != MAGIC:
        return "its first bytes are not a DuckDB header", None
    if len(head) < DATA_START:
        return f"{size} bytes, shorter than DuckDB's {DATA_START}-byte header", None
    found = []
    for offset in (HEADER, 2 * HEADER):
        part = head[offset : offset + HEADER]
        stored = int.from_bytes(part[:8], "little")
        iteration, free_list, blocks, block_size = (
            int.from_bytes(part[i : i + 8], "little", signed=i == 24) for i in (8, 24, 32, 40)
        )
        found.append((stored == _buffer_checksum(part[8:]), iteration, free_list, blocks, block_size, offset))
    valid = [h for h in found if h[0]]
    if not valid:
        return None, None  # neither header checks out under this transcription: a layout it does not know
    if len(valid) < len(found):  # DuckDB checks both headers and refuses the file too
        return f"its database header at byte {next(h for h in found if not h[0])[5]} fails its checksum", None
    _, _, free_list, blocks, block_size, _ = max(valid, key=lambda h: h[1])
    if not (4096 <= block_size <= 1 << 30 and block_size & (block_size - 1) == 0 and blocks < 1 << 40):
        return None, None
    return None, Layout(blocks, block_size, free_list)


class _TruncatedError(Exception):
    """A block the free list lives in lies beyond the end of the file."""


def _free_blocks(fh: BinaryIO, layout: Layout, size: int) -> set[int] | None:
    """The ids of the blocks DuckDB's free list holds (None when it cannot be read as this module knows it).

    The list lives in metadata: a metadata block is a block split into 64 sub-blocks (the block's payload over 64,
    rounded down to 8 bytes); each sub-block starts with the pointer to the next one (all ones: none), and the list
    is a count followed by that many block ids (64-bit)."""
    import numpy as np

    if layout.free_list == -1:
        return set()
    sub = ((layout.block_size - 8) // 64) // 8 * 8
    pointer, stream, wanted = layout.free_list, b"", None
    for _ in range(1 << 20):  # bounded: a cycle of pointers is damage, not a list
        block, index = pointer & ((1 << 56) - 1), pointer >> 56
        if block >= layout.blocks or index >= 64:
            return None
        start = layout.offset(block) + 8 + index * sub
        if start + sub > size:
            raise _TruncatedError(f"truncated: {size} bytes, but block {block} in use (its free list) ends at byte "
                             f"{layout.offset(block + 1)}")  # fmt: skip
        fh.seek(start)
        part = fh.read(sub)
        pointer = int.from_bytes(part[:8], "little")
        stream += part[8:]
        if wanted is None and len(stream) >= 8:
            wanted = 8 + 8 * int.from_bytes(stream[:8], "little")
            if wanted > 8 + 8 * layout.blocks:
                return None
        if wanted is not None and len(stream) >= wanted:
            ids = np.frombuffer(stream[8:wanted], dtype="<i8")
            if ids.size and (ids.min() < 0 or ids.max() >= layout.blocks):
                return None
            return set(ids.tolist())
        if pointer == (1 << 64) - 1:
            return None  # the list ends before its count says
    return None


def _problem(fh: BinaryIO, size: int, *, blocks: bool) -> str | None:
    """The first thing wrong with the file: its headers, a block in use beyond its end (truncated), or (with
    ``blocks``) a block in use whose checksum fails."""
    import numpy as np

    problem, layout = _layout(fh, size)
    if problem is not None or layout is None:
        return problem
    try:
        free = _free_blocks(fh, layout, size)
    except _TruncatedError as exc:
        return str(exc)
    if free is None:
        return None  # a free list this module cannot read: no verdict
    used = np.array(sorted(set(range(layout.blocks)) - free), dtype=np.int64)
    if used.size and layout.offset(int(used[-1]) + 1) > size:
        return (
            f"truncated: {size} bytes, but block {int(used[-1])} in use ends at byte {layout.offset(int(used[-1]) + 1)}"
        )
    if not blocks:
        return None
    for first in range(0, used.size, _CHUNK):
        chunk = used[first : first + _CHUNK]
        data = bytearray()
        for block in chunk:
            fh.seek(layout.offset(int(block)))
            data += fh.read(layout.block_size)
        words = np.frombuffer(bytes(data), dtype="<u8").reshape(chunk.size, layout.block_size // 8)
        bad = np.flatnonzero(words[:, 0] != checksum(words[:, 1:]))
        if bad.size:
            block = int(chunk[bad[0]])
            return f"block {block} (byte {layout.offset(block)}) fails its checksum"
    return None


def header_problem(path: Path) -> str | None:
    """Why the DuckDB file at ``path`` cannot be whole, from its headers, free list and size (None: it may be)."""
    return _check(path, blocks=False)


def block_problem(path: Path) -> str | None:
    """Why the DuckDB file at ``path`` is damaged — its headers, a block in use missing from its end, or the first
    block in use whose checksum fails — or None (also when the layout is not one this module knows)."""
    return _check(path, blocks=True)


def free_blocks(path: Path) -> set[int] | None:
    """The ids of the blocks the file's free list holds (None: a layout or free list this module cannot read)."""
    with open(path, "rb") as fh:
        size = fh.seek(0, 2)
        _, layout = _layout(fh, size)
        if layout is None:
            return None
        try:
            return _free_blocks(fh, layout, size)
        except _TruncatedError:
            return None


def _check(path: Path, *, blocks: bool) -> str | None:
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, 2)
            return None if size == 0 else _problem(fh, size, blocks=blocks)  # an empty file: the caller names it
    except OSError as exc:
        return f"cannot read it ({exc.strerror})"
