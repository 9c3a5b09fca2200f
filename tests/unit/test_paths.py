"""Identity, kind and containment of paths (t2ibench.paths), and the output rule applied by every CLI output flag."""

import contextlib
import io
import json
import os
import shutil
from pathlib import Path

import duckdb
import numpy as np
import pytest
from PIL import Image

from t2ibench.cli import main
from t2ibench.errors import InputError
from t2ibench.paths import (
    Place,
    check_within,
    frame_count,
    is_within,
    kind_of,
    name_under,
    refuse_output,
    refuse_outputs,
    regular_file,
    same_file,
    shown,
    store_part,
    store_places,
)


def cli(*argv: object) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = main([str(a) for a in argv])
    return status, err.getvalue()


def test_same_file_follows_links_and_spellings(tmp_path):
    (tmp_path / "a.png").write_bytes(b"x")
    os.link(tmp_path / "a.png", tmp_path / "hard.png")
    (tmp_path / "soft.png").symlink_to("a.png")
    shutil.copy(tmp_path / "a.png", tmp_path / "copy.png")
    assert same_file(tmp_path / "a.png", tmp_path / "hard.png")
    assert same_file(tmp_path / "a.png", tmp_path / "soft.png")
    assert same_file(tmp_path / "a.png", f"{tmp_path}/./sub/../a.png")
    assert not same_file(tmp_path / "a.png", tmp_path / "copy.png"), "equal bytes are not one file"
    assert same_file(tmp_path / "new.txt", f"{tmp_path}/./new.txt"), "absent files compare by resolved path"
    assert not same_file(tmp_path / "new.txt", tmp_path / "other.txt")


def test_containment_is_decided_after_resolving(tmp_path):
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (tmp_path / "secret").write_text("s")
    (root / "sub" / "out").symlink_to(tmp_path / "secret")
    assert is_within(root / "sub", root)
    assert is_within(f"{root}/sub/../sub", root)
    assert not is_within(root / "sub" / "out", root), "a symlink leading outside is outside"
    assert not is_within(f"{root}/../secret", root)
    with pytest.raises(InputError, match=r"out: metadata resolves outside .*root \(to .*secret\)"):
        check_within(root / "sub" / "out", root, what="metadata")


def test_name_under_is_lexical_first_then_resolved(tmp_path):
    (tmp_path / "ws" / "data").mkdir(parents=True)
    (tmp_path / "alias").symlink_to(tmp_path / "ws")
    assert name_under(tmp_path / "ws" / "data" / "x.png", tmp_path / "ws") == "data/x.png"
    assert name_under(tmp_path / "alias" / "data" / "x.png", tmp_path / "ws") == "data/x.png"
    with pytest.raises(InputError, match="lies outside"):
        name_under(tmp_path / "elsewhere.png", tmp_path / "ws")


def test_kinds_and_regular_files(tmp_path):
    (tmp_path / "f").write_text("x")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "zero").symlink_to("/dev/zero")
    assert kind_of(tmp_path / "f") is None
    assert kind_of(tmp_path) == "a folder"
    assert kind_of(tmp_path / "fifo") == "a FIFO (named pipe)"
    assert kind_of(tmp_path / "zero") == "a character device"
    assert kind_of(tmp_path / "nope") == "missing"
    assert regular_file(tmp_path / "f") == tmp_path / "f"
    with pytest.raises(InputError, match=r"zero: results file is a character device \(resolves to /dev/zero\)"):
        regular_file(tmp_path / "zero", what="results file")
    with pytest.raises(InputError, match="no such suite"):
        regular_file(tmp_path / "nope", what="suite")


def test_shown_keeps_a_name_on_one_line():
    assert shown("a/b.png") == "a/b.png"
    assert shown("evil\nproblem: x\x1b[2J.png") == "evil\\nproblem: x\\x1b[2J.png"


def test_a_store_is_recognised_by_its_header_whatever_its_name(tmp_path):
    duckdb.connect(str(tmp_path / "board.csv")).close()
    (tmp_path / "plain.csv").write_text("a,b\n")
    assert store_part(tmp_path / "board.csv") == tmp_path / "board.csv"
    assert store_part(tmp_path / "board.csv.wal") == tmp_path / "board.csv"
    assert store_part(tmp_path / "board.csv.lock") == tmp_path / "board.csv"
    assert store_part(tmp_path / "board.csv.tmp" / "deep" / "x.csv") == tmp_path / "board.csv"
    assert store_part(tmp_path / "plain.csv") is None
    assert store_part(tmp_path / "plain.csv.wal") is None
    with pytest.raises(InputError, match=r"--out .*board\.csv\.wal: is part of the DuckDB results store"):
        refuse_output(tmp_path / "board.csv.wal", flag="--out")


