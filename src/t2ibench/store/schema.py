"""The store's schema, as data: tables with their natural keys, the deprecated spellings kept beside the new ones,
and the views (t2ibench's own SQL over the tables, which reports and users read). No DuckDB here: the migrations
apply it (``migrations.py``), the writers check rows against it (``writes.py``)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from t2ibench.benchmarks import StoredColumns, spine_sql, stored_columns
from t2ibench.errors import InputError

SCHEMA_VERSION = 16  # 16: models.series/.step and the series view (checkpoint series), paired_comparisons (what each
# refresh changed, and pairs of current models' paired tests), geneval_published (the published rows a report was made
# with, their protocols as stated) and the geneval_measured_protocols / geneval_reproduction views; 15:
# benchmark_images (every image a benchmark judged, with its score and what its models said, for benchmarks whose
# judgement is not a list of VQA questions: T2I-CompBench++); 14: output_folders (every version folder a refresh of
# the store's config planned, relative to its data folder: what `t2ibench gc` may attribute to this store),
# benchmark_protocols.source (an evaluation stored from outside a refresh: who stored it, from which images, how many
# of the suite's prompts); 13: evaluator_selftests (the GenEval evaluator's self-test: agreement, false passes and
# false passes on absent objects on compositor images and on real photographs) and run_selftests (which one a run
# judged each model's images with); 12: benchmark_protocols (the protocol each VQA-judged benchmark evaluation was
# measured under, keyed by its version: a refresh stores GenEval 2 under the model version's own evaluator hash, whose
# evaluators row is the whole refresh's protocol), GenEval 2 columns in the leaderboard view; 11: benchmark results of
# VQA-judged benchmarks (GenEval 2): vqa_answers (every question asked of every image, with the judge's probability
# and top answer), benchmark_scores (every cell of a benchmark's tables with its interval), the <benchmark>_scores and
# <benchmark>_skill_rates views; 10: metrics.sigma_source (where σ came from: fixed, a reference set, or per model),
# rows of older stores marked from their evaluator settings; the diversity view's kernel key and the
# diversity_comparison view (which models' diversity may be ranked against each other); store_meta.owner (the config a
# store belongs to); 2: detections.colour, verdicts.relation, failure-pattern views; 3: geneval_scores; 4: per-model
# smoke in leaderboard; 5: modes.mass and sample scores; 6: geneval_scores prompts and bootstrap CIs; 7: diversity
# view; 8: evaluators table, protocol view; 9: metrics and agreement intervals, alpha = inf stored as a value (was
# NULL), diversity columns in the leaderboard view; truncated, conditional and information VENDI in the diversity
# view; one spelling per concept: `task` (prompts, verdicts, annotations gain it; `tag` stays as a deprecated copy)
# and `color` (detections.color; `colour` stays as a deprecated copy), the views say only task/color
# (colour_attr_outcomes, colour_attr_rates, colour_confusion renamed color_*, their old names dropped), see
# DEPRECATED_COPIES and RENAMED_VIEWS

SPINE_SQL = spine_sql()  # the spine benchmark's tables, views and part of the leaderboard view
TABLES: dict[str, tuple[str, tuple[str, ...]]] = {
    # table: (column definitions, primary key)
    "runs": (
        "run_id VARCHAR, config_name VARCHAR, config_hash VARCHAR, code_version VARCHAR, started_at TIMESTAMP, "
        "finished_at TIMESTAMP, status VARCHAR, smoke BOOLEAN, details JSON",
        ("run_id",),
    ),
    "models": (
        "model VARCHAR, model_hash VARCHAR, label VARCHAR, backend VARCHAR, model_id VARCHAR, revision VARCHAR, "
        "sampling JSON, manifest JSON, smoke BOOLEAN, series VARCHAR, step BIGINT",
        ("model", "model_hash"),
    ),
    "run_models": ("run_id VARCHAR, model VARCHAR, model_hash VARCHAR, evaluator_hash VARCHAR", ("run_id", "model")),
    # the content a stored (model, model_hash, evaluator_hash) version was written from: an identical re-run
    # skips rewriting its rows
    "model_versions": (
        "model VARCHAR, model_hash VARCHAR, evaluator_hash VARCHAR, content_hash VARCHAR, stored_at TIMESTAMP, "
        "run_id VARCHAR",
        ("model", "model_hash", "evaluator_hash"),
    ),
    "prompts": (
        "suite VARCHAR, prompt_index INTEGER, tag VARCHAR, prompt VARCHAR, metadata JSON, task VARCHAR",
        ("suite", "prompt_index"),
    ),
    "images": (
        "model VARCHAR, model_hash VARCHAR, suite VARCHAR, prompt_index INTEGER, sample INTEGER, path VARCHAR, "
        "sha256 VARCHAR, seed UBIGINT",
        ("model", "model_hash", "suite", "prompt_index", "sample"),
    ),
    "detections": (
        "model VARCHAR, model_hash VARCHAR, evaluator_hash VARCHAR, suite VARCHAR, prompt_index INTEGER, "
        "sample INTEGER, class VARCHAR, rank INTEGER, x1 DOUBLE, y1 DOUBLE, x2 DOUBLE, y2 DOUBLE, score DOUBLE, "
        "colour VARCHAR, color VARCHAR",
        ("model", "model_hash", "evaluator_hash", "suite", "prompt_index", "sample", "class", "rank"),
    ),
    "verdicts": (
        "model VARCHAR, model_hash VARCHAR, evaluator_hash VARCHAR, suite VARCHAR, prompt_index INTEGER, "
        "sample INTEGER, tag VARCHAR, correct BOOLEAN, reason VARCHAR, relation VARCHAR, task VARCHAR",
        ("model", "model_hash", "evaluator_hash", "suite", "prompt_index", "sample"),
    ),
    "metrics": (
        "model VARCHAR, model_hash VARCHAR, evaluator_hash VARCHAR, metric VARCHAR, params_key VARCHAR, "
        "kernel VARCHAR, alpha DOUBLE, sigma DOUBLE, rff_dim INTEGER, n INTEGER, seed INTEGER, value DOUBLE, "
        "error_bound DOUBLE, details JSON, ci_low DOUBLE, ci_high DOUBLE, ci_level DOUBLE, ci_method VARCHAR, "
        "sigma_source VARCHAR",
        ("model", "model_hash", "evaluator_hash", "metric", "params_key"),
    ),
    "modes": (
        "model VARCHAR, model_hash VARCHAR, evaluator_hash VARCHAR, source VARCHAR, mode_index INTEGER, "
        "eigenvalue DOUBLE, share DOUBLE, entropy_share DOUBLE, top JSON, bottom JSON, gallery VARCHAR, "
        "mass DOUBLE, top_scores JSON, bottom_scores JSON",
        ("model", "model_hash", "evaluator_hash", "source", "mode_index"),
    ),
    "annotations": (
        "source VARCHAR, prompt_index INTEGER, image_id INTEGER, slot INTEGER, tag VARCHAR, answers JSON, "
        "human_correct BOOLEAN, reason VARCHAR, task VARCHAR",
        ("source", "prompt_index", "image_id", "slot"),
    ),
    "agreement": (
        "scope VARCHAR, source VARCHAR, task VARCHAR, statistic VARCHAR, value DOUBLE, ci_low DOUBLE, ci_high DOUBLE, "
        "ci_level DOUBLE, n INTEGER",
        ("scope", "source", "task", "statistic"),
    ),
    # what judged a version: every evaluator setting (detector, colour, thresholds, embedders, σ, rff_dim, seeds)
    "evaluators": ("evaluator_hash VARCHAR, settings JSON, lite JSON", ("evaluator_hash",)),
    **SPINE_SQL.tables,  # the spine benchmark's own tables (GenEval's Table 2 rows)
    # every question a VQA judge was asked about every image of a benchmark (GenEval 2): the atom's question, its
    # expected answer, the judge's probability of it (under the protocol's answer rule), its top answer and whether
    # that is one of the answer's variants; kind 'atom' (question_index: its position in the prompt's list) or
    # 'vqascore' (the whole-prompt question, question_index -1)
    "vqa_answers": (
        "model VARCHAR, model_hash VARCHAR, evaluator_hash VARCHAR, benchmark VARCHAR, prompt_index INTEGER, "
        "sample VARCHAR, question_index INTEGER, kind VARCHAR, prompt VARCHAR, atom_count INTEGER, skill VARCHAR, "
        "question VARCHAR, answer VARCHAR, probability DOUBLE, top_answer VARCHAR, correct BOOLEAN, image VARCHAR",
        ("model", "model_hash", "evaluator_hash", "benchmark", "prompt_index", "sample", "question_index"),
    ),
    # the protocol of one VQA-judged benchmark evaluation of one version: the judge as loaded (identity, dtype),
    # the answer rule, the suite file's SHA-256, the prompts judged (prompt_set) and t2ibench's version
    # source: NULL for a refresh's own evaluation; for one stored by `t2ibench evaluate --store`, who stored it, the
    # images (their folder or map, their identity), the prompts judged and the suite's prompt count, and whether the
    # suite was the released file — never part of the protocol (it says where the images came from, not how judged)
    "benchmark_protocols": (
        "model VARCHAR, model_hash VARCHAR, evaluator_hash VARCHAR, benchmark VARCHAR, settings JSON, source JSON",
        ("model", "model_hash", "evaluator_hash", "benchmark"),
    ),
    # which benchmark evaluation (its own evaluator_hash) a run made current for each of its models: GenEval 2 is
    # versioned apart from GenEval and diversity, so a judge change re-versions GenEval 2 only
    "run_benchmarks": (
        "run_id VARCHAR, model VARCHAR, model_hash VARCHAR, benchmark VARCHAR, evaluator_hash VARCHAR",
        ("run_id", "model", "benchmark"),
    ),
    # the self-test of a GenEval evaluator (its selftest module), once per content: the evaluator it measured and its
    # whole report (per truth set — compositor, photos — and task: agreement, false pass / fail, false pass on
    # absent objects, with counts)
    "evaluator_selftests": ("selftest_hash VARCHAR, evaluator JSON, report JSON", ("selftest_hash",)),
    # every version folder a refresh planned to write (images, results, embeddings, a benchmark's own images), relative
    # to the config's data folder, with the model and the run that first planned it: `t2ibench gc` removes only
    # folders listed here (another config's, or one made before schema 14, is never attributed to this store)
    "output_folders": ("folder VARCHAR, model VARCHAR, run_id VARCHAR", ("folder",)),
    # which self-test measured the GenEval evaluator a run judged each of its models with
    "run_selftests": ("run_id VARCHAR, model VARCHAR, selftest_hash VARCHAR", ("run_id", "model")),
    # what a refresh changed and how its models compare, by paired tests on the prompts both sides share
    # (t2ibench.comparisons), per benchmark: kind 'since' — each model of the run against its version in the previous
    # completed run (status new / not in this run / not measured in this run / unchanged / changed, then compared
    # old → new / changed, judged differently: not compared); kind 'pair' — every two current models measured under
    # one protocol, the better first (what the ranks' "≈" read); scores in the benchmark's headline units;
    # difference = model's score − other's, its paired interval, the randomization test's p-value, Holm's adjusted
    # one over the run's family of that kind (every benchmark together), and flagged ('improvement' / 'regression' /
    # 'separated') when p_adjusted ≤ 1 − ci_level
    "paired_comparisons": (
        "run_id VARCHAR, kind VARCHAR, benchmark VARCHAR, model VARCHAR, other VARCHAR, status VARCHAR, "
        "model_hash VARCHAR, evaluator_hash VARCHAR, other_model_hash VARCHAR, other_evaluator_hash VARCHAR, "
        "score DOUBLE, other_score DOUBLE, difference DOUBLE, ci_low DOUBLE, ci_high DOUBLE, ci_level DOUBLE, "
        "p_value DOUBLE, p_adjusted DOUBLE, flagged VARCHAR, prompts INTEGER, method VARCHAR, previous_run VARCHAR",
        ("run_id", "kind", "benchmark", "model", "other"),
    ),
    # every image a benchmark judged whose judgement is not a list of questions (T2I-CompBench++): its prompt and
    # category, its score as the benchmark's rule computed it and what its models said (``details`` JSON: the
    # phrases asked and their probabilities, the boxes, the depths, the similarity), keyed by prompt index and sample
    "benchmark_images": (
        "model VARCHAR, model_hash VARCHAR, evaluator_hash VARCHAR, benchmark VARCHAR, prompt_index INTEGER, "
        "sample VARCHAR, image VARCHAR, prompt VARCHAR, category VARCHAR, score DOUBLE, details JSON",
        ("model", "model_hash", "evaluator_hash", "benchmark", "prompt_index", "sample"),
    ),
    # every cell of a benchmark's tables as its metrics module computed it:
    # table_name 'overall' (key: the method), 'skill', 'atom_count'; estimate in percent points with its interval
    "benchmark_scores": (
        "model VARCHAR, model_hash VARCHAR, evaluator_hash VARCHAR, benchmark VARCHAR, table_name VARCHAR, "
        "key VARCHAR, estimate DOUBLE, ci_low DOUBLE, ci_high DOUBLE, ci_level DOUBLE, ci_method VARCHAR, "
        "prompts INTEGER, questions INTEGER",
        ("model", "model_hash", "evaluator_hash", "benchmark", "table_name", "key"),
    ),
}

# One spelling per concept in SQL (schema 9): a GenEval task is `task`, a colour `color` (GenEval's own task ids
# 'colors' and 'color_attr' are data and keep theirs). The older spellings stay in their tables as deprecated copies:
# every write fills both with the same value (Store.upsert: a row may give either) and the migration fills the new
# column of older rows, so queries written before keep working; no view exposes them. table: {column: its copy}
DEPRECATED_COPIES: dict[str, dict[str, str]] = {
    "prompts": {"task": "tag"},
    "verdicts": {"task": "tag"},
    "annotations": {"task": "tag"},
    "detections": {"color": "colour"},
}
# views renamed in schema 9 (old name: new name); the old names are dropped on migration (views hold no data)
RENAMED_VIEWS = {
    "colour_attr_outcomes": "color_attr_outcomes",
    "colour_attr_rates": "color_attr_rates",
    "colour_confusion": "color_confusion",
}

# the diversity view's score columns: (column, which metrics rows); each with its interval columns. VENDI is the
# FKEA row for the Gaussian kernel, the exact cosine row for the cosine kernel
VENDI_METRIC = "m.metric IN ('fkea', 'cosine_vendi')"
DIVERSITY_SCORES = (
    ("vendi_1", f"{VENDI_METRIC} AND m.alpha = 1"),
    ("vendi_2", f"{VENDI_METRIC} AND m.alpha = 2"),
    ("vendi_inf", f"{VENDI_METRIC} AND m.alpha = 'inf'::DOUBLE"),
    ("rke", "m.metric = 'rke'"),
    ("scendi", "m.metric = 'scendi'"),
    ("truncated_vendi_1", "m.metric = 'fkea_truncated' AND m.alpha = 1"),
    ("cond_vendi", "m.metric = 'cond_vendi'"),
    ("info_vendi", "m.metric = 'info_vendi'"),
)
DIVERSITY_COLUMNS = ",\n               ".join(
    f"max(CASE WHEN {where} THEN m.{field} END) AS {name}{suffix}"
    for name, where in DIVERSITY_SCORES
    for field, suffix in (("value", ""), ("ci_low", "_ci_low"), ("ci_high", "_ci_high"))
)
# the convergence verdict of each diversity column (metrics rows 'convergence', one per score and fraction)
CONVERGENCE_SCORES = ("vendi_1", "vendi_2", "rke", "truncated_vendi_1", "scendi", "cond_vendi", "info_vendi")
CONVERGENCE_COLUMNS = ",\n               ".join(
    f"max(CASE WHEN m.metric = 'convergence' AND json_extract_string(m.details, '$.score') = '{name}' "
    f"THEN json_extract_string(m.details, '$.{field}') END) AS {name}_{suffix}"
    for name in CONVERGENCE_SCORES
    for field, suffix in (("verdict", "convergence"), ("reason", "convergence_reason"))
)


def _settings_parts(columns: StoredColumns) -> str:
    """The protocol's settings values as SQL (a missing one '-', never skipped)."""
    return ", ".join(f"coalesce(json_extract_string(settings, '$.{k}'), '-')" for k in columns.protocol)


