"""T2I-CompBench++ as a benchmark plugin: eight categories, each judged by the reference's rule (BLIP VQA, an
open-vocabulary detector, depth, CLIPScore, 3-in-1); per-category scores with intervals (``evaluate`` beside this
module does the work, ``report`` renders)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from t2ibench.benchmarks import Benchmark, evaluation_source
from t2ibench.benchmarks.t2i_compbench.evaluate import CompResult, CompScan, judge_with, scan_images
from t2ibench.benchmarks.t2i_compbench.metrics import CategoryScore, category_scores
from t2ibench.benchmarks.t2i_compbench.options import T2ICompBenchConfig, T2ICompBenchPrompts
from t2ibench.benchmarks.t2i_compbench.report import render_tables
from t2ibench.benchmarks.t2i_compbench.suite import Selection, load_suite, select
from t2ibench.errors import InputError

MODELS = ("vqa", "detector", "depth", "clip")  # the evaluator's model specs, each with its own options
NOT_OPTIONS = {"clip": ("normalize", "pooling")}  # fields the rule does not read (it normalises; open_clip pools)


def _flags(kind: str, spec: type) -> dict[str, str]:
    """The options of one model spec's fields: '--<kind>-<field>' (``--vqa-model``, ``--detector-threshold``)."""
    return {f.name: f"--{kind}-{f.name.replace('_', '-')}" for f in dataclasses.fields(spec)}


