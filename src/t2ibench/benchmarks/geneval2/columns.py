"""GenEval 2 in SQL and on the leaderboard, as data: its protocol, the scores view's detail columns and the
leaderboard's columns (the store builds ``geneval2_scores``, ``geneval2_current``, ``geneval2_skill_rates`` and the
leaderboard's ``geneval2_*`` columns from it; ``t2ibench.benchmarks.StoredColumns`` says how)."""

from __future__ import annotations

from t2ibench.benchmarks import StoredColumns

COLUMNS = StoredColumns(
    # what makes a GenEval 2 protocol: judge (model, revision, weights, dtype, batch, chat template), answer rule,
    # suite file and prompt set; two rows compare only where all are equal
    protocol=(
        "judge.model",
        "judge.commit",
        "judge.weights",
        "judge.loaded_dtype",
        "judge.batch_size",
        "judge.chat_template_sha256",
        "answer_rule",
        "suite_sha256",
        "prompt_set",
    ),
    details=(
        ("judge_model", "judge.model"),
        ("judge_dtype", "judge.loaded_dtype"),
        ("answer_rule", "answer_rule"),
        ("suite_sha256", "suite_sha256"),
        ("prompt_set", "prompt_set"),
    ),
    table="overall",
    keys=(("soft_tifa_gm", "gm"), ("soft_tifa_am", "am")),
    summary=(("judge", "judge_model"), ("protocol", "protocol_key"), ("suite", "suite_sha256")),
    headline="gm",
    title="GenEval 2 GM",
    legend="GenEval 2 GM: Soft-TIFA's geometric mean over each prompt's atoms, ×100, with its bootstrap interval "
    "over prompts (its tables: the GenEval 2 section); '(protocol B)' marks current models judged under different "
    "GenEval 2 protocols (judge, answer rule, suite, prompts): not comparable across letters.",
    skill_rates="soft_tifa_am",
    # per prompt, the mean over its images of each image's Soft-TIFA GM (the geometric mean of its atoms'
    # probabilities, 0 when one is 0) as one trial: their mean over prompts is the headline GM / 100
    paired="""
        WITH images AS (
            SELECT model, model_hash, evaluator_hash, benchmark, prompt_index, sample,
                   CASE WHEN bool_or(probability <= 0) THEN 0.0
                        ELSE exp(avg(ln(CASE WHEN probability > 0 THEN probability END))) END AS gm
            FROM vqa_answers WHERE benchmark = '{benchmark}' AND kind = 'atom'
            GROUP BY ALL
        )
        SELECT i.model, i.model_hash, i.evaluator_hash,
               coalesce(json_extract_string(p.settings, '$.suite_sha256'), '-') AS suite, i.prompt_index,
               'all' AS stratum, avg(i.gm) AS successes, 1.0 AS trials
        FROM images i LEFT JOIN benchmark_protocols p USING (model, model_hash, evaluator_hash, benchmark)
        GROUP BY ALL ORDER BY i.model, i.model_hash, i.evaluator_hash, i.prompt_index""",
)
