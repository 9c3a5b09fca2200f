"""The human-agreement HTML page: a self-contained, well-formed document of stored rows, escaped, with its tables."""

from html.parser import HTMLParser

import pytest

from t2ibench.benchmarks.geneval.report_agreement import html_page

VOID = {"meta", "link", "br", "img", "input", "hr", "col", "wbr", "source", "area", "base", "embed", "track"}


class Tree(HTMLParser):
    """Collects tags, ids, attributes and text; records nesting errors (an unclosed or stray end tag)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.tags: list[str] = []
        self.ids: dict[str, str] = {}
        self.attrs: list[tuple[str, str, str | None]] = []
        self.text: list[str] = []
        self.doctype = ""

    def handle_decl(self, decl: str) -> None:
        self.doctype = decl

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for name, value in attrs:
            self.attrs.append((tag, name, value))
            if name == "id":
                if value in self.ids:
                    self.errors.append(f"duplicate id {value}")
                self.ids[value] = tag
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def parse(page: str) -> Tree:
    tree = Tree()
    tree.feed(page)
    tree.close()
    assert not tree.errors, tree.errors
    assert not tree.stack, f"unclosed: {tree.stack}"
    return tree


def row(scope, source, task, statistic, value, low=None, high=None, n=None, level=0.95):
    return {
        "scope": scope,
        "source": source,
        "task": task,
        "statistic": statistic,
        "value": value,
        "ci_low": low,
        "ci_high": high,
        "ci_level": level if low is not None else None,
        "n": n,
    }


def stored(source="sdv2", *, auto=True):
    rows = []
    for s in (source, "all"):
        for task in ("colors", "position", "all"):
            rows += [
                row("human", s, task, "human_accuracy", 0.57, 0.533, 0.603, 2000),
                row("human", s, task, "pairwise_agreement", 0.836, 0.809, 0.863, 400),
                row("human", s, task, "vs_majority_of_others", 0.897, 0.876, 0.917, 1844),
                row("human", s, task, "fleiss_kappa", 0.666, 0.61, 0.72, 400),
                row("human", s, task, "images", 400.0),
            ]
        rows += [
            row("human", s, "all", "human_accuracy_task_mean", 0.581, 0.546, 0.616, 6),
            row("human", s, "all", "pairwise_agreement_task_mean", 0.841, 0.814, 0.866, 6),
        ]
        if auto:
            rows += [
                row("auto:geneval", s, "all", "vs_annotators", 0.8, 0.77, 0.83, 2000),
                row("auto:geneval", s, "all", "vs_majority", 0.83, 0.79, 0.86, 380),
                row("auto:geneval", s, "all", "kappa_vs_majority", 0.61, 0.5, 0.7, 380),
            ]
    return rows


def test_a_complete_self_contained_document_with_nav_first_and_both_tables():
    nav = '<nav><a href="leaderboard.html">Leaderboard</a></nav>'
    page = html_page(stored(), nav=nav)
    tree = parse(page)
    assert tree.doctype.lower() == "doctype html"
    assert page.index("<body>\n" + nav) == page.index("<body>")  # nav right after <body>
    assert '<meta charset="utf-8">' in page
    assert tree.tags.count("html") == tree.tags.count("head") == tree.tags.count("body") == 1
    assert tree.ids["agreement-human"] == "table"
    assert tree.ids["agreement-auto"] == "table"
    assert "script" not in tree.tags
    for tag, name, value in tree.attrs:  # nothing loaded from elsewhere (data: URIs and in-page links only)
        if name in {"src", "href"} and tag != "a":
            assert value.startswith("data:"), (tag, name, value)
        assert not name.startswith("on"), (tag, name)
    text = "".join(tree.text)
    assert "57.0 [53.3, 60.3]" in text  # the headline human score with its interval
    assert "58.1 [54.6, 61.6]" in text  # the secondary task mean
    assert "0.666 [0.610, 0.720]" in text  # κ as a fraction
    assert "88 %" in text
    assert "83 %" in text
    assert "Definitions" in text


def test_auto_table_only_when_auto_rows_are_stored():
    tree = parse(html_page(stored(auto=False)))
    assert "agreement-human" in tree.ids
    assert "agreement-auto" not in tree.ids
    assert "No automatic verdicts stored" in "".join(tree.text)


@pytest.mark.parametrize("hostile", ['<script>alert("x")</script>', '"><img src=x onerror=alert(1)>', "a & b"])
def test_hostile_source_and_task_names_are_escaped(hostile):
    rows = [*stored(source=hostile), row("human", "sdv2", hostile, "human_accuracy", 0.5, 0.4, 0.6, 10)]
    rows.append(row(f"auto:{hostile}", "sdv2", "all", "vs_annotators", 0.5, 0.4, 0.6, 10))
    page = html_page(rows, title=hostile)
    tree = parse(page)
    assert "script" not in tree.tags
    assert "img" not in tree.tags
    assert not any(name.startswith("on") for _, name, _ in tree.attrs)
    assert hostile in "".join(tree.text)  # shown as text, not markup


def test_no_rows_gives_a_clear_page():
    page = html_page([], nav="<nav>n</nav>")
    tree = parse(page)
    assert "agreement-empty" in tree.ids
    assert "No agreement stored" in "".join(tree.text)
    assert "agreement-human" not in tree.ids
    assert "<body>\n<nav>n</nav>" in page


def test_missing_intervals_and_nulls_render_as_plain_values_or_dashes():
    rows = [
        row("human", "clip", "all", "human_accuracy", 0.416, None, None, 2000),
        row("human", "clip", "all", "fleiss_kappa", float("nan")),
        row("human", "clip", "colors", "pairwise_agreement", 0.9, float("nan"), float("nan"), None),
    ]
    text = "".join(parse(html_page(rows)).text)
    assert "41.6" in text
    assert "[" not in text.split("41.6")[1][:3]
    assert "—" in text
