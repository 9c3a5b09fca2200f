"""Bad-input corpus, round three: resource bombs (quadratic paths and inflate-before-check files estimated
before they allocate) and annotation rows that leave a statistic."""

from __future__ import annotations

import contextlib
import csv
import functools
import io
import os
import warnings
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tests.corpus import case

__all__: list[str] = []

HEADER = [
    "HITId",
    "WorkerId",
    "Answer.ee",
    "Input.prompt_id",
    "Input.image_id",
    "Input.image_url",
    "Input.caption",
    "Answer.task-count-0",
    "Answer.task-count-1",
    "Answer.task-color-0",
    "Answer.task-color-1",
    "Answer.task-objects",
    "Answer.task-position-x",
    "Answer.task-position-y",
]


@functools.cache
def _suite() -> list[dict[str, Any]]:
    from t2ibench.benchmarks.geneval.suite import generate_suite

    return generate_suite()


def _row(worker: int, image: str = "0", *, count: str = "1", color: str = "", source: str = "toy") -> list[str]:
    """One annotator's answers about image ``image`` of the official suite's prompt 0 (single object)."""
    caption = _suite()[0]["prompt"]
    url = f"https://x/images/{source}/00000/samples/{image}.png"
    values = {
        "HITId": "H",
        "WorkerId": f"W{worker}",
        "Answer.ee": f"{worker}.00",
        "Input.prompt_id": "0",
        "Input.image_id": image,
        "Input.image_url": url,
        "Input.caption": caption,
        "Answer.task-count-0": count,
        "Answer.task-color-0": color,
        "Answer.task-objects": "x",
    }
    return [values.get(h, "") for h in HEADER]


def _csv(path: Path, rows: Sequence[Sequence[str]], extra: str = "") -> Path:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(HEADER)
    writer.writerows(rows)
    path.write_text(buf.getvalue() + extra)
    return path


def _load(path: Path) -> str:
    """The loading report of one annotation file (as ``t2ibench agreement`` prints it)."""
    from t2ibench.benchmarks.geneval.suite_annotations import load_annotations

    return load_annotations(path, _suite())[1].summary()


def _cli(argv: Sequence[str | Path]) -> str:
    """``t2ibench ARGV`` as a user runs it: 'exit N', stderr and stdout."""
    from t2ibench.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([str(a) for a in argv])
    return f"exit {status}\n{err.getvalue()}\n{out.getvalue()}"


@contextlib.contextmanager
def _memory_limit(text: str) -> Iterator[None]:
    old = os.environ.get("T2IBENCH_MEMORY_LIMIT")
    os.environ["T2IBENCH_MEMORY_LIMIT"] = text
    try:
        yield
    finally:
        if old is None:
            del os.environ["T2IBENCH_MEMORY_LIMIT"]
        else:
            os.environ["T2IBENCH_MEMORY_LIMIT"] = old


def _npy(header: dict[str, Any], data: bytes = b"") -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, header)
    return buf.getvalue() + data


def _array(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, array)
    return buf.getvalue()


def _zip(path: Path, members: Sequence[tuple[str, bytes]]) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about a name written twice: that is the point
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, data in members:
                archive.writestr(name, data)
    return path


def _deflated_zeros(
    path: Path, name: str, descr: str, shape: tuple[int, ...], others: Sequence[tuple[str, bytes]] = ()
):
    """An .npz whose array ``name`` is all zeros, streamed into the zip (kilobytes on disk, megabytes inflated)."""
    size = int(np.prod(shape)) * np.dtype(descr).itemsize
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for other, data in others:
            archive.writestr(other, data)
        with archive.open(name + ".npy", "w", force_zip64=True) as fh:
            np.lib.format.write_array_header_1_0(fh, {"descr": descr, "fortran_order": False, "shape": shape})
            for start in range(0, size, 2**20):
                fh.write(bytes(min(2**20, size - start)))
    return path


# -- quadratic paths ------------------------------------------------------------------------------------------


