"""The results store: the only module that talks to DuckDB.

Every result lives in one DuckDB file (schema in ``docs/schema.md``). Rows have natural keys, and every write is
an idempotent upsert (or a scoped replace) inside one transaction: re-running never duplicates rows, and an
interrupted write leaves nothing half-written.

Concurrency. DuckDB lets one process hold a file read-write, and read-only openers coexist only while no writer
holds it. So writers open the file for one short transaction at a time and retry while another process holds it
(up to ``timeout`` seconds, then a clear error), and readers do the same with read-only connections: a report or
``t2ibench sql`` works while a refresh is running. A whole refresh additionally takes ``run_lock`` (an exclusive
``flock`` on ``<store>.lock``), so two refreshes started together never interleave: the second waits or exits
with a message naming the holder.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import os
import re
import signal
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

import duckdb

from t2ibench.errors import InputError
from t2ibench.metrics.geneval import CI_LEVEL, TASKS, bootstrap_table2, overall_score, table2, tasks_present

SCHEMA_VERSION = 9  # 2: detections.colour, verdicts.relation, failure-pattern views; 3: geneval_scores; 4: per-model
# smoke in leaderboard; 5: modes.mass and sample scores; 6: geneval_scores prompts and bootstrap CIs; 7: diversity view;
# 8: evaluators table, protocol view; 9: metrics and agreement intervals, alpha = inf stored as a value (was NULL),
# diversity columns in the leaderboard view; truncated, conditional and information VENDI in the diversity view;
# one spelling per concept: `task` (prompts, verdicts, annotations gain it;
# `tag` stays as a deprecated copy) and `color` (detections.color; `colour` stays as a deprecated copy), the views
# say only task/color (colour_attr_outcomes, colour_attr_rates, colour_confusion renamed color_*, their old names
# dropped), see DEPRECATED_COPIES and RENAMED_VIEWS

TABLES: dict[str, tuple[str, tuple[str, ...]]] = {
    # table: (column definitions, primary key)
    "runs": (
        "run_id VARCHAR, config_name VARCHAR, config_hash VARCHAR, code_version VARCHAR, started_at TIMESTAMP, "
        "finished_at TIMESTAMP, status VARCHAR, smoke BOOLEAN, details JSON",
        ("run_id",),
    ),
    "models": (
        "model VARCHAR, model_hash VARCHAR, label VARCHAR, backend VARCHAR, model_id VARCHAR, revision VARCHAR, "
        "sampling JSON, manifest JSON, smoke BOOLEAN",
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
        "error_bound DOUBLE, details JSON, ci_low DOUBLE, ci_high DOUBLE, ci_level DOUBLE, ci_method VARCHAR",
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
    # GenEval Table 2 per model version, as t2ibench.metrics.geneval computed it (the one place its arithmetic
    # lives): one row per task and one with task 'overall' (tasks = how many tasks had images)
    "geneval_scores": (
        "model VARCHAR, model_hash VARCHAR, evaluator_hash VARCHAR, task VARCHAR, accuracy DOUBLE, correct INTEGER, "
        "images INTEGER, tasks INTEGER, prompts INTEGER, ci_low DOUBLE, ci_high DOUBLE, ci_level DOUBLE",
        ("model", "model_hash", "evaluator_hash", "task"),
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

TASK = {t: t for t in TASKS}  # views name tasks through this map: a task missing from TASKS fails at import
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
TASK_COLUMNS = ",\n               ".join(f"max(CASE WHEN t.task = '{t}' THEN t.accuracy END) AS {t}" for t in TASKS)

VIEWS = {
    # the model versions of each model's latest completed run
    "current_models": """
        SELECT rm.model, rm.model_hash, rm.evaluator_hash, r.run_id, r.finished_at, r.smoke
        FROM run_models rm JOIN runs r USING (run_id)
        WHERE r.status = 'completed'
        QUALIFY row_number() OVER (PARTITION BY rm.model ORDER BY r.finished_at DESC) = 1
    """,
    # GenEval accuracy per model version and task (images), as in Table 2 (stored by the pipeline)
    "geneval_tasks": """
        SELECT model, model_hash, evaluator_hash, task, accuracy, correct, images, prompts, ci_low, ci_high, ci_level
        FROM geneval_scores WHERE task <> 'overall'
    """,
    # overall = unweighted mean of the tasks present (six normally), with its bootstrap interval over prompts
    "geneval_overall": """
        SELECT model, model_hash, evaluator_hash, accuracy AS overall, tasks, images, prompts,
               ci_low AS overall_ci_low, ci_high AS overall_ci_high, ci_level
        FROM geneval_scores WHERE task = 'overall'
    """,
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
                 AS scendi_regularisation
        FROM current_models c JOIN metrics m USING (model, model_hash, evaluator_hash)
        GROUP BY ALL ORDER BY c.model
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
    # the current leaderboard: one row per model, its latest completed version (task columns from TASKS)
    "leaderboard": f"""
        SELECT c.model, m.label, m.smoke, o.overall, o.overall_ci_low, o.overall_ci_high, o.ci_level, o.images,
               o.prompts,
               {TASK_COLUMNS},
               any_value(d.vendi_1) AS vendi_1, any_value(d.vendi_1_ci_low) AS vendi_1_ci_low,
               any_value(d.vendi_1_ci_high) AS vendi_1_ci_high, any_value(d.rke) AS rke,
               any_value(d.scendi) AS scendi, any_value(d.vendi_1_convergence) AS vendi_1_convergence,
               any_value(d.rke_convergence) AS rke_convergence,
               any_value(d.truncated_vendi_1_convergence) AS truncated_vendi_1_convergence,
               any_value(d.scendi_convergence) AS scendi_convergence,
               any_value(d.sigma) AS sigma, any_value(d.rff_dim) AS rff_dim,
               any_value(d.fkea_radius) AS fkea_radius,
               c.model_hash, c.evaluator_hash, c.run_id, c.finished_at
        FROM current_models c
        JOIN models m USING (model, model_hash)
        LEFT JOIN geneval_overall o USING (model, model_hash, evaluator_hash)
        LEFT JOIN geneval_tasks t USING (model, model_hash, evaluator_hash)
        LEFT JOIN diversity d USING (model, model_hash, evaluator_hash)
        GROUP BY ALL ORDER BY o.overall DESC NULLS LAST, c.model
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
    # -- failure patterns (docs/schema.md#failure-patterns): read off stored verdicts and detections ---------------
    # one row per judged image, with its prompt
    "geneval_images": """
        SELECT v.model, v.model_hash, v.evaluator_hash, v.suite, v.prompt_index, v.sample, v.task, v.correct,
               v.reason, v.relation, p.prompt, p.metadata
        FROM verdicts v JOIN prompts p USING (suite, prompt_index)
    """,
    # per image and requested class: how many objects of it were kept, and the top one's box and colour
    "geneval_objects": """
        WITH requested AS (
            SELECT g.*, c.clause, c.i - 1 AS clause_index
            FROM geneval_images g,
                 unnest(CAST(json_extract(g.metadata, '$.include') AS JSON[])) WITH ORDINALITY AS c(clause, i)
        )
        SELECT r.model, r.model_hash, r.evaluator_hash, r.suite, r.prompt_index, r.sample, r.task, r.correct,
               r.clause_index, json_extract_string(r.clause, '$.class') AS class,
               CAST(json_extract(r.clause, '$.count') AS INTEGER) AS requested_count,
               json_extract_string(r.clause, '$.color') AS requested_color,
               json_extract_string(r.clause, '$.position[0]') AS requested_relation,
               count(d.rank) AS found_count,
               any_value(d.color) FILTER (WHERE d.rank = 0) AS found_color,
               any_value([d.x1, d.y1, d.x2, d.y2]) FILTER (WHERE d.rank = 0) AS box
        FROM requested r LEFT JOIN detections d
          ON d.model = r.model AND d.model_hash = r.model_hash AND d.evaluator_hash = r.evaluator_hash
         AND d.suite = r.suite AND d.prompt_index = r.prompt_index AND d.sample = r.sample
         AND d.class = json_extract_string(r.clause, '$.class')
        GROUP BY ALL
    """,
    # position prompts: the relation requested of the first-named object and the one found ('no relation' when
    # the centres are too close, 'object missing' when either object was not detected)
    "position_outcomes": f"""
        SELECT g.model, g.model_hash, g.evaluator_hash, g.suite, g.prompt_index, g.sample, g.prompt, g.correct,
               a.class AS first_class, b.class AS second_class, a.requested_relation AS requested,
               g.relation AS found,
               CASE WHEN g.relation IS NULL OR g.relation = 'object missing' THEN NULL
                    ELSE list_contains(string_split(g.relation, '+'), 'left of') END AS first_left
        FROM geneval_images g
        JOIN geneval_objects a USING (model, model_hash, evaluator_hash, suite, prompt_index, sample)
        JOIN geneval_objects b USING (model, model_hash, evaluator_hash, suite, prompt_index, sample)
        WHERE g.task = '{TASK["position"]}' AND a.requested_relation IS NOT NULL AND b.requested_relation IS NULL
    """,
    "position_confusion": """
        SELECT model, model_hash, evaluator_hash, requested, found, count(*) AS images,
               count(*) / sum(count(*)) OVER (PARTITION BY model, model_hash, evaluator_hash, requested) AS share
        FROM position_outcomes WHERE found IS NOT NULL
        GROUP BY model, model_hash, evaluator_hash, requested, found
    """,
    # how often the first-named object ends up left of the second, against how often the prompts ask for it
    # (both over the images where both objects were found)
    "position_bias": """
        SELECT model, model_hash, evaluator_hash, count(*) AS images, avg(correct::INTEGER) AS accuracy,
               count(first_left) AS both_found,
               avg(first_left::INTEGER) AS first_left_rate,
               avg((requested = 'left of')::INTEGER) FILTER (WHERE first_left IS NOT NULL) AS requested_left_rate
        FROM position_outcomes GROUP BY ALL
    """,
    # colour attribution ("a photo of a red car and a blue bench"): each object's found colour against the
    # two requested colours
    "color_attr_outcomes": f"""
        WITH pairs AS (
            SELECT a.model, a.model_hash, a.evaluator_hash, a.suite, a.prompt_index, a.sample, a.correct,
                   a.class AS first_class, a.requested_color AS first_requested, a.found_color AS first_found,
                   b.class AS second_class, b.requested_color AS second_requested, b.found_color AS second_found,
                   a.found_count > 0 AND b.found_count > 0 AS both_found
            FROM geneval_objects a
            JOIN geneval_objects b USING (model, model_hash, evaluator_hash, suite, prompt_index, sample)
            WHERE a.task = '{TASK["color_attr"]}' AND a.clause_index = 0 AND b.clause_index = 1
        )
        SELECT *,
               CASE
                 WHEN NOT both_found THEN 'object missing'
                 WHEN first_found IS NULL OR second_found IS NULL THEN NULL
                 WHEN first_found = first_requested AND second_found = second_requested THEN 'correct'
                 WHEN first_found = second_requested AND second_found = first_requested THEN 'swap'
                 WHEN first_found = second_requested OR second_found = first_requested THEN 'leak'
                 WHEN first_found = first_requested OR second_found = second_requested THEN 'absent'
                 ELSE 'miss'
               END AS outcome
        FROM pairs
    """,
    "color_attr_rates": """
        SELECT model, model_hash, evaluator_hash, count(*) AS images, avg(correct::INTEGER) AS accuracy,
               avg((outcome = 'swap')::INTEGER) AS swap_rate,
               avg((outcome IN ('leak', 'absent'))::INTEGER) AS leakage_rate,
               avg((outcome = 'leak')::INTEGER) AS leak_rate,
               avg((outcome = 'absent')::INTEGER) AS absent_rate,
               avg((outcome = 'miss')::INTEGER) AS miss_rate,
               avg((outcome = 'object missing')::INTEGER) AS object_missing_rate
        FROM color_attr_outcomes WHERE outcome IS NOT NULL GROUP BY ALL
    """,
    # single-object colour prompts: requested colour against the colour found on the top object
    "color_confusion": f"""
        SELECT model, model_hash, evaluator_hash, requested_color AS requested,
               CASE WHEN found_count = 0 THEN 'object missing' ELSE found_color END AS found, count(*) AS images,
               count(*) / sum(count(*)) OVER (PARTITION BY model, model_hash, evaluator_hash, requested_color)
                 AS share
        FROM geneval_objects WHERE task = '{TASK["colors"]}' AND (found_count = 0 OR found_color IS NOT NULL)
        GROUP BY model, model_hash, evaluator_hash, requested_color, 5
    """,
    # counting prompts: objects found minus objects requested
    "counting_outcomes": f"""
        SELECT model, model_hash, evaluator_hash, suite, prompt_index, sample, correct, class,
               requested_count AS requested, found_count AS found, found_count - requested_count AS delta
        FROM geneval_objects WHERE task = '{TASK["counting"]}'
    """,
    "counting_errors": """
        SELECT model, model_hash, evaluator_hash, requested, delta, count(*) AS images,
               count(*) / sum(count(*)) OVER (PARTITION BY model, model_hash, evaluator_hash, requested) AS share
        FROM counting_outcomes GROUP BY model, model_hash, evaluator_hash, requested, delta
    """,
    # two-object prompts: which named object goes missing, and whether both classes claim one region (their top
    # boxes overlap with IoU >= 0.5, inclusive-pixel areas as in GenEval: one object detected as both classes)
    "two_object_outcomes": f"""
        WITH pairs AS (
            SELECT a.model, a.model_hash, a.evaluator_hash, a.suite, a.prompt_index, a.sample, a.correct,
                   a.class AS first_class, b.class AS second_class,
                   a.found_count > 0 AS first_found, b.found_count > 0 AS second_found, a.box AS a, b.box AS b
            FROM geneval_objects a
            JOIN geneval_objects b USING (model, model_hash, evaluator_hash, suite, prompt_index, sample)
            WHERE a.task = '{TASK["two_object"]}' AND a.clause_index = 0 AND b.clause_index = 1
        ), boxes AS (
            SELECT *,
                   greatest(least(a[3], b[3]) - greatest(a[1], b[1]) + 1, 0)
                     * greatest(least(a[4], b[4]) - greatest(a[2], b[2]) + 1, 0) AS inter,
                   (a[3] - a[1] + 1) * (a[4] - a[2] + 1) + (b[3] - b[1] + 1) * (b[4] - b[2] + 1) AS area_sum
            FROM pairs
        )
        SELECT model, model_hash, evaluator_hash, suite, prompt_index, sample, correct, first_class, second_class,
               first_found, second_found,
               CASE WHEN first_found AND second_found THEN 'both found'
                    WHEN second_found THEN 'first missing'
                    WHEN first_found THEN 'second missing'
                    ELSE 'both missing' END AS outcome,
               CASE WHEN first_found AND second_found THEN inter / (area_sum - inter) END AS iou,
               coalesce(first_found AND second_found AND inter / (area_sum - inter) >= 0.5, false) AS merged
        FROM boxes
    """,
    "two_object_rates": """
        SELECT model, model_hash, evaluator_hash, count(*) AS images, avg(correct::INTEGER) AS accuracy,
               avg((outcome = 'first missing')::INTEGER) AS first_missing_rate,
               avg((outcome = 'second missing')::INTEGER) AS second_missing_rate,
               avg((outcome = 'both missing')::INTEGER) AS both_missing_rate,
               avg(merged::INTEGER) AS merge_rate
        FROM two_object_outcomes GROUP BY ALL
    """,
    # per requested class, over every task: how often it was not detected at all
    "class_failures": """
        SELECT model, model_hash, evaluator_hash, class, count(*) AS requested,
               avg((found_count = 0)::INTEGER) AS missing_rate, avg((NOT correct)::INTEGER) AS failure_rate
        FROM geneval_objects GROUP BY ALL
    """,
    # one failure kind per wrong image (NULL when correct), read off the views above: what the report's drill-down
    # pages filter by (single object: object missing; two objects: first/second/both missing; counting: too few/too
    # many; colors: object missing/wrong color; position: object missing/no relation/wrong relation; color
    # attribution: swap/leak/absent/miss/object missing, color unknown when a colour was not stored)
    "image_failures": f"""
        SELECT g.model, g.model_hash, g.evaluator_hash, g.suite, g.prompt_index, g.sample, g.task, g.correct,
               CASE
                 WHEN g.correct THEN NULL
                 WHEN g.task = '{TASK["single_object"]}' THEN 'object missing'
                 WHEN g.task = '{TASK["two_object"]}' THEN coalesce(nullif(t.outcome, 'both found'), 'other')
                 WHEN g.task = '{TASK["counting"]}' THEN
                   CASE WHEN k.delta < 0 THEN 'too few' WHEN k.delta > 0 THEN 'too many' ELSE 'other' END
                 WHEN g.task = '{TASK["colors"]}' THEN
                   CASE WHEN o.found_count = 0 THEN 'object missing' ELSE 'wrong color' END
                 WHEN g.task = '{TASK["position"]}' THEN
                   CASE WHEN g.relation IN ('object missing', 'no relation') THEN g.relation
                        WHEN g.relation IS NULL THEN 'other' ELSE 'wrong relation' END
                 WHEN g.task = '{TASK["color_attr"]}' THEN
                   CASE WHEN a.outcome IS NULL THEN 'color unknown' WHEN a.outcome = 'correct' THEN 'other'
                        ELSE a.outcome END
                 ELSE 'other'
               END AS failure
        FROM geneval_images g
        LEFT JOIN two_object_outcomes t USING (model, model_hash, evaluator_hash, suite, prompt_index, sample)
        LEFT JOIN counting_outcomes k USING (model, model_hash, evaluator_hash, suite, prompt_index, sample)
        LEFT JOIN (SELECT * FROM geneval_objects WHERE task = '{TASK["colors"]}' AND clause_index = 0) o
          USING (model, model_hash, evaluator_hash, suite, prompt_index, sample)
        LEFT JOIN color_attr_outcomes a USING (model, model_hash, evaluator_hash, suite, prompt_index, sample)
    """,
    # the headline of each model's current version (``t2ibench failures``)
    "failure_summary": """
        SELECT c.model, p.first_left_rate, p.requested_left_rate, p.accuracy AS position_accuracy,
               a.swap_rate, a.leakage_rate, a.miss_rate, a.object_missing_rate AS color_attr_missing_rate,
               a.accuracy AS color_attr_accuracy,
               k.under_rate AS counting_under_rate, k.over_rate AS counting_over_rate,
               k.mean_delta AS counting_mean_delta,
               k.accuracy AS counting_accuracy,
               t.first_missing_rate, t.second_missing_rate, t.both_missing_rate, t.merge_rate,
               t.accuracy AS two_object_accuracy, c.model_hash, c.evaluator_hash
        FROM current_models c
        LEFT JOIN position_bias p USING (model, model_hash, evaluator_hash)
        LEFT JOIN color_attr_rates a USING (model, model_hash, evaluator_hash)
        LEFT JOIN (
            SELECT model, model_hash, evaluator_hash, avg((delta < 0)::INTEGER) AS under_rate,
                   avg((delta > 0)::INTEGER) AS over_rate, avg(delta) AS mean_delta, avg(correct::INTEGER) AS accuracy
            FROM counting_outcomes GROUP BY ALL
        ) k USING (model, model_hash, evaluator_hash)
        LEFT JOIN two_object_rates t USING (model, model_hash, evaluator_hash)
        ORDER BY c.model
    """,
}


