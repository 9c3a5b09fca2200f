"""Bad-input corpus, round three: file identity: paths compared after resolving (symlinks, ./.., hard links),
outputs that are inputs or the store, multi-frame images."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from tests.corpus import SUITE, case, geneval_folder, scan_report

__all__: list[str] = []


def cli(*argv: object) -> str:
    """``t2ibench ARGV`` as a user runs it: 'exit N: ' and what it wrote to standard error."""
    import contextlib
    import io

    from t2ibench.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = main([str(a) for a in argv])
    return f"exit {status}: {err.getvalue()}"


def frames(path: Path, fmt: str, count: int = 3) -> None:
    """An image file of ``count`` different frames (pages) in format ``fmt``, whatever ``path``'s suffix says."""
    from PIL import Image

    images = [Image.new("RGB", (32, 24), (40 * i, 200 - 40 * i, 20)) for i in range(count)]
    images[0].save(path, format=fmt, save_all=True, append_images=images[1:])


def results_file(tmp: Path, names: list[str]) -> Path:
    """A results.jsonl judging prompt 0 of SUITE once per name in ``names``."""
    from t2ibench.benchmarks.geneval.evaluate import ResultRow, write_results

    record = SUITE[0]
    rows = [ResultRow(n, record["tag"], record["prompt"], True, "", record) for n in names]
    return write_results(tmp / "r.jsonl", rows)


# -- identity inside an image folder ----------------------------------------------------------------------------


@case(
    "file-sample-symlink-sibling",
    "a sample that is a symlink to a sibling sample",
    "listed as a problem naming both; judged once",
    r"00000/samples/00001\.png: the same file as .*00000/samples/00000\.png",
)
def _(tmp: Path) -> str:
    folder = geneval_folder(tmp)
    link = folder / "00000" / "samples" / "00001.png"
    link.unlink()
    link.symlink_to("00000.png")
    return scan_report(folder)


@case(
    "file-sample-hardlink",
    "a sample that is a hard link to another prompt's sample",
    "listed as a problem naming both; judged once",
    r"00001/samples/00001\.png: the same file as .*00000/samples/00000\.png",
)
def _(tmp: Path) -> str:
    folder = geneval_folder(tmp)
    twin = folder / "00001" / "samples" / "00001.png"
    twin.unlink()
    os.link(folder / "00000" / "samples" / "00000.png", twin)
    return scan_report(folder)


@case(
    "file-samples-folder-link",
    "a prompt's samples/ symlinked to another prompt's samples/",
    "listed as a problem; its images are not judged again",
    r"00001/samples: the same folder as 00000/samples",
)
def _(tmp: Path) -> str:
    folder = geneval_folder(tmp)
    shutil.rmtree(folder / "00001" / "samples")
    (folder / "00001" / "samples").symlink_to("../00000/samples")
    return scan_report(folder)


@case(
    "file-prompt-folder-link",
    "a prompt folder that is a symlink to another prompt folder (no suite given)",
    "listed as a problem; its images are counted once",
    r"00002: the same folder as 00000",
)
def _(tmp: Path) -> str:
    from t2ibench.benchmarks.geneval.evaluate import scan_folder

    folder = geneval_folder(tmp)
    (folder / "00002").symlink_to("00000")
    return scan_folder(folder, None, images_per_prompt=2).report()


@case(
    "file-metadata-link-outside",
    "a prompt folder's metadata.jsonl symlinked to a file outside the image folder",
    "listed as a problem naming the link and its target; never read",
    r"00000/metadata\.jsonl: metadata\.jsonl resolves outside the image folder \(to .*elsewhere\.jsonl\)",
)
def _(tmp: Path) -> str:
    folder = geneval_folder(tmp)
    (tmp / "elsewhere.jsonl").write_text(json.dumps(SUITE[0]) + "\n")
    meta = folder / "00000" / "metadata.jsonl"
    meta.unlink()
    meta.symlink_to(tmp / "elsewhere.jsonl")
    return scan_report(folder)


