"""The plugin's stored tables in SQL and on the leaderboard."""

from t2ibench.benchmarks import StoredColumns

COLUMNS = StoredColumns(
    protocol=("judge.model",),
    details=(("judge_model", "judge.model"),),
    table="overall",
    keys=(("dpg_score", "score"),),
    summary=(("protocol", "protocol_key"), ("judge", "judge_model")),
    headline="score",
    title="DPG score",
    legend="DPG score: planted.",
)
