"""The store's verbs: ``gc``, ``report``, ``sql``, ``failures``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from t2ibench.commands.common import EXIT_OK, check_data, data_option
from t2ibench.errors import InputError
from t2ibench.options import float_in, int_from

SECONDS = float_in(0.0, 1e9)


def _cmd_gc(args: argparse.Namespace) -> int:
    from t2ibench.config import load_config
    from t2ibench.pipeline.gc import find_garbage, remove
    from t2ibench.pipeline.runs import config_file
    from t2ibench.store import run_lock

    cfg = load_config(args.config)
    ws = check_data(args, cfg)
    with run_lock(ws.store, holder=f"t2ibench gc ({cfg.name})"):
        garbage = find_garbage(cfg, ws, config_file(ws, args.config))
        for path, size in garbage.stale:
            print(f"{'would remove' if args.dry_run else 'remove'} {path} ({size / 1e6:.1f} MB)")
        freed = garbage.size if args.dry_run else remove(garbage, ws)
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
    verb = "would free" if args.dry_run else "freed"
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

    cfg = load_config(args.config)
    ws = Workspace.for_config(cfg, args.config)
    from t2ibench.paths import place, refuse_output, store_places

    published = [place("published table", p) for p in cfg.report.published_paths(ws.root) if Path(p).exists()]
    inputs = [*store_places(ws.store), place("--config", args.config), *published]
    refuse_output(args.out or ws.reports, flag="--out" if args.out else "outputs.reports", inputs=inputs, tree=True)
    out = render_reports(
        ws.store,
        Path(args.out) if args.out else ws.reports,
        config_name=cfg.name,
        published=cfg.report.published_paths(ws.root),
        root=ws.root,
    )
    print(f"wrote {out['markdown']} and {out['html']} ({out['models']} models, {len(out['models_html'])} model pages)")
    return EXIT_OK


def _store_path(args: argparse.Namespace) -> Path:
    if args.store:
        return Path(args.store)
    if args.config:
        from t2ibench.config import load_config
        from t2ibench.workspace import Workspace

        cfg = load_config(args.config)
        return Workspace.for_config(cfg, args.config).store
    return Path("data/t2ibench.duckdb")


def _cmd_sql(args: argparse.Namespace) -> int:
    from t2ibench.report.markdown import markdown_table
    from t2ibench.store import Store

    store = Store(_store_path(args), timeout=args.wait)
    if args.out:
        if args.write:
            raise InputError("--out exports a query's rows; it cannot be combined with --write")
        from t2ibench.paths import place, refuse_output, store_places

        refuse_output(args.out, flag="--out", inputs=[*store_places(store.path), place("--config", args.config)])
        count = store.user_export(args.query, args.out, time_limit=args.timeout)
        print(f"wrote {count} rows to {args.out}", file=sys.stderr)
        return EXIT_OK
    result = store.user_query(args.query, write=args.write, max_rows=args.limit, time_limit=args.timeout, text=True)
    if result.columns:
        print(markdown_table(list(result.columns), [["" if v is None else str(v) for v in r] for r in result.rows]))
        if result.truncated:
            print(f"(more than {args.limit} rows; raise --limit or use --out FILE.csv)", file=sys.stderr)
    return EXIT_OK


def _cmd_failures(args: argparse.Namespace) -> int:
    from t2ibench.benchmarks.geneval import report_failures as failures
    from t2ibench.store import Store

    store = Store(_store_path(args), timeout=args.wait)
    data = failures.collect(store, args.model or None)
    models = args.model or sorted({r["model"] for r in data["summary"]})
    if not models:
        raise InputError(f"{store.path}: no completed model yet")
    print("\n".join(failures.headline_markdown(data, m) for m in models), end="")
    return EXIT_OK


def add_gc(verbs: Any) -> None:
    """``t2ibench gc``: its options (defaults from the typed classes)."""

    gc = verbs.add_parser(
        "gc",
        help="remove the files of versions the config no longer makes (older images, results, embeddings)",
        description="Keep, under the config's data folder, only the versions its leaderboard shows: the folders "
        "its refresh would write now. Folders of models the config does not name are left alone; stored rows are "
        "never touched.",
    )
    gc.add_argument("--config", required=True)
    data_option(gc)
    gc.add_argument("--dry-run", action="store_true", help="list what would be removed, remove nothing")
    gc.set_defaults(func=_cmd_gc)


def add_report(verbs: Any) -> None:
    """``t2ibench report``: its options (defaults from the typed classes)."""

    report = verbs.add_parser("report", help="render the leaderboard (Markdown, HTML, plots, galleries) from the store")
    report.add_argument("--config", required=True)
    report.add_argument("--out", help="output folder (default: the config's reports folder)")
    report.set_defaults(func=_cmd_report)


def add_sql(verbs: Any) -> None:
    """``t2ibench sql``: its options (defaults from the typed classes)."""

    sql = verbs.add_parser("sql", help="query the results store (read-only unless --write)")
    sql.add_argument("query", help='e.g. "SELECT * FROM leaderboard"')
    sql.add_argument("--store", help="DuckDB file (default: the config's store, else data/t2ibench.duckdb)")
    sql.add_argument("--config", help="take the store path from this config")
    sql.add_argument("--out", help="write the rows to FILE.csv or FILE.parquet instead of printing")
    sql.add_argument("--write", action="store_true", help="allow statements that modify the store")
    sql.add_argument(
        "--limit",
        type=int_from(0, 1_000_000),
        default=50,
        help="rows to print (default 50); the rest are never fetched",
    )
    sql.add_argument(
        "--timeout",
        type=float_in(0.0, 1e9, open_low=True),
        default=60.0,
        help="stop the query after S seconds and release the store (default 60; a refresh waits 120 s for it)",
    )
    sql.add_argument("--wait", type=SECONDS, default=30.0, help="seconds to wait while a writer holds the store")
    sql.set_defaults(func=_cmd_sql)


def add_failures(verbs: Any) -> None:
    """``t2ibench failures``: its options (defaults from the typed classes)."""

    fail = verbs.add_parser(
        "failures",
        help="where a model fails GenEval: position confusion, colour swaps, counting errors, missing objects",
    )
    fail.add_argument("--model", action="append", help="a stored model (repeatable; default: every current model)")
    fail.add_argument("--store", help="DuckDB file (default: the config's store, else data/t2ibench.duckdb)")
    fail.add_argument("--config", help="take the store path from this config")
    fail.add_argument("--wait", type=SECONDS, default=30.0, help="seconds to wait while a writer holds the store")
    fail.set_defaults(func=_cmd_failures)