UPSERT_CHUNK = 256  # rows per INSERT statement

# Every connection runs sealed: no file outside the store can be read, written, attached, exported or installed,
# and no setting can be changed afterwards (docs/security.md). Internal SQL never needs more.
SANDBOX_CONFIG: dict[str, Any] = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "allow_unsigned_extensions": False,
}
DEFAULT_QUERY_TIMEOUT = 60.0  # seconds; below the 120 s a refresh's writer waits for the store
EXPORT_BATCH = 65_536  # rows per Arrow batch when a query's result is written to a file

# statement types a user's query may run (duckdb.StatementType names); everything else is refused up front
READ_STATEMENTS = frozenset({"SELECT", "EXPLAIN", "CALL"})
WRITE_STATEMENTS = READ_STATEMENTS | frozenset(
    {"INSERT", "UPDATE", "DELETE", "CREATE", "DROP", "ALTER", "MERGE_INTO", "CREATE_FUNC", "ANALYZE", "VACUUM"}
)
NEVER_STATEMENTS = {
    "ATTACH": "attaching another database",
    "DETACH": "detaching a database",
    "COPY": "COPY reads or writes files (use --out FILE.csv|.parquet to save rows)",
    "COPY_DATABASE": "copying a database",
    "EXPORT": "EXPORT DATABASE writes files (use --out FILE.csv|.parquet to save rows)",
    "LOAD": "installing or loading extensions",
    "EXTENSION": "installing or loading extensions",
    "SET": "changing settings (the configuration is locked)",
    "TRANSACTION": "transaction control (each --write call is one transaction, committed on success)",
    # DuckDB parses some statements (e.g. COPY FROM DATABASE) into PRAGMAs; the catalogue is reachable otherwise
    "PRAGMA": "PRAGMA statements (use DESCRIBE t, SHOW TABLES, or SELECT * FROM pragma_table_info('t'))",
    "PREPARE": "prepared statements",
    "EXECUTE": "prepared statements",
}


