"""The bad-input corpus: every way users feed t2ibench broken input, and what must happen.

Each case builds its input in a temporary folder and runs the code a user would. It either raises an
``InputError`` whose message must match ``expect`` (naming the file, row or parameter), or returns the report in
which the problem is explicitly listed (``expect`` must match it). ``tests/integration/test_bad_inputs.py`` runs
every case and checks that a populated results store is unchanged afterwards; ``docs/reliability.md`` is the
rendered table of this registry (a test keeps it in sync).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

SUITE = [
    {"tag": "single_object", "include": [{"class": "cat", "count": 1}], "prompt": "a photo of a cat"},
    {"tag": "colors", "include": [{"class": "car", "count": 1, "color": "red"}], "prompt": "a photo of a red car"},
]


@dataclass(frozen=True)
class Case:
    """One bad input: what it is, what t2ibench does about it, and how that is recognised."""

    id: str
    input: str
    behaviour: str
    expect: str
    run: Callable[[Path], Any]
    needs_models: bool = False


CASES: list[Case] = []


def case(
    id: str, input: str, behaviour: str, expect: str, *, needs_models: bool = False
) -> Callable[[Callable[[Path], Any]], Callable[[Path], Any]]:
    def register(fn: Callable[[Path], Any]) -> Callable[[Path], Any]:
        CASES.append(Case(id, input, behaviour, expect, fn, needs_models))
        return fn

    return register


# -- helpers ---------------------------------------------------------------------------------------------------


def geneval_folder(root: Path, per_prompt: int = 2) -> Path:
    from PIL import Image

    for index, record in enumerate(SUITE):
        folder = root / "imgs" / f"{index:05d}"
        (folder / "samples").mkdir(parents=True, exist_ok=True)
        (folder / "metadata.jsonl").write_text(json.dumps(record) + "\n")
        for k in range(per_prompt):
            Image.new("RGB", (32, 24), (200, 20, 20)).save(folder / "samples" / f"{k:05d}.png")
    return root / "imgs"


def scan_report(folder: Path) -> str:
    from t2ibench.geneval_eval import scan_folder

    return scan_folder(folder, SUITE, images_per_prompt=2).report(limit=50)


def annotation_csv(root: Path, mutate: Callable[[list[list[str]]], list[str]]) -> str:
    """An annotation file for the official suite's prompt 0 with one mutated row; returns the load report."""
    import csv
    import io

    from t2ibench.suites.annotations import load_annotations
    from t2ibench.suites.geneval import generate_suite

    suite = generate_suite()
    header = [
        "HITId",
        "Input.prompt_id",
        "Input.image_id",
        "Input.caption",
        "Answer.task-count-0",
        "Answer.task-count-1",
        "Answer.task-color-0",
        "Answer.task-color-1",
        "Answer.task-objects",
        "Answer.task-position-x",
        "Answer.task-position-y",
    ]
    good = ["H", "0", "0", suite[0]["prompt"], "1", "", "red", "", "bench", "", ""]
    rows = [header, good, list(good)]
    extra = mutate(rows)
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    path = root / "annotations_toy.csv"
    path.write_text(buf.getvalue() + "".join(extra))
    return load_annotations(path, suite)[1].summary()


# -- images and folders -----------------------------------------------------------------------------------------


@case(
    "truncated-png",
    "corrupt/truncated PNG",
    "listed as a problem naming the file; the run refuses to start",
    r"00000/samples/00001\.png: unreadable image",
)
def _(tmp: Path) -> str:
    folder = geneval_folder(tmp)
    path = folder / "00000" / "samples" / "00001.png"
    path.write_bytes(path.read_bytes()[:40])
    return scan_report(folder)


@case(
    "zero-byte-image",
    "zero-byte image",
    "listed as a problem naming the file",
    r"00001/samples/00000\.png: zero-byte file",
)
def _(tmp: Path) -> str:
    folder = geneval_folder(tmp)
    (folder / "00001" / "samples" / "00000.png").write_bytes(b"")
    return scan_report(folder)


@case("cmyk-image", "CMYK image", "converted to RGB, reported as a note", r"00000\.jpg: converted CMYK to RGB")
def _(tmp: Path) -> str:
    from PIL import Image

    folder = geneval_folder(tmp)
    (folder / "00000" / "samples" / "00000.png").unlink()
    Image.new("CMYK", (32, 24), (0, 200, 200, 0)).save(folder / "00000" / "samples" / "00000.jpg")
    return scan_report(folder)


