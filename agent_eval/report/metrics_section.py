"""The metric rows as the displays list them: the `more` section (the rows plugins add, after the built-in
figures) as a terminal block under -v and Markdown rows, and the rows the page draws in its cards (each
read from the row: its label, format, card and interval)."""
from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from agent_eval.records import Report
from agent_eval.report.fmt import format_interval, format_metric
from agent_eval.score.metric_registry import SECTION_TITLES, SUITE_METRIC_TABLE, SuiteMetric, in_section

PAGE_CARDS = ("outcome", "trajectory", "cost", "safety", "more")
"""The page's cards in order (the latency rows share the cost card, SECTION_TITLES)."""


def added_rows(report: Report) -> list[tuple[str, str, str]]:
    """(label, value, interval) of each row of the `more` section, in table order; empty when there is none."""
    summary: dict[str, Any] = report.get("summary") or {}
    ci = summary.get("ci") or {}
    return [(m.label, format_metric(m.name, summary.get(m.name)), format_interval(m.name, ci.get(m.name)))
            for m in in_section("more")]


def render_added_metrics(report: Report, console: Console, verbose: bool = False) -> None:
    """Under -v, the figures of the `more` section (the rows plugins added), with their 95% intervals."""
    rows = added_rows(report)
    if not verbose or not rows:
        return
    table = Table(title=SECTION_TITLES["more"], title_justify="left", title_style="bold", box=None,
                  padding=(0, 1))
    table.add_column("metric", style="dim", no_wrap=True)
    table.add_column("value", justify="right")
    table.add_column("95% interval")
    for row in rows:
        table.add_row(*row)
    console.print()
    console.print(table)


def metric_errors(report: Report) -> dict[str, tuple[int, int, str]]:
    """Per run value whose plugin code raised: (runs it failed on, runs, `case #trial: message` of the first)."""
    found: dict[str, tuple[int, int, str]] = {}
    runs = 0
    for case in report.get("cases") or []:
        for run in case.get("runs") or []:
            runs += 1
            for key, message in (run.get("metric_errors") or {}).items():
                count, _, first = found.get(key, (0, 0, f"{case.get('id')} #{run.get('trial')}: {message}"))
                found[key] = (count + 1, 0, first)
    return {key: (count, runs, first) for key, (count, _, first) in found.items()}


def render_metric_errors(report: Report, console: Console) -> None:
    """The plugin metrics whose code raised (with or without -v): on how many runs (their value is null
    there), and the first error; nothing when none did."""
    errors = metric_errors(report)
    if not errors:
        return
    console.print()
    console.print(Text("Metric errors", style="bold"))
    for key, (count, runs, first) in errors.items():
        console.print(Text(f"  {key}: failed on {count} of {runs} runs (null there); first: {first}", style="red"),
                      soft_wrap=True)


def _card(metric: SuiteMetric) -> str:
    return SECTION_TITLES[metric.page_section or metric.section]


def page_rows(report: Report) -> list[dict[str, Any]]:
    """The rows the page's cards draw, card by card (PAGE_CARDS), each card's lead first, then table order:
    name, label (at K), format, direction and card; a percentile also names its run value and q, which
    the chart of that value marks. The values are in the report."""
    k = (report.get("settings") or {}).get("repeat") or 1
    order = [SECTION_TITLES[s] for s in PAGE_CARDS]
    shown = sorted((m for m in SUITE_METRIC_TABLE if m.on_page), key=lambda m: (order.index(_card(m)), not m.lead))
    rows = []
    for m in shown:
        row: dict[str, Any] = {"name": m.name, "label": m.label_at(k, page=True), "fmt": m.fmt,
                               "direction": m.direction, "card": _card(m)}
        if m.statistic.kind == "percentile":
            row.update(of=m.statistic.key, q=m.statistic.q)
        rows.append(row)
    return rows
