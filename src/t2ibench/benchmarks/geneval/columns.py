"""GenEval's SQL in the store, as data the schema reads (``t2ibench.benchmarks.SpineSQL``): its Table 2 views, its
part of the leaderboard view (overall, its interval and the six task columns, ranked by overall) and the failure
patterns read off its stored verdicts and detections (docs/schema.md#failure-patterns)."""

from __future__ import annotations

from t2ibench.benchmarks import SpineSQL
from t2ibench.benchmarks.geneval.metrics_tasks import TASKS

TASK = {t: t for t in TASKS}  # views name tasks through this map: a task missing from TASKS fails at import
TASK_COLUMNS = ",\n               ".join(f"max(CASE WHEN t.task = '{t}' THEN t.accuracy END) AS {t}" for t in TASKS)


def _sql(text: str) -> str:
    """``text`` as a SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def _measured_prompts() -> str:
    """SQL naming the prompts a measured row's suite (``s.suite``, ``s.prompts`` of them judged) gave its generator,
    in a published protocol's words: each wording of the official suite (``wording_words``) when every official
    prompt was judged, with 'n of 553 prompts' after it when fewer were, else 'suite <name>' (matching no published
    row)."""
    from t2ibench.benchmarks.geneval.columns_protocol import OFFICIAL_PROMPTS, WORDINGS, worded_suite, wording_words

    whens = " ".join(f"WHEN {_sql(worded_suite('geneval', w))} THEN {_sql(wording_words(w))}" for w in WORDINGS)
    return (
        f"CASE WHEN s.suite IN ({', '.join(_sql(worded_suite('geneval', w)) for w in WORDINGS)}) "
        f"THEN (CASE s.suite {whens} END) || CASE WHEN s.prompts = {OFFICIAL_PROMPTS} THEN '' "
        f"ELSE ', ' || s.prompts || ' of {OFFICIAL_PROMPTS} prompts' END ELSE 'suite ' || s.suite END"
    )


def _measured_detector() -> str:
    """SQL naming the evaluator of a measured row (``e.settings``: its evaluators row) in a published protocol's
    words (``columns_protocol.DETECTOR_NAMES``): 'mask2former' for GenEval's own (its mmdet release, or the default
    Hugging Face port, with CLIP ViT-L/14 colours on GenEval's background and GenEval's thresholds),
    'ssd-mobilenet-v2-lite' for the offline lite one (with its own colour rule and calibrated thresholds), else the
    backend and model, with what departs from GenEval's partners named after them."""
    import dataclasses

    from t2ibench.benchmarks.geneval.metrics_tasks import GenEvalParams
    from t2ibench.specs import DEFAULT_DETECTOR_MODEL, DEFAULT_DETECTOR_RESIZE, ColourConfig

    g = "json_extract_string(e.settings, '$.geneval.geneval.{}')".format
    colour = ColourConfig()
    standard_colour = " AND ".join(
        f"{g('colour.' + k)} = {_sql(str(getattr(colour, k)))}" for k in ("backend", "arch", "pretrained", "background")
    )
    defaults = GenEvalParams()
    standard_thresholds = " AND ".join(
        f"CAST({g(f.name)} AS DOUBLE) = {float(getattr(defaults, f.name))!r}" for f in dataclasses.fields(defaults)
    )
    resize = f"[{', '.join(map(str, DEFAULT_DETECTOR_RESIZE))}]"
    port = (
        f"{g('detector.backend')} = 'hf' AND {g('detector.model')} = {_sql(DEFAULT_DETECTOR_MODEL)} AND "
        f"CAST(json_extract(e.settings, '$.geneval.geneval.detector.resize') AS INTEGER[]) = {resize}"
    )
    mask2former = f"({g('detector.backend')} = 'mmdet' OR ({port}))"
    return f"""CASE
            WHEN {g("detector.backend")} = 'opencv-ssd' AND {g("colour.backend")} = 'lite' THEN 'ssd-mobilenet-v2-lite'
            WHEN {mask2former} AND {standard_colour} AND {standard_thresholds} THEN 'mask2former'
            ELSE concat_ws(' + ', {g("detector.backend")} || ':' || coalesce({g("detector.model")}, '-'),
                           'colour ' || {g("colour.backend")} || ':' || coalesce({g("colour.arch")}, '-'),
                           CASE WHEN NOT ({standard_thresholds}) THEN 'thresholds changed' END)
        END"""