@case("16-bit-image", "16-bit greyscale PNG", "scaled to 8-bit RGB, reported as a note", r"scaled I;16 to 8-bit RGB")
def _(tmp: Path) -> str:
    from PIL import Image

    folder = geneval_folder(tmp)
    Image.fromarray(np.full((24, 32), 40000, np.uint16)).save(folder / "00000" / "samples" / "00000.png")
    return scan_report(folder)


@case(
    "rgba-image", "RGBA PNG", "alpha composited on white, reported as a note", r"composited RGBA transparency on white"
)
def _(tmp: Path) -> str:
    from PIL import Image

    folder = geneval_folder(tmp)
    Image.new("RGBA", (32, 24), (255, 0, 0, 128)).save(folder / "00001" / "samples" / "00001.png")
    return scan_report(folder)


@case(
    "non-digit-folder",
    "non-digit prompt folder",
    "listed; the run refuses to start",
    r"non-digit folders \(1\): extras",
)
def _(tmp: Path) -> str:
    folder = geneval_folder(tmp)
    (folder / "extras").mkdir()
    return scan_report(folder)


@case(
    "missing-metadata", "prompt folder without metadata.jsonl", "listed as a problem", r"00001: missing metadata\.jsonl"
)
def _(tmp: Path) -> str:
    folder = geneval_folder(tmp)
    (folder / "00001" / "metadata.jsonl").unlink()
    return scan_report(folder)


@case(
    "malformed-metadata",
    "malformed metadata JSONL line",
    "listed as a problem naming the file",
    r"00000/metadata\.jsonl: malformed metadata",
)
def _(tmp: Path) -> str:
    folder = geneval_folder(tmp)
    (folder / "00000" / "metadata.jsonl").write_text('{"tag": "single_object", \n')
    return scan_report(folder)


@case("missing-samples", "fewer samples than expected", "listed as a problem", r"00000: 1 samples, expected 2")
def _(tmp: Path) -> str:
    folder = geneval_folder(tmp)
    (folder / "00000" / "samples" / "00001.png").unlink()
    return scan_report(folder)


@case("extra-samples", "more samples than expected", "listed as a problem", r"00001: 3 samples, expected 2")
def _(tmp: Path) -> str:
    from PIL import Image

    folder = geneval_folder(tmp)
    Image.new("RGB", (8, 8)).save(folder / "00001" / "samples" / "00002.png")
    return scan_report(folder)


@case(
    "metadata-disagrees",
    "metadata that disagrees with the suite",
    "listed as a problem naming the prompt",
    r"metadata disagrees with suite prompt 1",
)
def _(tmp: Path) -> str:
    folder = geneval_folder(tmp)
    (folder / "00001" / "metadata.jsonl").write_text(json.dumps(SUITE[0]) + "\n")
    return scan_report(folder)


@case(
    "missing-prompt-folder",
    "a prompt folder missing entirely",
    "listed (the reference evaluator skips it silently)",
    r"missing prompt folders \(1\): 00001",
)
def _(tmp: Path) -> str:
    import shutil

    folder = geneval_folder(tmp)
    shutil.rmtree(folder / "00001")
    return scan_report(folder)


@case(
    "image-escapes-folder",
    "image path escaping the run directory (symlink)",
    "listed as a problem, never read",
    r"00000/samples/00001\.png: escapes the image folder",
)
def _(tmp: Path) -> str:
    from PIL import Image

    folder = geneval_folder(tmp)
    outside = tmp / "secret.png"
    Image.new("RGB", (8, 8)).save(outside)
    target = folder / "00000" / "samples" / "00001.png"
    target.unlink()
    target.symlink_to(outside)
    return scan_report(folder)


@case(
    "log-escapes-folder",
    "generation log pointing outside its folder",
    "entry ignored: the image is regenerated",
    r"trusted: \[\]",
)
def _(tmp: Path) -> str:
    from PIL import Image

    from t2ibench.models.generation import OutputFolder, file_sha256

    outside = tmp / "elsewhere.png"
    Image.new("RGB", (8, 8)).save(outside)
    folder = OutputFolder(tmp / "out", identity={"spec": 1})
    folder.open()
    entry = {
        "prompt_index": 0,
        "sample": 0,
        "file": "../elsewhere.png",
        "sha256": file_sha256(outside),
        "seed": 1,
        "prompt": "p",
    }
    folder.log_path.write_text(json.dumps(entry) + "\n")
    return f"trusted: {sorted(folder.completed())}"


