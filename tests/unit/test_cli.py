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
    assert main(["diversity", str(embeddings), "--method", "both", "--rff-dim", "256", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "median heuristic" in text
    assert "| exact | gaussian | 600 |" in text
    assert "| fkea | gaussian | 600 |" in text
    payload = json.loads(out.read_text())
    exact, fkea = payload["results"]
    assert exact["method"] == "exact"
    assert fkea["rff_dim"] == 256
    assert fkea["vendi"]["1"] == pytest.approx(exact["vendi"]["1"], rel=0.1)


def test_diversity_auto_says_which_method_it_chose_and_why(embeddings, tmp_path, capsys):
    out = tmp_path / "res.json"
    assert main(["diversity", str(embeddings), "--json", str(out), "--quiet"]) == 0  # n = 600: exact is instant
    text = capsys.readouterr().out
    assert "| exact | gaussian | 600 |" in text
    assert "| fkea |" not in text
    assert "Method auto → exact: n = 600, d = 8: estimated" in text
    payload = json.loads(out.read_text())
    assert [r["method"] for r in payload["results"]] == ["exact"]
    assert "Method auto → exact" in payload["note"]


def test_diversity_reports_truncated_vendi_from_each_spectrum(embeddings, tmp_path, capsys):
    from t2ibench.metrics import exact_entropy, median_heuristic_sigma, truncated_vendi

    out = tmp_path / "res.json"
    argv = ["diversity", str(embeddings), "--method", "exact", "--truncation", "20", "--json", str(out), "--quiet"]
    assert main(argv) == 0
    assert "truncated VENDI-1 (t = 20)" in capsys.readouterr().out
    X = np.load(embeddings)
    want = truncated_vendi(exact_entropy(X, sigma=median_heuristic_sigma(X, seed=0)).eigenvalues, [1.0], 20)[1.0]
    payload = json.loads(out.read_text())
    assert payload["truncated"]["t"] == 20
    assert payload["truncated"]["vendi"][0]["1.0"] == pytest.approx(want, rel=1e-9)
    assert 1.0 <= want <= 20.0


def test_sigma_median_is_spelled_as_in_a_config(embeddings, capsys):
    from t2ibench.metrics import exact_entropy, median_heuristic_sigma

    assert main(["diversity", str(embeddings), "--sigma", "median", "--method", "exact", "--quiet"]) == 0
    text = capsys.readouterr().out
    X = np.load(embeddings)
    assert f"σ = {median_heuristic_sigma(X, seed=0):.6g} (sigma: median" in text
    want = exact_entropy(X, sigma=median_heuristic_sigma(X, seed=0)).vendi[1.0]
    assert f"{want:.4f}"[:5] in text


def test_diversity_cosine_with_given_alphas(embeddings, capsys):
    assert main(["diversity", str(embeddings), "--kernel", "cosine", "--alphas", "0.5,inf"]) == 0
    assert "VENDI-0.5 | VENDI-∞" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["diversity"], "nothing to measure"),
        (["diversity", "missing.npy"], "missing.npy: no such file"),
        (["diversity", "{emb}", "--alphas", "0"], "alpha must be > 0"),
        (["diversity", "{emb}", "--sigma", "-1"], "argument --sigma: must be in (0, inf); got -1"),
        (["diversity", "{emb}", "--sigma", "med"], "expected a number, got 'med' (or 'median': the median heuristic; "),
        (["diversity", "{emb}", "--kernel", "cosine", "--sigma", "2"], "sigma=2.0: the cosine kernel has no bandwidth"),
        (["diversity", "{emb}", "--rff-dim", "0", "--method", "fkea"], "argument --rff-dim: must be in [1, 1000000]"),
        (["diversity", "{emb}", "--example", "digits"], "not both"),
        (["diversity", "--example", "digits", "--alphas", "1,2"], "one order"),
    ],
)
def test_diversity_errors_exit_2_with_a_message(argv, message, embeddings, capsys):
    argv = [a.replace("{emb}", str(embeddings)) for a in argv]
    assert run(argv) == 2
    assert message in capsys.readouterr().err


def run(argv):
    """main()'s exit status, also when the argument parser refuses an option (SystemExit)."""
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


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
    assert [r["classes"] for r in payload["sweep"]["rows"]] == list(range(1, 11))
    assert payload["sweep"]["config"]["rff_dim"] == 64
    assert set(payload["sweep"]["monotone"]) == {"vendi_exact", "vendi_fkea", "rke_exact", "rke_fkea"}


