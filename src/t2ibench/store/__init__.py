"""The results store: the only package that talks to DuckDB.

Every result lives in one DuckDB file (schema in ``docs/schema.md``). Rows have natural keys, and every write is
an idempotent upsert (or a scoped replace) inside one transaction: re-running never duplicates rows, and an
interrupted write leaves nothing half-written.

Concurrency. DuckDB lets one process hold a file read-write, and read-only openers coexist only while no writer
holds it. So writers open the file for one short transaction at a time and retry while another process holds it
(up to ``timeout`` seconds, then a clear error), and readers do the same with read-only connections: a report or
``t2ibench sql`` works while a refresh is running. A whole refresh additionally takes ``run_lock`` (an exclusive
``flock`` on ``<store>.lock``), so two refreshes started together never interleave: the second waits or exits
with a message naming the holder.

The modules, by concept: ``schema`` (tables, deprecated copies, views, the schema version; no DuckDB),
``migrations`` (bringing a file to the current schema), ``writes`` (upsert and replace inside a transaction),
``connection`` (``Store``: sealed connections with retries, damage errors, versions and runs), ``sandbox`` (a
user's SQL: statement checks, time limit, queries and exports), ``lock`` (``run_lock``), ``errors`` (the store's
error types) and ``queries`` (the named reads the report uses). This module re-exports their public names.
"""

from t2ibench.store.connection import EVALUATE_WRITER, BenchmarkRows, Store, VersionRows, describe_owner
from t2ibench.store.errors import (
    DAMAGE_MARKERS,
    StoreBusyError,
    StoreDamagedError,
    StoreRefusedError,
    StoreVersionError,
)
from t2ibench.store.lock import lock_path, run_lock
from t2ibench.store.migrations import _backfill_scores as _backfill_scores
from t2ibench.store.migrations import ensure_schema
from t2ibench.store.sandbox import (
    DEFAULT_QUERY_TIMEOUT,
    EXPORT_BATCH,
    NEVER_STATEMENTS,
    READ_STATEMENTS,
    SANDBOX_CONFIG,
    WRITE_STATEMENTS,
    QueryRows,
    QueryStoppedError,
    check_user_sql,
)
from t2ibench.store.schema import (
    CONVERGENCE_COLUMNS,
    CONVERGENCE_SCORES,
    DEPRECATED_COPIES,
    DIVERSITY_COLUMNS,
    DIVERSITY_SCORES,
    RENAMED_VIEWS,
    SCHEMA_VERSION,
    TABLES,
    VENDI_METRIC,
    VIEWS,
    with_deprecated_copies,
)
from t2ibench.store.schema import _columns as _columns
from t2ibench.store.writes import UPSERT_CHUNK
from t2ibench.store.writes import _json as _json

# also re-exported (``X as X`` above): _backfill_scores for the tests, _columns and _json for
# benchmarks/store_writes.py
__all__ = [
    "CONVERGENCE_COLUMNS",
    "CONVERGENCE_SCORES",
    "DAMAGE_MARKERS",
    "DEFAULT_QUERY_TIMEOUT",
    "DEPRECATED_COPIES",
    "DIVERSITY_COLUMNS",
    "DIVERSITY_SCORES",
    "EVALUATE_WRITER",
    "EXPORT_BATCH",
    "NEVER_STATEMENTS",
    "READ_STATEMENTS",
    "RENAMED_VIEWS",
    "SANDBOX_CONFIG",
    "SCHEMA_VERSION",
    "TABLES",
    "UPSERT_CHUNK",
    "VENDI_METRIC",
    "VIEWS",
    "WRITE_STATEMENTS",
    "BenchmarkRows",
    "QueryRows",
    "QueryStoppedError",
    "Store",
    "StoreBusyError",
    "StoreDamagedError",
    "StoreRefusedError",
    "StoreVersionError",
    "VersionRows",
    "check_user_sql",
    "describe_owner",
    "ensure_schema",
    "lock_path",
    "run_lock",
    "with_deprecated_copies",
]
