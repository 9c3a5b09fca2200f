"""Prefect flows of the benchmark workspace (composition only; the work is in tasks/ and t2ibench)."""

import tasks  # noqa: F401  (applies the project's Prefect settings before Prefect is imported)
