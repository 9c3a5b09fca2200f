"""Run configuration as data: YAML (safe_load) into frozen, validated dataclasses with did-you-mean errors.

A config lists the prompt suite, the models (a generator backend and its parameters each), the evaluators
(detector, colour model, embedders, diversity and Scendi parameters), the runtime and the output locations. Every
section has a stable hash; cache keys combine the section that matters for a step with the code version and the
hashes of the step's inputs, so changing one model's section recomputes that model only.

The sections that describe a model or an evaluator model (``GeneratorConfig``, ``DetectorConfig``, ``ColourConfig``,
``EmbedderConfig``) are specs, defined in ``t2ibench.specs`` and re-exported here; reading a config also checks each
spec's ``backend`` against its registry in ``t2ibench.models.registry`` (``BACKENDS``). Import direction: specs ←
models.registry ← config, and specs ← the model adapters; nothing in ``t2ibench.models`` imports this module.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, get_args

from t2ibench.benchmarks import SPINE, benchmark_options, label, names, prompt_wordings
from t2ibench.benchmarks import benchmark as spine_lookup
from t2ibench.benchmarks.geneval.suite_published import BUILTIN, load_published
from t2ibench.errors import FieldError, InputError, unknown_choice
from t2ibench.fields import check_ranges, decode, type_hints
from t2ibench.io import load_yaml, read_text_file
from t2ibench.metrics.checks import MIN_SIGMA, KernelName, ScendiInverse, check_alphas, check_memory
from t2ibench.models.registry import COLOUR_CLASSIFIERS, DETECTORS, EMBEDDERS, GENERATORS, VQA_JUDGES, Registry
from t2ibench.specs import ColourConfig as ColourConfig
from t2ibench.specs import DetectorConfig as DetectorConfig
from t2ibench.specs import EmbedderConfig as EmbedderConfig
from t2ibench.specs import GeneratorConfig as GeneratorConfig
from t2ibench.specs import ModelSource, check_int, check_seed
from t2ibench.specs import VQAJudgeConfig as VQAJudgeConfig
from t2ibench.specs import visible_text as visible_text  # re-exported: its home is t2ibench.specs
from t2ibench.suites.selection import parse_indices as parse_indices
from t2ibench.suites.selection import select_indices as select_indices

T = TypeVar("T")

MAX_SHARDS = 4096
DIGITS = re.compile(r"[0-9]+")
NAME_RULE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+=@-]{0,127}")

# the registry that names each spec's backends: a config's ``backend: x`` is checked against it when the config is
# read (with a did-you-mean error), before the spec's own field checks run
BACKENDS: dict[type, Registry[Any, Any]] = {
    GeneratorConfig: GENERATORS,
    DetectorConfig: DETECTORS,
    ColourConfig: COLOUR_CLASSIFIERS,
    EmbedderConfig: EMBEDDERS,
    VQAJudgeConfig: VQA_JUDGES,
}


def check_name(value: str, *, what: str) -> str:
    """A name used as a file or folder name: no separators, '..', leading dot, spaces or control characters."""
    if not NAME_RULE.fullmatch(value):
        raise InputError(
            f"{what} {value!r} cannot be used as a folder name: use letters, digits and _ . + = @ - (not first: "
            "a dot or dash), at most 128 characters, no '/', spaces or control characters"
        )
    return value


# How a Gaussian bandwidth is set (besides a number in embedding units) — the one spelling of each rule, in the
# config (``sigma: median``), in a stored σ's source ('median:<model>', 'reference:<set>@<digest>') and in the plan's
# step names ('median-bandwidth', 'reference-bandwidth'):
# "reference" (the default): the median pairwise distance of the embedder's features of a fixed, named reference set
#   (t2ibench.suites.reference) — one σ per embedding space, the same for every model, run and leaderboard;
# "median": each model's own median pairwise distance (the median heuristic) — its scores are then not comparable
#   with another model's (the leaderboard does not rank them against each other).
BandwidthRule = Literal["reference", "median"]
BANDWIDTH_RULES: tuple[BandwidthRule, ...] = get_args(BandwidthRule)
BandwidthSetting = float | BandwidthRule


def _bandwidth(section: Any, name: str) -> None:
    value = getattr(section, name)
    if value not in BANDWIDTH_RULES and not (math.isfinite(value) and value >= MIN_SIGMA):
        rules = " or ".join(repr(r) for r in BANDWIDTH_RULES)
        raise FieldError(name, f"must be a number ≥ {MIN_SIGMA:g} (embedding units), {rules}; got {value!r}")


def _rff_memory(section: Any) -> None:
    check_int(section, "rff_dim", 1)
    features = 2 * section.rff_dim
    try:  # the D × D float64 covariance, its eigendecomposition workspace and the eigenvectors
        check_memory(3 * features * features * 8, what=f"rff_dim {section.rff_dim} (a {features}² covariance)")
    except InputError as exc:
        raise FieldError("rff_dim", str(exc)) from None


BENCHMARK_NAMES = names()  # the benchmarks a refresh can run: the registry's (t2ibench.benchmarks.REGISTRY)
# each registered benchmark's own options (its ``options`` module: SELECTION for ``benchmarks.<name>``, EVALUATOR for
# ``evaluators.<name>``)
BENCHMARK_OPTIONS = {name: o for name in BENCHMARK_NAMES if (o := benchmark_options(name)) is not None}


@dataclass(frozen=True)
class BenchmarkSelections:
    """The benchmarks a refresh runs and their prompt selections (``Benchmarks`` adds one field per registered
    benchmark, of its options' SELECTION type): the spine (``benchmarks.SPINE``, always: its images are also what the
    diversity metrics measure, one prompt set shared by every model) and each other one when its key is given."""

    @property
    def names(self) -> tuple[str, ...]:
        """The configured benchmarks, in run order (the spine, then registry order)."""
        return (SPINE, *(n for n in BENCHMARK_OPTIONS if n != SPINE and self.selection(n) is not None))

    def selection(self, name: str) -> Any:
        """Benchmark ``name``'s prompt selection (its options' SELECTION), None when it is not configured."""
        return getattr(self, _with_options(name))


def _with_options(name: str) -> str:
    """``name`` when it is a registered benchmark with options of its own, else InputError (did-you-mean)."""
    if name not in BENCHMARK_OPTIONS:
        raise unknown_choice("benchmark with options", name, list(BENCHMARK_OPTIONS))
    return name


def _per_benchmark(base: type, name: str, field_of: Any) -> type:
    """``base`` extended with one field per registered benchmark with options (``field_of(name, options)``: the
    field's type and ``dataclasses.field``), so that the YAML decoder, the docs and every check see one field per
    benchmark; mypy sees ``base``."""
    made = dataclasses.make_dataclass(
        name,
        [(n, *field_of(n, o)) for n, o in BENCHMARK_OPTIONS.items()],
        bases=(base,),
        frozen=True,
        namespace={"__module__": __name__, "__doc__": base.__doc__},
    )
    return made


if TYPE_CHECKING:
    Benchmarks = BenchmarkSelections
else:  # the spine's prompt selection (always) and one optional selection per other benchmark (not run unless given)
    Benchmarks = _per_benchmark(
        BenchmarkSelections,
        "Benchmarks",
        lambda n, o: (
            (o.SELECTION, field(default_factory=o.SELECTION))
            if n == SPINE
            else (o.SELECTION | None, field(default=None))
        ),
    )


@dataclass(frozen=True)
class Checkpoint:
    """One point of a checkpoint series: its training step and where its weights are (a local path or hub id, and/or a
    hub revision), replacing the series' generator's."""

    step: int
    model: str | None = None
    revision: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.step, bool) or not isinstance(self.step, int) or self.step < 0:
            raise FieldError("step", f"must be a training step (an integer ≥ 0); got {self.step!r}")
        if self.model is None and self.revision is None:
            raise FieldError("model", "a checkpoint names its weights: give model (a path or hub id) or revision")


@dataclass(frozen=True)
class ModelConfig:
    """One leaderboard entry: a unique name and its generator (or a checkpoint series of them)."""

    name: str
    generator: GeneratorConfig = field(default_factory=GeneratorConfig)
    label: str | None = None
    # the benchmarks this model runs (None: every configured one); GenEval is always among them
    benchmarks: tuple[str, ...] | None = None
    # the wording of the spine's prompts this model is given: "original" (as written), or a rewrite the spine's suite
    # pins (GenEval: "rewritten", its prompts rewritten long by an LLM; a separate protocol, marked †, never ranked
    # with the originals)
    wording: str = "original"
    # a checkpoint series (a training run's checkpoints): one model per checkpoint, named '<name>@<step>' and in series
    # '<name>', each this entry's generator with the checkpoint's model and/or revision — a version of its own, so
    # adding a checkpoint runs only it
    checkpoints: tuple[Checkpoint, ...] = ()
    # the series this model is a point of, and its training step (set by checkpoints:, or by hand — e.g. a folder
    # model per checkpoint): the report draws each series' scores against the step
    series: str | None = None
    step: int | None = None

    def __post_init__(self) -> None:
        try:
            check_name(self.name, what="model name")
        except InputError as exc:
            raise FieldError("name", str(exc)) from None
        if (self.series is None) != (self.step is None):
            raise FieldError("series", "a point of a series gives both series and step")
        if self.series is not None:
            try:
                check_name(self.series, what="series name")
            except InputError as exc:
                raise FieldError("series", str(exc)) from None
            if isinstance(self.step, bool) or not isinstance(self.step, int) or self.step < 0:
                raise FieldError("step", f"must be a training step (an integer ≥ 0); got {self.step!r}")
        if self.checkpoints:
            if self.series is not None:
                raise FieldError("checkpoints", "a series entry is not itself a point: drop series and step")
            steps = [c.step for c in self.checkpoints]
            if len(set(steps)) != len(steps):
                raise FieldError("checkpoints", f"lists a step twice: {steps}")
        if self.benchmarks is not None:
            for b in self.benchmarks:
                if b not in BENCHMARK_NAMES:
                    raise FieldError("benchmarks", str(unknown_choice("benchmark", b, BENCHMARK_NAMES)))
            if SPINE not in self.benchmarks or len(set(self.benchmarks)) != len(self.benchmarks):
                raise FieldError(
                    "benchmarks",
                    f"must list {SPINE} (its images are what diversity measures) and each benchmark once; "
                    f"got {list(self.benchmarks)}",
                )
        wordings = prompt_wordings()
        if self.wording not in wordings:
            raise FieldError("wording", str(unknown_choice("wording", self.wording, wordings)))
        if self.label is not None and (not self.label.strip() or not visible_text(self.label)):
            raise FieldError(
                "label", f"must be one line of visible text (no control or bidi characters); got {self.label!r}"
            )


@dataclass(frozen=True)
class DiversityConfig:
    """FKEA/VENDI/RKE on the image embedder's features."""

    kernel: KernelName = "gaussian"
    sigma: BandwidthSetting = "reference"  # embedding units, or a rule (BANDWIDTH_RULES)
    rff_dim: int = 2000
    alphas: tuple[float | str, ...] = (1.0, 2.0, "inf")
    seed: int = 0
    shards: int = 4
    n_curve: tuple[int, ...] = ()  # sample sizes for the diversity-vs-n plot (each ≤ number of images)
    modes: int = 6
    top: int = 12
    bootstrap: int = 200  # resamples of the prompts for the VENDI/RKE intervals (0: no intervals)
    # above this many images the intervals are not computed: B resamples cost O(B · min(0.63 n, 2 rff_dim)³)
    bootstrap_max_n: int = 5000
    # truncated VENDI (Ospanov & Farnia 2025): the top t eigenvalues of FKEA's spectrum with the leftover mass
    # spread over them; it converges at n = O(t), so t = 100 settles on GenEval's 2,212 images per model (None: off)
    truncation: int | None = 100
    # FKEA's frequencies as orthogonal random features (Yu et al. 2016) instead of plain RFF: lower kernel error,
    # little change to VENDI (docs/metrics.md#orthogonal-random-features)
    orthogonal: bool = False
    # the convergence report of VENDI-1, VENDI-2, RKE and truncated VENDI-1: each on nested prompt subsets n/8 …
    # n with bootstrap bands and a verdict (docs/metrics.md#convergence); needs the bootstrap (≈ 1.2× its cost)
    convergence: bool = True

    def __post_init__(self) -> None:
        _bandwidth(self, "sigma")
        _rff_memory(self)
        try:
            parsed = check_alphas(self.alphas)
        except InputError as exc:
            raise FieldError("alphas", str(exc)) from None
        if len(parsed) != len(self.alphas):
            raise FieldError("alphas", f"lists an order twice: {list(self.alphas)}")
        check_seed(self)
        check_int(self, "shards", 1, MAX_SHARDS)
        for n in self.n_curve:
            if n < 1:
                raise FieldError("n_curve", f"sample sizes must be ≥ 1; got {list(self.n_curve)}")
        if len(set(self.n_curve)) != len(self.n_curve):
            raise FieldError("n_curve", f"lists a sample size twice: {list(self.n_curve)}")
        check_int(self, "modes", 1, 1000)
        check_int(self, "top", 1, 1000)
        check_int(self, "bootstrap", 0, 100_000)
        check_int(self, "bootstrap_max_n", 2)
        check_int(self, "truncation", 1, 1_000_000)
        if not isinstance(self.orthogonal, bool):
            raise FieldError("orthogonal", f"must be true or false; got {self.orthogonal!r}")
        if not isinstance(self.convergence, bool):
            raise FieldError("convergence", f"must be true or false; got {self.convergence!r}")


@dataclass(frozen=True)
class ScendiConfig:
    """Scendi on CLIP (image, prompt) pairs."""

    kernel: KernelName = "gaussian"
    image_sigma: BandwidthSetting = "reference"  # the CLIP image features' σ (BANDWIDTH_RULES)
    text_sigma: BandwidthSetting = "reference"  # the CLIP text features' σ
    rff_dim: int = 1000
    epsilon: float = 1e-6
    seed: int = 0
    modes: int = 6
    top: int = 12
    # how C_TT⁻¹ is regularised: "ridge" (C_TT + ε·Tr C_TT·I)⁻¹, or "pinv", the reference repository's choice
    # (torch.linalg.pinv's default cut-off on a float32 C_TT; ε unused). It decides the number: docs/metrics.md
    inverse: ScendiInverse = "ridge"
    # Scendi and conditional/information VENDI refitted on the nested prompt subsets n/8, n/4, n/2 (no bootstrap
    # band: judged by the change rule alone, docs/metrics.md#convergence); three more fits per model
    convergence: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.convergence, bool):
            raise FieldError("convergence", f"must be true or false; got {self.convergence!r}")
        _bandwidth(self, "image_sigma")
        _bandwidth(self, "text_sigma")
        _rff_memory(self)
        if not (math.isfinite(self.epsilon) and 0 < self.epsilon < 1):
            raise FieldError("epsilon", f"must be in (0, 1) (a ridge relative to Tr C_TT); got {self.epsilon!r}")
        if self.inverse not in get_args(ScendiInverse):
            raise FieldError("inverse", str(unknown_choice("inverse", self.inverse, get_args(ScendiInverse))))
        check_seed(self)
        check_int(self, "modes", 1, 1000)
        check_int(self, "top", 1, 1000)


