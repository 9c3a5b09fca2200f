"""Benchmarks as plugins: one registry entry per benchmark, bundling what it needs to turn images into its tables.

A ``Benchmark`` says where its prompts come from (a ``t2ibench.datasets`` release, or generated), which model
registries its evaluator builds from, how a folder of images is accounted for against its suite (``scan``), how one
image is judged into a typed per-image record (``judge``, resumable, writing its results file), how records
summarise into its tables (``summarise``) and how those render (``render``), plus the caveat that labels numbers not
comparable with the published ones (a lite evaluator, a subset of the suite, another judge).

``t2ibench evaluate <benchmark>`` is one code path over this registry (``evaluate_images``); the options that
build each benchmark's suite and evaluator are the CLI's. Entries load their module on first use, so the registry
itself costs nothing to import. docs/benchmarks.md says how to add one (DPG-Bench as the worked example).
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar

from t2ibench.errors import InputError, unknown_choice


class Scan(Protocol):
    """What a benchmark's scan of an image source says: the images to judge and every departure from the suite."""

    @property
    def ok(self) -> bool:
        """True when every prompt has its images and nothing is broken, extra or unknown."""

    def report(self, *, limit: int = 20) -> str:
        """Human-readable account of what was found and every problem."""


class ScanItem(Protocol):
    """One image a scan found: where it is."""

    @property
    def path(self) -> Path:
        """The image file."""


ItemT = TypeVar("ItemT", bound=ScanItem)


@dataclass(frozen=True)
class ImageScan(Generic[ItemT]):
    """What an image folder or map holds against the prompts chosen, and every way it departs from them — the scan
    of a benchmark judging any image source (GenEval 2's, T2I-CompBench++'s): the readable images (``items``), the
    prompts expected and found, the chosen prompts without images (``missing_prompts``, by the benchmark's own
    label), problems (the evaluation stops on them unless allowed), notes, and the folder results name images from."""

    source: Path
    items: tuple[ItemT, ...]
    expected_prompts: int
    found_prompts: int
    missing_prompts: tuple[int | str, ...] = ()
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    names_from: Path | None = None

    @classmethod
    def of_generated(
        cls, generated: Any, prompts: Mapping[int, Any], make: Callable[[Any, Any], ItemT], *, names_from: Path,
        label: str,
    ) -> Self:  # fmt: skip
        """The scan of a refresh's generated images (a ``pipeline.results.Generated``) of ``prompts`` (prompt index →
        the benchmark's prompt), each image made an item by ``make(prompt, image info)``; InputError when none is of
        those prompts (``label``: the benchmark's name in the message)."""
        chosen = [(prompts[i.prompt_index], i) for i in generated.images if i.prompt_index in prompts]
        if not chosen:
            raise InputError(f"{generated.model}: no images of {label}'s prompts to judge")
        return cls(
            source=Path(generated.folder),
            items=tuple(make(prompt, info) for prompt, info in chosen),
            expected_prompts=len(prompts),
            found_prompts=len({info.prompt_index for _, info in chosen}),
            names_from=Path(names_from),
        )

    @property
    def ok(self) -> bool:
        """True when every chosen prompt has its images and nothing is broken or unknown."""
        return not (self.missing_prompts or self.problems)

    def name(self, item: ItemT) -> str:
        """The ``filename`` a result of ``item`` records (``paths.result_name`` under ``names_from``)."""
        from t2ibench.paths import result_name

        return result_name(item.path, self.names_from)

    def report(self, *, limit: int = 20) -> str:
        """Human-readable account: expected vs found prompts, images, then every problem (each line escaped: a file
        name with a newline cannot forge a report line)."""
        from t2ibench.paths import shown

        lines = [
            f"{self.source}: prompts expected {self.expected_prompts}, found {self.found_prompts}; "
            f"{len(self.items)} readable images"
        ]
        for title, values in (("missing prompts", self.missing_prompts), ("problems", self.problems),
                              ("notes", self.notes)):  # fmt: skip
            if values:
                more = f" (+{len(values) - limit} more)" if len(values) > limit else ""
                lines.append(f"  {title} ({len(values)}): {', '.join(str(v) for v in values[:limit])}{more}")
        return "\n".join(shown(line) for line in lines)


