"""Bad-input corpus, round four (issue 36, item 1): a data folder shared by two configs (gc removed the other
config's files), a damaged store still written into, `evaluate --store` writing into a config's store, and an edited
copy of GenEval 2's release read as the release. Each case also checks that the other config's files and store are
exactly as they were."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

from tests.corpus import case
from tests.corpus_files import cli

__all__: list[str] = []

X = "name: x\nmodels: [{name: a}, {name: b}]\noutputs: {data: data/x, store: data/x/x.duckdb}\n"


def tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` by relative path, with its bytes' SHA-256 (a store's run lock file aside: taking
    the lock is how a command waits its turn)."""
    files = [p for p in root.rglob("*") if p.is_file() and p.suffix != ".lock"]
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def workspace_with_x(tmp: Path) -> Path:
    """A workspace where config x ran: its data folder claimed, its store recording its version folders (each
    holding a file), and an older version of model a it no longer makes."""
    from t2ibench.config import load_config
    from t2ibench.pipeline import plan_refresh, select_prompts
    from t2ibench.pipeline.ownership import claim_data_folder
    from t2ibench.pipeline.runs import record_folders
    from t2ibench.store import Store
    from t2ibench.workspace import Workspace

    (tmp / "configs").mkdir()
    (tmp / "flows").mkdir()
    (tmp / "flows" / "leaderboard_refresh.py").write_text("")
    (tmp / "configs" / "x.yaml").write_text(X)
    config = load_config(tmp / "configs" / "x.yaml")
    ws = Workspace.for_config(config, tmp / "configs" / "x.yaml")
    plan = plan_refresh(config, ws, select_prompts(config.spine_prompts), "r")
    old = ws.data / "images" / "a" / ("0" * 16)
    for folder in [*plan.outputs, old]:
        folder.mkdir(parents=True)
        (folder / "image.png").write_bytes(folder.name.encode())
    Store(ws.store).claim("x", "configs/x.yaml")
    claim_data_folder(ws, "x", "configs/x.yaml")
    record_folders(ws, "r", {m.model.name: m.folders for m in plan.models})
    record_folders(ws, "earlier", {"a": [old]})
    return tmp


def unchanged(root: Path, before: dict[str, str], outcome: str) -> str:
    """``outcome``, once every file of x's data folder and store is checked to be as it was."""
    after = tree(root / "data" / "x")
    assert after == before, f"config x's files changed: {sorted(set(before) ^ set(after))}"
    return outcome


@case(
    "r4-gc-other-configs-data-folder",
    "`t2ibench gc` of a config that never ran (its own store, other settings) whose outputs.data is another "
    "config's data folder",
    "refused in one line naming the folder's owner; every file of the other config kept (it removed all of them: "
    "48 images → 0)",
    r"exit 2: .*data/x: this data folder belongs to config 'x' \(configs/x\.yaml; its \.t2ibench-owner\.json\); "
    r"config 'y' \(configs/y\.yaml\) cannot write into it or prune it",
)
def _(tmp: Path) -> str:
    root = workspace_with_x(tmp)
    before = tree(root / "data" / "x")
    y = X.replace("name: x", "name: y").replace("store: data/x/x.duckdb", "store: data/y/y.duckdb")
    (root / "configs" / "y.yaml").write_text(y.replace("{name: a}", "{name: a, generator: {steps: 3}}"))
    return unchanged(root, before, cli("gc", "--config", root / "configs" / "y.yaml"))


@case(
    "r4-gc-copied-data-folder",
    "`t2ibench gc` of another config whose outputs.data is a copy of a config's data folder",
    "refused: the copy carries its config's owner record",
    r"exit 2: .*data/copy: this data folder belongs to config 'x'",
)
def _(tmp: Path) -> str:
    root = workspace_with_x(tmp)
    shutil.copytree(root / "data" / "x", root / "data" / "copy")
    before = tree(root / "data" / "x")
    y = X.replace("name: x", "name: y").replace("data: data/x, store: data/x/x.duckdb", "data: data/copy, store: y.db")
    (root / "configs" / "y.yaml").write_text(y)
    return unchanged(root, before, cli("gc", "--config", root / "configs" / "y.yaml", "--dry-run"))


@case(
    "r4-refresh-into-other-configs-data-folder",
    "a refresh of a second config whose outputs.data is another config's data folder (it wrote there silently, "
    "and its gc then removed the first config's current folders)",
    "refused before any work, in one line; nothing written in either config's store or folder",
    r"data/x: this data folder belongs to config 'x'.*config 'y' \(configs/y\.yaml\) cannot write into it",
)
def _(tmp: Path) -> Any:
    from t2ibench.errors import InputError
    from t2ibench.pipeline.runs import start_run
    from t2ibench.workspace import Workspace

    root = workspace_with_x(tmp)
    before = tree(root / "data" / "x")
    (root / "configs" / "y.yaml").write_text(X.replace("name: x", "name: y").replace("data/x/x.duckdb", "y.db"))
    from t2ibench.config import load_config

    config = load_config(root / "configs" / "y.yaml")
    ws = Workspace.for_config(config, root / "configs" / "y.yaml")
    try:
        start_run(ws, config, root / "configs" / "y.yaml", "run-y", "corpus")
    except InputError:
        assert not (root / "y.db").exists(), "the refused config's store was created"
        unchanged(root, before, "")
        raise
    return "started"