@dataclass(frozen=True)
class SelftestConfig:
    """The evaluator self-test a refresh runs for its GenEval evaluator (``benchmarks.geneval.selftest``), so the
    leaderboard states the evaluator's measured trust beside its scores: compositor prompts per task and images per
    prompt, the compositor variants, the seed of the compositor and of the absent-object probes, and whether the
    bundled real-photograph truth set is judged too."""

    per_task: int = 8
    images_per_prompt: int = 1
    variants: tuple[str, ...] = ("faithful", "sloppy:0.5")
    seed: int = 0
    photos: bool = True

    def __post_init__(self) -> None:
        from t2ibench.specs import parse_variant

        for name, value, top in (("per_task", self.per_task, 1000), ("images_per_prompt", self.images_per_prompt, 100)):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
                raise FieldError(name, f"must be an integer in [1, {top}]; got {value!r}")
        if not self.variants:
            raise FieldError("variants", "must name at least one compositor variant")
        for v in self.variants:
            try:
                parse_variant(v)
            except InputError as exc:
                raise FieldError("variants", str(exc)) from None
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise FieldError("seed", f"must be an integer ≥ 0; got {self.seed!r}")


@dataclass(frozen=True)
class EvaluatorSettings:
    """All evaluators of a run (``Evaluators`` adds one field per registered benchmark with options: its EVALUATOR,
    used when ``benchmarks.<name>`` is given)."""

    image_embedder: EmbedderConfig = field(default_factory=EmbedderConfig)
    clip: EmbedderConfig = field(
        default_factory=lambda: EmbedderConfig(
            backend="open_clip", model="ViT-L-14", pretrained="openai", normalize=True
        )
    )
    diversity: DiversityConfig = field(default_factory=DiversityConfig)
    scendi: ScendiConfig = field(default_factory=ScendiConfig)
    # the self-test of the spine's evaluator (None: not measured; the leaderboard says so)
    selftest: SelftestConfig | None = None
    # confidence level of every bootstrap interval a run stores (GenEval task/overall scores, diversity scores)
    ci_level: float = 0.95

    def __post_init__(self) -> None:
        if not (isinstance(self.ci_level, float) and 0.5 <= self.ci_level < 1.0):
            raise FieldError("ci_level", f"must be a confidence level in [0.5, 1); got {self.ci_level!r}")

    @property
    def lite(self) -> list[str]:
        """The offline stand-ins among the evaluators (empty for the reference ones): their numbers are labelled
        "lite evaluator, not comparable with published GenEval"."""
        parts = [part for name in BENCHMARK_OPTIONS for part in getattr(self.of(name), "lite", ())]
        if self.image_embedder.backend.startswith("mobilenet"):
            parts.append("image features: MobileNet-v2")
        if self.clip.backend == "mobilenet+structure":
            parts.append("prompt representation: structure one-hot (no text encoder)")
        return parts

    def of(self, name: str) -> Any:
        """Benchmark ``name``'s evaluator settings (its options' EVALUATOR)."""
        return getattr(self, _with_options(name))


