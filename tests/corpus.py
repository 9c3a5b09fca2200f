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
    from t2ibench.benchmarks.geneval.evaluate import scan_folder

    return scan_folder(folder, SUITE, images_per_prompt=2).report(limit=50)


def annotation_csv(root: Path, mutate: Callable[[list[list[str]]], list[str]]) -> str:
    """An annotation file for the official suite's prompt 0 with one mutated row; returns the load report."""
    import csv
    import io

    from t2ibench.benchmarks.geneval.suite import generate_suite
    from t2ibench.benchmarks.geneval.suite_annotations import load_annotations

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

    from t2ibench.hashing import file_sha256
    from t2ibench.models.generation import OutputFolder

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
    from t2ibench.benchmarks.geneval.evaluate import read_results

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
    from t2ibench.benchmarks.geneval.evaluate import read_results

    (tmp / "r.jsonl").write_text(
        json.dumps({"filename": "a", "tag": "paint", "prompt": "p", "correct": True, "metadata": ""}) + "\n"
    )
    return read_results(tmp / "r.jsonl")


@case(
    "suite-bad-line",
    "malformed line in a prompt suite",
    "error naming file and line",
    r"suite\.jsonl:2: unknown class 'unicorn'",
)
def _(tmp: Path) -> Any:
    from t2ibench.benchmarks.geneval.suite import read_suite

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
    from t2ibench.benchmarks.geneval.suite_annotations import load_annotations

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


@case(
    "config-python-tag",
    "YAML with Python tags",
    "refused by safe_load",
    r"c\.yaml: not valid YAML \(safe_load: Python tags are refused\)",
)
def _(tmp: Path) -> Any:
    return write_config(tmp, "name: !!python/object/apply:os.system ['true']\nmodels: [{name: a}]\n")


@case(
    "config-missing-file",
    "config file that does not exist",
    "error naming the file",
    r"nope\.yaml: no such config file",
)
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
    from t2ibench.benchmarks.geneval.suite import vocabulary

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
    from t2ibench.specs import EmbedderConfig

    spec = EmbedderConfig(backend="open_clip", model="tiny-random", normalize=True)
    embedder = OpenCLIPEmbedder(spec, device="cpu", show_progress=False)
    _, truncated = embedder.tokenize(["a cat", " ".join(["cat"] * 80)])
    return f"truncated: {truncated}"