class T2ICompBenchBenchmark(Benchmark[Selection, T2ICompBenchConfig, CompScan, CompResult, list[CategoryScore]]):
    """T2I-CompBench++ (Huang et al. 2023/2025): eight compositional categories, each by the reference's rule."""

    name = "t2i_compbench"
    title = "T2I-CompBench++ (Huang et al. 2023)"
    label = "T2I-CompBench++"
    release = None  # the suite ships with the package (MIT; suite.py says why)
    judges = ("VQA judge backend", "open-vocabulary detector backend", "depth model backend", "embedder backend")
    docs = "docs/t2i_compbench.md"

    command_help = "T2I-CompBench++ for an image folder (samples/<prompt>_<N>.png) or a {prompt: images} JSON map"
    command_description = (
        "Judge each image by its category's rule (BLIP VQA on noun phrases, detector boxes, depth, CLIPScore, "
        "3-in-1), write per-image results and print each category's score with a bootstrap interval over prompts. "
        "Every image is accounted for."
    )
    images_help = "the reference's image folder (samples/<prompt>_<N>.png) or a .json {prompt: image or [images]} map"

    def add_suite_options(self, parser: Any) -> None:
        """The categories and how many prompts of each: ``T2ICompBenchPrompts``' fields."""
        from t2ibench.options import add_fields

        parser.set_defaults(t2i_compbench_suite=add_fields(parser, T2ICompBenchPrompts, dest_prefix="t2i_"))

    def add_options(self, parser: Any) -> None:
        """The selection, each model's spec (``--vqa-*``, ``--detector-*``, ``--depth-*``, ``--clip-*``: their fields
        and this benchmark's defaults), the rule, np_num and a phrase table."""
        from t2ibench.options import add_fields

        self.add_suite_options(parser)
        default = T2ICompBenchConfig()
        specs = {}
        for kind in MODELS:
            spec = getattr(default, kind)
            specs[kind] = add_fields(
                parser, type(spec), flags=_flags(kind, type(spec)), dest_prefix=f"{kind}_",
                defaults=dataclasses.asdict(spec), skip=NOT_OPTIONS.get(kind, ()),
            )  # fmt: skip
        rest = add_fields(parser, T2ICompBenchConfig, skip=MODELS)
        parser.set_defaults(t2i_compbench_options=(specs, rest))

    def suite_from(self, args: Any) -> Selection:
        """The shipped suite (verified) and the prompts the options choose."""
        from t2ibench.options import from_args

        chosen = from_args(T2ICompBenchPrompts, args, args.t2i_compbench_suite)
        suite = load_suite()
        prompts = select(suite, chosen.categories, chosen.per_category)
        return Selection(suite, tuple(prompts), tuple(chosen.categories or ()), chosen.per_category)

    def prompt_records(self, suite: Selection) -> list[dict[str, Any]]:
        """Each chosen prompt's record (category, index, prompt) in the benchmark's order."""
        return [{"category": p.category, "line": p.line, "prompt": p.text, "tag": p.category} for p in suite.prompts]

    def evaluator_from(self, args: Any) -> T2ICompBenchConfig:
        """The models, rule and np_num the options give, each field's error under its option."""
        from t2ibench.options import from_args

        specs, rest = args.t2i_compbench_options
        default = T2ICompBenchConfig()
        models = {kind: from_args(type(getattr(default, kind)), args, specs[kind]) for kind in MODELS}
        return from_args(T2ICompBenchConfig, args, rest, **models)

    def inputs_from(self, args: Any) -> list[Any]:
        """Models given as local folders and a phrase table given as a file."""
        from t2ibench.paths import place

        found = [place(f"--{kind}-model", getattr(args, f"{kind}_model"), tree=True) for kind in MODELS
                 if Path(getattr(args, f"{kind}_model")).exists()]  # fmt: skip
        return [*found, place("--phrases", args.phrases)] if args.phrases else found

    def model_sections(self, evaluator: T2ICompBenchConfig) -> list[tuple[Any, dict[str, str]]]:
        """Each model's spec with the options that set its fields."""
        return [(getattr(evaluator, kind), _flags(kind, type(getattr(evaluator, kind)))) for kind in MODELS]

    def refresh_steps(self) -> Mapping[str, Any]:
        """Judging, its table and its rows (``steps.STEPS``)."""
        from t2ibench.benchmarks.t2i_compbench.steps import STEPS

        return STEPS

    def select_for_refresh(self, config: Any, workspace: Any) -> Any:
        """``plan.select``: ``benchmarks.t2i_compbench``'s prompts of the shipped suite (its phrase table checked
        when a chosen category reads it)."""
        from t2ibench.benchmarks.t2i_compbench.plan import select as select_prompts

        return select_prompts(config, workspace)

    def plan_for_model(self, scope: Any, selected: Any) -> Any:
        """``plan.plan_model``: generation of T2I-CompBench++'s prompts, judging, table, rows."""
        from t2ibench.benchmarks.t2i_compbench.plan import plan_model

        return plan_model(scope, selected)

    def store(
        self,
        path: Path,
        *,
        model: str,
        scan: CompScan,
        suite: Selection,
        records: Sequence[CompResult],
        tables: list[CategoryScore],
    ) -> str:
        """The judged images (``benchmark_images``) and table (``benchmark_scores``) under the version of the images
        judged (the suite and every image's SHA-256) and the protocol, as a refresh's rows are made
        (``rows.evaluation_rows``); a re-evaluation of the same version replaces its rows."""
        from t2ibench.benchmarks.t2i_compbench.rows import evaluation_rows, one_protocol, prompt_record, score_rows
        from t2ibench.hashing import content_hash, file_sha256
        from t2ibench.store import Store

        if not model.strip():
            raise InputError("--model must name the model the images are of")
        protocol = one_protocol(records, [(p.index, prompt_record(p)) for p in suite.prompts])
        images = [[i.prompt.index, i.sample, file_sha256(i.path)] for i in scan.items]
        version = {"model": model, "model_hash": content_hash({"suite": suite.suite.sha256, "images": images}),
                   "evaluator_hash": content_hash(protocol)}  # fmt: skip
        rows = evaluation_rows(records, score_rows(records, level=0.95), protocol, version["evaluator_hash"])
        judged = {r.prompt_index for r in records}
        # the shipped suite is the released one: verified against its pins when read
        source = evaluation_source(images=scan.source, names_from=scan.names_from, identity=version["model_hash"],
                                   judged=len(judged), suite="shipped", suite_prompts=len(suite.suite.prompts),
                                   released=True)  # fmt: skip
        Store(path).write_evaluation(version, rows, source)
        return (
            f"{path}: {len(rows.images)} judged images and {len(rows.scores)} table cells of {model} "
            f"(images {version['model_hash'][:12]}, protocol {version['evaluator_hash'][:12]})"
        )

    def scan(self, source: Path, suite: Selection, *, images_per_prompt: int | None) -> CompScan:
        """``scan_images`` of the reference's folder or a JSON map against the chosen prompts."""
        return scan_images(source, suite.suite, suite.prompts, images_per_prompt=images_per_prompt)

    def judge(
        self,
        scan: CompScan,
        evaluator: T2ICompBenchConfig,
        *,
        suite: Selection,
        out: Path | None,
        device: str,
        show_progress: bool,
    ) -> list[CompResult]:
        """``judge_with``: each image by its category's rule, resumable through ``out``."""
        return judge_with(scan, evaluator, suite=suite.suite, out=out, device=device, show_progress=show_progress)

    def summarise(self, records: Sequence[CompResult]) -> list[CategoryScore]:
        """Each category's score (as its script averages) with a bootstrap interval over prompts."""
        return category_scores([(r.category, r.prompt_index, r.score) for r in records])

    def render(self, tables: list[CategoryScore], *, label: str) -> str:
        """The category table as Markdown."""
        return render_tables(tables, label=label)

    def tables_json(self, tables: list[CategoryScore]) -> dict[str, Any]:
        """Category → score, interval and counts."""
        return {"categories": [dataclasses.asdict(t) for t in tables], "interval": "percentile bootstrap over prompts"}

    def provenance(
        self, suite: Selection, evaluator: T2ICompBenchConfig, records: Sequence[CompResult]
    ) -> dict[str, Any]:
        """The suite's digest and selection, the rule, each category's protocol."""
        protocols = {r.category: dict(r.protocol) for r in records}
        return {
            "suite_sha256": suite.suite.sha256,
            "categories": list(suite.categories) or "all",
            "per_category": suite.per_category,
            "rule": evaluator.rule,
            "protocols": protocols,
        }

    def caveat(self, suite: Selection, evaluator: T2ICompBenchConfig) -> str | None:
        """Always: the detector is not the reference's UniDet; also the corrected rule, a subset, a tiny model."""
        detector = f"the 2-D, 3-D, numeracy and complex scores use {evaluator.detector.model}, not UniDet"
        reasons = []
        if evaluator.rule != "reference":
            reasons.append(f"rule {evaluator.rule!r}, not the reference's")
        if suite.per_category is not None:
            reasons.append(f"the first {suite.per_category} prompts per category, not 300")
        used = evaluator.models_for(T2ICompBenchPrompts(categories=suite.categories or None))
        if any(spec.tiny for spec in used.values()):
            reasons.append("tiny random-weight models (smoke)")
        if not reasons:
            return detector + " (no maintained loader): those are not comparable with published numbers"
        return "; ".join(reasons) + ": not comparable with published numbers (and " + detector + ")"
