"""What every stored benchmark's report section shares (GenEval 2, T2I-CompBench++, ...): its stored evaluations
grouped by protocol with a letter each, where each came from, its drill-down page's name, where its images are, and
their gallery of thumbnails linked to a larger view. Renders stored rows; computes no score."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any


def stored_json(value: Any) -> dict[str, Any]:
    """A stored JSON object as a dict ({} for none or anything else)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return dict(value) if isinstance(value, dict) else {}


def versions(
    scores: Sequence[Mapping[str, Any]],
    details: Sequence[str],
    rank: Callable[[dict[str, Any]], float],
) -> list[dict[str, Any]]:
    """A benchmark's stored evaluations (model, images' and protocol's hashes) from its ``<name>_scores`` rows: each
    with its protocol's ``details`` columns, where it came from (``source``, ``provenance``) and its cells by
    (table, key); a letter per distinct protocol_key (``protocol``), ordered by protocol, then ``rank`` (lowest
    first), then model."""
    found: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in scores:
        key = (row["model"], row["model_hash"], row["evaluator_hash"])
        version = found.setdefault(
            key,
            {
                "model": row["model"],
                "model_hash": row["model_hash"],
                "evaluator_hash": row["evaluator_hash"],
                "protocol_key": row["protocol_key"],
                **{column: row[column] for column in details},
                "source": row.get("source", "refresh"),
                "provenance": stored_json(row.get("provenance")),
                "cells": {},
            },
        )
        version["cells"][(row["table_name"], row["key"])] = row
    letters: dict[str, str] = {}
    for v in found.values():
        letters.setdefault(str(v["protocol_key"]), chr(ord("A") + len(letters)))
        v["protocol"] = letters[str(v["protocol_key"])]
    return sorted(found.values(), key=lambda v: (v["protocol"], rank(v), v["model"]))


PAIRED_NOTE = (
    "≈ marks a model that a paired test on the prompts both share does not separate from the next model of its "
    "protocol (paired randomization test, Holm-adjusted over the run's comparisons: the leaderboard's method)."
)


def paired_marks(found: Sequence[Mapping[str, Any]], comparisons: Sequence[Mapping[str, Any]],
                 benchmark: str) -> dict[tuple[str, str, str], str]:  # fmt: skip
    """Version key → '≈' for the current evaluations of ``benchmark`` (``versions``' order) that the stored paired
    tests (``paired_comparisons`` of kind 'pair') do not separate from the next compared one of their protocol; ''
    for the other compared ones. Versions no paired test compared are absent."""

    def key(model: Any, model_hash: Any, evaluator_hash: Any) -> tuple[str, str, str]:
        return str(model), str(model_hash), str(evaluator_hash)

    tested = {
        frozenset((key(r["model"], r["model_hash"], r["evaluator_hash"]),
                   key(r["other"], r["other_model_hash"], r["other_evaluator_hash"]))): bool(r["flagged"])
        for r in comparisons
        if r["kind"] == "pair" and r["benchmark"] == benchmark and r["p_value"] is not None
    }  # fmt: skip
    compared = {k for pair in tested for k in pair}
    members = [v for v in found if key(v["model"], v["model_hash"], v["evaluator_hash"]) in compared]
    marks = {key(v["model"], v["model_hash"], v["evaluator_hash"]): "" for v in members}
    for a, b in itertools.pairwise(members):
        pair = frozenset((key(a["model"], a["model_hash"], a["evaluator_hash"]),
                          key(b["model"], b["model_hash"], b["evaluator_hash"])))  # fmt: skip
        if a["protocol"] == b["protocol"] and pair in tested and not tested[pair]:
            for k in pair:
                marks[k] = "≈"
    return marks


def paired_mark(marks: Mapping[tuple[str, str, str], str], version: Mapping[str, Any]) -> str:
    """An evaluation's mark in ``paired_marks`` ('' when none)."""
    return marks.get((str(version["model"]), str(version["model_hash"]), str(version["evaluator_hash"])), "")


def protocol_flag(found: Sequence[Mapping[str, Any]], label: str, what: str) -> str:
    """A sentence when ``label``'s evaluations were measured under more than one protocol ('' when one); ``what``
    says what makes its protocol."""
    groups = {v["protocol"] for v in found}
    if len(groups) < 2:
        return ""
    return (
        f"These {label} evaluations were measured under {len(groups)} protocols (column 'protocol': {what}); rows "
        "are ordered only within one protocol and are not comparable across them."
    )


def coverage(
    suite_sha256: str | None, prompts: int | None, *, release_sha256: str, release_prompts: int, other: str
) -> list[str]:
    """What a number was measured on when it is not the whole released suite (``release_sha256``, of
    ``release_prompts`` prompts): ``other`` for another suite file, 'suite not recorded' for none, else 'N of M
    prompts' for a subset; [] for the whole release."""
    if suite_sha256 != release_sha256:
        return [other if suite_sha256 else "suite not recorded"]
    if prompts is not None and prompts < release_prompts:
        return [f"{prompts} of {release_prompts} prompts"]
    return []