@case(
    "store-missing-verdicts",
    "storing a model whose images lack verdicts",
    "error before any row is written",
    r"tiny: 1 images have no GenEval verdict",
)
def _(tmp: Path) -> Any:
    from t2ibench.benchmarks.geneval.evaluate import ResultRow, write_results
    from t2ibench.config import parse_config
    from t2ibench.hashing import file_digest
    from t2ibench.pipeline import Generated, ImageInfo, Judged, PromptSet, Scores, TaskScores, step_store

    cfg = parse_config({"name": "x", "models": [{"name": "tiny"}]})
    prompt = SUITE[0]["prompt"]
    write_results(
        tmp / "r.jsonl", [ResultRow("x/00000/samples/00000.png", "single_object", prompt, True, "", SUITE[0])]
    )
    images = tuple(ImageInfo(0, k, f"x{k}.png", str(k), 1) for k in range(2))
    empty = Scores(model="tiny", metrics=(), modes=(), n=0)
    generated = Generated(model="tiny", folder=str(tmp), images=images, manifest={})
    judged = Judged(model="tiny", results=str(tmp / "r.jsonl"), sha256=file_digest(tmp / "r.jsonl"), summary={})
    return step_store(
        store=tmp / "populated.duckdb",
        run_id="r",
        model=cfg.models[0],
        suite="geneval",
        model_hash="0" * 16,
        evaluator_hash="1" * 16,
        protocol={},
        lite=[],
        smoke_evaluators=False,
        prompts=PromptSet.of(list(enumerate(SUITE))),
        generated=generated,
        judged=judged,
        scores=TaskScores(model="tiny", rows=(), level=0.95),
        diversity=empty,
        scendi=empty,
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
        store.upsert(con, "prompts", [{"suite": "g", "prompt_index": 99, "task": "t", "prompt": "p", "metadata": {}}])
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
    from t2ibench.benchmarks.geneval.evaluate import read_results

    line = {"filename": "x/00000/samples/00000.png", "tag": "colors", "prompt": SUITE[1]["prompt"], "correct": False}
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
    from t2ibench.benchmarks.geneval.report_failures import collect
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


# -- the SQL surface (docs/security.md) ---------------------------------------------------------------------------


def user_sql(tmp: Path, query: str, **kwargs: Any) -> Any:
    from t2ibench.store import Store

    return Store(tmp / "populated.duckdb", timeout=2).user_query(query, **kwargs)


@case(
    "sql-read-file",
    "SQL reading a file outside the store (read_csv)",
    "refused by the sealed connection; nothing read",
    r"file system operations are disabled",
)
def _(tmp: Path) -> Any:
    (tmp / "secret.csv").write_text("token\nhunter2\n")
    return user_sql(tmp, f"SELECT * FROM read_csv('{tmp / 'secret.csv'}')")


@case(
    "sql-glob", "SQL listing files (glob)", "refused by the sealed connection", r"file system operations are disabled"
)
def _(tmp: Path) -> Any:
    return user_sql(tmp, "SELECT * FROM glob('/etc/*')")


@case(
    "sql-copy-to", "SQL writing a file (COPY … TO)", "refused before it runs; no file written", r"COPY is not allowed"
)
def _(tmp: Path) -> Any:
    try:
        return user_sql(tmp, f"COPY prompts TO '{tmp / 'leak.csv'}'", write=True)
    finally:
        assert not (tmp / "leak.csv").exists()


@case(
    "sql-export-database",
    "SQL exporting the database (EXPORT DATABASE)",
    "refused before it runs",
    r"EXPORT is not allowed",
)
def _(tmp: Path) -> Any:
    return user_sql(tmp, f"EXPORT DATABASE '{tmp / 'dump'}'")


@case(
    "sql-attach-other",
    "SQL attaching another DuckDB file read-write",
    "refused; the other file is untouched",
    r"ATTACH is not allowed",
)
def _(tmp: Path) -> Any:
    return user_sql(tmp, f"ATTACH '{tmp / 'other.duckdb'}' AS o (READ_WRITE)", write=True)


@case(
    "sql-attach-self",
    "SQL attaching the store itself under a second name",
    "refused (DuckDB would allow it)",
    r"ATTACH is not allowed",
)
def _(tmp: Path) -> Any:
    return user_sql(tmp, f"ATTACH '{tmp / 'populated.duckdb'}' AS again")


@case(
    "sql-install",
    "SQL installing an extension from the network",
    "refused before it runs",
    r"LOAD is not allowed: installing or loading extensions",
)
def _(tmp: Path) -> Any:
    return user_sql(tmp, "INSTALL httpfs")


@case(
    "sql-set-locked",
    "SQL re-enabling external access (SET)",
    "refused; the configuration is locked",
    r"SET is not allowed",
)
def _(tmp: Path) -> Any:
    return user_sql(tmp, "SET enable_external_access = true", write=True)


@case(
    "sql-copy-database-pragma",
    "SQL copying the database (parsed by DuckDB as a PRAGMA)",
    "refused",
    r"PRAGMA statements",
)
def _(tmp: Path) -> Any:
    return user_sql(tmp, "COPY FROM DATABASE populated TO other", write=True)


@case("sql-empty", "an empty SQL query", "error: the query is empty", r"the query is empty")
def _(tmp: Path) -> Any:
    return user_sql(tmp, "   ")


@case("sql-comment-only", "an SQL query of comments only", "error: the query is empty", r"the query is empty")
def _(tmp: Path) -> Any:
    return user_sql(tmp, "-- SELECT * FROM verdicts\n/* nothing */")


@case(
    "sql-write-missing-store",
    "`--write` on a store path that does not exist",
    "error; no store is created",
    r"no such results store \(--write never creates one\)",
)
def _(tmp: Path) -> Any:
    from t2ibench.store import Store

    try:
        return Store(tmp / "typo.duckdb").user_query("CREATE TABLE t (x INT)", write=True)
    finally:
        assert not (tmp / "typo.duckdb").exists()


@case(
    "sql-timeout",
    "an SQL query running past --timeout",
    "stopped; the store released; clear message",
    r"stopped after 0\.3 s \(--timeout\) and the store released",
)
def _(tmp: Path) -> Any:
    return user_sql(tmp, "SELECT sum(a * b) FROM range(200000) t1(a), range(200000) t2(b)", time_limit=0.3)


@case(
    "sql-out-injection",
    "`--out` with SQL crafted to break out of a COPY",
    "never spliced into a COPY: no file written",
    r"SQL error",
)
def _(tmp: Path) -> Any:
    from t2ibench.store import Store

    evil = tmp / "evil.csv"
    try:
        return Store(tmp / "populated.duckdb").user_export(
            f"SELECT 1) TO '{evil}' (FORMAT CSV); SELECT (1", tmp / "o.csv"
        )
    finally:
        assert not evil.exists()
        assert not (tmp / "o.csv").exists()


@case(
    "sql-modify-read-only",
    "a modifying statement hidden after a query, without --write",
    "refused before anything runs",
    r"statement 2 \(DELETE\) is not allowed in a read-only query",
)
def _(tmp: Path) -> Any:
    return user_sql(tmp, "SELECT 1; DELETE FROM prompts")


# -- results, suites and metadata: strict types, nothing twice --------------------------------------------------------


def results_line(tmp: Path, **changes: Any) -> Any:
    from t2ibench.benchmarks.geneval.evaluate import read_results

    line = {"filename": "x/00000/samples/00000.png", "tag": "single_object", "prompt": SUITE[0]["prompt"]}
    line |= {"correct": True, "reason": "", "metadata": json.dumps(SUITE[0]), "details": "{}"}
    line |= changes
    (tmp / "r.jsonl").write_text(json.dumps(line) + "\n")
    return read_results(tmp / "r.jsonl")


@case(
    "results-correct-string",
    'a results line with "correct": "false" (a string)',
    "error naming file and line; never read as true",
    r"r\.jsonl:1: correct must be a JSON boolean",
)
def _(tmp: Path) -> Any:
    return results_line(tmp, correct="false")


@case(
    "results-correct-number",
    'a results line with "correct": 1',
    "error naming file and line",
    r"r\.jsonl:1: correct must be a JSON boolean",
)
def _(tmp: Path) -> Any:
    return results_line(tmp, correct=1)


@case(
    "results-tag-disagrees",
    "a results line whose tag disagrees with its metadata",
    "error naming both tags",
    r"tag 'counting' disagrees with its metadata's tag 'single_object'",
)
def _(tmp: Path) -> Any:
    return results_line(tmp, tag="counting")


@case(
    "results-duplicate-key",
    "a results line giving a key twice",
    "error: key given twice",
    r"r\.jsonl:1: key 'correct' is given twice",
)
def _(tmp: Path) -> Any:
    from t2ibench.benchmarks.geneval.evaluate import read_results

    (tmp / "r.jsonl").write_text('{"filename": "a", "correct": true, "correct": false}\n')
    return read_results(tmp / "r.jsonl")


@case(
    "results-nan-literal",
    "a results line with NaN (not JSON)",
    "error naming the line",
    r"r\.jsonl:1: not valid JSON \(NaN is not JSON\)",
)
def _(tmp: Path) -> Any:
    from t2ibench.benchmarks.geneval.evaluate import read_results

    (tmp / "r.jsonl").write_text('{"filename": "a", "score": NaN}\n')
    return read_results(tmp / "r.jsonl")


@case(
    "results-image-twice",
    "a results.jsonl judging one image twice",
    "error naming both lines",
    r"r\.jsonl:2: a second result for x/00000/samples/00000\.png \(first at line 1\)",
)
def _(tmp: Path) -> Any:
    from t2ibench.benchmarks.geneval.evaluate import ResultRow, read_results, write_results

    row = ResultRow("x/00000/samples/00000.png", "single_object", SUITE[0]["prompt"], True, "", SUITE[0])
    write_results(tmp / "r.jsonl", [row, row])
    return read_results(tmp / "r.jsonl")


def suite_line(tmp: Path, record: Any) -> Any:
    from t2ibench.benchmarks.geneval.suite import read_suite

    (tmp / "suite.jsonl").write_text(json.dumps(record) + "\n")
    return read_suite(tmp / "suite.jsonl")


@case(
    "suite-count-bool",
    "a prompt record with count true",
    "error: a count must be a positive integer",
    r"suite\.jsonl:1: include\[0\] count must be a positive integer; got True",
)
def _(tmp: Path) -> Any:
    return suite_line(
        tmp, {"tag": "single_object", "include": [{"class": "cat", "count": True}], "prompt": "a photo of a cat"}
    )


@case(
    "suite-count-float",
    "a prompt record with count 2.5",
    "error naming the clause",
    r"include\[0\] count must be a positive integer; got 2\.5",
)
def _(tmp: Path) -> Any:
    return suite_line(
        tmp, {"tag": "counting", "include": [{"class": "cat", "count": 2.5}], "prompt": "a photo of cats"}
    )


@case(
    "suite-misspelt-key",
    "a prompt clause with a misspelt key ('colour')",
    "error with a did-you-mean (never ignored)",
    r"include\[0\]: unknown key 'colour'; did you mean 'color'",
)
def _(tmp: Path) -> Any:
    return suite_line(
        tmp,
        {"tag": "colors", "include": [{"class": "car", "count": 1, "colour": "red"}], "prompt": "a photo of a red car"},
    )


@case(
    "suite-position-malformed",
    "a position clause that is not [relation, index]",
    "error naming the clause",
    r"include\[1\]: position must be \[relation, index\]",
)
def _(tmp: Path) -> Any:
    include = [{"class": "cat", "count": 1}, {"class": "dog", "count": 1, "position": ["left of"]}]
    return suite_line(tmp, {"tag": "position", "include": include, "prompt": "a photo of a dog left of a cat"})


@case(
    "suite-include-not-list",
    "a prompt record whose include is a string",
    "error naming the file and line",
    r"suite\.jsonl:1: include must be a non-empty list of clauses",
)
def _(tmp: Path) -> Any:
    return suite_line(tmp, {"tag": "single_object", "include": "cat", "prompt": "a photo of a cat"})


@case(
    "suite-record-twice",
    "a prompt suite listing one record twice",
    "error naming both lines",
    r"suite\.jsonl:2: repeats the prompt record of line 1",
)
def _(tmp: Path) -> Any:
    from t2ibench.benchmarks.geneval.suite import read_suite

    (tmp / "suite.jsonl").write_text((json.dumps(SUITE[0]) + "\n") * 2)
    return read_suite(tmp / "suite.jsonl")


@case(
    "metadata-two-records",
    "a prompt folder's metadata.jsonl holding two records",
    "listed as a problem (only one may be there)",
    r"00000/metadata\.jsonl: malformed metadata \(holds 2 records",
)
def _(tmp: Path) -> str:
    folder = geneval_folder(tmp)
    (folder / "00000" / "metadata.jsonl").write_text(json.dumps(SUITE[0]) + "\n" + json.dumps(SUITE[1]) + "\n")
    return scan_report(folder)


@case(
    "sample-twice",
    "one sample in two files (00000.png and 00000.PNG / .jpg)",
    "listed as a problem; neither is judged",
    r"00001/samples: one sample in several files \(00000\.jpg, 00000\.png\)",
)
def _(tmp: Path) -> str:
    from PIL import Image

    folder = geneval_folder(tmp)
    Image.new("RGB", (32, 24)).save(folder / "00001" / "samples" / "00000.jpg")
    return scan_report(folder)


@case(
    "partial-other-settings",
    "resuming an evaluation whose partial results were made with other thresholds",
    "recomputed with a note, never reused",
    r"made with other settings \(changed: params\); judging every image again",
)
def _(tmp: Path) -> str:
    import logging

    from t2ibench.benchmarks.geneval.evaluate import evaluate_scan, scan_folder
    from t2ibench.benchmarks.geneval.metrics import Detection, GenEvalParams
    from t2ibench.errors import NOTES
    from t2ibench.models.detection import DetectionSet

    class Detector:
        def describe(self) -> dict[str, str]:
            return {"backend": "fixed"}

        def detect(self, images: Any) -> list[DetectionSet]:
            found = [Detection("cat", (0, 0, 9, 9), 0.5), Detection("car", (10, 0, 19, 9), 0.5)]
            return [DetectionSet(detections=found, masks=None, image_size=images[0].size)]

    class Red:
        def classify(self, image: Any, objects: Any, classname: str) -> list[str]:
            return ["red"] * len(objects)

    scan = scan_folder(geneval_folder(tmp), SUITE, images_per_prompt=2)
    out = tmp / "results.jsonl"
    evaluate_scan(scan, Detector(), Red(), out=out, show_progress=False)
    lines = out.read_text().splitlines()
    # leave what an interrupted run with threshold 0.3 leaves, then resume with 0.6
    from t2ibench.benchmarks.geneval.evaluate import evaluation_fingerprint, parse_result
    from t2ibench.hashing import file_sha256
    from t2ibench.resume import PartialResults

    left = PartialResults(out, evaluation_fingerprint(Detector(), Red(), GenEvalParams()), parse_result)
    left.start([(json.loads(lines[0]), file_sha256(scan.items[0].path))])
    left.close()
    heard: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: heard.append(record.getMessage())  # type: ignore[method-assign]
    NOTES.addHandler(handler)
    try:
        rows = evaluate_scan(scan, Detector(), Red(), params=GenEvalParams(threshold=0.6), out=out, show_progress=False)
    finally:
        NOTES.removeHandler(handler)
    assert not any(r.correct for r in rows), "0.5-score detections must fail a 0.6 threshold"
    return "\n".join(heard)


@case(
    "reimport-source-changed",
    "re-importing a folder whose source images changed",
    "the changed images are re-imported, never kept stale",
    r"re-imported: \['.*00000/samples/00001\.png'\]",
)
def _(tmp: Path) -> str:
    from PIL import Image

    from t2ibench.models.generation import FolderImporter

    folder = geneval_folder(tmp)
    importer = FolderImporter(folder)
    first = importer.generate(list(enumerate(SUITE)), tmp / "imported")
    Image.new("RGB", (32, 24), (0, 0, 255)).save(folder / "00000" / "samples" / "00001.png")
    second = importer.generate(list(enumerate(SUITE)), tmp / "imported")
    assert first[1].sha256 != second[1].sha256
    assert first[0].sha256 == second[0].sha256
    return f"re-imported: {importer.reimported}"


# -- YAML ------------------------------------------------------------------------------------------------------------


@case(
    "yaml-duplicate-key",
    "a config giving one key twice",
    "error naming both lines (never 'last one wins')",
    r"c\.yaml:3: key 'name' is given twice \(first at line 1\)",
)
def _(tmp: Path) -> Any:
    return write_config(tmp, "name: x\nmodels: [{name: a}]\nname: y\n")


@case(
    "yaml-nested-duplicate-key",
    "a config section giving one key twice",
    "error naming the line",
    r"c\.yaml:4: key 'steps' is given twice",
)
def _(tmp: Path) -> Any:
    return write_config(tmp, "name: x\nmodels:\n  - {name: a, generator: {steps: 3,\n     steps: 30}}\n")


@case(
    "yaml-alias-bomb",
    "a YAML alias bomb ('billion laughs')",
    "refused before expansion",
    r"c\.yaml: YAML expands to more than 100000 nodes",
)
def _(tmp: Path) -> Any:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    return write_config(tmp, "\n".join(lines) + "\nname: x\nmodels: [{name: a}]\n")


@case(
    "yaml-recursive-alias",
    "a YAML alias that refers to itself",
    "error naming the line",
    r"c\.yaml:2: a YAML alias refers to itself",
)
def _(tmp: Path) -> Any:
    return write_config(tmp, "name: x\nmodels: &m [{name: a, label: *m}]\n")


@case(
    "config-not-utf8",
    "a config file that is not UTF-8 text",
    "error naming the file and byte",
    r"c\.yaml: not UTF-8 text \(byte 6\)",
)
def _(tmp: Path) -> Any:
    from t2ibench.config import load_config

    (tmp / "c.yaml").write_bytes(b"name: \xff\xfe\n")
    return load_config(tmp / "c.yaml")


# -- annotations -------------------------------------------------------------------------------------------------


@case(
    "csv-duplicate-header",
    "an annotation CSV naming a column twice",
    "error naming the column (never 'last one wins')",
    r"annotations_toy\.csv: the header names column\(s\) Answer\.task-count-0 more than once",
)
def _(tmp: Path) -> Any:
    def mutate(rows: list[list[str]]) -> list[str]:
        rows[0][5] = "Answer.task-count-0"
        return []

    return annotation_csv(tmp, mutate)


@case(
    "csv-duplicate-record",
    "an annotation CSV with one record twice (Answer.ee included)",
    "the copy dropped and reported with its line",
    r"dropped 1 row\(s\): duplicate of an earlier record \(Answer\.ee included\) \(e\.g\. line 3\)",
)
def _(tmp: Path) -> str:
    def mutate(rows: list[list[str]]) -> list[str]:
        rows[0].append("Answer.ee")
        rows[1].append("33.49")
        rows[2].append("33.49")
        return []

    return annotation_csv(tmp, mutate)


@case(
    "csv-count-inf",
    "an annotation CSV with count 'inf'",
    "row dropped and reported (no crash)",
    r"dropped 1 row\(s\): count of object 0 not a number \(e\.g\. line 2\)",
)
def _(tmp: Path) -> str:
    def mutate(rows: list[list[str]]) -> list[str]:
        rows[1][4] = "inf"
        return []

    return annotation_csv(tmp, mutate)


@case(
    "annotations-file-twice", "the same annotation file given twice", "error: each file once", r"given twice \(also as"
)
def _(tmp: Path) -> Any:
    from t2ibench.benchmarks.geneval.agreement import load_all_annotations
    from t2ibench.benchmarks.geneval.suite import generate_suite

    annotation_csv(tmp, lambda rows: [])
    path = tmp / "annotations_toy.csv"
    return load_all_annotations([path, tmp / "." / path.name], generate_suite())


@case(
    "annotations-overlap",
    "two annotation files annotating the same images",
    "error naming both files",
    r"that .*annotations_toy\.csv also annotates",
)
def _(tmp: Path) -> Any:
    import shutil

    from t2ibench.benchmarks.geneval.agreement import load_all_annotations
    from t2ibench.benchmarks.geneval.suite import generate_suite

    annotation_csv(tmp, lambda rows: [])
    (tmp / "b").mkdir()
    shutil.copy(tmp / "annotations_toy.csv", tmp / "b" / "annotations_toy.csv")  # same source, same images
    return load_all_annotations([tmp / "annotations_toy.csv", tmp / "b" / "annotations_toy.csv"], generate_suite())


@case(
    "scores-score-string",
    'a scores file with "score": "0.5" (a string)',
    "error naming the line",
    r"s\.jsonl:1: expected \{source: str, prompt_id: int, image_id: int, score: finite number\}",
)
def _(tmp: Path) -> Any:
    from t2ibench.benchmarks.geneval.agreement import read_scores

    (tmp / "s.jsonl").write_text(json.dumps({"source": "clip", "prompt_id": 0, "image_id": 0, "score": "0.5"}) + "\n")
    return read_scores(tmp / "s.jsonl")


@case(
    "auto-source-ambiguous",
    "`--auto RESULTS` without a source when the annotations cover several",
    "error asking for SOURCE=",
    r"--auto r\.jsonl: name the source \(SOURCE=PATH\); annotations cover clip, sdv2",
)
def _(tmp: Path) -> Any:
    from t2ibench.benchmarks.geneval.agreement import parse_auto_spec

    return parse_auto_spec("r.jsonl", ["clip", "sdv2"])


# -- names and paths -------------------------------------------------------------------------------------------------


def model_named(tmp: Path, name: str) -> Any:
    return write_config(tmp, f"name: x\nmodels: [{{name: {json.dumps(name)}}}]\n")


@case(
    "model-name-slash",
    "a model name with a path separator ('a/b')",
    "refused when the config is loaded",
    r"models\[0\]\.name: model name 'a/b' cannot be used as a folder name",
)
def _(tmp: Path) -> Any:
    return model_named(tmp, "a/b")


@case(
    "model-name-dotdot",
    "a model name '..'",
    "refused when the config is loaded",
    r"model name '\.\.' cannot be used as a folder name",
)
def _(tmp: Path) -> Any:
    return model_named(tmp, "..")


@case("model-name-hidden", "a model name with a leading dot", "refused", r"model name '\.hidden' cannot be used")
def _(tmp: Path) -> Any:
    return model_named(tmp, ".hidden")


@case("model-name-control", "a model name with a control character", "refused", r"model name 'a\\tb' cannot be used")
def _(tmp: Path) -> Any:
    return model_named(tmp, "a\tb")


@case(
    "model-names-case",
    "two model names differing only in case",
    "refused (one folder on case-insensitive disks)",
    r"names must be unique \(ignoring case",
)
def _(tmp: Path) -> Any:
    return write_config(tmp, "name: x\nmodels: [{name: SD}, {name: sd}]\n")


@case("config-name-path", "a config name with path parts", "refused", r"name: config name '\.\./x' cannot be used")
def _(tmp: Path) -> Any:
    return write_config(tmp, "name: ../x\nmodels: [{name: a}]\n")


@case(
    "outputs-escape",
    "an output path leading outside the workspace ('../')",
    "refused when the config is loaded",
    r"outputs\.data: '\.\./elsewhere' leads outside the workspace",
)
def _(tmp: Path) -> Any:
    return write_config(tmp, "name: x\nmodels: [{name: a}]\noutputs: {data: ../elsewhere}\n")


@case(
    "outputs-absolute-elsewhere",
    "an absolute output path outside the workspace",
    "refused when the config is loaded",
    r"outputs\.store: '/etc/t2ibench\.duckdb' leads outside the workspace",
)
def _(tmp: Path) -> Any:
    return write_config(tmp, "name: x\nmodels: [{name: a}]\noutputs: {store: /etc/t2ibench.duckdb}\n")


# -- config values: types and ranges, before any work ------------------------------------------------------------------


def config_with(tmp: Path, section: str) -> Any:
    return write_config(tmp, f"name: x\nmodels: [{{name: a}}]\n{section}\n")


@case(
    "config-threshold-range",
    "a detection threshold of 1.5",
    "error naming the key and the range",
    r"evaluators\.geneval\.threshold: must be in \[0, 1\); got 1\.5",
)
def _(tmp: Path) -> Any:
    return config_with(tmp, "evaluators: {geneval: {threshold: 1.5}}")


@case(
    "config-nan",
    "a threshold given as .nan",
    "error: not a number",
    r"evaluators\.geneval\.counting_threshold: expected a number, got nan",
)
def _(tmp: Path) -> Any:
    return config_with(tmp, "evaluators: {geneval: {counting_threshold: .nan}}")


@case(
    "config-compositor-variant",
    "a compositor model 'sloppy:2' (error rate above 1)",
    "error naming the key and the allowed variants",
    r"models\[0\]\.generator\.model: compositor model 'sloppy:2': the error rate must be in \(0, 1\]",
)
def _(tmp: Path) -> Any:
    return write_config(tmp, "name: x\nmodels: [{name: a, generator: {backend: compositor, model: 'sloppy:2'}}]\n")


@case(
    "config-compositor-steps",
    "diffusion steps given to a compositor model",
    "refused: a value that would be ignored",
    r"models\[0\]\.generator\.steps: has no effect with 'backend: compositor'; remove it",
)
def _(tmp: Path) -> Any:
    return write_config(
        tmp, "name: x\nmodels: [{name: a, generator: {backend: compositor, model: faithful, steps: 5}}]\n"
    )


@case(
    "config-suite-classes",
    "a suite restricted to a misspelt class",
    "error with a did-you-mean",
    r"geneval\.classes: unknown class 'hors'; did you mean 'horse'\?",
)
def _(tmp: Path) -> Any:
    return write_config(tmp, "name: x\ngeneval: {classes: [person, hors]}\nmodels: [{name: a}]\n")


@case(
    "config-ssd-resize",
    "an input resize given to the fixed-size SSD detector",
    "refused: a value that would be ignored",
    r"evaluators\.geneval\.detector\.resize: the opencv-ssd network reads a fixed 300×300 input",
)
def _(tmp: Path) -> Any:
    return config_with(tmp, "evaluators: {geneval: {detector: {backend: opencv-ssd, resize: [300, 600]}}}")


@case(
    "config-lite-colour-arch",
    "a CLIP architecture given to the lite colour namer",
    "refused: a value that would be ignored",
    r"evaluators\.geneval\.colour\.arch: is read by the clip backend only",
)
def _(tmp: Path) -> Any:
    return config_with(tmp, "evaluators: {geneval: {colour: {backend: lite, arch: ViT-B-32}}}")


@case(
    "prompt-not-templated",
    "a free-form prompt given to the prompt-structure text representation",
    "error naming the prompt",
    r"prompt 'a painting of a cat' is not one of GenEval's templates",
)
def _(tmp: Path) -> Any:
    from t2ibench.benchmarks.geneval.suite import structure_vector

    return structure_vector("a painting of a cat")


@case(
    "compositor-truth-missing",
    "a self-test pointed at a folder without construction truth",
    "error naming the file",
    r"truth\.jsonl: missing \(only compositor folders carry construction truth\)",
)
def _(tmp: Path) -> Any:
    from t2ibench.models.compositor import read_truth

    return read_truth(tmp)


def _photo_truth(tmp: Path, photo: str, prompt: str) -> Path:
    """A one-photo truth set (chelsea, with ``photo``'s extra fields) asking ``prompt`` ('[text, truth, reason]')."""
    text = (
        f"name: t\nversion: 1\nphotos:\n  chelsea: {{source: 'skimage:chelsea', present: {{cat: 1}}, note: a cat, "
        f"{photo}}}\nimages:\n  - rows: [[chelsea]]\n    prompts: [{prompt}]\n"
    )
    (tmp / "t.yaml").write_text(text)
    return tmp / "t.yaml"


@case(
    "photo-truth-contradicted",
    "a photo truth set whose stated truth its own inventory contradicts ('a photo of a dog' true on a cat)",
    "error naming the file, image, prompt and both truths",
    r"t\.yaml: images\[0\]\.prompts\[0\] \('a photo of a dog'\): stated true, but the photos' inventories and the "
    r"layout make it false",
)
def _(tmp: Path) -> Any:
    from t2ibench.benchmarks.geneval.suite_photos import load_photo_truth

    return load_photo_truth(_photo_truth(tmp, "sha256: " + "0" * 64, "[a photo of a dog, true, wrong]"))


@case(
    "photo-truth-pixels-changed",
    "a photo truth set whose photo's pixels are not the ones reviewed (another checksum)",
    "error naming the file and the photo when the set is loaded; nothing judged",
    r"t\.yaml: photos\.chelsea: photo 'skimage:chelsea': its pixels \(sha256 [0-9a-f]{12}…\) are not the ones "
    r"reviewed",
)
def _(tmp: Path) -> Any:
    from t2ibench.benchmarks.geneval.suite_photos import load_photo_truth

    return load_photo_truth(_photo_truth(tmp, "sha256: " + "0" * 64, "[a photo of a cat, true, a cat]"))


@case(
    "photo-truth-unsure-asked",
    "a photo truth set asking about a class its photo lists as unsure",
    "error naming the prompt and the class",
    r"prompts\[0\] \('a photo of a bed'\): asks about \['bed'\], listed as unsure",
)
def _(tmp: Path) -> Any:
    from t2ibench.benchmarks.geneval.suite_photos import load_photo_truth

    return load_photo_truth(
        _photo_truth(tmp, "sha256: " + "0" * 64 + ", unsure: [bed]", "[a photo of a bed, false, x]")
    )


@case(
    "config-images-zero",
    "images_per_prompt: 0",
    "error naming the key",
    r"models\[0\]\.generator\.images_per_prompt: must be in \[1, 10000\]; got 0",
)
def _(tmp: Path) -> Any:
    return write_config(tmp, "name: x\nmodels: [{name: a, generator: {images_per_prompt: 0}}]\n")


@case(
    "config-rff-zero",
    "rff_dim: 0 in the config",
    "error naming the key",
    r"evaluators\.diversity\.rff_dim: must be ≥ 1; got 0",
)
def _(tmp: Path) -> Any:
    return config_with(tmp, "evaluators: {diversity: {rff_dim: 0}}")


@case(
    "config-rff-memory",
    "rff_dim so large its covariance cannot fit in memory",
    "refused with the estimate and the limit",
    r"evaluators\.scendi\.rff_dim: rff_dim 10000000 .* needs ~.* of memory; the limit is",
)
def _(tmp: Path) -> Any:
    return config_with(tmp, "evaluators: {scendi: {rff_dim: 10000000}}")


@case(
    "config-shards-zero",
    "diversity shards: 0",
    "error naming the key",
    r"evaluators\.diversity\.shards: must be in \[1, 4096\]; got 0",
)
def _(tmp: Path) -> Any:
    return config_with(tmp, "evaluators: {diversity: {shards: 0}}")


@case(
    "config-sigma-negative",
    "a negative σ in the config",
    "error naming the key",
    r"evaluators\.diversity\.sigma: must be a number ≥ 1e-100 .* got -1\.0",
)
def _(tmp: Path) -> Any:
    return config_with(tmp, "evaluators: {diversity: {sigma: -1}}")


@case(
    "config-alphas-empty",
    "an empty list of entropy orders",
    "error naming the key",
    r"evaluators\.diversity\.alphas: alphas must list at least one entropy order",
)
def _(tmp: Path) -> Any:
    return config_with(tmp, "evaluators: {diversity: {alphas: []}}")


@case(
    "config-alphas-twice",
    "an entropy order listed twice",
    "error naming the key",
    r"evaluators\.diversity\.alphas: lists an order twice",
)
def _(tmp: Path) -> Any:
    return config_with(tmp, "evaluators: {diversity: {alphas: [1, 1.0]}}")


@case(
    "config-ignored-param",
    "a generation setting under the folder backend (would be ignored)",
    "refused: it has no effect",
    r"generator\.steps: has no effect with 'backend: folder'",
)
def _(tmp: Path) -> Any:
    return write_config(tmp, "name: x\nmodels: [{name: a, generator: {backend: folder, source: imgs, steps: 30}}]\n")


@case(
    "config-prompts-beyond",
    "a prompt range beyond the suite",
    "error naming the index and the suite size",
    r"geneval\.prompts: index 99999999999 is beyond the suite \(580 prompts at most",
)
def _(tmp: Path) -> Any:
    return config_with(tmp, "geneval: {prompts: '0-99999999999'}")


@case(
    "config-prompts-backwards",
    "a prompt range that runs backwards ('9-3')",
    "error naming the range",
    r"geneval\.prompts: range '9-3' runs backwards",
)
def _(tmp: Path) -> Any:
    return config_with(tmp, "geneval: {prompts: '9-3'}")


@case(
    "config-device",
    "an unknown device name",
    "error naming the key",
    r"runtime\.device: must be auto, cpu, cuda, cuda:N or mps; got 'gpu0'",
)
def _(tmp: Path) -> Any:
    return config_with(tmp, "runtime: {device: gpu0}")


@case(
    "config-background",
    "an unparsable colour-crop background",
    "error naming the key",
    r"colour\.background: must be a colour such as '#999999' or 'original'",
)
def _(tmp: Path) -> Any:
    return config_with(tmp, "evaluators: {geneval: {colour: {background: '#99'}}}")


@case(
    "config-mmdet-no-config",
    "the mmdet detector without its config file",
    "error naming the key",
    r"detector\.mmdet_config: the mmdet backend needs",
)
def _(tmp: Path) -> Any:
    return config_with(tmp, "evaluators: {geneval: {detector: {backend: mmdet}}}")


@case(
    "config-seed-huge",
    "a seed beyond 32 bits",
    "error naming the key",
    r"evaluators\.diversity\.seed: must be in \[0, 2147483647\]",
)
def _(tmp: Path) -> Any:
    return config_with(tmp, "evaluators: {diversity: {seed: 99999999999}}")


@case(
    "run-invalid-config-fails-fast",
    "`t2ibench run` with an invalid config",
    "one line naming the key, before Prefect starts",
    r"t2ibench run: error: .*retries: must be in \[0, 100\]; got -1",
)
def _(tmp: Path) -> str:
    import contextlib
    import io

    from t2ibench.cli import main

    (tmp / "configs").mkdir()
    (tmp / "configs" / "c.yaml").write_text("name: x\nmodels: [{name: a}]\nruntime: {retries: -1}\n")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = main(["run", "--config", str(tmp / "configs" / "c.yaml")])
    assert status == 2
    assert err.getvalue().count("\n") == 1
    return err.getvalue()


@case(
    "cli-bad-number",
    "a CLI option out of range (`--rff-dim 0`)",
    "refused by the parser naming the option",
    r"argument --rff-dim: must be in \[1, 1000000\]; got 0",
)
def _(tmp: Path) -> str:
    import contextlib
    import io

    from t2ibench.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.suppress(SystemExit):
        main(["diversity", "x.npy", "--rff-dim", "0"])
    return err.getvalue()


# -- resources and numerics ------------------------------------------------------------------------------------------


@case(
    "rff-memory",
    "FKEA with rff_dim whose covariance would not fit in memory",
    "refused before allocating, with the estimate",
    r"a 20000000×20000000 feature covariance needs ~.* of memory; the limit is",
)
def _(tmp: Path) -> Any:
    from t2ibench.metrics import FKEA

    return FKEA(sigma=1.0, rff_dim=10_000_000, seed=0).update(np.ones((2, 3)))


@case(
    "npy-shape-overflow",
    ".npy header whose shape product overflows int64",
    "error naming the file (no overflow, no allocation)",
    r"e\.npy: truncated: \d+ bytes, header promises \d{30,}",
)
def _(tmp: Path) -> Any:
    from t2ibench.io import open_embeddings

    with open(tmp / "e.npy", "wb") as fh:  # a header promising 2^62 × 2^62 floats, then 16 bytes
        np.lib.format.write_array_header_1_0(fh, {"descr": "<f4", "fortran_order": False, "shape": (2**62, 2**62)})
        fh.write(b"\0" * 16)
    return open_embeddings(tmp / "e.npy")


@case(
    "exact-memory",
    "exact VENDI on more rows than memory allows",
    "refused before allocating, naming the limit",
    r"exact Gaussian VENDI of n=2000 .* needs ~61 MiB of memory; the limit is 1 MiB",
)
def _(tmp: Path) -> Any:
    import os

    from t2ibench.metrics import vendi_score

    os.environ["T2IBENCH_MEMORY_LIMIT"] = "1M"
    try:
        return vendi_score(np.random.default_rng(0).standard_normal((2000, 4)), sigma=1.0)
    finally:
        del os.environ["T2IBENCH_MEMORY_LIMIT"]


@case(
    "generate-per-task-huge",
    "a suite of a billion prompts per task",
    "refused before generating",
    r"per_task must be ≤ 100000",
)
def _(tmp: Path) -> Any:
    from t2ibench.benchmarks.geneval.suite import generate_suite

    return generate_suite(per_task=10**9)


@case(
    "complex-embeddings",
    "complex-valued embeddings",
    "refused (the imaginary part would be lost)",
    r"complex values \(dtype complex128\) are not embeddings",
)
def _(tmp: Path) -> Any:
    from t2ibench.metrics import fkea_scores

    return fkea_scores(np.ones((4, 3)) * (1 + 1j), sigma=1.0, rff_dim=8, seed=0)


@case("string-embeddings", "an .npy of strings", "refused naming the file", r"e\.npy must be numeric; got dtype <U1")
def _(tmp: Path) -> Any:
    from t2ibench.io import open_embeddings

    np.save(tmp / "e.npy", np.array([["a", "b"]]))
    return open_embeddings(tmp / "e.npy")


@case(
    "overflowing-embeddings",
    "embeddings of magnitude 1e200",
    "refused with the reason (the data, not σ)",
    r"values up to 1e\+200 in 1 row\(s\): 2; squared distances and norms overflow float64",
)
def _(tmp: Path) -> Any:
    from t2ibench.metrics import median_heuristic_sigma

    X = np.random.default_rng(0).standard_normal((5, 3))
    X[2] = 1e200
    return median_heuristic_sigma(X)


@case(
    "underflowing-embeddings",
    "embeddings all below 1e-200 in magnitude",
    "refused with the reason (not 'constant embeddings')",
    r"every value is below 1e-150 in magnitude .* underflow float64",
)
def _(tmp: Path) -> Any:
    from t2ibench.metrics import vendi_score

    return vendi_score(np.random.default_rng(0).standard_normal((5, 3)) * 1e-200, sigma=1.0)


@case(
    "tiny-alpha",
    "an entropy order so small (1e-12) that round-off eigenvalues would count",
    "VENDI stays ≤ n: eigenvalues beyond the rank are round-off",
    r"VENDI_1e-12 = 100\.0 ≤ n = 100",
)
def _(tmp: Path) -> str:
    from t2ibench.metrics import fkea_scores

    X = np.random.default_rng(0).standard_normal((100, 16))
    value = fkea_scores(X, sigma=2.0, rff_dim=500, seed=0, alphas=[1e-12]).vendi[1e-12]
    return f"VENDI_1e-12 = {value:.1f} ≤ n = 100" if value <= 100 + 1e-9 else f"VENDI_1e-12 = {value} > n"


@case("alpha-nan", "α = nan", "error naming the parameter", r"alpha must be > 0")
def _(tmp: Path) -> Any:
    from t2ibench.metrics import vendi_score

    return vendi_score(np.eye(3), sigma=1.0, alpha="nan")


@case(
    "npy-3d",
    "a 3-D .npy as embeddings",
    "error naming the file and shape",
    r"e\.npy: embeddings must be 2-D \(n, d\); got shape \(2, 2, 2\)",
)
def _(tmp: Path) -> Any:
    from t2ibench.io import open_embeddings

    np.save(tmp / "e.npy", np.ones((2, 2, 2)))
    return open_embeddings(tmp / "e.npy")


# -- the store file ----------------------------------------------------------------------------------------------


def damaged_store(tmp: Path, content: bytes) -> Any:
    from t2ibench.store import Store

    path = tmp / "results.duckdb"
    path.write_bytes(content)
    try:
        return Store(path).initialise()
    finally:
        assert path.read_bytes() == content, "a damaged store must never be written into"


@case(
    "store-not-duckdb",
    "a store path holding a text file",
    "refused as not a DuckDB file; never written into",
    r"results\.duckdb: not a DuckDB database, or damaged .* will not write into it",
)
def _(tmp: Path) -> Any:
    return damaged_store(tmp, b"model,score\na,1\n" * 100)


@case(
    "store-empty-file",
    "a store path holding an empty file",
    "refused; never written into",
    r"results\.duckdb: an empty file .* will not write into it",
)
def _(tmp: Path) -> Any:
    return damaged_store(tmp, b"")


@case(
    "store-directory",
    "a store path that is a directory",
    "error: a directory, not a store",
    r"store\.duckdb: is a directory, not a DuckDB results store",
)
def _(tmp: Path) -> Any:
    from t2ibench.store import Store

    (tmp / "store.duckdb").mkdir()
    return Store(tmp / "store.duckdb").user_query("SELECT 1")


@case(
    "store-corrupt-block",
    "a store with a corrupted data block",
    "refused as damaged (not 'busy')",
    r"damaged\.duckdb: not a DuckDB database, or damaged \(Corrupt database file",
)
def _(tmp: Path) -> Any:
    import os

    from t2ibench.store import Store

    store = Store(tmp / "damaged.duckdb")
    with store.write() as con:
        con.execute("CREATE TABLE filler AS SELECT range AS a, md5(range::VARCHAR) AS b FROM range(200000)")
    size = store.path.stat().st_size
    with open(store.path, "r+b") as fh:
        fh.seek(size // 2)
        fh.write(os.urandom(8192))
    return store.user_query("SELECT sum(length(b)) FROM filler")


@case(
    "store-busy",
    "a store held by another process past the wait",
    "error naming the holder's pid and command",
    r"held by another process for more than 0\.3 s \(pid \d+: .*python",
)
def _(tmp: Path) -> Any:
    import subprocess
    import sys

    from t2ibench.store import Store

    path = tmp / "populated.duckdb"
    code = f"import duckdb, time; c = duckdb.connect({str(path)!r}); print(1, flush=True); time.sleep(20)"
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        holder.stdout.readline()
        return Store(path, timeout=0.3).user_query("SELECT 1")
    finally:
        holder.kill()
        holder.wait()


# -- found by red-teaming (regressions) ----------------------------------------------------------------------------


@case(
    "alpha-near-one",
    "an entropy order a few ulps from 1 (sum([0.1] * 10))",
    "treated as 1: VENDI_1, never e, e² … mislabelled",
    r"near-one order gives VENDI_1",
)
def _(tmp: Path) -> str:
    from t2ibench.metrics import fkea_scores

    X = np.random.default_rng(0).standard_normal((300, 10))
    near = fkea_scores(X, sigma=4.0, rff_dim=200, seed=0, alphas=[sum([0.1] * 10)])
    one = fkea_scores(X, sigma=4.0, rff_dim=200, seed=0, alphas=[1.0])
    same = list(near.vendi) == [1.0] and abs(near.vendi[1.0] - one.vendi[1.0]) < 1e-9
    return "near-one order gives VENDI_1" if same else f"wrong: {near.vendi} vs {one.vendi}"


@case(
    "embeddings-offset",
    "embeddings with a large common offset (1e8)",
    "centred (the Gaussian kernel is shift-invariant): the same scores as without it",
    r"offset changes nothing",
)
def _(tmp: Path) -> str:
    from t2ibench.metrics import exact_entropy, fkea_scores, median_heuristic_sigma

    X = np.random.default_rng(0).standard_normal((300, 10))
    Y = X + 1e8
    pairs = [
        (median_heuristic_sigma(X), median_heuristic_sigma(Y)),
        (exact_entropy(X, sigma=4.0).vendi[1.0], exact_entropy(Y, sigma=4.0).vendi[1.0]),
        (
            fkea_scores(X, sigma=4.0, rff_dim=200, seed=0).vendi[1.0],
            fkea_scores(Y, sigma=4.0, rff_dim=200, seed=0).vendi[1.0],
        ),
    ]
    return "offset changes nothing" if all(abs(a / b - 1) < 1e-5 for a, b in pairs) else f"changed: {pairs}"


@case(
    "summary-two-folders",
    "`t2ibench summary` of two models' results concatenated",
    "error naming the folders",
    r"results for images under 2 folders \(out, out2\)",
)
def _(tmp: Path) -> str:
    import contextlib
    import io

    from t2ibench.benchmarks.geneval.evaluate import ResultRow, write_results
    from t2ibench.benchmarks.geneval.suite import write_suite
    from t2ibench.cli import main

    rows = [
        ResultRow(f"{root}/{i:05d}/samples/00000.png", r["tag"], r["prompt"], True, "", r)
        for root in ("out", "out2")
        for i, r in enumerate(SUITE)
    ]
    write_results(tmp / "r.jsonl", rows)
    write_suite(tmp / "suite.jsonl", SUITE)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert (
            main(["summary", str(tmp / "r.jsonl"), "--metadata", str(tmp / "suite.jsonl"), "--images-per-prompt", "1"])
            == 2
        )
    return err.getvalue()


@case(
    "height-without-width",
    "a generation height without a width",
    "refused (diffusers would silently drop it)",
    r"height and width go together",
)
def _(tmp: Path) -> Any:
    return write_config(tmp, "name: x\nmodels: [{name: a, generator: {height: 256}}]\n")


@case(
    "yaml-octal",
    "an integer written with a leading zero (YAML 1.1 octal: 010 = 8)",
    "refused: not read as 8",
    r"images_per_prompt: expected an integer, got '010'",
)
def _(tmp: Path) -> Any:
    return write_config(tmp, "name: x\nmodels: [{name: a, generator: {images_per_prompt: 010}}]\n")


@case(
    "yaml-sexagesimal",
    "a number in YAML 1.1 base 60 (1:30 = 90)",
    "refused: not read as 90",
    r"steps: expected an integer, got '1:30'",
)
def _(tmp: Path) -> Any:
    return write_config(tmp, "name: x\nmodels: [{name: a, generator: {steps: 1:30}}]\n")


@case(
    "yaml-yes",
    "a boolean written as yes (YAML 1.1)",
    "refused: true/false only",
    r"normalize: expected true or false, got 'yes'",
)
def _(tmp: Path) -> Any:
    return config_with(tmp, "evaluators: {clip: {normalize: yes}}")


@case("yaml-exponent", "a float written 1e-9 (a string in YAML 1.1)", "read as the number it is", r"epsilon = 1e-09")
def _(tmp: Path) -> str:
    return f"epsilon = {config_with(tmp, 'evaluators: {scendi: {epsilon: 1e-9}}').evaluators.scendi.epsilon}"


@case(
    "yaml-huge-int",
    "a 5001-digit integer in a config",
    "refused as not an integer (no crash)",
    r"seed: expected an integer, got '9999",
)
def _(tmp: Path) -> Any:
    return config_with(tmp, "evaluators: {diversity: {seed: " + "9" * 5001 + "}}")


@case(
    "name-trailing-newline",
    "a model name ending in a line break (from `name: |`)",
    "refused",
    r"model name 'tiny-a\\n' cannot be used",
)
def _(tmp: Path) -> Any:
    return write_config(tmp, "name: x\nmodels:\n  - name: |\n      tiny-a\n")


@case(
    "label-bidi",
    "a model label with a right-to-left override character",
    "refused (it would disguise the name in reports)",
    r"label: must be one line of visible text",
)
def _(tmp: Path) -> Any:
    return write_config(tmp, 'name: x\nmodels: [{name: a, label: "\\u202egnp.exe"}]\n')


@case(
    "store-path-folder",
    "outputs.store naming a folder",
    "refused when the config is loaded",
    r"outputs\.store: must name a DuckDB file",
)
def _(tmp: Path) -> Any:
    return config_with(tmp, "outputs: {store: data}")


@case(
    "import-count-mismatch",
    "importing a folder with fewer images per prompt than configured",
    "error naming the folder and both counts",
    r"00000/samples: 2 images, expected 4 per prompt",
)
def _(tmp: Path) -> Any:
    from t2ibench.models.generation import FolderImporter

    folder = geneval_folder(tmp)
    return FolderImporter(folder, images_per_prompt=4).generate(list(enumerate(SUITE)), tmp / "imported")


@case(
    "import-into-source",
    "importing a folder into itself",
    "refused before writing",
    r"the import target must lie outside the source folder",
)
def _(tmp: Path) -> Any:
    from t2ibench.models.generation import FolderImporter

    folder = geneval_folder(tmp)
    return FolderImporter(folder).generate(list(enumerate(SUITE)), folder / "00000" / "samples")


@case(
    "npy-extra-bytes",
    "an .npy with more data than its header describes (stale header)",
    "error naming the file (never read short)",
    r"e\.npy: 1280 bytes beyond the \(10, 8\) array its header describes",
)
def _(tmp: Path) -> Any:
    from t2ibench.io import open_embeddings

    np.save(tmp / "e.npy", np.ones((10, 8), dtype=np.float32))
    with open(tmp / "e.npy", "ab") as fh:
        fh.write(np.ones((40, 8), dtype=np.float32).tobytes())
    return open_embeddings(tmp / "e.npy")


@case(
    "npy-negative-dim",
    "an .npy header with a negative dimension",
    "error naming the file",
    r"e\.npy: the header's shape \(-1, 4\) has a negative dimension",
)
def _(tmp: Path) -> Any:
    from t2ibench.io import open_embeddings

    with open(tmp / "e.npy", "wb") as fh:
        np.lib.format.write_array_header_1_0(fh, {"descr": "<f4", "fortran_order": False, "shape": (-1, 4)})
    return open_embeddings(tmp / "e.npy")


@case(
    "npz-not-zip",
    "a text file named .npz",
    "error: not an .npz archive (no advice to unpickle)",
    r"e\.npz: not an \.npz archive",
)
def _(tmp: Path) -> Any:
    from t2ibench.io import open_embeddings

    (tmp / "e.npz").write_text("not numpy\n")
    return open_embeddings(tmp / "e.npz")


@case(
    "state-n-float",
    "an FKEA state whose n is 3.7",
    "refused as corrupt (never truncated to 3)",
    r"s\.npz: not a t2ibench covariance state \('n' must be a non-negative integer scalar",
)
def _(tmp: Path) -> Any:
    from t2ibench.metrics import FKEA

    FKEA(sigma=1.0, rff_dim=4, seed=0).update(np.random.default_rng(0).standard_normal((5, 3))).save(tmp / "s.npz")
    with np.load(tmp / "s.npz") as data:
        arrays = {k: data[k] for k in data.files}
    arrays["n"] = np.array(3.7)
    np.savez(tmp / "s.npz", **arrays)
    return FKEA.load(tmp / "s.npz")


@case(
    "state-unknown-parameter",
    "an FKEA state whose header carries an unknown parameter",
    "refused naming the file",
    r"s\.npz: not a t2ibench covariance state \(parameters",
)
def _(tmp: Path) -> Any:
    from t2ibench.metrics import FKEA

    FKEA(sigma=1.0, rff_dim=4, seed=0).update(np.random.default_rng(0).standard_normal((5, 3))).save(tmp / "s.npz")
    with np.load(tmp / "s.npz") as data:
        arrays = {k: data[k] for k in data.files}
    meta = json.loads(str(arrays["meta"])) | {"temperature": 2}
    arrays["meta"] = np.array(json.dumps(meta))
    np.savez(tmp / "s.npz", **arrays)
    return FKEA.load(tmp / "s.npz")


@case(
    "alphas-bytes",
    "entropy orders given as bytes (iterated as numbers 49, 50)",
    "refused",
    r"alphas must be a number, 'inf', or a list of them; got bytes",
)
def _(tmp: Path) -> Any:
    from t2ibench.metrics import exact_entropy

    return exact_entropy(np.eye(3), sigma=1.0, alphas=b"12")


@case(
    "sigma-tiny",
    "σ = 1e-300 (σ² underflows)",
    "error naming the parameter (no ZeroDivisionError)",
    r"sigma = 1e-300 is below 1e-100",
)
def _(tmp: Path) -> Any:
    from t2ibench.metrics import vendi_score

    return vendi_score(np.eye(3), sigma=1e-300)


@case(
    "sigma-one-row",
    "the median-heuristic σ of a single row",
    "error saying what needs two rows",
    r"X has 1 row\(s\); 2 are needed for the median-heuristic σ \(or give sigma\)",
)
def _(tmp: Path) -> Any:
    from t2ibench.metrics import median_heuristic_sigma

    return median_heuristic_sigma(np.ones((1, 4)))


@case(
    "json-out-folder",
    "`--json` pointing at a folder",
    "one line naming the path; no temporary file left",
    r"t2ibench prompts: error: .*: is a folder or a special file",
)
def _(tmp: Path) -> str:
    import contextlib
    import io

    from t2ibench.cli import main

    (tmp / "out").mkdir()
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["prompts", "geneval", "--out", str(tmp / "out")]) == 2
    assert not list(tmp.glob("*.tmp"))
    return err.getvalue()


@case(
    "unicode-digit-folder",
    "a results filename whose prompt folder is '²' (str.isdigit accepts it)",
    "not read as a prompt number (no crash)",
    r"prompt index: None",
)
def _(tmp: Path) -> str:
    from t2ibench.benchmarks.geneval.evaluate import ResultRow

    return f"prompt index: {ResultRow('out/²/samples/00000.png', 'single_object', 'p', True, '', {}).prompt_index}"


@case(
    "annotation-url-dotdot",
    "one annotation row whose image URL names no model folder ('..')",
    "that row dropped and reported; the others analysed",
    r"dropped 1 row\(s\): image URL names no model folder",
)
def _(tmp: Path) -> str:
    def mutate(rows: list[list[str]]) -> list[str]:
        rows[0].append("Input.image_url")
        rows[1].append("https://x/images/../etc/0.png")
        rows[2].append("https://x/images/toy/00000/samples/00000.png")
        return []

    return annotation_csv(tmp, mutate)


@case(
    "sql-drop-own-view",
    "`--write` SQL dropping one of t2ibench's views",
    "refused and rolled back; reports keep working",
    r"refused: the statements would remove t2ibench's own view leaderboard",
)
def _(tmp: Path) -> Any:
    return user_sql(tmp, "DROP VIEW leaderboard", write=True)


@case(
    "sql-two-queries",
    "two queries in one read-only call (only the last would show)",
    "error: one query at a time",
    r"give one query at a time; got 2 statements",
)
def _(tmp: Path) -> Any:
    return user_sql(tmp, "SELECT 1 AS a; SELECT 2 AS b")


@case(
    "markdown-cell-pipe",
    "stored text holding '|' or a line break, printed as a table",
    "escaped: the table keeps its columns",
    r"\| a\\\|b \| c⏎d \|",
)
def _(tmp: Path) -> str:
    from t2ibench.report.markdown import markdown_table

    return markdown_table(["x", "y"], [["a|b", "c\nd"]])


@case(
    "evaluate-bad-background",
    "`t2ibench evaluate --background notacolour`",
    "refused before any model loads",
    r"t2ibench evaluate: error: --background: must be a colour",
)
def _(tmp: Path) -> str:
    import contextlib
    import io

    from t2ibench.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["evaluate", "geneval", str(tmp), "--background", "notacolour"]) == 2
    return err.getvalue()


