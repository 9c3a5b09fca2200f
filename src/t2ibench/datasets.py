"""External data the benchmark reads, acquired by a pipeline stage (``t2ibench data fetch``), never assumed.

Each dataset is a ``Release``: the files of one published version, each data file pinned by its SHA-256, the
repository and revision they are downloaded from, and the environment variable naming a local copy (offline
machines, CI). ``fetch_release`` downloads them — or copies them from a local folder (``--from DIR`` or the
variable) — and checks every data file against its pinned hash, so a truncated download, an edited copy or another
version is refused, never analysed.

Each benchmark pins its own, beside the reader of its suite (``RELEASE`` in ``t2ibench.benchmarks.<name>.suite``):
GenEval's released prompt metadata and MTurk annotations (MIT), or a suite file under a non-commercial licence
(fetched into the user's workspace, never shipped).
"""

from __future__ import annotations

import os
import shutil
import urllib.error
import urllib.request
from pathlib import Path

from t2ibench.errors import InputError, note, unknown_choice
from t2ibench.hashing import file_sha256
from t2ibench.io import output_dir
from t2ibench.suites.release import Release as Release
from t2ibench.suites.release import ReleasedFile as ReleasedFile


def benchmark_releases() -> dict[str, Release]:
    """The releases the registered benchmarks pin: ``RELEASES`` (several) or ``RELEASE`` in the ``suite`` module
    beside each entry's module (a benchmark that needs no external data has none)."""
    from t2ibench.benchmarks import names, role_module

    found: dict[str, Release] = {}
    for name in names():
        suite = role_module(name, "suite")
        pinned = getattr(suite, "RELEASES", None) or (getattr(suite, "RELEASE", None),)
        for item in pinned:
            if isinstance(item, Release):
                found[item.name] = item
    return found


RELEASES: dict[str, Release] = benchmark_releases()
"""Every dataset ``t2ibench data fetch`` knows: each registered benchmark's pin."""


def release(name: str) -> Release:
    """The registered release called ``name`` (InputError with a did-you-mean otherwise)."""
    if name not in RELEASES:
        raise unknown_choice("dataset", name, list(RELEASES))
    return RELEASES[name]


def _download(url: str, target: Path, timeout: float, env: str) -> None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, open(target, "wb") as fh:
            shutil.copyfileobj(response, fh)
    except (urllib.error.URLError, OSError) as exc:
        raise InputError(
            f"cannot download {url} ({getattr(exc, 'reason', exc)}); offline? copy the files from a local folder "
            f"with --from DIR (or ${env}=DIR)"
        ) from None


def local_source(name: str, source: str | Path | None = None) -> str | None:
    """The local folder a fetch of ``name`` copies from: ``source``, else the release's environment variable."""
    chosen = source if source is not None else os.environ.get(release(name).env) or None
    return None if chosen is None else str(chosen)


def fetch_release(
    name: str,
    out: str | Path,
    *,
    source: str | Path | None = None,
    revision: str | None = None,
    timeout: float = 60.0,
) -> list[Path]:
    """The files of release ``name`` in ``out``, verified; from ``source`` (a folder holding them), else the
    release's environment variable, else its repository at ``revision`` (default: the pinned one). Files already
    in ``out`` with the right hash are kept. Returns the files."""
    spec = release(name)
    folder = output_dir(out)
    local = local_source(name, source)
    if local is not None and not Path(local).is_dir():
        raise InputError(f"{local}: not a folder ({spec.title}, from --from or ${spec.env})")
    written = []
    for item in spec.files:
        target = folder / item.name
        if target.is_file() and (item.sha256 is None or file_sha256(target) == item.sha256):
            written.append(target)
            continue
        if target.exists():
            note(f"{target}: not the released file (edited or another version); replacing it")
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        try:
            if local is not None:
                origin = Path(local) / item.name
                if not origin.is_file():
                    raise InputError(f"{origin}: missing from the local copy of {spec.title}")
                shutil.copyfile(origin, tmp)
                where = str(origin)
            else:
                where = f"{spec.repository}/{revision or spec.revision}/{item.path}"
                _download(where, tmp, timeout, spec.env)
            if item.sha256 is not None and file_sha256(tmp) != item.sha256:
                raise InputError(
                    f"{where}: SHA-256 {file_sha256(tmp)[:16]}… is not the released file's ({item.sha256[:16]}…); "
                    "refusing a changed or truncated copy"
                )
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        written.append(target)
    return written


def check_release_copy(name: str, path: str | Path, *, where: str) -> Path:
    """``path``, a copy of release ``name``'s data file kept where the release is fetched to, refused in one line
    unless its bytes are the release's (SHA-256): an edited or damaged copy at the release's own place is never read
    as the release. ``where`` names the setting or option that chose the path."""
    spec = release(name)
    target = Path(path)
    item = spec.file(target.name) if target.name in {f.name for f in spec.files} else None
    if item is None or item.sha256 is None:
        return target
    found = file_sha256(target)
    if found != item.sha256:
        raise InputError(
            f"{where} {path}: SHA-256 {found[:16]}… is not {spec.title}'s released file's ({item.sha256[:16]}…): "
            f"the copy at the release's place was edited or damaged — fetch it again (`t2ibench data fetch {name}`, "
            "which replaces it), or name your own suite file elsewhere (its numbers are then labelled as not the "
            "released file's)"
        )
    return target