SuiteT = TypeVar("SuiteT")
EvaluatorT = TypeVar("EvaluatorT")
ScanT = TypeVar("ScanT", bound=Scan)
RecordT = TypeVar("RecordT")
TablesT = TypeVar("TablesT")


class Benchmark(ABC, Generic[SuiteT, EvaluatorT, ScanT, RecordT, TablesT]):
    """One benchmark: its suite's source, its evaluator's registries, and scan → judge → summarise → render."""

    name: ClassVar[str]
    title: ClassVar[str]  # with its citation, e.g. "GenEval (Ghosh et al. 2023)"
    label: ClassVar[str]  # its short name in tables and console lines, e.g. "GenEval 2"
    release: ClassVar[str | None]  # the t2ibench.datasets release its prompts come from (None: generated)
    judges: ClassVar[tuple[str, ...]]  # the model registries its evaluator builds from
    docs: ClassVar[str]  # the docs page

    @abstractmethod
    def scan(self, source: Path, suite: SuiteT, *, images_per_prompt: int | None) -> ScanT:
        """Account for every image of ``source`` against ``suite`` (nothing judged yet)."""

    @abstractmethod
    def judge(
        self,
        scan: ScanT,
        evaluator: EvaluatorT,
        *,
        suite: SuiteT,
        out: Path | None,
        device: str,
        show_progress: bool,
    ) -> list[RecordT]:
        """Judge every image of ``scan`` with ``evaluator`` (built from its registries on ``device``); with ``out``,
        write the results file there, resuming from ``out``.partial."""

    @abstractmethod
    def summarise(self, records: Sequence[RecordT]) -> TablesT:
        """The benchmark's tables of ``records``."""

    @abstractmethod
    def render(self, tables: TablesT, *, label: str) -> str:
        """The tables as Markdown, one row labelled ``label``."""

    @abstractmethod
    def tables_json(self, tables: TablesT) -> dict[str, Any]:
        """The tables as JSON values."""

    def caveat(self, suite: SuiteT, evaluator: EvaluatorT) -> str | None:
        """Why numbers of this suite and evaluator are not comparable with the published ones (None: they are)."""
        return None

    def store(
        self,
        path: Path,
        *,
        model: str,
        scan: ScanT,
        suite: SuiteT,
        records: Sequence[RecordT],
        tables: TablesT,
    ) -> str:
        """Write the evaluation into the results store at ``path`` under ``model``; a one-line account of what went
        where. Benchmarks whose results the store does not hold yet refuse."""
        raise InputError(f"{self.name}: storing an evaluation of a folder is not supported (the refresh stores it)")

    def provenance(self, suite: SuiteT, evaluator: EvaluatorT, records: Sequence[RecordT]) -> dict[str, Any]:
        """What the tables were measured with, for their JSON (the suite file, its hash, the protocol)."""
        return {}

    # -- its `t2ibench evaluate <name>` command: the CLI adds IMAGES and the options every benchmark shares (--out,
    # --allow-missing, --images-per-prompt, --device, --json, --quiet; --store and --model where it can store); the
    # entry adds its own --

    command_help: ClassVar[str] = ""
    command_description: ClassVar[str] = ""
    images_help: ClassVar[str] = "the images to judge"
    images_per_prompt: ClassVar[int | None] = None  # the --images-per-prompt default (None: any number)

    def has_command(self) -> bool:
        """Whether the entry declares its ``evaluate`` options (``add_options``)."""
        return type(self).add_options is not Benchmark.add_options

    def can_store(self) -> bool:
        """Whether ``t2ibench evaluate <name> --store`` can write an evaluation of a folder (``store``)."""
        return type(self).store is not Benchmark.store

    def add_options(self, parser: Any) -> None:
        """Declare this benchmark's own ``evaluate`` options on the argparse ``parser``: its suite's
        (``add_suite_options``) and its evaluator's."""
        raise NotImplementedError(f"{self.name}: no command-line options of its own")

    def add_suite_options(self, parser: Any) -> None:
        """Declare the options that choose this benchmark's prompts (``evaluate`` and ``generate`` share them)."""
        raise NotImplementedError(f"{self.name}: no command-line options of its own")

    def suite_inputs_from(self, args: Any) -> list[Any]:
        """The local files the parsed suite options name (``t2ibench.paths.place``)."""
        return []

    def prompt_records(self, suite: SuiteT) -> list[dict[str, Any]]:
        """The suite's prompts as the records ``t2ibench generate`` writes images for (``prompt``, ``tag``, ...)."""
        raise NotImplementedError(f"{self.name}: no prompt records")

    def suite_from(self, args: Any) -> SuiteT:
        """The suite the parsed options name (read and checked)."""
        raise NotImplementedError(self.name)

    def evaluator_from(self, args: Any) -> EvaluatorT:
        """The evaluator the parsed options describe, validated before anything is read."""
        raise NotImplementedError(self.name)

    def inputs_from(self, args: Any) -> list[Any]:
        """The local files the parsed options name (``t2ibench.paths.place``): no output may land on them."""
        return []

    def model_sections(self, evaluator: EvaluatorT) -> list[tuple[Any, dict[str, str]]]:
        """The spec sections of ``evaluator`` that name models, with the options that set their fields (checked
        readable before any model loads)."""
        return []

    # -- its slice of the refresh (``t2ibench.pipeline.plan``); a benchmark without one runs in `evaluate` only --

    @property
    def spine(self) -> bool:
        """Whether this is the one benchmark every model of a refresh runs (``SPINE``): its generation is the model
        version, its images are what the diversity steps measure, and ``plan_spine`` plans its calls."""
        return self.name == SPINE

    def plan_spine(self, scope: Any, prompts: Any) -> Any:
        """The spine's calls for one model (``scope``: a ``t2ibench.pipeline.plan.ModelScope``) on the refresh's
        prompts: a part naming its images', verdicts' and tables' calls (GenEval's ``plan.SpinePart``)."""
        raise InputError(f"{self.name}: not the refresh's spine benchmark")

    def select_prompts(self, selection: Any) -> Any:
        """The spine's prompts for a refresh: its ``benchmarks.<name>`` ``selection`` as a
        ``t2ibench.pipeline.results.PromptSet`` (the ``prompts`` step)."""
        raise InputError(f"{self.name}: not the refresh's spine benchmark")

    def suite_id(self, selection: Any, wording: str = "original") -> str:
        """The spine's prompt suite as the store names it (``model_versions.suite``) for ``selection`` in
        ``wording`` (one of ``prompt_wordings()``)."""
        raise InputError(f"{self.name}: not the refresh's spine benchmark")

    def check_wording(self, wording: str, config: Any, *, where: str) -> None:
        """InputError naming the setting ``where`` unless a refresh of ``config`` can give a model the spine's prompts
        in ``wording`` (one of ``prompt_wordings()``; the first, the prompts as written, always)."""
        if wording != prompt_wordings()[0]:
            raise InputError(f"{where}: {self.name} has no {wording!r} prompts")

    def reword(self, prompts: Any, wording: str, config: Any, workspace: Any, *, where: str) -> Any:
        """The spine's ``prompts`` (a ``PromptSet``) in ``wording`` (``check_wording`` passed; the first wording: as
        they are)."""
        self.check_wording(wording, config, where=where)
        return prompts

    def spine_rows(self, judged: Any, scores: Any, generated: Any, *, suite: str, model: str) -> SpineRows:
        """The spine's rows of one model version for the store write, from its judged results (a
        ``pipeline.results.Judged``, re-read and checked unchanged), its score table (``TaskScores``) and the images
        it judged (``Generated``: every one must have its record)."""
        raise InputError(f"{self.name}: not the refresh's spine benchmark")

    def plan_shared(self, config: Any, workspace: Any) -> dict[str, tuple[str, str, dict[str, Any]]]:
        """The spine's calls shared by every model of a refresh whose results the store write takes: store
        parameter → (call id, step, parameters but placement); e.g. GenEval's evaluator self-test."""
        return {}

    def refresh_steps(self) -> Mapping[str, Any]:
        """The steps this benchmark adds to the refresh, by task name (``t2ibench.pipeline.identity.StepSpec``s;
        their calls count in the run summary's column named after the benchmark)."""
        return {}

    def record_published(self, store: Path, published: Sequence[str | Path] | None) -> None:
        """Store the published rows a report of ``store`` shows (``published``: their tables, None: the default
        ones), which its views compare measured rows with; the spine's (none by default)."""

    def acquire_for_refresh(self, config: Any, root: Path) -> list[Path]:
        """The released files a refresh of ``config`` (workspace ``root``) reads for this benchmark, fetched where
        they are missing and verified (before any work); none by default."""
        return []

    def select_for_refresh(self, config: Any, workspace: Any) -> Any:
        """This benchmark's prompts for a refresh of ``config`` (a ``t2ibench.config.Config``): read and checked once,
        before any work, and shared by every model that runs it."""
        raise InputError(f"{self.name}: this benchmark does not run in a refresh yet (use `t2ibench evaluate`)")

    def plan_for_model(self, scope: Any, selected: Any) -> Any:
        """This benchmark's calls for one model (``scope``: a ``t2ibench.pipeline.plan.ModelScope``, whose ``add``
        takes each call) on the prompts ``select_for_refresh`` chose; a ``t2ibench.pipeline.plan.BenchmarkPart``
        (the call whose result is its rows for the store write, its own evaluation hash, its folders)."""
        raise InputError(f"{self.name}: this benchmark does not run in a refresh yet (use `t2ibench evaluate`)")


