"""A refresh as data: every step call of every model, with its parameters, laid out before anything runs.

``plan_refresh(config, workspace, prompts, run_id)`` returns a ``Plan``: per model the calls of its graph —
generation (per prompt shard), GenEval (per shard) and their merges, Table 2, embeddings, the bandwidths, FKEA
shards, diversity, Scendi, the store write — plus the calls every model shares (the reference bandwidths of the
embedding spaces). A call's parameters are exactly its step's arguments: values, or ``Ref``s to the results of
earlier calls. From them, by one derivation (``t2ibench.pipeline.identity``):

* each call's cache key (``step_key``), which the Prefect task uses and a plain executor can use;
* the model version's hash: the settings of its (unsharded) generation;
* the evaluation version's hash and the protocol record: the settings of every evaluation call, by step;
* each output folder's name: the model hash and the settings hash of the step that writes it.

The flow (``flows/leaderboard_refresh.py``) submits the calls as Prefect tasks; ``answer`` walks them against a
cache of results (the flow's task cache: what is already there, what changed behind it). ``current_call`` names
the call being built or run, so a tracer can tell which call read which config field.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from t2ibench.config import Config, EmbedderConfig, ModelConfig
from t2ibench.errors import InputError
from t2ibench.features import SPACES_FILE
from t2ibench.hashing import file_digest
from t2ibench.pipeline import steps
from t2ibench.pipeline.identity import StepSpec, settings, step_key, version_hash
from t2ibench.pipeline.results import (
    Bandwidth,
    Embedded,
    Generated,
    Judged,
    LocalFiles,
    PromptSet,
    ReferenceStamp,
    ShardState,
)
from t2ibench.pipeline.stamps import stamp_of
from t2ibench.suites.reference import reference_digest
from t2ibench.workspace import Workspace

current_call: ContextVar[str | None] = ContextVar("t2ibench_current_call", default=None)
"""The id of the call whose parameters are being built or whose step is running (None elsewhere)."""


STEPS: dict[str, StepSpec] = {
    "generate": StepSpec(steps.step_generate),
    "images": StepSpec(steps.merge_generated, cached=False, cheap=True),
    "embed": StepSpec(steps.step_embed, protocol=True),
    "reference-bandwidth": StepSpec(steps.step_reference_bandwidth, protocol=True),
    "median-bandwidth": StepSpec(steps.step_median_bandwidth, cheap=True, protocol=True),
    "fkea-shard": StepSpec(steps.step_fkea_shard, protocol=True),
    "diversity": StepSpec(steps.step_diversity, protocol=True),
    "scendi": StepSpec(steps.step_scendi, protocol=True),
    "store": StepSpec(steps.step_store, cached=False, cheap=True),
}
"""The refresh's own steps, by task name; each benchmark adds its own (``benchmark_steps``, ``step_specs``)."""


@cache
def benchmark_steps() -> dict[str, StepSpec]:
    """The steps the registered benchmarks add to the refresh (``Benchmark.refresh_steps``), by task name."""
    from t2ibench.benchmarks import benchmark, names

    found: dict[str, StepSpec] = {}
    for name in names():
        for step, spec in benchmark(name).refresh_steps().items():
            if step in STEPS or step in found:
                raise TypeError(f"benchmark {name!r} adds a step {step!r} the refresh already has")
            found[step] = spec
    return found


def step_specs() -> dict[str, StepSpec]:
    """Every step a refresh can run, by task name: its own, then each benchmark's."""
    return {**STEPS, **benchmark_steps()}


def step_spec(step: str) -> StepSpec:
    """The step called ``step`` (the refresh's own first)."""
    return STEPS[step] if step in STEPS else benchmark_steps()[step]


@dataclass(frozen=True)
class Ref:
    """The result of the call ``call`` (a parameter value filled in when that call has finished)."""

    call: str


