"""The HTML report's shared page frame: one stylesheet and one small script, both inline, so every page works
from ``file://`` and any static host with no network (rendering only).

``page`` wraps a body in the frame (navigation, banners, footer); ``table`` renders a sortable, filterable table
whose cells carry their sort keys; ``fmt``/``interval`` are the number formats every page uses.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

BANNER_CSS = ".banner { background: #fff3cd; border: 1px solid #e0a800; padding: 8px; font-weight: bold; }"
STYLE = (
    BANNER_CSS
    + """
body { font-family: "DejaVu Sans", Verdana, sans-serif; margin: 1.5em 2em; color: #222; }
nav { margin-bottom: 1em; font-size: 95%; } nav a { margin-right: 1.2em; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; } caption { text-align: left; color: #555; padding: 4px 0; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: right; vertical-align: top; }
td.text, th.text { text-align: left; } tbody tr:nth-child(even) { background: #f7f7f7; }
th button { all: unset; cursor: pointer; font-weight: bold; } th button::after { content: " \\2195"; color: #999; }
th[aria-sort="ascending"] button::after { content: " \\2191"; color: #000; }
th[aria-sort="descending"] button::after { content: " \\2193"; color: #000; }
.flag { background: #fde2e1; border: 1px solid #c0504d; padding: 8px; }
.tie { color: #a15c00; font-weight: bold; } .ci { color: #666; font-size: 85%; } .zero { color: #c0504d; }
.converged { color: #2e7d32; } .unconverged { color: #a15c00; font-weight: bold; }
.published td, .published th { background: #eef3fb; } .label { font-size: 80%; color: #555; }
.controls { margin: 0.5em 0; } .controls label { margin-right: 1em; }
figure { display: inline-block; margin: 0.4em; vertical-align: top; } figcaption { font-size: 80%; max-width: 160px; }
figure.ok img { outline: 3px solid #3c9d3c; } figure.fail img { outline: 3px solid #c0504d; }
.gallery { display: flex; flex-wrap: wrap; } .mode { border-top: 1px solid #ddd; margin-top: 0.8em; }
dl.card { display: grid; grid-template-columns: max-content auto; gap: 2px 1em; } dl.card dt { font-weight: bold; }
dl.card dd { margin: 0; font-family: monospace; font-size: 90%; white-space: pre-wrap; }
footer { margin-top: 2em; color: #555; font-size: 85%; } .hidden { display: none; }
"""
)

# sorting by a column's data-sort keys (numbers when every key parses), filtering by text, task and failure kind;
# the task/failure filters may be preset from the page's #task=…&failure=… fragment (links from the leaderboard)
SCRIPT = r"""
(function () {
  function key(cell) { var v = cell.getAttribute("data-sort"); return v === null ? cell.textContent.trim() : v; }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, col) {
      var button = th.querySelector("button");
      if (!button) { return; }
      button.addEventListener("click", function () {
        var descending = th.getAttribute("aria-sort") !== "descending";
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", descending ? "descending" : "ascending");
        var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
        var keys = rows.map(function (r) { return key(r.cells[col]); });
        var numeric = keys.every(function (k) { return k === "" || !isNaN(parseFloat(k)); });
        var order = rows.map(function (r, i) { return i; });
        order.sort(function (a, b) {
          var x = keys[a], y = keys[b], c;
          if (numeric) {
            if (x === "" || y === "") { return (x === "") - (y === "") || a - b; }  // empty last, either way
            c = parseFloat(x) - parseFloat(y);
          } else { c = x.localeCompare(y); }
          return (descending ? -c : c) || a - b;
        });
        order.forEach(function (i) { body.appendChild(rows[i]); });
      });
    });
  });
  function apply() {
    document.querySelectorAll("table.filterable").forEach(function (table) {
      var id = table.id, text = document.getElementById(id + "-filter");
      var selects = document.querySelectorAll("select[data-filter-for='" + id + "']");
      var needle = text ? text.value.toLowerCase() : "";
      var shown = 0;
      Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
        var ok = !needle || row.textContent.toLowerCase().indexOf(needle) >= 0;
        Array.prototype.forEach.call(selects, function (s) {
          var want = s.value, have = (row.getAttribute("data-" + s.name) || "").split(" ");
          if (want && have.indexOf(want) < 0) { ok = false; }
        });
        row.classList.toggle("hidden", !ok);
        if (ok) { shown += 1; }
      });
      var count = document.getElementById(id + "-count");
      if (count) { count.textContent = shown + " of " + table.tBodies[0].rows.length + " rows shown"; }
    });
  }
  function fromHash() {
    var preset = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (part) {
      var kv = part.split("="); if (kv.length === 2) { preset[kv[0]] = decodeURIComponent(kv[1]); }
    });
    document.querySelectorAll("select[data-filter-for]").forEach(function (s) {
      if (preset[s.name] !== undefined) { s.value = preset[s.name]; }
    });
    apply();
  }
  document.querySelectorAll("select[data-filter-for]").forEach(function (s) { s.addEventListener("change", apply); });
  document.querySelectorAll("input[data-filter-for]").forEach(function (i) { i.addEventListener("input", apply); });
  window.addEventListener("hashchange", fromHash);  // in-page #task=… links re-filter without a reload
  fromHash();
})();
"""


def esc(value: Any) -> str:
    """HTML-escaped text of any value (quotes included: safe in attributes)."""
    return html.escape(str(value), quote=True)


def fmt(value: Any, digits: int = 2) -> str:
    """A number with ``digits`` decimals; '—' for missing or NaN (never an invented 0)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, float) and math.isinf(value):
        return "∞" if value > 0 else "−∞"
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) else str(value)


def interval(low: Any, high: Any, digits: int = 2) -> str:
    """'[low, high]' or '—' when either end is missing."""
    if low is None or high is None:
        return "—"
    return f"[{low:.{digits}f}, {high:.{digits}f}]"


def level_text(board: Sequence[Mapping[str, Any]]) -> str:
    """The stored confidence level of the board's intervals as '95 %' (the configured default when none is stored)."""
    from t2ibench.metrics.levels import CI_LEVEL

    levels = {float(r["ci_level"]) for r in board if r.get("ci_level") is not None}
    level = next(iter(levels)) if len(levels) == 1 else CI_LEVEL
    return f"{100 * level:g} %" + (" (levels differ between models: see their cards)" if len(levels) > 1 else "")


@dataclass(frozen=True)
class Cell:
    """One table cell: its HTML (already escaped), its sort key and CSS class."""

    html: str
    sort: str | None = None
    css: str = ""

    @staticmethod
    def text(value: Any, *, sort: Any = None, css: str = "text") -> Cell:
        """A cell of plain text (escaped)."""
        return Cell(esc(value), None if sort is None else str(sort), css)

    @staticmethod
    def number(
        value: Any,
        *,
        digits: int = 2,
        low: Any = None,
        high: Any = None,
        mark: str = "",
        verdict: str | None = None,
        reason: str | None = None,
    ) -> Cell:
        """A right-aligned number (sort key = the value; missing sorts last), its interval below it when given;
        zeros are drawn visibly; ``verdict`` (a convergence report's) adds ✓ 'converged' or ↗ 'not yet' with
        ``reason`` as its tooltip."""
        shown = esc(fmt(value, digits))
        css = "zero" if isinstance(value, (int, float)) and value == 0 else ""
        if mark:
            tip = "a paired test does not separate it from the next model of its protocol group: ranked the same"
            shown += f' <span class="tie" title="{esc(tip)}">{esc(mark)}</span>'
        if verdict is not None and value is not None:
            symbol, css_verdict = ("✓", "converged") if verdict == "converged" else ("↗", "unconverged")
            tip = f"{verdict}: {reason}" if reason else verdict
            shown += f' <span class="{css_verdict}" title="{esc(tip)}">{symbol}</span>'
        if low is not None and high is not None:
            shown += f'<br><span class="ci">{esc(interval(low, high, digits))}</span>'
        ok = isinstance(value, (int, float)) and not (isinstance(value, float) and math.isnan(value))
        key = (
            ("Infinity" if value > 0 else "-Infinity") if ok and math.isinf(value) else repr(float(value)) if ok else ""
        )
        return Cell(shown, key, css)


def table(
    ident: str,
    headers: Sequence[str],
    rows: Sequence[Sequence[Cell]],
    *,
    caption: str = "",
    sortable: bool = True,
    filterable: bool = False,
    row_attrs: Sequence[dict[str, str]] | None = None,
    css: str = "",
    text_columns: Sequence[int] = (0,),
) -> str:
    """A table (``id=ident``) whose headers sort it (click) and, when filterable, a text filter above it."""
    classes = " ".join(c for c in ("sortable" if sortable else "", "filterable" if filterable else "", css) if c)
    head = "".join(
        f'<th class="{"text" if i in text_columns else ""}">' + (f"<button>{esc(h)}</button>" if sortable else esc(h))
        + "</th>"
        for i, h in enumerate(headers)
    )  # fmt: skip
    body = []
    for n, row in enumerate(rows):
        attrs = "".join(f' data-{esc(k)}="{esc(v)}"' for k, v in (row_attrs[n] if row_attrs else {}).items())
        cells = "".join(
            "<td"
            + (f' class="{c.css}"' if c.css else "")
            + (f' data-sort="{esc(c.sort)}"' if c.sort is not None else "")
            + f">{c.html}</td>"
            for c in row
        )
        body.append(f"<tr{attrs}>{cells}</tr>")
    controls = ""
    if filterable:
        controls = (
            f'<div class="controls"><label>Filter <input id="{esc(ident)}-filter" type="search" '
            f'data-filter-for="{esc(ident)}" placeholder="text in any column"></label>'
            f'<span id="{esc(ident)}-count"></span></div>'
        )
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    return (
        f'{controls}<table id="{esc(ident)}" class="{classes}">{cap}<thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def select(name: str, for_table: str, label: str, options: Sequence[tuple[str, str]]) -> str:
    """A filter menu for a filterable table: rows whose ``data-<name>`` lists the chosen value stay visible."""
    opts = '<option value="">all</option>' + "".join(f'<option value="{esc(v)}">{esc(t)}</option>' for v, t in options)
    return f'<label>{esc(label)} <select name="{esc(name)}" data-filter-for="{esc(for_table)}">{opts}</select></label>'


def navigation(root: str = "") -> str:
    """The report's navigation bar, links relative to ``root`` (the report folder as seen from the page)."""
    return (
        f'<nav><a href="{root}leaderboard.html">Leaderboard</a><a href="{root}models.html">Models</a>'
        f'<a href="{root}agreement.html">Human agreement</a></nav>'
    )


def banner_html(banners: Sequence[str]) -> str:
    """The smoke/lite banners as paragraphs (class ``banner``, styled by BANNER_CSS)."""
    return "".join(f'<p class="banner">{esc(b)}</p>' for b in banners)


def footer_html(footer: str) -> str:
    """The provenance footer ('' when there is none)."""
    return f'<footer id="provenance">{esc(footer)}</footer>' if footer else ""


def page(title: str, body: str, *, root: str = "", banners: Sequence[str] = (), footer: str = "") -> str:
    """A complete HTML5 page: inline style and script, navigation relative to ``root`` (the report folder)."""
    nav, banner, foot = navigation(root), banner_html(banners), footer_html(footer)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">'
        f"<title>{esc(title)}</title><style>{STYLE}</style></head>\n"
        f"<body>{nav}<h1>{esc(title)}</h1>{banner}\n{body}\n{foot}\n<script>{SCRIPT}</script></body></html>\n"
    )