@case(
    "file-metadata-fifo",
    "a prompt folder's metadata.jsonl that is a FIFO",
    "listed as a problem saying what it is; never opened",
    r"00001/metadata\.jsonl: metadata\.jsonl is a FIFO \(named pipe\), not a regular file",
)
def _(tmp: Path) -> str:
    folder = geneval_folder(tmp)
    meta = folder / "00001" / "metadata.jsonl"
    meta.unlink()
    os.mkfifo(meta)
    return scan_report(folder)


@case(
    "file-prompt-folder-outside",
    "a prompt folder that is a symlink to a folder outside the image folder",
    "listed as a problem naming its target; never read",
    r"00001: the prompt folder resolves outside the image folder \(to .*other/00001\)",
)
def _(tmp: Path) -> str:
    folder = geneval_folder(tmp)
    (tmp / "other").mkdir()
    shutil.move(folder / "00001", tmp / "other" / "00001")
    (folder / "00001").symlink_to(tmp / "other" / "00001")
    return scan_report(folder)


@case(
    "file-sample-is-folder",
    "a folder named like an image (samples/00001.png/)",
    "listed as a problem (was silently skipped)",
    r"00000/samples/00001\.png: is a folder, not an image file",
)
def _(tmp: Path) -> str:
    folder = geneval_folder(tmp)
    path = folder / "00000" / "samples" / "00001.png"
    path.unlink()
    path.mkdir()
    return scan_report(folder)


@case(
    "file-sample-fifo",
    "a FIFO named like an image",
    "listed as a problem; never opened (no hang)",
    r"00001/samples/00000\.png: is a FIFO \(named pipe\), not an image file",
)
def _(tmp: Path) -> str:
    folder = geneval_folder(tmp)
    path = folder / "00001" / "samples" / "00000.png"
    path.unlink()
    os.mkfifo(path)
    return scan_report(folder)


@case(
    "file-sample-dangling-link",
    "a sample that is a dangling symlink",
    "listed as a problem naming its target (was silently skipped)",
    r"00000/samples/00000\.png: a dangling link \(to gone\.png\)",
)
def _(tmp: Path) -> str:
    folder = geneval_folder(tmp)
    path = folder / "00000" / "samples" / "00000.png"
    path.unlink()
    path.symlink_to("gone.png")
    return scan_report(folder)


@case(
    "file-name-with-newline",
    "a sample whose file name holds a newline (forging a report line)",
    "the name is shown escaped, on one line",
    r"samples/evil\\nproblem: forged\.png: zero-byte file",
)
def _(tmp: Path) -> str:
    folder = geneval_folder(tmp)
    (folder / "00000" / "samples" / "evil\nproblem: forged.png").write_bytes(b"")
    return scan_report(folder)


# -- multi-frame images ---------------------------------------------------------------------------------------------


@case(
    "file-animated-png",
    "an animated PNG (APNG) sample",
    "listed as a problem naming its frame count (was judged on frame 0)",
    r"00000/samples/00001\.png: holds 3 frames",
)
def _(tmp: Path) -> str:
    folder = geneval_folder(tmp)
    frames(folder / "00000" / "samples" / "00001.png", "PNG")
    return scan_report(folder)


@case(
    "file-animated-gif",
    "an animated GIF saved under a .png name",
    "listed as a problem naming its frame count",
    r"00001/samples/00000\.png: holds 4 frames",
)
def _(tmp: Path) -> str:
    folder = geneval_folder(tmp)
    frames(folder / "00001" / "samples" / "00000.png", "GIF", count=4)
    return scan_report(folder)


@case(
    "file-multipage-tiff",
    "a multi-page TIFF saved under a .jpg name",
    "listed as a problem naming its page count",
    r"00000/samples/00000\.jpg: holds 2 frames",
)
def _(tmp: Path) -> str:
    folder = geneval_folder(tmp)
    (folder / "00000" / "samples" / "00000.png").unlink()
    frames(folder / "00000" / "samples" / "00000.jpg", "TIFF", count=2)
    return scan_report(folder)


# -- importing a folder -----------------------------------------------------------------------------------------


def import_folder(tmp: Path, folder: Path) -> Any:
    from t2ibench.models.generation import FolderImporter

    return FolderImporter(folder).generate(list(enumerate(SUITE)), tmp / "imported")


