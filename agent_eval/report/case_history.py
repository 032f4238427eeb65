"""One case's status and pass rate over the recent runs of its suite, read from history.sqlite's
case_results (`agent-eval history --case-id ID`)."""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from agent_eval.report.fmt import NA, format_rate
from agent_eval.report.history import agent_and_model, normalize_cases_file, sparkline


def case_runs(db_path: str | Path, cases_file: str | Path, case_id: str, last: int = 10) -> list[dict[str, Any]]:
    """The newest `last` runs of the suite in cases_file that hold the case, oldest first: run_id,
    created_at, agent, model, status and pass_rate."""
    if not Path(db_path).exists():
        return []
    conn = sqlite3.connect(str(db_path))
    conn.row_factory = sqlite3.Row
    try:
        rows = conn.execute(
            "SELECT r.run_id, r.created_at, r.agent, r.model, c.status, c.pass_rate FROM case_results c "
            "JOIN runs r ON r.run_id = c.run_id WHERE r.cases_file = ? AND c.case_id = ? "
            "ORDER BY r.created_at DESC, r.run_id DESC LIMIT ?",
            (normalize_cases_file(cases_file), case_id, last)).fetchall()
        return [dict(r) for r in rows][::-1]
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return []
        raise
    finally:
        conn.close()


def render_case_history(case_id: str, rows: list[dict[str, Any]], console: Console) -> None:
    """One row per run (oldest first): run_id in full, created, agent / model, status, pass rate; then
    the pass rate's trend."""
    table = Table(title=Text(f"history of case {case_id}: {len(rows)} run(s)"), box=box.SIMPLE_HEAD)
    table.add_column("run_id", no_wrap=True, min_width=max(len(r["run_id"]) for r in rows))
    for name in ("created", "agent / model", "status"):
        table.add_column(name, no_wrap=True)
    table.add_column("pass rate", justify="right", no_wrap=True)
    for r in rows:
        table.add_row(r["run_id"], str(r.get("created_at") or "")[5:16].replace("T", " "), Text(agent_and_model(r)),
                      Text(str(r.get("status") or NA)), format_rate(r.get("pass_rate")))
    table.add_section()
    table.add_row("trend", "", "", "", sparkline([r.get("pass_rate") for r in rows]))
    console.print(table)
