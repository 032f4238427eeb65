"""The pass^k curve in the terminal: one row of the Outcome block at any -k, and the whole curve under -v."""
from __future__ import annotations

from typing import Any

from rich.columns import Columns
from rich.console import Console
from rich.text import Text

from agent_eval.records import Report
from agent_eval.report.fmt import format_rate
from agent_eval.report.history import sparkline

CURVE_SPARKS = 20
"""The pass^k sparkline has at most this many marks, at evenly spaced k, so any -k fits a narrow terminal."""


def curve_points(pass_hat: dict[str, Any]) -> list[tuple[int, float | None]]:
    """summary.pass_hat as (k, pass^k), k ascending."""
    return [(int(key), pass_hat[key]) for key in sorted(pass_hat, key=int)]


def curve_text(pass_hat: dict[str, Any]) -> str:
    """`0.767 ▇▅▃▂▁ 0.000`: pass^1, a sparkline of pass^1..K (at most CURVE_SPARKS marks), pass^K."""
    values = [value for _, value in curve_points(pass_hat)]
    if len(values) > CURVE_SPARKS:
        values = [values[round(i * (len(values) - 1) / (CURVE_SPARKS - 1))] for i in range(CURVE_SPARKS)]
    return f"{format_rate(values[0])} {sparkline(values)} {format_rate(values[-1])}"


def render_curve(report: Report, console: Console, verbose: bool = False) -> None:
    """-v: the whole pass^k curve, `k=1 0.767` for every k, wrapped to the terminal's width."""
    points = curve_points((report.get("summary") or {}).get("pass_hat") or {})
    if not verbose or len(points) < 2:
        return
    console.print()
    console.print(Text(f"pass^k for k = 1..{points[-1][0]}", style="bold"))
    console.print(Columns([Text(f"k={k} {format_rate(v)}") for k, v in points], padding=(0, 2)))