@case(
    "modes-more-than-n",
    "more modes asked than there are samples",
    "capped at n with a note",
    r"showing 5 \(the rank is at most n",
)
def _(tmp: Path) -> str:
    import logging

    from t2ibench.errors import NOTES
    from t2ibench.metrics import FKEA, kernel_modes

    X = np.random.default_rng(0).standard_normal((5, 3))
    heard: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: heard.append(record.getMessage())  # type: ignore[method-assign]
    NOTES.addHandler(handler)
    try:
        modes = kernel_modes(FKEA(sigma=1.0, rff_dim=50, seed=0).update(X), X, k=100, top=2)
    finally:
        NOTES.removeHandler(handler)
    assert len(modes.modes) == 5
    return "\n".join(heard)


@case(
    "config-alphas-inf-twice",
    "entropy orders .inf and 'Infinity' together",
    "error: the same order twice",
    r"alphas: lists an order twice",
)
def _(tmp: Path) -> Any:
    return config_with(tmp, "evaluators: {diversity: {alphas: [.inf, Infinity]}}")


@case(
    "config-bootstrap-negative",
    "a negative number of bootstrap resamples for the diversity intervals",
    "error naming the key and the range (0 turns the intervals off)",
    r"evaluators\.diversity\.bootstrap: must be in \[0, 100000\]; got -5",
)
def _(tmp: Path) -> Any:
    return config_with(tmp, "evaluators: {diversity: {bootstrap: -5}}")