@dataclass(frozen=True)
class Call:
    """One step call: ``id`` (unique in the plan, e.g. 'tiny-a/generate/p00000-p00005'), its step, its parameters
    (values and ``Ref``s), the model it belongs to (None: shared), the run summary's column it counts in, the files
    its cached result relies on (any gone: it runs again) and calls it waits for without using their results."""

    id: str
    step: str
    params: Mapping[str, Any]
    model: str | None
    column: str
    outputs: tuple[Path, ...] = ()
    after: tuple[str, ...] = ()

    @property
    def spec(self) -> StepSpec:
        """The step's function and flags."""
        return step_spec(self.step)

    def upstream(self) -> list[str]:
        """The ids of the calls whose results this one takes."""
        found: list[str] = []
        for value in self.params.values():
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, Ref):
                    found.append(item.call)
        return found

    def resolve(self, results: Mapping[str, Any]) -> dict[str, Any]:
        """The parameters with every ``Ref`` replaced by its call's result from ``results``."""

        def one(value: Any) -> Any:
            if isinstance(value, Ref):
                return results[value.call]
            if isinstance(value, list):
                return [one(v) for v in value]
            return value

        return {name: one(value) for name, value in self.params.items()}

    def key(self, results: Mapping[str, Any]) -> str | None:
        """The cache key of this call given its upstream ``results`` (None for a step that always runs)."""
        if not self.spec.cached:
            return None
        return step_key(self.step, self.spec.fn, self.resolve(results))

    def settings(self) -> dict[str, Any]:
        """The call's settings (what version hashes and the protocol are made of): its values that are neither
        upstream results nor outputs nor placement."""
        plain = {k: v for k, v in self.params.items() if not _refers(v)}
        return settings(self.spec.fn, plain)


def _refers(value: Any) -> bool:
    return isinstance(value, Ref) or (isinstance(value, list) and any(isinstance(v, Ref) for v in value))


@dataclass(frozen=True)
class ModelPlan:
    """One model's calls (in dependency order), its versions and its protocol record; ``store`` is the id of its
    store call and ``images`` its images folder."""

    model: ModelConfig
    model_hash: str
    evaluator_hash: str
    protocol: dict[str, Any]
    calls: tuple[Call, ...]
    store: str
    images: Path
    folders: tuple[Path, ...] = ()  # the version folders it writes: images, GenEval results, embeddings
    image_folders: tuple[Path, ...] = ()  # every images folder it generates into (GenEval's, then GenEval 2's)
    benchmarks: Mapping[str, str] = field(default_factory=dict)  # benchmark → the hash of its own evaluation
    benchmark_prompts: Mapping[str, int] = field(default_factory=dict)  # benchmark → its prompts for this model

    def by_column(self) -> dict[str, list[Call]]:
        """The model's calls by run-summary column, in order."""
        columns: dict[str, list[Call]] = {}
        for call in self.calls:
            columns.setdefault(call.column, []).append(call)
        return columns


@dataclass(frozen=True)
class Plan:
    """A whole refresh: the shared calls (reference bandwidths) and each model's plan, in config order."""

    shared: tuple[Call, ...]
    models: tuple[ModelPlan, ...]
    outputs: tuple[Path, ...] = field(default=())  # every version folder the plan writes (what gc keeps)

    def calls(self) -> list[Call]:
        """Every call in an order that respects dependencies (shared first, then model by model)."""
        return [*self.shared, *(c for m in self.models for c in m.calls)]


@contextlib.contextmanager
def building(call_id: str | None) -> Iterator[None]:
    """Attribute what happens inside (config reads) to the call ``call_id``."""
    token = current_call.set(call_id)
    try:
        yield
    finally:
        current_call.reset(token)