@dataclass(frozen=True)
class Evaluation(Generic[ScanT, RecordT, TablesT]):
    """What ``evaluate_images`` produced: the scan, the records and the tables (None when nothing was judged)."""

    scan: ScanT
    records: tuple[RecordT, ...]
    tables: TablesT | None


@dataclass(frozen=True)
class StoredColumns:
    """How a benchmark whose tables live in ``benchmark_scores`` shows in SQL and on the leaderboard, as data (its
    ``columns`` module's ``COLUMNS``; the store builds the views from it, the report the leaderboard column).

    Views made for benchmark ``b``: ``b_scores`` (every stored cell with its protocol: ``details`` columns read
    from the protocol's settings, ``protocol_key`` the digest of the ``protocol`` settings, a missing one '-'),
    ``b_current`` (each current model version's ``table`` cells pivoted into ``b_<suffix>`` columns with their
    intervals, ``b_prompts``, then ``summary`` columns) and, with ``skill_rates``, ``b_skill_rates`` (per skill
    from the stored answers); the leaderboard view gains every ``b_current`` column."""

    protocol: tuple[str, ...]  # settings paths (dotted) whose values make one protocol
    details: tuple[tuple[str, str], ...]  # scores-view column ← settings path
    table: str  # the stored table whose cells become leaderboard columns
    keys: tuple[tuple[str, str], ...]  # stored cell key → leaderboard column suffix (with _ci_low, _ci_high)
    summary: tuple[tuple[str, str], ...]  # leaderboard column suffix ← scores-view column (one value per version)
    headline: str  # the suffix of the one column the leaderboard page shows
    title: str  # that column's header
    legend: str  # the sentence that explains it under the leaderboard
    skill_rates: str | None = None  # the skill-rates view's mean-probability column name (None: no such view)
    # what paired comparisons read (t2ibench.comparisons): every stored version's results per prompt, as SQL over
    # its stored rows ('{benchmark}' stands for the benchmark's name) giving model, model_hash, evaluator_hash,
    # suite (the suite file's identity), prompt_index, stratum, successes and trials, such that the mean over strata
    # of Σ successes / Σ trials is the headline divided by ``paired_scale`` (``t2ibench.metrics.paired``); None:
    # the benchmark's models are not compared
    paired: str | None = None
    paired_scale: float = 100.0  # headline units per unit of the paired score (percent points: 100)
    # the protocol settings that only choose prompts: two versions whose protocols differ in nothing else were
    # judged the same way, so a change between them is compared on the prompts both share
    selection: tuple[str, ...] = ("prompt_set",)

    def column(self, benchmark: str, suffix: str) -> str:
        """The leaderboard column of ``suffix`` for ``benchmark``: '<benchmark>_<suffix>'."""
        return f"{benchmark}_{suffix}"


