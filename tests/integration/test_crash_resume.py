"""Crash-resume: the smoke refresh is killed (SIGKILL, whole process group) at seeded points covering every
stage, restarted, and must end with exactly the tables of an uninterrupted run — no duplicates, no orphans. The
kills are chained (each restart killed at the next stage), two chains side by side: a run that resumes from
several kills must come out the same as one that was never killed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from t2ibench.store import Store
from tests.integration._workspace import REPO, kill_after, make_workspace, refresh_log, run, start

pytestmark = pytest.mark.slow

# (anchor in the refresh's log file, where Prefect's lines go, longest random delay after it): together they land in
# every stage — flow start (run lock, run record), prompts, generation, embedding, GenEval, FKEA shards and merge,
# Scendi, the store transaction, the second model, and the report
ANCHORS = [
    ("Beginning flow run", 1.0),
    ("Task run 'prompts", 1.5),
    ("Task run 'tiny-a-generate'", 0.5),
    ("Task run 'tiny-a-embed'", 0.5),
    ("Task run 'tiny-a-geneval'", 0.2),
    ("Task run 'tiny-a-fkea-shard-1'", 0.15),
    ("Task run 'tiny-a-diversity'", 0.15),
    ("Task run 'tiny-a-scendi'", 0.2),
    ("Task run 'tiny-a-store'", 1.5),
    ("Task run 'tiny-b-generate'", 0.5),
    ("Task run 'tiny-b-store'", 0.6),
]
CONTENT = {  # table: columns compared (run ids, timestamps and absolute paths differ between workspaces)
    "models": "model, model_hash, label, backend, model_id, sampling, smoke",
    "prompts": "*",
    "images": "model, model_hash, suite, prompt_index, sample, sha256, seed",
    "detections": "*",
    "verdicts": "*",
    "metrics": "model, model_hash, evaluator_hash, metric, params_key, alpha, sigma, rff_dim, n, seed, value, "
    "error_bound, sigma_source",
    "modes": "model, model_hash, evaluator_hash, source, mode_index, share, entropy_share, top, bottom",
    # content_hash covers the images' absolute paths: it differs between workspaces
    "model_versions": "model, model_hash, evaluator_hash",
}


def tables(root: Path) -> dict[str, list[tuple]]:
    store = Store(root / "data" / "t2ibench.duckdb")
    out = {}
    for table, columns in CONTENT.items():
        rows = store.query(f"SELECT {columns} FROM {table}")[1]
        out[table] = sorted(tuple(round(v, 9) if isinstance(v, float) else v for v in r) for r in rows)
    return out


def leftovers(root: Path) -> list[str]:
    return sorted(
        str(p.relative_to(root))
        for folder in ("data", "reports")
        for pattern in ("*.tmp", "*.partial")
        for p in (root / folder).rglob(pattern)
    )


@pytest.fixture(scope="module")
def reference(tmp_path_factory, model_cache):
    root = tmp_path_factory.mktemp("reference")
    # single-threaded like the trials: torch's CPU kernels round differently with another thread count, so the
    # images (and everything after them) are bit-identical only under the same threading
    config, env = make_workspace(root, model_cache, threads=1, per_task=1)
    code, log = run(config, env)
    assert code == 0, log[-3000:]
    return tables(root)


def crash_trial(trial: int, anchor: str, delay: float, root: Path, model_cache: Path) -> tuple[str, dict, list, list]:
    """Kill a refresh ``delay`` s after ``anchor`` in its log, restart it; (what happened, tables, leftovers, runs)."""
    config, env = make_workspace(root, model_cache, threads=1, per_task=1)
    killed, log = kill_after(start(config, env), anchor, delay, log=refresh_log(config))
    if not killed:  # the rest of the run was quicker than the delay (a fast machine): kill at the anchor itself
        root, delay = root / "again", 0.0
        config, env = make_workspace(root, model_cache, threads=1, per_task=1)
        killed, log = kill_after(start(config, env), anchor, delay, log=refresh_log(config))
    assert killed, f"trial {trial}: the run ended before the kill ({anchor!r} + {delay:.2f} s)\n{log[-2000:]}"
    code, log = run(config, env)
    assert code == 0, f"trial {trial}: restart failed after a kill at {anchor!r} + {delay:.2f} s\n{log[-3000:]}"
    runs = [
        r["status"]
        for r in Store(root / "data" / "t2ibench.duckdb").rows("SELECT status FROM runs ORDER BY started_at")
    ]
    html = (root / "reports" / "leaderboard.html").read_text()
    assert html.rstrip().endswith("</html>"), f"trial {trial}: truncated report"
    return f"{anchor} + {delay:.2f} s", tables(root), leftovers(root), runs


CHAINS = 2  # one per core, each single-threaded (oversubscribed OpenMP threads spin and stall)


def test_killed_refreshes_resume_to_the_same_tables(reference, tmp_path, model_cache):
    """Every anchor's kill is tried; the anchors are split over two chains (one per core), each a single workspace
    killed at its anchors in stage order — each restart resumes from what the kills before it left, and is killed
    at the next stage — then run to the end, which must give exactly the uninterrupted run's tables. The kills are
    placed by the log, not by the clock, so load only stretches the stages. An anchor whose stage a chain had
    already finished (the run ends before the kill) is tried alone in a fresh workspace, as before chaining."""
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(2026)
    delays = [float(rng.uniform(0.0, longest)) for _, longest in ANCHORS]
    trials = [(anchor, delay) for (anchor, _), delay in zip(ANCHORS, delays, strict=True)]
    with ThreadPoolExecutor(max_workers=CHAINS) as pool:
        futures = [
            pool.submit(crash_chain, c, trials[c::CHAINS], tmp_path / f"chain{c}", model_cache) for c in range(CHAINS)
        ]
        chains = [f.result() for f in futures]
        alone = [
            crash_trial(t, anchor, delay, tmp_path / f"alone{t}", model_cache)
            for t, (anchor, delay) in enumerate(a for _, _, _, _, missed in chains for a in missed)
        ]
    outcomes = [outcome[:4] for outcome in chains] + alone
    for what, got, orphans, runs in outcomes:
        for table, rows in reference.items():
            assert got[table] == rows, f"{what}: table {table} differs"
        assert orphans == [], f"{what}: orphaned partial files {orphans}"
        # each killed run is absent (killed before it was recorded), 'abandoned', or 'completed' when the kill
        # landed after its results were stored (while the report rendered); the last run is completed, and
        # nothing is left 'running'
        assert runs[-1] == "completed", (what, runs)
        assert set(runs[:-1]) <= {"abandoned", "completed"}, (what, runs)
    print("kills:", "; ".join(o[0] for o in outcomes))
    assert len(ANCHORS) >= 10  # each kill was made: in a chain, or alone (crash_trial asserts its kill)


def crash_chain(
    chain: int, trials: list[tuple[str, float]], root: Path, model_cache: Path
) -> tuple[str, dict, list, list, list[tuple[str, float]]]:
    """Kill one workspace's refresh at each (anchor, delay) in turn, restarting after each kill, then run it to the
    end; (the kills made, tables, leftovers, runs, the trials whose run ended before the kill)."""
    config, env = make_workspace(root, model_cache, threads=1, per_task=1)
    made, missed = [], []
    for anchor, delay in trials:
        killed, log = kill_after(start(config, env), anchor, delay, log=refresh_log(config))
        if killed:
            made.append(f"{anchor} + {delay:.2f} s")
        else:  # this run finished: later anchors find their stages done, so each is tried alone
            assert "Traceback" not in log, f"chain {chain}: a run failed after the kills {made}\n{log[-3000:]}"
            missed.append((anchor, delay))
    code, log = run(config, env)
    assert code == 0, f"chain {chain}: the run after the kills {made} failed\n{log[-3000:]}"
    html = (root / "reports" / "leaderboard.html").read_text()
    assert html.rstrip().endswith("</html>"), f"chain {chain}: truncated report"
    what = f"chain {chain}: " + " → ".join(made) if made else f"chain {chain}: no kill"
    return what, tables(root), leftovers(root), statuses(root), missed


def statuses(root: Path) -> list[str]:
    """The runs' statuses in the order they started."""
    store = Store(root / "data" / "t2ibench.duckdb")
    return [r["status"] for r in store.rows("SELECT status FROM runs ORDER BY started_at")]