if TYPE_CHECKING:
    Evaluators = EvaluatorSettings
else:  # the shared evaluators and one evaluator section per benchmark
    Evaluators = _per_benchmark(
        EvaluatorSettings, "Evaluators", lambda n, o: (o.EVALUATOR, field(default_factory=o.EVALUATOR))
    )


@dataclass(frozen=True)
class Runtime:
    """Where and how tasks run: the device, the task runner and its workers, the prompt shards, retries.

    ``task_runner``: ``local`` runs tasks in ``workers`` threads of the refresh process (default 1: one model's
    pipeline at a time on a GPU, and torch's own threads use every core); ``dask`` on a local Dask cluster of
    ``workers`` single-threaded worker processes (default 2), or on the running cluster whose
    scheduler ``address`` names (its workers are its own). ``devices`` (dask, local cluster only) starts one worker
    per accelerator, worker *i* seeing only device *i* (``CUDA_VISIBLE_DEVICES``). ``prompts_per_shard`` splits
    each model's generation and GenEval into shards of that many prompts (0: one shard), each its own cached task;
    shards merge into exactly the unsharded result, so this changes how work is spread, never a number.
    """

    device: str = "auto"
    task_runner: Literal["local", "dask"] = "local"
    workers: int | None = None
    address: str | None = None
    devices: int = 0
    prompts_per_shard: int = 0
    retries: int = 2
    retry_delay_seconds: tuple[float, ...] = (10.0, 60.0)

    def __post_init__(self) -> None:
        if not re.fullmatch(r"auto|cpu|mps|cuda(:[0-9]+)?", self.device):
            raise FieldError("device", f"must be auto, cpu, cuda, cuda:N or mps; got {self.device!r}")
        check_int(self, "workers", 1, 1024)
        check_int(self, "devices", 0, 1024)
        check_int(self, "prompts_per_shard", 0, 1_000_000)
        check_int(self, "retries", 0, 100)
        if not self.retry_delay_seconds or any(not (math.isfinite(d) and d >= 0) for d in self.retry_delay_seconds):
            raise FieldError("retry_delay_seconds", f"must list delays ≥ 0 s; got {list(self.retry_delay_seconds)}")
        if self.address is not None:
            if self.task_runner != "dask":
                raise FieldError("address", "names a Dask scheduler: set task_runner: dask too")
            if not re.fullmatch(r"(tcp|tls|inproc|ucx|ws|wss)://[^\s/]+(:[0-9]+)?/?", self.address):
                raise FieldError(
                    "address", f"must be a Dask scheduler address like tcp://host:8786; got {self.address!r}"
                )
            for name in ("workers", "devices"):
                if getattr(self, name):
                    raise FieldError(name, "a running cluster (address) brings its own workers; leave it out")
        if self.devices:
            if self.task_runner != "dask":
                raise FieldError("devices", "one worker per device needs task_runner: dask")
            if self.workers is not None and self.workers != self.devices:
                raise FieldError("workers", f"is one per device with devices: {self.devices}; leave it out")
            if self.device not in ("auto", "cuda"):
                raise FieldError("device", "with devices, each worker sees one device as cuda: use auto or cuda")

    @property
    def worker_count(self) -> int:
        """Threads (local: default 1) or worker processes (local Dask cluster: default 2) tasks run on."""
        return self.devices or self.workers or (1 if self.task_runner == "local" else 2)