@case(
    "r4-gc-config-without-a-store",
    "`t2ibench gc` of a config whose data folder is its own but whose store was moved aside",
    "nothing is attributable to it: gc removes nothing and says so",
    r"exit 0: .*config 'x' has no store yet .*gc removes nothing",
)
def _(tmp: Path) -> str:
    root = workspace_with_x(tmp)
    (root / "data" / "x" / "x.duckdb").rename(root / "aside.duckdb")
    before = tree(root / "data" / "x")
    return unchanged(root, before, cli("gc", "--config", root / "configs" / "x.yaml"))


def damaged_store(tmp: Path, damage: str) -> Path:
    """A store with thousands of rows, then cut to half its size ('truncated') or with one byte flipped in the
    middle of a block in use ('flipped')."""
    from t2ibench.store import Store

    path = tmp / "damaged.duckdb"
    store = Store(path)
    rows = [{"suite": "s", "prompt_index": i, "task": "colors", "prompt": f"p{i}" * 20} for i in range(20000)]
    store.upsert_rows("prompts", rows)
    data = bytearray(path.read_bytes())
    if damage == "truncated":
        data = data[: len(data) // 2]
    else:
        data[len(data) - 262144 + 4096] ^= 0xFF  # inside the last block, which holds rows
    path.write_bytes(bytes(data))
    return path


@case(
    "r4-refresh-on-a-truncated-store",
    "a refresh's store truncated to half its size",
    "refused before any work with the reason, and the file never opened for writing (a 'running' run row was "
    "added, never closed, after ~90 s of generation)",
    r"damaged\.duckdb: not a DuckDB database, or damaged \(truncated: \d+ bytes, but block \d+ in use ends",
)
def _(tmp: Path) -> Any:
    from t2ibench.errors import InputError
    from t2ibench.store import Store

    path = damaged_store(tmp, "truncated")
    before = path.read_bytes()
    try:
        Store(path).start_run({"run_id": "r"}, owner=("x", "configs/x.yaml"))
    except InputError:
        assert path.read_bytes() == before, "the damaged store's bytes changed"
        raise
    return "written"


@case(
    "r4-evaluate-on-a-damaged-store",
    "`t2ibench evaluate geneval2 … --store` on a store with one byte flipped in a block no query of it reads",
    "refused before any judging (it wrote 28 answers and exited 0 while `sql` said the store was damaged)",
    r"damaged\.duckdb: not a DuckDB database, or damaged \(block \d+ \(byte \d+\) fails its checksum\)",
)
def _(tmp: Path) -> Any:
    from t2ibench.store import Store

    path = damaged_store(tmp, "flipped")
    return Store(path).check_evaluation_target()


@case(
    "r4-evaluate-into-a-configs-store",
    "`t2ibench evaluate geneval2 IMAGES --store <a config's store> --model tiny-a` (images the config's tiny-a "
    "never made)",
    "refused before any judging: only the config's refresh writes its store (the report showed them as tiny-a's)",
    r"exit 2: .*x\.duckdb: this store belongs to config 'x' \(configs/x\.yaml\); only that config's refresh writes "
    r"there",
)
def _(tmp: Path) -> str:
    root = workspace_with_x(tmp)
    (root / "imgs").mkdir()
    suite = root / "g2.jsonl"
    suite.write_text("")
    store = root / "data" / "x" / "x.duckdb"
    return cli("evaluate", "geneval2", root / "imgs", "--suite", suite, "--subset", "--store", store, "--model", "a")


@case(
    "r4-geneval2-release-copy-edited",
    "the fetched GenEval 2 release (`data/external/geneval2/geneval2_data.jsonl`) edited in place (a count answer "
    "'one' → 'two')",
    "refused wherever it is read as the release (refresh plan, gc, `evaluate geneval2`), naming the setting and "
    "both hashes (it was judged and reported as GenEval 2 under a new protocol letter)",
    r"benchmarks\.geneval2\.data .*data/external/geneval2/geneval2_data\.jsonl: SHA-256 [0-9a-f]{16}… is not GenEval "
    r"2's benchmark file .*'s released file's \(09233adbc9f877fb…\): the copy at the release's place was edited",
)
def _(tmp: Path) -> Any:
    import json

    from t2ibench.benchmarks.geneval2.options import GENEVAL2_DATA, Geneval2Prompts
    from t2ibench.benchmarks.geneval2.steps import select_geneval2
    from tests.geneval2_lines import LINE

    path = tmp / GENEVAL2_DATA
    path.parent.mkdir(parents=True)
    edited = {**LINE, "vqa_list": [[q, "two" if a == "one" else a] for q, a in LINE["vqa_list"]]}
    path.write_text(json.dumps(edited) + "\n")
    return select_geneval2(Geneval2Prompts(), path)
