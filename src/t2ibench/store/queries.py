"""The store's named reads: one function per thing the report shows, each a read-only query of the views.

``report/`` reads the store only through these (it holds no SQL: ``tests/unit/test_architecture.py``). Every
function returns rows as dictionaries, column name to value, in the query's order; each return type names what
a row is and the comment beside it lists its columns (``SELECT *`` of a view: the view's columns in ``schema.py``).
"Current" is each model's latest completed version (the ``current_models`` view).
"""

from __future__ import annotations

from typing import Any, TypeAlias

from t2ibench.benchmarks import SPINE
from t2ibench.errors import unknown_choice
from t2ibench.store.connection import Store
from t2ibench.store.schema import SPINE_SQL, STORED_BENCHMARKS

Row: TypeAlias = dict[str, Any]  # one row: column name → value as DuckDB returns it (JSON columns as text)

# -- the leaderboard report ----------------------------------------------------------------------------------------
LeaderboardRow: TypeAlias = Row  # the leaderboard view: model, label, smoke, overall (+ interval), the six tasks, ...
MetricRow: TypeAlias = Row  # model, metric, alpha, value, error_bound, n, sigma, rff_dim, ci_low, ci_high, ...
HeadlineMetricRow: TypeAlias = Row  # model, metric, alpha, value, error_bound, n
ModeRow: TypeAlias = Row  # model, source, mode_index, eigenvalue, share, entropy_share, mass, top, bottom, scores
ImageRow: TypeAlias = Row  # model, prompt_index, sample, path, prompt, task
SpineRow: TypeAlias = Row  # a row of a spine benchmark's named read (its columns: beside its SQL in SpineSQL.queries)
DetectionRow: TypeAlias = Row  # model, prompt_index, sample, class, rank, x1, y1, x2, y2, score, color
RunRow: TypeAlias = Row  # a runs row: run_id, config_name, config_hash, code_version, started_at, ..., details
AgreementRow: TypeAlias = Row  # an agreement row: scope, source, task, statistic, value, ci_low, ci_high, ...
DiversityRow: TypeAlias = Row  # the diversity view: VENDI/RKE/Scendi columns, their intervals and convergence
ConvergenceRow: TypeAlias = Row  # the diversity_convergence view: score, fraction, images, prompts, value, verdict
ProtocolRow: TypeAlias = Row  # the protocol view: generation, evaluator, lite, environment, computed_in_run, ...

# -- failure patterns (docs/schema.md#failure-patterns) ------------------------------------------------------------
FailureSummaryRow: TypeAlias = Row  # the failure_summary view: one headline row per current model
PositionBiasRow: TypeAlias = Row  # the position_bias view, with the current_models columns
PositionConfusionRow: TypeAlias = Row  # model, requested, found, images, share
OutcomeCountRow: TypeAlias = Row  # model, outcome, images
ColorAttrRatesRow: TypeAlias = Row  # the color_attr_rates view, with the current_models columns
CountingErrorRow: TypeAlias = Row  # model, requested, delta, images, share
TwoObjectRatesRow: TypeAlias = Row  # the two_object_rates view, with the current_models columns
ClassFailureRow: TypeAlias = Row  # model, class, requested, missing_rate, failure_rate

VersionRow: TypeAlias = Row  # run_id, model, model_hash, evaluator_hash
PairedRow: TypeAlias = Row  # a paired_comparisons row (its columns: schema.py)
SeriesRow: TypeAlias = Row  # the series view: series, step, then the point's leaderboard row

CURRENT = "JOIN current_models USING (model, model_hash, evaluator_hash)"  # a failure view's rows of current models


# -- the leaderboard report ----------------------------------------------------------------------------------------
def leaderboard(store: Store) -> list[LeaderboardRow]:
    """The leaderboard view: one row per current model, best overall score first."""
    return store.rows("SELECT * FROM leaderboard")


def leaderboard_by_model(store: Store) -> list[LeaderboardRow]:
    """The leaderboard view ordered by model name (the paper tables)."""
    return store.rows("SELECT * FROM leaderboard ORDER BY model")


def current_metrics(store: Store) -> list[MetricRow]:
    """Every stored metrics row of the current models, with its kernel, bound and interval."""
    return store.rows(
        """SELECT c.model, m.metric, m.alpha, m.value, m.error_bound, m.n, m.sigma, m.rff_dim, m.ci_low, m.ci_high,
                  m.ci_level, m.ci_method
           FROM current_models c JOIN metrics m USING (model, model_hash, evaluator_hash)
           ORDER BY c.model, m.metric, m.params_key"""
    )


