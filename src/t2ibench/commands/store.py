"""The store's verbs: ``gc``, ``report``, ``sql``, ``diff`` — each verb's options one typed request's fields
(``t2ibench.options``)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from t2ibench.commands.common import EXIT_OK, check_data, data_option
from t2ibench.errors import InputError
from t2ibench.fields import Option, Range
from t2ibench.options import add_fields, from_args


@dataclass(frozen=True)
class GcRequest:
    """``t2ibench gc``: the config whose data folder keeps only its current versions."""

    config: str
    """The config whose stale versions are removed, e.g. configs/smoke.yaml."""
    dry_run: bool = False
    """List what would be removed, remove nothing."""


@dataclass(frozen=True)
class ReportRequest:
    """``t2ibench report``: the config whose leaderboard is rendered, and where."""

    config: str
    """The config whose store is rendered, e.g. configs/smoke.yaml."""
    out: str | None = None
    """Output folder (default: the config's reports folder)."""


@dataclass(frozen=True)
class StoreChoice:
    """The results store a reading verb opens (``sql``, a benchmark's ``failures``), and how long it waits for a
    writer."""

    store: str | None = None
    """DuckDB file (default: the config's store, else data/t2ibench.duckdb)."""
    config: str | None = None
    """Take the store path from this config."""
    wait: Annotated[float, Range(0.0, 1e9)] = 30.0
    """Seconds to wait while a writer holds the store."""


@dataclass(frozen=True, kw_only=True)
class SqlRequest(StoreChoice):
    """``t2ibench sql``: one query of the results store, printed or exported."""

    query: Annotated[str, Option(positional=True)]
    """The SQL, e.g. "SELECT * FROM leaderboard"."""
    out: str | None = None
    """Write the rows to FILE.csv or FILE.parquet instead of printing."""
    write: bool = False
    """Allow statements that modify the store."""
    limit: Annotated[int, Range(0, 1_000_000)] = 50
    """Rows to print; the rest are never fetched."""
    timeout: Annotated[float, Range(0.0, 1e9, open_low=True)] = 60.0
    """Stop the query after this many seconds and release the store (a refresh waits 120 s for it)."""


@dataclass(frozen=True, kw_only=True)
class DiffRequest(StoreChoice):
    """``t2ibench diff``: what changed between two completed runs of the store, by paired tests."""

    run_a: Annotated[str | None, Option(positional=True, metavar="RUN_A")] = None
    """The earlier run's id (default: the completed run before RUN_B)."""
    run_b: Annotated[str | None, Option(positional=True, metavar="RUN_B")] = None
    """The later run's id (default: the latest completed run)."""
    # None: metrics.levels.CI_LEVEL, read when the command runs (the command line starts without the metrics package)
    level: Annotated[float | None, Range(0.5, 1.0, open_high=True)] = None
    """Confidence level: a change is flagged when its Holm-adjusted p-value is at most 1 − LEVEL (default: the level
    every interval of t2ibench is given at)."""


def _cmd_diff(args: argparse.Namespace) -> int:
    from t2ibench import comparisons
    from t2ibench.metrics.levels import CI_LEVEL
    from t2ibench.report.changes import since_markdown
    from t2ibench.store import Store, queries

    req = from_args(DiffRequest, args, args.request_options)
    path = store_path(req)
    if not path.exists():
        raise InputError(f"{path}: no results store (give --store or --config)")
    store = Store(path, timeout=req.wait)
    runs = [str(r["run_id"]) for r in queries.completed_runs(store)]
    recent = ", ".join(runs[:5]) or "none"
    for flag, run in (("RUN_A", req.run_a), ("RUN_B", req.run_b)):
        if run is not None and run not in runs:
            raise InputError(f"{flag} {run}: not a completed run of {path} (the latest: {recent})")
    later = req.run_b or (runs[0] if runs else None)
    earlier = req.run_a
    if earlier is None and later in runs:  # the completed run before RUN_B
        earlier = next(iter(runs[runs.index(later) + 1 :]), None)
    if later is None or earlier is None:
        raise InputError(f"{path}: two completed runs are needed to compare (the latest: {recent})")
    with store.session():
        rows = comparisons.since(store, later, earlier, level=CI_LEVEL if req.level is None else req.level)
    print(f"# {later} against {earlier}\n")
    print("\n".join(since_markdown(rows)))
    return EXIT_OK


def _cmd_gc(args: argparse.Namespace) -> int:
    from t2ibench.config import load_config
    from t2ibench.pipeline.gc import find_garbage, remove
    from t2ibench.pipeline.runs import config_file
    from t2ibench.store import run_lock

    req = from_args(GcRequest, args, args.request_options)
    cfg = load_config(req.config)
    ws = check_data(args, cfg)
    with run_lock(ws.store, holder=f"t2ibench gc ({cfg.name})"):
        garbage = find_garbage(cfg, ws, config_file(ws, req.config))
        for path, size in garbage.stale:
            print(f"{'would remove' if req.dry_run else 'remove'} {path} ({size / 1e6:.1f} MB)")
        freed = garbage.size if req.dry_run else remove(garbage, ws)
    for path in garbage.foreign:
        print(f"left alone: {path} (not a model of config {cfg.name!r})", file=sys.stderr)
    for model, why in garbage.held:
        print(f"left alone: model {model}: {why}", file=sys.stderr)
    if not garbage.has_store:
        print(
            f"config {cfg.name!r} has no store yet ({ws.store}): nothing in {ws.data} is attributable to it; "
            "gc removes nothing",
            file=sys.stderr,
        )
    elif garbage.unattributed:
        print(
            f"left alone: {len(garbage.unattributed)} version folders or files that config {cfg.name!r}'s store does "
            f"not record as its own (made by another config, or before t2ibench recorded its folders), e.g. "
            f"{garbage.unattributed[0]}",
            file=sys.stderr,
        )
    verb = "would free" if req.dry_run else "freed"
    print(
        f"{ws.data}: {len(garbage.stale)} stale versions or files, {verb} {freed / 1e6:.1f} MB; "
        f"{len(garbage.kept)} current version folders kept",
        file=sys.stderr,
    )
    return EXIT_OK


def _cmd_report(args: argparse.Namespace) -> int:
    from t2ibench.config import load_config
    from t2ibench.report.leaderboard import render_reports
    from t2ibench.workspace import Workspace

    req = from_args(ReportRequest, args, args.request_options)
    cfg = load_config(req.config)
    ws = Workspace.for_config(cfg, req.config)
    from t2ibench.paths import place, refuse_output, store_places

    published = [place("published table", p) for p in cfg.report.published_paths(ws.root) if Path(p).exists()]
    inputs = [*store_places(ws.store), place("--config", req.config), *published]
    refuse_output(req.out or ws.reports, flag="--out" if req.out else "outputs.reports", inputs=inputs, tree=True)
    from t2ibench.comparisons import record_for_report

    record_for_report(ws.store, cfg.report.published_paths(ws.root), level=cfg.evaluators.ci_level)
    out = render_reports(
        ws.store,
        Path(req.out) if req.out else ws.reports,
        config_name=cfg.name,
        published=cfg.report.published_paths(ws.root),
        root=ws.root,
    )
    print(f"wrote {out['markdown']} and {out['html']} ({out['models']} models, {len(out['models_html'])} model pages)")
    return EXIT_OK


def store_path(req: StoreChoice) -> Path:
    """The store a reading verb opens: --store, else the --config's, else the default workspace's."""
    if req.store:
        return Path(req.store)
    if req.config:
        from t2ibench.config import load_config
        from t2ibench.workspace import Workspace

        cfg = load_config(req.config)
        return Workspace.for_config(cfg, req.config).store
    return Path("data/t2ibench.duckdb")


def _cmd_sql(args: argparse.Namespace) -> int:
    from t2ibench.report.markdown import markdown_table
    from t2ibench.store import Store

    req = from_args(SqlRequest, args, args.request_options)
    store = Store(store_path(req), timeout=req.wait)
    if req.out:
        if req.write:
            raise InputError("--out exports a query's rows; it cannot be combined with --write")
        from t2ibench.paths import place, refuse_output, store_places

        refuse_output(req.out, flag="--out", inputs=[*store_places(store.path), place("--config", req.config)])
        count = store.user_export(req.query, req.out, time_limit=req.timeout)
        print(f"wrote {count} rows to {req.out}", file=sys.stderr)
        return EXIT_OK
    result = store.user_query(req.query, write=req.write, max_rows=req.limit, time_limit=req.timeout, text=True)
    if result.columns:
        print(markdown_table(list(result.columns), [["" if v is None else str(v) for v in r] for r in result.rows]))
        if result.truncated:
            print(f"(more than {req.limit} rows; raise --limit or use --out FILE.csv)", file=sys.stderr)
    return EXIT_OK


def add_gc(verbs: Any) -> None:
    """``t2ibench gc``: its options, ``GcRequest``'s fields and --data."""

    gc = verbs.add_parser(
        "gc",
        help="remove the files of versions the config no longer makes (older images, results, embeddings)",
        description="Keep, under the config's data folder, only the versions its leaderboard shows: the folders "
        "its refresh would write now. Folders of models the config does not name are left alone; stored rows are "
        "never touched.",
    )
    options = add_fields(gc, GcRequest, only=("config",))
    data_option(gc)
    options += add_fields(gc, GcRequest, skip=("config",))
    gc.set_defaults(func=_cmd_gc, request_options=options)


def add_report(verbs: Any) -> None:
    """``t2ibench report``: its options, ``ReportRequest``'s fields."""

    report = verbs.add_parser("report", help="render the leaderboard (Markdown, HTML, plots, galleries) from the store")
    options = add_fields(report, ReportRequest)
    report.set_defaults(func=_cmd_report, request_options=options)


def add_diff(verbs: Any) -> None:
    """``t2ibench diff``: its options, ``DiffRequest``'s fields."""

    diff = verbs.add_parser(
        "diff",
        help="what changed between two completed runs: each model old → new by a paired test on shared prompts",
        description="Compare, per benchmark, each model's version in RUN_B with its version in RUN_A on the prompts "
        "both judged: the paired difference of the benchmark's headline score with its interval and the paired "
        "randomization test's p-value, Holm-adjusted over every changed model and benchmark; new models, those not "
        "in RUN_B and versions judged differently (not compared) listed. The same table the report's 'Since the "
        "last refresh' section shows for the latest two runs.",
    )
    options = add_fields(diff, DiffRequest)
    diff.set_defaults(func=_cmd_diff, request_options=options)


def add_sql(verbs: Any) -> None:
    """``t2ibench sql``: its options, ``SqlRequest``'s fields."""

    sql = verbs.add_parser("sql", help="query the results store (read-only unless --write)")
    options = add_fields(sql, SqlRequest, skip=("wait",))  # the store's choice first, its wait last, as before
    options += add_fields(sql, SqlRequest, only=("wait",))
    sql.set_defaults(func=_cmd_sql, request_options=options)
