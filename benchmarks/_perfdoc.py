"""Shared helpers for benchmark scripts: machine facts, child-process timing, docs/performance.md sections."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PERF_DOC = REPO / "docs" / "performance.md"
DOC_HEADER = """# Performance

Every number on this page is written by a script in `benchmarks/` (named in each section), measured in one
run on the machine that section describes. Timings on shared machines are noisy: sections report medians of
repeated runs and ratios measured in the same run, never a lone time.
"""


def machine_facts() -> dict[str, Any]:
    """CPU model, cores, memory, Python, numpy and its BLAS, as plain strings."""
    import numpy as np

    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        mem_kb = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))  # type: ignore[union-attr]
        memory = f"{mem_kb / 2**20:.0f} GiB"
    except (OSError, AttributeError):
        memory = "?"
    blas = "?"
    try:
        from threadpoolctl import threadpool_info

        info = [i for i in threadpool_info() if i.get("user_api") == "blas"]
        if info:
            blas = f"{info[0].get('internal_api')} {info[0].get('version')} ({info[0].get('num_threads')} threads)"
    except ImportError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory": memory,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas": blas,
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def run_child(script: Path, args: list[str]) -> dict[str, Any]:
    """Run ``script --child ...`` in a fresh interpreter (its own peak RSS) and parse its JSON line."""
    out = subprocess.run([sys.executable, str(script), "--child", *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"child {args} failed ({out.returncode}):\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far, MiB (VmHWM of this address space).

    Not ``getrusage().ru_maxrss``: Linux carries the pre-exec high-water mark of the forking parent into the
    child's ru_maxrss, so a child of a large parent would report the parent's peak.
    """
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write_section(name: str, body: str) -> Path:
    """Replace (or append) the section delimited by BEGIN/END markers for ``name`` in docs/performance.md."""
    PERF_DOC.parent.mkdir(parents=True, exist_ok=True)
    text = PERF_DOC.read_text() if PERF_DOC.exists() else DOC_HEADER
    begin, end = f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"
    block = f"{begin}\n{body.strip()}\n{end}"
    if begin in text and end in text:
        text = text[: text.index(begin)] + block + text[text.index(end) + len(end) :]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    PERF_DOC.write_text(text)
    return PERF_DOC


def with_server(env: dict[str, str], root: Path) -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    """A ``prefect server`` on a free loopback port (its home under ``root``), running until the caller terminates
    it, and ``env`` with its API URL: several refresh processes then share one server, as a deployment's do."""
    import socket
    import time
    import urllib.request

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server_env = {**env, "PREFECT_HOME": str(root), "PREFECT_SERVER_API_PORT": str(port)}
    proc = subprocess.Popen(
        [str(Path(sys.executable).with_name("prefect")), "server", "start", "--port", str(port)],
        env=server_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/api"
    for _ in range(180):
        try:
            urllib.request.urlopen(url + "/health", timeout=1)
            return proc, {**env, "PREFECT_API_URL": url}
        except OSError:
            time.sleep(1)
    proc.kill()
    raise RuntimeError("prefect server did not start within 3 minutes")