def headline_metrics(store: Store) -> list[HeadlineMetricRow]:
    """The current models' FKEA, RKE, Scendi, Scendi model-share and CLIP image VENDI rows (the paper tables)."""
    return store.rows(
        """SELECT c.model, m.metric, m.alpha, m.value, m.error_bound, m.n
           FROM current_models c JOIN metrics m USING (model, model_hash, evaluator_hash)
           WHERE m.metric IN ('fkea', 'rke', 'scendi', 'scendi_model_share', 'clip_image_vendi')
           ORDER BY c.model, m.metric, m.alpha"""
    )


def current_modes(store: Store) -> list[ModeRow]:
    """The stored modes of the current models, by model, source and mode index."""
    return store.rows(
        """SELECT c.model, o.source, o.mode_index, o.eigenvalue, o.share, o.entropy_share, o.mass, o.top, o.bottom,
                  o.top_scores, o.bottom_scores
           FROM current_models c JOIN modes o USING (model, model_hash, evaluator_hash)
           ORDER BY c.model, o.source, o.mode_index"""
    )


def current_images(store: Store) -> list[ImageRow]:
    """The stored images of the current models with their prompts, by model, prompt and sample."""
    return store.rows(
        """SELECT c.model, i.prompt_index, i.sample, i.path, p.prompt, p.task
           FROM current_models c JOIN images i USING (model, model_hash)
           LEFT JOIN prompts p USING (suite, prompt_index)
           ORDER BY c.model, i.prompt_index, i.sample"""
    )


def spine_rows(store: Store, name: str) -> list[SpineRow]:
    """The rows of the spine benchmark's named read ``name`` (its SQL: ``SpineSQL.queries``), in that query's order."""
    if name not in SPINE_SQL.queries:
        raise unknown_choice("spine query", name, list(SPINE_SQL.queries))
    return store.rows(SPINE_SQL.queries[name])


def current_detections(store: Store) -> list[DetectionRow]:
    """The kept detections of the current models, by model, prompt, sample, class and rank."""
    return store.rows(
        """SELECT d.model, d.prompt_index, d.sample, d.class, d.rank, d.x1, d.y1, d.x2, d.y2, d.score, d.color
           FROM detections d JOIN current_models USING (model, model_hash, evaluator_hash)
           ORDER BY d.model, d.prompt_index, d.sample, d.class, d.rank"""
    )


def completed_runs(store: Store) -> list[RunRow]:
    """Every completed run, the latest first (run_id, finished_at, config_name)."""
    return store.rows(
        "SELECT run_id, finished_at, config_name FROM runs WHERE status = 'completed' ORDER BY finished_at DESC, run_id"
    )


def series(store: Store) -> list[SeriesRow]:
    """Every checkpoint series' points with their leaderboard rows, by series and step (the ``series`` view)."""
    return store.rows("SELECT * FROM series")


def latest_comparisons(store: Store) -> list[PairedRow]:
    """The paired comparisons of the latest completed run (none when it recorded none), by kind and model."""
    return store.rows(
        "SELECT * FROM paired_comparisons WHERE run_id = (SELECT run_id FROM runs WHERE status = 'completed' "
        "ORDER BY finished_at DESC, run_id LIMIT 1) ORDER BY kind, benchmark, model, other"
    )


def latest_run(store: Store) -> RunRow | None:
    """The latest completed run that stored a version (else the latest completed run; None before any completed)."""
    runs = store.rows(
        "SELECT * FROM runs WHERE status = 'completed' "
        "ORDER BY run_id IN (SELECT run_id FROM model_versions) DESC, finished_at DESC LIMIT 1"
    )
    return runs[0] if runs else None


def agreement(store: Store) -> list[AgreementRow]:
    """Every stored human-agreement statistic, by scope, source, task and statistic."""
    return store.rows("SELECT * FROM agreement ORDER BY scope, source, task, statistic")


def diversity(store: Store) -> list[DiversityRow]:
    """The diversity view: one row per current model."""
    return store.rows("SELECT * FROM diversity")


def diversity_convergence(store: Store) -> list[ConvergenceRow]:
    """The diversity_convergence view: each current model's scores on nested prompt subsets, with verdicts."""
    return store.rows("SELECT * FROM diversity_convergence")


