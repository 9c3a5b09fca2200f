"""T2I-CompBench++ in SQL and on the leaderboard, as data: its protocol, the scores view's detail columns and the
leaderboard's columns (the store builds ``t2i_compbench_scores``, ``t2i_compbench_current`` and the leaderboard's
``t2i_compbench_*`` columns from it; ``t2ibench.benchmarks.StoredColumns`` says how)."""

from __future__ import annotations

from t2ibench.benchmarks import StoredColumns
from t2ibench.benchmarks.t2i_compbench.metrics_categories import CATEGORIES, MEAN

TABLE = "category"  # the stored table: one cell per judged category and the mean (MEAN)

COLUMNS = StoredColumns(
    # what makes a T2I-CompBench++ protocol: the rule, every model as loaded (identity, weights, thresholds), np_num,
    # the detection frame, the phrase table, the suite, the categories judged and the prompt set; two rows compare
    # only where all are equal (a mean over other categories is another number)
    protocol=("rule", "models", "np_num", "frame", "phrases", "suite_sha256", "categories", "prompt_set"),
    details=(
        ("rule", "rule"),
        ("vqa_model", "models.vqa.model"),
        ("detector_model", "models.detector.model"),
        ("depth_model", "models.depth.model"),
        ("clip_model", "models.clip.arch"),
        ("categories", "categories"),
        ("suite_sha256", "suite_sha256"),
        ("prompt_set", "prompt_set"),
    ),
    table=TABLE,
    keys=((MEAN, MEAN), *((c, c) for c in CATEGORIES)),
    summary=(("rule", "rule"), ("categories", "categories"), ("protocol", "protocol_key"), ("suite", "suite_sha256")),
    headline=MEAN,
    title="T2I-CompBench++ mean",
    legend="T2I-CompBench++ mean: the unweighted mean of the judged categories' scores ×100 (t2ibench's summary — "
    "the paper reports each category only; they are in its section), with a bootstrap interval over prompts "
    "stratified by category; its detector is open-vocabulary, not the paper's UniDet, so it is not comparable with "
    "published numbers; '(protocol B)' marks current models judged under different protocols (models, rule, "
    "categories, prompts): not comparable across letters.",
    # per prompt, the sum of its images' scores over its images, its category the stratum: the mean over categories
    # of Σ scores / Σ images is the headline mean / 100 (a category's score is the plain mean of its images')
    paired="""
        SELECT i.model, i.model_hash, i.evaluator_hash,
               coalesce(json_extract_string(p.settings, '$.suite_sha256'), '-') AS suite, i.prompt_index,
               i.category AS stratum, sum(i.score) AS successes, count(*) AS trials
        FROM benchmark_images i LEFT JOIN benchmark_protocols p USING (model, model_hash, evaluator_hash, benchmark)
        WHERE i.benchmark = '{benchmark}'
        GROUP BY ALL ORDER BY i.model, i.model_hash, i.evaluator_hash, i.prompt_index""",
    selection=("categories", "prompt_set"),
)