def benchmark_views(name: str, columns: StoredColumns) -> dict[str, str]:
    """The views of a benchmark stored in ``benchmark_scores`` (``StoredColumns`` says which and what they hold)."""
    details = "".join(
        f"json_extract_string(p.settings, '$.{path}') AS {column},\n               " for column, path in columns.details
    )
    views = {
        # the benchmark's tables with the protocol each was measured under: two rows of one table compare only where
        # their protocol_key is equal (the report flags the others); source: a refresh's or stored by `evaluate`
        f"{name}_scores": f"""
        WITH p AS (
            SELECT *,
                   md5(concat_ws('|', {_settings_parts(columns)})) AS protocol_key
            FROM benchmark_protocols
        ), refreshed AS (
            SELECT DISTINCT model, model_hash, evaluator_hash FROM run_benchmarks WHERE benchmark = '{name}'
        ), shown AS (
            SELECT rb.model, rb.model_hash, rb.evaluator_hash
            FROM current_models c JOIN run_benchmarks rb USING (run_id, model, model_hash)
            WHERE rb.benchmark = '{name}'
        )
        SELECT s.model, s.model_hash, s.evaluator_hash, s.table_name, s.key, s.estimate, s.ci_low, s.ci_high,
               s.ci_level, s.ci_method, s.prompts, s.questions,
               {details}coalesce(p.protocol_key, 'unrecorded:' || s.model || ':' || s.evaluator_hash) AS protocol_key,
               CASE WHEN r.model IS NULL THEN 'stored' ELSE 'refresh' END AS source, p.source AS provenance,
               h.model IS NOT NULL AS current
        FROM benchmark_scores s
        LEFT JOIN p USING (model, model_hash, evaluator_hash, benchmark)
        LEFT JOIN refreshed r USING (model, model_hash, evaluator_hash)
        LEFT JOIN shown h USING (model, model_hash, evaluator_hash)
        WHERE s.benchmark = '{name}'
        ORDER BY s.model, s.table_name, s.key
    """,
    }
    if columns.skill_rates is not None:
        # per skill recomputed from the stored answers (pooled over every question of every image: equal to the
        # stored skill table when each prompt has the same number of images)
        views[f"{name}_skill_rates"] = f"""
        SELECT model, model_hash, evaluator_hash, skill, 100 * avg(probability) AS {columns.skill_rates},
               100 * avg(CASE WHEN correct THEN 1.0 ELSE 0.0 END) AS tifa, count(*) AS answers,
               count(DISTINCT prompt_index) AS prompts
        FROM vqa_answers WHERE benchmark = '{name}' AND kind = 'atom'
        GROUP BY ALL ORDER BY model, skill
    """
    pivot = ",\n               ".join(
        f"max(CASE WHEN s.key = '{key}' THEN s.{field} END) AS {columns.column(name, suffix)}{end}"
        for key, suffix in columns.keys
        for field, end in (("estimate", ""), ("ci_low", "_ci_low"), ("ci_high", "_ci_high"))
    )
    summary = "".join(
        f", any_value(s.{source}) AS {columns.column(name, suffix)}" for suffix, source in columns.summary
    )
    # the headline table of each current model version (a refresh stores it under the version's own hashes): its
    # cells with intervals, the prompts judged and the summary columns
    views[f"{name}_current"] = f"""
        SELECT c.model, c.model_hash, c.evaluator_hash, rb.evaluator_hash AS {name}_hash,
               {pivot},
               max(s.prompts) AS {name}_prompts{summary}
        FROM current_models c
        JOIN run_benchmarks rb USING (run_id, model, model_hash)
        JOIN {name}_scores s ON s.model = rb.model AND s.model_hash = rb.model_hash
         AND s.evaluator_hash = rb.evaluator_hash
        WHERE rb.benchmark = '{name}' AND s.table_name = '{columns.table}'
        GROUP BY ALL
    """
    return views


