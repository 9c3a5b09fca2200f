"""The HTML report's parts: published reference rows as validated data, ranks with ties, protocol groups, escaping,
and the drill-down pages and failure kinds of a synthetic store (tests/unit/test_failure_patterns.py's models)."""

from __future__ import annotations

import json

import pytest

from t2ibench.benchmarks.geneval.metrics import TASKS
from t2ibench.benchmarks.geneval.suite_published import load_published
from t2ibench.config import ReportConfig
from t2ibench.errors import FieldError, InputError
from t2ibench.report import leaderboard
from t2ibench.report.site import Cell, table
from tests.unit.test_failure_patterns import store  # noqa: F401  (the module-scoped synthetic store fixture)

ROW = (
    "{model: A, overall: 0.5, single_object: 0.5, two_object: 0.5, counting: 0.5, colors: 0.5, position: 0.5, "
    "color_attr: 0.5}"
)
HEAD = (
    "source: x\ncitation: y\nverified: read by hand\n"
    "protocol: {prompts: original, detector: mask2former, images_per_prompt: 4, resolution: unstated}\n"
)


def test_geneval_table2_ships_as_data_and_its_overall_is_the_task_mean():
    (t,) = load_published("geneval-table2")
    assert [r.model for r in t.rows] == ["CLIP retrieval", "minDALL-E", "SD v1.5", "SD v2.1", "SD-XL", "IF-XL"]
    if_xl = t.rows[-1]
    assert (if_xl.overall, if_xl.tasks["counting"], if_xl.human) == (0.61, 0.66, 0.72)
    for r in t.rows:  # the published overall is the mean of the published tasks, to the table's rounding
        assert abs(sum(r.tasks[k] for k in TASKS) / 6 - r.overall) <= 0.0101
        assert (r.protocol.prompts, r.protocol.detector, r.protocol.images_per_prompt) == ("original", "mask2former", 4)
    assert t.rows[2].hub == ("runwayml/stable-diffusion-v1-5", "stable-diffusion-v1-5/stable-diffusion-v1-5")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (HEAD + "rows: [{model: A, countng: 0.5}]", "row 1: unknown key 'countng'; did you mean 'counting'"),
        (HEAD + "rows: [{model: A, counting: 61}]", "row 1: counting: must be an accuracy in [0, 1]"),
        (HEAD + "rows: [{model: A, counting: 0.5}, {model: a, counting: 0.5}]", "row 2: model 'a' is also row 1"),
        (HEAD + "rows: [{model: A, counting: true}]", "counting: must be a number"),
        (HEAD.replace("citation: y\n", "") + "rows: [{model: A, counting: 0.5}]", "citation: must be one line"),
        (HEAD + "rows: []", "rows must be a non-empty list"),
        (HEAD + "rows: [" + ROW.replace("overall: 0.5", "overall: 0.6") + "]", "is not the mean"),
        (HEAD + "rows: [{model: A, counting: 0.5}]\nrows: [{model: B}]", "given twice"),
        # a row without a source's protocol or its reading is refused
        (HEAD.replace(" resolution: unstated", "") + "rows: [{model: A, counting: 0.5}]",
         "row 1: no protocol resolution (in the row's or its table's protocol"),
        (HEAD.replace("verified: read by hand\n", "") + "rows: [{model: A, counting: 0.5}]", "row 1: no verified"),
        (HEAD.replace("protocol: {", "protocol: 'GenEval's {") + "rows: [{model: A}]", "not valid YAML"),
        ("source: x\ncitation: y\nverified: z\nprotocol: GenEval's protocol\nrows: [{model: A, counting: 0.5}]",
         "protocol: must be a mapping of prompts, detector, images_per_prompt, resolution"),
        (HEAD + "rows: [{model: A, counting: 0.5, protocol: {prompts: rewriten}}]",
         "row 1: protocol.prompts: must be one of original, rewritten, unstated"),
        (HEAD + "rows: [{model: A, counting: 0.5, protocol: {images_per_prompt: 0}}]",
         "protocol.images_per_prompt: must be an integer in [1, 10000] or 'unstated'"),
        (HEAD + "rows: [{model: \"A\\u202e\", counting: 0.5}]", "model: must be one line of visible text"),
        (HEAD + "rows: [{model: A, counting: 0.5, protocol: {prompts: 'rewritten: x'}}]",
         "protocol.prompts: must be one of original, rewritten, unstated (or rewritten:<the rewrite, as"),
        (HEAD + "rows: [{model: A}]", "row 1: no score"),
        (HEAD + "rows: [{model: 'A†', counting: 0.5}]", "write the name without †"),
        # the printed row is read back through the table's columns: a transcription slip is caught
        (HEAD + "columns: [counting, overall]\nrows: [{model: A, counting: 0.5, overall: 0.4, printed: 'A 0.50 0.45'}]",
         "row 1: overall is 0.4 but printed '0.45'"),
        (HEAD + "columns: [counting, overall]\nrows: [{model: A, counting: 0.5, printed: 'A 0.50 0.45'}]",
         "row 1: overall is None but printed '0.45'"),
        (HEAD + "columns: [counting]\nrows: [{model: A, counting: 0.5, printed: '| A | n/a |'}]",
         "printed cell 'n/a' under counting is not a number"),
        (HEAD + "rows: [" + ROW.replace("overall: 0.5", "overall: 0.6, overall_is_mean: false") + "]",
         "overall_is_mean must be true, or false with a note"),
        ("tables: [{source: x}]", "table 1: citation: must be one line"),
        ("tables:\n  - " + HEAD.replace("\n", "\n    ") + "rows: [{model: A, counting: 0.5}]\n  - "
         + HEAD.replace("\n", "\n    ") + "rows: [{model: A, counting: 0.5}]", "two tables are named 'x'"),
    ],
)  # fmt: skip
def test_a_malformed_published_table_is_refused_with_file_row_and_key(tmp_path, text, message):
    path = tmp_path / "paper.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match=r"paper\.yaml") as err:
        load_published(path)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_a_source_that_prints_an_overall_off_the_mean_is_kept_as_printed_with_its_note(tmp_path):
    path = tmp_path / "paper.yaml"
    row = ROW.replace("overall: 0.5", "overall: 0.6, overall_is_mean: false, note: as printed")
    path.write_text(HEAD + "rows: [" + row + "]")
    (t,) = load_published(path)
    assert (t.rows[0].overall, t.rows[0].note) == (0.6, "as printed")


