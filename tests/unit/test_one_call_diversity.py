"""`t2ibench diversity FILE` measures a file as the refresh measures its features: σ named with its source (the
leaderboard's reference σ where the file names its embedding space, else the file's own median, said to be not
comparable), FKEA accumulated in the refresh's shards and batches around the refresh's centre, every setting stated.
The leaderboard equality on a real refresh's features: tests/integration/test_flows.py."""

from __future__ import annotations

import json

import numpy as np
import pytest

from t2ibench.cli import main
from t2ibench.config import DiversityConfig
from t2ibench.diversity import diversity_of_file
from t2ibench.errors import InputError
from t2ibench.features import EmbeddingSpace, space_of, write_spaces
from t2ibench.hashing import file_digest
from t2ibench.io import open_embeddings
from t2ibench.metrics.entropy import CENTER_BLOCK, FKEA, feature_center, mean_of_blocks
from t2ibench.pipeline.estimators import kernel_choice
from t2ibench.specs import EmbedderConfig


@pytest.fixture
def features(tmp_path, rng):
    path = tmp_path / "image_features.npy"
    np.save(path, (rng.standard_normal((103, 5)) + 40.0).astype(np.float32))  # off-centre: the centre matters
    return path


def refresh_fkea(X, *, sigma, rff_dim, seed, shards, batch_size=None):
    """What the refresh computes: one state per shard X[s::k] (``step_fkea_shard``), merged in shard order
    (``step_diversity``)."""
    states = []
    for s in range(shards):
        if batch_size is None:  # the refresh's own builder
            est = kernel_choice("gaussian").build(sigma=sigma, rff_dim=rff_dim, seed=seed, orthogonal=False, X=X)
        else:
            est = FKEA(
                sigma=sigma,
                rff_dim=rff_dim,
                seed=seed,
                dim=X.shape[1],
                batch_size=batch_size,
                center=feature_center(X),
            )
        if len(X[s::shards]):
            states.append(est.update(X[s::shards]))
    merged = states[0]
    for state in states[1:]:
        merged.merge(state)
    return merged.compute(DiversityConfig.alphas)


@pytest.mark.parametrize(("shards", "batch_size"), [(4, None), (3, 7), (1, 10), (200, None)])
def test_fkea_of_a_file_is_the_refreshs_bit_for_bit(features, shards, batch_size):
    """Same σ, r, seed: the same numbers to the last bit (the shard partition and the batches move FKEA's float32
    products in the 8th digit; the centre in the 7th)."""
    X = np.load(features)
    want = refresh_fkea(X, sigma=3.0, rff_dim=16, seed=5, shards=shards, batch_size=batch_size)
    options = {} if batch_size is None else {"batch_size": batch_size}
    got = diversity_of_file(
        features, sigma=3.0, method="fkea", rff_dim=16, seed=5, shards=shards, show_progress=False, **options
    ).results[0]
    assert got.vendi == want.vendi
    assert got.rke == want.rke


def test_the_centre_has_the_same_bits_in_memory_and_read_block_by_block(tmp_path, rng):
    """The refresh centres a loaded matrix, the one-call a file read in blocks: the same bits either way; and up to
    one block, the plain mean the refresh took before (its stored numbers are unchanged)."""
    X = rng.standard_normal((2 * CENTER_BLOCK + 123, 3)).astype(np.float32) + 7
    path = tmp_path / "big.npy"
    np.save(path, X)
    streamed = mean_of_blocks(b for _, b in open_embeddings(path).batches(CENTER_BLOCK))
    assert np.array_equal(feature_center(X), streamed)
    small = X[:CENTER_BLOCK]
    assert np.array_equal(feature_center(small), np.asarray(small, dtype=np.float64).mean(axis=0))


def test_a_file_that_names_no_embedding_space_is_measured_under_its_own_median_and_says_so(features, tmp_path, capsys):
    out = tmp_path / "res.json"
    assert main(["diversity", str(features), "--json", str(out), "--quiet"]) == 0
    text = capsys.readouterr().out
    payload = json.loads(out.read_text())
    sigma = payload["sigma"]
    assert sigma["source"] == "median:image_features.npy"
    assert sigma["comparable"] is False
    assert "no embedding_spaces.json beside it names its embedding space" in sigma["note"]
    assert "not comparable with a leaderboard's" in text
    assert f"σ = {sigma['value']:.6g} (sigma: median" in text


def test_the_output_states_every_setting_and_those_a_default_refresh_would_differ_in(features, tmp_path, capsys):
    out = tmp_path / "res.json"
    argv = ["diversity", str(features), "--method", "fkea", "--rff-dim", "64", "--shards", "2", "--sigma", "2"]
    assert main([*argv, "--json", str(out), "--quiet"]) == 0
    text = capsys.readouterr().out
    payload = json.loads(out.read_text())
    assert payload["sigma"] == {"value": 2.0, "source": "fixed", "comparable": True, "note": "Gaussian σ = 2 (given)."}
    assert payload["settings"] == {
        "kernel": "gaussian",
        "method": "fkea",
        "alphas": [1.0, 2.0, "inf"],
        "rff_dim": 64,
        "seed": DiversityConfig.seed,
        "shards": 2,
        "orthogonal": False,
        "batch_size": 8192,
    }
    assert "as a refresh whose evaluators.diversity sets rff_dim: 64, shards: 2 measures them" in text
    assert main(["diversity", str(features), "--method", "fkea", "--sigma", "2", "--quiet"]) == 0
    assert "as a refresh with the default evaluators.diversity measures them" in capsys.readouterr().out


def test_the_defaults_are_the_refreshs(features):
    found = diversity_of_file(features, sigma=2.0, method="fkea", show_progress=False)
    cfg = DiversityConfig()
    assert {k: found.settings[k] for k in ("rff_dim", "seed", "shards", "orthogonal")} == {
        "rff_dim": cfg.rff_dim,
        "seed": cfg.seed,
        "shards": cfg.shards,
        "orthogonal": cfg.orthogonal,
    }
    assert tuple(found.results[0].vendi) == (1.0, 2.0, float("inf"))


def test_a_recorded_space_round_trips_and_stops_applying_when_the_bytes_change(features):
    spec = EmbedderConfig(backend="dinov2", model="tiny-random")
    space = EmbeddingSpace(features.name, file_digest(features), spec, {"weights": "tiny-random"}, "photos-v1")
    write_spaces(features.parent, [space])
    assert space_of(features).space == space
    assert space_of(features.parent / "other.npy").why == "embedding_spaces.json beside it does not list other.npy"
    np.save(features, np.zeros((3, 5), np.float32))
    found = space_of(features)
    assert found.space is None
    assert found.why == "its bytes changed since embedding_spaces.json recorded its embedding space"


def test_sigma_reference_is_refused_where_the_file_names_no_space(features):
    with pytest.raises(InputError, match=r"--sigma reference: .*image_features\.npy: no embedding_spaces\.json"):
        diversity_of_file(features, sigma="reference", show_progress=False)


def test_scendi_on_paired_files_refuses_a_reference_sigma(tmp_path, capsys):
    np.savez(tmp_path / "i.npz", embeddings=np.eye(3), ids=np.arange(3))
    np.savez(tmp_path / "p.npz", embeddings=np.eye(3), ids=np.arange(3))
    argv = ["diversity", str(tmp_path / "i.npz"), "--prompts", str(tmp_path / "p.npz"), "--sigma", "reference"]
    assert main(argv) == 2
    assert "--sigma reference: Scendi of paired files takes σ as a number or 'median'" in capsys.readouterr().err
