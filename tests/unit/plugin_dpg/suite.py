"""The plugin's pinned release."""

from t2ibench.suites.release import Release, ReleasedFile

RELEASE = Release(
    name="dpg",
    title="DPG-Bench's prompts (planted)",
    repository="https://example.invalid/dpg",
    revision="0" * 40,
    env="T2IBENCH_DPG_DATA",
    licence="Apache-2.0",
    files=(ReleasedFile("dpg_bench.csv", "dpg_bench.csv", "0" * 64),),
)