def leaderboard_columns(name: str, columns: StoredColumns) -> list[str]:
    """The leaderboard view's columns of a benchmark stored in ``benchmark_scores``, in its current view's order."""
    pivoted = [columns.column(name, suffix) + end for _, suffix in columns.keys for end in ("", "_ci_low", "_ci_high")]
    return [*pivoted, f"{name}_prompts", *(columns.column(name, suffix) for suffix, _ in columns.summary)]


STORED_BENCHMARKS = stored_columns()
BENCHMARK_VIEWS = {view: sql for name, c in STORED_BENCHMARKS.items() for view, sql in benchmark_views(name, c).items()}
BENCHMARK_COLUMNS = "".join(
    f"any_value({name}_current.{column}) AS {column},\n               "
    for name, c in STORED_BENCHMARKS.items()
    for column in leaderboard_columns(name, c)
)
BENCHMARK_JOINS = "".join(
    f"\n        LEFT JOIN {name}_current USING (model, model_hash, evaluator_hash)  -- the version's own {name}"
    for name in STORED_BENCHMARKS
)

VIEWS = {
    # the model versions of each model's latest completed run
    "current_models": """
        SELECT rm.model, rm.model_hash, rm.evaluator_hash, r.run_id, r.finished_at, r.smoke
        FROM run_models rm JOIN runs r USING (run_id)
        WHERE r.status = 'completed'
        QUALIFY row_number() OVER (PARTITION BY rm.model ORDER BY r.finished_at DESC) = 1
    """,
    **SPINE_SQL.views_first,
    # diversity per model (current version): FKEA VENDI at α = 1, 2, ∞ (α = ∞ is stored as the value inf), RKE,
    # Scendi, their bootstrap intervals (over prompts; NULL where not computed: see ci_method), the kernel they were
    # measured with (σ, rff_dim, n) and FKEA's Theorem-2 radius
    "diversity": f"""
        SELECT c.model, c.model_hash, c.evaluator_hash,
               {DIVERSITY_COLUMNS},
               {CONVERGENCE_COLUMNS},
               max(CASE WHEN {VENDI_METRIC} AND m.alpha = 1 THEN m.error_bound END) AS fkea_radius,
               max(CASE WHEN {VENDI_METRIC} AND m.alpha = 1 THEN m.sigma END) AS sigma,
               max(CASE WHEN {VENDI_METRIC} AND m.alpha = 1 THEN m.rff_dim END) AS rff_dim,
               max(CASE WHEN {VENDI_METRIC} AND m.alpha = 1 THEN m.n END) AS n,
               max(CASE WHEN {VENDI_METRIC} AND m.alpha = 1 THEN m.ci_level END) AS ci_level,
               max(CASE WHEN {VENDI_METRIC} AND m.alpha = 1 THEN m.ci_method END) AS ci_method,
               max(CASE WHEN m.metric = 'fkea_truncated' AND m.alpha = 1
                        THEN CAST(json_extract(m.details, '$.t') AS INTEGER) END) AS truncation,
               max(CASE WHEN m.metric = 'scendi' THEN m.sigma END) AS scendi_image_sigma,
               max(CASE WHEN m.metric = 'scendi' THEN m.rff_dim END) AS scendi_rff_dim,
               max(CASE WHEN m.metric = 'scendi' THEN json_extract_string(m.details, '$.regularisation') END)
                 AS scendi_regularisation,
               max(CASE WHEN {VENDI_METRIC} AND m.alpha = 1 THEN m.sigma_source END) AS sigma_source,
               max(CASE WHEN m.metric = 'scendi' THEN m.sigma_source END) AS scendi_sigma_source,
               max(CASE WHEN m.metric = 'scendi' THEN json_extract(m.details, '$.text_sigma') END) AS scendi_text_sigma,
               max(CASE WHEN m.metric = 'scendi' THEN json_extract_string(m.details, '$.text_sigma_source') END)
                 AS scendi_text_sigma_source,
               max(CASE WHEN {VENDI_METRIC} AND m.alpha = 1 THEN m.kernel END) AS kernel,
               max(CASE WHEN m.metric = 'scendi' THEN m.kernel END) AS scendi_kernel,
               -- every parameter of the kernels the scores were measured under (kernel, σ and its source, rff_dim,
               -- the embedders with their normalisation): two models' diversity is comparable only when equal
               -- (a cosine kernel has no σ; a Gaussian σ without a recorded source is unknown, never shared)
               concat_ws(' | ',
                 max(CASE WHEN {VENDI_METRIC} AND m.alpha = 1 THEN
                     CASE WHEN m.kernel = 'cosine' THEN 'cosine'
                          ELSE concat_ws(' ', m.kernel, printf('%.6g', m.sigma),
                               coalesce(m.sigma_source, 'unknown:' || c.model), m.rff_dim::VARCHAR) END END),
                 max(CASE WHEN m.metric = 'scendi' THEN
                     CASE WHEN m.kernel = 'cosine' THEN 'scendi cosine'
                          ELSE concat_ws(' ', m.kernel, printf('%.6g', m.sigma),
                               printf('%.6g', CAST(json_extract(m.details, '$.text_sigma') AS DOUBLE)),
                               coalesce(m.sigma_source, 'unknown:' || c.model),
                               coalesce(json_extract_string(m.details, '$.text_sigma_source'), 'unknown:' || c.model),
                               m.rff_dim::VARCHAR) END END),
                 any_value(coalesce(e.settings->'embed'->'image_embedder', e.settings->'image_embedder')::VARCHAR),
                 any_value(coalesce(e.settings->'embed'->'clip', e.settings->'clip')::VARCHAR)
               ) AS diversity_kernel
        FROM current_models c JOIN metrics m USING (model, model_hash, evaluator_hash)
        LEFT JOIN evaluators e USING (evaluator_hash)
        GROUP BY ALL ORDER BY c.model
    """,
    # which current models' diversity may be ranked against each other: those measured under one kernel
    # (diversity.diversity_kernel equal) on images of one prompt suite (images.suite: the same prompts in the same
    # wording — a model given GenEval's rewritten prompts is measured on other images), with a shared σ (a fixed
    # value or a reference set's: never a model's own median, and never an unknown one); diversity_rank is VENDI-1's
    # rank within such a group, NULL with a note otherwise
    "diversity_comparison": """
        WITH s AS (
            -- each σ's source (NULL where the kernel has none: cosine), 'unknown' where a Gaussian σ has none recorded
            SELECT *,
                   CASE WHEN kernel = 'cosine' THEN NULL ELSE coalesce(sigma_source, 'unknown') END AS image_src,
                   CASE WHEN scendi_kernel IS DISTINCT FROM 'gaussian' THEN NULL
                        ELSE coalesce(scendi_sigma_source, 'unknown') END AS clip_src,
                   CASE WHEN scendi_kernel IS DISTINCT FROM 'gaussian' THEN NULL
                        ELSE coalesce(scendi_text_sigma_source, 'unknown') END AS text_src
            FROM diversity WHERE vendi_1 IS NOT NULL
        ), f AS (
            SELECT model, model_hash, evaluator_hash, vendi_1, diversity_kernel,
                   (SELECT min(i.suite) FROM images i WHERE i.model = s.model AND i.model_hash = s.model_hash)
                     AS prompt_suite,
                   coalesce(image_src LIKE 'median:%' OR clip_src LIKE 'median:%' OR text_src LIKE 'median:%', false)
                     AS per_model,
                   coalesce(image_src = 'unknown' OR clip_src = 'unknown' OR text_src = 'unknown', false) AS unrecorded
            FROM s
        ), d AS (SELECT *, NOT (per_model OR unrecorded) AS shared_sigma FROM f),
        g AS (SELECT diversity_kernel, prompt_suite, count(*) AS kernel_models FROM d GROUP BY ALL),
        k AS (SELECT count(DISTINCT (diversity_kernel, prompt_suite)) AS kernels FROM d)
        SELECT d.model, d.model_hash, d.evaluator_hash, d.diversity_kernel, g.kernel_models, k.kernels,
               d.shared_sigma AND (k.kernels = 1 OR g.kernel_models > 1) AS comparable,
               CASE WHEN d.shared_sigma AND (k.kernels = 1 OR g.kernel_models > 1)
                    THEN rank() OVER (PARTITION BY d.diversity_kernel, d.prompt_suite, d.shared_sigma
                                      ORDER BY d.vendi_1 DESC) END
                 AS diversity_rank,
               CASE
                 WHEN d.per_model
                   THEN 'σ is this model''s own median (sigma: median): its diversity is measured under its own '
                        || 'kernel and not ranked against other models'
                 WHEN d.unrecorded
                   THEN 'where σ came from was not recorded (stored before schema 10): not ranked'
                 WHEN k.kernels > 1 AND g.kernel_models = 1
                   THEN 'measured under a kernel or on a prompt suite no other current model shares (σ, rff_dim, '
                        || 'embedder or suite ' || coalesce(d.prompt_suite, 'unknown') || ' differ): not ranked'
                 WHEN k.kernels > 1
                   THEN 'current models were measured under ' || k.kernels || ' kernels or prompt suites: ranked '
                        || 'only within its group'
               END AS diversity_note
        FROM d JOIN g ON g.diversity_kernel IS NOT DISTINCT FROM d.diversity_kernel
                      AND g.prompt_suite IS NOT DISTINCT FROM d.prompt_suite
        CROSS JOIN k
        ORDER BY d.model
    """,
    # the convergence report of each diversity score of each current model: the score on nested prompt subsets
    # (fraction of the prompts, images, prompts), its bootstrap band where it has one, the verdict and its reason
    "diversity_convergence": """
        SELECT c.model, c.model_hash, c.evaluator_hash, json_extract_string(m.details, '$.score') AS score,
               json_extract_string(m.details, '$.label') AS label,
               CAST(json_extract(m.details, '$.fraction') AS DOUBLE) AS fraction, m.n AS images,
               CAST(json_extract(m.details, '$.n_prompts') AS INTEGER) AS prompts, m.value, m.ci_low, m.ci_high,
               m.ci_level, json_extract_string(m.details, '$.verdict') AS verdict,
               json_extract_string(m.details, '$.reason') AS reason
        FROM current_models c JOIN metrics m USING (model, model_hash, evaluator_hash)
        WHERE m.metric = 'convergence'
        ORDER BY c.model, score, fraction
    """,
    **BENCHMARK_VIEWS,
    # the current leaderboard: one row per model, its latest completed version (the spine's columns from its
    # SpineSQL; each stored benchmark's columns from its StoredColumns)
    "leaderboard": f"""
        SELECT c.model, m.label, m.smoke, {SPINE_SQL.leaderboard_columns}
               any_value(d.vendi_1) AS vendi_1, any_value(d.vendi_1_ci_low) AS vendi_1_ci_low,
               any_value(d.vendi_1_ci_high) AS vendi_1_ci_high, any_value(d.rke) AS rke,
               any_value(d.scendi) AS scendi, any_value(d.vendi_1_convergence) AS vendi_1_convergence,
               any_value(d.rke_convergence) AS rke_convergence,
               any_value(d.truncated_vendi_1_convergence) AS truncated_vendi_1_convergence,
               any_value(d.scendi_convergence) AS scendi_convergence,
               any_value(d.sigma) AS sigma, any_value(d.rff_dim) AS rff_dim,
               any_value(d.fkea_radius) AS fkea_radius, any_value(d.sigma_source) AS sigma_source,
               any_value(x.diversity_rank) AS diversity_rank, any_value(x.diversity_note) AS diversity_note,
               any_value(x.diversity_kernel) AS diversity_kernel,
               {BENCHMARK_COLUMNS}c.model_hash, c.evaluator_hash, c.run_id, c.finished_at
        FROM current_models c
        JOIN models m USING (model, model_hash)
        {SPINE_SQL.leaderboard_joins}
        LEFT JOIN diversity d USING (model, model_hash, evaluator_hash)
        LEFT JOIN diversity_comparison x USING (model, model_hash, evaluator_hash){BENCHMARK_JOINS}
        GROUP BY ALL ORDER BY {SPINE_SQL.leaderboard_order}, c.model
    """,
    # each checkpoint series' points (models.series and .step: a config's checkpoints:, or models marked by hand) with
    # their leaderboard rows — every score and its interval — in step order: what the report's series curves draw
    "series": """
        SELECT m.series, m.step, l.*
        FROM leaderboard l JOIN models m USING (model, model_hash)
        WHERE m.series IS NOT NULL
        ORDER BY m.series, m.step, l.model
    """,
    # the protocol of each current model's scores: generation settings, evaluator settings, the run's environment
    "protocol": """
        SELECT c.model, m.label, m.backend, m.model_id, s.suite, m.sampling AS generation, e.settings AS evaluator,
               e.lite, coalesce(w.details, r.details)->'environment' AS environment,
               coalesce(v.run_id, c.run_id) AS computed_in_run, c.model_hash, c.evaluator_hash, c.run_id,
               c.finished_at
        FROM current_models c
        JOIN models m USING (model, model_hash)
        LEFT JOIN evaluators e USING (evaluator_hash)
        LEFT JOIN runs r USING (run_id)
        LEFT JOIN model_versions v USING (model, model_hash, evaluator_hash)
        LEFT JOIN runs w ON w.run_id = v.run_id
        LEFT JOIN (SELECT model, model_hash, string_agg(DISTINCT suite, ', ' ORDER BY suite) AS suite
                   FROM images GROUP BY ALL) s USING (model, model_hash)
        ORDER BY c.model
    """,
    **SPINE_SQL.views_after,
}


