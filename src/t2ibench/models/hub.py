"""Where a model named by a hub id or a folder comes from, decided before anything loads (one rule for every backend
that takes one: diffusers generators, the Mask2Former detector, the DINOv2 embedder, the VQA judge, and open_clip's
weights — a pretrained tag, read from the hub, or a checkpoint file — of the CLIP colour classifier and embedder).

A spec field lists its ``ModelSource``s (``hub_sources()`` on the spec). ``resolve`` decides, in this order:

* an existing folder is the model (relative names against ``base``: the process's folder, or for a config the
  workspace the refresh runs in);
* an existing file, or a name that cannot be a hub id ('./x', '../x', '/x', '~/x', 'a/b/c', ...), is refused at once:
  no such folder;
* a hub id is read from the hub when the hub can be reached, and otherwise (``HF_HUB_OFFLINE``, or no answer from
  the hub's endpoint within ``PROBE_TIMEOUT`` seconds, asked once per process) only from the local Hugging Face
  cache: loaded with ``local_files_only`` when cached, refused at once when not (open_clip, which takes no such
  option, loads under ``cache_only``; its tag is looked up as the hub model its pretrained config names).

Without this a typo'd name or a model never downloaded, offline, spent minutes in huggingface_hub's retries (30
'Retrying in Ns' lines, 147 s for one judge) before failing.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from t2ibench.errors import FieldError
from t2ibench.specs import ModelSource

PROBE_TIMEOUT = 5.0  # seconds the hub's endpoint has to answer one HEAD request before it counts as unreachable


@dataclass(frozen=True)
class Resolved:
    """What a loader reads (``source``: the folder or hub id) and whether only the local cache may be read."""

    source: str
    local_files_only: bool = False


def resolve(source: ModelSource, *, base: Path | None = None) -> Resolved:
    """Where ``source`` loads from; FieldError (its field) when it is neither a folder nor a hub model that can be
    read: a missing path at once, a hub id neither cached nor reachable at once (no retries)."""
    path = Path(source.name)
    if base is not None and not path.is_absolute():
        path = base / path
    if source.arch is not None:
        return _open_clip_weights(source, path, local=base is not None)
    if path.is_dir():
        return Resolved(str(path) if base is not None else source.name)
    if path.exists():
        raise FieldError(source.field, f"{source.name!r} is a file; a local model is a folder (save_pretrained)")
    if not source.hub_shaped:
        hint = " (~ is not expanded: give the full path)" if source.name.startswith("~") else ""
        raise FieldError(source.field, f"{source.name!r}: no such folder{hint}, and not a hub id ('org/name') either")
    try:
        offline = hub_offline()
    except ImportError:  # no huggingface_hub: no loader that reads hub ids either, which says so itself
        return Resolved(source.name)
    if offline is None:
        return Resolved(source.name)
    if cached(source.name, source.revision):
        return Resolved(source.name, local_files_only=True)
    at = f" at revision {source.revision!r}" if source.revision else ""
    raise FieldError(
        source.field,
        f"{source.name!r} is neither a local folder nor a hub model in the local cache{at}, and {offline}: give "
        "the model's folder, or download it first (hf download NAME)",
    )


CHECKPOINT_SUFFIXES = (".pt", ".pth", ".bin", ".safetensors", ".ckpt")


def _open_clip_weights(source: ModelSource, path: Path, *, local: bool) -> Resolved:
    """open_clip's ``pretrained``: a checkpoint file, or a tag of ``source.arch`` whose weights open_clip reads from
    the hub (its pretrained config's ``hf_hub``), resolved as a hub id is."""
    if path.is_file():
        return Resolved(str(path) if local else source.name)
    if path.exists():
        raise FieldError(
            source.field, f"{source.name!r} is a folder; open_clip's pretrained is a tag or a checkpoint file"
        )
    if "/" in source.name or source.name.startswith((".", "~")) or source.name.endswith(CHECKPOINT_SUFFIXES):
        raise FieldError(
            source.field, f"{source.name!r}: no such checkpoint file (nor an open_clip tag such as 'openai')"
        )
    try:
        offline = hub_offline()
    except ImportError:
        return Resolved(source.name)
    if offline is None:
        return Resolved(source.name)
    repo = _open_clip_repo(str(source.arch), source.name)
    if repo is None:  # a tag open_clip reads from elsewhere, or none it knows: open_clip says which
        return Resolved(source.name)
    if cached(repo, None):
        return Resolved(source.name, local_files_only=True)
    raise FieldError(
        source.field,
        f"open_clip {source.arch}/{source.name} (hub model {repo}) is not in the local cache, and {offline}: give a "
        "checkpoint file, or download it first (hf download NAME)",
    )


def _open_clip_repo(arch: str, tag: str) -> str | None:
    """The hub model open_clip reads ``arch``'s ``tag`` weights from, or None (no such tag, or not from the hub)."""
    try:
        from open_clip import get_pretrained_cfg
    except ImportError:
        return None
    repo = str(get_pretrained_cfg(arch, tag).get("hf_hub", "") or "").strip("/")
    return repo or None


@contextlib.contextmanager
def cache_only(active: bool) -> Iterator[None]:
    """While ``active``, huggingface_hub reads its local cache only (as HF_HUB_OFFLINE=1 makes it): for a library
    that takes no ``local_files_only`` (open_clip), once the hub is known to be unreachable — no retries."""
    if not active:
        yield
        return
    from huggingface_hub import constants

    before = constants.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE = before


def check_sources(sources: tuple[ModelSource, ...], *, base: Path | None = None) -> None:
    """``resolve`` each source (FieldError naming the first field that cannot be read)."""
    for source in sources:
        resolve(source, base=base)


def hub_offline() -> str | None:
    """Why the hub cannot be asked ('HF_HUB_OFFLINE is set', 'the hub (URL) cannot be reached: ...'), or None."""
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return "HF_HUB_OFFLINE is set"
    return _unreachable(constants.ENDPOINT)


@functools.cache
def _unreachable(endpoint: str) -> str | None:
    """One HEAD request to the hub's endpoint through huggingface_hub's own client (its proxies and certificates),
    no retries: None when anything answers, else why not (asked once per process and endpoint)."""
    from huggingface_hub import get_session

    try:
        get_session().head(endpoint, timeout=PROBE_TIMEOUT)
    except Exception as exc:  # the client's transport errors (DNS, refused, timeout, TLS): the hub cannot be asked
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return f"the hub ({endpoint}) cannot be reached ({reason})"
    return None


def cached(name: str, revision: str | None) -> bool:
    """Whether hub model ``name`` at ``revision`` (default: main) is in the local Hugging Face cache."""
    from huggingface_hub import snapshot_download

    try:
        snapshot_download(name, revision=revision, local_files_only=True)
    except Exception:  # LocalEntryNotFoundError, or a name the cache cannot hold: not cached either way
        return False
    return True


def load_from(source: ModelSource, what: str) -> Resolved:
    """``resolve`` for a loader (relative names against the process's folder): InputError '<what> <field>: ...'."""
    from t2ibench.errors import InputError

    try:
        return resolve(source)
    except FieldError as exc:
        raise InputError(f"{what} {exc.field}: {exc.message}") from None