@case(
    "file-import-sample-link",
    "importing a folder whose sample is a symlink to a sibling",
    "error naming both files; nothing imported twice",
    r"00000/samples/00001\.png: the same file as .*00000/samples/00000\.png",
)
def _(tmp: Path) -> Any:
    folder = geneval_folder(tmp)
    link = folder / "00000" / "samples" / "00001.png"
    link.unlink()
    link.symlink_to("00000.png")
    return import_folder(tmp, folder)


@case(
    "file-import-fifo",
    "importing a folder with a FIFO named like an image",
    "error saying what it is (the import hung reading it)",
    r"00001/samples/00001\.png: image is a FIFO \(named pipe\), not a regular file",
)
def _(tmp: Path) -> Any:
    folder = geneval_folder(tmp)
    path = folder / "00001" / "samples" / "00001.png"
    path.unlink()
    os.mkfifo(path)
    return import_folder(tmp, folder)


@case(
    "file-import-animated",
    "importing an animated image",
    "error naming the file and its frame count",
    r"00000/samples/00000\.png: holds 3 frames",
)
def _(tmp: Path) -> Any:
    folder = geneval_folder(tmp)
    frames(folder / "00000" / "samples" / "00000.png", "PNG")
    return import_folder(tmp, folder)


@case(
    "file-import-metadata-outside",
    "importing a folder whose metadata.jsonl links outside it",
    "error naming the link and its target; never read",
    r"00000/metadata\.jsonl: metadata file resolves outside .* \(to .*elsewhere\.jsonl\)",
)
def _(tmp: Path) -> Any:
    folder = geneval_folder(tmp)
    (tmp / "elsewhere.jsonl").write_text(json.dumps(SUITE[0]) + "\n")
    meta = folder / "00000" / "metadata.jsonl"
    meta.unlink()
    meta.symlink_to(tmp / "elsewhere.jsonl")
    return import_folder(tmp, folder)


# -- results files ----------------------------------------------------------------------------------------------


@case(
    "file-results-dot-segment",
    "results.jsonl naming one image twice, once as 00000/samples/./00000.png",
    "error naming both lines (was counted twice)",
    r"r\.jsonl:2: a second result for .*samples/00000\.png \(first at line 1, as .*samples/\./00000\.png",
)
def _(tmp: Path) -> Any:
    from t2ibench.benchmarks.geneval.evaluate import read_results

    folder = geneval_folder(tmp)
    sample = folder / "00000" / "samples"
    return read_results(results_file(tmp, [f"{sample}/./00000.png", f"{sample}/00000.png"]))


@case(
    "file-results-dotdot-absent",
    "results.jsonl naming one (absent) image twice, once through samples/../samples/",
    "error naming both lines",
    r"r\.jsonl:2: a second result for out/00000/samples/00000\.png \(first at line 1",
)
def _(tmp: Path) -> Any:
    from t2ibench.benchmarks.geneval.evaluate import read_results

    return read_results(results_file(tmp, ["out/00000/samples/../samples/00000.png", "out/00000/samples/00000.png"]))


@case(
    "file-results-symlinked-image",
    "results.jsonl judging an image and a symlink to it",
    "error naming both lines (one image, counted once)",
    r"r\.jsonl:2: a second result for .*00000/samples/00001\.png \(first at line 1, as .*00000\.png",
)
def _(tmp: Path) -> Any:
    from t2ibench.benchmarks.geneval.evaluate import read_results

    folder = geneval_folder(tmp)
    sample = folder / "00000" / "samples"
    (sample / "00001.png").unlink()
    (sample / "00001.png").symlink_to("00000.png")
    return read_results(results_file(tmp, [f"{sample}/00000.png", f"{sample}/00001.png"]))


@case(
    "file-results-fifo",
    "`t2ibench summary` of a results.jsonl that is a FIFO",
    "one-line error saying what it is (it hung)",
    r"t2ibench summary: error: .*r\.jsonl: results file is a FIFO \(named pipe\), not a regular file",
)
def _(tmp: Path) -> str:
    os.mkfifo(tmp / "r.jsonl")
    return cli("summary", tmp / "r.jsonl")


