"""Bad-input corpus, round three, second probe: cases a re-run hostile probe of the round's fixes found (an open quote
that swallows an annotation file, foreign keys and temporary tables from a --write, DuckDB's other log names as
outputs, --params given twice or abbreviated, deep nesting, pipes and devices where a text file is expected, NaN
pixels, many-member .npz files)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from tests.corpus import case, geneval_folder, scan_report
from tests.corpus_resources import HEADER, _cli, _csv, _load, _row
from tests.corpus_signals import expand

__all__: list[str] = []


def _user_sql(tmp: Path, query: str, **kwargs: Any) -> Any:
    from t2ibench.store import Store

    return Store(tmp / "populated.duckdb", timeout=2).user_query(query, **kwargs)


# -- annotation files ---------------------------------------------------------------------------------------------


@case(
    "annot-open-quote-to-eof",
    "an annotation field opening a quote that never closes, 37 records before the end of the file",
    "the file refused naming the line and the lines swallowed (was: '1 dropped', 37 records gone uncounted)",
    r"annotations_toy\.csv: line 4: a quoted field that never closes swallows lines 4–41 \(the end of the file\)",
)
def _(tmp: Path) -> str:
    rows = [_row(i, image=str(i % 5)) for i in range(1, 41)]
    rows[2][HEADER.index("Answer.task-objects")] = '"x'
    return _load(_csv(tmp / "annotations_toy.csv", rows[:2], ",".join(rows[2]) + "\n" + _lines(rows[3:])))


@case(
    "annot-open-quote-field-limit",
    "an open quote followed by 3 000 records (the runaway field passes the csv module's size limit)",
    "the file refused naming the lines swallowed (was: '1 dropped', ~1 500 records gone uncounted)",
    r"annotations_toy\.csv: line 4: a quoted field that never closes swallows lines 4–\d{4} \(field larger",
)
def _(tmp: Path) -> str:
    rows = [_row(i, image=str(i % 50)) for i in range(1, 3001)]
    rows[2][HEADER.index("Answer.task-objects")] = '"x'
    return _load(_csv(tmp / "annotations_toy.csv", rows[:2], ",".join(rows[2]) + "\n" + _lines(rows[3:])))


def _lines(rows: list[list[str]]) -> str:
    import csv
    import io

    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue()


# -- the sealed SQL's --write ----------------------------------------------------------------------------------


@case(
    "sql-write-foreign-key-into-own",
    "`--write` creating a table with a foreign key into `verdicts`",
    "refused and rolled back (every later refresh's replace of verdicts failed with a bare DuckDB error)",
    r"refused: after the statements table mine has a foreign key into verdicts",
)
def _(tmp: Path) -> Any:
    key = "model, model_hash, evaluator_hash, suite, prompt_index, sample"
    return _user_sql(
        tmp,
        f"CREATE TABLE mine (model VARCHAR, model_hash VARCHAR, evaluator_hash VARCHAR, suite VARCHAR, "
        f"prompt_index INTEGER, sample INTEGER, FOREIGN KEY ({key}) REFERENCES verdicts({key}))",
        write=True,
    )


@case(
    "sql-write-temp-shadow",
    "`--write` creating a temporary table named `verdicts`",
    "one-line refusal (was a Binder Error traceback from the view rebuild)",
    r"refused: the statements create a temporary table verdicts named like one of t2ibench's own",
)
def _(tmp: Path) -> Any:
    return _user_sql(tmp, "CREATE TEMP TABLE verdicts (x INT)", write=True)


@case(
    "store-run-details-not-object",
    "a run row whose details a `--write` made a JSON list, then finished by its refresh",
    "the run finishes; the list is kept under details_as_found (was an AttributeError traceback)",
    r"^\{\"details_as_found\": \[1\]\}$",
)
def _(tmp: Path) -> Any:
    from t2ibench.store import Store

    shutil.copy(tmp / "populated.duckdb", tmp / "runs.duckdb")
    store = Store(tmp / "runs.duckdb")
    store.user_query("INSERT INTO runs (run_id, status, details) VALUES ('r9', 'running', '[1]')", write=True)
    assert store.finish_run("r9", "completed")
    return str(store.rows("SELECT details FROM runs WHERE run_id = 'r9'")[0]["details"])


# -- outputs onto the store's other files ------------------------------------------------------------------------


@case(
    "out-prompts-onto-wal-checkpoint",
    "`prompts --out` naming `<store>.wal.checkpoint` (DuckDB deletes it when it opens the store)",
    "one-line error: part of the store",
    r"populated\.duckdb\.wal\.checkpoint.*results store",
)
def _(tmp: Path) -> Any:
    return _cli(["prompts", "geneval", "--out", tmp / "populated.duckdb.wal.checkpoint"])


@case(
    "out-diversity-json-onto-wal-recovery",
    "`diversity --json` naming `<store>.wal.recovery`",
    "one-line error: part of the store",
    r"exit 2\n.*populated\.duckdb\.wal\.recovery.*results store",
)
def _(tmp: Path) -> Any:
    np.save(tmp / "e.npy", np.random.default_rng(0).normal(size=(20, 3)))
    return _cli(["diversity", tmp / "e.npy", "--quiet", "--json", tmp / "populated.duckdb.wal.recovery"])


# -- --params -----------------------------------------------------------------------------------------------------


@case(
    "param-two-sections-one-option",
    "two `--params` sections giving the same option",
    "error: give it once (the last silently won)",
    r"params\.yaml: q\.per_task: --per-task is also given by --params .*params\.yaml:p; give it once",
)
def _(tmp: Path) -> Any:
    (tmp / "params.yaml").write_text("p:\n  per_task: 1\nq:\n  per_task: 2\n")
    from t2ibench.cli import build_parser
    from t2ibench.params import expand_params

    spec = str(tmp / "params.yaml")
    return expand_params(build_parser(), ["prompts", "geneval", "--params", f"{spec}:p", "--params", f"{spec}:q"])


@case(
    "param-abbreviated-override",
    "an option from params.yaml also given abbreviated on the command line (`--per-tas 3`)",
    "error: give it once (argparse's abbreviation slipped past the check)",
    r"p\.per_task: --per-task is also given on the command line; give it once",
)
def _(tmp: Path) -> Any:
    return expand(tmp, "p:\n  per_task: 1\n", "prompts", "geneval", "--per-tas", "3")


@case(
    "param-file-is-fifo",
    "`--params FIFO:section`",
    "one-line error saying what it is (it hung before any signal handler)",
    r"parameters file is a FIFO \(named pipe\), not a regular file",
)
def _(tmp: Path) -> Any:
    from t2ibench.cli import build_parser
    from t2ibench.params import expand_params

    os.mkfifo(tmp / "fifo")
    return expand_params(build_parser(), ["prompts", "geneval", "--params", f"{tmp / 'fifo'}:p"])


@case(
    "param-file-is-dev-zero",
    "`--params /dev/zero:p` (an endless device)",
    "one-line error (it read until memory ran out)",
    r"/dev/zero: parameters file is a character device, not a regular file",
)
def _(tmp: Path) -> Any:
    from t2ibench.cli import build_parser
    from t2ibench.params import expand_params

    return expand_params(build_parser(), ["prompts", "geneval", "--params", "/dev/zero:p"])


# -- deep nesting and text files that are not files ------------------------------------------------------------------


@case(
    "yaml-nested-1000",
    "a 2 kB config nested 1 000 levels deep",
    "the depth error in one line (was a RecursionError traceback: the parser recursed before the check)",
    r"deep\.yaml: YAML nested deeper than 200 levels",
)
def _(tmp: Path) -> Any:
    from t2ibench.config import load_config

    (tmp / "deep.yaml").write_text("a: " + "[" * 1000 + "]" * 1000 + "\n")
    return load_config(tmp / "deep.yaml")


@case(
    "jsonl-nested-3000",
    "a results.jsonl line nested 3 000 objects deep (18 kB)",
    "one-line error naming the file and line (was a RecursionError traceback)",
    r"deep\.jsonl:1: not valid JSON \(nested too deeply to read\)",
)
def _(tmp: Path) -> Any:
    (tmp / "deep.jsonl").write_text('{"a":' * 3000 + "1" + "}" * 3000 + "\n")
    return _cli(["summary", tmp / "deep.jsonl"])


@case(
    "metadata-nested-3000",
    "a prompt folder's metadata.jsonl nested 3 000 objects deep",
    "listed as a problem naming the file (was a RecursionError traceback)",
    r"00000/metadata\.jsonl.*nested too deeply",
)
def _(tmp: Path) -> str:
    folder = geneval_folder(tmp, per_prompt=1)
    (folder / "00000" / "metadata.jsonl").write_text('{"a":' * 3000 + "1" + "}" * 3000 + "\n")
    return scan_report(folder)


@case(
    "config-is-fifo",
    "`report --config FIFO`",
    "one-line error saying what it is (it hung)",
    r"exit 2\n.*fifo\.yaml: config file is a FIFO \(named pipe\)",
)
def _(tmp: Path) -> Any:
    os.mkfifo(tmp / "fifo.yaml")
    return _cli(["report", "--config", tmp / "fifo.yaml"])


@case(
    "annotations-are-dev-zero",
    "`agreement --annotations` a link to /dev/zero",
    "one-line error naming the link's target (it read until memory ran out)",
    r"zz\.csv: MTurk CSV export is a character device \(resolves to /dev/zero\)",
)
def _(tmp: Path) -> Any:
    os.symlink("/dev/zero", tmp / "zz.csv")
    return _load(tmp / "zz.csv")


@case(
    "scores-are-fifo",
    "`agreement --scores FIFO`",
    "one-line error saying what it is (it hung)",
    r"scores\.jsonl: JSON-lines file is a FIFO \(named pipe\)",
)
def _(tmp: Path) -> Any:
    from t2ibench.benchmarks.geneval.agreement import read_scores

    os.mkfifo(tmp / "scores.jsonl")
    return read_scores(tmp / "scores.jsonl")


@case(
    "gallery-image-is-fifo",
    "a mode gallery asked to show a FIFO named like an image",
    "one-line error (it hung)",
    r"x\.png: not a regular file \(a pipe, socket or device\), not an image",
)
def _(tmp: Path) -> Any:
    from t2ibench.report.gallery import to_pil

    os.mkfifo(tmp / "x.png")
    return to_pil(tmp / "x.png", size=32)


# -- pixels and arrays ------------------------------------------------------------------------------------------------


@case(
    "image-float-nan",
    "a 32-bit float TIFF full of NaN under a .png name",
    "listed as a problem (was scaled to undefined pixels and judged)",
    r"00000\.png: a F \(floating-point\) image holding NaN or infinite pixels",
)
def _(tmp: Path) -> str:
    from PIL import Image

    folder = geneval_folder(tmp, per_prompt=1)
    Image.new("F", (32, 24), float("nan")).save(folder / "00000" / "samples" / "00000.png", format="TIFF")
    return scan_report(folder)


@case(
    "npz-many-members",
    "an .npz of 50 embeddings and 5 000 one-element members",
    "refused from its directory before any header is parsed (100 000 members took a minute)",
    r"e\.npz: the archive holds 5,001 members; t2ibench's \.npz files hold a few arrays \(at most 1,024 read\)",
)
def _(tmp: Path) -> Any:
    from t2ibench.io import open_embeddings

    arrays = {"embeddings": np.ones((50, 4))} | {f"x{i}": np.zeros(1) for i in range(5000)}
    np.savez(tmp / "e.npz", **arrays)  # type: ignore[arg-type]
    return open_embeddings(tmp / "e.npz")


@case(
    "embeddings-timedelta",
    "embeddings of dtype timedelta64 (numpy counts them as numbers)",
    "refused: times or durations are not embeddings",
    r"td\.npy must be numeric; got dtype timedelta64\[s\] \(times or durations",
)
def _(tmp: Path) -> Any:
    from t2ibench.io import open_embeddings

    np.save(tmp / "td.npy", np.zeros((5, 3), dtype="m8[s]"))
    return open_embeddings(tmp / "td.npy")


@case(
    "embeddings-zero-columns",
    "an .npy of shape (5, 0)",
    "refused naming the file (the message named only 'X')",
    r"z\.npy: embeddings with zero columns \(shape \(5, 0\)\)",
)
def _(tmp: Path) -> Any:
    from t2ibench.io import open_embeddings

    np.save(tmp / "z.npy", np.zeros((5, 0)))
    return open_embeddings(tmp / "z.npy")


@case(
    "file-results-padding-absent",
    "results.jsonl naming one (absent) sample as out/00000/samples/00000.png and as out/0/samples/0.PNG",
    "error naming both lines (was counted as two samples of prompt 0)",
    r"r\.jsonl:2: a second result for out/0/samples/0\.PNG \(first at line 1, as 'out/00000/samples/00000\.png'",
)
def _(tmp: Path) -> Any:
    from t2ibench.benchmarks.geneval.evaluate import read_results
    from tests.corpus_files import results_file

    return read_results(results_file(tmp, ["out/00000/samples/00000.png", "out/0/samples/0.PNG"]))
