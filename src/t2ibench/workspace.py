"""The workspace: where a config's outputs live, and nothing else.

A workspace is the folder holding ``configs/`` (a checkout of this repository, or any folder laid out like one) and
the config's ``outputs`` section. Every output path of a refresh comes from ``Workspace``: no step builds a path of
its own. Folders are named by versions — the hash of the settings of the step that writes them
(``t2ibench.pipeline.identity``) — so a changed model or evaluator writes next to, never over, the files an older
stored version points to:

    <data>/images/<model>/<model_hash>/                           generated or imported images (GenEval layout)
    <data>/results/<model>/<model_hash>-<geneval hash>/           GenEval verdicts (results.jsonl, shards/)
    <data>/embeddings/<model>/<model_hash>-<embed hash>/          features and ids
    <data>/embeddings/<model>/<model_hash>-<embed hash>/fkea-<h>/ FKEA shard states
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from t2ibench.config import Config, Outputs, workspace_root
from t2ibench.errors import FieldError, InputError

SHARD_LABEL = re.compile(r"p[0-9]{5,}-p[0-9]{5,}")
VERSION = re.compile(r"[0-9a-f]{16}")


def _version(*names: str) -> str:
    for name in names:
        if not VERSION.fullmatch(name):
            raise InputError(f"{name!r}: not a version hash (16 hex digits)")
    return "-".join(names)


@dataclass(frozen=True)
class Workspace:
    """Where a config's outputs go: ``outputs``' paths, relative ones taken from the workspace ``root``."""

    root: Path
    outputs: Outputs

    def __post_init__(self) -> None:
        try:
            self.outputs.check_inside(self.root)
        except FieldError as exc:
            raise InputError(f"outputs.{exc.field}: {exc.message}") from None

    @classmethod
    def for_config(cls, config: Config, config_path: str | Path) -> Workspace:
        """The workspace of a config file: the parent of its ``configs/`` folder, else the file's folder."""
        return cls(root=workspace_root(config_path), outputs=config.outputs)

    def path(self, relative: str) -> Path:
        """A workspace path (absolute paths stay as they are)."""
        p = Path(relative)
        return p if p.is_absolute() else self.root / p

    # -- the config's output locations --------------------------------------------------------------------------
    @property
    def data(self) -> Path:
        """The config's data folder."""
        return self.path(self.outputs.data)

    @property
    def reports(self) -> Path:
        """The config's reports folder."""
        return self.path(self.outputs.reports)

    @property
    def store(self) -> Path:
        """The DuckDB file."""
        return self.path(self.outputs.store)

    @property
    def cache(self) -> Path:
        """The embedding cache root (content-keyed: may be shared between workspaces)."""
        return self.path(self.outputs.cache)

    @property
    def log(self) -> Path:
        """The refresh log, ``<data>/logs/refresh.log``."""
        return self.data / "logs" / "refresh.log"

    # -- per-model version folders and files -------------------------------------------------------------------
    def images_dir(self, model: str, model_hash: str) -> Path:
        """data/images/<model>/<model_hash>: the model version's images in the prompt-folder layout (suites.layout)."""
        return self.data / "images" / model / _version(model_hash)

    def results_dir(self, model: str, model_hash: str, key: str) -> Path:
        """data/results/<model>/<model_hash>-<key>: a benchmark's results, ``key`` the hash of its judging step's
        settings."""
        return self.data / "results" / model / _version(model_hash, key)

    def results_file(self, model: str, model_hash: str, key: str, benchmark: str) -> Path:
        """The model version's results of ``benchmark`` (one JSON line per image), ``<benchmark>_results.jsonl``."""
        return self.results_dir(model, model_hash, key) / f"{benchmark}_results.jsonl"

    def shard_results_file(self, model: str, model_hash: str, key: str, benchmark: str, shard: str) -> Path:
        """One prompt shard's results of ``benchmark`` (``shard`` a label such as 'p00000-p00099'), merged into
        ``results_file``."""
        if not SHARD_LABEL.fullmatch(shard):
            raise InputError(f"{shard!r}: not a prompt-shard label such as 'p00000-p00099'")
        return self.results_dir(model, model_hash, key) / "shards" / f"{benchmark}_results.{shard}.jsonl"

    def embeddings_dir(self, model: str, model_hash: str, embed: str) -> Path:
        """data/embeddings/<model>/<model_hash>-<hash of the embed step's settings>."""
        return self.data / "embeddings" / model / _version(model_hash, embed)

    def shard_state(self, model: str, model_hash: str, embed: str, fkea: str, shard: int, shards: int) -> Path:
        """The FKEA (or cosine) state of one shard of the model version's image features."""
        folder = self.embeddings_dir(model, model_hash, embed) / f"fkea-{_version(fkea)}"
        return folder / f"diversity_state_{shard}of{shards}.npz"

    def selftest_dir(self, key: str) -> Path:
        """data/selftest/<hash of the self-test step's settings>: the evaluator self-test's images."""
        return self.data / "selftest" / _version(key)

    def version_roots(self) -> tuple[Path, ...]:
        """The folders holding every version folder (what ``t2ibench gc`` prunes)."""
        return (self.data / "images", self.data / "results", self.data / "embeddings")