@dataclass(frozen=True)
class Outputs:
    """Where results go (relative paths are relative to the workspace: the folder holding ``configs/``)."""

    data: str = "data"
    reports: str = "reports"
    store: str = "data/t2ibench.duckdb"
    cache: str = "data/cache"

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not value.strip() or not visible_text(value):
                raise FieldError(f.name, f"must be a path without control characters; got {value!r}")
        store = os.path.normpath(self.store)
        if store in (".", "..") or self.store.endswith(("/", os.sep)) or not Path(store).suffix:
            raise FieldError("store", f"must name a DuckDB file such as data/t2ibench.duckdb; got {self.store!r}")
        for other in ("data", "reports", "cache"):
            if store == os.path.normpath(getattr(self, other)):
                raise FieldError("store", f"{self.store!r} is also outputs.{other} (a folder); name a file inside it")

    def check_inside(self, root: Path) -> None:
        """Refuse output paths that lead outside the workspace ``root`` ('..' or absolute paths elsewhere).

        Checked lexically: a symlinked folder inside the workspace (e.g. data → a scratch disk) is allowed. The
        embedding cache alone may be an absolute path elsewhere: it is content-keyed (``<cache>/<fingerprint>/``)
        and meant to be shared between workspaces; a relative cache path may not climb out with '..'.
        """
        base = Path(os.path.normpath(root.absolute()))
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "cache" and Path(value).is_absolute():
                continue
            target = Path(os.path.normpath(base / value))
            if f.name == "store" and target.is_dir():
                raise FieldError("store", f"{value!r} is a folder; name the DuckDB file (e.g. {value}/t2ibench.duckdb)")
            if target != base and base not in target.parents:
                raise FieldError(
                    f.name,
                    f"{value!r} leads outside the workspace {base}; keep outputs inside it (a symlink "
                    "inside the workspace may point elsewhere)",
                )


