"""The human-agreement analysis rendered: Markdown tables of a computed report, and a self-contained HTML page of
the *stored* ``agreement`` rows (rendering only: every number shown is a stored value or interval)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from t2ibench.benchmarks.geneval.agreement import (
    ALL,
    HUMAN_SCOPE,
    TASK_MEAN_SUFFIX,
    AgreementReport,
    AgreementRun,
    headline,
)
from t2ibench.benchmarks.geneval.metrics import TASKS
from t2ibench.metrics.agreement import Estimate
from t2ibench.report.markdown import markdown_table


def _pct(x: float) -> str:
    return "—" if math.isnan(x) else f"{100 * x:.1f}"


def _k(x: float) -> str:
    return "—" if math.isnan(x) else f"{x:.3f}"


def _with_ci(value: float, found: Estimate | None, *, percent: bool = True) -> str:
    """'41.6 [37.5, 45.6]' (percent) or '0.728 [0.692, 0.763]' (κ); the bare value where no interval exists."""
    show = _pct if percent else _k
    if found is None or math.isnan(found.low) or math.isnan(found.high):
        return show(value)
    return f"{show(value)} [{show(found.low)}, {show(found.high)}]"


def _ci_note(report: AgreementReport) -> str:
    ci = report.ci
    if not ci:
        return ""
    return f"Brackets: {100 * ci['level']:g} % {ci['method']} ({ci['resamples']} resamples, seed {ci['seed']})."


def render_agreement(report: AgreementReport) -> str:
    """Human accuracy and inter-annotator agreement, auto-vs-human agreement, tuned thresholds; every statistic
    with its bootstrap interval in brackets where one was computed."""

    def est(scope: str, s: str, t: str, name: str) -> Estimate | None:
        return report.estimate(scope, s, t, name)

    parts = [
        "Human verdicts and inter-annotator agreement (percentages; κ unitless). The human accuracy rests on every "
        "annotation of the images counted; the agreement statistics need two annotators of an image, so they rest "
        "on the images less those with a single annotation. " + _ci_note(report),
        "",
        markdown_table(
            [
                "source",
                "task",
                "images",
                "annotations",
                "single-annotation images",
                "human acc.",
                "pairwise agr.",
                "vs majority of others",
                "Cohen κ (pooled pairs)",
                "Fleiss κ",
                "unanimous images",
            ],
            [
                [
                    s,
                    t,
                    h.score_images,
                    h.score_annotations,
                    h.single_annotation_images,
                    _with_ci(h.human_accuracy, est(HUMAN_SCOPE, s, t, "human_accuracy")),
                    _with_ci(h.pairwise_agreement, est(HUMAN_SCOPE, s, t, "pairwise_agreement")),
                    _with_ci(h.vs_majority_of_others, est(HUMAN_SCOPE, s, t, "vs_majority_of_others")),
                    _with_ci(h.cohen_kappa, est(HUMAN_SCOPE, s, t, "cohen_kappa"), percent=False),
                    _with_ci(h.fleiss_kappa, est(HUMAN_SCOPE, s, t, "fleiss_kappa"), percent=False),
                    h.unanimous_images,
                ]
                for (s, t), h in report.human.items()
            ],
        ),
    ]
    notes = [
        f"- {key.removeprefix('human ')}: {text}" for key, text in report.coverage.items() if key.startswith("human ")
    ]
    if notes:
        parts += ["", "Left out of the agreement statistics:", "", *notes]
    overall = []
    for source in dict.fromkeys(s for s, _ in report.human):
        if source == ALL or (source, ALL) not in report.human:
            continue
        scores = [h.human_accuracy for (s, t), h in report.human.items() if s == source and t != ALL]
        mean = est(HUMAN_SCOPE, source, ALL, f"human_accuracy{TASK_MEAN_SUFFIX}")
        pooled = report.human[(source, ALL)]
        overall.append(
            [
                source,
                _with_ci(pooled.human_accuracy, est(HUMAN_SCOPE, source, ALL, "human_accuracy")),
                pooled.score_images,
                pooled.score_annotations,
                _with_ci(mean.value if mean else sum(scores) / len(scores), mean),
                len(scores),
            ]
        )
    parts += [
        "",
        "Human score per source (percent): GenEval Table 2's Human column is the share of all annotations that "
        "judge the image correct, pooled over tasks (it reproduces the paper's 0.42 / 0.57 on the released files); "
        "the unweighted mean of the per-task human accuracies (as GenEval's overall) is the secondary figure; "
        "images and annotations: what the human score rests on (an image with a single annotation counts):",
        "",
        markdown_table(
            ["source", "human score (Table 2)", "images", "annotations", "task mean (secondary)", "tasks"], overall
        ),
    ]
    pooled_mean = est(HUMAN_SCOPE, ALL, ALL, f"pairwise_agreement{TASK_MEAN_SUFFIX}")
    if pooled_mean is not None:
        parts += [
            "",
            "Pairwise inter-annotator agreement averaged over tasks (unweighted, all sources): "
            f"{_with_ci(pooled_mean.value, pooled_mean)} (GenEval reports 88 % inter-annotator agreement; "
            "docs/agreement.md compares the definitions).",
        ]
    for name, table in report.auto.items():
        scope = f"auto:{name}"
        parts += [
            "",
            f"Automatic verdicts '{name}' vs humans ({report.coverage.get(name, '')}):",
            "",
            markdown_table(
                [
                    "source",
                    "task",
                    "images",
                    "vs annotators",
                    "vs majority",
                    "κ vs majority",
                    "vs unanimous",
                    "auto acc.",
                    "human majority acc.",
                ],
                [
                    [
                        s,
                        t,
                        a.images,
                        _with_ci(a.vs_annotators, est(scope, s, t, "vs_annotators")),
                        _with_ci(a.vs_majority, est(scope, s, t, "vs_majority")),
                        _with_ci(a.kappa_vs_majority, est(scope, s, t, "kappa_vs_majority"), percent=False),
                        f"{_with_ci(a.vs_unanimous, est(scope, s, t, 'vs_unanimous'))} (n={a.unanimous_images})",
                        _with_ci(a.auto_accuracy, est(scope, s, t, "auto_accuracy")),
                        _with_ci(a.human_majority_accuracy, est(scope, s, t, "human_majority_accuracy")),
                    ]
                    for (s, t), a in table.items()
                ],
            ),
        ]
    if report.tuned:
        parts += [
            "",
            f"Per-task thresholds on the scores ({report.coverage.get('scores', '')}); "
            "CV = agreement on held-out folds, the honest number:",
            "",
            markdown_table(
                ["task", "threshold", "in-sample agreement", "k-fold CV agreement", "folds", "images"],
                [
                    [t, f"{v.threshold:.4g}", _pct(v.in_sample_agreement), _pct(v.cv_agreement), v.folds, v.images]
                    for t, v in report.tuned.items()
                ],
            ),
        ]
    return "\n".join(parts)


def write_agreement(run: AgreementRun, out: str | Path) -> list[Path]:
    """agreement.json (every table, its intervals and what loading did), agreement.md and metrics.json (the
    headline with intervals) in ``out``, every number at the paper artifacts' stated precision
    (``t2ibench.artifacts``: the same bytes on any machine)."""
    from t2ibench import artifacts
    from t2ibench.io import output_dir

    folder = output_dir(out)
    report = artifacts.stated(run.report)  # every rendering below shows these values
    loading = [r.to_dict() for r in run.loads]  # read = kept + dropped, kept = agreement + score only, by reason
    payload = report.to_dict() | {"loading": loading}
    text = "\n\n".join([*(r.summary() for r in run.loads), render_agreement(report)])
    files = [
        artifacts.write_json(folder / "agreement.json", payload, default=str),
        artifacts.write_text(folder / "agreement.md", text + "\n"),
        artifacts.write_json(folder / "metrics.json", headline(run)),
    ]
    return files


# -- the HTML page of stored rows -------------------------------------------------------------------------------

_CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2330;background:#fff}
nav{display:flex;gap:1.2em;padding:.6em 1.5em;background:#1d2330}
nav a{color:#fff;text-decoration:none}
main{max-width:72em;margin:0 auto;padding:1em 1.5em 3em}
h1{font-size:1.6em;margin:.6em 0 .2em}
h2{font-size:1.2em;margin:1.8em 0 .5em;border-bottom:1px solid #d9dde6;padding-bottom:.2em}
table{border-collapse:collapse;margin:.5em 0 1em;font-variant-numeric:tabular-nums}
th,td{border:1px solid #d9dde6;padding:.3em .6em;text-align:right;vertical-align:top}
td{white-space:nowrap}
th{background:#f3f5f9;font-weight:600}
td.text,th.text{text-align:left}
tr.pooled td{font-weight:600}
.ci{color:#5b6475;font-size:.9em}
.note{color:#5b6475}
.scroll{overflow-x:auto}
dt{font-weight:600;margin-top:.6em}
dd{margin-left:1.2em}
"""