@case(
    "file-results-dev-zero",
    "`t2ibench summary` of a results.jsonl linked to /dev/zero",
    "one-line error naming the link's target (it read forever)",
    r"results file is a character device \(resolves to /dev/zero\), not a regular file",
)
def _(tmp: Path) -> str:
    (tmp / "r.jsonl").symlink_to("/dev/zero")
    return cli("summary", tmp / "r.jsonl")


@case(
    "file-suite-fifo",
    "`--metadata` that is a FIFO",
    "one-line error saying what it is (it hung)",
    r"t2ibench evaluate: error: .*suite\.jsonl: prompt suite is a FIFO \(named pipe\)",
)
def _(tmp: Path) -> str:
    folder = geneval_folder(tmp)
    os.mkfifo(tmp / "suite.jsonl")
    return cli("evaluate", "geneval", folder, "--metadata", tmp / "suite.jsonl", "--out", tmp / "r.jsonl")


# -- outputs that are inputs or the store -----------------------------------------------------------------------


@case(
    "out-sql-onto-store",
    "`sql --out` naming the store file itself",
    "one-line error naming the flag and the store; store untouched",
    r"t2ibench sql: error: --out .*board\.csv: is the results store",
)
def _(tmp: Path) -> str:
    from t2ibench.store import Store

    shutil.copy(tmp / "populated.duckdb", tmp / "board.csv")  # a store under a name `--out` accepts
    said = cli("sql", "SELECT 1 AS x", "--store", tmp / "board.csv", "--out", tmp / "board.csv")
    assert Store(tmp / "board.csv").query("SELECT count(*) FROM prompts")[1] == [(3,)], "the store was replaced"
    return said


@case(
    "out-sql-into-store-tmp",
    "`sql --out` into the store's temporary folder (<store>.tmp)",
    "one-line error naming that folder",
    r"t2ibench sql: error: --out .*populated\.duckdb\.tmp/rows\.csv: lies inside the results store's temporary",
)
def _(tmp: Path) -> str:
    out = tmp / "populated.duckdb.tmp" / "rows.csv"
    said = cli("sql", "SELECT 1 AS x", "--store", tmp / "populated.duckdb", "--out", out)
    assert not out.exists()
    return said


@case(
    "out-prompts-onto-store",
    "`prompts --out` naming a DuckDB results store",
    "one-line error: it is a results store (recognised by its header)",
    r"t2ibench prompts: error: --out .*populated\.duckdb: is the DuckDB results store",
)
def _(tmp: Path) -> str:
    return cli("prompts", "geneval", "--out", tmp / "populated.duckdb")


@case(
    "out-prompts-onto-wal",
    "`prompts --out` naming a store's write-ahead log (<store>.wal)",
    "one-line error: part of the store (a bogus log would be replayed)",
    r"t2ibench prompts: error: --out .*populated\.duckdb\.wal: is part of the DuckDB results store",
)
def _(tmp: Path) -> str:
    said = cli("prompts", "geneval", "--out", tmp / "populated.duckdb.wal")
    assert not (tmp / "populated.duckdb.wal").exists()
    return said


@case(
    "out-summary-json-onto-results",
    "`summary RESULTS --json` naming RESULTS (spelt ./r.jsonl)",
    "one-line error naming both; results untouched",
    r"t2ibench summary: error: --json .*r\.jsonl: is RESULTS .*r\.jsonl",
)
def _(tmp: Path) -> str:
    results_file(tmp, ["out/00000/samples/00000.png"])
    before = (tmp / "r.jsonl").read_bytes()
    said = cli("summary", tmp / "r.jsonl", "--json", f"{tmp}/./r.jsonl", "--allow-missing")
    assert (tmp / "r.jsonl").read_bytes() == before
    return said


@case(
    "out-evaluate-json-is-out",
    "`evaluate --json` naming the same file as `--out`",
    "one-line error before any image is judged",
    r"t2ibench evaluate: error: --json .*r\.jsonl: is --out .*r\.jsonl",
)
def _(tmp: Path) -> str:
    folder = geneval_folder(tmp)
    return cli("evaluate", "geneval", folder, "--out", tmp / "r.jsonl", "--json", tmp / "sub" / ".." / "r.jsonl")