def test_refuse_output_rules(tmp_path):
    imgs = tmp_path / "imgs"
    (imgs / "00000").mkdir(parents=True)
    (tmp_path / "meta.jsonl").write_text("{}")
    in_prompts = Place("IMAGEDIR", imgs, tree=True, covers=lambda rel: rel.parts[0].isdigit())
    inputs = [in_prompts, Place("--metadata", tmp_path / "meta.jsonl"), *store_places(tmp_path / "s.duckdb")]
    # allowed: beside the inputs, and in the part of a folder the command does not read
    assert refuse_output(imgs / "results.jsonl", flag="--out", inputs=inputs) == imgs / "results.jsonl"
    assert refuse_output(tmp_path / "out", flag="--out", inputs=inputs, tree=True, covers=lambda r: r.name == "x")
    for out, why in [
        (tmp_path / "meta.jsonl", r"is --metadata"),
        (f"{tmp_path}/imgs/../meta.jsonl", r"is --metadata"),
        (imgs / "00000" / "r.jsonl", r"lies inside IMAGEDIR"),
        (imgs, r"is IMAGEDIR"),
        (tmp_path / "s.duckdb", r"is the results store"),
        (tmp_path / "s.duckdb.wal", r"is the results store's \.wal file"),
        (tmp_path / "s.duckdb.tmp" / "x.csv", r"lies inside the results store's temporary folder"),
    ]:
        with pytest.raises(InputError, match=f"--out .*: {why}"):
            refuse_output(out, flag="--out", inputs=inputs)
    # a folder output may not hold an input in the part it writes
    with pytest.raises(InputError, match=r"--out .*: holds --metadata .*meta\.jsonl, which it would overwrite"):
        refuse_output(tmp_path, flag="--out", inputs=inputs, tree=True, covers=lambda rel: rel.name == "meta.jsonl")
    assert refuse_output(tmp_path / "sub", flag="--out", inputs=inputs, tree=True)
    with pytest.raises(InputError, match="lies inside IMAGEDIR"):
        refuse_output(imgs / "00000" / "g", flag="--gallery", inputs=inputs, tree=True)
    # one command's outputs are distinct
    with pytest.raises(InputError, match=r"--json .*r\.jsonl: is --out .*r\.jsonl"):
        refuse_outputs([Place("--out", tmp_path / "r.jsonl"), Place("--json", tmp_path / "x" / ".." / "r.jsonl")])
    refuse_outputs([Place("--out", tmp_path / "r.jsonl"), None, Place("--json", tmp_path / "s.json")], inputs)


def test_a_link_to_an_input_is_that_input(tmp_path):
    (tmp_path / "r.jsonl").write_text("")
    (tmp_path / "alias.json").symlink_to("r.jsonl")
    os.link(tmp_path / "r.jsonl", tmp_path / "hard.json")
    for out in ("alias.json", "hard.json"):
        with pytest.raises(InputError, match="is RESULTS"):
            refuse_output(tmp_path / out, flag="--json", inputs=[Place("RESULTS", tmp_path / "r.jsonl")])


def test_frame_count(tmp_path):
    still = Image.new("RGB", (8, 8), (1, 2, 3))
    still.save(tmp_path / "still.png")
    still.save(tmp_path / "apng.png", save_all=True, append_images=[Image.new("RGB", (8, 8), (200, 0, 0))])
    (tmp_path / "junk.png").write_bytes(b"not an image")
    assert frame_count(tmp_path / "still.png") == 1
    assert frame_count(tmp_path / "apng.png") == 2
    assert frame_count(tmp_path / "junk.png") == 1


# -- every output flag of the CLI (the corpus covers sql, prompts, summary, evaluate, agreement, report, diversity
# --json and data fetch; these are the rest, and the uses that must stay allowed) -------------------------------


def test_selftest_out_may_not_hold_the_detector_model(tmp_path):
    (tmp_path / "model").mkdir()
    status, err = cli("selftest", "--out", tmp_path / "model", "--detector-model", tmp_path / "model")
    assert status == 2
    assert "t2ibench selftest: error: --out" in err
    assert "is --detector-model" in err


def test_generate_out_may_not_be_a_local_model_folder(tmp_path):
    (tmp_path / "pipe").mkdir()
    status, err = cli("generate", "geneval", "--model", tmp_path / "pipe", "--out", tmp_path / "pipe", "--per-task", 1)
    assert status == 2
    assert "t2ibench generate: error: --out" in err
    assert "is --model" in err


