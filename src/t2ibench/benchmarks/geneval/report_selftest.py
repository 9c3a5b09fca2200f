"""The leaderboard's evaluator card: the GenEval evaluator's measured trust (``selftest``, stored by the refresh
when ``evaluators.selftest`` is set) beside the scores it produced — per truth set (compositor images,
real photographs) the agreement, false passes, false fails and false passes on absent objects, with counts.
Renders stored rows only."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from t2ibench.report.markdown import markdown_table
from t2ibench.report.site import Cell, esc, table

SET_NAMES = {"compositor": "compositor images (construction truth)", "photos": "real photographs (reviewed truth)"}
HEADERS = ("truth set", "judged", "agreement", "false pass", "false fail", "false pass, absent object")
NOT_MEASURED = (
    "not measured: set evaluators.selftest in the config to measure this evaluator in the refresh "
    "(or run `t2ibench selftest`)"
)


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def cards(rows: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """(one card per distinct self-test: evaluator, report, the models it covers; the models without one)."""
    by_hash: dict[str, dict[str, Any]] = {}
    missing = []
    for row in rows:
        if row.get("selftest_hash") is None:
            missing.append(str(row["model"]))
            continue
        card = by_hash.setdefault(
            row["selftest_hash"],
            {"evaluator": _json(row["evaluator"]), "report": _json(row["report"]), "models": []},
        )
        card["models"].append(str(row["model"]))
    return list(by_hash.values()), missing


def _pct(rate: Any, n: Any, d: Any) -> str:
    return "—" if rate is None else f"{100 * rate:.1f}% ({n}/{d})"


def _cells(report: Mapping[str, Any]) -> list[list[str]]:
    out = []
    for name, result in (report.get("sets") or {}).items():
        t = result["totals"]
        out.append(
            [
                SET_NAMES.get(name, name),
                str(result["judged"]),
                _pct(t["agreement"], t["agree"], t["images"]),
                _pct(t["false_pass_rate"], t["false_pass"], t["truth_wrong"]),
                _pct(t["false_fail_rate"], t["false_fail"], t["truth_right"]),
                _pct(t["absent_pass_rate"], t["absent_pass"], t["absent"]),
            ]
        )
    return out


def _title(card: Mapping[str, Any]) -> str:
    ev, params = card["evaluator"], card["evaluator"].get("params") or {}
    det, col = ev.get("detector", {}), ev.get("colour", {})
    lite = "lite" in (det.get("evaluator"), col.get("evaluator"))
    return (
        f"detector {det.get('backend')}, colour {col.get('backend')}, threshold {params.get('threshold')}, "
        f"counting threshold {params.get('counting_threshold')}"
        + (" (lite evaluator, not comparable with published GenEval)" if lite else "")
    )


INTRO = (
    "How far to trust the GenEval scores above: the evaluator that judged them, judged itself against known truth "
    "(`t2ibench selftest`, docs/geneval.md#ground-truth-compositor-and-evaluator-self-test). False pass: a wrong "
    "image passed; false pass, absent object: the image's prompt with one object replaced by a class it cannot "
    "show, passed."
)


def markdown_section(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The card as Markdown lines (empty without current models)."""
    if not rows:
        return []
    found, missing = cards(rows)
    md = ["## Evaluator self-test", "", INTRO]
    for card in found:
        md += ["", f"GenEval evaluator: {_title(card)} (models: {', '.join(card['models'])}).", ""]
        md.append(markdown_table(HEADERS, _cells(card["report"])))
    if missing:
        md += ["", f"{', '.join(missing)}: {NOT_MEASURED}."]
    return md


def html_section(rows: Sequence[Mapping[str, Any]]) -> str:
    """The card as an HTML section (empty without current models)."""
    if not rows:
        return ""
    found, missing = cards(rows)
    body = [f'<section id="evaluator-selftest"><h2>Evaluator self-test</h2><p>{esc(INTRO)}</p>']
    for n, card in enumerate(found):
        body.append(f"<p>GenEval evaluator: {esc(_title(card))} (models: {esc(', '.join(card['models']))}).</p>")
        cells = [[Cell.text(v) for v in row] for row in _cells(card["report"])]
        body.append(table(f"selftest-{n}", HEADERS, cells, sortable=False))
    if missing:
        body.append(f'<p class="flag">{esc(", ".join(missing))}: {esc(NOT_MEASURED)}.</p>')
    return "".join(body) + "</section>"
