"""A step's inputs are its identity: one derivation for its cache key, the stored version names and the protocol.

Every pipeline step is a plain function whose parameters are exactly the values it uses. Each parameter plays one
of four roles, read off the function's own signature (never listed beside it):

* **setting** (the default): a config section or field, or the prompt selection. Part of the cache key, of the
  stored version's hash (model/evaluator hash) and of the protocol record.
* **content** (a value with a ``digest()``: an upstream step's result, a stamp of local files): its content digest
  is part of the cache key. Never a row count or a path: a result's digest is over what it holds.
* **output** (``Annotated[Path, OUTPUT]``): where the step writes. Part of the key, so the same step for another
  workspace, or for another folder of this one, never answers from this one's cache.
* **placement** (``Annotated[..., PLACEMENT]``): the device, progress display, a shared cache's location: how the
  work is done, never what it computes. Part of nothing.

``step_key`` (what every Prefect task's ``cache_key_fn`` calls), ``settings`` (what a version hash and the
protocol record are made of) and ``fingerprint`` (the canonical form of one value) are the whole mechanism.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, is_dataclass
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Protocol, get_origin, get_type_hints, runtime_checkable

from t2ibench.hashing import code_version, content_hash


class Role:
    """A parameter role marker for ``typing.Annotated`` (``OUTPUT`` or ``PLACEMENT``)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


OUTPUT = Role("output")
"""``Annotated[Path, OUTPUT]``: a location the step writes to (in the key, not in versions or the protocol)."""
PLACEMENT = Role("placement")
"""``Annotated[T, PLACEMENT]``: how the work runs (device, progress, shared cache); in no key, version or protocol."""

Out = Annotated[Path, OUTPUT]
"""A path a step writes (an output parameter)."""
Device = Annotated[str, PLACEMENT]
"""The device a step runs on ('auto', 'cpu', 'cuda', ...): placement."""
Progress = Annotated[bool, PLACEMENT]
"""Whether a step shows a progress bar: placement."""
SharedCache = Annotated[Path, PLACEMENT]
"""The content-keyed embedding cache: where, never what (placement)."""


@dataclass(frozen=True)
class StepSpec:
    """A step of the refresh: its function; ``cached`` (False: it always runs — merges and the store write, which
    are cheap and check their inputs themselves); ``cheap`` (no model work: may run in the flow's own process);
    ``protocol`` (its calls' settings make the model's evaluation version and protocol record)."""

    fn: Callable[..., Any]
    cached: bool = True
    cheap: bool = False
    protocol: bool = False

    @property
    def model_work(self) -> bool:
        """Whether the step does model or metric work (cached and not cheap): retried, and counted as work."""
        return self.cached and not self.cheap


class Content:
    """Base of the values identified by what they hold — upstream results and stamps of local files — rather than
    by how they were asked for: a subclass defines ``digest()`` (16 hex digits, over content: no paths, no counts)."""

    def digest(self) -> str:
        """16-hex-digit content digest."""
        raise NotImplementedError


@runtime_checkable
class Digestible(Protocol):
    """Anything with a content ``digest()`` (results, stamps, the prompt selection): fingerprinted by it."""

    def digest(self) -> str:
        """16-hex-digit content digest."""


@cache
def roles(fn: Callable[..., Any]) -> dict[str, str]:
    """Parameter name → 'output', 'placement' or 'value' (a setting or content, told apart by the value) of ``fn``."""
    hints = get_type_hints(fn, include_extras=True)
    found: dict[str, str] = {}
    for name in inspect.signature(fn).parameters:
        hint = hints.get(name)
        role = "value"
        if hint is not None and get_origin(hint) is not None and hasattr(hint, "__metadata__"):
            marks = [m for m in hint.__metadata__ if isinstance(m, Role)]
            if marks:
                role = marks[0].name
        found[name] = role
    return found


def fingerprint(value: Any) -> Any:
    """The canonical, JSON-ready form of one input: a digest for content, the resolved path for a path, plain
    data for settings (dataclasses, tuples, infinities)."""
    if isinstance(value, Digestible) and not isinstance(value, type):
        return {"digest": value.digest()}
    if isinstance(value, Path):
        return {"path": str(resolved(value))}
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: fingerprint(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, (list, tuple)):
        return [fingerprint(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): fingerprint(v) for k, v in value.items()}
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def resolved(path: Path) -> Path:
    """``path`` made absolute with symlinks and '..' resolved as far as it exists (a key names a location, not a
    spelling of it: ``data/./x`` and a symlink to it are one location)."""
    return Path(path).expanduser().resolve(strict=False)


def _is_content(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return bool(value) and all(_is_content(v) for v in value)
    return isinstance(value, Content) and not isinstance(value, type)


def keyed(fn: Callable[..., Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """Every input of a call of ``fn`` that its cache key covers (all but placement), in canonical form."""
    kinds = roles(fn)
    unknown = sorted(set(params) - set(kinds))
    if unknown:
        raise TypeError(f"{fn.__name__}() has no parameter(s) {', '.join(unknown)}")
    return {name: fingerprint(value) for name, value in sorted(params.items()) if kinds[name] != "placement"}


def settings(fn: Callable[..., Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of a call of ``fn``: its keyed inputs that are neither content nor outputs (config sections and
    fields, the prompt selection). What version hashes and the protocol record are made of."""
    kinds = roles(fn)
    return {
        name: fingerprint(value)
        for name, value in sorted(params.items())
        if kinds.get(name) == "value" and not _is_content(value)
    }


def step_key(step: str, fn: Callable[..., Any], params: Mapping[str, Any]) -> str:
    """The cache key of one call: the step's name, the library's code version and every keyed input."""
    return f"{step}-" + content_hash([code_version(), keyed(fn, params)])


def version_hash(parts: Mapping[str, Any]) -> str:
    """16-hex-digit hash naming a stored version: of the ``settings`` of the calls that make it, by step."""
    return content_hash(parts)