def test_generate_out_may_hold_a_suite_file_it_does_not_write(tmp_path):
    # the layout rule of `generate --out`: it writes prompt folders, manifest.json and samples.jsonl only
    record = {"tag": "single_object", "include": [{"class": "cat", "count": 1}], "prompt": "a photo of a cat"}
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "suite.jsonl").write_text(json.dumps(record) + "\n")
    source = tmp_path / "src" / "00000"
    (source / "samples").mkdir(parents=True)
    (source / "metadata.jsonl").write_text(json.dumps(record) + "\n")
    Image.new("RGB", (8, 8)).save(source / "samples" / "00000.png")
    suite = tmp_path / "run" / "suite.jsonl"
    argv = ["generate", "geneval", "--metadata", suite, "--import-from", tmp_path / "src", "--out", tmp_path / "run"]
    status, err = cli(*argv, "--images-per-prompt", 1)
    assert status == 0, err
    assert (tmp_path / "run" / "00000" / "samples" / "00000.png").is_file()
    assert json.loads(suite.read_text()) == record


def test_diversity_gallery_may_not_overwrite_the_images_it_shows(tmp_path):
    gallery = tmp_path / "g"
    (gallery / "fkea").mkdir(parents=True)
    paths = []
    for i in range(6):
        Image.new("RGB", (8, 8), (40 * i, 0, 0)).save(gallery / "fkea" / f"mode_{i:02d}.png")
        paths.append(str(gallery / "fkea" / f"mode_{i:02d}.png"))
    np.savez(tmp_path / "e.npz", embeddings=np.random.default_rng(0).normal(size=(6, 3)), paths=np.array(paths))
    status, err = cli("diversity", tmp_path / "e.npz", "--modes", 2, "--gallery", gallery, "--quiet")
    assert status == 2
    assert "--gallery" in err
    assert "holds an image the gallery shows" in err
    # beside the embeddings is fine: a gallery writes only its mode folders and *_modes.md
    status, err = cli("diversity", tmp_path / "e.npz", "--json", tmp_path / "d.json", "--quiet", "--sigma", 1)
    assert status == 0, err


def test_report_default_folder_is_checked_too(tmp_path):
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "c.yaml").write_text(
        "name: x\nmodels: [{name: a}]\noutputs: {store: data/s.duckdb, reports: data}\n"
    )
    status, err = cli("report", "--config", tmp_path / "configs" / "c.yaml")
    assert status == 2
    assert "t2ibench report: error: outputs.reports" in err
    assert "holds the results store" in err


def test_evaluate_default_results_file_in_the_image_folder_is_allowed(tmp_path):
    folder = tmp_path / "imgs" / "00000"
    (folder / "samples").mkdir(parents=True)
    (folder / "metadata.jsonl").write_text(json.dumps({"tag": "single_object", "include": [], "prompt": "p"}))
    status, err = cli("evaluate", "geneval", tmp_path / "imgs", "--per-task", 1)
    assert "error: --out" not in err
    assert "IMAGEDIR" not in err
    assert status == 1  # the scan's problems stop it, not the output check


def test_agreement_out_beside_its_annotations_is_allowed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("a.csv").write_text("")
    status, err = cli("agreement", "--annotations", "a.csv", "--out", ".")
    assert status == 2
    assert "a.csv: empty file" in err
    assert "--out" not in err


def test_the_store_side_files_are_the_stores_own_names():
    """paths may not import the store: its list of files beside a store must be the store's WAL and lock names."""
    from t2ibench.paths import STORE_SIDE_FILES
    from t2ibench.store.schema import LOCK_SUFFIX, WAL_SUFFIXES

    assert set(STORE_SIDE_FILES) == {*WAL_SUFFIXES, LOCK_SUFFIX}


def test_result_name_is_relative_under_its_base_else_resolved(tmp_path):
    from t2ibench.paths import result_name

    (tmp_path / "a").mkdir()
    image = tmp_path / "a" / "x.png"
    assert result_name(image, tmp_path) == "a/x.png"
    assert result_name(image, None) == str(image)
    assert result_name(tmp_path / "a" / ".." / "a" / "x.png", tmp_path / "elsewhere") == str(image.resolve())


def test_an_image_problem_names_an_unreadable_or_multi_frame_file(tmp_path):
    import numpy as np
    from PIL import Image

    from t2ibench.images import image_problem

    still, animated, empty = tmp_path / "still.png", tmp_path / "anim.gif", tmp_path / "empty.png"
    Image.fromarray(np.zeros((8, 8, 3), dtype=np.uint8)).save(still)
    frames = [Image.fromarray(np.full((8, 8, 3), v, dtype=np.uint8)) for v in (0, 255)]
    frames[0].save(animated, save_all=True, append_images=frames[1:])
    empty.write_bytes(b"")
    assert image_problem(still) is None
    assert (
        image_problem(animated)
        == f"{animated}: holds 2 frames (an animated or multi-page image); only single-frame images are judged"
    )
    assert str(empty) in (image_problem(empty) or "")