@dataclass(frozen=True)
class ReportConfig:
    """What the report shows besides the measured rows: published reference tables (a built-in name such as
    ``geneval-table2``, or a YAML file of the same shape, relative to the workspace), labelled and never ranked."""

    published: tuple[str, ...] = tuple(BUILTIN)

    def __post_init__(self) -> None:
        for i, item in enumerate(self.published):
            if item not in BUILTIN and not item.endswith((".yaml", ".yml")):
                raise FieldError(
                    f"published[{i}]",
                    f"must be a built-in table ({', '.join(BUILTIN)}) or a .yaml file path; got {item!r}",
                )
        if len(set(self.published)) != len(self.published):
            raise FieldError("published", f"lists a table twice: {list(self.published)}")

    def published_paths(self, root: Path) -> tuple[str, ...]:
        """The published tables to load: built-in names as they are, file paths resolved against the workspace."""
        return tuple(p if p in BUILTIN else str(root / p) for p in self.published)


@dataclass(frozen=True)
class Config:
    """A whole run."""

    name: str
    models: tuple[ModelConfig, ...]
    benchmarks: Benchmarks = field(default_factory=Benchmarks)
    evaluators: Evaluators = field(default_factory=Evaluators)
    runtime: Runtime = field(default_factory=Runtime)
    outputs: Outputs = field(default_factory=Outputs)
    report: ReportConfig = field(default_factory=ReportConfig)
    description: str = ""

    def __post_init__(self) -> None:
        try:
            check_name(self.name, what="config name")
        except InputError as exc:
            raise FieldError("name", str(exc)) from None
        if not self.models:
            raise FieldError("models", "list at least one model")
        expanded = _points(self.models)  # a series: one model per checkpoint, each with its entry's index
        object.__setattr__(self, "models", tuple(m for _, m in expanded))
        counts = Counter(m.name.lower() for m in self.models)  # linear: a config may list many models
        duplicates = sorted({m.name for m in self.models if counts[m.name.lower()] > 1})
        if duplicates:
            raise FieldError(
                "models", f"names must be unique (ignoring case: they name folders); repeated: {', '.join(duplicates)}"
            )
        for i, m in expanded:
            wanted = m.benchmarks if m.benchmarks is not None else self.benchmarks.names
            unknown = [b for b in wanted if b not in self.benchmarks.names]
            if unknown:
                raise FieldError(
                    f"models[{i}].benchmarks", f"{', '.join(unknown)} is not configured (benchmarks: section)"
                )
            others = [b for b in wanted if b != SPINE]  # each generates from its own prompts
            if others and m.generator.backend != "diffusers":
                raise FieldError(
                    f"models[{i}].benchmarks",
                    f"{m.name}: the {m.generator.backend} backend makes {label(SPINE)} images only; "
                    f"{', '.join(others)} needs a text-to-image generator (diffusers): give this model "
                    f"benchmarks: [{SPINE}], and judge its images with `t2ibench evaluate {others[0]} DIR`",
                )
            if m.wording != prompt_wordings()[0]:  # the spine says whether this selection has such prompts
                try:
                    spine_lookup(SPINE).check_wording(m.wording, self, where=f"models[{i}].wording")
                except InputError as exc:
                    raise FieldError(f"models[{i}].wording", str(exc).split(": ", 1)[-1]) from None

    @property
    def spine_prompts(self) -> Any:
        """The spine benchmark's prompt selection (``benchmarks.<SPINE>``; a config's top-level ``<SPINE>:`` key is
        its older spelling, still read)."""
        return self.benchmarks.selection(SPINE)

    def benchmarks_of(self, model: ModelConfig) -> tuple[str, ...]:
        """The benchmarks ``model`` runs, in run order."""
        wanted = model.benchmarks if model.benchmarks is not None else self.benchmarks.names
        return tuple(b for b in self.benchmarks.names if b in wanted)

    def model(self, name: str) -> ModelConfig:
        """The model called ``name`` (did-you-mean on a typo)."""
        for m in self.models:
            if m.name == name:
                return m
        raise unknown_choice("model", name, [m.name for m in self.models])

    def hub_sources(self) -> list[tuple[str, ModelSource]]:
        """Every model a refresh of this config loads by hub id or folder, with the section holding it
        ('models[0].generator', 'evaluators.<benchmark>.judge'); ``models.hub`` resolves them before a run
        starts."""
        ev = self.evaluators
        spine, *others = self.benchmarks.names
        sections: list[tuple[str, Any]] = [(f"models[{i}].generator", m.generator) for i, m in enumerate(self.models)]
        sections += [(f"evaluators.{spine}.{key}", spec) for key, spec in self.evaluator_models(spine).items()]
        sections += [("evaluators.image_embedder", ev.image_embedder), ("evaluators.clip", ev.clip)]
        for name in others:
            sections += [(f"evaluators.{name}.{key}", spec) for key, spec in self.evaluator_models(name).items()]
        return [(key, source) for key, section in sections for source in section.hub_sources()]

    def evaluator_models(self, name: str) -> dict[str, Any]:
        """The model specs benchmark ``name``'s evaluator builds in a refresh of this config: its ``models()``, or,
        when its EVALUATOR says which its selection needs (``models_for(selection)``), those."""
        evaluator, selection = self.evaluators.of(name), self.benchmarks.selection(name)
        needed = getattr(evaluator, "models_for", None)
        models: dict[str, Any] = evaluator.models() if needed is None or selection is None else needed(selection)
        return models

    @property
    def smoke_evaluators(self) -> bool:
        """True when an evaluator a refresh builds is a built-in random-weight model: then every number of the run is
        smoke."""
        ev = self.evaluators
        specs = [
            ev.image_embedder,
            ev.clip,
            *(s for b in self.benchmarks.names for s in self.evaluator_models(b).values()),
        ]
        return any(spec.tiny for spec in specs)

    @property
    def smoke(self) -> bool:
        """True when the run measures nothing: a smoke evaluator, or only smoke models (a model's own rows are
        labelled smoke by its generator either way)."""
        return self.smoke_evaluators or all(m.generator.smoke for m in self.models)