def protocol(store: Store) -> list[ProtocolRow]:
    """The protocol view: what each current model's scores were measured with."""
    return store.rows("SELECT * FROM protocol")


# -- failure patterns ----------------------------------------------------------------------------------------------
def failure_summary(store: Store) -> list[FailureSummaryRow]:
    """The failure_summary view: each current model's failure headline, by model."""
    return store.rows("SELECT * FROM failure_summary")


def position_bias(store: Store) -> list[PositionBiasRow]:
    """The position_bias view for the current models."""
    return store.rows(f"SELECT * FROM position_bias {CURRENT} ORDER BY model")


def position_confusion(store: Store) -> list[PositionConfusionRow]:
    """Requested against found relation counts and shares of the current models (position prompts)."""
    return store.rows(f"SELECT model, requested, found, images, share FROM position_confusion {CURRENT} ORDER BY ALL")


def color_attr_outcomes(store: Store) -> list[OutcomeCountRow]:
    """Images per colour-attribution outcome (correct, swap, leak, absent, miss, object missing) of current models."""
    return store.rows(
        f"SELECT model, outcome, count(*) AS images FROM color_attr_outcomes {CURRENT} "
        "WHERE outcome IS NOT NULL GROUP BY ALL ORDER BY ALL"
    )


def color_attr_rates(store: Store) -> list[ColorAttrRatesRow]:
    """The color_attr_rates view for the current models."""
    return store.rows(f"SELECT * FROM color_attr_rates {CURRENT} ORDER BY model")


def counting_errors(store: Store) -> list[CountingErrorRow]:
    """Found-minus-requested counts and shares of the current models (counting prompts)."""
    return store.rows(f"SELECT model, requested, delta, images, share FROM counting_errors {CURRENT} ORDER BY ALL")


def two_object_rates(store: Store) -> list[TwoObjectRatesRow]:
    """The two_object_rates view for the current models."""
    return store.rows(f"SELECT * FROM two_object_rates {CURRENT} ORDER BY model")


def two_object_outcomes(store: Store) -> list[OutcomeCountRow]:
    """Images per two-object outcome (both found, first/second/both missing) of the current models."""
    return store.rows(
        f"SELECT model, outcome, count(*) AS images FROM two_object_outcomes {CURRENT} GROUP BY ALL ORDER BY ALL"
    )


def class_failures(store: Store) -> list[ClassFailureRow]:
    """Per requested class of the current models: how often it was missing or failed, most often missing first."""
    return store.rows(
        f"SELECT model, class, requested, missing_rate, failure_rate FROM class_failures {CURRENT} "
        "ORDER BY model, missing_rate DESC, requested DESC, class"
    )


# -- benchmarks stored in benchmark_scores, vqa_answers, benchmark_images (GenEval 2, ...) -----------------------------
BenchmarkScoreRow: TypeAlias = Row  # a <benchmark>_scores view row: model, hashes, table_name, key, estimate, ci, ...
BenchmarkAnswerRow: TypeAlias = Row  # model, hashes, prompt_index, sample, kind, question_index, skill, question, ...


def _stored_benchmark(name: str) -> str:
    """``name`` when it is a benchmark stored in benchmark_scores (its views exist), else InputError."""
    if name not in STORED_BENCHMARKS:
        raise unknown_choice("stored benchmark", name, list(STORED_BENCHMARKS))
    return name


def benchmark_scores(store: Store, name: str) -> list[BenchmarkScoreRow]:
    """Benchmark ``name``'s cells the report shows (every `evaluate --store` one, each model's current refresh one)."""
    return store.rows(f"SELECT * FROM {_stored_benchmark(name)}_scores WHERE source = 'stored' OR current")


def benchmark_answers(store: Store, name: str) -> list[BenchmarkAnswerRow]:
    """Every stored answer of benchmark ``name`` by version, prompt, sample and question (VQAScore's last)."""
    return store.rows(
        "SELECT model, model_hash, evaluator_hash, prompt_index, sample, kind, question_index, skill, question, "
        "answer, probability, top_answer, correct, prompt, atom_count, image FROM vqa_answers "
        "WHERE benchmark = ? "
        "ORDER BY model, model_hash, evaluator_hash, prompt_index, sample, kind = 'vqascore', question_index",
        [_stored_benchmark(name)],
    )