@case(
    "import-escapes-folder",
    "imported folder with a sample linking outside it",
    "error naming the path",
    r"image path escapes",
)
def _(tmp: Path) -> Any:
    from PIL import Image

    from t2ibench.models.generation import FolderImporter

    folder = geneval_folder(tmp)
    outside = tmp / "secret.png"
    Image.new("RGB", (8, 8)).save(outside)
    (folder / "00000" / "samples" / "00000.png").unlink()
    (folder / "00000" / "samples" / "00000.png").symlink_to(outside)
    return FolderImporter(folder).generate(list(enumerate(SUITE)), tmp / "imported")


# -- results, suites, annotations -------------------------------------------------------------------------------


@case(
    "results-bad-line", "malformed line in results.jsonl", "error naming file and line", r"r\.jsonl:2: not valid JSON"
)
def _(tmp: Path) -> Any:
    from t2ibench.geneval_eval import read_results

    good = {"filename": "x/00000/samples/00000.png", "tag": "colors", "prompt": "p", "correct": True, "metadata": "{}"}
    (tmp / "r.jsonl").write_text(json.dumps(good) + "\n{broken\n")
    return read_results(tmp / "r.jsonl")


@case(
    "results-unknown-tag",
    "results line with an unknown task",
    "error naming file, line and tag",
    r"r\.jsonl:1: unknown tag 'paint'",
)
def _(tmp: Path) -> Any:
    from t2ibench.geneval_eval import read_results

    (tmp / "r.jsonl").write_text(
        json.dumps({"filename": "a", "tag": "paint", "prompt": "p", "correct": 1, "metadata": ""}) + "\n"
    )
    return read_results(tmp / "r.jsonl")


@case(
    "suite-bad-line",
    "malformed line in a prompt suite",
    "error naming file and line",
    r"suite\.jsonl:2: unknown class 'unicorn'",
)
def _(tmp: Path) -> Any:
    from t2ibench.suites.geneval import read_suite

    bad = {"tag": "colors", "include": [{"class": "unicorn", "count": 1}], "prompt": "p"}
    (tmp / "suite.jsonl").write_text(json.dumps(SUITE[0]) + "\n" + json.dumps(bad) + "\n")
    return read_suite(tmp / "suite.jsonl")


@case(
    "csv-split-record",
    "annotation CSV with a record split by an unquoted line break",
    "repaired and reported with its line",
    r"repaired 1 row\(s\): split record rejoined \(e\.g\. line 4\)",
)
def _(tmp: Path) -> str:
    def mutate(rows: list[list[str]]) -> list[str]:
        row = rows[1]
        i = 8  # Answer.task-objects
        return [",".join([*row[:i], "a bench"]) + "\n", ",".join(["by a tree", *row[i + 1 :]]) + "\n"]

    return annotation_csv(tmp, mutate)


@case(
    "csv-unknown-colour",
    "annotation CSV with an unknown colour",
    "row dropped and reported with its line",
    r"dropped 1 row\(s\): unknown colour \(e\.g\. line 3\)",
)
def _(tmp: Path) -> str:
    def mutate(rows: list[list[str]]) -> list[str]:
        rows[2][6] = "teal"
        return []

    return annotation_csv(tmp, mutate)


@case(
    "csv-count-out-of-range",
    "annotation CSV with an out-of-range count",
    "row dropped and reported with its line",
    r"dropped 1 row\(s\): count of object 0 out of range \(e\.g\. line 2\)",
)
def _(tmp: Path) -> str:
    def mutate(rows: list[list[str]]) -> list[str]:
        rows[1][4] = "9"
        return []

    return annotation_csv(tmp, mutate)


@case(
    "csv-not-annotations",
    "a CSV that is not an annotation export",
    "error naming the file and missing columns",
    r"toy\.csv: not a GenEval annotation file: missing column",
)
def _(tmp: Path) -> Any:
    from t2ibench.suites.annotations import load_annotations

    (tmp / "toy.csv").write_text("a,b\n1,2\n")
    return load_annotations(tmp / "toy.csv")


