"""Strict readers of user files (YAML, JSON lines, .npy/.npz embeddings) and atomic text writes.

Strict means: anything given twice is refused (YAML keys), structures are bounded (YAML aliases), and every
error names the file and line.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from t2ibench.errors import InputError
from t2ibench.metrics.checks import check_embedding_dtype, check_memory, check_positive_int
from t2ibench.metrics.npz import NpzMember as NpzMember  # re-exported: its home is t2ibench.metrics.npz
from t2ibench.metrics.npz import name_list, npz_members, readable_member
from t2ibench.metrics.npz import read_npz_arrays as read_npz_arrays

PNG_COMPRESS_LEVEL = 3
"""zlib level of every PNG t2ibench writes (images, cut-outs, galleries; lossless at any level): on photographic
images it encodes about twice as fast as Pillow's default 6, in files no larger."""


def output_dir(path: str | Path) -> Path:
    """``path`` as an existing or new folder; InputError (not a traceback) if it is a file or cannot be made."""
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise InputError(f"{target}: exists and is not a folder; choose a folder for the output")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{target}: cannot create the output folder ({exc.strerror or exc})") from None
    return target


def pid_alive(pid: int) -> bool:
    """True when a process with this id exists (one we may not signal counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale_tmp(folder: Path, pattern: str = "*.tmp") -> None:
    """Remove temporary files ``<name>.<pid>.tmp`` left by killed writers; live writers' files are kept."""
    for tmp in folder.glob(pattern):
        parts = tmp.name.split(".")
        if len(parts) >= 3 and parts[-2].isdigit() and not pid_alive(int(parts[-2])):
            tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def exclusive(path: str | Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on the lock file ``path`` (made if missing) across threads and processes: one
    builder of a shared cache entry at a time, the others wait and then find it built."""
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def append_line(path: str | Path, line: str, *, sync: bool = True) -> None:
    """Append a line (or lines joined by newlines; a final newline added) in one ``write`` under an exclusive
    ``flock``: writers in other threads or processes (shards of one model) never interleave or tear lines."""
    import fcntl

    data = (line.rstrip("\n") + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)  # closing releases the lock


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write UTF-8 text through a temporary file renamed into place: a kill leaves the old file or the new one.

    The target must be a regular file (or not exist yet): a folder, a device or an unwritable place is an
    InputError naming it, and no temporary file is left behind.
    """
    return write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: str | Path, data: bytes) -> Path:
    """Write bytes through a temporary file renamed into place (as ``write_text_atomic``)."""
    target = Path(path)
    if target.exists() and not target.is_file():
        raise InputError(f"{target}: is a folder or a special file; give a file name for the output")
    output_dir(target.parent)
    # <name>.<thread>.<pid>.tmp: unique per writer (threads of one refresh write side by side), the pid last so
    # clean_stale_tmp can tell a killed writer's file from a live one's
    tmp = target.with_name(f"{target.name}.{threading.get_ident()}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, target)
    except OSError as exc:
        raise InputError(f"{target}: cannot write ({exc.strerror or exc})") from None
    finally:
        tmp.unlink(missing_ok=True)
    return target


MAX_YAML_NODES = 100_000
MAX_YAML_DEPTH = 200  # levels of nesting; deeper, PyYAML's composer would exhaust Python's recursion limit
"""Nodes a YAML document may expand to, aliases counted at every use (a 'billion laughs' file is refused)."""


def _strict_loader() -> Any:
    """yaml.SafeLoader with YAML 1.2 core scalars: true/false only (not yes/no/on/off), decimal integers without
    leading zeros (not octal 010, hex, 1_000 or sexagesimal 1:30), floats with or without a dot (1e-9 is a number),
    no implicit timestamps. Anything else stays a string, which the config's type checks then name."""
    import yaml

    class StrictLoader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML ships no type stubs
        pass

    StrictLoader.yaml_implicit_resolvers = {
        first: [
            (tag, rx) for tag, rx in resolvers if tag.rsplit(":", 1)[-1] not in ("bool", "int", "float", "timestamp")
        ]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    rules = [
        ("tag:yaml.org,2002:bool", r"true|True|TRUE|false|False|FALSE", "tTfF"),
        ("tag:yaml.org,2002:int", r"[-+]?(0|[1-9][0-9]{0,29})", "-+0123456789"),
        (
            "tag:yaml.org,2002:float",
            r"[-+]?((0|[1-9][0-9]{0,29})(\.[0-9]{0,30})?|\.[0-9]{1,30})([eE][-+]?[0-9]{1,3})?"
            r"|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)",
            "-+0123456789.",
        ),
    ]
    for tag, pattern, first in rules:
        StrictLoader.add_implicit_resolver(tag, re.compile(f"^(?:{pattern})$"), list(first))
    return StrictLoader


def load_yaml(text: str, *, source: str) -> Any:
    """Parse YAML safely (no Python tags) and strictly: YAML 1.2 scalars, duplicate keys and alias bombs refused."""
    import yaml

    loader_class = _strict_loader()
    try:
        node = yaml.compose(text, Loader=loader_class)
    except yaml.YAMLError as exc:
        raise _yaml_error(source, exc) from None
    except RecursionError:  # the composer recurses per level, before _check_yaml_node can count them
        raise InputError(f"{source}: YAML nested deeper than {MAX_YAML_DEPTH} levels") from None
    if node is None:
        return None
    _check_yaml_node(node, source)
    try:
        loader = loader_class("")
        try:
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except (yaml.YAMLError, ValueError) as exc:
        raise _yaml_error(source, exc) from None


def _yaml_error(source: str, exc: Exception) -> InputError:
    text = " ".join(str(exc).split())
    tags = " (safe_load: Python tags are refused)" if "constructor for the tag" in text else ""
    return InputError(f"{source}: not valid YAML{tags}: {text}")


def _check_yaml_node(root: Any, source: str) -> None:
    """Refuse duplicate mapping keys, and documents whose alias-expanded size exceeds MAX_YAML_NODES."""
    import yaml

    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: Any, depth: int) -> int:
        if depth > MAX_YAML_DEPTH:
            raise InputError(f"{source}: YAML nested deeper than {MAX_YAML_DEPTH} levels")
        if id(node) in open_nodes:
            raise InputError(f"{source}:{node.start_mark.line + 1}: a YAML alias refers to itself (recursive data)")
        cached = sizes.get(id(node))
        if cached is not None:
            return cached
        open_nodes.add(id(node))
        total = 1
        if isinstance(node, yaml.MappingNode):
            seen: dict[tuple[str, str], int] = {}
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                    line = key.start_mark.line + 1
                    name = (key.tag, key.value)
                    if name in seen:
                        raise InputError(
                            f"{source}:{line}: key {key.value!r} is given twice (first at line {seen[name]}); "
                            "remove one"
                        )
                    seen[name] = line
                total += size(key, depth + 1) + size(value, depth + 1)
        elif isinstance(node, yaml.SequenceNode):
            total += sum(size(item, depth + 1) for item in node.value)
        if total > MAX_YAML_NODES:
            raise InputError(
                f"{source}: YAML expands to more than {MAX_YAML_NODES} nodes (aliases counted at each use); "
                "refused as an alias bomb"
            )
        open_nodes.discard(id(node))
        sizes[id(node)] = total
        return total

    size(root, 0)


MAX_TEXT_BYTES = 2**30  # a user's text file (config, params, JSON lines, CSV) larger than 1 GiB is refused unread


def read_text_file(
    path: str | Path, *, what: str = "file", encoding: str = "utf-8", max_bytes: int = MAX_TEXT_BYTES
) -> str:
    """The text of a user's file, refused in one line (naming it) before it is opened when it is not a regular file
    (a pipe or a device would hang or never end), larger than ``max_bytes``, unreadable or not ``encoding`` text."""
    from t2ibench.paths import regular_file

    p = regular_file(path, what=what)
    try:
        size = p.stat().st_size
        if size > max_bytes:
            raise InputError(f"{p}: {size:,} bytes; a {what} holds at most {max_bytes:,} (refused unread)")
        return p.read_text(encoding=encoding)
    except OSError as exc:
        raise InputError(f"{p}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{p}: not {encoding.removesuffix('-sig').upper()} text (byte {exc.start}); expected a {what}"
        ) from None


def read_jsonl(
    path: str | Path, *, what: str = "JSON-lines file", max_bytes: int = MAX_TEXT_BYTES
) -> Iterator[tuple[str, Any]]:
    """(``file:line``, decoded object) for each non-blank line; InputError names the file (and line) on failure, and
    a file over ``max_bytes`` before it is read."""
    p = Path(path)
    lines = read_text_file(p, what=what, max_bytes=max_bytes).splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        yield f"{p}:{number}", loads_strict(line, where=f"{p}:{number}")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKeyError(key)
        out[key] = value
    return out


class _DuplicateKeyError(ValueError):
    pass


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads_strict(text: str, *, where: str) -> Any:
    """json.loads refusing keys given twice and NaN/Infinity (not JSON); InputError names ``where``."""
    try:
        return json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constant)
    except RecursionError:
        raise InputError(f"{where}: not valid JSON (nested too deeply to read)") from None
    except _DuplicateKeyError as exc:
        raise InputError(f"{where}: key {exc.args[0]!r} is given twice in one object") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: not valid JSON ({exc.msg})") from None
    except ValueError as exc:
        raise InputError(f"{where}: not valid JSON ({exc})") from None


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
    check_embedding_dtype(dtype, where=str(p))
    if any(int(s) < 0 for s in shape):
        raise InputError(f"{p}: the header's shape {tuple(shape)} has a negative dimension")
    if int(shape[1]) == 0:
        raise InputError(f"{p}: embeddings with zero columns (shape {tuple(shape)})")
    expected = offset + math.prod(int(s) for s in shape) * dtype.itemsize  # Python ints: no overflow
    size = p.stat().st_size
    if size < expected:
        raise InputError(f"{p}: truncated: {size} bytes, header promises {expected}")
    if size > expected:
        raise InputError(
            f"{p}: {size - expected} bytes beyond the {tuple(shape)} array its header describes (a stale header, e.g. "
            "rows appended without rewriting it); re-save the file with numpy.save"
        )
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
    # the batch, its float copy and the features computed from it are held together
    check_memory(3 * min(batch_size, max(stop, 1)) * layout.dim * 8, what=f"batches of {batch_size} rows of {path}")
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
    """An (n, d) embedding matrix on disk: .npy is streamed batch by batch, .npz (its array ``member``) is read
    whole, after its header was checked against the memory limit."""

    path: Path
    n: int
    dim: int
    member: str = "embeddings"

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
        check_memory(2 * self.n * self.dim * 8, what=f"loading all {self.n}×{self.dim} rows of {self.path}")
        if self.path.suffix == ".npy":
            whole: NDArray[Any] = np.load(self.path, allow_pickle=False)
            return whole
        return read_npz_arrays(self.path, [self.member])[self.member]


