"""`agent-eval compare BASE NEW...`: each new report gated against the base, shown as one matrix.

A row per gated metric and a column per report (its agent and model in the header); each cell holds
the value and its verdict against the base. Below it, the cases whose status differs between any two
reports. The same matrix goes to the terminal, to `--markdown FILE` and to a self-contained
`--html FILE` page.
"""
from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from agent_eval.records import Report
from agent_eval.report.files import make_parent, write_atomic
from agent_eval.report.gate_table import VERDICT_STYLE, format_value, pair_notes

VERDICT_MARK = {"regressed": "▼ regressed", "improved": "▲ improved", "no significant change": "~", "n/a": "n/a"}


def _who(report: Report, path: str) -> dict[str, Any]:
    return {"run_id": report.get("run_id"), "agent": report.get("agent"), "model": report.get("model"),
            "suite": report.get("suite"), "path": path}


def build_matrix(base: Report, news: list[Report], gated: list[dict[str, Any]], paths: list[str]) -> dict[str, Any]:
    """The comparison as plain data: columns, a row per gated metric, and the cases whose status differs."""
    columns = [_who(base, paths[0])] + [_who(r, p) for r, p in zip(news, paths[1:], strict=True)]
    rows = []
    summary = given if isinstance(given := base.get("summary"), dict) else {}
    for i, first in enumerate(gated[0]["metrics"]):
        name = first["metric"]
        # The base's own figure over all its cases; each pair's figures are over their common cases.
        own = summary.get(name) if name in summary else first["base"]
        cells = [{"value": own if isinstance(own, (int, float)) and not isinstance(own, bool) else first["base"],
                  "verdict": None}]
        for gate in gated:
            row = gate["metrics"][i]
            cells.append({"value": row["new"], "delta": row["delta"], "ci": row["ci"], "verdict": row["verdict"]})
        rows.append({"metric": name, "max_drop": first["max_drop"], "cells": cells})
    statuses = [{str(c.get("id")): c.get("status") for c in r["cases"] if isinstance(c, dict)}
                for r in [base, *news]]
    ids = list(dict.fromkeys(i for s in statuses for i in s))
    differing = [{"id": i, "statuses": [s.get(i) for s in statuses]} for i in ids
                 if len({s.get(i) for s in statuses}) > 1]
    return {"columns": columns, "rows": rows, "cases_differing": differing,
            "m": gated[0]["m"], "alpha": gated[0]["alpha"], "resamples": gated[0]["resamples"],
            "cases_common": [g["cases_common"] for g in gated],
            "notes": [pair_notes(g) for g in gated],
            "alone": [any(v == "regressed" for v in (g.get("alone") or {}).values()) for g in gated],
            "regressed": [g["regression"] for g in gated], "regression": any(g["regression"] for g in gated)}


def column_label(matrix: dict[str, Any], index: int) -> list[str]:
    """A column's header lines: base or #n with its run id, then the agent and the model."""
    col = matrix["columns"][index]
    return ["base" if index == 0 else f"#{index}", str(col.get("run_id") or col["path"]),
            str(col.get("agent") or "n/a"), str(col.get("model") or "n/a")]


def cell_text(metric: str, cell: dict[str, Any]) -> str:
    """`0.750 ▼ regressed` (the value and its verdict against the base); the base column has no verdict."""
    value = format_value(metric, cell["value"])
    if cell["verdict"] is None or cell["value"] is None:
        return value
    return f"{value} {VERDICT_MARK.get(cell['verdict'], cell['verdict'])}"


def matrix_notes(matrix: dict[str, Any]) -> list[str]:
    """The lines under the matrix: the method, the correction and what each report would get alone, the
    legend, then each report's notes as a single comparison gives them."""
    level = 1 - matrix["alpha"] / max(matrix["m"], 1)
    lines = [f"{len(matrix['columns']) - 1} reports against the base; Holm's step-down procedure at "
             f"{matrix['alpha']:.0%} (m={matrix['m']}: gated metrics x reports), one-sided bounds at {level:.3%}; "
             f"{matrix['resamples']:,} paired bootstrap resamples. The base column is the base's own figure; each "
             f"report's figure and verdict are over the cases it shares with the base "
             f"({', '.join(map(str, matrix['cases_common']))} per report).",
             correction_line(matrix),
             "▼ regressed: worse than the base beyond the allowed drop; ▲ improved; ~ no significant change."]
    for i, notes in enumerate(matrix.get("notes") or [], start=1):
        lines += [f"#{i}: {note}" for note in notes]
    return lines


def correction_line(matrix: dict[str, Any]) -> str:
    """`m = 10 tests; alone, #2 lazy would be: regressed`: the reports whose verdict the correction changed."""
    changed = [f"#{i} {matrix['columns'][i].get('agent') or matrix['columns'][i]['path']} would be: "
               f"{'regressed' if alone else 'no regression'}"
               for i, (alone, together) in enumerate(zip(matrix.get("alone") or [], matrix["regressed"],
                                                         strict=False), start=1) if alone != together]
    head = f"m = {matrix['m']} tests"
    if not changed:
        return f"{head}; compared alone with the base, each report would get the same verdict."
    return f"{head}; alone, " + "; alone, ".join(changed)


def verdict_line(matrix: dict[str, Any]) -> str:
    bad = [f"#{i + 1}" for i, flag in enumerate(matrix["regressed"]) if flag]
    return f"Gate: REGRESSION in {', '.join(bad)} (exit 1)" if bad else "Gate: no regression"