# -- loading --------------------------------------------------------------------------------------------------


def load_config(path: str | Path) -> Config:
    """Read and validate a YAML config (safe_load: no Python tags); InputError names the file and the key."""
    p = Path(path)
    text = read_text_file(p, what="config file", max_bytes=16 * 2**20)
    config = parse_config(load_yaml(text, source=str(p)), source=str(p))
    try:
        config.outputs.check_inside(workspace_root(p))
    except FieldError as exc:
        raise InputError(f"{p}:outputs.{exc.field}: {exc.message}") from None
    for i, table in enumerate(config.report.published_paths(workspace_root(p))):
        try:
            load_published(table)  # a bad reference table fails now, not after the run's model work
        except InputError as exc:
            raise InputError(f"{p}:report.published[{i}]: {exc}") from None
    selftest = config.evaluators.selftest
    if selftest is not None and selftest.photos:
        from t2ibench.benchmarks.geneval.suite_photos import load_photo_truth  # numpy: only when the config has it

        try:  # the photo truth set and its photos' pixels, checked now (≈ 0.5 s), not when the self-test reaches them
            load_photo_truth()
        except InputError as exc:
            raise InputError(f"{p}:evaluators.selftest.photos: {exc}") from None
    return config


def workspace_root(config_path: str | Path) -> Path:
    """The workspace of a config file: the parent of its ``configs/`` folder, else the file's folder."""
    path = Path(config_path).absolute()
    return path.parent.parent if path.parent.name == "configs" else path.parent