def column_types(table: str) -> dict[str, str]:
    """The declared DuckDB type of each of ``table``'s columns (VARCHAR, DOUBLE, ...), by column name, in order."""
    return {name: kind for name, kind in (c.strip().split(None, 1) for c in TABLES[table][0].split(","))}


def _columns(table: str) -> list[str]:
    return list(column_types(table))


def with_deprecated_copies(table: str, rows: Sequence[Mapping[str, Any]]) -> Sequence[Mapping[str, Any]]:
    """``rows`` of ``table`` with each deprecated copy (DEPRECATED_COPIES) and its column holding the same value: a
    writer may give either spelling; InputError where a row gives both with different values."""
    pairs = DEPRECATED_COPIES.get(table)
    if not pairs:
        return rows
    filled: list[Mapping[str, Any]] = []
    for row in rows:
        out = dict(row)
        for column, copy in pairs.items():
            if column in row and copy in row:
                if row[column] != row[copy]:
                    raise InputError(
                        f"{table}: {column} {row[column]!r} and its deprecated copy {copy} {row[copy]!r} disagree; "
                        f"give {column} only"
                    )
            elif column in row:
                out[copy] = row[column]
            elif copy in row:
                out[column] = row[copy]
        filled.append(out)
    return filled


# DuckDB's write-ahead log beside a store file and the siblings it makes while replaying or checkpointing it
# (DuckDB replays or deletes them, so they are part of the store), and the run lock's file
WAL_SUFFIXES = (".wal", ".wal.recovery", ".wal.checkpoint")
LOCK_SUFFIX = ".lock"

VIEWS_SHA256 = hashlib.sha256(json.dumps(VIEWS, sort_keys=True).encode()).hexdigest()
"""The digest of every view's definition: a store migrated with other definitions gets them re-created on its next
write (``migrations._schema_current``)."""