BenchmarkImageRow: TypeAlias = Row  # model, hashes, prompt_index, sample, image, prompt, category, score, details


def benchmark_images(store: Store, name: str) -> list[BenchmarkImageRow]:
    """Every stored judged image of benchmark ``name`` (``benchmark_images``) by version, prompt and sample."""
    return store.rows(
        "SELECT model, model_hash, evaluator_hash, prompt_index, sample, image, prompt, category, score, details "
        "FROM benchmark_images WHERE benchmark = ? ORDER BY model, model_hash, evaluator_hash, prompt_index, sample",
        [_stored_benchmark(name)],
    )


PairedResultRow: TypeAlias = Row  # model, model_hash, evaluator_hash, suite, prompt_index, stratum, successes, trials
JudgeRow: TypeAlias = Row  # model, model_hash, evaluator_hash, judge (its judge's settings as JSON, or NULL)
ComparedRow: TypeAlias = Row  # model, model_hash, evaluator_hash, score, protocol, smoke


def _compared(name: str) -> str:
    """``name`` when it is the spine or a stored benchmark, else InputError (no read falls back to another's rows)."""
    if name != SPINE and name not in STORED_BENCHMARKS:
        raise unknown_choice("benchmark", name, [SPINE, *STORED_BENCHMARKS])
    return name


def paired_results(store: Store, name: str) -> list[PairedResultRow]:
    """Every stored version's per-prompt results of benchmark ``name`` (none without a paired read), by version."""
    if _compared(name) == SPINE:
        return spine_rows(store, "paired_results")
    sql = STORED_BENCHMARKS[name].paired
    return [] if sql is None else store.rows(sql.replace("{benchmark}", name))


def judges(store: Store, name: str) -> list[JudgeRow]:
    """Each stored version of benchmark ``name`` with its judge's settings as JSON (``judge``; NULL: unrecorded)."""
    if _compared(name) == SPINE:
        return spine_rows(store, "judges")
    return store.rows(
        "SELECT model, model_hash, evaluator_hash, settings AS judge FROM benchmark_protocols WHERE benchmark = ? "
        "ORDER BY model, model_hash, evaluator_hash",
        [name],
    )


def run_benchmark_versions(store: Store, run_id: str, name: str) -> list[VersionRow]:
    """The versions of benchmark ``name`` (the spine: run_models, else run_benchmarks) a run recorded, by model."""
    if _compared(name) == SPINE:
        return store.rows(
            "SELECT run_id, model, model_hash, evaluator_hash FROM run_models WHERE run_id = ? ORDER BY model",
            [run_id],
        )
    return store.rows(
        "SELECT run_id, model, model_hash, evaluator_hash FROM run_benchmarks WHERE run_id = ? AND benchmark = ? "
        "ORDER BY model",
        [run_id, name],
    )


def compared_current(store: Store, name: str) -> list[ComparedRow]:
    """Each current model's version of stored benchmark ``name``: headline score, protocol key, smoke; by model."""
    columns = STORED_BENCHMARKS[_stored_benchmark(name)]
    return store.rows(
        f"""SELECT b.model, b.model_hash, b.{name}_hash AS evaluator_hash,
                   b.{columns.column(name, columns.headline)} AS score, s.protocol_key AS protocol,
                   coalesce(c.smoke, false) OR coalesce(m.smoke, false) AS smoke
            FROM {name}_current b JOIN current_models c USING (model, model_hash, evaluator_hash)
            LEFT JOIN models m USING (model, model_hash)
            JOIN (SELECT DISTINCT model, model_hash, evaluator_hash, protocol_key FROM {name}_scores) s
              ON s.model = b.model AND s.model_hash = b.model_hash AND s.evaluator_hash = b.{name}_hash
            ORDER BY b.model"""
    )


# -- the GenEval evaluator's self-test (evaluator_selftests, run_selftests) -----------------------------------------
SelftestRow: TypeAlias = Row  # model, selftest_hash, evaluator, report (JSON; NULL when its run measured none)


def evaluator_selftests(store: Store) -> list[SelftestRow]:
    """Each current model with the self-test of the GenEval evaluator its run judged it with (NULLs: none)."""
    return store.rows(
        "SELECT c.model, s.selftest_hash, s.evaluator, s.report FROM current_models c "
        "LEFT JOIN run_selftests r USING (run_id, model) LEFT JOIN evaluator_selftests s USING (selftest_hash) "
        "ORDER BY c.model"
    )