_PERCENT = "percent"
_KAPPA = "kappa"
_HUMAN_COLUMNS = (
    ("human_accuracy", "Human accuracy", _PERCENT),
    ("pairwise_agreement", "Inter-annotator agreement (pairwise)", _PERCENT),
    ("vs_majority_of_others", "Annotator vs majority of the others", _PERCENT),
    ("fleiss_kappa", "Fleiss' κ", _KAPPA),
)
_AUTO_COLUMNS = (
    ("vs_annotators", "Auto vs each annotator", _PERCENT),
    ("vs_majority", "Auto vs human majority", _PERCENT),
    ("kappa_vs_majority", "κ vs majority", _KAPPA),
    ("vs_unanimous", "Auto vs unanimous images", _PERCENT),
    ("auto_accuracy", "Auto accuracy", _PERCENT),
)

_DEFINITIONS = (
    (
        "Human verdict",
        "One annotator's answers about one image, judged by GenEval's own rules: every object counted at least as "
        "often as the prompt asks (exactly, for counting prompts), the asked colour among the colours the annotator "
        "picked, and the asked relative position given.",
    ),
    (
        "Human accuracy (human score)",
        "The share of annotations — one per annotator per image — that find the image correct. Pooled over all "
        "tasks of a source it is GenEval Table 2's Human figure (0.42 for CLIP retrieval, 0.57 for SD v2.1 on the "
        "released files). The task mean is the unweighted mean of the six per-task accuracies, the way GenEval "
        "averages its overall score; it is shown as a secondary figure.",
    ),
    (
        "Inter-annotator agreement (pairwise)",
        "For each image, the share of its pairs of annotators who give the same verdict, averaged over images.",
    ),
    (
        "Annotator vs majority of the others",
        "How often an annotator's verdict matches the majority of the other annotators of the image; images where "
        "the others split evenly are left out.",
    ),
    (
        "Fleiss' κ",
        "Agreement among the annotators corrected for the agreement expected by chance from how often verdicts are "
        "'correct' (1 = perfect, 0 = chance).",
    ),
    (
        "Auto vs humans",
        "An automatic verdict (e.g. GenEval's) compared with each annotator's verdict, with the majority of the "
        "annotators (ties left out; also as Cohen's κ), and on the images all annotators agree on.",
    ),
    (
        "Intervals and n",
        "Brackets give a percentile bootstrap interval: prompts are resampled with replacement within each task, "
        "every annotated image of a prompt (and all its annotations) together, because the four images of one "
        "prompt share its difficulty. n is what the value is a share or mean of: annotations, images, images with "
        "a majority, or tasks for a task mean.",
    ),
)

