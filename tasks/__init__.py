"""Prefect tasks of the benchmark workspace: thin wrappers around ``t2ibench.pipeline`` steps.

Importing this package applies the project's quiet, offline Prefect settings (before Prefect is imported), so
users never have to: no telemetry, no update checks, a project-local PREFECT_HOME and result storage, and a
generous start-up timeout for the ephemeral API. Settings the user already exported (e.g. PREFECT_API_URL for a
real server) are left alone.
"""

from __future__ import annotations

import os
from pathlib import Path

WORKSPACE = Path(__file__).resolve().parents[1]

SETTINGS = {
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_HOME": str(WORKSPACE / ".prefect"),
    "PREFECT_LOCAL_STORAGE_PATH": str(WORKSPACE / ".prefect" / "storage"),
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    "PREFECT_LOGGING_LEVEL": "INFO",
    "PREFECT_UI_ENABLED": "false",
    "PREFECT_SERVER_API_HOST": "127.0.0.1",
    # Dask's own INFO lines (scheduler and worker start, nanny close) stay out of the log; warnings still show
    "DASK_LOGGING__DISTRIBUTED": "warning",
}
"""The environment every program of the workspace starts with (each variable unless already set), applied as this
package is imported: before Prefect, Dask or the model libraries read it."""
for key, value in SETTINGS.items():
    os.environ.setdefault(key, value)