def render_matrix(matrix: dict[str, Any], console: Console) -> None:
    """The matrix, its notes, the cases whose status differs, and the verdict, in the terminal."""
    table = Table(title="Comparison against the base", title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("metric", no_wrap=True)
    for i in range(len(matrix["columns"])):
        table.add_column(Text("\n".join(column_label(matrix, i))), justify="right", overflow="fold")
    for row in matrix["rows"]:
        cells = [Text(cell_text(row["metric"], c), style=VERDICT_STYLE.get(c["verdict"] or "", ""))
                 for c in row["cells"]]
        table.add_row(row["metric"], *cells)
    console.print(table)
    for line in matrix_notes(matrix):
        console.print(line, highlight=False, markup=False)
    if matrix["cases_differing"]:
        cases = Table(title=f"{len(matrix['cases_differing'])} case(s) whose status differs", title_justify="left",
                      box=box.SIMPLE_HEAD)
        cases.add_column("case", overflow="fold")
        for i in range(len(matrix["columns"])):
            cases.add_column("base" if i == 0 else f"#{i}", no_wrap=True)
        for case in matrix["cases_differing"]:
            cases.add_row(Text(case["id"]), *(Text(s or "absent") for s in case["statuses"]))
        console.print(cases)
    else:
        console.print("Every case has the same status in every report.")
    console.print(Text(verdict_line(matrix), style="bold red" if matrix["regression"] else "green"))


def matrix_markdown(matrix: dict[str, Any]) -> str:
    """The matrix as GitHub-flavoured Markdown; text from reports is inert in table cells."""
    from agent_eval.report.markdown import cell, inert, table_lines

    columns = range(len(matrix["columns"]))
    header = ["metric"] + [cell(" · ".join(column_label(matrix, i))) for i in columns]
    rows = [[row["metric"], *(cell_text(row["metric"], c) for c in row["cells"])] for row in matrix["rows"]]
    lines = ["## agent-eval compare", "", *table_lines(header, rows, right=set(range(1, len(header))))]
    lines += ["", *(f"- {inert(note)}" for note in matrix_notes(matrix)), ""]  # as the single gate's notes
    if matrix["cases_differing"]:
        rows = [[c["id"], *(s or "absent" for s in c["statuses"])] for c in matrix["cases_differing"]]
        lines += [*table_lines(["case", *("base" if i == 0 else f"#{i}" for i in columns)], rows), ""]
    lines += [f"**{verdict_line(matrix)}**", ""]
    return "\n".join(lines)


def write_matrix_markdown(matrix: dict[str, Any], path: Path) -> None:
    """Append the matrix to path (as $GITHUB_STEP_SUMMARY expects), in one write."""
    with open(make_parent(path), "a", encoding="utf-8") as f:
        f.write(matrix_markdown(matrix) + "\n")


_PAGE_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d2939}
table{border-collapse:collapse;margin:12px 0}th,td{border:1px solid #d0d5dd;padding:4px 10px;text-align:right}
th:first-child,td:first-child{text-align:left}th{background:#f2f4f7;vertical-align:bottom}
th small{display:block;font-weight:normal;color:#475467}
.regressed{color:#b42318;font-weight:600}.improved{color:#027a48}.muted{color:#667085}
"""


def matrix_html(matrix: dict[str, Any]) -> str:
    """A self-contained page of the matrix: inline CSS, no script, no request of any kind."""
    esc = html.escape
    head = "".join(f"<th>{esc(column_label(matrix, i)[0])}" + "".join(
        f"<small>{esc(part)}</small>" for part in column_label(matrix, i)[1:]) + "</th>"
        for i in range(len(matrix["columns"])))
    body = "".join(
        f"<tr><td>{esc(row['metric'])}</td>" + "".join(
            f"<td class=\"{esc((c['verdict'] or '').replace(' ', '-'))}\">{esc(cell_text(row['metric'], c))}</td>"
            for c in row["cells"]) + "</tr>" for row in matrix["rows"])
    parts = ["<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
             "<title>agent-eval compare</title><link rel=\"icon\" href=\"data:,\">",
             f"<style>{_PAGE_CSS}</style></head><body><h1>agent-eval compare</h1>",
             f"<table id=\"matrix\"><thead><tr><th>metric</th>{head}</tr></thead><tbody>{body}</tbody></table>",
             *(f"<p class=\"muted\">{esc(note)}</p>" for note in matrix_notes(matrix))]
    if matrix["cases_differing"]:
        labels = "".join(f"<th>{'base' if i == 0 else f'#{i}'}</th>" for i in range(len(matrix["columns"])))
        rows = "".join(f"<tr><td>{esc(c['id'])}</td>" + "".join(
            f"<td>{esc(s or 'absent')}</td>" for s in c["statuses"]) + "</tr>" for c in matrix["cases_differing"])
        parts.append(f"<h2>Cases whose status differs</h2><table id=\"cases\"><thead><tr><th>case</th>{labels}"
                     f"</tr></thead><tbody>{rows}</tbody></table>")
    verdict = "regressed" if matrix["regression"] else "improved"
    parts.append(f"<p class=\"{verdict}\">{esc(verdict_line(matrix))}</p></body></html>")
    return "".join(parts)


def write_matrix_html(matrix: dict[str, Any], path: Path) -> None:
    """Write the page beside its target (its folder created when missing) and rename it into place."""
    write_atomic(path, matrix_html(matrix))