# -- embeddings and metrics ------------------------------------------------------------------------------------------


@case(
    "scendi-misaligned",
    "mismatched prompt/image pairs for Scendi",
    "error naming the first mismatched row",
    r"row 1 has image id 'b' but text id 'c'",
)
def _(tmp: Path) -> Any:
    from t2ibench.metrics.scendi import Scendi

    X = np.random.default_rng(0).standard_normal((3, 4))
    return Scendi(kernel="cosine").update(X, X, image_ids=["a", "b", "c"], text_ids=["a", "c", "b"])


@case(
    "scendi-unknown-prompt",
    "image whose prompt has no embedding",
    "error naming the row and prompt id",
    r"row 2 asks for prompt id 'p9'",
)
def _(tmp: Path) -> Any:
    from t2ibench.metrics.scendi import gather_by_id

    return gather_by_id(["p0", "p1", "p9"], ["p0", "p1"], np.eye(2))


@case("nan-embeddings", "NaN embeddings", "error naming the rows", r"non-finite values .* 2 row\(s\): 1, 3")
def _(tmp: Path) -> Any:
    from t2ibench.metrics import fkea_scores

    X = np.ones((5, 3))
    X[[1, 3], 0] = np.nan
    return fkea_scores(X, sigma=1.0, rff_dim=8, seed=0)


@case("inf-embeddings", "infinite embeddings", "error naming the rows", r"non-finite values .* 1 row\(s\): 0")
def _(tmp: Path) -> Any:
    from t2ibench.metrics import vendi_score

    X = np.ones((3, 2))
    X[0, 1] = np.inf
    return vendi_score(X, sigma=1.0)


@case(
    "constant-embeddings",
    "constant embeddings with the median-heuristic σ",
    "error asking for an explicit σ",
    r"median pairwise distance is 0.*set sigma",
)
def _(tmp: Path) -> Any:
    from t2ibench.metrics import median_heuristic_sigma

    return median_heuristic_sigma(np.ones((10, 4)))


@case(
    "dimension-changes",
    "wrong embedding dimension between batches",
    "error naming both dimensions",
    r"dimension 5 but earlier batches .* had dimension 4",
)
def _(tmp: Path) -> Any:
    from t2ibench.metrics import FKEA

    est = FKEA(sigma=1.0, rff_dim=8, seed=0).update(np.ones((3, 4)))
    return est.update(np.ones((3, 5)))


@case("sigma-not-positive", "σ ≤ 0", "error naming the parameter", r"sigma must be a finite number > 0")
def _(tmp: Path) -> Any:
    from t2ibench.metrics import fkea_scores

    return fkea_scores(np.ones((3, 2)), sigma=0.0, rff_dim=8, seed=0)


@case("rff-dim-below-one", "rff_dim < 1", "error naming the parameter", r"rff_dim must be ≥ 1")
def _(tmp: Path) -> Any:
    from t2ibench.metrics import fkea_scores

    return fkea_scores(np.ones((3, 2)), sigma=1.0, rff_dim=0, seed=0)


@case("alpha-not-positive", "α ≤ 0", "error naming the parameter", r"alpha must be > 0")
def _(tmp: Path) -> Any:
    from t2ibench.metrics import vendi_score

    return vendi_score(np.eye(3), sigma=1.0, alpha=-1)


@case("npy-truncated", "truncated .npy embeddings file", "error naming the file", r"e\.npy: truncated")
def _(tmp: Path) -> Any:
    from t2ibench.io import open_embeddings

    np.save(tmp / "e.npy", np.ones((100, 8)))
    (tmp / "e.npy").write_bytes((tmp / "e.npy").read_bytes()[:300])
    return open_embeddings(tmp / "e.npy")


@case(
    "npy-object-array",
    ".npy holding pickled objects",
    "refused without unpickling",
    r"object arrays are not embeddings",
)
def _(tmp: Path) -> Any:
    from t2ibench.io import open_embeddings

    np.save(tmp / "e.npy", np.array([[object()]], dtype=object), allow_pickle=True)
    return open_embeddings(tmp / "e.npy")


@case(
    "foreign-state-file",
    "FKEA state file of another kind",
    "error naming the file",
    r"s\.npz: not a t2ibench covariance state",
)
def _(tmp: Path) -> Any:
    from t2ibench.metrics import FKEA

    np.savez(tmp / "s.npz", weights=np.ones(3))
    return FKEA.load(tmp / "s.npz")