def _points(models: Sequence[ModelConfig]) -> list[tuple[int, ModelConfig]]:
    """``models`` with each checkpoint series replaced by its points (``ModelConfig.checkpoints``), each with the index
    of its entry in ``models`` (what an error names); a point's bad generator field is named under its checkpoint
    (``models[2].checkpoints[1].model``)."""
    out: list[tuple[int, ModelConfig]] = []
    for i, m in enumerate(models):
        if not m.checkpoints:
            out.append((i, m))
            continue
        for j, c in enumerate(m.checkpoints):
            try:
                generator = dataclasses.replace(
                    m.generator,
                    model=c.model if c.model is not None else m.generator.model,
                    revision=c.revision if c.revision is not None else m.generator.revision,
                )
            except FieldError as exc:
                raise FieldError(f"models[{i}].checkpoints[{j}].{exc.field}", exc.message) from None
            point = dataclasses.replace(
                m, name=f"{m.name}@{c.step}", label=f"{m.label or m.name} @ step {c.step}", generator=generator,
                checkpoints=(), series=m.name, step=c.step,
            )  # fmt: skip
            out.append((i, point))
    return out


def parse_config(raw: Any, *, source: str = "config") -> Config:
    """Build a Config from a parsed mapping; errors name ``source`` and the dotted key. A top-level key named after
    the spine benchmark (``geneval:``, the spelling before ``benchmarks:``) is read as ``benchmarks.<SPINE>``."""
    given = raw.get("benchmarks") if isinstance(raw, dict) else None
    for name in BENCHMARK_OPTIONS:
        if isinstance(given, dict) and name in given and given[name] is None:
            raise InputError(
                f"{source}:benchmarks.{name}: is empty (null): give {{}} for {name} with its defaults, or leave the "
                f"key out for no {name}"
            )
    if isinstance(raw, dict) and SPINE in raw:
        raw = dict(raw)
        legacy = raw.pop(SPINE)
        given = raw.get("benchmarks")
        if isinstance(given, dict) and SPINE in given:
            raise InputError(
                f"{source}:{SPINE}: the {label(SPINE)} suite is given twice ({SPINE}: and benchmarks.{SPINE}:); keep "
                f"benchmarks.{SPINE} ({SPINE}: is its older spelling)"
            )
        if given is None or isinstance(given, dict):
            raw["benchmarks"] = {**(given or {}), SPINE: legacy}
    return _build(Config, raw, f"{source}:")


