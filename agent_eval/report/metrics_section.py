"""The metric rows plugins added, after the built-in figures: a terminal section under -v, and the rows
Markdown and the page show (each read from the row: its label, format and interval)."""
from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from agent_eval.records import Report
from agent_eval.report.fmt import format_interval, format_metric
from agent_eval.score.metric_registry import added_metrics


def added_rows(report: Report) -> list[tuple[str, str, str]]:
    """(label, value, interval) of each added metric, in table order; empty when no plugin added one."""
    summary: dict[str, Any] = report.get("summary") or {}
    ci = summary.get("ci") or {}
    return [(m.label, format_metric(m.name, summary.get(m.name)), format_interval(m.name, ci.get(m.name)))
            for m in added_metrics()]


def render_added_metrics(report: Report, console: Console, verbose: bool = False) -> None:
    """Under -v, the figures of the metric rows plugins added, with their 95% intervals."""
    rows = added_rows(report)
    if not verbose or not rows:
        return
    table = Table(title="More metrics", title_justify="left", title_style="bold", box=None, padding=(0, 1))
    table.add_column("metric", style="dim", no_wrap=True)
    table.add_column("value", justify="right")
    table.add_column("95% interval")
    for row in rows:
        table.add_row(*row)
    console.print()
    console.print(table)


def page_rows(report: Report) -> list[dict[str, Any]]:
    """The added rows the page draws (name, label, format, direction); the values are in the report."""
    return [{"name": m.name, "label": m.label, "fmt": m.fmt, "direction": m.direction} for m in added_metrics()
            if report.get("summary") is not None]