@case(
    "config-published-missing",
    "a published reference table that does not exist",
    "error at load (before any model work) naming the key and the file, built-in names listed",
    r"c\.yaml:report\.published\[1\]: .*paper\.yaml: no such published table \(built in: geneval-table2",
)
def _(tmp: Path) -> Any:
    return config_with(tmp, "report: {published: [geneval-table2, paper.yaml]}")


@case(
    "published-percentages",
    "a published table with percentages (61) instead of accuracies (0.61)",
    "error naming the file, the row and the key",
    r"paper\.yaml: row 1: counting: must be an accuracy in \[0, 1\] \(not a percentage\); got 61",
)
def _(tmp: Path) -> Any:
    (tmp / "paper.yaml").write_text("source: x\ncitation: y\nrows: [{model: M, counting: 61}]\n")
    return config_with(tmp, "report: {published: [paper.yaml]}")


@case(
    "published-row-without-protocol",
    "a published row whose source's protocol is not recorded (nor how it was read)",
    "error at load naming the file, the row and the missing protocol fields ('unstated' is an answer; silence is not)",
    r"paper\.yaml: row 1: no protocol prompts, detector, images_per_prompt, resolution \(in the row's or its table's",
)
def _(tmp: Path) -> Any:
    (tmp / "paper.yaml").write_text("source: x\ncitation: y\nverified: by hand\nrows: [{model: M, overall: 0.6}]\n")
    return config_with(tmp, "report: {published: [paper.yaml]}")