def origin(version: Mapping[str, Any], labels: Sequence[str]) -> str:
    """Where an evaluation's images came from, with its coverage ``labels`` ('8 of 800 prompts'): 'refresh' for a
    refresh's own, else who stored it, from which images (their identity), and the prompts judged."""
    if version.get("source") != "stored":
        return "; ".join(["refresh", *labels])
    record = version.get("provenance") or {}
    images = record.get("images")
    who = "stored by `t2ibench evaluate` " + (f"from {images}" if images else "(origin not recorded)")
    parts = [who, f"images {str(version['model_hash'])[:12]}"]
    if record.get("prompts_judged") is not None and record.get("suite_prompts") is not None:
        parts.append(f"{record['prompts_judged']} of {record['suite_prompts']} prompts of its suite")
    return "; ".join(parts + [label for label in labels if "prompts" not in label])


def evaluation_cells(version: Mapping[str, Any], page: str, keys: Sequence[tuple[str, str]]) -> list[Any]:
    """An evaluation's first cells in its benchmark's section: the model linked to its drill-down ``page``, its
    protocol letter, then each (table, key) cell's estimate with its interval (empty where it has none)."""
    from t2ibench.report.site import Cell, esc

    cells = [Cell(f'<a href="{esc(page)}">{esc(version["model"])}</a>', str(version["model"]), "text"),
             Cell.text(version["protocol"])]  # fmt: skip
    for key in keys:
        c = version["cells"].get(key)
        cells.append(Cell.number(None) if c is None else Cell.number(c["estimate"], low=c["ci_low"], high=c["ci_high"]))
    return cells


def score_text(row: Mapping[str, Any] | None) -> str:
    """'83.41 [81.02, 85.60]': a stored cell's estimate and interval, two decimals ('—' for none)."""
    if row is None:
        return "—"
    if row["ci_low"] is None or row["ci_high"] is None:
        return f"{row['estimate']:.2f}"
    return f"{row['estimate']:.2f} [{row['ci_low']:.2f}, {row['ci_high']:.2f}]"


def page_name(benchmark: str, version: Mapping[str, Any]) -> str:
    """The drill-down page of one evaluation: <benchmark>/<model>-<images>-<protocol>.html (hashes shortened)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in str(version["model"]))
    return f"{benchmark}/{safe}-{str(version['model_hash'])[:10]}-{str(version['evaluator_hash'])[:10]}.html"


def image_file(version: Mapping[str, Any], name: str, root: Path | None) -> Path:
    """Where a judged image is: its stored name, relative to the folder a stored evaluation named its images from
    (``provenance.names_from``) or, for a refresh's, to the workspace ``root`` (None: as stored)."""
    path = Path(name)
    if path.is_absolute():
        return path
    base = (version.get("provenance") or {}).get("names_from") if version.get("source") == "stored" else root
    return Path(base) / path if base else path


def gallery(
    benchmark: str, version: Mapping[str, Any], images: Sequence[Mapping[str, Any]], out: Path, root: Path | None
) -> tuple[str, dict[tuple[int, str], str]]:
    """An evaluation's images (rows with prompt_index, sample, image, prompt; one per image) as thumbnails linked to
    a larger view, drawn under ``out``/<benchmark>/thumbs|views; returns the section's HTML and (prompt, sample) →
    the view's href (relative to the page). A missing image file is said, not skipped."""
    from t2ibench.errors import InputError
    from t2ibench.report import thumbs
    from t2ibench.report.pages import THUMB, VIEW, href
    from t2ibench.report.site import esc

    stem = Path(page_name(benchmark, version)).stem
    figures, views = [], {}
    for a in {(a["prompt_index"], a["sample"]): a for a in images}.values():
        key = (int(a["prompt_index"]), str(a["sample"]))
        name = f"p{key[0]:05d}_s{key[1]}.jpg"
        file = image_file(version, str(a["image"]), root)
        caption = f"prompt {key[0]}, sample {key[1]}"
        try:
            if not file.is_file():
                raise InputError(f"{file}: not there")
            thumbs.render(file, [], out / benchmark / "thumbs" / stem / name, size=THUMB, labels=False)
            thumbs.render(file, [], out / benchmark / "views" / stem / name, size=VIEW, labels=False)
        except InputError:
            missing = f'<span class="label">image file missing: {esc(str(file))}</span>'
            figures.append(f"<figure>{missing}<figcaption>{esc(caption)}</figcaption></figure>")
            continue
        thumb, view = href("thumbs", stem, name), href("views", stem, name)
        views[key] = view
        img = (
            f'<img src="{esc(thumb)}" alt="{esc(str(a["prompt"]))}" title="{esc(str(a["prompt"]))}" loading="lazy" '
            f'width="{THUMB}" height="{THUMB}" style="object-fit: contain">'
        )
        figures.append(f'<figure><a href="{esc(view)}">{img}</a><figcaption>{esc(caption)}</figcaption></figure>')
    return '<h2>Images</h2><div class="gallery">' + "".join(figures) + "</div>", views


def write_page(out: Path, name: str, title: str, body: str, *, banners: Sequence[str], footer: str) -> str:
    """Write one drill-down page ``out``/``name`` (one folder below the report) atomically; returns its path."""
    from t2ibench.io import write_text_atomic
    from t2ibench.report.site import page

    path = out / name
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, page(title, body, root="../", banners=banners, footer=footer))
    return str(path)
