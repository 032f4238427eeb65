"""The "Scorers" block of the terminal report, read from `summary.scorers` and the runs."""
from __future__ import annotations

from agent_eval.records import Report
from agent_eval.report.fmt import trim

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

MESSAGE_MAX_CHARS = 100


def format_scorer_value(value: Any) -> str:
    """A summary value: at most three decimals (one from 100 up), trailing zeros dropped; text trimmed."""
    if value is None:
        return "n/a"
    if isinstance(value, (bool, int)):
        return str(value)
    if isinstance(value, float):
        text = f"{value:,.1f}" if abs(value) >= 100 else f"{value:.3f}"
        return text.rstrip("0").rstrip(".") if "." in text else text
    return trim(str(value), MESSAGE_MAX_CHARS)


def summary_rows(summary: dict[str, Any], path: str = "") -> list[tuple[str, str]]:
    """(key path, "stat value · stat value") rows: one per dict of plain values, nested dicts below it."""
    leaves = [(k, v) for k, v in summary.items() if not isinstance(v, dict)]
    rows = []
    if leaves:
        rows.append((path, " · ".join(f"{k} {format_scorer_value(v)}" for k, v in leaves)))
    for key, value in summary.items():
        if isinstance(value, dict):
            rows.extend(summary_rows(value, f"{path}.{key}" if path else key))
    return rows


def first_error(report: Report, name: str) -> str | None:
    """The first run's scorer error of `name`, as `case #trial: message`; None when it never raised."""
    for case in report.get("cases") or []:
        for run in case.get("runs") or []:
            message = (run.get("scorer_errors") or {}).get(name)
            if message:
                return trim(f"{case.get('id')} #{run.get('trial')}: {message}", MESSAGE_MAX_CHARS)
    return None


def render_scorers(report: Report, console: Console) -> None:
    """One table: each scorer's summary rows and error count; nothing when the suite has no scorer."""
    scorers = (report.get("summary") or {}).get("scorers") or {}
    if not scorers:
        return
    table = Table(title="Scorers", title_justify="left", title_style="bold", expand=False)
    table.add_column("scorer", overflow="fold")
    table.add_column("key", overflow="fold")
    table.add_column("summary", overflow="fold", min_width=20)
    table.add_column("errors", justify="right", no_wrap=True)
    for name, entry in scorers.items():
        entry = entry if isinstance(entry, dict) else {}
        errors = entry.get("errors") or 0
        values = {k: v for k, v in entry.items() if k not in ("errors", "summarize_error")}
        rows = summary_rows(values) or [("", "no values")]
        if entry.get("summarize_error"):
            rows.append(("", f"summarize failed: {trim(entry['summarize_error'], MESSAGE_MAX_CHARS)}"))
        for i, (key, text) in enumerate(rows):
            table.add_row(Text(name if i == 0 else ""), Text(key), Text(text),
                          Text(str(errors), style="red" if errors else "") if i == 0 else "")
        message = first_error(report, name) if errors else None
        if message:
            table.add_row("", "", Text(f"first error: {message}", style="red"), "")
    console.print()
    console.print(table)
