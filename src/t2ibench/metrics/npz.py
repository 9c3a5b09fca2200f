"""Reading .npz archives (zips of .npy files) without trusting them: every member's .npy header is read through the
zip and checked against the size the zip declares before anything is inflated, and the whole is estimated against
the memory limit (``check_memory``) before any array is read. Never unpickles."""

from __future__ import annotations

import math
import zipfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from t2ibench.errors import InputError
from t2ibench.metrics.checks import check_memory

MAX_NPZ_MEMBERS = 1024  # embeddings, ids, paths, texts, a state's arrays: an .npz with more is not one of ours

__all__ = ["NpzMember", "name_list", "npz_members", "read_npz_arrays", "readable_member"]


@dataclass(frozen=True)
class NpzMember:
    """One array of an .npz (a zip of .npy files), from its .npy header alone: nothing of its data is inflated."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    fortran: bool
    header_bytes: int
    file_size: int
    """The inflated size the zip entry declares (zipfile never yields more than this)."""

    @property
    def nbytes(self) -> int:
        """Bytes of the array the header describes (Python ints: no overflow)."""
        return math.prod(self.shape) * self.dtype.itemsize


def npz_members(path: str | Path) -> dict[str, NpzMember]:
    """The arrays of an .npz by name, each from its .npy header read through the zip — no array is inflated.

    Refused, naming the file and the array: a name given twice, an unreadable header, negative dimensions, and an
    entry whose declared size is not its header plus the data the header promises (a zip bomb, a truncated or a
    padded member: numpy would read either without a word). Object arrays are listed (their data is a pickle);
    whoever reads one refuses it (``read_npz_arrays``).
    """
    p = Path(path)
    if not p.is_file() or not zipfile.is_zipfile(p):
        raise InputError(f"{p}: not an .npz archive (numpy.savez writes a zip file)")
    out: dict[str, NpzMember] = {}
    try:
        with zipfile.ZipFile(p) as archive:
            entries = archive.infolist()
            if len(entries) > MAX_NPZ_MEMBERS:  # each header is read through the zip: ~0.6 ms apiece
                raise InputError(
                    f"{p}: the archive holds {len(entries):,} members; t2ibench's .npz files hold a few arrays "
                    f"(at most {MAX_NPZ_MEMBERS:,} read)"
                )
            names = [info.filename.removesuffix(".npy") for info in entries]
            twice = sorted(n for n, k in Counter(names).items() if k > 1)
            if twice:
                raise InputError(f"{p}: the archive holds array {twice[0]!r} twice; numpy would read one of them")
            for info in entries:
                if not info.filename.endswith(".npy") or info.is_dir():
                    continue  # not an array: never read
                with archive.open(info) as fh:
                    version = np.lib.format.read_magic(fh)
                    if version == (1, 0):
                        shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
                    else:
                        shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
                    header = fh.tell()
                name = info.filename.removesuffix(".npy")
                member = NpzMember(name, tuple(int(s) for s in shape), dtype, bool(fortran), header, info.file_size)
                _check_member(p, member)
                out[name] = member
    except InputError:
        raise
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, NotImplementedError, RuntimeError) as exc:
        raise InputError(f"{p}: not a readable .npz file ({' '.join(str(exc).split())[:160]})") from None
    return out


def _check_member(path: Path, member: NpzMember) -> None:
    where = f"{path}: array {member.name!r}"
    if any(s < 0 for s in member.shape):
        raise InputError(f"{where}: the header's shape {member.shape} has a negative dimension")
    promised = member.header_bytes + member.nbytes
    if not member.dtype.hasobject and member.file_size != promised:  # an object array's data is a pickle
        raise InputError(
            f"{where}: the archive declares {member.file_size} bytes inflated, its header promises {promised} "
            f"({member.shape} {member.dtype}); refused unread (a zip bomb or a damaged file)"
        )


def readable_member(path: Path, member: NpzMember) -> NpzMember:
    """``member``, refused (naming the file and the array) when its data is a pickle (an object array)."""
    if member.dtype.hasobject:
        raise InputError(f"{path}: array {member.name!r} holds object arrays, which would need pickle")
    return member


def read_npz_arrays(path: str | Path, names: list[str] | None = None, *, factor: int = 1) -> dict[str, NDArray[Any]]:
    """The named arrays of an .npz (``None``: all), each checked by ``npz_members`` and the whole estimated
    (inflated size × ``factor``, for the copies the caller will make) against the memory limit before any is read;
    the zip's CRC is verified as each is read."""
    p = Path(path)
    members = npz_members(p)
    wanted = list(members) if names is None else names
    missing = [n for n in wanted if n not in members]
    if missing:
        raise InputError(f"{p}: no array {missing[0]!r} in the .npz (it holds {name_list(list(members))})")
    for n in wanted:
        readable_member(p, members[n])
    check_memory(
        factor * sum(members[n].nbytes for n in wanted),
        what=f"{p}: inflating {', '.join(f'{n!r} {members[n].shape} {members[n].dtype}' for n in wanted[:4])}"
        + (f" and {len(wanted) - 4} more" if len(wanted) > 4 else ""),
    )
    out: dict[str, NDArray[Any]] = {}
    try:
        with zipfile.ZipFile(p) as archive:
            for name in wanted:
                with archive.open(archive.getinfo(name + ".npy")) as fh:
                    out[name] = np.lib.format.read_array(fh, allow_pickle=False)
                    if fh.read(1):  # the declared size matched the header: nothing may follow
                        raise InputError(f"{p}: array {name!r} has bytes beyond its data")
    except InputError:
        raise
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, NotImplementedError, RuntimeError) as exc:
        raise InputError(f"{p}: not a readable .npz file ({' '.join(str(exc).split())[:160]})") from None
    return out


def name_list(names: list[str], limit: int = 8) -> str:
    """At most ``limit`` array names, quoted, for a message ('no arrays' when there are none)."""
    shown = ", ".join(repr(n) for n in names[:limit])
    return (shown + f" and {len(names) - limit} more" if len(names) > limit else shown) or "no arrays"