def parse_section(cls: type[T], raw: Any, *, where: str) -> T:
    """One config section of type ``cls`` (e.g. ``EmbedderConfig``) from a parsed mapping, checked as a config's
    (types, ranges, backend names, keys the backend does not read); errors name ``where`` and the key."""
    return _build(cls, raw, where)


def check_backend(cls: type, given: Mapping[str, Any]) -> None:
    """FieldError('backend') unless the ``backend`` given for a spec section of type ``cls`` is registered."""
    registry = BACKENDS.get(cls)
    if registry is not None and "backend" in given:
        try:
            registry.check(given["backend"])
        except InputError as exc:
            raise FieldError("backend", str(exc)) from None


def _build(cls: type[T], raw: Any, where: str) -> T:
    if not isinstance(raw, dict):
        raise InputError(f"{where} expected a mapping for {cls.__name__}, got {type(raw).__name__}")
    target: Any = cls  # a class is hashable; mypy's lru_cache stub does not see it
    hints = type_hints(target, extras=False)
    known = {f.name: f for f in fields(cls)}  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in known:
            raise InputError(f"{where} {unknown_choice('key', key, list(known))}")
        kwargs[key] = decode(hints[key], value, f"{where}{'' if where.endswith(':') else '.'}{key}", section=_build)
    missing = [
        name
        for name, f in known.items()
        if name not in kwargs and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise InputError(f"{where} missing required key(s): {', '.join(missing)}")
    sep = "" if where.endswith(":") else "."
    try:
        check_backend(cls, kwargs)
        check_given = getattr(cls, "check_given", None)
        if check_given is not None:
            check_given(kwargs)
        made = cls(**kwargs)
        check_ranges(made)  # every Annotated Range of its fields, declared once (t2ibench.fields)
        return made
    except FieldError as exc:
        raise InputError(f"{where}{sep}{exc.field}: {exc.message}") from None
    except TypeError as exc:
        raise InputError(f"{where} {exc}") from None