@case(
    "bomb-agreement-one-image",
    "one image with 20 000 annotations (`agreement`)",
    "agreement from per-image vote counts, no annotator pair built",
    r"\| toy \| all \| 1 \| 20000 \| 0 \| 50\.0",
)
def _(tmp: Path) -> str:
    rows = [_row(w, count="1" if w % 2 else "0") for w in range(20_000)]
    return _cli(["agreement", "--annotations", _csv(tmp / "annotations_toy.csv", rows), "--resamples", "20"])


@case(
    "bomb-bootstrap-memory",
    "`agreement --resamples` whose bootstrap exceeds the memory limit",
    "refused before allocating, with the estimate and the limit",
    r"a bootstrap of 100000 resamples over 1 clusters in 1 strata needs ~.* of memory; the limit is 1 MiB",
)
def _(tmp: Path) -> str:
    path = _csv(tmp / "annotations_toy.csv", [_row(1), _row(2, count="0")])
    with _memory_limit("1M"):
        return _cli(["agreement", "--annotations", path, "--resamples", "100000"])


@case(
    "bomb-csv-split-lines",
    "an annotation record followed by 5 000 comma-free lines",
    "not rejoined into one runaway record: dropped with its line",
    r"dropped 1 row\(s\): a record split over more than 100 lines, not repaired \(e\.g\. line 3\)",
)
def _(tmp: Path) -> str:
    cut = ",".join(_row(2)[:6]) + "\n"  # a record cut after six fields, then lines without a comma
    return _load(_csv(tmp / "annotations_toy.csv", [_row(1)], cut + "more\n" * 5000))


@case(
    "bomb-csv-huge-field",
    "an annotation whose free text is 200 000 characters",
    "that row dropped with its line (no csv traceback)",
    r"dropped 1 row\(s\): not readable as CSV \(field larger than field limit \(131072\)\) \(e\.g\. line 3\)",
)
def _(tmp: Path) -> str:
    big = _row(2)
    big[HEADER.index("Answer.task-objects")] = "x" * 200_000
    return _load(_csv(tmp / "annotations_toy.csv", [_row(1), big, _row(3)]))


# -- inflate-before-check files -------------------------------------------------------------------------------


@case(
    "bomb-npz-inflate",
    "a 16 KB .npz whose array inflates to 15 MiB (limit 1 MiB)",
    "refused from its header, before anything is inflated",
    r"e\.npz: inflating array 'embeddings' \(2000, 1000\) float64 needs ~15\.3 MiB of memory; the limit is 1 MiB",
)
def _(tmp: Path) -> Any:
    from t2ibench.io import open_embeddings

    path = _deflated_zeros(tmp / "e.npz", "embeddings", "<f8", (2000, 1000))
    with _memory_limit("1M"):
        return open_embeddings(path)


@case(
    "bomb-npz-column-inflate",
    "an .npz whose 'texts' column inflates to 38 MiB (limit 8 MiB)",
    "refused before the column is inflated",
    r"t\.npz: its embeddings and 'texts' columns needs ~.* of memory; the limit is 8 MiB",
)
def _(tmp: Path) -> Any:
    from t2ibench.io import load_embedding_table

    embeddings = [("embeddings.npy", _array(np.ones((10, 2))))]
    path = _deflated_zeros(tmp / "t.npz", "texts", "<U1000000", (10,), embeddings)
    with _memory_limit("8M"):
        return load_embedding_table(path)


@case(
    "bomb-state-npz-inflate",
    "a saved estimator state (`FKEA.load`) whose covariance inflates to 30 MiB (limit 4 MiB)",
    "refused from its header, before anything is inflated",
    r"s\.npz: inflating 'cov' \(2000, 2000\) float64 needs ~30\.5 MiB of memory; the limit is 4 MiB",
)
def _(tmp: Path) -> Any:
    from t2ibench.metrics import FKEA

    path = _deflated_zeros(tmp / "s.npz", "cov", "<f8", (2000, 2000))
    with _memory_limit("4M"):
        return FKEA.load(path)


