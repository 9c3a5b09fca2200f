"""The workspace: where a config's outputs live, and the identities that name their versions.

A workspace is the folder holding ``configs/`` (a checkout of this repository, or any folder laid out like one).
Every output path of a refresh comes from ``Workspace``: no step builds a path of its own. Versions are content
hashes, so a changed model or evaluator writes next to, never over, the files an older stored version points to:

    <data>/images/<model>/<model_hash>/                          generated or imported images (GenEval layout)
    <data>/results/<model>/<model_hash>-<geneval section hash>/  GenEval verdicts (results.jsonl)
    <data>/embeddings/<model>/<model_hash>-<evaluators hash>/    features, ids, FKEA shard states
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from t2ibench.config import Config, GenEvalSuite, ModelConfig, workspace_root
from t2ibench.errors import FieldError, InputError, unknown_choice
from t2ibench.hashing import content_hash, outputs_digest, section_hash, to_plain, tree_digest

STEPS_WITH_FILES = ("generate", "embed", "geneval")


def suite_id(suite: GenEvalSuite) -> str:
    """Name of a generated suite in the store: 'geneval' for the official one, else with seed and size."""
    official = suite.seed == 43 and suite.per_task == 100
    return "geneval" if official else f"geneval-s{suite.seed}-n{suite.per_task}"


def model_hash(model: ModelConfig, suite: GenEvalSuite) -> str:
    """Hash of how a model's images are made (its generator section and the prompt selection)."""
    return content_hash({"generator": to_plain(model.generator), "suite": to_plain(suite)})


def evaluator_hash(config: Config) -> str:
    """Hash of everything that judges images (GenEval evaluators, embedders, metric parameters)."""
    return section_hash(config.evaluators)


@dataclass(frozen=True)
class EmbeddingFiles:
    """The three feature matrices of one model version (paths as strings, so results serialise as JSON)."""

    image: str
    clip_image: str
    clip_text: str

    def paths(self) -> list[Path]:
        """The three files."""
        return [Path(self.image), Path(self.clip_image), Path(self.clip_text)]


@dataclass(frozen=True)
class Workspace:
    """Where a config's outputs go: paths relative to the workspace root (the folder holding ``configs/``)."""

    root: Path
    config: Config

    def __post_init__(self) -> None:
        try:
            self.config.outputs.check_inside(self.root)
        except FieldError as exc:
            raise InputError(f"outputs.{exc.field}: {exc.message}") from None

    @classmethod
    def for_config(cls, config: Config, config_path: str | Path) -> Workspace:
        """The workspace of a config file: the parent of its ``configs/`` folder, else the file's folder."""
        return cls(root=workspace_root(config_path), config=config)

    def path(self, relative: str) -> Path:
        """A workspace path (absolute paths stay as they are)."""
        p = Path(relative)
        return p if p.is_absolute() else self.root / p

    # -- the config's output locations --------------------------------------------------------------------------
    @property
    def data(self) -> Path:
        """The config's data folder."""
        return self.path(self.config.outputs.data)

    @property
    def reports(self) -> Path:
        """The config's reports folder."""
        return self.path(self.config.outputs.reports)

    @property
    def store(self) -> Path:
        """The DuckDB file."""
        return self.path(self.config.outputs.store)

    @property
    def cache(self) -> Path:
        """The embedding cache root."""
        return self.path(self.config.outputs.cache)

    # -- versions -------------------------------------------------------------------------------------------
    @property
    def suite_id(self) -> str:
        """The prompt suite's name in the store."""
        return suite_id(self.config.geneval)

    @property
    def evaluator_hash(self) -> str:
        """The evaluation version of every model in this config."""
        return evaluator_hash(self.config)

    def model(self, name: str) -> ModelConfig:
        """The config's model called ``name`` (did-you-mean on a typo)."""
        for m in self.config.models:
            if m.name == name:
                return m
        raise unknown_choice("model", name, [m.name for m in self.config.models])

    def model_hash(self, name: str) -> str:
        """The image version of model ``name``."""
        return model_hash(self.model(name), self.config.geneval)

    # -- per-model folders and files --------------------------------------------------------------------------
    def images_dir(self, name: str) -> Path:
        """data/images/<model>/<model_hash>: the model's images in GenEval's layout."""
        return self.data / "images" / name / self.model_hash(name)

    def results_dir(self, name: str) -> Path:
        """data/results/<model>/<model_hash>-<hash of the GenEval evaluator section>."""
        return self.data / "results" / name / f"{self.model_hash(name)}-{section_hash(self.config.evaluators.geneval)}"

    def results_file(self, name: str) -> Path:
        """The model version's GenEval results (GenEval's results.jsonl format)."""
        return self.results_dir(name) / "geneval_results.jsonl"

    def geneval_shard_file(self, name: str, shard: str) -> Path:
        """One prompt shard's GenEval results (``shard`` a label such as 'p00000-p00099'), merged into results_file."""
        if not re.fullmatch(r"p[0-9]{5,}-p[0-9]{5,}", shard):
            raise InputError(f"{shard!r}: not a prompt-shard label such as 'p00000-p00099'")
        return self.results_dir(name) / "shards" / f"geneval_results.{shard}.jsonl"

    def embeddings_dir(self, name: str) -> Path:
        """data/embeddings/<model>/<model_hash>-<hash of every evaluator>."""
        return self.data / "embeddings" / name / f"{self.model_hash(name)}-{section_hash(self.config.evaluators)}"

    def embedding_files(self, name: str) -> EmbeddingFiles:
        """Image-embedder, CLIP image and CLIP text features of the model version."""
        folder = self.embeddings_dir(name)
        return EmbeddingFiles(
            image=str(folder / "image_features.npy"),
            clip_image=str(folder / "clip_image_features.npy"),
            clip_text=str(folder / "clip_text_features.npy"),
        )

    def embedding_ids(self, name: str) -> Path:
        """Which prompt and sample each feature row belongs to (JSON)."""
        return self.embeddings_dir(name) / "ids.json"

    def shard_state(self, name: str, shard: int, shards: int) -> Path:
        """The FKEA (or cosine) state of one shard of the model's image features."""
        return self.embeddings_dir(name) / f"diversity_state_{shard}of{shards}.npz"

    def expected_outputs(self, step: str, name: str) -> list[Path]:
        """The files a step leaves behind for model ``name`` (what its cache entry relies on)."""
        if step == "generate":
            folder = self.images_dir(name)
            return [folder / "manifest.json", folder / "samples.jsonl"]
        if step == "embed":
            return [*self.embedding_files(name).paths(), self.embedding_ids(name)]
        if step == "geneval":
            return [self.results_file(name)]
        raise unknown_choice("step with files", step, STEPS_WITH_FILES)

    def outputs_gone(self, step: str, name: str) -> bool:
        """True when any file a cached step relies on is missing (the step must run again)."""
        return outputs_digest(self.expected_outputs(step, name)) == "absent"

    def local_inputs_digest(self, name: str) -> str:
        """A stat digest of the local files a model's images come from: the folder backend's source, or a diffusers
        model given as a local directory; '' for hub ids. Part of the generate cache key, so replacing those files
        (same config) re-imports or regenerates instead of reusing stale images."""
        g = self.model(name).generator
        return tree_digest(self.path(g.source) if g.backend == "folder" and g.source else Path(g.model))
