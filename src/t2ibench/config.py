"""Run configuration as data: YAML (safe_load) into frozen, validated dataclasses with did-you-mean errors.

A config lists the prompt suite, the models (a generator backend and its parameters each), the evaluators
(detector, colour model, embedders, diversity and Scendi parameters), the runtime and the output locations. Every
section has a stable hash; cache keys combine the section that matters for a step with the code version and the
hashes of the step's inputs, so changing one model's section recomputes that model only.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import types
import typing
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args, get_origin, get_type_hints

import yaml

from t2ibench.errors import InputError, unknown_choice

T = TypeVar("T")


@dataclass(frozen=True)
class GenEvalSuite:
    """The GenEval prompt suite (official: seed 43, 100 per task) and an optional subset of it."""

    seed: int = 43
    per_task: int = 100
    limit_per_task: int | None = None  # keep only the first N prompts of each task (smoke runs)
    prompts: str | None = None  # or explicit indices/ranges, e.g. "0-9,80-85"


@dataclass(frozen=True)
class GeneratorConfig:
    """How a model makes images: ``diffusers`` (hub id, path or tiny-random) or ``folder`` (import)."""

    backend: Literal["diffusers", "folder"] = "diffusers"
    model: str = "tiny-random"
    revision: str | None = None
    stage2: str | None = None
    source: str | None = None  # folder backend: GenEval-layout folder to import
    steps: int = 50
    guidance: float = 9.0
    negative_prompt: str | None = None
    height: int | None = None
    width: int | None = None
    images_per_prompt: int = 4
    seed: int = 42
    seeding: Literal["prompt", "sample"] = "prompt"
    batch_size: int | None = None
    dtype: str = "auto"
    scheduler: str | None = None


@dataclass(frozen=True)
class ModelConfig:
    """One leaderboard entry: a unique name and its generator."""

    name: str
    generator: GeneratorConfig = field(default_factory=GeneratorConfig)
    label: str | None = None


@dataclass(frozen=True)
class DetectorConfig:
    """GenEval's detector."""

    backend: Literal["hf", "mmdet"] = "hf"
    model: str = "facebook/mask2former-swin-small-coco-instance"
    revision: str | None = None
    resize: tuple[int, int] | None = (800, 1333)
    mmdet_config: str | None = None
    mmdet_checkpoint: str | None = None


@dataclass(frozen=True)
class ColourConfig:
    """GenEval's colour classifier."""

    arch: str = "ViT-L-14"
    pretrained: str | None = "openai"
    background: str = "#999999"


@dataclass(frozen=True)
class GenEvalConfig:
    """Detector, colour model and verdict thresholds."""

    detector: DetectorConfig = field(default_factory=DetectorConfig)
    colour: ColourConfig = field(default_factory=ColourConfig)
    threshold: float = 0.3
    counting_threshold: float = 0.9
    max_objects: int = 16
    max_overlap: float = 1.0
    position_margin: float = 0.1


@dataclass(frozen=True)
class EmbedderConfig:
    """An image/text embedder: ``open_clip`` (arch + pretrained) or ``dinov2`` (model, pooling)."""

    backend: Literal["open_clip", "dinov2"] = "dinov2"
    model: str = "facebook/dinov2-base"
    pretrained: str | None = None
    pooling: Literal["cls", "mean"] = "cls"
    normalize: bool = False
    dtype: str = "float32"


@dataclass(frozen=True)
class DiversityConfig:
    """FKEA/VENDI/RKE on the image embedder's features."""

    kernel: Literal["gaussian", "cosine"] = "gaussian"
    sigma: float | Literal["median"] = "median"
    rff_dim: int = 2000
    alphas: tuple[float | str, ...] = (1.0, 2.0, "inf")
    seed: int = 0
    shards: int = 4
    n_curve: tuple[int, ...] = ()  # sample sizes for the diversity-vs-n plot (each ≤ number of images)
    modes: int = 6
    top: int = 12


@dataclass(frozen=True)
class ScendiConfig:
    """Scendi on CLIP (image, prompt) pairs."""

    kernel: Literal["gaussian", "cosine"] = "gaussian"
    image_sigma: float | Literal["median"] = "median"
    text_sigma: float | Literal["median"] = "median"
    rff_dim: int = 1000
    epsilon: float = 1e-6
    seed: int = 0
    modes: int = 6
    top: int = 12


@dataclass(frozen=True)
class Evaluators:
    """All evaluators of a run."""

    geneval: GenEvalConfig = field(default_factory=GenEvalConfig)
    image_embedder: EmbedderConfig = field(default_factory=EmbedderConfig)
    clip: EmbedderConfig = field(
        default_factory=lambda: EmbedderConfig(
            backend="open_clip", model="ViT-L-14", pretrained="openai", normalize=True
        )
    )
    diversity: DiversityConfig = field(default_factory=DiversityConfig)
    scendi: ScendiConfig = field(default_factory=ScendiConfig)


