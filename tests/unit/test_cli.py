import json

import numpy as np
import pytest

from t2ibench.cli import main


@pytest.fixture
def embeddings(tmp_path, rng):
    path = tmp_path / "emb.npy"
    np.save(path, rng.standard_normal((600, 8)).astype(np.float32))
    return path


def test_diversity_on_a_file_prints_exact_and_fkea_and_writes_json(embeddings, tmp_path, capsys):
    out = tmp_path / "res.json"
    assert main(["diversity", str(embeddings), "--rff-dim", "256", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "median heuristic" in text
    assert "| exact | gaussian | 600 |" in text
    assert "| fkea | gaussian | 600 |" in text
    payload = json.loads(out.read_text())
    exact, fkea = payload["results"]
    assert exact["method"] == "exact"
    assert fkea["rff_dim"] == 256
    assert fkea["vendi"]["1"] == pytest.approx(exact["vendi"]["1"], rel=0.1)


def test_diversity_cosine_with_given_alphas(embeddings, capsys):
    assert main(["diversity", str(embeddings), "--kernel", "cosine", "--alphas", "0.5,inf"]) == 0
    assert "VENDI-0.5 | VENDI-∞" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["diversity"], "nothing to measure"),
        (["diversity", "missing.npy"], "missing.npy: no such file"),
        (["diversity", "{emb}", "--alphas", "0"], "alpha must be > 0"),
        (["diversity", "{emb}", "--sigma", "-1"], "sigma must be a finite number > 0"),
        (["diversity", "{emb}", "--rff-dim", "0", "--method", "fkea"], "rff_dim must be ≥ 1"),
        (["diversity", "{emb}", "--example", "digits"], "not both"),
        (["diversity", "--example", "digits", "--alphas", "1,2"], "one order"),
    ],
)
def test_diversity_errors_exit_2_with_a_message(argv, message, embeddings, capsys):
    argv = [a.replace("{emb}", str(embeddings)) for a in argv]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_diversity_rejects_wrong_file_types(tmp_path, capsys):
    bad = tmp_path / "emb.csv"
    bad.write_text("1,2\n")
    assert main(["diversity", str(bad)]) == 2
    assert "unsupported embeddings format" in capsys.readouterr().err
    vec = tmp_path / "vec.npy"
    np.save(vec, np.zeros(5))
    assert main(["diversity", str(vec)]) == 2
    assert "must be 2-D" in capsys.readouterr().err


def test_digits_example_small(tmp_path, capsys):
    out = tmp_path / "digits.json"
    argv = [
        "diversity",
        "--example",
        "digits",
        "--repeats",
        "2",
        "--rff-dim",
        "64",
        "--quiet",
        "--json",
        str(out),
    ]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert text.count("\n| ") == 12  # header, rule, 10 class counts
    payload = json.loads(out.read_text())
    assert [r["classes"] for r in payload["rows"]] == list(range(1, 11))
    assert payload["config"]["rff_dim"] == 64