def local_files(ws: Workspace, model: ModelConfig) -> LocalFiles:
    """The stamp of the local files a model's images come from: the folder backend's source, or a diffusers model
    given as a local directory (a hub id or a built-in name: none)."""
    g = model.generator
    if g.backend == "folder" and g.source:
        source = ws.path(g.source)
        if not source.is_dir():
            raise InputError(f"{model.name}: generator.source {g.source!r} is not a folder")
        return stamp_of([source])
    return stamp_of([g.model, g.stage2 or ""] if g.backend == "diffusers" else [])


def embedder_weights(*embedders: EmbedderConfig) -> LocalFiles:
    """The stamp of the embedders' local weights (a model folder or checkpoint file given as a path), if any."""
    return stamp_of([p for e in embedders for p in (e.model, e.pretrained or "")])


class _Builder:
    """Collects calls, deduplicating shared ones by id."""

    def __init__(self, device: str) -> None:
        self.shared: dict[str, Call] = {}
        self.device = device  # placement of the shared calls (the runtime's device)

    def share(self, call_id: str, step: str, params: dict[str, Any]) -> Ref:
        """A ``Ref`` to the call ``call_id`` of ``step`` that every model's plan shares (added once, placed on the
        runtime's device)."""
        if call_id not in self.shared:
            self.shared[call_id] = Call(call_id, step, {**params, "device": self.device}, None, step)
        return Ref(call_id)

    def bandwidth(
        self,
        setting: Any,
        *,
        embedder: EmbedderConfig,
        reference: str,
        embedded: str,
        features: str,
        seed: Callable[[], int],
        model: str,
        column: str,
        name: str,
    ) -> tuple[Any, list[Call]]:
        """The value a step's bandwidth parameter takes for ``setting``: a fixed ``Bandwidth``, a ``Ref`` to the
        shared reference call of ``embedder``, or a ``Ref`` to a per-model median call (returned to add)."""
        if setting == "reference":
            params = {
                "embedder": embedder,
                "reference": ReferenceStamp(reference, reference_digest(reference)),
                "weights": embedder_weights(embedder),
            }
            call_id = f"reference/{reference}/{version_hash(settings(steps.step_reference_bandwidth, params))}"
            if call_id not in self.shared:
                self.shared[call_id] = Call(
                    call_id, "reference-bandwidth", {**params, "device": self.device}, None, "bandwidth"
                )
            return Ref(call_id), []
        if setting == "median":
            call_id = f"{model}/{name}"
            with building(call_id):
                params = {"embedded": Ref(embedded), "features": features, "seed": seed()}
            return Ref(call_id), [Call(call_id, "median-bandwidth", params, model, column)]
        return Bandwidth(value=float(setting), source="fixed"), []


@dataclass(frozen=True)
class ModelScope:
    """What a benchmark plans one model's calls with: the config, the workspace, the model, its version
    (``model_hash``), the settings of its generation (``step_generate``'s, GenEval's prompts among them), the
    runtime's device and ``add``, which takes each call into the model's plan and returns its id."""

    config: Config
    ws: Workspace
    model: ModelConfig
    model_hash: str
    generation: Mapping[str, Any]
    device: str
    add: Callable[[Call], str]

    def generate(self, benchmark: str, prompts: PromptSet) -> tuple[str, Path]:
        """Plan the generation of a benchmark's ``prompts`` by this model into an images folder of their own (keyed
        like the model version's: the same generation settings, these prompts); returns (the call's id, the
        folder)."""
        name = self.model.name
        per_prompt = self.model.generator.images_per_prompt
        generate_id = f"{name}/generate-{benchmark}"
        with building(generate_id):
            generation = {**self.generation, "prompts": prompts}
        images = self.ws.images_dir(name, version_hash({"generate": settings(steps.step_generate, generation)}))
        files = tuple(images / f"{i:05d}" / "samples" / f"{k:05d}.png" for i, _ in prompts for k in range(per_prompt))
        outputs = (images / "manifest.json", images / "samples.jsonl", *files)
        params: dict[str, Any] = {**generation, "out": images, "device": self.device}
        return self.add(Call(generate_id, "generate", params, name, "generate", outputs)), images

    def finish(
        self, benchmark: str, evaluation: Sequence[Call], refs: Mapping[str, str], *, images: Path, results: Path,
        prompts: int,
    ) -> BenchmarkPart:  # fmt: skip
        """Plan a benchmark's rows call (step '<benchmark>-rows', given its ``refs`` — images, judged, scores — by
        call id) and return its part, which writes its ``images`` and ``results`` folders: its own evaluation hash is
        the settings of its ``evaluation`` calls (judging and tables), by step — a change of them re-judges and
        re-versions that benchmark only."""
        name = self.model.name
        evaluator_hash = version_hash({c.step: c.settings() for c in evaluation})
        params: dict[str, Any] = {
            "model": name,
            **{k: Ref(v) for k, v in refs.items()},
            "evaluator_hash": evaluator_hash,
        }
        rows = self.add(Call(f"{name}/{benchmark}-rows", f"{benchmark}-rows", params, name, benchmark))
        return BenchmarkPart(rows, evaluator_hash, (images, results), (images,), prompts)


