"""Identity, kind and containment of paths, decided in one place.

Every "is this the same file?" and "is this inside that folder?" in t2ibench is answered here, after resolving:
symlinks, ``.`` and ``..`` are followed (``Path.resolve``), and two existing files are the same when they share
(``st_dev``, ``st_ino``) — so a hard link, a symlink or a ``./`` spelling of a file is that file. A path that does
not exist yet is compared by its resolved spelling.

Outputs. Nothing a command writes may be one of its inputs or part of a results store (``refuse_output``):

* a file output may not be an input file (the same file after resolving), lie inside an input folder (in the part
  of it the command reads), or be part of a DuckDB store: the store file itself (recognised by its header, whatever
  its name), its ``.wal`` and ``.lock`` files, or anything in its ``.tmp`` folder;
* a folder output may not be an input, lie inside an input folder, or hold an input in the part of it the command
  writes (``covers``);
* one command's outputs may not be one another.

Each refusal is one line naming the flag, the output and the input it would overwrite.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath

from t2ibench.errors import InputError

DUCKDB_MAGIC = b"DUCK"  # bytes 8..12 of every DuckDB database file
# <store>.wal and its .wal.checkpoint/.wal.recovery siblings (DuckDB's log files: DuckDB replays or deletes them
# when it opens the store), <store>.lock (t2ibench's run lock); longest first, so each name matches its own suffix.
# The same names as store.schema's WAL_SUFFIXES and LOCK_SUFFIX (this module may not import the store; a test
# checks they agree)
STORE_SIDE_FILES = (".wal.checkpoint", ".wal.recovery", ".wal", ".lock")
STORE_TEMP_DIR = ".tmp"  # <store>.tmp: DuckDB's temporary directory


def resolved(path: str | Path) -> Path:
    """``path`` made absolute with every symlink, '.' and '..' resolved (as far as it exists); InputError on a loop."""
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop (RuntimeError before Python 3.13)
        raise InputError(f"{path}: cannot be resolved ({getattr(exc, 'strerror', None) or exc})") from None


def file_key(path: str | Path) -> tuple[int, int] | None:
    """(st_dev, st_ino) of the file ``path`` leads to (symlinks followed), or None if it does not exist."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return info.st_dev, info.st_ino


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether ``a`` and ``b`` are one file: by (st_dev, st_ino) when both exist, else by resolved path."""
    ka, kb = file_key(a), file_key(b)
    if ka is not None and kb is not None:
        return ka == kb
    return resolved(a) == resolved(b)


def relative_within(path: str | Path, root: str | Path) -> PurePath | None:
    """``path`` relative to ``root`` after resolving both ('.' when they are one), or None if it lies outside."""
    target, base = resolved(path), resolved(root)
    if target == base:
        return PurePath(".")
    try:
        return target.relative_to(base)
    except ValueError:
        return None


def is_within(path: str | Path, root: str | Path) -> bool:
    """Whether ``path`` (resolved) is ``root`` (resolved) or lies inside it."""
    return relative_within(path, root) is not None


def check_within(path: str | Path, root: str | Path, *, what: str = "file") -> Path:
    """``path`` if it stays inside ``root`` once resolved; else InputError naming the path and its target."""
    if not is_within(path, root):
        raise InputError(f"{shown(path)}: {what} resolves outside {shown(root)} (to {shown(resolved(path))})")
    return Path(path)


def name_under(path: str | Path, base: str | Path) -> str:
    """``path`` relative to ``base``: lexically when it is spelt under it, else after resolving both."""
    p, b = Path(path), Path(base)
    try:
        return str(Path(os.path.abspath(p)).relative_to(os.path.abspath(b)))
    except ValueError:
        pass
    rel = relative_within(p, b)
    if rel is None:
        raise InputError(f"{shown(p)}: lies outside {shown(b)} (resolves to {shown(resolved(p))}); cannot name it")
    return str(rel)


def result_name(path: str | Path, base: str | Path | None) -> str:
    """The name a result records for image ``path``: relative to ``base`` when it lies under it (so a resume under
    another spelling of the same source finds its rows), else resolved; as given when ``base`` is None."""
    if base is None:
        return str(path)
    try:
        return name_under(path, base)
    except InputError:
        return str(resolved(path))


def kind_of(path: str | Path) -> str | None:
    """None for a regular file (symlinks followed); else what it is ('missing', 'a folder', 'a FIFO (named pipe)' …)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def regular_file(path: str | Path, *, what: str = "file") -> Path:
    """``path`` if it is (or links to) a regular file; InputError saying what it is otherwise (never opened)."""
    kind = kind_of(path)
    if kind == "missing":
        raise InputError(f"{shown(path)}: no such {what}")
    if kind is not None:
        target = resolved(path)
        via = f" (resolves to {shown(target)})" if target != Path(os.path.abspath(path)) else ""
        raise InputError(f"{shown(path)}: {what} is {kind}{via}, not a regular file")
    return Path(path)