def test_digits_prompts_modes_and_gallery(tmp_path, capsys):
    out = tmp_path / "d.json"
    argv = ["diversity", "--example", "digits", "--prompts", "--per-prompt", "30", "--repeats", "1", "--rff-dim", "64"]
    argv += ["--modes", "2", "--top", "4", "--gallery", str(tmp_path / "g"), "--quiet", "--json", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "| prompt-following |" in text
    assert "| prompt-ignoring |" in text
    assert "fkea modes over n = 1797" in text
    assert "scendi modes over n = 300" in text
    for part in ("fkea", "scendi"):
        assert (tmp_path / "g" / part / "summary.png").exists()
        assert (tmp_path / "g" / part / "mode_01.png").exists()
    payload = json.loads(out.read_text())
    assert [r["model"] for r in payload["scendi"]["rows"]] == ["prompt-following", "prompt-ignoring"]
    assert len(payload["modes"]["scendi"]["modes"]) == 2


@pytest.fixture
def paired_files(tmp_path, rng):
    from PIL import Image

    prompts = np.eye(4, 6) * 2
    prompt_of = np.repeat(np.arange(4), 10)
    images = rng.standard_normal((40, 5)) + 3 * np.eye(4, 5)[prompt_of]
    paths = []
    for j in range(40):
        Image.new("RGB", (12, 12), (10 * j, 0, 0)).save(tmp_path / f"img{j}.png")
        paths.append(f"img{j}.png")
    np.savez(tmp_path / "images.npz", embeddings=images, ids=prompt_of, paths=np.array(paths))
    np.savez(
        tmp_path / "prompts.npz",
        embeddings=prompts,
        ids=np.arange(4),
        texts=np.array([f"prompt {i}" for i in range(4)]),
    )
    return tmp_path / "images.npz", tmp_path / "prompts.npz"


@pytest.mark.parametrize("kernel", ["gaussian", "cosine"])
def test_scendi_on_paired_files_with_gallery(paired_files, tmp_path, capsys, kernel):
    images, prompts = paired_files
    out = tmp_path / "s.json"
    argv = ["diversity", str(images), "--prompts", str(prompts), "--kernel", kernel, "--rff-dim", "64"]
    argv += ["--modes", "2", "--top", "3", "--gallery", str(tmp_path / "gal"), "--json", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "n = 40 images paired by id with 4 prompts" in text
    assert ("median heuristic" in text) == (kernel == "gaussian")
    assert "| images.npz | 40 |" in text
    assert "img" in text  # modes are labelled with the image file names
    payload = json.loads(out.read_text())
    assert payload["scendi"]["n"] == 40
    assert (tmp_path / "gal" / "scendi" / "modes.json").exists()
    index = json.loads((tmp_path / "gal" / "scendi" / "modes.json").read_text())
    assert index["modes"][0]["top"][0]["image"].endswith(".png")


def test_modes_of_text_embeddings_write_a_markdown_gallery(tmp_path, rng, capsys):
    X = rng.standard_normal((30, 4))
    np.savez(tmp_path / "t.npz", embeddings=X, texts=np.array([f"sentence {i}" for i in range(30)]))
    argv = [
        "diversity",
        str(tmp_path / "t.npz"),
        "--kernel",
        "cosine",
        "--modes",
        "2",
        "--gallery",
        str(tmp_path / "g"),
    ]
    assert main(argv) == 0
    assert "sentence" in (tmp_path / "g" / "cosine_modes.md").read_text()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--gallery", "x"], "--gallery DIR renders modes: add --modes K"),
        (["--modes", "0"], "argument --modes: must be in [1, 10000]; got 0"),
    ],
)
def test_mode_option_errors(embeddings, capsys, extra, message):
    assert run(["diversity", str(embeddings), *extra]) == 2
    assert message in capsys.readouterr().err


def test_prompt_file_errors(paired_files, embeddings, tmp_path, capsys):
    images, _prompts = paired_files
    assert main(["diversity", str(embeddings), "--prompts"]) == 2
    assert "--prompts needs a PROMPTS.npz" in capsys.readouterr().err
    np.savez(tmp_path / "noids.npz", embeddings=np.eye(3))
    assert main(["diversity", str(images), "--prompts", str(tmp_path / "noids.npz")]) == 2
    assert "needs a 'ids' array" in capsys.readouterr().err
    np.savez(tmp_path / "few.npz", embeddings=np.eye(3), ids=np.arange(3))
    assert main(["diversity", str(images), "--prompts", str(tmp_path / "few.npz")]) == 2
    assert "row 30 asks for prompt id '3'" in capsys.readouterr().err
    assert main(["diversity", str(embeddings), "--modes", "2", "--gallery", str(tmp_path / "g")]) == 2
    assert "--gallery needs a 'paths' (images) or 'texts' array" in capsys.readouterr().err


def test_schedule_needs_a_config_except_to_list(tmp_path, capsys, monkeypatch):
    assert main(["schedule"]) == 2
    assert "--config is required (or use --list)" in capsys.readouterr().err
    monkeypatch.chdir(tmp_path)  # --list from a folder that is not a checkout: named, nothing started
    assert main(["schedule", "--list"]) == 2
    assert "not a t2ibench workspace (no flows/schedule.py)" in capsys.readouterr().err
