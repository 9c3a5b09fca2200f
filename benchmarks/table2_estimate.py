"""On paper: the wall time of GenEval's Table-2 refresh (4 models × 553 prompts × 4 images) on 1, 4 and 8 GPUs.

    python benchmarks/table2_estimate.py            # writes the `table2_estimate` section of docs/performance.md
    python benchmarks/table2_estimate.py --shard 25 --no-write

No GPU was available to this project's machines, so the per-image costs are *assumptions* (stated below, from
public figures for an A100-80GB at fp16, not measured here); what is measured here is the orchestration cost per
task (benchmarks/task_overhead.py). The estimate replays the refresh's own task graph (prompt shards of ``--shard``
prompts: generate → GenEval per shard, embeddings per model after its last shard, diversity and Scendi on CPU
in seconds) with the graph's submission order on G single-GPU workers, each task taking the first free worker
(list scheduling, as a Dask cluster of one worker per device does); a worker keeps the models it loaded
(``Registry.reuse``), so weights are loaded when a worker first needs them or moves to another generator.
"""

from __future__ import annotations

import argparse
import heapq
import json
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _perfdoc import REPO, write_section

SECTION = "table2_estimate"
RESULTS = REPO / "benchmarks" / "results" / "table2_estimate.json"
PROMPTS = 553
IMAGES_PER_PROMPT = 4

# ASSUMED seconds per image on one A100-80GB, fp16, the 4 images of a prompt in one batch, 50 sampling steps
# (public throughput figures for these pipelines; replace with your own measurements: --costs FILE.json)
ASSUMED = {
    "generate": {
        "sd-v1.5 (512 px)": 0.55,
        "sd-v2.1 (768 px)": 1.5,
        "sd-xl (1024 px)": 3.5,
        "if-xl (stage I XL + II L, 256 px)": 3.0,
    },
    "geneval_per_image": 0.15,  # Mask2Former Swin-S instance segmentation + CLIP ViT-L/14 colour crops
    "embed_per_image": 0.02,  # DINOv2 ViT-L/14 + CLIP ViT-L/14 image features
    "load_generator": 15.0,  # weights from local disk to GPU, when a worker switches to another generator
    "load_evaluator": 10.0,  # detector + colour model, once per worker
    "load_embedders": 10.0,
    "cpu_metrics_per_model": 30.0,  # FKEA shards, merge, Scendi, store (CPU; measured scale: seconds)
    "task_overhead": 0.33,  # Prefect + Dask bookkeeping, worker-seconds per task (benchmarks/task_overhead.py)
}


@dataclass
class Task:
    kind: str  # generate | geneval | embed | metrics
    model: str
    seconds: float  # the work itself, without loading weights
    after: tuple[int, ...]


def graph(costs: dict, shard: int) -> list[Task]:
    """The refresh's tasks in submission order (model by model, shards in prompt order)."""
    tasks: list[Task] = []
    shards = [min(shard, PROMPTS - s) for s in range(0, PROMPTS, shard)] if shard else [PROMPTS]
    over = costs["task_overhead"]
    for model, per_image in costs["generate"].items():
        gens = []
        for n in shards:
            images = n * IMAGES_PER_PROMPT
            tasks.append(Task("generate", model, images * per_image + over, ()))
            gens.append(len(tasks) - 1)
            tasks.append(Task("geneval", model, images * costs["geneval_per_image"] + over, (gens[-1],)))
        embed = PROMPTS * IMAGES_PER_PROMPT * costs["embed_per_image"] + over
        tasks.append(Task("embed", model, embed, tuple(gens)))
        tasks.append(Task("metrics", model, costs["cpu_metrics_per_model"], (len(tasks) - 1,)))
    return tasks


def load_seconds(task: Task, kept: dict[str, str], costs: dict) -> float:
    """Loading a worker pays for this task: a worker keeps the last generator and the evaluators and embedders it
    loaded (``Registry.reuse``), so only a change of generator, or a first use, loads weights."""
    if task.kind == "metrics":
        return 0.0
    slot = "generator" if task.kind == "generate" else task.kind
    want = task.model if task.kind == "generate" else "loaded"
    if kept.get(slot) == want:
        return 0.0
    kept[slot] = want
    return float(
        costs[{"generate": "load_generator", "geneval": "load_evaluator", "embed": "load_embedders"}[task.kind]]
    )