@dataclass(frozen=True)
class BenchmarkPart:
    """A benchmark's part of one model's plan: the id of the call whose result is its rows for the store write
    (``t2ibench.store.BenchmarkRows``), its own evaluation hash (the settings of its evaluation calls: a change
    re-judges and re-versions that benchmark only), the version folders it writes and the images folders among them."""

    rows: str
    evaluator_hash: str
    folders: tuple[Path, ...]
    image_folders: tuple[Path, ...]
    prompts: int  # its prompts the model is evaluated on


def spine() -> Any:
    """The registered benchmark whose calls are every model's spine (``benchmarks.SPINE``): its generation is the
    model version and its images are what the diversity steps measure."""
    from t2ibench.benchmarks import SPINE, benchmark

    return benchmark(SPINE)


def refresh_benchmarks(config: Config, model: ModelConfig) -> list[Any]:
    """The registered benchmarks ``model`` runs besides the spine (every model runs it), in run order."""
    from t2ibench.benchmarks import benchmark

    return [b for b in (benchmark(name) for name in config.benchmarks_of(model)) if not b.spine]


def acquire_suites(config: Config, root: Path) -> list[Path]:
    """The released suite files a refresh of ``config`` (workspace ``root``) reads, fetched where they are missing
    and verified, before any work: each benchmark a model runs acquires its own (``Benchmark.acquire_for_refresh``)."""
    found: list[Path] = spine().acquire_for_refresh(config, root)
    done: set[str] = set()
    for model in config.models:
        for bench in refresh_benchmarks(config, model):
            if bench.name not in done:
                done.add(bench.name)
                found += bench.acquire_for_refresh(config, root)
    return found


