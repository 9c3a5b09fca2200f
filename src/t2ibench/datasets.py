"""External data the benchmark reads, acquired by a pipeline stage (``t2ibench data fetch``), never assumed.

Each dataset is a ``Release``: the files of one published version, each data file pinned by its SHA-256, the
repository and revision they are downloaded from, and the environment variable naming a local copy (offline
machines, CI). ``fetch_release`` downloads them — or copies them from a local folder (``--from DIR`` or the
variable) — and checks every data file against its pinned hash, so a truncated download, an edited copy or another
version is refused, never analysed.

* ``geneval``: GenEval's released prompt metadata and the MTurk annotations of two of the paper's models (MIT).
* ``geneval2``: GenEval 2's benchmark file ``geneval2_data.jsonl`` (800 prompts) at the pinned commit of
  facebookresearch/GenEval2 (CC BY-NC 4.0: fetched into the user's workspace, never shipped with t2ibench).
"""

from __future__ import annotations

import os
import shutil
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from t2ibench.benchmarks.geneval2 import (
    suite as geneval2_suite,  # the pinned version lives with the suite that reads it
)
from t2ibench.errors import InputError, note, unknown_choice
from t2ibench.hashing import file_sha256
from t2ibench.io import output_dir


@dataclass(frozen=True)
class ReleasedFile:
    """One file of a dataset release: its path in the source repository and, for data, its SHA-256."""

    name: str
    path: str
    sha256: str | None  # None: copied as published (the licence text)


@dataclass(frozen=True)
class Release:
    """A published version of a dataset: where it is downloaded from, its files, their hashes and its licence."""

    name: str
    title: str
    repository: str  # raw-file base URL: a file is <repository>/<revision>/<path>
    revision: str  # the version downloaded by default (a commit where the publisher has no release tag)
    env: str  # the environment variable naming a local copy of the files
    licence: str
    files: tuple[ReleasedFile, ...]

    def file(self, name: str) -> ReleasedFile:
        """The released file called ``name`` (KeyError otherwise)."""
        for item in self.files:
            if item.name == name:
                return item
        raise KeyError(name)


GENEVAL = Release(
    name="geneval",
    title="GenEval's released prompts and annotations",
    repository="https://raw.githubusercontent.com/djghosh13/geneval",
    revision="main",
    env="T2IBENCH_GENEVAL_DATA",
    licence="MIT",
    files=(
        ReleasedFile(
            "evaluation_metadata.jsonl",
            "prompts/evaluation_metadata.jsonl",
            "5c48e0813e812e3c373fa5c8ed07a8f0a483be30272b4427b0559c8048e67c13",
        ),
        ReleasedFile(
            "annotations_clip.csv",
            "annotations/annotations_clip.csv",
            "84c5f364945543d15f5407ca1c2542cfaa571550dbf4922eff1399e7f91b7ce1",
        ),
        ReleasedFile(
            "annotations_sdv2.csv",
            "annotations/annotations_sdv2.csv",
            "973f029073f9b7f2ee7b3bbbff6a473db92486af94beebae1eb2bd2d01a5a6a7",
        ),
        ReleasedFile("LICENSE", "LICENSE", "e6082bfcbdf460dd19f8c55cc261055414df2a278768b4991c5382d65be2b52a"),
    ),
)
GENEVAL2 = Release(
    name="geneval2",
    title="GenEval 2's benchmark file (Kamath et al. 2025)",
    repository="https://raw.githubusercontent.com/facebookresearch/GenEval2",
    revision=geneval2_suite.RELEASE_COMMIT,
    env="T2IBENCH_GENEVAL2_DATA",
    licence="CC BY-NC 4.0 (attribution, non-commercial use only; never shipped with t2ibench)",
    files=(
        ReleasedFile(geneval2_suite.DATA_FILE, geneval2_suite.DATA_FILE, geneval2_suite.RELEASE_SHA256),
        ReleasedFile("LICENSE", "LICENSE", "ee6c684e7f3c319ffed9964a27e334a469d7f01b32abf5530de067a488901f68"),
    ),
)
RELEASES: dict[str, Release] = {r.name: r for r in (GENEVAL, GENEVAL2)}

# the names earlier code and tests read (GenEval's release)
GENEVAL_FILES = GENEVAL.files
LOCAL_GENEVAL_ENV = GENEVAL.env
LOCAL_GENEVAL2_ENV = GENEVAL2.env


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


def fetch_geneval(
    out: str | Path, *, source: str | Path | None = None, revision: str | None = None, timeout: float = 60.0
) -> list[Path]:
    """GenEval's released prompts and annotations in ``out``, verified (``fetch_release('geneval', ...)``)."""
    return fetch_release("geneval", out, source=source, revision=revision, timeout=timeout)


def fetch_geneval2(
    out: str | Path, *, source: str | Path | None = None, revision: str | None = None, timeout: float = 60.0
) -> list[Path]:
    """GenEval 2's ``geneval2_data.jsonl`` and licence in ``out``, verified (``fetch_release('geneval2', ...)``)."""
    return fetch_release("geneval2", out, source=source, revision=revision, timeout=timeout)


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


def acquire_suites(config: Any, root: Path) -> list[Path]:
    """The released suite files a refresh of ``config`` (a ``Config``; workspace ``root``) reads, fetched where they
    are missing: GenEval 2's at its default place (``benchmarks.geneval2.data`` left as is) comes from
    ``$T2IBENCH_GENEVAL2_DATA`` or its pinned release, as ``t2ibench data fetch geneval2`` would, and verified
    against the release's SHA-256 every time (``check_release_copy``). A suite file named elsewhere is the user's own
    and is never fetched over (a missing one is refused when the run is planned; its numbers are labelled as not the
    released file's)."""
    from t2ibench.config import GENEVAL2_DATA

    selection = config.benchmarks.geneval2
    if selection is None or selection.data != GENEVAL2_DATA:
        return []
    target = root / selection.data
    if target.is_file():
        return [check_release_copy("geneval2", target, where="benchmarks.geneval2.data")]
    note(f"{selection.data}: fetching GenEval 2's suite (as `t2ibench data fetch geneval2`)")
    fetched = fetch_release("geneval2", target.parent)
    return [p for p in fetched if p.name == target.name]
