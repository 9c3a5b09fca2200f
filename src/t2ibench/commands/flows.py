"""The verbs that start a workspace flow with its request: ``run``, ``schedule``, ``paper`` (a benchmark's own, e.g.
GenEval's ``agreement``, call ``run_flow`` and ``checkout`` too)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from t2ibench.errors import InputError
from t2ibench.options import add_fields, from_args

if TYPE_CHECKING:
    from t2ibench.requests import Request

from t2ibench.commands.common import check_data, data_option


def _workspace(config: str, program: str = "flows.leaderboard_refresh") -> tuple[Path, Path]:
    """(workspace root, absolute config path): the root holds configs/ and the flows/ of a checkout (``program``
    among them)."""
    path = Path(config).resolve()
    if not path.is_file():
        raise InputError(f"{config}: no such config file")
    root = path.parent.parent if path.parent.name == "configs" else Path.cwd()
    return checkout(root, program), path


def checkout(root: Path, program: str) -> Path:
    """``root``, refused unless it is a checkout holding the workspace program ``program`` (``flows.<module>``)."""
    file = Path(*program.split(".")).with_suffix(".py")
    if not (root / file).is_file():
        raise InputError(
            f"{root}: not a t2ibench workspace (no {file.as_posix()}); run from a checkout of the repository"
        )
    return root


def run_flow(
    root: Path,
    request: Request,
    *,
    cwd: Path | None = None,
    program: str = "",
    after_stop: Any = None,
    after_killed: Any = None,
    log: Path | None = None,
) -> int:
    """Run the workspace program of a ``t2ibench.requests`` request (``python -m flows.<module> REQUEST-JSON``) as a
    child process with the workspace on sys.path, in ``cwd`` (default: the workspace root); the library never imports
    flows. Signals reach it as ``t2ibench.signals.run_child`` forwards them; a child killed by a signal it was not
    sent (the OOM killer's SIGKILL) is reported in one line naming the flow, the signal and ``log``."""
    import os

    from t2ibench.signals import run_child

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH", "")]))
    argv = [sys.executable, "-m", request.program, request.to_json()]
    return run_child(
        argv,
        cwd=cwd or root,
        env=env,
        program=program,
        after_stop=after_stop,
        after_killed=after_killed,
        child_name=f"{request.work} ({request.program})",
        log=log or request.log_file(),
    )


def _check_outputs(ws: Any, name: str, config: Path) -> None:
    """Before a refresh starts: its data folder and store must be this config's and the store whole (the refresh
    checks again under its lock; this only makes the refusal come in a second, not after Prefect's start-up)."""
    from t2ibench.pipeline.ownership import check_data_folder
    from t2ibench.pipeline.runs import config_file
    from t2ibench.store import Store

    file = config_file(ws, config)
    check_data_folder(ws, name, file)
    if ws.store.exists():
        Store(ws.store).verify()
        Store(ws.store).check_claim(name, file)


def _check_hub_sources(cfg: Any, config: str, root: Path) -> None:
    """Every model the config loads by hub id or folder is readable (relative folders from the workspace ``root``,
    where the refresh runs): a missing folder, or a hub model neither cached nor reachable, is one line now, naming
    the key, before any model work (``models.hub``)."""
    from t2ibench.errors import FieldError
    from t2ibench.models.hub import resolve

    for key, source in cfg.hub_sources():
        try:
            resolve(source, base=root)
        except FieldError as exc:
            raise InputError(f"{config}:{key}.{exc.field}: {exc.message}") from None


def _cmd_run(args: argparse.Namespace) -> int:
    import time

    from t2ibench.config import load_config

    begun = time.time()
    cfg = load_config(args.config)  # validate before starting Prefect (clear errors, no 20 s start-up first)
    ws = check_data(args, cfg)
    root, config = _workspace(args.config)
    _check_outputs(ws, cfg.name, config)
    _check_hub_sources(cfg, args.config, root)
    from t2ibench.requests import RefreshRequest

    summary = str(Path(args.summary).resolve()) if args.summary else None
    request = from_args(RefreshRequest, args, args.request_options, config=str(config), summary=summary, begun=begun)

    def stopped(signum: int) -> None:  # after a forwarded signal: a run the refresh could not record is recorded
        from t2ibench.pipeline.runs import mark_killed
        from t2ibench.signals import signal_name

        mark_killed(ws, signal_name(signum), "stopped by the signal before the refresh could record it")

    def killed(signum: int) -> None:  # killed by a signal nobody forwarded (the OOM killer): recorded for it
        from t2ibench.pipeline.runs import mark_killed
        from t2ibench.signals import killed_cause, signal_name

        cause = f"the refresh was killed by {signal_name(signum)} ({killed_cause(signum)}); its log: {ws.log}"
        mark_killed(ws, signal_name(signum), cause)

    return run_flow(root, request, program="t2ibench run", after_stop=stopped, after_killed=killed, log=ws.log)


def _cmd_paper_tables(args: argparse.Namespace) -> int:
    from t2ibench.config import load_config
    from t2ibench.requests import PaperTablesRequest

    request = from_args(PaperTablesRequest, args, args.request_options)
    check_data(args, load_config(request.config))  # validated before Prefect starts
    root, _ = _workspace(args.config, request.program)
    return run_flow(root, request, cwd=Path.cwd(), program="t2ibench paper tables")


def _cmd_paper_digits(args: argparse.Namespace) -> int:
    from t2ibench.requests import DigitsRequest

    request = from_args(DigitsRequest, args, args.request_options)
    root = checkout(Path.cwd(), request.program)
    return run_flow(root, request, cwd=root, program="t2ibench paper digits")


def _cmd_schedule(args: argparse.Namespace) -> int:
    from t2ibench.requests import ScheduleRequest

    request = from_args(ScheduleRequest, args, args.request_options)  # refused here unless they make a request
    if args.config:
        root, config = _workspace(args.config, request.program)
        request = dataclasses.replace(request, config=str(config))
    else:  # listing needs no config: the checkout here runs it
        root = checkout(Path.cwd(), request.program)
    return run_flow(root, request, program="t2ibench schedule")


def add_run(verbs: Any) -> None:
    """``t2ibench run``: its options (defaults from the typed classes)."""
    from t2ibench.requests import RefreshRequest

    run = verbs.add_parser(
        "run",
        help="the main job: refresh a config's leaderboard "
        "(Prefect flow: generate, embed, judge, measure, store, report)",
    )
    options = add_fields(run, RefreshRequest)  # the request's fields are the options (t2ibench.options)
    data_option(run)
    run.set_defaults(func=_cmd_run, request=RefreshRequest, request_options=options)


def add_schedule(verbs: Any) -> None:
    """``t2ibench schedule``: its options (defaults from the typed classes)."""
    from t2ibench.requests import ScheduleRequest

    schedule = verbs.add_parser(
        "schedule",
        help="deploy the refresh on a cron to a Prefect work pool (run it with `prefect worker start --pool t2ibench`)",
    )
    options = add_fields(schedule, ScheduleRequest)
    schedule.set_defaults(func=_cmd_schedule, request=ScheduleRequest, request_options=options)


def add_paper(verbs: Any) -> Any:
    """``t2ibench paper``: its options (defaults from the typed classes)."""
    from t2ibench.benchmarks import SPINE, label
    from t2ibench.requests import DigitsRequest, PaperTablesRequest

    paper = verbs.add_parser(
        "paper",
        help="the paper's tables and figures (what `dvc repro` runs; the workspace's Prefect flow paper_tables)",
    )
    kinds = paper.add_subparsers(dest="kind", required=True, metavar="KIND")
    tables = kinds.add_parser(
        "tables",
        help=f"the {label(SPINE)} table and the diversity/Scendi table of a config's current models, from its store",
    )
    options = add_fields(tables, PaperTablesRequest, only=("config",))
    data_option(tables)
    options += add_fields(tables, PaperTablesRequest, skip=("config",))
    tables.set_defaults(func=_cmd_paper_tables, request=PaperTablesRequest, request_options=options)
    figure = kinds.add_parser("digits", help="the FKEA digits figure: VENDI/RKE as the digit classes grow 1 → 10")
    options = add_fields(figure, DigitsRequest)
    figure.set_defaults(func=_cmd_paper_digits, request=DigitsRequest, request_options=options)
    return kinds