def plan_model(
    config: Config,
    ws: Workspace,
    model: ModelConfig,
    prompts: PromptSet,
    run_id: str,
    builder: _Builder,
    selected: Mapping[str, Any] | None = None,
) -> ModelPlan:
    """One model's calls, versions and protocol (see the module docstring). Each call's parameters are built inside
    ``building(call id)``, so a tracer sees which call reads which config field; placement is read once, outside."""
    name = model.name
    ev = config.evaluators
    # placement (where and how work runs, never what it computes) is read here, once, outside every call
    device, cache = config.runtime.device, ws.cache
    where = f"models[{config.models.index(model)}].wording"  # the setting an error about its wording names
    # the model version: the settings of its unsharded generation (where it writes is not part of it), on the
    # spine's prompts in this model's wording (its rewrites: another suite, whose texts key every call below)
    with building(f"{name}/generate"):
        prompts = spine().reword(prompts, model.wording, config, ws, where=where)
        generation = {"generator": model.generator, "model": name, "prompts": prompts, "local": local_files(ws, model)}
    model_hash = version_hash({"generate": settings(steps.step_generate, generation)})
    calls: list[Call] = []

    def add(call: Call) -> str:
        calls.append(call)
        return call.id

    # the spine benchmark's calls (GenEval's: the model version's images, their verdicts and Table 2)
    scope = ModelScope(config, ws, model, model_hash, generation, device, add)
    spine_part = spine().plan_spine(scope, prompts)
    generated, images, results = spine_part.generated, spine_part.images, spine_part.results

    # every other benchmark the model runs: its own calls (``Benchmark.plan_for_model``), its rows to the store
    benchmark_rows: list[Ref] = []
    benchmark_hashes: dict[str, str] = {}
    benchmark_prompts: dict[str, int] = {}
    benchmark_folders: list[Path] = []
    image_folders = [images]
    for bench in refresh_benchmarks(config, model):
        if selected is None or bench.name not in selected:
            raise InputError(f"{name}: {bench.title} is configured but its prompts were not selected")
        own: BenchmarkPart = bench.plan_for_model(scope, selected[bench.name])
        benchmark_rows.append(Ref(own.rows))
        benchmark_hashes[bench.name] = own.evaluator_hash
        benchmark_prompts[bench.name] = own.prompts
        benchmark_folders += own.folders
        image_folders += own.image_folders

    # embeddings
    with building(f"{name}/embed"):
        embed_settings = {"image_embedder": ev.image_embedder, "clip": ev.clip, "prompts": prompts}
    embed_hash = version_hash(settings(steps.step_embed, embed_settings))
    folder = ws.embeddings_dir(name, model_hash, embed_hash)
    with building(f"{name}/embed"):
        weights = embedder_weights(ev.image_embedder, ev.clip)
    params = {**embed_settings, "generated": Ref(generated), "weights": weights, "out": folder, "cache": cache}
    params["device"] = device
    features = tuple(folder / f for f in ("image_features.npy", "clip_image_features.npy", "clip_text_features.npy"))
    written = (*features, folder / "ids.json", folder / SPACES_FILE)
    embedded = add(Call(f"{name}/embed", "embed", params, name, "embed", written))

    # bandwidths, FKEA shards, diversity and Scendi
    diversity, scendi, bandwidths = _plan_diversity(config, ws, builder, name, model_hash, embedded, embed_hash, add)
    sigma, image_sigma, text_sigma = bandwidths

    # the evaluation version and its protocol: the settings of every evaluation call, by step
    protocol = _protocol([*builder.shared.values(), *calls], spine_part.protocol, sigma, image_sigma, text_sigma)
    evaluator_hash = version_hash(protocol)
    store_id = f"{name}/store"
    with building(store_id):
        store = {
            "store": ws.store,
            "run_id": run_id,
            "model": model,
            "suite": spine().suite_id(config.spine_prompts, model.wording),
            "model_hash": model_hash,
            "evaluator_hash": evaluator_hash,
            "protocol": protocol,
            "lite": ev.lite,
            "smoke_evaluators": config.smoke_evaluators,
            "prompts": prompts,
            "generated": Ref(generated),
            "judged": Ref(spine_part.judged),
            "scores": Ref(spine_part.scores),
            "diversity": Ref(diversity),
            "scendi": Ref(scendi),
            **({"benchmarks": benchmark_rows} if benchmark_rows else {}),
            **{key: builder.share(*call) for key, call in spine().plan_shared(config, ws).items()},
        }
    calls.append(Call(store_id, "store", store, name, "store"))
    folders = (images, results.parent, folder, *benchmark_folders)
    return ModelPlan(
        model,
        model_hash,
        evaluator_hash,
        protocol,
        tuple(calls),
        store_id,
        images,
        folders,
        tuple(image_folders),
        benchmark_hashes,
        benchmark_prompts,
    )