def makespan(tasks: list[Task], workers: int, costs: dict) -> float:
    """List scheduling in submission order: each free worker takes the first task whose inputs are done."""
    done: dict[int, float] = {}
    free = [(0.0, w) for w in range(workers)]
    kept: list[dict[str, str]] = [{} for _ in range(workers)]
    heapq.heapify(free)
    pending = list(range(len(tasks)))
    while pending:
        start, w = heapq.heappop(free)
        ready = [i for i in pending if all(d in done for d in tasks[i].after)]
        # the first task ready soonest (its inputs' finish times), in submission order among equals
        pick = min(ready, key=lambda i: (max([start, *(done[d] for d in tasks[i].after)]), i))
        begin = max([start, *(done[d] for d in tasks[pick].after)])
        done[pick] = begin + load_seconds(tasks[pick], kept[w], costs) + tasks[pick].seconds
        pending.remove(pick)
        heapq.heappush(free, (done[pick], w))
    return max(done.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shard", type=int, default=50, help="prompts per shard (runtime.prompts_per_shard)")
    ap.add_argument("--costs", type=Path, help="JSON with the same keys as ASSUMED (measured costs)")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    costs = json.loads(args.costs.read_text()) if args.costs else ASSUMED
    rows = []
    for shard in (0, args.shard):
        tasks = graph(costs, shard)
        for gpus in (1, 4, 8):
            hours = makespan(tasks, gpus, costs) / 3600
            rows.append({"shard": shard, "gpus": gpus, "tasks": len(tasks), "hours": hours})
    one = next(r["hours"] for r in rows if r["gpus"] == 1 and r["shard"] == args.shard)
    for r in rows:
        r["speedup"] = one / r["hours"]
    result = {"costs": costs, "assumed": args.costs is None, "rows": rows, "shard": args.shard}
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(render(result))
    if not args.no_write:
        print(f"wrote {write_section(SECTION, render(result))}", file=sys.stderr)


def render(r: dict) -> str:
    c = r["costs"]
    gen = ", ".join(f"{k} {v} s" for k, v in c["generate"].items())
    slowest = max(c["generate"], key=c["generate"].get)
    slowest_h = PROMPTS * IMAGES_PER_PROMPT * c["generate"][slowest] / 3600
    lines = [
        "## GenEval Table-2 refresh on 1, 4 and 8 GPUs, on paper (`benchmarks/table2_estimate.py`)",
        "",
        f"4 models × {PROMPTS} prompts × {IMAGES_PER_PROMPT} images (8848 images). **Per-image costs are assumed**, "
        "not measured (no GPU here), for one A100-80GB at fp16 with a prompt's 4 images in one batch, 50 steps: "
        f"generation {gen}; GenEval (Mask2Former Swin-S + CLIP colour) {c['geneval_per_image']} s; embeddings "
        f"{c['embed_per_image']} s; loading a generator {c['load_generator']} s, the evaluators "
        f"{c['load_evaluator']} s, the embedders {c['load_embedders']} s (a worker keeps what it loaded: a "
        "generator is loaded again only when the worker moves to another model); CPU metrics "
        f"{c['cpu_metrics_per_model']} s per model; "
        f"{c['task_overhead']} s of Prefect/Dask bookkeeping per task (measured, `benchmarks/task_overhead.py`). "
        "The task graph is "
        "replayed on G one-GPU workers (list scheduling in submission order).",
        "",
        "| prompt shards | tasks | 1 GPU | 4 GPUs | 8 GPUs |",
        "|---|---|---|---|---|",
    ]
    for shard in sorted({row["shard"] for row in r["rows"]}):
        cells = {row["gpus"]: row for row in r["rows"] if row["shard"] == shard}
        label = "none (a model per task)" if shard == 0 else f"{shard} prompts"
        lines.append(
            f"| {label} | {cells[1]['tasks']} | "
            + " | ".join(f"{cells[g]['hours']:.2f} h ({cells[g]['speedup']:.1f}×)" for g in (1, 4, 8))
            + " |"
        )
    lines += [
        "",
        "Without shards a model is one generation task, so 4 or 8 GPUs cannot beat the slowest model "
        f"({slowest} alone: {slowest_h:.1f} h of generation); "
        f"shards of {r['shard']} prompts spread every model over every device. Speed-ups are against 1 GPU with "
        "shards; replace the assumptions with measured costs (`--costs FILE.json`, same keys) once a GPU run exists.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