@dataclass(frozen=True)
class Runtime:
    """Where and how tasks run."""

    device: str = "auto"
    task_runner: Literal["local", "dask"] = "local"
    workers: int = 2
    retries: int = 2
    retry_delay_seconds: tuple[float, ...] = (10.0, 60.0)


@dataclass(frozen=True)
class Outputs:
    """Where results go (relative paths are relative to the workspace: the folder holding ``configs/``)."""

    data: str = "data"
    reports: str = "reports"
    store: str = "data/t2ibench.duckdb"
    cache: str = "data/cache"


@dataclass(frozen=True)
class Config:
    """A whole run."""

    name: str
    models: tuple[ModelConfig, ...]
    geneval: GenEvalSuite = field(default_factory=GenEvalSuite)
    evaluators: Evaluators = field(default_factory=Evaluators)
    runtime: Runtime = field(default_factory=Runtime)
    outputs: Outputs = field(default_factory=Outputs)
    description: str = ""

    def __post_init__(self) -> None:
        names = [m.name for m in self.models]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise InputError(f"models: names must be unique; repeated: {', '.join(duplicates)}")
        if not self.models:
            raise InputError("models: list at least one model")

    def model(self, name: str) -> ModelConfig:
        """The model called ``name`` (did-you-mean on a typo)."""
        for m in self.models:
            if m.name == name:
                return m
        raise unknown_choice("model", name, [m.name for m in self.models])

    @property
    def smoke(self) -> bool:
        """True when any model or evaluator is a built-in random-weight smoke model."""
        ev = self.evaluators
        names = [m.generator.model for m in self.models] + [
            ev.geneval.detector.model,
            ev.geneval.colour.arch,
            ev.image_embedder.model,
            ev.clip.model,
        ]
        return any(str(n).startswith("tiny-random") for n in names)


def section_hash(section: Any) -> str:
    """16-hex-digit SHA-256 of a config section's canonical JSON."""
    return hashlib.sha256(json.dumps(to_plain(section), sort_keys=True).encode()).hexdigest()[:16]


def to_plain(value: Any) -> Any:
    """Dataclasses, tuples and infinities as plain JSON-ready values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    return value


# -- loading --------------------------------------------------------------------------------------------------


def load_config(path: str | Path) -> Config:
    """Read and validate a YAML config (safe_load: no Python tags); InputError names the file and the key."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{p}: cannot read ({exc.strerror})") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError(f"{p}: not valid YAML (safe_load; Python tags are refused): {exc}") from None
    return parse_config(raw, source=str(p))


def parse_config(raw: Any, *, source: str = "config") -> Config:
    """Build a Config from a parsed mapping; errors name ``source`` and the dotted key."""
    return _build(Config, raw, f"{source}:")


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", str(tp))


def _build(cls: type[T], raw: Any, where: str) -> T:
    if not isinstance(raw, dict):
        raise InputError(f"{where} expected a mapping for {cls.__name__}, got {type(raw).__name__}")
    hints = get_type_hints(cls)
    known = {f.name: f for f in fields(cls)}  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in known:
            raise InputError(f"{where} {unknown_choice('key', key, list(known))}")
        kwargs[key] = _coerce(hints[key], value, f"{where}{'' if where.endswith(':') else '.'}{key}")
    missing = [
        name
        for name, f in known.items()
        if name not in kwargs and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise InputError(f"{where} missing required key(s): {', '.join(missing)}")
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise InputError(f"{where} {exc}") from None


def _coerce(tp: Any, value: Any, where: str) -> Any:
    origin = get_origin(tp)
    args = get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for option in (a for a in args if a is not type(None)):
            try:
                return _coerce(option, value, where)
            except InputError as exc:
                errors.append(str(exc).split(": ", 1)[-1])
        raise InputError(f"{where}: {value!r} is not a valid value ({'; '.join(errors)})")
    if origin is Literal:
        if value not in args:
            raise InputError(f"{where}: {unknown_choice('value', value, [str(a) for a in args])}")
        return value
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise InputError(f"{where}: expected a list, got {value!r}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
        if len(value) != len(args):
            raise InputError(f"{where}: expected {len(args)} values, got {len(value)}")
        return tuple(_coerce(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, value, strict=True)))
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _build(tp, value, where)
    if tp is bool:
        if not isinstance(value, bool):
            raise InputError(f"{where}: expected true or false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputError(f"{where}: expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise InputError(f"{where}: expected a string, got {value!r}")
        return value
    raise InputError(f"{where}: unsupported type {_type_name(tp)}")