# -- configuration ------------------------------------------------------------------------------------------------


def write_config(tmp: Path, text: str) -> Any:
    from t2ibench.config import load_config

    (tmp / "c.yaml").write_text(text)
    return load_config(tmp / "c.yaml")


@case(
    "config-unknown-key",
    "unknown config key",
    "error naming the key with a did-you-mean",
    r"c\.yaml: .*'modles'; did you mean 'models'",
)
def _(tmp: Path) -> Any:
    return write_config(tmp, "name: x\nmodles: [{name: a}]\n")


@case(
    "config-unknown-backend",
    "unknown generator backend",
    "error naming the key path with a did-you-mean",
    r"models\[0\]\.generator\.backend: .*did you mean 'diffusers'",
)
def _(tmp: Path) -> Any:
    return write_config(tmp, "name: x\nmodels: [{name: a, generator: {backend: difusers}}]\n")


@case("config-python-tag", "YAML with Python tags", "refused by safe_load", r"c\.yaml: not valid YAML \(safe_load")
def _(tmp: Path) -> Any:
    return write_config(tmp, "name: !!python/object/apply:os.system ['true']\nmodels: [{name: a}]\n")


@case("config-missing-file", "config file that does not exist", "error naming the file", r"nope\.yaml: cannot read")
def _(tmp: Path) -> Any:
    from t2ibench.config import load_config

    return load_config(tmp / "nope.yaml")


@case(
    "unknown-kernel",
    "unknown kernel name",
    "error with a did-you-mean",
    r"unknown kernel 'gausian'; did you mean 'gaussian'",
)
def _(tmp: Path) -> Any:
    from t2ibench.metrics import vendi_score

    return vendi_score(np.eye(3), kernel="gausian", sigma=1.0)


@case(
    "unknown-detector-label",
    "detector label outside the 80 classes",
    "error naming the label",
    r"detector label 'unicorn' is not one of the 80 GenEval classes",
)
def _(tmp: Path) -> Any:
    from t2ibench.suites.geneval import vocabulary

    return vocabulary().canonical_class("unicorn")


@case(
    "long-caption",
    "caption over 77 tokens",
    "truncated keeping the end-of-text token, reported",
    r"truncated: \[1\]",
    needs_models=True,
)
def _(tmp: Path) -> str:
    from t2ibench.models.embedding import OpenCLIPEmbedder

    embedder = OpenCLIPEmbedder("tiny-random", None, device="cpu", show_progress=False)
    _, truncated = embedder.tokenize(["a cat", " ".join(["cat"] * 80)])
    return f"truncated: {truncated}"


@case(
    "store-missing-verdicts",
    "storing a model whose images lack verdicts",
    "error before any row is written",
    r"tiny: 1 images have no GenEval verdict",
)
def _(tmp: Path) -> Any:
    from t2ibench.config import parse_config
    from t2ibench.geneval_eval import ResultRow, write_results
    from t2ibench.pipeline import Workspace, step_store

    cfg = parse_config(
        {
            "name": "x",
            "models": [{"name": "tiny"}],
            "outputs": {"store": str(tmp / "populated.duckdb"), "data": str(tmp)},
        }
    )
    ws = Workspace(root=tmp, config=cfg)
    write_results(tmp / "r.jsonl", [ResultRow("x/00000/samples/00000.png", "single_object", "p", True, "", SUITE[0])])
    images = [{"prompt_index": 0, "sample": k, "path": f"x{k}.png", "sha256": str(k), "seed": 1} for k in range(2)]
    empty = {"metrics": [], "modes": []}
    return step_store(
        ws,
        "r",
        cfg.models[0],
        list(enumerate(SUITE)),
        {"images": images, "manifest": {}},
        {"results": str(tmp / "r.jsonl"), "sha256": "x"},
        empty,
        empty,
    )


@case(
    "store-unknown-column",
    "a write with a column the table does not have",
    "error; the transaction is rolled back",
    r"prompts: unknown column\(s\) colour",
)
def _(tmp: Path) -> Any:
    from t2ibench.store import Store

    store = Store(tmp / "populated.duckdb")
    with store.write() as con:
        store.upsert(con, "prompts", [{"suite": "g", "prompt_index": 99, "tag": "t", "prompt": "p", "metadata": {}}])
        store.upsert(con, "prompts", [{"suite": "g", "prompt_index": 98, "colour": "red"}])