def test_a_missing_published_table_suggests_the_built_in_name(tmp_path):
    with pytest.raises(InputError, match="did you mean 'geneval-table2'"):
        load_published("geneval-tabel2")
    with pytest.raises(FieldError, match="published"):
        ReportConfig(published=("notes.txt",))


def test_ranks_share_a_place_until_a_paired_test_separates_them():
    """Ranks come from the stored paired tests (``separated``: the pairs a test separates), not from intervals: b and c
    are separated, a and b are not (although here their intervals would not say otherwise either)."""
    separated = {frozenset(("b", "c"))}
    board = [
        {"model": "a", "overall": 0.9, "overall_ci_low": 0.85, "overall_ci_high": 0.95},
        {"model": "b", "overall": 0.88, "overall_ci_low": 0.80, "overall_ci_high": 0.93},
        {"model": "c", "overall": 0.5, "overall_ci_low": 0.4, "overall_ci_high": 0.6},
        {"model": "d", "overall": None, "overall_ci_low": None, "overall_ci_high": None},
    ]
    assert leaderboard.ranks(board, None, separated) == {"a": "1=", "b": "1=", "c": "3", "d": "—"}
    assert leaderboard.tied_with_next(board, None, separated) == {"a", "b"}
    # nothing separated (no comparison stored, or none significant): one shared rank, whatever the intervals say
    assert leaderboard.ranks(board) == {"a": "1=", "b": "1=", "c": "1=", "d": "—"}
    # a smoke (random-weight) model measures nothing: it is not ranked, and it breaks no tie between the others
    smoke = {"model": "s", "overall": 0.86, "overall_ci_low": 0.8, "overall_ci_high": 0.9, "smoke": True}
    board.insert(1, smoke)
    assert leaderboard.ranks(board, None, separated) == {"a": "1=", "s": "smoke", "b": "1=", "c": "3", "d": "—"}
    assert leaderboard.tied_with_next(board, None, separated) == {"a", "b"}


