"""GenEval as a benchmark plugin: detector rules over the official (or a generated) suite, Table 2
(``t2ibench.benchmarks.geneval.evaluate`` does the work, ``t2ibench.benchmarks.geneval.report`` renders)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from t2ibench.benchmarks import Benchmark, SpineRows
from t2ibench.benchmarks.geneval.evaluate import FolderScan, ResultRow, Summary, judge_scan, scan_folder, summarise
from t2ibench.benchmarks.geneval.report import render_summary
from t2ibench.benchmarks.geneval.suite import worded_suite


class GenEvalBenchmark(Benchmark[Sequence[Mapping[str, Any]], Any, FolderScan, ResultRow, Summary]):
    """GenEval (Ghosh et al. 2023): detector rules over the official (or a generated) suite; Table 2."""

    name = "geneval"
    title = "GenEval (Ghosh et al. 2023)"
    label = "GenEval"
    release = None  # the suite is generated from the templates (equal to the released file; geneval_data stage)
    judges = ("detector backend", "colour classifier backend")
    docs = "docs/geneval.md"

    def refresh_steps(self) -> Mapping[str, Any]:
        """Judging (per prompt shard), the shards' merge and Table 2 (``steps.STEPS``)."""
        from t2ibench.benchmarks.geneval.steps import STEPS

        return STEPS

    def plan_spine(self, scope: Any, prompts: Any) -> Any:
        """``plan.plan_model``: one model's generation, judging and Table 2 calls."""
        from t2ibench.benchmarks.geneval.plan import plan_model

        return plan_model(scope, prompts)

    # -- its `t2ibench evaluate geneval` / `generate geneval` command (benchmark_cli: the options it shares with
    # GenEval's own verbs)
    command_help = "GenEval verdicts for an image folder (<dir>/<NNNNN>/metadata.jsonl, samples/*.png)"
    command_description = (
        "Detect objects (Mask2Former), classify colours (CLIP), judge each image with GenEval's rules, write "
        "results.jsonl and print the Table-2 summary. Every image is accounted for."
    )
    images_help = "a GenEval-layout folder (<NNNNN>/metadata.jsonl, samples/*.png)"
    images_per_prompt: ClassVar[int] = 4  # the reference's generation script makes 4 per prompt

    def add_suite_options(self, parser: Any) -> None:
        """The suite: generated (--seed, --per-task, --classes) or a released --metadata file, in a --wording."""
        from t2ibench.benchmarks.geneval.benchmark_cli import suite_options

        suite_options(parser, metadata=True, wording=True)

    def add_options(self, parser: Any) -> None:
        """The suite's options, then the detector's, colour classifier's and thresholds' (their fields')."""
        from t2ibench.benchmarks.geneval.benchmark_cli import evaluator_options

        self.add_suite_options(parser)
        evaluator_options(parser)  # --device is every command's

    def suite_inputs_from(self, args: Any) -> list[Any]:
        """The --metadata file, if given, and the --rewritten file the --wording reads."""
        from t2ibench.benchmarks.geneval.suite import WORDINGS
        from t2ibench.paths import place

        reworded = getattr(args, "wording", WORDINGS[0]) != WORDINGS[0]
        return [place("--metadata", args.metadata), place("--rewritten", args.rewritten if reworded else None)]

    def suite_from(self, args: Any) -> Sequence[Mapping[str, Any]]:
        """The suite's records: generated or read from --metadata."""
        from t2ibench.benchmarks.geneval.benchmark_cli import suite_records

        return suite_records(args)

    def prompt_records(self, suite: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The records themselves (GenEval's metadata lines)."""
        return [dict(r) for r in suite]

    def evaluator_from(self, args: Any) -> Any:
        """The ``GenEvalConfig`` the options describe, each field's error under its option."""
        from t2ibench.benchmarks.geneval.benchmark_cli import geneval_config

        return geneval_config(args)

    def inputs_from(self, args: Any) -> list[Any]:
        """The --metadata file and the evaluator's local model files."""
        from t2ibench.benchmarks.geneval.benchmark_cli import evaluator_inputs

        return [*self.suite_inputs_from(args), *evaluator_inputs(args)]

    def model_sections(self, evaluator: Any) -> list[tuple[Any, dict[str, str]]]:
        """The detector's and colour classifier's specs, with the options that set their fields."""
        from t2ibench.benchmarks.geneval.benchmark_cli import model_sections

        return model_sections(evaluator)

    # -- the refresh's spine

    def select_prompts(self, selection: Any) -> Any:
        """``steps.select_prompts``: the generated suite's records, restricted as ``selection`` says."""
        from t2ibench.benchmarks.geneval.steps import select_prompts

        return select_prompts(selection)

    def suite_id(self, selection: Any, wording: str = "original") -> str:
        """'geneval' for the official suite (seed 43, 100 per task, all classes), else with its seed and size (and, for
        a class subset of the official seed and size, its classes' digest: never the official name); '-rewritten'
        after it for the rewritten prompts (a suite of its own: the generator reads other text)."""
        import hashlib

        base = "geneval" if selection.official else f"geneval-s{selection.seed}-n{selection.per_task}"
        if base == "geneval-s43-n100":  # the official seed and size over a class subset
            base += "-c" + hashlib.sha256(",".join(selection.classes).encode()).hexdigest()[:8]
        return worded_suite(base, wording)

    def check_wording(self, wording: str, config: Any, *, where: str) -> None:
        """``steps.check_wording``: rewrites exist for the official suite, read by a text encoder."""
        from t2ibench.benchmarks.geneval.steps import check_wording

        check_wording(wording, config, where=where)

    def reword(self, prompts: Any, wording: str, config: Any, workspace: Any, *, where: str) -> Any:
        """``steps.reword_prompts``: ``prompts`` in ``wording`` (the spine's selection from ``config``, read from the
        workspace's rewritten file); ``where`` names the setting that asked for it."""
        from t2ibench.benchmarks.geneval.steps import reword_prompts

        return reword_prompts(prompts, wording, config, workspace, where=where)

    def record_published(self, store: Path, published: Sequence[str | Path] | None) -> None:
        """The published tables (``report_spine.load_tables``) as the store's ``geneval_published`` rows, replacing
        the last report's: what the reproduction view and the report's placement of published rows read."""
        from t2ibench.benchmarks.geneval.columns import PUBLISHED_TABLE
        from t2ibench.benchmarks.geneval.report_spine import load_tables
        from t2ibench.benchmarks.geneval.suite_published import stored_rows
        from t2ibench.store import Store

        Store(store).replace_if_changed(PUBLISHED_TABLE, {}, stored_rows(load_tables(published)))

    def acquire_for_refresh(self, config: Any, root: Path) -> list[Path]:
        """``plan.acquire_rewritten``: the rewritten prompts' pinned file when a model is given them."""
        from t2ibench.benchmarks.geneval.plan import acquire_rewritten

        return acquire_rewritten(config, root)

    def spine_rows(self, judged: Any, scores: Any, generated: Any, *, suite: str, model: str) -> SpineRows:
        """``rows.spine_rows``: verdicts, detections and Table 2 of one model version."""
        from t2ibench.benchmarks.geneval.rows import spine_rows

        return spine_rows(judged, scores, generated, suite=suite, model=model)

    def plan_shared(self, config: Any, workspace: Any) -> dict[str, tuple[str, str, dict[str, Any]]]:
        """The evaluator self-test (``evaluators.selftest``), when configured: ``plan.plan_selftest``."""
        from t2ibench.benchmarks.geneval.plan import plan_selftest

        return {} if config.evaluators.selftest is None else {"selftest": plan_selftest(config, workspace)}

    def scan(self, source: Path, suite: Sequence[Mapping[str, Any]], *, images_per_prompt: int | None) -> FolderScan:
        """``scan_folder`` of a GenEval-layout folder."""
        return scan_folder(source, suite, images_per_prompt=images_per_prompt)

    def judge(
        self,
        scan: FolderScan,
        evaluator: Any,
        *,
        suite: Sequence[Mapping[str, Any]],
        out: Path | None,
        device: str,
        show_progress: bool,
    ) -> list[ResultRow]:
        """``judge_scan`` with the detector and colour classifier a ``GenEvalConfig`` names."""
        return judge_scan(scan, evaluator, out=out, device=device, show_progress=show_progress)

    def summarise(self, records: Sequence[ResultRow]) -> Summary:
        """Table 2 of the results."""
        return summarise(records)

    def render(self, tables: Summary, *, label: str) -> str:
        """Table 2 as Markdown."""
        return render_summary(tables, label=label)

    def tables_json(self, tables: Summary) -> dict[str, Any]:
        """``Summary.to_dict``."""
        return tables.to_dict()

    def caveat(self, suite: Sequence[Mapping[str, Any]], evaluator: Any) -> str | None:
        """The lite evaluator's numbers are not GenEval's; prompts in other words than GenEval's templates (rewritten)
        are another protocol."""
        from t2ibench.benchmarks.geneval.suite import templated

        found = ["lite evaluator, not comparable with published GenEval"] if evaluator.lite else []
        if not templated(suite):
            found.append("prompts not in GenEval's templated wording (rewritten, or another's): compare only on them")
        return "; ".join(found) or None