@dataclass(frozen=True)
class SpineSQL:
    """The spine benchmark's SQL in the store (its ``columns`` module's ``SPINE_SQL``, data the schema reads): its own
    tables (name → (column definitions, natural key)), the views over them that the leaderboard reads, its part of
    the leaderboard view (a select-list fragment ending in a comma, the joins giving it, the ranking order) and its
    views over its stored rows (read after the leaderboard's)."""

    tables: Mapping[str, tuple[str, tuple[str, ...]]]
    views_first: Mapping[str, str]
    leaderboard_columns: str
    leaderboard_joins: str
    leaderboard_order: str
    views_after: Mapping[str, str]
    # the tables one model version's store write replaces from ``SpineRows.tables`` (name → the scope columns
    # beyond the version's model, model_hash and evaluator_hash: 'suite' for rows keyed by the spine's prompts)
    version_tables: Mapping[str, tuple[str, ...]]
    # named reads of its stored rows the core's report pages call (``t2ibench.store.queries.spine_rows``)
    queries: Mapping[str, str]


@dataclass(frozen=True)
class SpineRows:
    """The spine benchmark's rows of one model version, for the store write: its tables (name → rows without the
    version columns, ``SpineSQL.version_tables``), how many images it judged, and the two parts of the version's
    content hash it owns: the digest of the results file the rows were read from and its score table's rows."""

    tables: Mapping[str, Sequence[Mapping[str, Any]]]
    judged: int
    results_sha256: str
    scores: Sequence[Mapping[str, Any]]


