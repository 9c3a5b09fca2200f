"""A data folder belongs to one config, as its store does.

Version folders are named by hashes, not by config, so two configs whose ``outputs.data`` is one folder (or a copy of
one) would write into each other's folders and prune each other's current versions. The first refresh of a config
writes the folder's owner record, ``<data>/.t2ibench-owner.json`` (``{"config": name, "file": config path in the
workspace}``, the same record its store keeps); every later refresh and ``t2ibench gc`` of another config is refused
before any work, in one line. A copy of a data folder carries the record, so it stays its config's.

A data folder written before owners were recorded (no record, but version folders in it) is adopted only by a config
whose store already belongs to it — the config that made it; any other config is refused (nothing tells whose the
folders are). An empty or new folder is claimed by the first refresh.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from t2ibench.errors import InputError
from t2ibench.workspace import Workspace

OWNER_FILE = ".t2ibench-owner.json"


def owner_file(ws: Workspace) -> Path:
    """The data folder's owner record."""
    return ws.data / OWNER_FILE


def data_owner(ws: Workspace) -> dict[str, str] | None:
    """The config the data folder belongs to ({'config', 'file'}), None when it records none; a record that is not
    one (a link, a folder, other JSON) is refused in one line."""
    from t2ibench.io import read_text_file

    path = owner_file(ws)
    if not os.path.lexists(path):
        return None
    if path.is_symlink():
        raise InputError(f"{path}: the data folder's owner record is a symbolic link; t2ibench will not follow it")
    text = read_text_file(path, what="data folder owner record", max_bytes=64 * 1024)
    try:
        record = json.loads(text)
    except ValueError:
        record = None
    if not (isinstance(record, dict) and all(isinstance(record.get(k), str) for k in ("config", "file"))):
        raise InputError(f"{path}: the data folder's owner record is damaged ({text[:80]!r}); t2ibench will not use it")
    return {"config": record["config"], "file": record["file"]}


def holds_versions(ws: Workspace) -> bool:
    """Whether any version root of the data folder (images, results, embeddings) holds anything."""
    return any(root.is_dir() and any(root.iterdir()) for root in ws.version_roots())


def check_data_folder(ws: Workspace, config: str, config_file: str) -> bool:
    """Refuse (one line) a data folder that is not config ``config``'s (file ``config_file``); True when it already
    records this config as its owner, False when the config may claim it (new, empty, or made by this config before
    owners were recorded). Reads only."""
    owner = data_owner(ws)
    if owner is not None:
        if (owner["config"], owner["file"]) != (config, config_file):
            raise InputError(
                f"{ws.data}: this data folder belongs to config {owner['config']!r} ({owner['file']}; its "
                f"{OWNER_FILE}); config {config!r} ({config_file}) cannot write into it or prune it — give it its own "
                "outputs.data"
            )
        return True
    if holds_versions(ws) and not store_belongs(ws, config, config_file):
        raise InputError(
            f"{ws.data}: holds version folders but no owner record, and config {config!r} ({config_file}) has no "
            "store of its own that made them; t2ibench cannot tell whose they are — give the config its own "
            "outputs.data, or move those folders aside"
        )
    return False


def claim_data_folder(ws: Workspace, config: str, config_file: str) -> None:
    """``check_data_folder``, then record this config as the folder's owner if none is recorded (published with a
    hard link, so of two configs claiming one folder at once exactly one wins; the other is refused)."""
    if check_data_folder(ws, config, config_file):
        return
    ws.data.mkdir(parents=True, exist_ok=True)
    path = owner_file(ws)
    tmp = path.with_name(f"{OWNER_FILE}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"config": config, "file": config_file}) + "\n", encoding="utf-8")
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass  # another claim won the race: checked again below
    finally:
        tmp.unlink(missing_ok=True)
    check_data_folder(ws, config, config_file)


def store_belongs(ws: Workspace, config: str, config_file: str) -> bool:
    """Whether the workspace's store exists and belongs to this config (its owner record, or, for a store older than
    owner records, runs of this config only)."""
    from t2ibench.store import Store

    if not ws.store.is_file():
        return False
    store = Store(ws.store)
    owner = store.owner()
    if owner is not None:
        return owner == {"config": config, "file": config_file}
    configs = {r["config_name"] for r in store.rows("SELECT DISTINCT config_name FROM runs")}
    return configs == {config}