class StoreBusyError(InputError):
    """Another process holds the store (or the run lock) longer than the timeout."""


class StoreDamagedError(InputError):
    """The store file is not a DuckDB database, or its contents are damaged: t2ibench never writes into it."""


class QueryStoppedError(InputError):
    """A user's query ran past its time limit or was interrupted; the store was released."""

    def __init__(self, message: str, *, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _lock_holder(message: str) -> str:
    """'pid 123: python -m flows.leaderboard_refresh ...' from DuckDB's lock message (best effort)."""
    match = re.search(r"\(PID (\d+)\)", message)
    if not match:
        return "another process"
    pid = match.group(1)
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        command = " ".join(a.decode(errors="replace") for a in argv if a)
    except OSError:
        command = ""
    return f"pid {pid}" + (f": {command[:160]}" if command else "")


DAMAGE_MARKERS = (
    "not a valid duckdb database file",
    "corrupt database file",
    "could not read enough bytes",
    "failure while replaying wal",
    "checksum",
)


def _is_damage(exc: BaseException) -> bool:
    text = str(exc).lower()
    return any(marker in text for marker in DAMAGE_MARKERS)


def _damaged(path: Path, exc: BaseException) -> StoreDamagedError:
    size = path.stat().st_size if path.is_file() else 0
    what = "an empty file" if size == 0 else "not a DuckDB database, or damaged"
    return StoreDamagedError(
        f"{path}: {what} ({_first_line(exc)}); t2ibench will not write into it — move it aside (a refresh then "
        "starts a new store) or restore it from a copy"
    )


def _ddl() -> list[str]:
    statements = [
        "CREATE TABLE IF NOT EXISTS store_meta (key VARCHAR PRIMARY KEY, value VARCHAR)",
    ]
    for table, (columns, key) in TABLES.items():
        statements.append(f"CREATE TABLE IF NOT EXISTS {table} ({columns}, PRIMARY KEY ({', '.join(key)}))")
        # additive migration: a store written by an older version gains the newer columns (NULL in old rows)
        statements += [f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {c.strip()}" for c in columns.split(",")]
    for name, sql in VIEWS.items():
        statements.append(f"CREATE OR REPLACE VIEW {name} AS {sql}")
    statements.append(
        "INSERT INTO store_meta VALUES ('schema_version', "
        f"'{SCHEMA_VERSION}') ON CONFLICT (key) DO UPDATE SET value = excluded.value"
    )
    return statements


def _migrate_values(con: duckdb.DuckDBPyConnection) -> None:
    """Schema 9 stores α = ∞ as the value inf (older stores wrote NULL; the params key always said 'inf')."""
    con.execute(
        "UPDATE metrics SET alpha = 'inf'::DOUBLE "
        "WHERE alpha IS NULL AND json_extract_string(details, '$.alpha') = 'inf'"
    )


def _migrate_names(con: duckdb.DuckDBPyConnection) -> None:
    """Schema 9's spellings (DEPRECATED_COPIES, RENAMED_VIEWS): rows written before get the new column filled from
    its deprecated copy, and the renamed views' old names are dropped (a user's own table of that name is left
    alone). Runs once per migration, before anything reads ``task``; idempotent."""
    _fill_copies(con)
    old = ", ".join(f"'{name}'" for name in RENAMED_VIEWS)
    for (name,) in con.execute(
        f"SELECT view_name FROM duckdb_views() WHERE NOT internal AND view_name IN ({old})"
    ).fetchall():
        con.execute(f"DROP VIEW IF EXISTS {name}")


def _fill_copies(con: duckdb.DuckDBPyConnection) -> None:
    """Fill each column of DEPRECATED_COPIES from its copy where only the copy holds a value, and the copy from the
    column where only the column does (rows of older versions, or of a user's INSERT naming one spelling)."""
    for table, pairs in DEPRECATED_COPIES.items():
        for column, copy in pairs.items():
            con.execute(f"UPDATE {table} SET {column} = {copy} WHERE {column} IS NULL AND {copy} IS NOT NULL")
            con.execute(f"UPDATE {table} SET {copy} = {column} WHERE {copy} IS NULL AND {column} IS NOT NULL")


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


def _backfill_scores(con: duckdb.DuckDBPyConnection) -> None:
    """Schema 3 stores Table 2 in ``geneval_scores``; a store written before has only verdicts: compute the scores
    of every version that lacks them once, with the same function the pipeline uses (never in SQL)."""
    missing = con.execute(
        "SELECT DISTINCT model, model_hash, evaluator_hash FROM verdicts "
        "ANTI JOIN geneval_scores USING (model, model_hash, evaluator_hash) "
        "UNION SELECT model, model_hash, evaluator_hash FROM geneval_scores "  # schema 6 added the intervals
        "WHERE task = 'overall' AND images > 0 AND ci_low IS NULL"
    ).fetchall()
    for model, mh, eh in missing:
        verdicts = con.execute(
            "SELECT task, correct, prompt_index FROM verdicts "
            "WHERE model = ? AND model_hash = ? AND evaluator_hash = ?",
            [model, mh, eh],
        ).fetchall()
        version = {"model": model, "model_hash": mh, "evaluator_hash": eh}
        rows = table2_rows((t, bool(ok), p) for t, ok, p in verdicts)
        Store.upsert(con, "geneval_scores", [{**version, **r} for r in rows])


def table2_rows(verdicts: Iterable[tuple[str, bool, Any]], *, level: float = CI_LEVEL) -> list[dict[str, Any]]:
    """``geneval_scores`` rows (task, accuracy, correct, images, tasks, prompts, bootstrap CI) of (task, correct,
    prompt) image verdicts, from ``t2ibench.metrics.geneval`` (the one place Table 2's arithmetic lives); the
    overall score as task 'overall'."""
    items = list(verdicts)
    scores = table2((t, ok) for t, ok, _ in items)
    overall = overall_score(scores)
    intervals = bootstrap_table2(items, level=level)
    prompts = {t: len({p for task, _, p in items if task == t}) for t in TASKS}
    rows: list[dict[str, Any]] = []
    for t in scores:
        low, high = intervals.get(t.task, (None, None))
        rows.append(
            {
                "task": t.task,
                "accuracy": t.accuracy if t.total else None,
                "correct": t.correct,
                "images": t.total,
                "tasks": 1,
                "prompts": prompts[t.task],
                "ci_low": low,
                "ci_high": high,
                "ci_level": level,
            }
        )
    low, high = intervals.get("overall", (None, None))
    rows.append(
        {
            "task": "overall",
            "accuracy": None if overall != overall else overall,
            "correct": sum(t.correct for t in scores),
            "images": sum(t.total for t in scores),
            "tasks": tasks_present(scores),
            "prompts": sum(prompts.values()),
            "ci_low": low,
            "ci_high": high,
            "ci_level": level,
        }
    )
    return rows


def _schema_current(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether this file already has the current schema (then the DDL is skipped: it costs a few 100 ms)."""
    exists = con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'store_meta'").fetchone()
    if not exists or not exists[0]:
        return False
    row = con.execute("SELECT value FROM store_meta WHERE key = 'schema_version'").fetchone()
    if row is None or row[0] != str(SCHEMA_VERSION):
        return False
    return not _schema_damage(con)  # a dropped view or column is re-created by the DDL (additive, idempotent)


def _schema_damage(con: duckdb.DuckDBPyConnection) -> list[str]:
    """t2ibench's own tables, columns and views missing from the store (e.g. dropped by a user's --write SQL)."""
    views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    columns: dict[str, set[str]] = {}
    for table, column in con.execute("SELECT table_name, column_name FROM duckdb_columns()").fetchall():
        columns.setdefault(table, set()).add(column)
    damage = [f"view {v}" for v in VIEWS if v not in views]
    for table in TABLES:
        if table not in columns:
            damage.append(f"table {table}")
        else:
            damage += [f"column {table}.{c}" for c in _columns(table) if c not in columns[table]]
    return damage


def _columns(table: str) -> list[str]:
    return [c.strip().split()[0] for c in TABLES[table][0].split(",")]


def _json(value: Any) -> Any:
    """JSON-encode dicts/lists for JSON columns; leave scalars alone."""
    return json.dumps(value, sort_keys=True, default=str) if isinstance(value, (dict, list, tuple)) else value


class Store:
    """A DuckDB results file: create/migrate, idempotent upserts in transactions, read-only queries."""

    def __init__(self, path: str | Path, *, timeout: float = 120.0) -> None:
        self.path = Path(path)
        self.timeout = timeout

    # -- connections ------------------------------------------------------------------------------------------
    def _connect(self, *, read_only: bool) -> duckdb.DuckDBPyConnection:
        """A sealed connection (SANDBOX_CONFIG, settings locked); waits while another process holds the file."""
        if self.path.is_dir():
            raise InputError(f"{self.path}: is a directory, not a DuckDB results store")
        if read_only and not self.path.exists():
            raise InputError(f"{self.path}: no results store yet (run a benchmark first)")
        deadline = time.monotonic() + self.timeout
        delay = 0.05
        while True:
            try:
                con = duckdb.connect(str(self.path), read_only=read_only, config=dict(SANDBOX_CONFIG))
                break
            except duckdb.Error as exc:
                if _is_damage(exc):
                    raise _damaged(self.path, exc) from None
                if "lock" not in str(exc).lower():
                    raise InputError(f"{self.path}: cannot open the results store ({_first_line(exc)})") from None
                if time.monotonic() > deadline:
                    raise StoreBusyError(
                        f"{self.path}: held by another process for more than {self.timeout:g} s "
                        f"({_lock_holder(str(exc))})"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
        try:
            con.execute("SET enable_progress_bar = false")
            con.execute("SET lock_configuration = true")
        except duckdb.Error:
            con.close()
            raise
        return con

    @contextlib.contextmanager
    def write(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A read-write connection inside one transaction: committed on success, rolled back on any error."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        con = self._connect(read_only=False)
        try:
            con.execute("BEGIN TRANSACTION")
            if not _schema_current(con):
                for statement in _ddl():
                    con.execute(statement)
                _migrate_names(con)  # before the backfill, which reads verdicts.task
                _backfill_scores(con)
                _migrate_values(con)
            yield con
            con.execute("COMMIT")
        except BaseException as exc:
            with contextlib.suppress(duckdb.Error):
                con.execute("ROLLBACK")
            if isinstance(exc, duckdb.Error) and _is_damage(exc):
                raise _damaged(self.path, exc) from None
            raise
        finally:
            con.close()

    @contextlib.contextmanager
    def read(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A read-only connection (writes through it fail)."""
        con = self._connect(read_only=True)
        try:
            yield con
        except duckdb.Error as exc:
            if _is_damage(exc):
                raise _damaged(self.path, exc) from None
            raise
        finally:
            con.close()

    def initialise(self) -> None:
        """Create the tables and views if missing."""
        with self.write():
            pass

    # -- writes -----------------------------------------------------------------------------------------------
    @staticmethod
    def upsert(con: duckdb.DuckDBPyConnection, table: str, rows: Sequence[Mapping[str, Any]]) -> int:
        """Insert or update ``rows`` by the table's natural key (inside the caller's transaction)."""
        if not rows:
            return 0
        rows = with_deprecated_copies(table, rows)
        columns = _columns(table)
        unknown = sorted(set().union(*(r.keys() for r in rows)) - set(columns))
        if unknown:
            raise InputError(f"{table}: unknown column(s) {', '.join(unknown)}")
        key = TABLES[table][1]
        updates = [c for c in columns if c not in key]
        conflict = f"ON CONFLICT ({', '.join(key)}) DO " + (
            f"UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in updates)}" if updates else "NOTHING"
        )
        # one row per key, the last one winning (a single INSERT may not update a row twice), then multi-row
        # INSERTs: DuckDB's executemany runs one statement per row, about 25x slower (docs/performance.md)
        unique = {tuple(r.get(k) for k in key): [_json(r.get(c)) for c in columns] for r in rows}
        values = list(unique.values())
        placeholder = f"({', '.join('?' for _ in columns)})"
        for start in range(0, len(values), UPSERT_CHUNK):
            chunk = values[start : start + UPSERT_CHUNK]
            con.execute(
                f"INSERT INTO {table} ({', '.join(columns)}) VALUES {', '.join([placeholder] * len(chunk))} {conflict}",
                [v for row in chunk for v in row],
            )
        return len(values)

    @staticmethod
    def replace(
        con: duckdb.DuckDBPyConnection, table: str, scope: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]
    ) -> int:
        """Replace every row matching ``scope`` (column = value) by ``rows``: re-evaluations drop stale rows."""
        if scope:
            where = " AND ".join(f"{c} = ?" for c in scope)
            con.execute(f"DELETE FROM {table} WHERE {where}", list(scope.values()))
        return Store.upsert(con, table, [{**scope, **r} for r in rows])

    # -- reads ------------------------------------------------------------------------------------------------
    def query(
        self, sql: str, params: Sequence[Any] | None = None, *, write: bool = False
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        """(column names, rows) of t2ibench's own SQL (trusted, with parameters); read-only unless ``write``."""
        context = self.write() if write else self.read()
        with context as con:
            try:
                cursor = con.execute(sql, list(params) if params else None)
            except duckdb.Error as exc:
                if _is_damage(exc):
                    raise
                raise InputError(f"{self.path}: SQL error: {_first_line(exc)}") from None
            description: list[Any] | None = cursor.description
            if not description:
                return [], []
            return [d[0] for d in description], cursor.fetchall()

    # -- a user's SQL (t2ibench sql) ---------------------------------------------------------------------------
    def user_query(
        self, sql: str, *, write: bool = False, max_rows: int = 50, time_limit: float = DEFAULT_QUERY_TIMEOUT
    ) -> QueryRows:
        """Run a user's SQL sealed (no files, no attach, no extensions, no settings), at most ``time_limit`` s.

        Read-only unless ``write`` (then one transaction). Streams: only ``max_rows`` + 1 rows of the last
        statement are fetched, however large its result.
        """
        statements = check_user_sql(sql, write=write)
        if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 0:
            raise InputError(f"--limit must be an integer ≥ 0; got {max_rows!r}")
        if write and not self.path.is_file():
            raise InputError(f"{self.path}: no such results store (--write never creates one)")
        context = self.write() if write else self.read()
        with context as con, _time_limit(con, time_limit):
            try:
                cursor = con
                for statement in statements:
                    cursor = con.execute(statement)
                description: list[Any] | None = cursor.description
                rows = cursor.fetchmany(max_rows + 1) if description else []
                if write:
                    self._protect_schema(con)
            except duckdb.Error as exc:
                _raise_sql_error(exc)
        if not description:
            return QueryRows((), [], truncated=False)
        return QueryRows(tuple(d[0] for d in description), rows[:max_rows], truncated=len(rows) > max_rows)

    @staticmethod
    def _protect_schema(con: duckdb.DuckDBPyConnection) -> None:
        """Refuse (roll back) a user's --write that drops t2ibench's own tables, columns (deprecated copies included)
        or views; restore views a user replaced (CREATE OR REPLACE VIEW leaderboard ...), so reports never read a
        redefined view; fill the spelling a user's INSERT or UPDATE left empty (DEPRECATED_COPIES)."""
        damage = _schema_damage(con)
        if damage:
            raise InputError(
                f"refused: the statements would remove t2ibench's own {', '.join(damage[:3])}"
                f"{' ...' if len(damage) > 3 else ''}; nothing was changed (create your own tables and views "
                "beside them)"
            )
        for name, sql in VIEWS.items():
            con.execute(f"CREATE OR REPLACE VIEW {name} AS {sql}")
        _fill_copies(con)  # rows the user's SQL wrote with one spelling only get the other (DEPRECATED_COPIES)

    def user_export(self, sql: str, path: str | Path, *, time_limit: float = DEFAULT_QUERY_TIMEOUT) -> int:
        """Write a user's read-only query's rows to CSV or Parquet (by suffix) from Python; returns the row count.

        The query runs sealed, exactly as ``user_query``; its rows stream as Arrow batches into a separate
        in-memory connection that writes only ``path`` (through a temporary file renamed into place). The
        user's SQL is never spliced into a COPY.
        """
        target = Path(path)
        fmt = {".csv": "FORMAT CSV, HEADER", ".parquet": "FORMAT PARQUET"}.get(target.suffix.lower())
        if fmt is None:
            raise InputError(f"{target}: export as .csv or .parquet")
        if target.exists() and not target.is_file():
            raise InputError(f"{target}: is a folder or a special file; give a file name for --out")
        statements = check_user_sql(sql, write=False)
        if importlib.util.find_spec("pyarrow") is None:  # the Arrow stream between the two connections
            raise InputError("--out needs pyarrow (pip install pyarrow; part of the 'orchestration' extra)") from None
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        writer = duckdb.connect(":memory:")
        writer.execute("SET enable_progress_bar = false")
        try:
            with self.read() as con, _time_limit(con, time_limit, also=writer):
                try:
                    relation = con.sql(statements[0])
                    if relation is None:
                        raise InputError("--out: the statement returns no rows")
                    writer.register("user_result", relation.to_arrow_reader(EXPORT_BATCH))
                    escaped = str(tmp).replace("'", "''")
                    counted = writer.execute(f"COPY user_result TO '{escaped}' ({fmt})").fetchone()
                except duckdb.Error as exc:
                    _raise_sql_error(exc)
            os.replace(tmp, target)
        finally:
            writer.close()
            tmp.unlink(missing_ok=True)
        return int(counted[0]) if counted else 0

    def rows(self, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        """Query results as dictionaries (read-only)."""
        columns, rows = self.query(sql, params)
        return [dict(zip(columns, r, strict=True)) for r in rows]

    # -- what the pipeline and the analyses write -------------------------------------------------------------
    def upsert_rows(self, table: str, rows: Sequence[Mapping[str, Any]]) -> int:
        """Insert or update ``rows`` of ``table`` by its natural key, in one transaction of their own."""
        with self.write() as con:
            return self.upsert(con, table, rows)

    def write_version(self, run_id: str, version: VersionRows) -> bool:
        """Store one model/evaluation version in one transaction; returns True if it was already stored unchanged.

        An identical re-run (same content hash) only records that ``run_id`` produced the version; a changed one
        replaces that version's rows, so stale verdicts, detections, scores or modes never survive.
        """
        key = {"model": version.model, "model_hash": version.model_hash}
        judged = {**key, "evaluator_hash": version.evaluator_hash}
        with self.write() as con:
            stored = con.execute(
                "SELECT content_hash FROM model_versions WHERE model = ? AND model_hash = ? AND evaluator_hash = ?",
                [version.model, version.model_hash, version.evaluator_hash],
            ).fetchone()
            unchanged = stored is not None and stored[0] == version.content_hash
            if not unchanged:
                self.upsert(con, "models", [{**key, **version.model_row}])
                self.upsert(con, "prompts", [{"suite": version.suite, **r} for r in version.prompts])
                self.replace(con, "images", {**key, "suite": version.suite}, version.images)
                self.replace(con, "verdicts", {**judged, "suite": version.suite}, version.verdicts)
                self.replace(con, "detections", {**judged, "suite": version.suite}, version.detections)
                self.replace(con, "metrics", judged, version.metrics)
                self.replace(con, "modes", judged, version.modes)
                self.replace(con, "geneval_scores", judged, version.geneval_scores)
                # run_id: the run whose computation these rows are (a later cached run does not replace it)
                stamp = {"content_hash": version.content_hash, "stored_at": datetime.now(UTC), "run_id": run_id}
                self.upsert(con, "model_versions", [{**judged, **stamp}])
            if version.evaluator_settings:
                self.upsert(
                    con,
                    "evaluators",
                    [{"evaluator_hash": version.evaluator_hash, **version.evaluator_settings}],
                )
            self.upsert(con, "run_models", [{"run_id": run_id, **judged}])
        return unchanged

    def start_run(self, run: Mapping[str, Any]) -> int:
        """Record a run as started (``run``: a ``runs`` row); runs still 'running' become 'abandoned' (returned).

        Called under the store's run lock, so no other refresh is alive: a 'running' row is a killed run's.
        """
        with self.write() as con:
            stale = con.execute("SELECT count(*) FROM runs WHERE status = 'running'").fetchone()
            con.execute(
                "UPDATE runs SET status = 'abandoned', finished_at = ? WHERE status = 'running'", [datetime.now(UTC)]
            )
            self.upsert(con, "runs", [{**run, "started_at": datetime.now(UTC), "status": "running"}])
        return int(stale[0]) if stale else 0

    def finish_run(self, run_id: str, status: str, details: Mapping[str, Any] | None = None) -> None:
        """Mark a run completed or failed (its models become current only when completed); ``details`` are added to
        those recorded when it started."""
        with self.write() as con:
            found = con.execute("SELECT details FROM runs WHERE run_id = ?", [run_id]).fetchone()
            merged = json.loads(found[0]) if found and found[0] else {}
            merged.update(details or {})
            con.execute(
                "UPDATE runs SET status = ?, finished_at = ?, details = ? WHERE run_id = ?",
                [status, datetime.now(UTC), json.dumps(merged, default=str), run_id],
            )


@dataclass(frozen=True)
class VersionRows:
    """Every row of one model/evaluation version, as the store writes it (version columns added by the store)."""

    model: str
    model_hash: str
    evaluator_hash: str
    suite: str
    content_hash: str
    model_row: Mapping[str, Any]
    prompts: Sequence[Mapping[str, Any]]
    images: Sequence[Mapping[str, Any]]
    verdicts: Sequence[Mapping[str, Any]]
    detections: Sequence[Mapping[str, Any]]
    metrics: Sequence[Mapping[str, Any]]
    modes: Sequence[Mapping[str, Any]]
    geneval_scores: Sequence[Mapping[str, Any]]
    evaluator_settings: Mapping[str, Any] = field(default_factory=dict)  # an ``evaluators`` row (settings, lite)


# -- a user's SQL --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueryRows:
    """The first rows of a user's query: column names, rows, and whether more rows exist than were fetched."""

    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    truncated: bool


def check_user_sql(sql: str, *, write: bool) -> list[str]:
    """The statements of a user's SQL, each of an allowed type; InputError for empty, unparsable or refused SQL.

    Read-only SQL is one query (several would show only the last result); ``--write`` may chain statements.
    """
    if not isinstance(sql, str):
        raise InputError(f"SQL must be text; got {type(sql).__name__}")
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise InputError(f"SQL error: {_first_line(exc)}") from None
    if not statements:
        raise InputError("the query is empty (nothing but whitespace or comments)")
    allowed = WRITE_STATEMENTS if write else READ_STATEMENTS
    for number, statement in enumerate(statements, start=1):
        kind = _kind(statement)
        where = f"statement {number} ({kind})" if len(statements) > 1 else kind
        if kind == "UNKNOWN":
            raise InputError(f"statement {number} is of a kind t2ibench sql does not support")
        if kind in NEVER_STATEMENTS:
            raise InputError(
                f"{where} is not allowed: {NEVER_STATEMENTS[kind]}; t2ibench sql reads and writes only the store "
                "(docs/security.md)"
            )
        if kind not in allowed:
            hint = "; add --write to modify the store" if kind in WRITE_STATEMENTS else ""
            raise InputError(f"{where} is not allowed in a {'--write' if write else 'read-only'} query{hint}")
    if not write and len(statements) > 1:
        raise InputError(f"give one query at a time; got {len(statements)} statements (only one result is shown)")
    return [s.query for s in statements]


def _kind(statement: Any) -> str:
    """The statement's type name; 'UNKNOWN' for types this duckdb build's Python API cannot name."""
    try:
        return str(statement.type.name)
    except ValueError:  # e.g. UPDATE EXTENSIONS
        return "UNKNOWN"


def _raise_sql_error(exc: duckdb.Error) -> NoReturn:
    if isinstance(exc, duckdb.InterruptException) or _is_damage(exc):
        raise exc  # turned into QueryStoppedError by _time_limit, StoreDamagedError by read()/write()
    raise InputError(f"SQL error: {_first_line(exc)}") from None


@contextlib.contextmanager
def _time_limit(
    con: duckdb.DuckDBPyConnection, seconds: float, *, also: duckdb.DuckDBPyConnection | None = None
) -> Iterator[None]:
    """Interrupt ``con`` (and ``also``) after ``seconds`` or on Ctrl-C; raise QueryStoppedError naming which."""
    if not (isinstance(seconds, (int, float)) and seconds > 0 and seconds == seconds):
        raise InputError(f"--timeout must be a number of seconds > 0; got {seconds!r}")
    reason: list[str] = []

    def stop(why: str) -> None:
        reason.append(why)
        for c in (con, also):
            if c is not None:
                with contextlib.suppress(duckdb.Error):
                    c.interrupt()

    timer = threading.Timer(seconds, stop, args=("timeout",))
    timer.daemon = True
    previous = None
    main = threading.current_thread() is threading.main_thread()
    if main:
        previous = signal.signal(signal.SIGINT, lambda signum, frame: stop("interrupt"))
    timer.start()
    try:
        yield
    except (duckdb.InterruptException, KeyboardInterrupt):
        if reason and reason[0] == "timeout":
            raise QueryStoppedError(
                f"the query was stopped after {seconds:g} s (--timeout) and the store released; narrow it (WHERE, "
                "LIMIT) or raise --timeout"
            ) from None
        raise QueryStoppedError("the query was interrupted (Ctrl-C) and the store released", exit_code=130) from None
    except duckdb.Error as exc:
        if reason:  # an interrupt surfaced as another error type (e.g. through the Arrow stream)
            raise QueryStoppedError(f"the query was stopped ({reason[0]}) and the store released") from None
        _raise_sql_error(exc)
    finally:
        timer.cancel()
        if main:
            signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def run_lock(store_path: str | Path, *, wait: float = 0.0, holder: str = "") -> Iterator[Path]:
    """Exclusive lock for one refresh of a store: waits up to ``wait`` seconds, then raises StoreBusyError."""
    lock = Path(str(store_path) + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + wait
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    current = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
                    raise StoreBusyError(
                        f"{store_path}: another refresh is running ({current}); wait for it or use --wait SECONDS"
                    ) from None
                time.sleep(0.2)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} {holder}".encode(), 0)
        yield lock
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