@case(
    "config-wording-on-another-suite",
    "a model given GenEval's rewritten prompts on a suite that is not the official one",
    "error naming models[0].wording: rewrites exist for the official suite only",
    r"models\[0\]\.wording: rewritten prompts exist for GenEval's official suite only",
)
def _(tmp: Path) -> Any:
    text = "name: x\nbenchmarks: {geneval: {seed: 7}}\nmodels: [{name: a, wording: rewritten}]\n"
    return write_config(tmp, text)


@case(
    "config-prompt-rewriting-diffusers",
    "prompt_rewriting declared for a model t2ibench generates",
    "error: t2ibench never rewrites prompts itself; only an imported folder can declare it",
    r"generator\.prompt_rewriting: t2ibench never rewrites prompts itself",
)
def _(tmp: Path) -> Any:
    return write_config(tmp, "name: x\nmodels: [{name: a, generator: {prompt_rewriting: LLM expansion}}]\n")


@case(
    "config-truncation-zero",
    "truncated VENDI with t = 0 eigenvalues",
    "error naming the key and the range (null turns it off)",
    r"evaluators\.diversity\.truncation: must be in \[1, 1000000\]; got 0",
)
def _(tmp: Path) -> Any:
    return config_with(tmp, "evaluators: {diversity: {truncation: 0}}")


