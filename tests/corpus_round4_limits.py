"""Bad-input corpus, round four: limits — exported values that must be what the query printed, model names that
can be neither a folder nor a readable hub model, suite files and prompts past their bounds, and memory estimates
against the process's own limits."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from tests.corpus import case
from tests.geneval2_lines import LINES

__all__: list[str] = []


def _cli(argv: Sequence[str | Path]) -> str:
    """``t2ibench ARGV`` as a user runs it: 'exit N', stderr and stdout."""
    from t2ibench.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([str(a) for a in argv])
    return f"exit {status}\n{err.getvalue()}\n{out.getvalue()}"


def _geneval2_images(tmp: Path) -> tuple[Path, Path]:
    """A GenEval 2-shaped suite (tests/geneval2_lines.py) and a folder with one image per prompt."""
    from PIL import Image

    suite = tmp / "suite.jsonl"
    suite.write_text("".join(json.dumps(line) + "\n" for line in LINES))
    for i, line in enumerate(LINES):
        folder = tmp / "images" / f"{i:05d}"
        (folder / "samples").mkdir(parents=True)
        (folder / "metadata.jsonl").write_text(json.dumps(line) + "\n")
        Image.new("RGB", (16, 16)).save(folder / "samples" / "0000.png")
    return suite, tmp / "images"


@contextlib.contextmanager
def _hub_offline(cache: Path) -> Iterator[None]:
    """huggingface_hub offline (as HF_HUB_OFFLINE=1 makes it), with an empty cache of its own."""
    from huggingface_hub import constants

    old = constants.HF_HUB_OFFLINE, constants.HF_HUB_CACHE
    constants.HF_HUB_OFFLINE, constants.HF_HUB_CACHE = True, str(cache)
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE, constants.HF_HUB_CACHE = old


# -- t2ibench sql --out: what the query printed ---------------------------------------------------------------------


@case(
    "r4-sql-out-bit-timetz",
    "`t2ibench sql --out rows.csv` of a BIT and a TIMETZ column (written as raw bytes `\\x05\\xFD` and without its "
    "offset before)",
    "each value written as the query prints it (DuckDB's text: 101, 08:00:00+05:30); every DuckDB type checked",
    r"printed: \| 101 \| 08:00:00\+05:30 \|\nwritten: b,t\n101,08:00:00\+05:30\n",
)
def _(tmp: Path) -> str:
    query = "SELECT '101'::BIT AS b, '08:00:00+05:30'::TIMETZ AS t"
    shown = _cli(["sql", "--store", tmp / "populated.duckdb", query]).strip().splitlines()[-1]
    said = _cli(["sql", "--store", tmp / "populated.duckdb", query, "--out", tmp / "rows.csv"])
    assert said.startswith("exit 0"), said
    return f"printed: {' '.join(shown.split())}\nwritten: {(tmp / 'rows.csv').read_text()}"


@case(
    "r4-sql-out-parquet-wide-integer",
    "`t2ibench sql --out rows.parquet` of a HUGEINT past 38 digits (UHUGEINT's wrapped to -1, HUGEINT's minimum "
    "stopped DuckDB with an internal error)",
    "refused in one line naming the column: Parquet holds a 128-bit integer as DECIMAL(38,0)",
    r"rows\.parquet: .*source column big.* at most 38 digits: cast that column to VARCHAR in the query, or write .csv",
)
def _(tmp: Path) -> Any:
    from t2ibench.store import Store

    sql = "SELECT x::UHUGEINT AS big FROM (VALUES (340282366920938463463374607431768211455)) t(x)"
    return Store(tmp / "populated.duckdb").user_export(sql, tmp / "rows.parquet")


# -- a model that is neither a folder nor a readable hub model -----------------------------------------------------


@case(
    "r4-judge-folder-typo",
    "`evaluate geneval2 --judge-model ./judges/qwen-typo` (a folder that does not exist)",
    "refused at once in one line naming the option (before: looked up on the hub, 147 s of retries)",
    r"exit 2\n.*\nt2ibench evaluate: error: --judge-model: './judges/qwen-typo': no such folder, and not a hub id",
)
def _(tmp: Path) -> str:
    suite, images = _geneval2_images(tmp)
    return _cli(["evaluate", "geneval2", images, "--suite", suite, "--subset", "--judge-model", "./judges/qwen-typo"])


@case(
    "r4-judge-hub-offline-uncached",
    "`evaluate geneval2 --judge-model q/nonexistent` offline (HF_HUB_OFFLINE, or the hub unreachable), not in the "
    "local Hugging Face cache",
    "refused at once in one line naming the option: neither a local folder nor a cached hub model (was 147 s, 30 "
    "'Retrying in Ns' lines)",
    r"--judge-model: 'q/nonexistent' is neither a local folder nor a hub model in the local cache, and "
    r"HF_HUB_OFFLINE is set",
)
def _(tmp: Path) -> str:
    suite, images = _geneval2_images(tmp)
    with _hub_offline(tmp / "hf-cache"):
        return _cli(["evaluate", "geneval2", images, "--suite", suite, "--subset", "--judge-model", "q/nonexistent"])


@case(
    "r4-run-config-judge-folder-typo",
    "`t2ibench run` with `evaluators.geneval2.judge.model: ./judges/qwen-typo` in its config",
    "refused before the refresh starts, in one line naming the config key (relative folders from the workspace)",
    r"c\.yaml:evaluators\.geneval2\.judge\.model: './judges/qwen-typo': no such folder",
)
def _(tmp: Path) -> str:
    (tmp / "flows").mkdir()
    (tmp / "flows" / "leaderboard_refresh.py").write_text("raise SystemExit('the refresh must not start')\n")
    (tmp / "configs").mkdir()
    (tmp / "configs" / "c.yaml").write_text(
        "name: x\nmodels: [{name: a, generator: {model: tiny-random}}]\nbenchmarks: {geneval2: {}}\n"
        "evaluators: {geneval2: {judge: {model: ./judges/qwen-typo}}, geneval: {detector: {model: tiny-random}, "
        "colour: {arch: tiny-random, pretrained: null}}, image_embedder: {model: tiny-random}, "
        "clip: {backend: open_clip, model: tiny-random}}\n"
    )
    return _cli(["run", "--config", tmp / "configs" / "c.yaml"])


# -- suites bounded before a prompt reaches a tokenizer -------------------------------------------------------------


@case(
    "r4-geneval2-long-prompt",
    "a GenEval 2 suite line whose prompt is 60 000 characters (a 100 MB one took generation to 16.8 GB and 8.5 min, "
    "and aborted the judge's tokenizer)",
    "refused naming the file and line, both lengths and the bound (10 000 characters; the release's longest: 93)",
    r"suite\.jsonl:2: the prompt has 60,000 characters; at most 10,000",
)
def _(tmp: Path) -> Any:
    from t2ibench.benchmarks.geneval2.suite import read_geneval2

    path = tmp / "suite.jsonl"
    path.write_text(json.dumps(LINES[0]) + "\n" + json.dumps({**LINES[1], "prompt": "a red car " * 6000}) + "\n")
    return read_geneval2(path, full=False)


@case(
    "r4-geneval2-huge-suite",
    "a GenEval 2 suite file of 10⁶ lines (415 MB: parsed whole before, 4.0 GB before the first image)",
    "refused unread, naming the file, its size and the bound (100 000 lines of ≤ 1 KiB on average)",
    r"huge\.jsonl: 414,888,890 bytes; a GenEval 2 suite holds at most 102,400,000 \(refused unread\)",
)
def _(tmp: Path) -> Any:
    from t2ibench.benchmarks.geneval2.suite import read_geneval2

    path = tmp / "huge.jsonl"
    with path.open("wb") as fh:
        fh.truncate(414_888_890)  # sparse: its size is all the reader may look at
    return read_geneval2(path, full=False)


@case(
    "r4-geneval-long-prompt",
    "a GenEval prompt-metadata line whose prompt is 12 000 characters (`--metadata`)",
    "refused naming the file and line (the same bound as GenEval 2's)",
    r"m\.jsonl:1: the prompt has 12,000 characters; at most 10,000",
)
def _(tmp: Path) -> Any:
    from t2ibench.benchmarks.geneval.suite import read_suite

    record = {"tag": "single_object", "include": [{"class": "cat", "count": 1}], "prompt": "a cat " * 2000}
    (tmp / "m.jsonl").write_text(json.dumps(record) + "\n")
    return read_suite(tmp / "m.jsonl")


# -- memory estimates against the process's own limits ----------------------------------------------------------


@case(
    "r4-npz-past-ulimit-d",
    "a 0.6 MB .npz declaring a 625 MB array, read by `t2ibench diversity` under `ulimit -d 524288` (512 MiB; the "
    "check compared machine memory only and numpy's _ArrayMemoryError traceback ended it)",
    "refused in one line before inflating, naming the limit that binds (the process's data limit, less its use)",
    r"exit 2\n.*e\.npz: inflating array 'embeddings' \(160000, 1024\) float32 needs ~625 MiB of memory; the limit "
    r"is .* \(the process's data limit, ulimit -d, less the .* it maps\): reduce it\n$",
)
def _(tmp: Path) -> str:
    import tests.corpus  # noqa: F401  (the registry, whose import order the corpus modules rely on)
    from tests.corpus_resources import _deflated_zeros

    npz = _deflated_zeros(tmp / "e.npz", "embeddings", "<f4", (160_000, 1024))
    script = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_DATA, (2**29, 2**29)); "
        "from t2ibench.cli import main; sys.exit(main(['diversity', sys.argv[1]]))"
    )
    env = {k: v for k, v in os.environ.items() if k != "T2IBENCH_MEMORY_LIMIT"}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    argv = [sys.executable, "-c", script, str(npz)]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    return f"exit {done.returncode}\n{done.stderr}"