def _published_join() -> str:
    """The join condition of a published row ``p`` and a measured protocol ``m``: every compared field equal
    (``columns_protocol.COMPARED``; published values are text, 'unstated' matching nothing measured)."""
    from t2ibench.benchmarks.geneval.columns_protocol import COMPARED

    return " AND ".join(f"p.{f} = CAST(m.{f} AS VARCHAR)" for f in COMPARED)


PUBLISHED_TABLE = "geneval_published"
"""The published rows a report was last made with (``suite_published.stored_rows``), one per score."""

SPINE_SQL = SpineSQL(
    tables={
        # GenEval Table 2 per model version, as its metrics module computed it (the one place its arithmetic
        # lives): one row per task and one with task 'overall' (tasks = how many tasks had images)
        "geneval_scores": (
            "model VARCHAR, model_hash VARCHAR, evaluator_hash VARCHAR, task VARCHAR, accuracy DOUBLE, "
            "correct INTEGER, images INTEGER, tasks INTEGER, prompts INTEGER, ci_low DOUBLE, ci_high DOUBLE, "
            "ci_level DOUBLE",
            ("model", "model_hash", "evaluator_hash", "task"),
        ),
        # the published scores the last report was made with (report.published: their files, read and checked by
        # suite_published), one row per model and score, with the protocol their source states ('unstated' where
        # it does not) and how they were read; replaced whole each time a report is made
        PUBLISHED_TABLE: (
            "source VARCHAR, citation VARCHAR, file VARCHAR, model VARCHAR, prompts VARCHAR, detector VARCHAR, "
            "images_per_prompt VARCHAR, resolution VARCHAR, hub JSON, task VARCHAR, value DOUBLE, verified VARCHAR, "
            "note VARCHAR, row_order INTEGER, rounding DOUBLE",
            ("source", "model", "resolution", "prompts", "task"),
        ),
    },
    views_first={
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
    },
    leaderboard_columns=f"""o.overall, o.overall_ci_low, o.overall_ci_high, o.ci_level, o.images,
               o.prompts,
               {TASK_COLUMNS},""",
    leaderboard_joins="""LEFT JOIN geneval_overall o USING (model, model_hash, evaluator_hash)
        LEFT JOIN geneval_tasks t USING (model, model_hash, evaluator_hash)""",
    leaderboard_order="o.overall DESC NULLS LAST",
    views_after={
        # -- published rows and the reproduction check (docs/geneval.md#published-rows) ---------------------------
        # each current model's GenEval protocol in a published row's words: the prompts its generator read, the
        # evaluator that judged them, images per prompt and resolution (its generator's; 'model default' unset)
        "geneval_measured_protocols": f"""
        SELECT c.model, c.model_hash, c.evaluator_hash, m.model_id AS generator, s.suite, s.prompts AS judged_prompts,
               {_measured_prompts()} AS prompts,
               {_measured_detector()} AS detector,
               json_extract_string(e.settings, '$.geneval.geneval.detector.backend') AS detector_backend,
               json_extract_string(e.settings, '$.geneval.geneval.detector.revision') AS detector_revision,
               CAST(json_extract(m.sampling, '$.images_per_prompt') AS INTEGER) AS images_per_prompt,
               CASE WHEN json_extract_string(m.sampling, '$.width') IS NULL
                     AND json_extract_string(m.sampling, '$.height') IS NULL THEN 'model default'
                    ELSE coalesce(json_extract_string(m.sampling, '$.width'), '?') || 'x'
                         || coalesce(json_extract_string(m.sampling, '$.height'), '?') END AS resolution
        FROM current_models c
        JOIN models m USING (model, model_hash)
        LEFT JOIN evaluators e USING (evaluator_hash)
        JOIN (SELECT model, model_hash, evaluator_hash, suite, count(DISTINCT prompt_index) AS prompts
              FROM verdicts GROUP BY ALL) s USING (model, model_hash, evaluator_hash)
    """,
        # the reproduction check: a current model whose generator is a published row's hub id, measured under that
        # row's protocol (every compared field equal), against it per task and overall: our score and interval, the
        # published value, and whether the published value (± its printed rounding) meets the interval (NULL: no
        # interval stored); the detector's backend and revision beside it
        "geneval_reproduction": f"""
        SELECT m.model, p.source, p.citation, p.model AS published_model, p.task, p.value AS published,
               g.accuracy AS measured, g.accuracy - p.value AS difference, g.ci_low, g.ci_high, g.ci_level,
               p.value + p.rounding >= g.ci_low AND p.value - p.rounding <= g.ci_high AS inside,
               g.prompts, g.images, m.prompts AS prompt_wording, m.detector, m.detector_backend,
               m.detector_revision, m.images_per_prompt,
               m.resolution, p.resolution AS published_resolution, p.verified, m.model_hash, m.evaluator_hash
        FROM geneval_measured_protocols m
        JOIN {PUBLISHED_TABLE} p ON list_contains(from_json(p.hub, '["VARCHAR"]'), m.generator) AND {_published_join()}
        JOIN geneval_scores g ON g.model = m.model AND g.model_hash = m.model_hash
             AND g.evaluator_hash = m.evaluator_hash AND g.task = p.task
        ORDER BY m.model, p.source, p.resolution, list_position({["overall", *TASKS]!r}, p.task)
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
    },
    # its rows of one model version (``rows.spine_rows``): verdicts and detections per prompt of the version's suite,
    # Table 2 per version
    version_tables={"verdicts": ("suite",), "detections": ("suite",), "geneval_scores": ()},
    queries={
        # each current model's GenEval protocol in a published row's words (where the report places published rows)
        "measured_protocols": "SELECT * FROM geneval_measured_protocols ORDER BY model, suite",
        # the reproduction check's rows, as the view orders them
        "reproduction": "SELECT * FROM geneval_reproduction",
        # every stored version's results per prompt, what paired tests read (t2ibench.comparisons): correct images
        # (successes) of images (trials), its task the stratum, keyed by suite and prompt index
        "paired_results": """SELECT model, model_hash, evaluator_hash, suite, prompt_index, task AS stratum,
                  sum(correct::INTEGER) AS successes, count(*) AS trials
           FROM verdicts GROUP BY ALL
           ORDER BY model, model_hash, evaluator_hash, suite, prompt_index""",
        # every stored version with its GenEval judge's settings (detector, colour model, thresholds) as JSON, NULL
        # where unrecorded (an evaluator row missing, or stored before the settings were kept by step): two versions
        # whose judges differ were judged differently (what "since the last refresh" does not compare)
        "judges": """SELECT DISTINCT v.model, v.model_hash, v.evaluator_hash,
                  CAST(json_extract(e.settings, '$.geneval.geneval') AS VARCHAR) AS judge
           FROM run_models v LEFT JOIN evaluators e USING (evaluator_hash)
           ORDER BY v.model, v.model_hash, v.evaluator_hash""",
        # each current model's task intervals with their image and prompt counts, by model and task
        "task_intervals": """SELECT c.model, t.task, t.ci_low, t.ci_high, t.images, t.prompts
           FROM current_models c JOIN geneval_tasks t USING (model, model_hash, evaluator_hash)
           ORDER BY c.model, t.task""",
        # every judged image of the current models with its prompt and failure kind, by model, prompt and sample
        "current_verdicts": """SELECT g.model, g.suite, g.prompt_index, g.sample, g.task, g.correct, g.reason,
                  g.prompt, g.metadata, f.failure
           FROM geneval_images g JOIN current_models USING (model, model_hash, evaluator_hash)
           LEFT JOIN image_failures f USING (model, model_hash, evaluator_hash, suite, prompt_index, sample)
           ORDER BY g.model, g.prompt_index, g.sample""",
    },
)
