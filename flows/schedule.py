"""Create (or list) the Prefect deployment that refreshes a config's leaderboard on a cron schedule.

``python -m flows.schedule --config configs/smoke.yaml --cron "0 3 * * *"`` (or ``t2ibench schedule ...``)
registers deployment ``leaderboard_refresh/<name>`` with the Prefect API in use (the project-local ephemeral API,
or the server in PREFECT_API_URL). Serve it with ``prefect deployment run`` / a worker, or
``python -m flows.schedule --serve`` to run scheduled refreshes in this process.
"""

from __future__ import annotations

import argparse
import sys

import tasks  # noqa: F401  (project Prefect settings first)
from prefect.client.orchestration import get_client

from flows.leaderboard_refresh import leaderboard_refresh


def create(config: str, cron: str, name: str) -> str:
    """Register the deployment; returns its id."""
    deployment = leaderboard_refresh.to_deployment(
        name=name, cron=cron, parameters={"config": config}, description=f"leaderboard refresh of {config}"
    )
    return str(deployment.apply())


def listing() -> list[tuple[str, str, list[str]]]:
    """(flow/deployment name, id, cron schedules) of every deployment on the API."""
    import asyncio

    async def read() -> list[tuple[str, str, list[str]]]:
        async with get_client() as client:
            out = []
            for d in await client.read_deployments():
                flow = await client.read_flow(d.flow_id)
                crons = [getattr(s.schedule, "cron", str(s.schedule)) for s in (d.schedules or [])]
                out.append((f"{flow.name}/{d.name}", str(d.id), crons))
            return out

    return asyncio.run(read())


def main(argv: list[str] | None = None) -> int:
    """Command-line entry."""
    parser = argparse.ArgumentParser(prog="flows.schedule", description=__doc__)
    parser.add_argument("--config", required=True)
    parser.add_argument("--cron")
    parser.add_argument("--name", default="nightly")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--serve", action="store_true", help="serve the schedule in this process (blocks)")
    args = parser.parse_args(argv)
    if args.serve:
        leaderboard_refresh.serve(name=args.name, cron=args.cron, parameters={"config": args.config})
        return 0
    if not args.list:
        if not args.cron:
            print("flows.schedule: --cron is required", file=sys.stderr)
            return 2
        deployment_id = create(args.config, args.cron, args.name)
        print(f"created deployment leaderboard_refresh/{args.name} ({deployment_id}) on cron {args.cron!r}")
    for name, ident, crons in listing():
        print(f"{name}\t{ident}\t{', '.join(crons) or '(no schedule)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
