"""`compare`'s side-by-side intervals: each report's summary.ci, pass^k at the k every report has.

These describe each report on its own; the gate's verdicts come from its own test (report/gate.py).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from agent_eval.report.fmt import NA
from agent_eval.report.trust_section import format_interval, interval_of
from agent_eval.score.intervals import ci_metrics, counted_cases, pass_hat_interval
from agent_eval.score.metric_registry import label_of


def _repeat(report: Mapping[str, Any]) -> int:
    repeat = (report.get("settings") or {}).get("repeat")
    return repeat if isinstance(repeat, int) and not isinstance(repeat, bool) and repeat > 0 else 1


def _pass_hat_at(report: Mapping[str, Any], k: int) -> tuple[float, float] | None:
    """pass^k's interval at k: the report's own when k is its K, else computed from its cases."""
    if k == _repeat(report):
        return interval_of(report, "pass_hat_k")
    rows = [c for c in report.get("cases") or [] if isinstance(c, dict)]
    interval = pass_hat_interval(counted_cases(rows), k)
    return None if interval is None else (interval[0], interval[1])


def interval_table(reports: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[tuple[float, float] | None]]]:
    """(label, one interval or None per report) for each suite rate that has an interval in any report."""
    k = min(_repeat(r) for r in reports)
    rows = []
    for name in ci_metrics():
        if name == "pass_hat_k":
            cells = [_pass_hat_at(r, k) for r in reports]
            label = f"pass^{k}"
        else:
            cells = [interval_of(r, name) for r in reports]
            label = label_of(name)
        if any(cell is not None for cell in cells):
            rows.append((label, cells))
    return rows


def render_compare_intervals(reports: Sequence[Mapping[str, Any]], paths: list[str], console: Console) -> None:
    """A table of each report's 95% intervals side by side; nothing when no report has any."""
    rows = interval_table(reports)
    if not rows:
        return
    table = Table(title="95% intervals (bootstrap over cases; each report on its own)", title_justify="left",
                  box=box.SIMPLE_HEAD)
    table.add_column("metric", no_wrap=True)
    for i, (report, path) in enumerate(zip(reports, paths, strict=True)):
        head = "base" if i == 0 else f"new {i}" if len(reports) > 2 else "new"
        table.add_column(Text(f"{head}\n{report.get('run_id') or path}"), no_wrap=True)
    for label, cells in rows:
        table.add_row(label, *[NA if cell is None else format_interval(cell) for cell in cells])
    console.print()
    console.print(table)