def role_module(name: str, role: str) -> Any | None:
    """The ``role`` module of the benchmark registered as ``name`` (a sibling of its entry's module), or None when
    the benchmark has none."""
    package = REGISTRY[name].partition(":")[0].rpartition(".")[0]
    try:
        return importlib.import_module(f"{package}.{role}")
    except ModuleNotFoundError as error:
        if error.name != f"{package}.{role}":
            raise
        return None


def stored_columns() -> dict[str, StoredColumns]:
    """Benchmark name → its ``StoredColumns``, for every registered benchmark stored in ``benchmark_scores``."""
    found = {}
    for name in REGISTRY:
        module = role_module(name, "columns")
        if module is not None and hasattr(module, "COLUMNS"):
            found[name] = module.COLUMNS
    return found


def spine_sql() -> SpineSQL:
    """The spine benchmark's ``SpineSQL`` (``SPINE_SQL`` in its ``columns`` module)."""
    module = role_module(SPINE, "columns")
    found = getattr(module, "SPINE_SQL", None)
    if not isinstance(found, SpineSQL):
        raise TypeError(f"benchmark {SPINE!r} (the refresh's spine) has no SPINE_SQL in its columns module")
    return found


def spine_report() -> Any:
    """The spine benchmark's ``report_spine`` module: its leaderboard columns and legend, plots, sections around the
    table, pages, drill-down (image rows, thumbnails, score section, prompt list and pages), model-card lines and
    paper table — the hooks ``t2ibench.report`` renders around (docs/benchmarks.md#the-spines-report)."""
    module = role_module(SPINE, "report_spine")
    if module is None:
        raise TypeError(f"benchmark {SPINE!r} (the refresh's spine) has no report_spine module")
    return module


@dataclass(frozen=True)
class PromptStructure:
    """What a prompt asks, read from its text by the benchmark whose templates made it, in place of a text encoder
    (the suite module's ``PROMPT_STRUCTURE``): ``name`` (versioned, recorded as the text side's identity), ``dim``
    and ``parse`` (text → the prompt's record; InputError for text its templates do not make) and ``vector`` (text →
    a unit vector of shape (dim,))."""

    name: str
    dim: int
    parse: Callable[[str], Any]
    vector: Callable[[str], Any]


def prompt_structure() -> PromptStructure:
    """The spine benchmark's ``PromptStructure`` — the prompts a refresh measures Scendi on are the spine's — which a
    structure embedder (``mobilenet+structure``) reads in place of a text encoder."""
    found = getattr(role_module(SPINE, "suite"), "PROMPT_STRUCTURE", None)
    if not isinstance(found, PromptStructure):
        raise TypeError(f"benchmark {SPINE!r} (the refresh's spine) has no PROMPT_STRUCTURE in its suite module")
    return found


def prompt_wordings() -> tuple[str, ...]:
    """The wordings of the spine's prompts a model can be given (``WORDINGS`` in the spine's suite module; the first
    is the prompts as written, the only one when the suite has no rewrites)."""
    return tuple(getattr(role_module(SPINE, "suite"), "WORDINGS", ("original",)))


def benchmark_options(name: str) -> Any | None:
    """The ``options`` module of the benchmark registered as ``name`` — ``SELECTION`` (the type of its
    ``benchmarks.<name>`` config section: which prompts a refresh runs) and ``EVALUATOR`` (``evaluators.<name>``,
    with ``models()``: its model specs by field) — or None when it has none (GenEval's are the config's own)."""
    module = role_module(name, "options")
    return module if module is not None and hasattr(module, "SELECTION") else None