@case(
    "config-convergence-not-bool",
    "convergence report switch given as a string",
    "error naming the key (true or false)",
    r"evaluators\.scendi\.convergence: expected true or false, got 'yes'",
)
def _(tmp: Path) -> Any:
    return config_with(tmp, "evaluators: {scendi: {convergence: 'yes'}}")


@case(
    "config-scheduler-address-without-dask",
    "a Dask scheduler address with the local thread runner",
    "error naming runtime.address and what to set",
    r"runtime\.address: names a Dask scheduler: set task_runner: dask too",
)
def _(tmp: Path) -> Any:
    return config_with(tmp, "runtime: {address: 'tcp://10.0.0.5:8786'}")


@case(
    "config-devices-and-workers-disagree",
    "one worker per device, and a different worker count",
    "error naming runtime.workers",
    r"runtime\.workers: is one per device with devices: 4; leave it out",
)
def _(tmp: Path) -> Any:
    return config_with(tmp, "runtime: {task_runner: dask, devices: 4, workers: 2}")


@case(
    "config-negative-prompt-shards",
    "a negative shard size",
    "error naming runtime.prompts_per_shard and its range",
    r"runtime\.prompts_per_shard: must be in \[0, 1000000\]; got -5",
)
def _(tmp: Path) -> Any:
    return config_with(tmp, "runtime: {prompts_per_shard: -5}")