def test_models_of_different_protocols_are_ranked_within_their_group_only():
    """Scores measured under different protocols are not comparable: each group is ranked on its own, every rank
    names its group, and an interval overlap across groups makes no tie."""
    board = [
        {"model": "a", "overall": 0.9, "overall_ci_low": 0.85, "overall_ci_high": 0.95},
        {"model": "x", "overall": 0.89, "overall_ci_low": 0.84, "overall_ci_high": 0.94},
        {"model": "b", "overall": 0.88, "overall_ci_low": 0.80, "overall_ci_high": 0.93},
        {"model": "y", "overall": 0.5, "overall_ci_low": 0.45, "overall_ci_high": 0.55},
        {"model": "c", "overall": 0.5, "overall_ci_low": 0.4, "overall_ci_high": 0.6},
    ]
    groups = {"a": "A", "b": "A", "c": "A", "x": "B", "y": "B"}
    sep = {frozenset(p) for p in (("b", "c"), ("x", "y"), ("b", "y"))}
    assert leaderboard.ranks(board, groups, sep) == {
        "a": "1= (A)", "b": "1= (A)", "c": "3 (A)", "x": "1 (B)", "y": "2 (B)",
    }  # fmt: skip
    assert leaderboard.tied_with_next(board, groups, sep) == {"a", "b"}  # x ties a, but is another protocol
    one = dict.fromkeys(groups, "A")
    assert leaderboard.ranks(board, one, sep) == leaderboard.ranks(board, None, sep)  # one protocol: plain ranks
    assert leaderboard.ranks(board, None, sep) == {"a": "1=", "x": "1=", "b": "1=", "y": "4=", "c": "4="}
    # the rank column sorts by group, then rank: A's 1=, 1=, 3 before B's 1, 2
    labels = leaderboard.ranks(board, groups, sep)
    order = {"A": 0, "B": 1}
    keys = {m: int(leaderboard.rank_sort_key(labels[m], order[groups[m]])) for m in groups}
    assert sorted(keys, key=keys.__getitem__) == ["a", "b", "c", "x", "y"]
    assert leaderboard.rank_sort_key("smoke", 0) == leaderboard.rank_sort_key("—", 0) == ""


def test_protocol_groups_name_what_differs():
    evaluator = {"geneval": {"threshold": 0.3}, "diversity": {"sigma": 0.5}}
    other = {"geneval": {"threshold": 0.1}, "diversity": {"sigma": 0.5}}
    gen = json.dumps({"images_per_prompt": 4, "seeding": "prompt"})
    data = {
        "board": [{"model": m} for m in ("a", "b", "c")],
        "verdicts": [{"model": m, "suite": "geneval-s43-n100"} for m in ("a", "b", "c")],
        "protocol": [
            {"model": "a", "generation": gen, "evaluator": json.dumps(evaluator)},
            {"model": "b", "generation": gen, "evaluator": json.dumps(evaluator)},
            {"model": "c", "generation": gen, "evaluator": json.dumps(other)},
        ],
    }
    groups, differing = leaderboard.protocols(data)
    assert groups == {"a": "A", "b": "A", "c": "B"}
    assert differing == ["evaluator.geneval.threshold"]
    data["protocol"][2]["evaluator"] = json.dumps(evaluator)
    assert leaderboard.protocols(data) == ({"a": "A", "b": "A", "c": "A"}, [])


def test_cells_escape_hostile_text_and_keep_the_value_as_sort_key():
    html = table("t", ["<h>"], [[Cell.text("<script>alert(1)</script>")], [Cell.number(0.0)], [Cell.number(None)]])
    assert "<script>alert" not in html
    assert "&lt;script&gt;" in html
    assert "&lt;h&gt;" in html
    assert 'data-sort="0.0"' in html
    assert 'class="zero"' in html
    assert 'data-sort=""' in html
    assert "—" in html


def test_the_report_writes_drill_down_pages_and_keeps_published_rows_apart(store, tmp_path):  # noqa: F811
    out = leaderboard.render_reports(store.path, tmp_path / "r")
    html = (tmp_path / "r" / "leaderboard.html").read_text()
    main_table = html.split('id="leaderboard"')[1].split("</table>")[0]
    published = html.split('id="published"')[1].split("</table>")[0]
    assert "IF-XL" in published
    assert "IF-XL" not in main_table
    assert "swapper" in main_table
    assert set(out["models_html"]) == {r["model"] for r in store.rows("SELECT model FROM leaderboard")}
    page = (tmp_path / "r" / "models" / "swapper.html").read_text()
    assert 'id="model-card"' in page
    assert 'id="prompts"' in page
    # every failed color-attribution image of the swapper is a swap, as its policy does and the view says
    kinds = store.rows(
        "SELECT failure, count(*) AS n FROM image_failures JOIN current_models USING (model, model_hash, "
        "evaluator_hash) WHERE model = 'swapper' AND task = 'color_attr' AND NOT correct GROUP BY ALL"
    )
    assert [k["failure"] for k in kinds] == ["swap"]
    assert 'data-failure="swap"' in page
    prompt_pages = list((tmp_path / "r" / "models" / "swapper").glob("p*.html"))
    prompts = store.rows("SELECT count(DISTINCT prompt_index) AS n FROM verdicts WHERE model = 'swapper'")[0]["n"]
    assert len(prompt_pages) == prompts
    agreement = (tmp_path / "r" / "agreement.html").read_text()
    assert "No agreement stored" in agreement  # this store has none: the page says so, never an empty table
    assert 'id="provenance"' in agreement
