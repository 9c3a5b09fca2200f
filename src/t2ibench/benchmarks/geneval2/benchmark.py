"""GenEval 2 as a benchmark plugin: a VQA judge asks every atom's question; Soft-TIFA, TIFA and VQAScore tables
(``evaluate`` beside this module does the work, ``report`` renders)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from t2ibench.benchmarks import Benchmark
from t2ibench.benchmarks.geneval2.evaluate import Geneval2Result, Geneval2Scan, judge_with, scan_images, summarise
from t2ibench.benchmarks.geneval2.metrics import ANSWER_RULES, DEFAULT_ANSWER_RULE, Geneval2Tables
from t2ibench.benchmarks.geneval2.options import GENEVAL2_DATA, Geneval2Config, Geneval2SuiteFile
from t2ibench.benchmarks.geneval2.report import render_tables
from t2ibench.benchmarks.geneval2.suite import Geneval2Suite, read_geneval2
from t2ibench.errors import InputError
from t2ibench.specs import DEFAULT_VQA_JUDGE_MODEL, VQAJudgeConfig

JUDGE_OPTIONS = {"backend": "--judge", "model": "--judge-model", "revision": "--judge-revision"}
"""The judge spec's fields and the `evaluate geneval2` options that set them (errors are named by the option)."""
PAPER_JUDGE = DEFAULT_VQA_JUDGE_MODEL  # the paper's judge: another one is labelled not comparable