def _npz_key(files: list[str], path: Path) -> str:
    """The embedding array of an .npz: the one named 'embeddings', or its only array."""
    if "embeddings" in files:
        return "embeddings"
    if len(files) == 1:
        return files[0]
    raise InputError(
        f"{path}: expected an 'embeddings' array (or exactly one array) in the .npz, found {name_list(files)}"
    )


def open_embeddings(path: str | Path) -> EmbeddingFile:
    """Open an (n, d) embedding file (.npy streamed, or .npz holding one array); InputError names the problem.

    Nothing is inflated: an .npz's array is known from its header (``npz_members``), validated like an .npy's
    (2-D, real numbers; Fortran order is fine, the array is read whole) and its size checked against the memory
    limit before anything reads it.
    """
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such file")
    if p.suffix == ".npy":
        layout = npy_layout(p)
        return EmbeddingFile(path=p, n=layout.n, dim=layout.dim)
    if p.suffix == ".npz":
        members = npz_members(p)
        key = _npz_key(list(members), p)
        member = readable_member(p, members[key])
        if len(member.shape) != 2:
            raise InputError(f"{p}: embeddings must be 2-D (n, d); got shape {member.shape}")
        check_embedding_dtype(member.dtype, where=f"{p}: array {key!r}")
        check_memory(member.nbytes, what=f"{p}: inflating array {key!r} {member.shape} {member.dtype}")
        return EmbeddingFile(path=p, n=member.shape[0], dim=member.shape[1], member=key)
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
    columns: dict[str, tuple[str, ...]] = {}
    if p.suffix == ".npz":
        members = npz_members(p)
        names = [name for name in TABLE_COLUMNS if name in members]
        for name in names:  # shapes first, then every array's size together, before any is inflated
            shape = members[name].shape
            if len(shape) != 1 or shape[0] != source.n:
                raise InputError(f"{p}: {name!r} must have one entry per row ({source.n}); got {shape}")
        # each column's entries become Python strings (up to ~4 bytes a character again, with object overhead)
        check_memory(
            2 * source.n * source.dim * 8 + sum(2 * members[n].nbytes + 64 * source.n for n in names),
            what=f"{p}: its embeddings and {', '.join(map(repr, names)) or 'no'} columns",
        )
        arrays = read_npz_arrays(p, names)
        for name in names:
            columns[name] = tuple(str(v) for v in arrays.pop(name).tolist())
    embeddings = source.load()
    if "paths" in columns:
        columns["paths"] = tuple(str(p.parent / q) if not Path(q).is_absolute() else q for q in columns["paths"])
    return EmbeddingTable(path=p, embeddings=embeddings, **columns)