PROBES = [["exit", "0"], ["exit", "3"], ["raise"], ["message"], ["interrupt"], ["atexit"], ["thread"]]


def test_a_warm_launch_behaves_as_a_plain_process(monkeypatch):
    """The kills above land in refreshes forked from the warm server (tests/integration/_warm.py): a warm launch of
    a program gives what a plain ``python -m`` process of it gives (output, exit status for each way of ending,
    its own session and process group, its environment, folder and ``__main__``), and a SIGKILL of its process
    group ends it as it ends a plain one."""
    import signal
    import subprocess
    import sys

    from tests.integration import _warm

    monkeypatch.setenv("T2IBENCH_TEST_WARM", "1")  # the launcher under test, even where the suite runs without it
    env = _warm.server_environment(os.environ) | {"T2IBENCH_PROBE": "yes"}
    for probe in PROBES:
        cmd = [sys.executable, "-m", "tests.integration._exit_probe", *probe]
        plain = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True, start_new_session=True)  # fmt: skip
        expected = plain.communicate(timeout=60)[0], plain.returncode
        warm = _warm.launch(cmd, env, REPO)
        assert warm is not None, (probe, _warm.LAST_REFUSAL)
        assert (warm.communicate(timeout=60)[0], warm.returncode) == expected, probe
    assert json.loads(expected[0].splitlines()[0])["leader"]
    for probe in (["raise"], ["message"], ["thread"]):  # stderr on a pipe of its own (test_flows' refreshes)
        cmd = [sys.executable, "-m", "tests.integration._exit_probe", *probe]
        plain = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 start_new_session=True)  # fmt: skip
        expected = (*plain.communicate(timeout=60), plain.returncode)
        warm = _warm.launch(cmd, env, REPO, merged=False)
        assert warm is not None, (probe, _warm.LAST_REFUSAL)
        assert (*warm.communicate(timeout=60), warm.returncode) == expected, probe
        assert expected[1], probe  # something did reach stderr
    killed = _warm.launch([sys.executable, "-m", "tests.integration._exit_probe", "sleep"], env, REPO)
    assert killed is not None, _warm.LAST_REFUSAL
    assert json.loads(killed.stdout.readline())["marker"] == "yes"
    assert killed.poll() is None
    os.killpg(killed.pid, signal.SIGKILL)
    killed.communicate(timeout=30)
    assert killed.returncode == -signal.SIGKILL
    assert _warm.launch(cmd, env | {"OMP_NUM_THREADS": "7"}, REPO) is None  # read as torch loads: a plain process
    assert _warm.LAST_REFUSAL == "the environment differs from the server's in OMP_NUM_THREADS"


