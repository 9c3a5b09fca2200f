"""Diversity is ranked only between models measured under one kernel; a store belongs to one config.

* the `diversity_comparison` view (and the leaderboard's `diversity_rank` / `diversity_note`): models sharing a
  reference or fixed σ and every other kernel parameter are ranked; a model's own median σ, an unrecorded σ, or a
  kernel no other model shares is not, with the reason;
* schema 10's migration marks older rows' σ source from the evaluator settings that made them (never recomputed);
* `Store.claim`: a store records the first config that runs into it and refuses another.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import duckdb
import pytest

from t2ibench.errors import InputError
from t2ibench.store import Store

REFERENCE = "reference:photos-v1@0123456789abcdef"
EMBEDDER = {"backend": "dinov2", "model": "facebook/dinov2-base", "normalize": False}


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "t.duckdb", timeout=2)
    s.initialise()
    return s


def add_model(
    store, model, *, vendi, sigma, source, rff_dim=2000, embedder=EMBEDDER, evaluator="e1", run="r1", kernel="gaussian",
    scendi_details=None,
):  # fmt: skip
    """One current model version with an FKEA VENDI-1 row (and a Scendi row) measured with the given kernel."""
    params = json.dumps({"alpha": 1.0, "sigma": sigma})
    details = {"text_sigma": 1.0, "text_sigma_source": "fixed"} if scendi_details is None else scendi_details
    with store.write() as con:
        store.upsert(
            con, "runs", [{"run_id": run, "status": "completed", "finished_at": datetime.now(UTC), "smoke": False}]
        )
        store.upsert(con, "models", [{"model": model, "model_hash": "h", "label": model}])
        store.upsert(
            con, "run_models", [{"run_id": run, "model": model, "model_hash": "h", "evaluator_hash": evaluator}]
        )
        settings = {"embed": {"image_embedder": embedder, "clip": {"backend": "open_clip"}}}
        store.upsert(con, "evaluators", [{"evaluator_hash": evaluator, "settings": settings, "lite": []}])
        base = {
            "model": model,
            "model_hash": "h",
            "evaluator_hash": evaluator,
            "n": 10,
            "seed": 0,
        }
        vendi_metric = "fkea" if kernel == "gaussian" else "cosine_vendi"
        store.upsert(
            con,
            "metrics",
            [
                {**base, "kernel": kernel, "metric": vendi_metric, "params_key": params, "alpha": 1.0, "sigma": sigma,
                 "rff_dim": rff_dim if kernel == "gaussian" else None, "value": vendi, "details": {"alpha": 1.0},
                 "sigma_source": source},
                {**base, "kernel": "gaussian", "metric": "scendi", "params_key": params, "alpha": 1.0, "sigma": 0.3,
                 "rff_dim": 1000, "value": 1.5, "details": details, "sigma_source": "fixed"},
            ],
        )  # fmt: skip


def comparison(store):
    return {r["model"]: r for r in store.rows("SELECT * FROM diversity_comparison")}


def test_one_shared_kernel_ranks_every_model(store):
    add_model(store, "a", vendi=3.0, sigma=0.8, source=REFERENCE)
    add_model(store, "b", vendi=5.0, sigma=0.8, source=REFERENCE)
    add_model(store, "c", vendi=4.0, sigma=0.8, source=REFERENCE)
    rows = comparison(store)
    assert {m: r["diversity_rank"] for m, r in rows.items()} == {"a": 3, "b": 1, "c": 2}
    assert all(r["comparable"] and r["diversity_note"] is None for r in rows.values())
    board = {r["model"]: r for r in store.rows("SELECT model, diversity_rank, diversity_note FROM leaderboard")}
    assert board["b"]["diversity_rank"] == 1


def test_a_models_own_median_is_never_ranked(store):
    add_model(store, "a", vendi=3.0, sigma=0.8, source=REFERENCE)
    add_model(store, "b", vendi=5.0, sigma=0.6, source="median:b")
    add_model(store, "c", vendi=4.0, sigma=0.8, source=REFERENCE)
    rows = comparison(store)
    assert rows["b"]["diversity_rank"] is None
    assert "own median" in rows["b"]["diversity_note"]
    # the two that share the reference kernel are ranked against each other only, and told so
    assert (rows["c"]["diversity_rank"], rows["a"]["diversity_rank"]) == (1, 2)
    assert "ranked only within its group" in rows["a"]["diversity_note"]


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"sigma": 0.9}, "σ differs"),
        ({"rff_dim": 1000}, "rff_dim differs"),
        ({"embedder": {**EMBEDDER, "normalize": True}}, "normalisation differs"),
        ({"embedder": {**EMBEDDER, "model": "facebook/dinov2-large"}}, "embedder differs"),
    ],
)
def test_a_kernel_no_other_model_shares_is_not_ranked(store, change, why):
    add_model(store, "a", vendi=3.0, sigma=0.8, source=REFERENCE)
    add_model(store, "b", vendi=4.0, sigma=0.8, source=REFERENCE)
    options = {"sigma": 0.8, "source": REFERENCE, "evaluator": "e2"} | change
    add_model(store, "odd", vendi=9.0, **options)
    rows = comparison(store)
    assert rows["odd"]["diversity_rank"] is None, why
    assert "no other current model shares" in rows["odd"]["diversity_note"], why
    assert (rows["b"]["diversity_rank"], rows["a"]["diversity_rank"]) == (1, 2), why


def test_a_fixed_sigma_shared_by_every_model_is_comparable(store):
    add_model(store, "a", vendi=3.0, sigma=0.55, source="fixed")
    add_model(store, "b", vendi=2.0, sigma=0.55, source="fixed")
    assert {m: r["diversity_rank"] for m, r in comparison(store).items()} == {"a": 1, "b": 2}


def old_store(tmp_path, sigma_setting, sigmas=(0.5, 0.7)):
    """A store as schema 9 wrote it: metrics without sigma_source, evaluator settings as the evaluators section."""
    store = Store(tmp_path / "old.duckdb")
    store.initialise()
    for model, vendi in (("a", 3.0), ("b", 5.0)):
        add_model(
            store, model, vendi=vendi, sigma=sigmas[0] if model == "a" else sigmas[1], source=None, evaluator="old",
            scendi_details={"text_sigma": 1.0},
        )  # fmt: skip
    with store.write() as con:
        settings = {"diversity": {"sigma": sigma_setting}, "scendi": {"image_sigma": 0.3, "text_sigma": 1.0},
                    "image_embedder": EMBEDDER}  # fmt: skip
        store.upsert(con, "evaluators", [{"evaluator_hash": "old", "settings": settings, "lite": []}])
        con.execute("UPDATE store_meta SET value = '9' WHERE key = 'schema_version'")
    with duckdb.connect(str(store.path)) as con:
        con.execute("ALTER TABLE metrics DROP COLUMN sigma_source")
    return store


def test_older_rows_made_with_a_per_model_median_are_marked_and_not_ranked(tmp_path):
    store = old_store(tmp_path, "median")
    before = store.rows("SELECT model, metric, value, sigma FROM metrics ORDER BY ALL")
    store.initialise()  # the first write migrates
    after = store.rows("SELECT model, metric, value, sigma, sigma_source FROM metrics ORDER BY ALL")
    assert [{k: v for k, v in r.items() if k != "sigma_source"} for r in after] == before  # nothing recomputed
    sources = {(r["model"], r["metric"]): r["sigma_source"] for r in after}
    assert sources == {("a", "fkea"): "median:a", ("b", "fkea"): "median:b", ("a", "scendi"): "fixed",
                       ("b", "scendi"): "fixed"}  # fmt: skip
    rows = comparison(store)
    assert all(r["diversity_rank"] is None and "own median" in r["diversity_note"] for r in rows.values())


def test_older_rows_with_a_fixed_sigma_are_marked_fixed(tmp_path):
    store = old_store(tmp_path, 0.5, sigmas=(0.5, 0.5))  # a fixed σ: the same for both
    store.initialise()
    assert {r["sigma_source"] for r in store.rows("SELECT sigma_source FROM metrics")} == {"fixed"}
    texts = store.rows("SELECT details->>'text_sigma_source' AS s FROM metrics WHERE metric = 'scendi'")
    assert {r["s"] for r in texts} == {"fixed"}
    assert {m: r["diversity_rank"] for m, r in comparison(store).items()} == {"a": 2, "b": 1}  # comparable again


def test_a_cosine_kernel_has_no_sigma_and_is_comparable(store):
    """The cosine kernel has no bandwidth: models measured under it (and the same embedders) are ranked."""
    for model, vendi in (("a", 2.0), ("b", 3.0)):
        add_model(store, model, vendi=vendi, sigma=None, source=None, kernel="cosine")
    rows = comparison(store)
    assert {m: r["diversity_rank"] for m, r in rows.items()} == {"a": 2, "b": 1}
    assert all(r["diversity_note"] is None for r in rows.values())


def test_a_per_model_text_sigma_is_not_ranked_either(store):
    add_model(store, "a", vendi=3.0, sigma=0.8, source=REFERENCE)
    add_model(store, "b", vendi=4.0, sigma=0.8, source=REFERENCE,
              scendi_details={"text_sigma": 1.1, "text_sigma_source": "median:b"})  # fmt: skip
    rows = comparison(store)
    assert rows["b"]["diversity_rank"] is None
    assert "own median" in rows["b"]["diversity_note"]


def test_a_store_belongs_to_the_config_that_first_ran_into_it(store):
    assert store.owner() is None
    store.claim("offline", "configs/offline.yaml")
    store.claim("offline", "configs/offline.yaml")  # the same config again: fine
    assert store.owner() == {"config": "offline", "file": "configs/offline.yaml"}
    before = store.rows("SELECT * FROM store_meta ORDER BY key")
    with pytest.raises(InputError, match=r"belongs to config 'offline' \(configs/offline.yaml\); config 'copy'"):
        store.claim("copy", "configs/copy.yaml")
    with pytest.raises(InputError, match="belongs to config 'offline'"):
        store.claim("offline", "configs/elsewhere/offline.yaml")  # same name, another file: another config
    assert store.rows("SELECT * FROM store_meta ORDER BY key") == before


def test_a_store_without_an_owner_is_adopted_only_by_the_config_of_its_runs(store):
    with store.write() as con:
        store.upsert(con, "runs", [{"run_id": "r", "config_name": "smoke", "status": "completed", "smoke": True}])
    with pytest.raises(InputError, match="holds runs of config"):
        store.claim("offline", "configs/offline.yaml")
    assert store.owner() is None
    store.claim("smoke", "configs/smoke.yaml")
    assert store.owner() == {"config": "smoke", "file": "configs/smoke.yaml"}


def test_the_report_does_not_rank_diversity_measured_under_another_kernel(store, tmp_path):
    """The leaderboard page and its Markdown show the rank only where it is defined and say why it is not."""
    from t2ibench.report.leaderboard import render_reports

    add_model(store, "a", vendi=3.0, sigma=0.8, source=REFERENCE)
    add_model(store, "b", vendi=5.0, sigma=0.6, source="median:b")
    add_model(store, "c", vendi=4.0, sigma=0.8, source=REFERENCE)
    out = render_reports(store.path, tmp_path / "report", config_name="x", published=())
    page = (tmp_path / "report" / "leaderboard.html").read_text()
    assert 'id="diversity-flag"' in page
    assert "b: σ is this model&#x27;s own median" in page
    assert '<span title="σ is this model&#x27;s own median' in page
    assert ">not ranked</span>" in page
    markdown = (tmp_path / "report" / "leaderboard.md").read_text()
    assert "* b: σ is this model's own median (sigma: median)" in markdown
    row = next(line for line in markdown.splitlines() if line.startswith("| ") and "| b |" in line)
    assert "| not ranked |" in row
    assert out["rendered"] is True
    assert render_reports(store.path, tmp_path / "report", config_name="x", published=())["rendered"] is False


def test_a_damaged_owner_record_is_refused_not_guessed(store):
    with store.write() as con:
        con.execute("INSERT INTO store_meta VALUES ('owner', '{\"config\": 3')")
    with pytest.raises(InputError, match=r"store_meta's owner record is damaged"):
        store.claim("offline", "configs/offline.yaml")
    with pytest.raises(InputError, match=r"owner record is damaged"):
        store.owner()