@case(
    "bomb-table2-bootstrap",
    "Table 2 of 20 000 single-object prompts, its bootstrap 1000 × 20 000 draws (limit 64 MiB)",
    "refused with the estimate before the draws are made",
    r"the single_object bootstrap \(1000 resamples of 20000 prompts\) needs ~458 MiB of memory; the limit is 64 MiB",
)
def _(tmp: Path) -> Any:
    from t2ibench.benchmarks.geneval.metrics import table2_rows

    with _memory_limit("64M"):
        return table2_rows([("single_object", i % 2 == 0, i) for i in range(20_000)])


@case(
    "bomb-cluster-draws",
    "a prompt-clustered bootstrap of 10⁹ resamples",
    "refused with the estimate, not an allocation failure",
    r"the bootstrap's draws \(1000000000 resamples of 3 clusters\) needs ~22\.4 GiB of memory",
)
def _(tmp: Path) -> Any:
    from t2ibench.metrics.bootstrap import cluster_draws

    with _memory_limit("1G"):
        return cluster_draws(3, 10**9, seed=0)


def _pixel_bomb(path: Path) -> Path:
    """A 20 000 × 20 000 one-bit PNG: a few kilobytes on disk, 400 megapixels (past PIL's bomb limit) decoded."""
    from PIL import Image

    Image.new("1", (20_000, 20_000)).save(path)
    return path


@case(
    "bomb-gallery-image",
    "a mode gallery asked to show a 400-megapixel PNG of a few kB",
    "one-line error naming the file (was a DecompressionBombError traceback)",
    r"big\.png: cannot read image \(Image size \(400000000 pixels\) exceeds limit",
)
def _(tmp: Path) -> Any:
    from t2ibench.report.gallery import to_pil

    return to_pil(_pixel_bomb(tmp / "big.png"), size=64)


@case(
    "bomb-report-thumbnail",
    "a report thumbnail (detections drawn) of a 400-megapixel PNG",
    "one-line error naming the file",
    r"big\.png: cannot read image for its thumbnail \(Image size \(400000000 pixels\)",
)
def _(tmp: Path) -> Any:
    from t2ibench.report.thumbs import render

    return render(_pixel_bomb(tmp / "big.png"), [], tmp / "thumb.jpg", size=64, labels=False)


@case(
    "bomb-npz-size-lie",
    ".npz member declaring fewer bytes than its header's shape",
    "refused unread, naming both sizes",
    r"e\.npz: array 'embeddings': the archive declares 144 bytes inflated, its header promises 448",
)
def _(tmp: Path) -> Any:
    from t2ibench.io import open_embeddings

    header = {"descr": "<f8", "fortran_order": False, "shape": (10, 4)}
    return open_embeddings(_zip(tmp / "e.npz", [("embeddings.npy", _npy(header, bytes(16)))]))


@case(
    "bomb-npz-padded",
    ".npz member with 1 000 bytes beyond its array",
    "refused (numpy reads it without a word)",
    r"e\.npz: array 'embeddings': the archive declares 1160 bytes inflated, its header promises 160",
)
def _(tmp: Path) -> Any:
    from t2ibench.io import open_embeddings

    return open_embeddings(_zip(tmp / "e.npz", [("embeddings.npy", _array(np.ones((2, 2))) + bytes(1000))]))


@case(
    "bomb-npz-member-twice",
    ".npz holding two members named embeddings.npy",
    "refused: which one numpy reads is not the user's choice",
    r"e\.npz: the archive holds array 'embeddings' twice",
)
def _(tmp: Path) -> Any:
    from t2ibench.io import open_embeddings

    members = [("embeddings.npy", _array(np.ones((2, 2)))), ("embeddings.npy", _array(np.zeros((3, 2))))]
    return open_embeddings(_zip(tmp / "e.npz", members))


