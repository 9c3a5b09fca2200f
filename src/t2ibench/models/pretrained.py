"""What the adapters of one ``from_pretrained`` checkpoint share: where the weights come from (a hub id, a local
folder, or for 'tiny-random[:SEED]' a random-weight build made once), the keywords ``from_pretrained`` takes for it,
the weights' identity for the store, and the one-line refusal of one that cannot be loaded."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from t2ibench.embed_cache import weights_checksum
from t2ibench.errors import InputError
from t2ibench.models._torch import quiet_loading
from t2ibench.models.hub import Resolved, load_from


class Pretrained:
    """Base of an adapter built from a spec with ``model``, ``revision`` and ``hub_sources()``; ``what`` names the
    model in messages ('VQA judge'), ``tiny`` builds the 'tiny-random' checkpoint of a seed (``models.tiny*``)."""

    what = "model"

    def __init__(self, spec: Any, tiny: Callable[[int], Path], *, device: str = "auto") -> None:
        self.spec = spec
        self.device_spec = device
        self._tiny = tiny
        self._source: Resolved | None = None
        self._weights: str | None = None

    def resolved(self) -> Resolved:
        """The hub id or folder ``from_pretrained`` reads (a missing folder, or a hub id neither cached nor reachable,
        is refused here, before anything loads)."""
        if self._source is None:
            from t2ibench.models.tiny import parse_tiny

            seed = parse_tiny(self.spec.model)
            if seed is None:
                self._source = load_from(self.spec.hub_sources()[0], self.what)
            else:
                with quiet_loading():
                    self._source = Resolved(str(self._tiny(seed)))
        return self._source

    def pretrained_kwargs(self) -> dict[str, Any]:
        """``from_pretrained``'s revision and whether only local files may be read."""
        return {"revision": self.spec.revision, "local_files_only": self.resolved().local_files_only}

    def weights(self) -> str:
        """The SHA-256 of a local folder's files ('' for a hub id: its revision names it), once per adapter."""
        if self._weights is None:
            source = self.resolved().source
            self._weights = weights_checksum(Path(source)) if Path(source).is_dir() else ""
        return self._weights

    @staticmethod
    def commit(model: Any) -> str | None:
        """The hub commit ``from_pretrained`` resolved for the loaded ``model`` (None for a local folder, whose files'
        checksum is ``weights()``): two snapshots of one hub id are two protocols."""
        commit = getattr(getattr(model, "config", None), "_commit_hash", None)
        return str(commit) if commit else None

    def refuse(self, what: str) -> InputError:
        """A one-line error about this model."""
        return InputError(f"{self.what} {self.spec.model!r}: {what}")

    def load_error(self, exc: BaseException) -> InputError:
        """The refusal of a checkpoint ``from_pretrained`` could not load, with its reason."""
        detail = " ".join(str(exc).split())[:300]
        return self.refuse(f"cannot load it ({detail}). Offline? Pass a local directory.")