@case(
    "out-evaluate-into-prompt-folder",
    "`evaluate --out` onto an image of the folder it judges",
    "one-line error naming IMAGEDIR; the image untouched",
    r"t2ibench evaluate: error: --out .*00000/samples/00000\.png: (is|lies inside) IMAGEDIR",
)
def _(tmp: Path) -> str:
    folder = geneval_folder(tmp)
    return cli("evaluate", "geneval", folder, "--out", folder / "00000" / "samples" / "00000.png")


@case(
    "out-evaluate-onto-metadata",
    "`evaluate --out` naming its own `--metadata` suite (through a symlinked folder)",
    "one-line error naming both",
    r"t2ibench evaluate: error: --out .*link/suite\.jsonl \(resolves to .*\): is --metadata",
)
def _(tmp: Path) -> str:
    from t2ibench.benchmarks.geneval.suite import write_suite

    folder = geneval_folder(tmp)
    write_suite(tmp / "suite.jsonl", SUITE)
    (tmp / "link").symlink_to(tmp)
    return cli("evaluate", "geneval", folder, "--metadata", tmp / "suite.jsonl", "--out", tmp / "link" / "suite.jsonl")


@case(
    "out-agreement-onto-scores",
    "`agreement --out DIR` whose metrics.json is its own `--scores` file",
    "one-line error naming both; nothing computed",
    r"t2ibench agreement: error: --out .*metrics\.json: is --scores",
)
def _(tmp: Path) -> str:
    (tmp / "out").mkdir()
    (tmp / "out" / "metrics.json").write_text("")
    (tmp / "a.csv").write_text("")
    return cli(
        "agreement", "--annotations", tmp / "a.csv", "--scores", tmp / "out" / "metrics.json", "--out", tmp / "out"
    )


@case(
    "out-report-holds-store",
    "`report --out` naming the folder that holds the results store",
    "one-line error naming the store",
    r"t2ibench report: error: --out .*: holds the results store .*populated\.duckdb",
)
def _(tmp: Path) -> str:
    (tmp / "configs").mkdir()
    (tmp / "flows").mkdir()
    (tmp / "configs" / "c.yaml").write_text("name: x\nmodels: [{name: a}]\noutputs: {store: populated.duckdb}\n")
    return cli("report", "--config", tmp / "configs" / "c.yaml", "--out", tmp)


@case(
    "out-diversity-json-onto-embeddings",
    "`diversity EMB.npy --json EMB.npy`",
    "one-line error before the computation; embeddings untouched",
    r"t2ibench diversity: error: --json .*emb\.npy: is EMBEDDINGS",
)
def _(tmp: Path) -> str:
    import numpy as np

    np.save(tmp / "emb.npy", np.random.default_rng(0).normal(size=(20, 4)))
    return cli("diversity", tmp / "emb.npy", "--json", tmp / "emb.npy", "--quiet")


@case(
    "out-data-fetch-onto-from",
    "`data fetch --out DIR --from DIR`",
    "one-line error naming both",
    r"t2ibench data: error: --out .*: is --from",
)
def _(tmp: Path) -> str:
    (tmp / "g").mkdir()
    return cli("data", "fetch", "geneval", "--out", tmp / "g", "--from", tmp / "g")


@case(
    "out-evaluate-partial-onto-input",
    "`evaluate --out X` where X.partial is its own `--metadata` file",
    "one-line error (the stale partial file was deleted)",
    r"t2ibench evaluate: error: --out's partial file .*r\.jsonl\.partial: is --metadata",
)
def _(tmp: Path) -> str:
    from t2ibench.benchmarks.geneval.suite import write_suite

    folder = geneval_folder(tmp)
    write_suite(tmp / "r.jsonl.partial", SUITE)
    said = cli("evaluate", "geneval", folder, "--metadata", tmp / "r.jsonl.partial", "--out", tmp / "r.jsonl")
    assert (tmp / "r.jsonl.partial").is_file()
    return said