def report_section(name: str) -> Any:
    """The ``report`` module of a benchmark stored in ``benchmark_scores`` (``html_section``, ``markdown_section``,
    ``write_pages`` — given its stored ``scores``, ``answers`` and ``images`` rows —, and
    ``coverage_labels(suite_sha256, prompts)``, given the leaderboard's ``<name>_suite`` — None
    unless its StoredColumns.summary has a 'suite' column — and ``<name>_prompts``): docs/benchmarks.md."""
    module = role_module(name, "report")
    if module is None:
        raise InputError(f"benchmark {name!r} stores its tables but has no report module")
    return module


# name → "module:class"; a new benchmark is one line here and its module (docs/benchmarks.md)
REGISTRY: Mapping[str, str] = {
    "geneval": "t2ibench.benchmarks.geneval.benchmark:GenEvalBenchmark",
    "geneval2": "t2ibench.benchmarks.geneval2.benchmark:Geneval2Benchmark",
    "t2i_compbench": "t2ibench.benchmarks.t2i_compbench.benchmark:T2ICompBenchBenchmark",
}
SPINE = "geneval"
"""The registered benchmark every model of a refresh runs: its generation is the model version, its images are what
the diversity steps measure (``Benchmark.plan_spine``); every other benchmark is optional per config and model."""


def names() -> tuple[str, ...]:
    """The registered benchmarks, in registry order."""
    return tuple(REGISTRY)


def label(name: str) -> str:
    """The short display name of the benchmark registered as ``name`` ("GenEval 2")."""
    return benchmark(name).label


def benchmark(name: str) -> Benchmark[Any, Any, Any, Any, Any]:
    """The benchmark registered as ``name`` (its module imported now); InputError with a did-you-mean otherwise."""
    if name not in REGISTRY:
        raise unknown_choice("benchmark", name, list(REGISTRY))
    module, _, cls = REGISTRY[name].partition(":")
    made: Benchmark[Any, Any, Any, Any, Any] = getattr(importlib.import_module(module), cls)()
    if made.name != name:
        raise InputError(f"benchmark {name!r} is registered as {REGISTRY[name]}, whose name is {made.name!r}")
    return made


def evaluate_images(
    bench: Benchmark[SuiteT, EvaluatorT, ScanT, RecordT, TablesT],
    scan: ScanT,
    evaluator: EvaluatorT,
    *,
    suite: SuiteT,
    out: Path | None,
    device: str = "auto",
    show_progress: bool = True,
) -> Evaluation[ScanT, RecordT, TablesT]:
    """Judge a scanned image source with ``bench`` and summarise it (the one path ``t2ibench evaluate`` takes)."""
    records = bench.judge(scan, evaluator, suite=suite, out=out, device=device, show_progress=show_progress)
    tables = bench.summarise(records) if records else None
    return Evaluation(scan, tuple(records), tables)


def evaluation_source(
    *, images: Path, names_from: Path | None, identity: str, judged: int, suite: str, suite_prompts: int, released: bool
) -> dict[str, Any]:
    """The ``benchmark_protocols.source`` record of an evaluation stored by ``t2ibench evaluate --store``: who stored
    it, the images judged (their folder or map, the folder their names are relative to, their identity), the
    prompts judged, the suite, its prompt count and whether it is the released one — where the images came from,
    never part of the protocol."""
    return {
        "writer": "t2ibench evaluate",
        "images": str(images),
        "names_from": str(Path(names_from).resolve()) if names_from is not None else None,
        "images_identity": identity,
        "prompts_judged": judged,
        "suite": suite,
        "suite_prompts": suite_prompts,
        "suite_released": released,
    }


def benchmark_score_rows(tables: Any, benchmark: str) -> list[dict[str, Any]]:
    """``benchmark_scores`` rows of a benchmark's tables (each cell of ``tables.rows()``, with the interval's
    method)."""
    method = tables.describe()
    return [
        {
            "benchmark": benchmark,
            "table_name": cell["table"],
            "key": cell["key"],
            "estimate": cell["estimate"],
            "ci_low": cell["ci_low"],
            "ci_high": cell["ci_high"],
            "ci_level": cell["ci_level"],
            "ci_method": method,
            "prompts": cell["prompts"],
            "questions": cell["questions"],
        }
        for cell in tables.rows()
    ]
