"""Prefect's own cost per task: N trivial cached tasks on 2 threads vs on a local Dask cluster of 2 workers.

    python benchmarks/task_overhead.py            # ~1 min; writes benchmarks/results/task_overhead.json

What `benchmarks/scaleout.py`'s section and `benchmarks/table2_estimate.py` quote as the bookkeeping per task.
Each runner first runs a warm-up batch (cluster start, worker imports, first cache records), then the timed batch
of ``--tasks`` tasks whose results are all in Prefect's cache, so the time is orchestration only. Runs in this
process against Prefect's temporary API in a scratch PREFECT_HOME (or the server in PREFECT_API_URL).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "task_overhead.json"
os.environ.setdefault("PREFECT_HOME", str(REPO / "benchmarks" / "_scratch" / "task_overhead" / ".prefect"))
Path(os.environ["PREFECT_HOME"]).mkdir(parents=True, exist_ok=True)
sys.path.insert(0, str(REPO))

import tasks  # noqa: E402,F401  (the project's quiet Prefect settings)
from flows.runners import task_runner  # noqa: E402
from prefect import flow, task  # noqa: E402

from t2ibench.config import Runtime  # noqa: E402


@task(persist_result=True, cache_key_fn=lambda context, parameters: f"task-overhead-{parameters['i']}")
def trivial(i: int) -> int:
    """No work: what it costs is Prefect's."""
    return i


@flow(name="task_overhead")
def batch(n: int) -> float:
    """Seconds to submit and finish ``n`` trivial tasks."""
    start = time.perf_counter()
    for future in [trivial.submit(i) for i in range(n)]:
        future.wait()
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=60)
    args = ap.parse_args()
    out = {}
    for name, runtime in (("threads-2", Runtime(workers=2)), ("dask-2", Runtime(task_runner="dask", workers=2))):
        run = batch.with_options(task_runner=task_runner(runtime))
        run(8)  # warm-up: cluster start, imports, cache records
        run(args.tasks)  # every result now cached
        seconds = run(args.tasks)
        out[name] = {"tasks": args.tasks, "seconds": round(seconds, 2), "per_task_s": round(seconds / args.tasks, 3)}
        print(name, out[name], file=sys.stderr, flush=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
