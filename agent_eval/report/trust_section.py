"""The terminal's defensible numbers: summary.ci shown beside the rates, and the flaky cases named."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from agent_eval.records import CaseEntry
from agent_eval.report.cases_section import case_pass_counts
from agent_eval.report.fmt import NA, format_rate
from agent_eval.score.metric_registry import label_of

Report = Mapping[str, Any]


def interval_of(report: Report, name: str) -> tuple[float, float] | None:
    """summary.ci[name] as (low, high); None when absent or not a pair of numbers (an older report)."""
    ci = (report.get("summary") or {}).get("ci")
    value = ci.get(name) if isinstance(ci, dict) else None
    if (isinstance(value, list) and len(value) == 2
            and all(isinstance(x, int | float) and not isinstance(x, bool) for x in value)):
        return float(value[0]), float(value[1])
    return None


def format_interval(interval: tuple[float, float] | None) -> str:
    """`[0.55, 0.85]`; empty when there is no interval."""
    return "" if interval is None else f"[{interval[0]:.2f}, {interval[1]:.2f}]"


def rate_with_interval(report: Report, name: str) -> str:
    """`0.700 [0.55, 0.85]`: a suite rate and its 95% interval; the rate alone when it has none."""
    value = (report.get("summary") or {}).get(name)
    text = format_rate(value if isinstance(value, int | float) and not isinstance(value, bool) else None)
    interval = interval_of(report, name)
    return text if interval is None or text == NA else f"{text} {format_interval(interval)}"


def render_intervals(report: Report, console: Console, verbose: bool = False) -> None:
    """-v: every suite rate with its 95% case-bootstrap interval."""
    ci = (report.get("summary") or {}).get("ci")
    if not verbose or not isinstance(ci, dict):
        return
    table = Table(title="95% intervals (bootstrap over cases)", title_justify="left", title_style="bold",
                  box=None, show_header=False, padding=(0, 1))
    table.add_column(style="dim", no_wrap=True)
    table.add_column(no_wrap=True)
    for name in ci:
        if interval_of(report, name) is not None:
            table.add_row(Text(label_of(str(name))), Text(rate_with_interval(report, str(name))))
    if table.row_count:
        console.print()
        console.print(table)


def flaky_cases(report: Report) -> list[CaseEntry]:
    """The case entries marked `flaky: true`, in report order."""
    return [c for c in report.get("cases") or [] if c.get("flaky") is True]


def flaky_line(report: Report) -> str | None:
    """`3 flaky cases: a (2/3), b (1/3), c (2/3)`; None when no case is flaky."""
    cases = flaky_cases(report)
    if not cases:
        return None
    parts = []
    for case in cases:
        c, n = case_pass_counts(case)
        parts.append(f"{case.get('id')} ({c}/{n})")
    noun = "flaky case" if len(cases) == 1 else "flaky cases"
    return f"{len(cases)} {noun}: {', '.join(parts)}"


def render_flaky(report: Report, console: Console) -> None:
    """After the case table: the cases whose runs both passed and failed."""
    line = flaky_line(report)
    if line:
        console.print(Text(line, style="yellow"))