# Round three (file identity, signals, resource bombs, the sealed SQL's last ways out): one module per class, each
# registering its cases with ``case`` above (imported here so CASES holds them all, in this order). Run as a script,
# this file is ``__main__`` and they would register into ``tests.corpus`` instead: the block at the end imports that.
if __name__ != "__main__":
    from tests import corpus_store, corpus_files, corpus_resources, corpus_signals, corpus_probe, corpus_geneval2  # noqa: F401, I001
    from tests import corpus_round4_inputs, corpus_round4_store, corpus_round4_outputs, corpus_round4_limits  # noqa: F401  (the import line above is full)

# Behaviours shown by other tests (rendered into docs/reliability.md with the corpus).
OTHER_GUARANTEES = [
    (
        "a flow program killed by a signal t2ibench did not send (the OOM killer's SIGKILL): `run`, `paper tables`, "
        "`paper digits`, `agreement --flow`, `schedule`",
        "one line naming the flow, the signal and its likely cause (out of memory) and the refresh's log; what it "
        "started is ended; `run` records the run interrupted (SIGKILL) and frees its lock (was: exit 137, no word)",
        "tests/integration/test_signals.py::test_a_flow_killed_by_sigkill_is_reported_and_the_refresh_recorded",
    ),
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
        "Ctrl-C at a terminal, SIGTERM through a pipe, SIGTERM to every process group of `t2ibench run`",
        "the refresh stops within the grace period (10 s), no process is left, the run lock is free, the run is "
        "recorded `interrupted` with the signal; the next run resumes and completes",
        "tests/integration/test_signals.py::test_a_refresh_stops_on_a_tty_a_pipe_and_a_process_group_and_the_next_run_resumes",
    ),
    (
        "SIGTERM or SIGHUP to a long in-process command (`diversity`, a `sql` query)",
        "ends within seconds with exit 128 + signal and one line naming it; a query's store is released, unchanged",
        "tests/integration/test_signals.py::test_a_plain_command_stops_on_sigterm_and_sighup",
    ),
    (
        "SIGHUP to every process group of `nohup t2ibench run …` (its terminal hung up), and to a plain command "
        "started so",
        "both keep working and the refresh finishes (exit 0); without nohup the same SIGHUP stops them; SIGTERM still "
        "stops a nohup'd command",
        "tests/integration/test_signals.py::"
        "test_a_signal_ignored_at_start_stays_ignored_by_the_command_and_the_refresh_it_starts",
    ),
    (
        "a parameter in params.yaml that would reach a shell (`seed: 43; touch x`)",
        "no DVC stage command holds a `${…}`: stages pass `--params FILE:SECTION`, each value checked as its option",
        "tests/unit/test_repository_contract.py::test_no_stage_splices_a_parameter_into_its_shell_command",
    ),
    (
        "a query whose `--timeout` fires before DuckDB has started it",
        "stopped every time (the watchdog interrupts until the block has left DuckDB)",
        "tests/unit/test_sql_security.py::test_a_tiny_timeout_is_never_lost",
    ),
    (
        "a flow program started with the old second command line (`python -m flows.paper_tables digits --repeats 2`)",
        "refused in one line: a flow program takes exactly one typed request (JSON); the CLI is the only parser",
        "tests/unit/test_requests.py::test_a_flow_program_refuses_the_old_options",
    ),
    (
        "an estimator state whose header does not rebuild it (other landmarks, a garbled parameter)",
        "refused naming the file and the fields that differ; saved states of the earlier format still load",
        "tests/unit/test_estimator_base.py::test_a_header_that_does_not_rebuild_its_state_is_refused",
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


def write_reliability_doc(path: Path | None = None) -> Path:
    """Rewrite the table of docs/reliability.md from this registry (``python -m tests.corpus``)."""
    target = path or Path(__file__).resolve().parents[1] / "docs" / "reliability.md"
    text = target.read_text(encoding="utf-8")
    head = text[: text.index("| case | behaviour | test |")]
    target.write_text(head + reliability_table() + "\n", encoding="utf-8")
    return target


if __name__ == "__main__":
    import tests.corpus as registry  # the registry with every corpus file's cases, in their order

    print(f"wrote {registry.write_reliability_doc()} ({len(registry.CASES)} cases)")