_PAPER = (
    "GenEval's paper reports 88 % agreement between annotators and 83 % between GenEval and the annotators. "
    "Its human study pooled three sources (CLIP retrieval, SD v2.1 and IF-XL); the IF-XL annotations are not among "
    "the files analysed here, and no definition tried on the released annotations gives 88 % exactly "
    "(docs/agreement.md lists them). The 83 % cannot be recomputed from the released files at all: they hold the "
    "annotators' answers only, no GenEval verdict for the annotated images. Automatic verdicts for the same images "
    "(GenEval's results.jsonl, via <code>t2ibench agreement --auto SOURCE=results.jsonl</code>) fill the "
    "automatic-vs-human table."
)


def _num(value: Any) -> float:
    """A stored number as float (None, NULL, strings that are not numbers → NaN)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _fmt(value: float, kind: str) -> str:
    if math.isnan(value):
        return "—"
    return f"{100 * value:.1f}" if kind == _PERCENT else f"{value:.3f}"


def _shown(row: Mapping[str, Any] | None, kind: str) -> str:
    """'41.6 <span class="ci">[37.5, 45.6]</span>' from a stored row ('—' where it is missing)."""
    if row is None:
        return "—"
    text = _fmt(_num(row.get("value")), kind)
    low, high = _num(row.get("ci_low")), _num(row.get("ci_high"))
    if not (math.isnan(low) or math.isnan(high)):
        text += f' <span class="ci">[{_fmt(low, kind)}, {_fmt(high, kind)}]</span>'
    return text


def _cell(row: Mapping[str, Any] | None, kind: str) -> str:
    return f"<td>{_shown(row, kind)}</td>"


def _n(row: Mapping[str, Any] | None) -> str:
    n = _num(row.get("n")) if row is not None else math.nan
    return "<td>—</td>" if math.isnan(n) else f"<td>{int(n)}</td>"


def _ordered(values: Sequence[str], first: Sequence[str] = (), last: Sequence[str] = (ALL,)) -> list[str]:
    """``values`` once each: ``first`` in its order, then the rest sorted, then ``last``."""
    present = list(dict.fromkeys(values))
    head = [v for v in first if v in present]
    tail = [v for v in last if v in present and v not in head]
    return head + sorted(v for v in present if v not in head and v not in tail) + tail


def _text(value: Any) -> str:
    return escape(str(value), quote=True)


def _document(title: str, nav: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_text(title)}</title>\n"
        '<link rel="icon" href="data:,">\n'  # no favicon request (a 404 in the console otherwise)
        f"<style>{_CSS}</style>\n</head>\n<body>\n{nav}\n<main>\n{body}\n</main>\n</body>\n</html>\n"
    )


def _definitions() -> str:
    items = "".join(f"<dt>{_text(term)}</dt><dd>{_text(text)}</dd>" for term, text in _DEFINITIONS)
    return f'<section id="definitions"><h2>Definitions</h2><dl>{items}</dl></section>'


def html_page(rows: Sequence[Mapping[str, Any]], *, title: str = "Human agreement", nav: str = "") -> str:
    """A complete, self-contained HTML5 document (utf-8, inline CSS, no scripts or external resources) of stored
    ``agreement`` rows (dicts with the table's columns), with ``nav`` (an HTML fragment, inserted as given) right
    after <body>: the human score per source with its interval, the task mean, per source × task tables of human
    accuracy and inter-annotator agreement (``#agreement-human``) and, when stored, automatic-vs-human agreement
    (``#agreement-auto``), and the definitions. Renders only: every number is a stored value or interval."""
    index = {(str(r["scope"]), str(r["source"]), str(r["task"]), str(r["statistic"])): r for r in rows}
    heading = f"<h1>{_text(title)}</h1>"
    if not index:
        body = (
            f'{heading}<p id="agreement-empty">No agreement stored yet. Run '
            "<code>t2ibench agreement … --store STORE</code> to compute it from GenEval's released "
            f"annotations.</p>{_definitions()}"
        )
        return _document(title, nav, body)

    def row(scope: str, source: str, task: str, statistic: str) -> Mapping[str, Any] | None:
        return index.get((scope, source, task, statistic))

    human = [k for k in index if k[0] == HUMAN_SCOPE]
    sources = _ordered([k[1] for k in human])
    tasks = _ordered([k[2] for k in human], first=TASKS)
    levels = sorted({v for r in index.values() if not math.isnan(v := _num(r.get("ci_level")))})
    level = " / ".join(f"{100 * v:g} %" for v in levels) or "no"

    parts = [
        heading,
        '<p class="note">How far GenEval\'s verdicts can be trusted, recomputed from its released MTurk annotations '
        f"(five annotators per image). Brackets: {_text(level)} bootstrap interval over prompts; n: see "
        '<a href="#definitions">Definitions</a>.</p>',
    ]

    # headline: the human score per source
    headline_rows = []
    for source in sources:
        score = row(HUMAN_SCOPE, source, ALL, "human_accuracy")
        mean = row(HUMAN_SCOPE, source, ALL, f"human_accuracy{TASK_MEAN_SUFFIX}")
        pairwise = row(HUMAN_SCOPE, source, ALL, "pairwise_agreement")
        if score is None and mean is None and pairwise is None:
            continue
        css = ' class="pooled"' if source == ALL else ""
        label = "all sources (pooled)" if source == ALL else source
        headline_rows.append(
            f'<tr{css}><td class="text">{_text(label)}</td>{_cell(score, _PERCENT)}{_n(score)}'
            f"{_cell(mean, _PERCENT)}{_cell(pairwise, _PERCENT)}{_n(pairwise)}</tr>"
        )
    if headline_rows:
        parts.append(
            '<section id="headline"><h2>Human score per source</h2>'
            '<div class="scroll"><table id="agreement-headline"><thead><tr><th class="text">Source</th>'
            "<th>Human score, pooled (GenEval Table 2 Human), %</th><th>n annotations</th>"
            "<th>Unweighted task mean (secondary), %</th><th>Inter-annotator agreement, %</th><th>n images</th>"
            f"</tr></thead><tbody>{''.join(headline_rows)}</tbody></table></div></section>"
        )

    # per source × task: human accuracy and inter-annotator agreement
    task_means = [(s, row(HUMAN_SCOPE, s, ALL, f"pairwise_agreement{TASK_MEAN_SUFFIX}")) for s in sources]
    head = "".join(f"<th>{_text(label)}</th><th>n</th>" for _, label, _ in _HUMAN_COLUMNS)
    body_rows = []
    for source in sources:
        for task in tasks:
            cells = [(row(HUMAN_SCOPE, source, task, name), kind) for name, _, kind in _HUMAN_COLUMNS]
            if all(c is None for c, _ in cells):
                continue
            css = ' class="pooled"' if task == ALL else ""
            body_rows.append(
                f'<tr{css}><td class="text">{_text(source)}</td><td class="text">{_text(task)}</td>'
                + "".join(_cell(c, kind) + _n(c) for c, kind in cells)
                + "</tr>"
            )
    parts.append(
        '<section id="human"><h2>Human accuracy and inter-annotator agreement per source and task</h2>'
        f'<div class="scroll"><table id="agreement-human"><thead><tr><th class="text">Source</th>'
        f'<th class="text">Task</th>{head}</tr></thead><tbody>{"".join(body_rows)}</tbody></table></div>'
        '<p class="note">Percentages, except κ. The unweighted mean of the per-task pairwise agreement: '
        + (", ".join(f"{_text(s)} {_shown(r, _PERCENT)}" for s, r in task_means if r is not None) or "—")
        + ".</p></section>"
    )

    # automatic vs human, when stored
    auto_scopes = _ordered([k[0] for k in index if k[0].startswith("auto:")], last=())
    if auto_scopes:
        head = "".join(f"<th>{_text(label)}</th><th>n</th>" for _, label, _ in _AUTO_COLUMNS)
        body_rows = []
        for scope in auto_scopes:
            keys = [k for k in index if k[0] == scope]
            for source in _ordered([k[1] for k in keys]):
                for task in _ordered([k[2] for k in keys if k[1] == source], first=TASKS):
                    cells = [(row(scope, source, task, name), kind) for name, _, kind in _AUTO_COLUMNS]
                    if all(c is None for c, _ in cells):
                        continue
                    css = ' class="pooled"' if task == ALL else ""
                    body_rows.append(
                        f'<tr{css}><td class="text">{_text(scope.removeprefix("auto:"))}</td>'
                        f'<td class="text">{_text(source)}</td><td class="text">{_text(task)}</td>'
                        + "".join(_cell(c, kind) + _n(c) for c, kind in cells)
                        + "</tr>"
                    )
        parts.append(
            '<section id="auto"><h2>Automatic verdicts vs humans</h2>'
            '<div class="scroll"><table id="agreement-auto"><thead><tr><th class="text">Verdicts</th>'
            f'<th class="text">Source</th><th class="text">Task</th>{head}</tr></thead>'
            f"<tbody>{''.join(body_rows)}</tbody></table></div></section>"
        )
    else:
        parts.append(
            '<section id="auto"><h2>Automatic verdicts vs humans</h2><p class="note">No automatic verdicts stored '
            "for the annotated images.</p></section>"
        )
    parts.append(f'<section id="paper-numbers"><h2>The paper\'s 88 % and 83 %</h2><p>{_PAPER}</p></section>')
    parts.append(_definitions())
    return _document(title, nav, "\n".join(parts))