def test_a_warm_child_reads_prefect_s_settings_as_a_fresh_process_does(tmp_path, monkeypatch):
    """The warm server imports Prefect before the fork; each child settles it for its own environment, home folder
    and working folder (``_warm._settle``). What Prefect read as it imported (settings, active profile, logging
    configuration and handlers, and the lines it logged then) equals a plain process's, for a child whose home holds
    a profile of its own, whose log level differs from the server's and whose working folder has a prefect.toml."""
    import re
    import subprocess
    import sys

    from tests.integration import _warm

    monkeypatch.setenv("T2IBENCH_TEST_WARM", "1")
    home, folder = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    folder.mkdir()
    (home / "profiles.toml").write_text('active = "probe"\n\n[profiles.probe]\nPREFECT_LOGGING_LOG_PRINTS = "true"\n')
    (folder / "prefect.toml").write_text("[logging]\ncolors = false\n")
    env = _warm.server_environment(os.environ) | {
        "PREFECT_HOME": str(home / "prefect"),
        "PREFECT_PROFILES_PATH": str(home / "profiles.toml"),
        "PREFECT_LOGGING_LEVEL": "DEBUG",
        "PREFECT_API_URL": "http://127.0.0.1:9/api",
    }
    cmd = [sys.executable, "-m", "tests.integration._prefect_probe"]
    plain = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=120)
    warm = _warm.launch(cmd, env, folder, merged=False)
    assert warm is not None, _warm.LAST_REFUSAL
    out, err = warm.communicate(timeout=120)

    def masked(lines: str | None) -> str:
        return re.sub(r"\d\d:\d\d:\d\d\.\d{3}", "HH:MM:SS.mmm", lines or "")

    assert (out, masked(err), warm.returncode) == (plain.stdout, masked(plain.stderr), plain.returncode)
    probe = json.loads(out)  # the child's own, not the server's
    assert probe["home"] == str(home / "prefect")
    assert (home / "prefect").is_dir()
    assert probe["profile"] == "probe"
    assert probe["settings"]["logging"]["log_prints"] is True
    assert probe["settings"]["logging"]["colors"] is False
    assert probe["settings"]["api"]["url"] == "http://127.0.0.1:9/api"
    assert probe["loggers"]["prefect"]["level"] == 10  # DEBUG
    assert "Using profile 'probe'" in err
