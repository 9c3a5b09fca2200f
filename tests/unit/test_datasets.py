"""External data acquisition: GenEval's released files, copied or downloaded, verified against pinned SHA-256s."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from t2ibench import datasets
from t2ibench.benchmarks.geneval2 import suite
from t2ibench.errors import InputError
from tests.conftest import GENEVAL2_DATA, GENEVAL_DATA

pytestmark = pytest.mark.skipif(not GENEVAL_DATA.is_dir(), reason="GenEval's released files are not available")


def released_copy(root: Path) -> Path:
    """The released files laid out as the GenEval repository serves them (``<revision>/<path>``)."""
    for item in datasets.release("geneval").files:
        target = root / "main" / item.path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(GENEVAL_DATA / item.name, target)
    return root


def serve_from(monkeypatch: pytest.MonkeyPatch, url: str, name: str = "geneval") -> None:
    """Make release ``name`` download from ``url`` (a file:// copy laid out as the repository serves it)."""
    monkeypatch.setitem(datasets.RELEASES, name, dataclasses.replace(datasets.RELEASES[name], repository=url))


def test_a_local_copy_is_verified_and_copied(tmp_path):
    files = datasets.fetch_release("geneval", tmp_path / "out", source=GENEVAL_DATA)
    assert [f.name for f in files] == [item.name for item in datasets.release("geneval").files]
    for f in files:
        assert f.read_bytes() == (GENEVAL_DATA / f.name).read_bytes()
    assert not list((tmp_path / "out").glob("*.tmp"))


def test_the_environment_override_is_used_when_no_source_is_given(tmp_path, monkeypatch):
    monkeypatch.setenv(datasets.release("geneval").env, str(GENEVAL_DATA))
    monkeypatch.setattr(datasets, "_download", lambda *a: pytest.fail("downloaded despite the local override"))
    assert len(datasets.fetch_release("geneval", tmp_path / "out")) == len(datasets.release("geneval").files)


def test_download_goes_through_the_repository_url_and_checks_hashes(tmp_path, monkeypatch):
    repo = released_copy(tmp_path / "repo")
    monkeypatch.delenv(datasets.release("geneval").env, raising=False)
    serve_from(monkeypatch, repo.as_uri())  # urllib serves file:// like https://
    files = datasets.fetch_release("geneval", tmp_path / "out")
    assert all(f.read_bytes() == (GENEVAL_DATA / f.name).read_bytes() for f in files)


def test_an_edited_or_truncated_file_is_refused_and_nothing_is_left(tmp_path, monkeypatch):
    repo = released_copy(tmp_path / "repo")
    data = repo / "main" / "annotations" / "annotations_clip.csv"
    data.write_bytes(data.read_bytes()[:-100])
    monkeypatch.delenv(datasets.release("geneval").env, raising=False)
    serve_from(monkeypatch, repo.as_uri())
    with pytest.raises(InputError, match=r"annotations_clip\.csv: SHA-256 .* is not the released file's"):
        datasets.fetch_release("geneval", tmp_path / "out")
    assert not (tmp_path / "out" / "annotations_clip.csv").exists()
    assert not list((tmp_path / "out").glob("*.tmp"))


def test_a_bad_file_already_in_place_is_replaced_and_a_good_one_kept(tmp_path):
    out = tmp_path / "out"
    datasets.fetch_release("geneval", out, source=GENEVAL_DATA)
    (out / "evaluation_metadata.jsonl").write_text("{}\n")
    kept = (out / "annotations_sdv2.csv").stat().st_mtime_ns
    datasets.fetch_release("geneval", out, source=GENEVAL_DATA)
    assert (out / "evaluation_metadata.jsonl").read_bytes() == (GENEVAL_DATA / "evaluation_metadata.jsonl").read_bytes()
    assert (out / "annotations_sdv2.csv").stat().st_mtime_ns == kept


def test_offline_download_and_bad_sources_are_one_line_errors(tmp_path, monkeypatch):
    monkeypatch.delenv(datasets.release("geneval").env, raising=False)
    serve_from(monkeypatch, (tmp_path / "nowhere").as_uri())
    with pytest.raises(InputError, match=r"cannot download .*offline\? copy the files from a local folder"):
        datasets.fetch_release("geneval", tmp_path / "out")
    with pytest.raises(InputError, match="not a folder"):
        datasets.fetch_release("geneval", tmp_path / "out", source=tmp_path / "missing")
    (tmp_path / "partial").mkdir()
    with pytest.raises(InputError, match="missing from the local copy"):
        datasets.fetch_release("geneval", tmp_path / "out", source=tmp_path / "partial")


@pytest.mark.skipif(not GENEVAL2_DATA.is_dir(), reason="GenEval 2's file is not available")
def test_geneval2_is_pinned_to_its_commit_and_hash_and_served_like_geneval(tmp_path, monkeypatch):
    spec = datasets.release("geneval2")
    assert spec is suite.RELEASE  # the pin lives beside the suite's reader; datasets finds it through the registry
    assert spec.revision == "a6e82d2289e8d418f27f0adee77908b07060eea3"
    assert spec.file("geneval2_data.jsonl").sha256 in (GENEVAL2_DATA / "README.md").read_text()
    repo = tmp_path / "repo" / spec.revision
    repo.mkdir(parents=True)
    for item in spec.files:
        shutil.copyfile(GENEVAL2_DATA / item.name, repo / item.path)
    monkeypatch.delenv(spec.env, raising=False)
    serve_from(monkeypatch, (tmp_path / "repo").as_uri(), "geneval2")
    files = datasets.fetch_release("geneval2", tmp_path / "out")
    assert [f.name for f in files] == ["geneval2_data.jsonl", "LICENSE"]
    assert files[0].read_bytes() == (GENEVAL2_DATA / "geneval2_data.jsonl").read_bytes()
    # another revision's (here: an edited) file is refused, and nothing is left behind
    other = tmp_path / "repo" / "main"
    other.mkdir()
    (other / "geneval2_data.jsonl").write_bytes((GENEVAL2_DATA / "geneval2_data.jsonl").read_bytes()[:-10])
    with pytest.raises(InputError, match=r"main/geneval2_data\.jsonl: SHA-256 .* is not the released file's"):
        datasets.fetch_release("geneval2", tmp_path / "out2", revision="main")
    assert not (tmp_path / "out2" / "geneval2_data.jsonl").exists()


@pytest.mark.skipif(not GENEVAL2_DATA.is_dir(), reason="GenEval 2's file is not available")
def test_geneval2_local_override_and_cli(tmp_path, monkeypatch, capsys):
    from t2ibench.cli import main

    monkeypatch.setenv(datasets.release("geneval2").env, str(GENEVAL2_DATA))
    monkeypatch.setattr(datasets, "_download", lambda *a: pytest.fail("downloaded despite the local override"))
    assert main(["data", "fetch", "geneval2", "--out", str(tmp_path / "g2")]) == 0
    assert (tmp_path / "g2" / "geneval2_data.jsonl").read_bytes() == (
        GENEVAL2_DATA / "geneval2_data.jsonl"
    ).read_bytes()
    assert "geneval2_data.jsonl, LICENSE (verified)" in capsys.readouterr().err
    # a typo gets a did-you-mean listing the releases
    listed = r"geneval, geneval_rewritten, geneval2"
    with pytest.raises(InputError, match=rf"unknown dataset 'geneval3'; did you mean .*{listed}"):
        datasets.release("geneval3")
