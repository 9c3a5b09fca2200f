"""Deploy the leaderboard refresh on a cron schedule to a Prefect work pool, list what is deployed, or serve.

    t2ibench schedule --config configs/smoke.yaml --cron "0 3 * * *"
    prefect worker start --pool t2ibench                                         (runs the scheduled refreshes)
    t2ibench schedule --list

``--cron`` creates (or updates) the process work pool ``--pool`` (default ``t2ibench``) and deployment
``scheduled_refresh/<name>`` on the Prefect API in use (the server in PREFECT_API_URL; a worker needs a real server,
``prefect server start``). The deployment's code is this checkout (``flows/leaderboard_refresh.py:scheduled_refresh``,
run from the workspace folder), its one parameter the config file; each run is the same refresh ``t2ibench run``
does, on the task runner the config's ``runtime`` names. ``--serve`` instead runs the schedule in this process
(no pool, no worker). ``--list`` names every deployment with its pool, schedule and the pool's live workers.
The command starts this module as a program whose one argument is the request (``t2ibench.requests.ScheduleRequest``
as JSON); ``run(request)`` is that program.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import sys
from pathlib import Path
from typing import Any

import tasks  # noqa: F401  (project Prefect settings first)
from prefect.client.orchestration import get_client
from tasks import WORKSPACE

from t2ibench.requests import ScheduleRequest, request_main

ENTRYPOINT = "flows/leaderboard_refresh.py:scheduled_refresh"
DEFAULT_POOL = ScheduleRequest.pool


def ensure_pool(pool: str) -> bool:
    """Create the process work pool ``pool`` unless it exists; True when it was created."""
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectAlreadyExists

    async def make() -> bool:
        async with get_client() as client:
            try:
                await client.create_work_pool(WorkPoolCreate(name=pool, type="process"))
            except ObjectAlreadyExists:
                return False
            return True

    return asyncio.run(make())


def create(config: str, cron: str, name: str, pool: str = DEFAULT_POOL) -> str:
    """Register (or update) the deployment on ``pool``; returns its id."""
    from flows.leaderboard_refresh import scheduled_refresh

    ensure_pool(pool)
    deployable: Any = scheduled_refresh.from_source(source=str(WORKSPACE), entrypoint=ENTRYPOINT)
    with contextlib.redirect_stdout(io.StringIO()):  # Prefect prints its own table of what it applied
        deployment_id = deployable.deploy(
            name=name,
            work_pool_name=pool,
            cron=cron,
            parameters={"config": str(Path(config).resolve())},
            description=f"leaderboard refresh of {config}",
            build=False,
            push=False,
            print_next_steps=False,
        )
    return str(deployment_id)


def listing() -> list[dict[str, Any]]:
    """Every deployment on the API: name, id, work pool, cron schedules, config, and the pool's online workers."""

    async def read() -> list[dict[str, Any]]:
        async with get_client() as client:
            out = []
            for d in await client.read_deployments():
                flow = await client.read_flow(d.flow_id)
                workers: list[str] = []
                if d.work_pool_name:
                    found = await client.read_workers_for_work_pool(d.work_pool_name)
                    workers = [w.name for w in found if str(getattr(w, "status", "")).upper().endswith("ONLINE")]
                out.append(
                    {
                        "name": f"{flow.name}/{d.name}",
                        "id": str(d.id),
                        "pool": d.work_pool_name,
                        "schedules": [getattr(s.schedule, "cron", str(s.schedule)) for s in (d.schedules or [])],
                        "config": (d.parameters or {}).get("config"),
                        "workers": workers,
                    }
                )
            return out

    return asyncio.run(read())


def render(rows: list[dict[str, Any]]) -> str:
    """The listing as lines a person reads (or the sentence that nothing is deployed)."""
    if not rows:
        return "nothing is deployed on this Prefect API (create one with: t2ibench schedule --config FILE --cron ...)"
    lines = []
    for r in rows:
        pool = r["pool"] or "(served in-process, no pool)"
        workers = (
            ", ".join(r["workers"])
            or "none online: start one with `prefect worker start --pool " + (r["pool"] or DEFAULT_POOL) + "`"
        )
        cron = ", ".join(r["schedules"]) or "(no schedule)"
        lines.append(f"{r['name']}\t{r['id']}\tcron {cron}\tpool {pool}\tworkers {workers}\tconfig {r['config']}")
    return "\n".join(lines)


def run(request: ScheduleRequest) -> int:
    """What ``t2ibench schedule`` asks for: deploy (or serve) the refresh of its config, then list what is deployed;
    returns the exit status."""
    config = str(Path(request.config).resolve()) if request.config else None
    if request.serve:
        from flows.leaderboard_refresh import scheduled_refresh

        scheduled_refresh.serve(name=request.name, cron=request.cron, parameters={"config": config})
        return 0
    if not request.listing:
        # ScheduleRequest.check: a config and a cron unless listing or serving
        deployment_id = create(str(config), str(request.cron), request.name, request.pool)
        print(
            f"created deployment scheduled_refresh/{request.name} ({deployment_id}) on pool {request.pool}, "
            f"cron {request.cron!r}"
        )
        print(f"run its refreshes with: prefect worker start --pool {request.pool}")
    print(render(listing()))
    return 0


if __name__ == "__main__":
    sys.exit(request_main(ScheduleRequest, run, "schedule"))
