"""Image generation into GenEval's folder layout, with a manifest that makes every image traceable and resumable.

Layout: ``<out>/<NNNNN>/metadata.jsonl`` (the prompt record), ``<out>/<NNNNN>/samples/<k:05>.png`` and optionally
``grid.png``, plus ``<out>/manifest.json`` (model id, revision, pipeline and scheduler classes and configs, every
sampling parameter, library versions, the smoke label) and ``<out>/samples.jsonl`` (one line per finished image:
prompt index, sample, seed, file and its SHA-256, the prompt and a SHA-256 of the whole prompt record it was made
for). A re-run with the same specification keeps an image only when its file matches the logged hash and it was
made for the record it is now asked for (lines of older versions, without the record digest, by the prompt text);
the rest are made again (a changed record with a note), and a different specification in the same folder is
refused. The log is append-only: the latest line for a (prompt, sample) is the one that counts.

Seeding. ``seeding="prompt"`` is GenEval's convention (its ``diffusers_generate.py`` calls
``seed_everything(seed)`` before every prompt): one ``torch.Generator`` seeded with ``seed`` per prompt, the
prompt's images drawn from it in order; a prompt is regenerated whole if any of its images is missing, so with
the default ``batch_size`` = images per prompt an interruption loses at most the batch in flight.
``seeding="sample"`` gives every image its own generator (seed derived from ``seed``, prompt and sample): an
image's noise no longer depends on its batch, and a resumed run regenerates only the batches (fixed windows of
``batch_size`` samples) that miss an image. Pixels can still differ in the last bit between *different* batch
sizes, because batched GEMMs round differently; the same specification reproduces bit for bit.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from t2ibench.errors import InputError, note
from t2ibench.hashing import file_sha256, record_sha256
from t2ibench.images import check_inside, inside
from t2ibench.io import PNG_COMPRESS_LEVEL, append_line, clean_stale_tmp, output_dir, write_text_atomic
from t2ibench.models._torch import loads_models, quiet_loading
from t2ibench.progress import progress
from t2ibench.specs import GeneratorConfig


def sample_seed(seed: int, prompt_index: int, sample: int) -> int:
    """Seed of one image under ``seeding="sample"``: a SeedSequence of (seed, prompt, sample)."""
    return int(np.random.SeedSequence((seed, prompt_index, sample)).generate_state(1)[0])


@dataclass(frozen=True)
class ImageRecord:
    """One generated (or imported) image: where it is, what it shows, how it was seeded, its content hash."""

    prompt_index: int
    sample: int
    path: Path
    seed: int | None
    sha256: str
    prompt: str
    record_sha256: str | None = None  # of the prompt record it was made for; None: logged by an older version


@dataclass(frozen=True)
class Resume:
    """What an output folder's log lets a run keep: the images complete for the records asked for, and the
    (prompt, sample) pairs whose intact image was made for another prompt record (to be made again)."""

    done: dict[tuple[int, int], ImageRecord]
    changed: tuple[tuple[int, int], ...] = ()

    def note(self, root: Path, doing: str, *, made: str = "made") -> None:
        """Tell the user (one line) how many images of which prompts are redone for a changed prompt record."""
        if not self.changed:
            return
        prompts = sorted({index for index, _ in self.changed})
        shown = ", ".join(str(i) for i in prompts[:10]) + (f" (+{len(prompts) - 10} more)" if len(prompts) > 10 else "")
        which = f"prompt{'s' if len(prompts) > 1 else ''} {shown}"
        note(f"{root}: {len(self.changed)} images were {made} for another prompt record ({which}); {doing} them again")


def _made_for(entry: Mapping[str, Any], record: Mapping[str, Any], digest: str) -> bool:
    """Whether a log line was written for ``record`` (whose ``record_sha256`` is ``digest``)."""
    logged = entry.get("record_sha256")
    if logged is None:  # a line from a version that logged only the prompt text: the text is all there is to compare
        return entry.get("prompt") == str(record["prompt"])
    return bool(logged == digest)


def _fingerprint(payload: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


@dataclass
class OutputFolder:
    """A GenEval-layout output folder with its manifest and append-only sample log."""

    root: Path
    identity: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def manifest_path(self) -> Path:
        """manifest.json: what made this folder."""
        return self.root / "manifest.json"

    @property
    def log_path(self) -> Path:
        """samples.jsonl: one line per finished image."""
        return self.root / "samples.jsonl"

    def open(self, *, overwrite: bool = False) -> None:
        """Create the folder, or check that an existing one was made by the same specification."""
        fingerprint = _fingerprint(self.identity)
        if self.manifest_path.exists():
            existing = json.loads(self.manifest_path.read_text())
            if existing.get("fingerprint") != fingerprint:
                if not overwrite:
                    changed = sorted(
                        k
                        for k in set(existing.get("identity", {})) | set(self.identity)
                        if existing.get("identity", {}).get(k) != self.identity.get(k)
                    )
                    raise InputError(
                        f"{self.root} holds images made differently (changed: {', '.join(changed)}); "
                        "use another folder or overwrite=True"
                    )
                self.log_path.unlink(missing_ok=True)
        output_dir(self.root)
        # temporary files of killed writers; shards of one model open the folder side by side, so only the
        # folder's own files of dead processes go here (a prompt's go when that prompt is written: write_metadata)
        clean_stale_tmp(self.root)
        manifest = {"fingerprint": fingerprint, "identity": self.identity, **self.extra}
        write_text_atomic(self.manifest_path, json.dumps(manifest, indent=2, sort_keys=True) + "\n")

    def completed(self, records: Mapping[int, Mapping[str, Any]] | None = None) -> dict[tuple[int, int], ImageRecord]:
        """Images whose file matches its latest logged hash and, for prompts in ``records``, made for that record."""
        return self.resume(records).done

    def resume(self, records: Mapping[int, Mapping[str, Any]] | None = None) -> Resume:
        """What a run asked for ``records`` (prompt index → record) can keep; see ``Resume``.

        Only the latest log line of each (prompt, sample) counts (the log is append-only; a torn or malformed line
        is ignored): its file must exist inside the folder and match its hash, and where ``records`` names the
        prompt, the line must have been written for that record (``record_sha256`` of its canonical JSON; a line of
        an older version without it, for the same prompt text). Prompts not in ``records`` are checked by hash only.
        """
        latest: dict[tuple[int, int], dict[str, Any]] = {}
        if self.log_path.exists():
            for line in self.log_path.read_text(encoding="utf-8").splitlines():
                try:
                    entry = json.loads(line)
                    key = (int(entry["prompt_index"]), int(entry["sample"]))
                    if not isinstance(entry["file"], str) or not isinstance(entry["sha256"], str):
                        continue
                except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                    continue
                latest[key] = entry
        wanted = dict(records or {})
        digests = {index: record_sha256(record) for index, record in wanted.items()}
        done: dict[tuple[int, int], ImageRecord] = {}
        changed: list[tuple[int, int]] = []
        for key, entry in latest.items():
            path = self.root / entry["file"]
            if not inside(path, self.root):
                continue  # a log line pointing outside the folder is never trusted
            if not (path.is_file() and file_sha256(path) == entry["sha256"]):
                continue  # half-written, altered or gone: made again
            if key[0] in wanted and not _made_for(entry, wanted[key[0]], digests[key[0]]):
                changed.append(key)
                continue
            done[key] = ImageRecord(
                key[0],
                key[1],
                path,
                entry.get("seed"),
                entry["sha256"],
                str(entry.get("prompt", "")),
                entry.get("record_sha256"),
            )
        return Resume(done=done, changed=tuple(sorted(changed)))

    def write_metadata(self, index: int, metadata: Mapping[str, Any]) -> Path:
        """<NNNNN>/metadata.jsonl with the prompt record (GenEval's layout)."""
        folder = self.root / f"{index:05d}"
        (folder / "samples").mkdir(parents=True, exist_ok=True)
        for stale in folder.glob("**/*.tmp"):  # a killed run's half-written image (one writer per prompt)
            stale.unlink(missing_ok=True)
        write_text_atomic(folder / "metadata.jsonl", json.dumps(dict(metadata)) + "\n")
        return folder

    def keep_metadata(self, index: int, metadata: Mapping[str, Any]) -> None:
        """Rewrite <NNNNN>/metadata.jsonl if it does not hold ``metadata`` (a prompt whose images are all kept)."""
        path = self.root / f"{index:05d}" / "metadata.jsonl"
        try:
            same = path.read_text(encoding="utf-8") == json.dumps(dict(metadata)) + "\n"
        except (OSError, UnicodeDecodeError):
            same = False
        if not same:
            self.write_metadata(index, metadata)

    def save(
        self, index: int, sample: int, image: Any, seed: int | None, record: Mapping[str, Any], *, log: bool = True
    ) -> ImageRecord:
        """Write one PNG made for prompt ``record`` atomically, then (unless ``log`` is False) log it with the
        record's digest: a logged image is always complete."""
        rel = Path(f"{index:05d}") / "samples" / f"{sample:05d}.png"
        path = self.root / rel
        tmp = path.with_name(path.name + ".tmp")
        image.save(tmp, format="PNG", compress_level=PNG_COMPRESS_LEVEL)
        os.replace(tmp, path)
        digest = file_sha256(path)
        prompt, made_for = str(record["prompt"]), record_sha256(record)
        saved = ImageRecord(index, sample, path, seed, digest, prompt, made_for)
        if not log:
            return saved
        entry = {
            "prompt_index": index,
            "sample": sample,
            "file": str(rel),
            "sha256": digest,
            "seed": seed,
            "prompt": prompt,
            "record_sha256": made_for,
        }
        append_line(self.log_path, json.dumps(entry))  # locked: shards of one model share the log
        return saved


def save_grid(images: Sequence[Any], path: Path, columns: int) -> None:
    """A simple contact sheet of same-sized PIL images."""
    from PIL import Image

    if not images:
        return
    w, h = images[0].size
    rows = -(-len(images) // columns)
    sheet = Image.new("RGB", (columns * w, rows * h))
    for i, im in enumerate(images):
        sheet.paste(im, ((i % columns) * w, (i // columns) * h))
    sheet.save(path, compress_level=PNG_COMPRESS_LEVEL)


class Generator(Protocol):
    """Makes (or imports) images for prompt records into a GenEval-layout folder (what ``GENERATORS`` builds)."""

    def describe(self) -> dict[str, Any]:
        """Provenance: model, revision, classes, parameters."""

    def generate(
        self, prompts: Sequence[tuple[int, Mapping[str, Any]]], out: str | Path, *, overwrite: bool = False
    ) -> list[ImageRecord]:
        """Images for (prompt index, record) pairs in ``out``; resumes what is already there."""

    @property
    def reimported(self) -> list[str]:
        """Source files the last ``generate`` imported again because they changed (only an importer has any)."""


class MakesImages:
    """Base of the generators that make their images: nothing is ever re-imported."""

    @property
    def reimported(self) -> list[str]:
        """Always empty: the images are made here, not imported."""
        return []


class DiffusersGenerator(MakesImages):
    """Any diffusers ``DiffusionPipeline`` (SD 1.x/2.x, SD-XL, …) by hub id or local path, DeepFloyd IF in two stages
    (``stage2``), or the built-in ``tiny-random`` smoke model ('tiny-random' or 'tiny-random:SEED')."""

    def __init__(self, spec: GeneratorConfig, *, device: str = "auto", show_progress: bool = True) -> None:
        self.spec = spec
        self.device_spec = device
        self.show_progress = show_progress
        self._pipes: tuple[Any, Any | None, Any] | None = None

    # -- loading --------------------------------------------------------------------------------------------------
    def _model_path(self) -> str:
        from t2ibench.models.tiny import ensure_tiny_random, parse_tiny

        seed = parse_tiny(self.spec.model)
        return self.spec.model if seed is None else str(ensure_tiny_random(seed))

    @loads_models
    def _load(self) -> tuple[Any, Any | None, Any]:
        if self._pipes is None:
            import diffusers
            import torch
            from diffusers import DiffusionPipeline

            from t2ibench.models._torch import resolve_device, resolve_dtype

            device = resolve_device(self.device_spec)
            dtype = resolve_dtype(self.spec.dtype, device)
            from t2ibench.models.hub import load_from

            resolved = {s.field: load_from(s, "generator") for s in self.spec.hub_sources()}  # before any load
            model = resolved.get("model")
            try:
                with quiet_loading():
                    pipe = DiffusionPipeline.from_pretrained(
                        self._model_path() if model is None else model.source,
                        revision=self.spec.revision,
                        dtype=dtype,
                        local_files_only=model is not None and model.local_files_only,
                    )
                    stage2 = None
                    if "stage2" in resolved:
                        stage2 = DiffusionPipeline.from_pretrained(
                            resolved["stage2"].source,
                            revision=self.spec.revision,
                            text_encoder=None,
                            dtype=dtype,
                            local_files_only=resolved["stage2"].local_files_only,
                        )
            except (OSError, ValueError) as exc:
                raise InputError(
                    f"cannot load pipeline {self.spec.model!r}: {exc}. Offline? Pass a local directory "
                    "(DiffusionPipeline.save_pretrained) or use model 'tiny-random' for a smoke run."
                ) from None
            if self.spec.scheduler:
                cls = getattr(diffusers, self.spec.scheduler, None)
                if cls is None:
                    raise InputError(f"unknown diffusers scheduler {self.spec.scheduler!r}")
                pipe.scheduler = cls.from_config(pipe.scheduler.config)
            for p in (pipe, stage2):
                if p is not None:
                    p.set_progress_bar_config(disable=True)
                    p.to(device)
            torch.set_grad_enabled(False)
            self._pipes = (pipe, stage2, device)
        return self._pipes

    def describe(self) -> dict[str, Any]:
        """Model, revision, pipeline/scheduler classes and configs, library versions, smoke flag."""
        import diffusers
        import torch

        pipe, stage2, device = self._load()
        return {
            "backend": "diffusers",
            "model": self.spec.model,
            "revision": self.spec.revision,
            "resolved_path": str(self._model_path()),
            "pipeline": type(pipe).__name__,
            "stage2_pipeline": type(stage2).__name__ if stage2 is not None else None,
            "scheduler": type(pipe.scheduler).__name__,
            "scheduler_config": {k: v for k, v in dict(pipe.scheduler.config).items() if not k.startswith("_")},
            "device": str(device),
            "versions": {"diffusers": diffusers.__version__, "torch": torch.__version__},
            "smoke": self.spec.smoke,
        }

    # -- generation ---------------------------------------------------------------------------------------------
    def _run(self, prompt: str, generators: list[Any]) -> list[Any]:
        pipe, stage2, _ = self._load()
        common = {
            "num_inference_steps": self.spec.steps,
            "guidance_scale": self.spec.guidance,
            "num_images_per_prompt": len(generators),
            "generator": generators if len(generators) > 1 else generators[0],
        }
        if stage2 is None:
            return list(
                pipe(
                    prompt,
                    height=self.spec.height,
                    width=self.spec.width,
                    negative_prompt=self.spec.negative_prompt,
                    **common,
                ).images
            )
        embeds, negative = pipe.encode_prompt(prompt, negative_prompt=self.spec.negative_prompt)
        low = pipe(prompt_embeds=embeds, negative_prompt_embeds=negative, output_type="pt", **common).images
        return list(
            stage2(image=low, prompt_embeds=embeds, negative_prompt_embeds=negative, output_type="pil", **common).images
        )

    def _generators(self, seeds: Sequence[int]) -> list[Any]:
        import torch

        return [torch.Generator(device="cpu").manual_seed(int(s)) for s in seeds]

    def generate(
        self, prompts: Sequence[tuple[int, Mapping[str, Any]]], out: str | Path, *, overwrite: bool = False
    ) -> list[ImageRecord]:
        """Generate missing images for each (index, record); returns all images of those prompts in order."""
        import torch

        folder = OutputFolder(Path(out), identity={"spec": self.spec.sampling()}, extra={"generator": self.describe()})
        folder.open(overwrite=overwrite)
        resume = folder.resume(dict(prompts))  # an image made for another prompt record is made again
        resume.note(folder.root, "generating")
        done = resume.done
        n = self.spec.images_per_prompt
        with progress(
            len(prompts) * n, "generate", enabled=self.show_progress, unit="img"
        ) as bar:  # closed before an interruption's message
            records: list[ImageRecord] = []
            for index, metadata in prompts:
                prompt = str(metadata["prompt"])
                have = [k for k in range(n) if (index, k) in done]
                if len(have) == n:
                    folder.keep_metadata(index, metadata)  # e.g. kept by an old log line's prompt text
                    records += [done[(index, k)] for k in range(n)]
                    bar.update(n)
                    continue
                folder.write_metadata(index, metadata)
                images: dict[int, Any] = {}
                if self.spec.seeding == "sample":
                    # fixed windows of batch_size samples: a resumed window has the same composition as in an
                    # uninterrupted run, so even batch-dependent float rounding reproduces bit for bit
                    for start in range(0, n, self.spec.effective_batch_size):
                        window = list(range(start, min(start + self.spec.effective_batch_size, n)))
                        missing = [k for k in window if (index, k) not in done]
                        if not missing:
                            bar.update(len(window))
                            continue
                        seeds = [sample_seed(self.spec.seed, index, k) for k in window]
                        for k, seed, image in zip(
                            window, seeds, self._run(prompt, self._generators(seeds)), strict=True
                        ):
                            if k in missing:
                                done[(index, k)] = folder.save(index, k, image, seed, metadata)
                            images[k] = image
                        bar.update(len(window))
                else:  # one generator per prompt, drawn in order: the prompt is the unit of resume
                    generator = torch.Generator(device="cpu").manual_seed(self.spec.seed)
                    for start in range(0, n, self.spec.effective_batch_size):
                        batch = list(range(start, min(start + self.spec.effective_batch_size, n)))
                        out_images = self._run(prompt, [generator] * len(batch))
                        for k, image in zip(batch, out_images, strict=True):
                            done[(index, k)] = folder.save(index, k, image, self.spec.seed, metadata)
                            images[k] = image
                        bar.update(len(batch))
                if self.spec.grid and images:
                    from PIL import Image

                    grid_images = [images.get(k) or Image.open(done[(index, k)].path) for k in range(n)]
                    save_grid(grid_images, folder.root / f"{index:05d}" / "grid.png", columns=min(n, 4))
                records += [done[(index, k)] for k in range(n)]
        return records


class FolderImporter:
    """Import images made elsewhere, in GenEval's layout, into an output folder with a manifest (no generation).

    Each source prompt folder's metadata must equal the suite's record for that index; images are copied and
    hashed, so the imported folder is traceable and resumable like a generated one. (``link=True`` hard-links
    instead, saving disk, but then overwriting a source image in place also changes the imported copy: the next
    import notices the hash change and re-imports it, yet results stored meanwhile describe the old pixels.)
    """

    def __init__(
        self, source: str | Path, *, label: str = "", link: bool = False, images_per_prompt: int | None = None
    ) -> None:
        self.source = Path(source)
        self.label = label or self.source.name
        self.link = link
        self.images_per_prompt = images_per_prompt  # when given, every prompt must have exactly this many
        self.reimported: list[str] = []  # source files re-imported by the last generate() because they changed

    def describe(self) -> dict[str, Any]:
        """Where the images came from."""
        return {"backend": "folder", "source": str(self.source.resolve()), "label": self.label, "smoke": False}

    def generate(
        self, prompts: Sequence[tuple[int, Mapping[str, Any]]], out: str | Path, *, overwrite: bool = False
    ) -> list[ImageRecord]:
        """Copy each prompt's images from the source folder; missing or mismatched prompts are errors.

        Resuming re-imports any image whose source file changed since it was imported (its SHA-256 is logged),
        so a re-import after the source was regenerated never keeps stale copies, and any image imported for
        another prompt record (the record's digest is logged; see ``OutputFolder.resume``), with a note.
        """
        import shutil

        from t2ibench.images import load_rgb
        from t2ibench.paths import check_within, file_key, frame_count, regular_file, shown
        from t2ibench.suites.layout import IMAGE_SUFFIXES, read_metadata

        if not self.source.is_dir():
            raise InputError(f"{self.source}: not a directory")
        target = Path(out).resolve()
        source = self.source.resolve()
        if target == source or source in target.parents or target in source.parents:
            raise InputError(
                f"{out}: the import target must lie outside the source folder {self.source} (and not hold it)"
            )
        folder = OutputFolder(Path(out), identity={"import": str(self.source.resolve())}, extra=self.describe())
        folder.open(overwrite=overwrite)
        resume = folder.resume(dict(prompts))  # an image imported for another prompt record is imported again
        resume.note(folder.root, "importing", made="imported")
        done, changed = resume.done, set(resume.changed)
        sources = _logged_sources(folder.log_path)
        imported: dict[tuple[int, int], Path] = {}  # (st_dev, st_ino) of each source image → its first path
        self.reimported = []
        records: list[ImageRecord] = []
        for index, metadata in prompts:
            src = self.source / f"{index:05d}"
            meta_file = src / "metadata.jsonl"
            if not meta_file.exists():
                raise InputError(f"{src}: missing (prompt {index} {metadata.get('prompt')!r} has no images to import)")
            check_within(meta_file, self.source, what="metadata file")
            theirs = read_metadata(regular_file(meta_file, what="metadata file"))
            if json.dumps(theirs, sort_keys=True) != json.dumps(dict(metadata), sort_keys=True):
                raise InputError(f"{meta_file}: metadata disagrees with the suite's prompt {index}")
            files = [
                check_inside(p, self.source)
                for p in sorted((src / "samples").glob("*"))
                if p.suffix.lower() in IMAGE_SUFFIXES
            ]
            if not files:
                raise InputError(f"{src}/samples: no images")
            if self.images_per_prompt is not None and len(files) != self.images_per_prompt:
                raise InputError(
                    f"{src}/samples: {len(files)} images, expected {self.images_per_prompt} per prompt "
                    "(images_per_prompt)"
                )
            stems: dict[str, str] = {}
            for file in files:
                regular_file(file, what="image")  # a FIFO or a folder named x.png is never opened
                key = file_key(file)
                if key is not None and key in imported:
                    raise InputError(f"{shown(file)}: the same file as {shown(imported[key])} (a link); import copies")
                if key is not None:
                    imported[key] = file
                frames = frame_count(file)
                if frames > 1:
                    raise InputError(f"{shown(file)}: holds {frames} frames (an animated or multi-page image)")
                if file.stem.lower() in stems:
                    both = f"{stems[file.stem.lower()]}, {file.name}"
                    raise InputError(f"{src}/samples: one sample in several files ({both}); keep one")
                stems[file.stem.lower()] = file.name
            folder.write_metadata(index, metadata)
            for k, file in enumerate(files):
                digest_src = file_sha256(file)
                if (index, k) in done and sources.get((index, k)) == (str(file), digest_src):
                    records.append(done[(index, k)])
                    continue
                if (index, k) in sources and (
                    (index, k) not in changed or sources[(index, k)] != (str(file), digest_src)
                ):
                    # imported before, but the source or the copy changed since (a changed record alone is noted)
                    self.reimported.append(str(file))
                image, note = load_rgb(file)  # refuses unreadable files, names them
                if file.suffix.lower() == ".png" and note is None:
                    target = folder.root / f"{index:05d}" / "samples" / f"{k:05d}.png"
                    tmp = target.with_name(target.name + ".tmp")
                    tmp.unlink(missing_ok=True)
                    try:
                        if not self.link:
                            raise OSError
                        os.link(file, tmp)
                    except OSError:
                        shutil.copyfile(file, tmp)
                    os.replace(tmp, target)
                    digest = file_sha256(target)
                    rel = target.relative_to(folder.root)
                    made_for = record_sha256(metadata)
                    record = ImageRecord(index, k, target, None, digest, str(metadata["prompt"]), made_for)
                    entry: dict[str, Any] = {"file": str(rel), "sha256": digest}
                else:  # other formats and non-RGB PNGs are stored as the RGB image every evaluator sees
                    record = folder.save(index, k, image, None, metadata, log=False)
                    entry = {"file": str(record.path.relative_to(folder.root)), "sha256": record.sha256}
                entry |= {
                    "prompt_index": index,
                    "sample": k,
                    "seed": None,
                    "prompt": metadata["prompt"],
                    "record_sha256": record.record_sha256,
                    "source_file": str(file),
                    "source_sha256": digest_src,
                }
                append_line(folder.log_path, json.dumps(entry), sync=False)
                done[(index, k)] = record
                records.append(record)
        return records


def _logged_sources(log: Path) -> dict[tuple[int, int], tuple[str, str]]:
    """(prompt, sample) → (source file, its SHA-256) as last logged by an import (torn lines ignored)."""
    out: dict[tuple[int, int], tuple[str, str]] = {}
    if not log.exists():
        return out
    for line in log.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
            out[(int(entry["prompt_index"]), int(entry["sample"]))] = (entry["source_file"], entry["source_sha256"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            continue
    return out