def _plan_diversity(
    config: Config,
    ws: Workspace,
    builder: _Builder,
    name: str,
    model_hash: str,
    embedded: str,
    embed_hash: str,
    add: Callable[[Call], str],
) -> tuple[str, str, tuple[Any, Any, Any]]:
    """A model's diversity calls (``add``ed in order): its bandwidths — one per embedding space (reference: shared by
    every model), per model (median), or fixed — the FKEA shards, diversity and Scendi; returns the ids of the
    diversity and Scendi calls and the bandwidth values (σ, Scendi's image σ and text σ) their steps take."""
    ev = config.evaluators
    # bandwidths: one per embedding space (reference: shared by every model), per model (median), or fixed
    div, sc = ev.diversity, ev.scendi
    sigma: Any = None
    if div.kernel == "gaussian":
        sigma, extra = builder.bandwidth(
            div.sigma,
            embedder=ev.image_embedder,
            reference=steps.FEATURES["image"].reference,
            embedded=embedded,
            features="image",
            seed=lambda: div.seed,
            model=name,
            column="diversity",
            name="sigma",
        )
        for call in extra:
            add(call)
    image_sigma: Any = None
    text_sigma: Any = None
    if sc.kernel == "gaussian":
        sides: tuple[tuple[str, Any, steps.Features], ...] = (
            ("image", sc.image_sigma, "clip_image"),
            ("text", sc.text_sigma, "clip_text"),
        )
        for side, setting, which in sides:
            value, extra = builder.bandwidth(
                setting,
                embedder=ev.clip,
                reference=steps.FEATURES[which].reference,
                embedded=embedded,
                features=which,
                seed=lambda: sc.seed,
                model=name,
                column="scendi",
                name=f"scendi-{side}-sigma",
            )
            for call in extra:
                add(call)
            image_sigma, text_sigma = (value, text_sigma) if side == "image" else (image_sigma, value)

    # FKEA shards: additive states, merged by the diversity step
    shard_params = []
    for i in range(div.shards):
        with building(f"{name}/fkea-shard/{i}"):
            shard_params.append(
                {
                    "embedded": Ref(embedded),
                    "shard": i,
                    "shards": div.shards,
                    "kernel": div.kernel,
                    "sigma": sigma,
                    "rff_dim": div.rff_dim,
                    "seed": div.seed,
                    "orthogonal": div.orthogonal,
                }
            )
    fkea_hash = version_hash({"fkea-shard": [settings(steps.step_fkea_shard, p) for p in shard_params]})
    shard_ids = []
    for i, params in enumerate(shard_params):
        state = ws.shard_state(name, model_hash, embed_hash, fkea_hash, i, div.shards)
        # no output listed: an empty shard writes no file; a cached state is checked by its digest (``intact``)
        shard = Call(f"{name}/fkea-shard/{i}", "fkea-shard", {**params, "out": state}, name, "diversity")
        shard_ids.append(add(shard))
    with building(f"{name}/diversity"):
        params = {
            "embedded": Ref(embedded),
            "shards": [Ref(s) for s in shard_ids],
            "sigma": sigma,
            "diversity": div,
            "ci_level": ev.ci_level,
        }
    diversity = add(Call(f"{name}/diversity", "diversity", params, name, "diversity"))
    with building(f"{name}/scendi"):
        params = {"embedded": Ref(embedded), "scendi": sc, "image_sigma": image_sigma, "text_sigma": text_sigma}
    scendi = add(Call(f"{name}/scendi", "scendi", params, name, "scendi"))

    return diversity, scendi, (sigma, image_sigma, text_sigma)


def _protocol(calls: Sequence[Call], given: Mapping[str, Any], *bandwidths: Any) -> dict[str, Any]:
    """Step → the settings of its calls (one dict, or a list when its calls differ, e.g. FKEA shards), ``given``
    for the steps whose calls are prompt shards (their unsharded settings); the reference bandwidths the model's
    calls use, and fixed ones, are included as the settings that made them."""
    used = {b.call for b in bandwidths if isinstance(b, Ref)}
    found: dict[str, list[Any]] = {step: [value] for step, value in given.items()}
    for call in calls:
        if not call.spec.protocol or call.step in given:
            continue
        if call.model is None and call.id not in used:
            continue
        item = call.settings()
        if item not in found.setdefault(call.step, []):
            found[call.step].append(item)
    fixed = [dataclasses.asdict(b) for b in bandwidths if isinstance(b, Bandwidth)]
    if fixed:
        found["fixed-bandwidth"] = fixed
    return {step: items[0] if len(items) == 1 else items for step, items in sorted(found.items())}