@case(
    "sql-write-refused",
    "a modifying statement through the read-only SQL verb",
    "refused; nothing changes",
    r"SQL error",
)
def _(tmp: Path) -> Any:
    from t2ibench.store import Store

    return Store(tmp / "populated.duckdb").query("DELETE FROM prompts")


@case(
    "results-unknown-colour",
    "a results.jsonl line whose failure-analysis colours are not GenEval colours",
    "error naming the file and line; nothing stored",
    r"r\.jsonl:1: colours must map classes to lists of GenEval colour names",
)
def _(tmp: Path) -> Any:
    from t2ibench.geneval_eval import read_results

    line = {"filename": "x/00000/samples/00000.png", "tag": "colors", "prompt": "p", "correct": False}
    line |= {"metadata": json.dumps(SUITE[1]), "details": "{}", "colours": json.dumps({"car": ["teal"]})}
    (tmp / "r.jsonl").write_text(json.dumps(line) + "\n")
    return read_results(tmp / "r.jsonl")


@case(
    "failures-unknown-model",
    "`t2ibench failures --model` with a model the store does not hold",
    "error naming the model, the closest stored name and the stored models",
    r"no stored model 'tiny-aa'; did you mean 'tiny-a'\?",
)
def _(tmp: Path) -> Any:
    from t2ibench.report.failures import collect
    from t2ibench.store import Store

    store = Store(tmp / "populated.duckdb")
    with store.write() as con:
        store.upsert(con, "runs", [{"run_id": "r", "status": "completed", "finished_at": "2026-01-01 00:00"}])
        store.upsert(con, "run_models", [{"run_id": "r", "model": "tiny-a", "model_hash": "h", "evaluator_hash": "e"}])
    try:
        return collect(store, ["tiny-aa"])
    finally:  # leave the populated store as it was
        with store.write() as con:
            con.execute("DELETE FROM run_models WHERE run_id = 'r'")
            con.execute("DELETE FROM runs WHERE run_id = 'r'")


# Behaviours shown by other tests (rendered into docs/reliability.md with the corpus).
OTHER_GUARANTEES = [
    (
        "SIGKILL at any stage of the smoke refresh (11 seeded trials)",
        "restart finishes; tables equal an uninterrupted run; no duplicates; no orphaned partial files",
        "tests/integration/test_crash_resume.py::test_killed_refreshes_resume_to_the_same_tables",
    ),
    (
        "two refreshes started together on one store",
        "one proceeds, the other exits naming it",
        "tests/integration/test_concurrency.py::test_two_refreshes_on_one_store",
    ),
    (
        "a second refresh started with --wait",
        "waits for the first, then runs; both complete",
        "tests/integration/test_concurrency.py::test_a_second_refresh_can_wait_for_the_first",
    ),
    (
        "reading the store while a refresh writes",
        "readers retry briefly and succeed",
        "tests/integration/test_concurrency.py::test_two_refreshes_on_one_store",
    ),
    (
        "a writer holding the store too long",
        "clear error after the timeout",
        "tests/unit/test_store.py::test_a_writer_held_elsewhere_times_out_with_a_clear_message",
    ),
    (
        "a store written by an older schema version",
        "opening it for writing adds the new columns (NULL in old rows); no row lost; views work",
        "tests/unit/test_failure_patterns.py::test_an_old_store_gains_the_new_columns_without_losing_rows",
    ),
    (
        "checkpoints and caches",
        "weights_only / safetensors loading, JSON task results, no pickle anywhere in caches or states",
        "tests/unit/test_architecture.py::test_nothing_unpickles_or_evaluates_untrusted_data",
    ),
]


def reliability_table() -> str:
    """docs/reliability.md's table, rendered from this registry."""
    lines = ["| case | behaviour | test |", "| --- | --- | --- |"]
    for c in CASES:
        lines.append(f"| {c.input} | {c.behaviour} | `tests/integration/test_bad_inputs.py::test_bad_input[{c.id}]` |")
    for what, behaviour, test in OTHER_GUARANTEES:
        lines.append(f"| {what} | {behaviour} | `{test}` |")
    return "\n".join(lines)