def shown(value: object) -> str:
    """``str(value)`` with control characters (newlines, tabs, escapes) written as Python escapes: one line."""
    text = str(value)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def frame_count(path: str | Path) -> int:
    """Frames (or pages) in an image file: 1 for a still image, more for animated GIF/PNG/WebP or multi-page TIFF
    (whatever the file's name says); 1 for a file PIL cannot open (the image loader says why)."""
    from PIL import Image

    try:
        with Image.open(path) as image:
            return int(getattr(image, "n_frames", 1) or 1)
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError):
        return 1


def is_duckdb(path: str | Path) -> bool:
    """Whether ``path`` is a regular file holding a DuckDB database (by its header, whatever its name)."""
    if kind_of(path) is not None:
        return False
    try:
        with open(path, "rb") as fh:
            head = fh.read(12)
    except OSError:
        return False
    return head[8:12] == DUCKDB_MAGIC


def store_part(path: str | Path) -> Path | None:
    """The DuckDB store that ``path`` belongs to: the store file itself, its log or lock files (STORE_SIDE_FILES), or
    its .tmp folder."""
    target = resolved(path)
    if is_duckdb(target):
        return target
    for suffix in STORE_SIDE_FILES:
        if target.name.endswith(suffix) and is_duckdb(target.with_name(target.name.removesuffix(suffix))):
            return target.with_name(target.name.removesuffix(suffix))
    for folder in (target, *target.parents):
        if folder.name.endswith(STORE_TEMP_DIR):
            store = folder.with_name(folder.name.removesuffix(STORE_TEMP_DIR))
            if is_duckdb(store):
                return store
    return None


@dataclass(frozen=True)
class Place:
    """A path a command reads or writes: a file, or a folder (``tree``) whose ``covers`` part it reads or writes.

    ``covers`` takes a path relative to the folder and says whether it is in that part (None: all of it).
    """

    label: str
    path: Path
    tree: bool = False
    covers: Callable[[PurePath], bool] | None = None

    def holds(self, rel: PurePath) -> bool:
        """Whether the relative path ``rel`` inside this folder is in the part that counts."""
        return rel == PurePath(".") or self.covers is None or self.covers(rel)


def place(
    label: str, path: str | Path | None, *, tree: bool = False, covers: Callable[[PurePath], bool] | None = None
) -> Place | None:
    """A ``Place`` for ``path``, or None when the option was not given (``refuse_output`` skips None)."""
    if path is None or str(path) == "":
        return None
    return Place(label, Path(path), tree=tree, covers=covers)


def store_places(store: str | Path | None) -> list[Place]:
    """The results store's file, its log and lock files and its .tmp folder, as inputs no output may touch."""
    if store is None:
        return []
    base = Path(store)
    return [
        Place("the results store", base),
        *(Place(f"the results store's {s} file", base.with_name(base.name + s)) for s in STORE_SIDE_FILES),
        Place("the results store's temporary folder", base.with_name(base.name + STORE_TEMP_DIR), tree=True),
    ]


def _conflict(out: Place, inp: Place) -> str | None:
    """Why writing ``out`` would touch ``inp`` (a phrase), or None."""
    if not out.tree and not inp.tree:
        return f"is {inp.label} {shown(inp.path)}" if same_file(out.path, inp.path) else None
    if same_file(out.path, inp.path):
        return f"is {inp.label} {shown(inp.path)}"
    if inp.tree:
        rel = relative_within(out.path, inp.path)
        if rel is not None and inp.holds(rel):
            return f"lies inside {inp.label} {shown(inp.path)}"
    if out.tree:
        rel = relative_within(inp.path, out.path)
        if rel is not None and out.holds(rel):
            return f"holds {inp.label} {shown(inp.path)}, which it would overwrite"
    return None


def refuse_output(
    out: str | Path,
    *,
    flag: str,
    inputs: Iterable[Place | None] = (),
    tree: bool = False,
    covers: Callable[[PurePath], bool] | None = None,
) -> Path:
    """``out`` if writing it cannot touch any of ``inputs`` or a results store; else InputError naming ``flag``,
    the output and the input (see the module's rules). ``tree``: ``out`` is a folder whose ``covers`` part is
    written."""
    target = Place(flag, Path(out), tree=tree, covers=covers)
    for inp in inputs:
        if inp is None:
            continue
        why = _conflict(target, inp)
        if why is not None:
            via = "" if resolved(out) == Path(os.path.abspath(out)) else f" (resolves to {shown(resolved(out))})"
            raise InputError(f"{flag} {shown(out)}{via}: {why}; write the output elsewhere")
    if not tree:
        store = store_part(out)
        if store is not None:
            what = "is" if resolved(out) == store else "is part of"
            raise InputError(f"{flag} {shown(out)}: {what} the DuckDB results store {shown(store)}; write elsewhere")
    return Path(out)


def refuse_outputs(outputs: Sequence[Place | None], inputs: Iterable[Place | None] = ()) -> None:
    """``refuse_output`` for each of one command's outputs (label = its flag), and no two of them one path."""
    given = [o for o in outputs if o is not None]
    sources = list(inputs)
    for i, out in enumerate(given):
        refuse_output(out.path, flag=out.label, inputs=[*sources, *given[:i]], tree=out.tree, covers=out.covers)