def plan_refresh(config: Config, ws: Workspace, prompts: PromptSet, run_id: str) -> Plan:
    """Every call of a refresh of ``config`` (see the module docstring); each model's store call waits for the
    previous model's, so store writes stay in config order."""
    builder = _Builder(config.runtime.device)
    models: list[ModelPlan] = []
    selected: dict[str, Any] = {}  # each benchmark's prompts, chosen once for every model that runs it
    for model in config.models:
        for bench in refresh_benchmarks(config, model):
            if bench.name not in selected:
                selected[bench.name] = bench.select_for_refresh(config, ws)
    for model in config.models:
        plan = plan_model(config, ws, model, prompts, run_id, builder, selected)
        if models:
            store = plan.calls[-1]
            chained = dataclasses.replace(store, after=(models[-1].store,))
            plan = dataclasses.replace(plan, calls=(*plan.calls[:-1], chained))
        models.append(plan)
    outputs = tuple(sorted({p for m in models for p in m.folders}))
    return Plan(shared=tuple(builder.shared.values()), models=tuple(models), outputs=outputs)


def intact(result: Any) -> bool:
    """Whether the files a step's result names are still what it recorded: results, feature and state files by
    their digest, images by existence (a cached result whose files changed behind it must be computed again)."""
    if isinstance(result, Judged):
        return Path(result.results).is_file() and file_digest(result.results) == result.sha256
    if isinstance(result, Embedded):
        pairs = zip(result.files.paths(), result.sha256.paths(), strict=True)
        return all(Path(p).is_file() and file_digest(p) == d for p, d in pairs)
    if isinstance(result, ShardState):
        return result.state is None or (Path(result.state).is_file() and file_digest(result.state) == result.sha256)
    if isinstance(result, Generated):
        return all(Path(i.path).is_file() for i in result.images)
    return True


# -- answering a plan from a cache -------------------------------------------------------------------------------


@dataclass
class Answered:
    """What a cache holds of a plan: the results of the calls it answers, the ids of cached calls whose files
    changed behind their cached result (they must run again), and whether it answers every call but the store
    writes."""

    results: dict[str, Any] = field(default_factory=dict)
    stale: set[str] = field(default_factory=set)
    complete: bool = True


def answer(plan: Plan, lookup: Callable[[Call, str], Any | None], *, run_uncached: bool) -> Answered:
    """Walk ``plan`` in order, answering each cached call by ``lookup(call, key)`` (its cached result, or None).
    A hit whose files are gone or changed (``Call.outputs``, ``intact``) is stale; a call downstream of a miss has
    no known key and is left. With ``run_uncached``, the calls that always run but the store writes (merges: cheap,
    idempotent) run here so that the walk can go on past them; else the walk stops there."""
    found = Answered()
    for call in plan.calls():
        if call.step == "store":
            continue
        if any(u not in found.results for u in call.upstream()):
            found.complete = False  # downstream of a call that must run: its key is not known yet
            continue
        if not call.spec.cached:
            if run_uncached:
                found.results[call.id] = call.spec.fn(**call.resolve(found.results))
            else:
                found.complete = False
            continue
        key = call.key(found.results)
        result = None if key is None else lookup(call, key)
        if result is None:
            found.complete = False
        elif not all(p.exists() for p in call.outputs) or not intact(result):
            found.stale.add(call.id)
            found.complete = False
        else:
            found.results[call.id] = result
    return found
