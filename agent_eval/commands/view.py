"""`agent-eval view REPORT`: the self-contained HTML page of a report."""
from __future__ import annotations

from pathlib import Path

from rich.console import Console

from agent_eval.commands.conclude import say


def view_command(report: Path, out: Path | None, console: Console) -> int:
    """Write the page of `report` to `out` (default: REPORT as .html), with the last calibration written
    beside the report when there is one; exit 0."""
    from agent_eval.report.calibration_table import read_calibration
    from agent_eval.report.files import page_path_of
    from agent_eval.report.html import write_html
    from agent_eval.report.model import load_report
    from agent_eval.report.shapes import VIEW_SHAPE

    data = load_report(report, VIEW_SHAPE)
    path = write_html(data, out or page_path_of(report), calibration=read_calibration(report))
    say(console, f"wrote {path}")
    return 0
