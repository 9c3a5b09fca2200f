"""The one base of every streaming diversity estimator: named additive statistics, merged and saved by the base.

The torchmetrics pattern. A subclass declares

* ``statistics``: the names of its sufficient statistics, each an additive Σφφᵀ (``CovarianceAccumulator``):
  ``("covariance",)`` for FKEA, cosine, Nyström and Scendi (one joint covariance), ``("x", "t", "joint")`` for
  conditional VENDI;
* ``_params()``: the constructor arguments that identify it (JSON values), and ``_input_dims()``: its input
  dimensions by constructor argument name (None until known);
* ``_initialise(**dims)``: builds its feature maps once the input dimensions are known and calls ``_start``;

and writes its own ``update`` (feature maps, validation: adds with ``_add``) and ``compute``. The base owns the
rest, once for every estimator:

* ``n`` (rows seen, including rows a device backend holds unsynced) and ``spec()`` = the estimator's name, its
  input dimensions and its parameters: two states merge only if their specs agree, and a saved state records it;
* ``merge(other)``: class, parameters (the differing ones are named), input dimensions and the subclass's own
  ``_check_merge`` (e.g. Nyström's landmarks); adds every statistic; an empty side is taken over as it is;
* ``save(path)`` / ``load(path)``: one .npz (no pickle) holding each statistic's upper triangle and n, the spec as
  a JSON header and any ``_extra_arrays`` (Nyström's landmarks). One statistic is stored under ``upper``/``n``,
  several under ``<name>_upper``/``<name>_n`` — the layouts the estimators wrote before they shared this base,
  so those files still load. ``load`` rebuilds the estimator from the header through its constructor
  (``_from_saved``), then refuses a file whose header disagrees with the rebuilt spec or feature dimensions;
* ``_sync()``: the hook through which a device backend (``models/torch_fkea.py``) brings rows it accumulated
  elsewhere into the host state before anything reads it.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Self

import numpy as np
from numpy.typing import NDArray

from t2ibench.errors import InputError, StateMismatchError
from t2ibench.metrics.checks import check_positive_int
from t2ibench.metrics.covariance import CovarianceAccumulator, load_state, save_state

_HEADER = "meta"


class AdditiveEstimator(ABC):
    """Streaming estimator whose state is named additive statistics Σφφᵀ plus n: ``update``, ``merge``, ``compute``.

    Any split of the rows into shards, each updated anywhere and merged, gives the state of one update over all
    rows (to float addition order). Subclasses must validate a whole ``update`` call before adding any of it.
    """

    statistics: ClassVar[tuple[str, ...]] = ("covariance",)
    state_kind: ClassVar[str | None] = None  # the name in specs and files (default: the class name)
    _unsynced_rows: int = 0  # rows a device backend has accumulated but not yet added to the host state

    def __init__(self, *, batch_size: int) -> None:
        self.batch_size = check_positive_int(batch_size, name="batch_size")
        self._stats: dict[str, CovarianceAccumulator] | None = None

    # -- what a subclass declares ---------------------------------------------------------------------------
    @abstractmethod
    def _params(self) -> dict[str, Any]:
        """Constructor arguments that identify the estimator, as JSON values (shards merge only if they match)."""

    @abstractmethod
    def _input_dims(self) -> dict[str, int | None]:
        """Input dimensions by constructor argument name (``{"dim": d}``; None until known)."""

    @abstractmethod
    def _initialise(self, **dims: int) -> None:
        """Build the feature maps for these input dimensions, then ``_start`` the statistics."""

    def _check_merge(self, other: Self) -> None:  # noqa: B027 - optional hook
        """Refuse a merge the parameters cannot see (e.g. different landmarks); called before any state changes."""

    def _extra_arrays(self) -> dict[str, NDArray[Any]]:
        """Arrays saved beside the statistics (e.g. Nyström's landmarks)."""
        return {}

    def _sync(self) -> None:  # noqa: B027 - optional hook
        """Bring rows accumulated elsewhere (a device) into the host state before it is read."""

    @classmethod
    def _from_saved(cls, meta: Mapping[str, Any], arrays: Mapping[str, NDArray[Any]]) -> Self:
        """An empty estimator rebuilt from a saved header: the constructor arguments the header names."""
        accepted = inspect.signature(cls.__init__).parameters
        return cls(**{k: v for k, v in meta.items() if k in accepted and k != "self"})

    # -- identity -------------------------------------------------------------------------------------------
    @classmethod
    def kind(cls) -> str:
        """The estimator's name in specs and saved files."""
        return cls.state_kind or cls.__name__

    def spec(self) -> dict[str, Any]:
        """Identity of the estimator: its name, input dimensions and parameters (what a saved state records)."""
        return {"estimator": self.kind(), **self._input_dims(), **self._params()}

    @property
    def n(self) -> int:
        """Rows (or pairs) seen so far."""
        if self._stats is None:
            return 0
        return next(iter(self._stats.values())).n + self._unsynced_rows

    # -- state ----------------------------------------------------------------------------------------------
    def _start(self, feature_dims: Mapping[str, int]) -> None:
        """Create the empty statistics, one D × D accumulator per declared name (``feature_dims``: name → D)."""
        if set(feature_dims) != set(self.statistics):
            raise AssertionError(f"{self.kind()} declares {self.statistics}, started {sorted(feature_dims)}")
        self._stats = {name: CovarianceAccumulator(feature_dims[name]) for name in self.statistics}

    def _stat(self, name: str | None = None) -> CovarianceAccumulator:
        """The statistic ``name`` (default: the first declared), synced; InputError before the first update."""
        self._sync()
        if self._stats is None:
            raise InputError("no samples: call update() before compute()")
        return self._stats[name or self.statistics[0]]

    def _require_data(self) -> None:
        """InputError unless at least one row has been added."""
        if self._stat().n == 0:
            raise InputError("no samples: call update() before compute()")

    def _add(self, *features: NDArray[np.floating]) -> None:
        """Add one batch's features to each statistic, in declared order (arrays (b, D_name), float32/float64)."""
        assert self._stats is not None
        if len(features) != len(self.statistics):
            raise AssertionError(f"{self.kind()}: {len(features)} feature arrays for {self.statistics}")
        for name, f in zip(self.statistics, features, strict=True):
            self._stats[name].add(np.ascontiguousarray(f))

    def _add_sum(self, total: NDArray[np.floating], n: int, name: str | None = None) -> None:
        """Add a Σφφᵀ of ``n`` rows computed elsewhere (a device) to statistic ``name`` (default: the first)."""
        assert self._stats is not None
        self._stats[name or self.statistics[0]].add_sum(total, n)

    def statistic_dims(self) -> dict[str, int]:
        """Feature dimension D of each statistic (empty before the input dimensions are known)."""
        return {} if self._stats is None else {k: acc.feature_dim for k, acc in self._stats.items()}

    def merge(self, other: AdditiveEstimator) -> Self:
        """Add another estimator's state (a shard) into this one, in place; both must have the same spec."""
        if not isinstance(other, AdditiveEstimator) or other.kind() != self.kind():
            raise StateMismatchError(f"cannot merge a {type(other).__name__} into a {type(self).__name__}")
        self._check_merge(other)  # type: ignore[arg-type]  # same kind, checked above
        mine, theirs = self._params(), other._params()
        if mine != theirs:
            differ = sorted(k for k in {*mine, *theirs} if mine.get(k) != theirs.get(k))
            raise StateMismatchError(
                f"cannot merge {self.kind()} states whose parameters differ in {', '.join(differ)}: "
                f"{_shown(theirs, differ)} into {_shown(mine, differ)}"
            )
        if other._stats is None:
            return self
        self._sync()
        other._sync()
        if self._stats is not None and self._input_dims() != other._input_dims():
            raise StateMismatchError(
                f"cannot merge states of input dimensions {other._input_dims()} into {self._input_dims()}"
            )
        if self._stats is None:
            dims = {k: v for k, v in other._input_dims().items() if v is not None}
            self._initialise(**dims)
        assert self._stats is not None
        assert other._stats is not None
        for name in self.statistics:
            self._stats[name].merge(other._stats[name])
        return self

    # -- persistence ----------------------------------------------------------------------------------------
    def _keys(self, name: str) -> tuple[str, str]:
        """File members (upper triangle, n) of statistic ``name``."""
        return ("upper", "n") if len(self.statistics) == 1 else (f"{name}_upper", f"{name}_n")

    def save(self, path: str | Path) -> Path:
        """Write the state (each statistic's triangle and n, the spec as JSON, extra arrays) to .npz, atomically."""
        self._sync()
        if self._stats is None:
            raise InputError("nothing to save: the estimator has seen no data")
        arrays: dict[str, NDArray[Any]] = {}
        for name, acc in self._stats.items():
            packed = acc.to_arrays(self.spec())
            upper, count = self._keys(name)
            arrays[upper], arrays[count], arrays[_HEADER] = packed["upper"], packed["n"], packed["meta"]
        arrays.update(self._extra_arrays())
        return save_state(path, arrays)

    @classmethod
    def load(cls, path: str | Path) -> Self:
        """Read a state written by ``save``; refuses another estimator's file, a damaged one, or a header that does
        not rebuild to the same spec (InputError/StateMismatchError naming the file)."""
        arrays = load_state(path)
        if _HEADER not in arrays:
            raise InputError(f"{path}: not a t2ibench covariance state (no 'meta' array)")
        single = len(cls.statistics) == 1
        stats: dict[str, CovarianceAccumulator] = {}
        meta: dict[str, Any] = {}
        for name in cls.statistics:
            upper, count = ("upper", "n") if single else (f"{name}_upper", f"{name}_n")
            piece = {"upper": arrays.get(upper), "n": arrays.get(count), "meta": arrays[_HEADER]}
            if piece["upper"] is None or piece["n"] is None:
                found = meta.get("estimator") or _peek_kind(arrays[_HEADER])
                if found not in (None, cls.kind()):
                    raise StateMismatchError(f"{path}: holds a {found} state, not {cls.kind()}")
                raise InputError(f"{path}: not a {cls.kind()} state (no {name!r} statistic: members {upper}, {count})")
            stats[name], meta = CovarianceAccumulator.from_arrays(piece, source=str(path))
        if meta.get("estimator") != cls.kind():
            raise StateMismatchError(f"{path}: holds a {meta.get('estimator')} state, not {cls.kind()}")
        if len({acc.n for acc in stats.values()}) != 1:
            raise InputError(f"{path}: its statistics count different numbers of rows")
        try:
            est = cls._from_saved(meta, arrays)
        except (KeyError, TypeError, ValueError, InputError) as exc:
            raise InputError(f"{path}: not a t2ibench {cls.kind()} state (header {sorted(meta)}: {exc})") from None
        if est._stats is None:
            raise InputError(f"{path}: not a t2ibench {cls.kind()} state (no input dimensions in {sorted(meta)})")
        rebuilt = est.spec()
        unknown = sorted(set(meta) - set(rebuilt))
        if unknown:  # a parameter this estimator does not have: another version's or a damaged file, not this state
            raise InputError(
                f"{path}: not a t2ibench covariance state (parameters {', '.join(unknown)} are not {cls.kind()}'s)"
            )
        differ = sorted(k for k in meta if k in rebuilt and rebuilt[k] != meta[k])
        if differ:
            raise StateMismatchError(
                f"{path}: the state's header does not match the estimator it rebuilds, in {', '.join(differ)} "
                f"(file {_shown(meta, differ)}, rebuilt {_shown(rebuilt, differ)}): corrupt file"
            )
        dims = {k: acc.feature_dim for k, acc in stats.items()}
        if dims != est.statistic_dims():
            raise StateMismatchError(f"{path}: feature dimensions {dims} do not match the parameters {meta}")
        est._stats = stats
        return est


def _peek_kind(header: NDArray[Any]) -> str | None:
    """The estimator named in a state's JSON header, or None when it cannot be read."""
    import json

    try:
        meta = json.loads(str(np.asarray(header)))
    except ValueError:
        return None
    return meta.get("estimator") if isinstance(meta, dict) else None


def _shown(values: Mapping[str, Any], keys: list[str]) -> str:
    """``{key: value}`` for an error message, long values (digests, centres) cut to 16 characters."""
    parts = []
    for k in keys:
        text = repr(values.get(k))
        parts.append(f"{k}={text if len(text) <= 16 else text[:13] + '...'}")
    return "{" + ", ".join(parts) + "}"
