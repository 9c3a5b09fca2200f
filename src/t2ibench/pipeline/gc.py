"""``t2ibench gc``: remove the files of versions a config no longer makes, so its data folder holds what its
leaderboard shows (and what DVC tracks: the current versions only).

gc removes only what it can attribute to the config: the data folder must be the config's
(``pipeline/ownership.py``: another config's folder, or a copy of it, is refused in one line), and a version folder
is removed only when the config's own store records it — a folder a refresh of the config planned
(``output_folders``), or the images folder of a version it stored before folders were recorded. A config with no
store removes nothing; a folder the store does not record is left alone and listed, whoever made it.

The versions to keep are the ones the config's plan writes now (``Plan.outputs``: each model's images, GenEval
results and embeddings folders, named by their version hashes) and, inside them, the current FKEA states and GenEval
shard files. Everything else attributable under ``<data>/images|results|embeddings/<model>/`` of the config's own
models is stale: an older model or evaluator version. Folders of models the config does not name are left alone, and
so is anything that is not a plain folder or file inside the data folder (a version folder that is a symlink is
removed as a link, never followed; a symlinked version root or model folder is refused). A model whose version on
the leaderboard is not yet the one the config makes keeps all its folders. Stored rows are never touched: the store
keeps the history, the report shows the current versions.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from t2ibench.benchmarks import SPINE
from t2ibench.config import Config
from t2ibench.errors import InputError
from t2ibench.pipeline.plan import Plan, plan_refresh
from t2ibench.pipeline.steps import select_prompts
from t2ibench.store import describe_owner as describe
from t2ibench.workspace import Workspace


@dataclass(frozen=True)
class Garbage:
    """What ``gc`` found: stale paths with their sizes in bytes, the kept version folders, model folders left
    alone because the config does not name their model, the config's models left alone (with why) because the
    leaderboard shows another version of them than the config makes now (a refresh has not made it yet), paths left
    alone because the config's store does not record them as its own, and whether the config has a store at all."""

    stale: tuple[tuple[Path, int], ...]
    kept: tuple[Path, ...]
    foreign: tuple[Path, ...]
    held: tuple[tuple[str, str], ...] = ()
    unattributed: tuple[Path, ...] = ()
    has_store: bool = True

    @property
    def size(self) -> int:
        """Bytes the stale paths hold."""
        return sum(size for _, size in self.stale)


def _size(path: Path) -> int:
    if path.is_symlink() or path.is_file():
        return path.lstat().st_size
    total = 0
    for root, _dirs, files in os.walk(path, followlinks=False):
        for name in files:
            with contextlib.suppress(OSError):
                total += (Path(root) / name).lstat().st_size
    return total


def _current_files(plan: Plan) -> set[Path]:
    """The FKEA state and the spine benchmark's shard files the plan writes (kept inside a kept version folder)."""
    files = set()
    for model in plan.models:
        for call in model.calls:
            out = call.params.get("out")
            if isinstance(out, Path) and call.step in ("fkea-shard", SPINE):
                files.add(out)
    return files


def shown_versions(ws: Workspace) -> dict[str, tuple[str, str]]:
    """Model → (model_hash, evaluator_hash) of the versions the store's leaderboard shows now (none: no store)."""
    from t2ibench.store import Store

    if not ws.store.is_file():
        return {}
    rows = Store(ws.store).rows("SELECT model, model_hash, evaluator_hash FROM current_models")
    return {r["model"]: (r["model_hash"], r["evaluator_hash"]) for r in rows}


def _refuse_links(ws: Workspace) -> None:
    """gc decides by paths: a version root or model folder that is a symlink is refused, never followed."""
    for root in ws.version_roots():
        if root.is_symlink():
            raise InputError(f"{root}: is a symlink; t2ibench gc does not follow links (prune it by hand)")
        if root.is_dir():
            for model_dir in root.iterdir():
                if model_dir.is_symlink():
                    raise InputError(f"{model_dir}: is a symlink; t2ibench gc does not follow links (prune it by hand)")


def attributed_folders(ws: Workspace) -> set[Path]:
    """The version folders the config's store records as its own (absolute, under the data folder): those its
    refreshes planned, and the images folders of versions stored before folders were recorded."""
    from t2ibench.store import Store

    store = Store(ws.store)
    data = ws.data.resolve()
    found = {data / folder for folder in store.recorded_folders()}
    for model, model_hash, image in store.stored_image_paths():
        folder = Path(image).parents[2] if len(Path(image).parents) > 2 else None  # <version>/<prompt>/samples/<img>
        if folder is not None and folder.name == model_hash and folder.parent.name == model:
            with contextlib.suppress(OSError, ValueError):
                resolved = folder.parent.resolve() / folder.name
                if resolved.parent.parent == data / "images":
                    found.add(resolved)
    return found