class Geneval2Benchmark(Benchmark[Geneval2Suite, Geneval2Config, Geneval2Scan, Geneval2Result, Geneval2Tables]):
    """GenEval 2 (Kamath et al. 2025): a VQA judge asks every atom's question; Soft-TIFA, TIFA, VQAScore tables."""

    name = "geneval2"
    title = "GenEval 2 (Kamath et al. 2025)"
    label = "GenEval 2"
    release = "geneval2"
    judges = ("VQA judge backend",)
    docs = "docs/geneval2.md"

    command_help = (
        "GenEval 2 (Kamath et al. 2025) for an image folder or a {prompt: image} JSON map, judged by a VQA model"
    )
    command_description = (
        "Ask the judge every atom's question of each image (and VQAScore's), write per-question results, print "
        "Soft-TIFA AM/GM, TIFA and VQAScore overall, per skill and per atom count, each with a bootstrap interval "
        "over prompts. Every image is accounted for."
    )
    images_help = "a GenEval-layout folder (<NNNNN>/metadata.jsonl, samples/) or a .json image map"

    def add_suite_options(self, parser: Any) -> None:
        """The suite file (default: the release's place) and whether it is a subset: ``Geneval2SuiteFile``'s
        fields."""
        from t2ibench.options import add_fields

        parser.set_defaults(geneval2_suite=add_fields(parser, Geneval2SuiteFile, dest_prefix="geneval2_"))

    def _suite_file(self, args: Any) -> Geneval2SuiteFile:
        """The suite options as given."""
        from t2ibench.options import from_args

        return from_args(Geneval2SuiteFile, args, args.geneval2_suite)

    def suite_inputs_from(self, args: Any) -> list[Any]:
        """The suite file."""
        from t2ibench.paths import place

        return [place("--suite", self._suite_file(args).suite_file)]

    def prompt_records(self, suite: Geneval2Suite) -> list[dict[str, Any]]:
        """Each prompt's record (index, prompt, atoms) in suite order."""
        return [p.record() for p in suite.prompts]

    def add_options(self, parser: Any) -> None:
        """The suite file, the judge (``VQAJudgeConfig``'s fields and defaults) and the answer rule."""
        from t2ibench.models.registry import VQA_JUDGES
        from t2ibench.options import add_fields

        self.add_suite_options(parser)
        # the judge's options are VQAJudgeConfig's fields, the answer rule Geneval2Config's (t2ibench.options)
        judge = add_fields(
            parser, VQAJudgeConfig, flags=JUDGE_OPTIONS, choices={"backend": VQA_JUDGES.names()}, dest_prefix="judge_"
        )
        rule = add_fields(parser, Geneval2Config, skip=("judge",), choices={"answer_rule": ANSWER_RULES})
        parser.set_defaults(geneval2_options=(judge, rule))

    def suite_from(self, args: Any) -> Geneval2Suite:
        """The --suite file, read whole (or as a subset with --subset); at the release's place it must be the
        release."""
        from t2ibench.datasets import check_release_copy

        given = self._suite_file(args)
        path = given.suite_file
        if path == GENEVAL2_DATA and Path(path).exists():
            check_release_copy("geneval2", path, where="--suite")  # the release's place holds the release
        if not Path(path).exists():
            raise InputError(
                f"--suite {path}: no such file; fetch GenEval 2's file with `t2ibench data fetch geneval2 "
                f"--out {Path(path).parent}` (or --from DIR for a local copy)"
            )
        return read_geneval2(path, full=not given.subset)

    def evaluator_from(self, args: Any) -> Geneval2Config:
        """The judge and answer rule the options give, each field's error under its option."""
        from t2ibench.options import from_args

        judge, rule = args.geneval2_options
        return from_args(Geneval2Config, args, rule, judge=from_args(VQAJudgeConfig, args, judge))

    def inputs_from(self, args: Any) -> list[Any]:
        """The suite file and a judge given as a local folder."""
        from t2ibench.paths import place

        model = args.judge_model if Path(args.judge_model).exists() else None
        return [*self.suite_inputs_from(args), place("--judge-model", model, tree=True)]

    def model_sections(self, evaluator: Geneval2Config) -> list[tuple[Any, dict[str, str]]]:
        """The judge's spec, with the options that set its fields."""
        return [(evaluator.judge, JUDGE_OPTIONS)]

    def refresh_steps(self) -> Mapping[str, Any]:
        """Judging, its tables and its rows (``steps.STEPS``)."""
        from t2ibench.benchmarks.geneval2.steps import STEPS

        return STEPS

    def acquire_for_refresh(self, config: Any, root: Path) -> list[Path]:
        """``plan.acquire``: the pinned suite file at its default place, fetched if missing, verified every time."""
        from t2ibench.benchmarks.geneval2.plan import acquire

        return acquire(config, root)

    def select_for_refresh(self, config: Any, workspace: Any) -> Any:
        """``steps.select_geneval2`` of ``benchmarks.geneval2`` (its suite file checked, its prompts chosen)."""
        from t2ibench.benchmarks.geneval2.plan import select

        return select(config, workspace)

    def plan_for_model(self, scope: Any, selected: Any) -> Any:
        """``plan.plan_model``: generation of GenEval 2's prompts, judging, tables, rows."""
        from t2ibench.benchmarks.geneval2.plan import plan_model

        return plan_model(scope, selected)

    def scan(self, source: Path, suite: Geneval2Suite, *, images_per_prompt: int | None) -> Geneval2Scan:
        """``scan_images`` of a GenEval-layout folder or a {prompt: image path} map."""
        return scan_images(source, suite, images_per_prompt=images_per_prompt)

    def judge(
        self,
        scan: Geneval2Scan,
        evaluator: Geneval2Config,
        *,
        suite: Geneval2Suite,
        out: Path | None,
        device: str,
        show_progress: bool,
    ) -> list[Geneval2Result]:
        """``judge_with``: the refresh's judging (``steps.step_geneval2``) as it is."""
        return judge_with(scan, evaluator, suite=suite, out=out, device=device, show_progress=show_progress)

    def summarise(self, records: Sequence[Geneval2Result]) -> Geneval2Tables:
        """The reference's tables with bootstrap intervals."""
        return summarise(records)

    def render(self, tables: Geneval2Tables, *, label: str) -> str:
        """The three tables as Markdown."""
        return render_tables(tables, label=label)

    def tables_json(self, tables: Geneval2Tables) -> dict[str, Any]:
        """``Geneval2Tables.to_dict``."""
        return tables.to_dict()

    def store(
        self,
        path: Path,
        *,
        model: str,
        scan: Geneval2Scan,
        suite: Geneval2Suite,
        records: Sequence[Geneval2Result],
        tables: Geneval2Tables,
    ) -> str:
        """``geneval2_eval.store_results``: the answers (``vqa_answers``) and tables (``benchmark_scores``)."""
        from t2ibench.benchmarks.geneval2.evaluate import store_results

        done = store_results(path, model=model, results=records, tables=tables, suite=suite, scan=scan)
        return (
            f"{path}: {done.answers} answers and {done.scores} table cells of {done.model} "
            f"(images {done.model_hash[:12]}, protocol {done.evaluator_hash[:12]})"
        )

    def provenance(
        self, suite: Geneval2Suite, evaluator: Geneval2Config, records: Sequence[Geneval2Result]
    ) -> dict[str, Any]:
        """The suite file, its hash and prompt count, whether it is the release, and the one protocol measured."""
        from t2ibench.benchmarks.geneval2.evaluate import check_one_protocol

        return {
            "suite": str(suite.path),
            "suite_sha256": suite.sha256,
            "suite_prompts": len(suite.prompts),
            "released_suite": suite.released,
            "prompts_judged": len({r.prompt_index for r in records}),
            "protocol": dict(check_one_protocol(records)),
        }

    def caveat(self, suite: Geneval2Suite, evaluator: Geneval2Config) -> str | None:
        """Another suite file, another judge or the non-default answer rule: not the published protocol."""
        reasons = []
        if not suite.released:
            reasons.append("not the released GenEval 2 file")
        if evaluator.judge.model != PAPER_JUDGE:
            reasons.append(f"judge {evaluator.judge.model}, not the paper's {PAPER_JUDGE}")
        if evaluator.answer_rule != DEFAULT_ANSWER_RULE:
            reasons.append(f"answer rule {evaluator.answer_rule!r}, not the reference's")
        return "; ".join(reasons) + ": not comparable with published numbers" if reasons else None
