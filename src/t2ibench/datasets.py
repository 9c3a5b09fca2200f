"""External data the benchmark reads, acquired by a pipeline stage (``t2ibench data fetch``), never assumed.

GenEval's released files (MIT licence): the official prompt metadata and the MTurk annotations of two of the
paper's models. ``fetch_geneval`` downloads them from the GenEval repository — or copies them from a local folder
(``--from DIR``, or ``$T2IBENCH_GENEVAL_DATA``: offline machines, CI) — and checks every data file against the
SHA-256 of the released version, so a truncated download or an edited copy is refused, never analysed.
"""

from __future__ import annotations

import os
import shutil
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from t2ibench.errors import InputError
from t2ibench.hashing import file_sha256
from t2ibench.io import output_dir

GENEVAL_REPOSITORY = "https://raw.githubusercontent.com/djghosh13/geneval"
GENEVAL_REVISION = "main"
LOCAL_GENEVAL_ENV = "T2IBENCH_GENEVAL_DATA"


@dataclass(frozen=True)
class ReleasedFile:
    """One file of a dataset release: its path in the source repository and, for data, its SHA-256."""

    name: str
    path: str
    sha256: str | None  # None: copied as published (the licence text)


GENEVAL_FILES = (
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
    ReleasedFile("LICENSE", "LICENSE", None),
)


def _download(url: str, target: Path, timeout: float) -> None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, open(target, "wb") as fh:
            shutil.copyfileobj(response, fh)
    except (urllib.error.URLError, OSError) as exc:
        raise InputError(
            f"cannot download {url} ({getattr(exc, 'reason', exc)}); offline? copy the files from a local folder "
            f"with --from DIR (or ${LOCAL_GENEVAL_ENV}=DIR)"
        ) from None


def fetch_geneval(
    out: str | Path,
    *,
    source: str | Path | None = None,
    revision: str = GENEVAL_REVISION,
    timeout: float = 60.0,
) -> list[Path]:
    """GenEval's released prompts and annotations in ``out``, verified; from ``source`` (a folder holding them),
    else ``$T2IBENCH_GENEVAL_DATA``, else the GenEval repository at ``revision``. Files already in ``out`` with the
    right hash are kept. Returns the files."""
    folder = output_dir(out)
    local = source if source is not None else os.environ.get(LOCAL_GENEVAL_ENV) or None
    if local is not None and not Path(local).is_dir():
        raise InputError(f"{local}: not a folder (GenEval's files, from --from or ${LOCAL_GENEVAL_ENV})")
    written = []
    for item in GENEVAL_FILES:
        target = folder / item.name
        if target.is_file() and (item.sha256 is None or file_sha256(target) == item.sha256):
            written.append(target)
            continue
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        try:
            if local is not None:
                origin = Path(local) / item.name
                if not origin.is_file():
                    raise InputError(f"{origin}: missing from the local copy of GenEval's files")
                shutil.copyfile(origin, tmp)
                where = str(origin)
            else:
                where = f"{GENEVAL_REPOSITORY}/{revision}/{item.path}"
                _download(where, tmp, timeout)
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