def find_garbage(config: Config, ws: Workspace, config_file: str) -> Garbage:
    """The stale version folders and files of ``config``'s models in ``ws`` that its store records as its own
    (nothing is removed). A model whose version on the leaderboard is not the one the config makes now keeps every
    folder (the shown one among them); a data folder of another config is refused."""
    from t2ibench.pipeline.ownership import check_data_folder

    _refuse_links(ws)
    check_data_folder(ws, config.name, config_file)
    plan = plan_refresh(config, ws, select_prompts(config.spine_prompts), "gc")
    if not ws.store.is_file():
        every = tuple(p for root in ws.version_roots() if root.is_dir() for p in sorted(root.iterdir()))
        return Garbage(stale=(), kept=tuple(sorted(plan.outputs)), foreign=(), unattributed=every, has_store=False)
    _refuse_other_store(ws, config.name, config_file)
    shown = shown_versions(ws)
    held = tuple(
        (m.model.name, "the leaderboard shows another version (run the refresh first)")
        for m in plan.models
        if m.model.name in shown and shown[m.model.name] != (m.model_hash, m.evaluator_hash)
    )
    kept = set(plan.outputs)
    current = _current_files(plan)
    ours = attributed_folders(ws)
    data = ws.data.resolve()
    names = {m.name for m in config.models} - {name for name, _ in held}
    stale: list[tuple[Path, int]] = []
    foreign: list[Path] = []
    unattributed: list[Path] = []
    for root in ws.version_roots():
        if not root.is_dir():
            continue
        for model_dir in sorted(root.iterdir()):
            if model_dir.name not in names:
                if model_dir.name not in {name for name, _ in held}:
                    foreign.append(model_dir)
                continue
            if not model_dir.is_dir():
                unattributed.append(model_dir)
                continue
            for version in sorted(model_dir.iterdir()):
                own = data / root.name / model_dir.name / version.name in ours
                if not own:
                    unattributed.append(version)
                    continue
                if version not in kept:
                    stale.append((version, _size(version)))
                    continue
                for inner in sorted(version.iterdir()):  # inside a kept folder: other FKEA states, shard files
                    if not (inner.name.startswith("fkea-") or inner.name == "shards"):
                        continue
                    if inner.is_symlink() or not inner.is_dir() or not any(f.parent == inner for f in current):
                        stale.append((inner, _size(inner)))  # a whole folder of another version's files
                        continue
                    stale += [(item, _size(item)) for item in sorted(inner.iterdir()) if item not in current]
    return Garbage(
        stale=tuple(stale),
        kept=tuple(sorted(kept)),
        foreign=tuple(foreign),
        held=held,
        unattributed=tuple(unattributed),
    )


def _refuse_other_store(ws: Workspace, config: str, config_file: str) -> None:
    """gc prunes by what the store records: a store that is not this config's is refused."""
    from t2ibench.pipeline.ownership import store_belongs
    from t2ibench.store import Store

    if not store_belongs(ws, config, config_file):
        owner = Store(ws.store).owner()
        whose = "" if owner is None else f" (it {describe(owner)})"
        raise InputError(
            f"{ws.store}: not config {config!r}'s store{whose}; t2ibench gc removes only what the config's own "
            "store records"
        )


def remove(garbage: Garbage, ws: Workspace) -> int:
    """Remove the stale paths (symlinks as links, never their targets); returns the bytes freed."""
    data = ws.data.resolve()
    for path, _ in garbage.stale:  # every path is checked before anything is removed
        parent = path.parent.resolve()
        if parent != data and data not in parent.parents:
            raise InputError(f"{path}: outside the data folder {data}; nothing was removed")
    freed = 0
    for path, size in garbage.stale:
        if path.is_symlink() or path.is_file():
            path.unlink(missing_ok=True)
        elif path.is_dir():
            shutil.rmtree(path)
        freed += size
    for root in ws.version_roots():  # folders emptied by the removal
        if root.is_dir():
            for model_dir in root.iterdir():
                for inner in list(model_dir.glob("*/fkea-*")) + list(model_dir.glob("*/shards")):
                    if inner.is_dir() and not inner.is_symlink() and not any(inner.iterdir()):
                        inner.rmdir()
    return freed