@case(
    "bomb-npz-text-dtype",
    ".npz whose embeddings are strings",
    "refused from the header, as for .npy",
    r"e\.npz: array 'embeddings' must be numeric; got dtype <U1",
)
def _(tmp: Path) -> Any:
    from t2ibench.io import open_embeddings

    return open_embeddings(_zip(tmp / "e.npz", [("embeddings.npy", _array(np.array([["a", "b"]])))]))


# -- annotation rows that leave a statistic -------------------------------------------------------------------


@case(
    "annot-image-id-unicode",
    "annotation image_id '٣' (an Arabic-Indic 3)",
    "dropped and counted (int() would make it image 3)",
    r"dropped 1 row\(s\): image_id not a whole number \(e\.g\. line 3\)",
)
def _(tmp: Path) -> str:
    return _load(_csv(tmp / "annotations_toy.csv", [_row(1, "3"), _row(2, "\u0663")]))


@case(
    "annot-image-id-sign",
    "annotation image_id '+1' beside image 1",
    "dropped and counted (never merged into image 1)",
    r"dropped 1 row\(s\): image_id not a whole number \(e\.g\. line 3\)",
)
def _(tmp: Path) -> str:
    return _load(_csv(tmp / "annotations_toy.csv", [_row(1, "1"), _row(2, "+1")]))


@case(
    "annot-image-id-huge",
    "annotation image_id 99999999999",
    "dropped as out of range (the store holds 32-bit ids)",
    r"dropped 1 row\(s\): image_id out of range \(e\.g\. line 3\)",
)
def _(tmp: Path) -> str:
    return _load(_csv(tmp / "annotations_toy.csv", [_row(1), _row(2, "99999999999")]))


@case(
    "annot-respelt-duplicate",
    "one record twice, its colours listed in another order",
    "the copy dropped as a duplicate (one annotator, counted once)",
    r"dropped 1 row\(s\): duplicate of an earlier record \(WorkerId included\) \(e\.g\. line 3\)",
)
def _(tmp: Path) -> str:
    return _load(_csv(tmp / "annotations_toy.csv", [_row(1, color="red|blue"), _row(1, color="blue|red")]))


@case(
    "annot-same-worker",
    "one WorkerId annotating an image twice, differently",
    "the second dropped and counted",
    r"dropped 1 row\(s\): a second annotation of the image by the same WorkerId \(e\.g\. line 3\)",
)
def _(tmp: Path) -> str:
    first, second = _row(1), _row(1, count="0")
    second[HEADER.index("Answer.ee")] = "9.00"
    return _load(_csv(tmp / "annotations_toy.csv", [first, second]))


@case(
    "annot-single-annotation",
    "an image with a single annotation (`agreement`)",
    "in the human score, counted as out of agreement, with the images it rests on",
    r"(?s)in the human score only 1 row\(s\): the only annotation of its image.*\| toy \| all \| 2 \| 3 \| 1 \|",
)
def _(tmp: Path) -> str:
    rows = [_row(1, "0"), _row(2, "0", count="0"), _row(3, "1")]
    return _cli(["agreement", "--annotations", _csv(tmp / "annotations_toy.csv", rows), "--resamples", "20"])


@case(
    "annot-source-only-singles",
    "a second source whose images have one annotation each (`agreement --out`)",
    "its human score written with its counts; agreement marked undefined for it",
    r'"human_score_images_solo": 2',
)
def _(tmp: Path) -> str:
    pairs = _csv(tmp / "annotations_toy.csv", [_row(1), _row(2, count="0")])
    singles = _csv(tmp / "annotations_solo.csv", [_row(1, "1", source="solo"), _row(2, "2", source="solo")])
    report = _cli(["agreement", "--annotations", pairs, singles, "--resamples", "20", "--out", tmp / "out"])
    metrics = tmp / "out" / "metrics.json"
    return report + (metrics.read_text() if metrics.exists() else "")
