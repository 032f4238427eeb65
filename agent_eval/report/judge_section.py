"""The terminal's judge section: summary.judge in one line, and the judge's agreement after a rescore."""
from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from agent_eval.report.fmt import format_cost, format_count, format_rate


def judge_line(report: dict[str, Any]) -> str | None:
    """`judge gpt-4o-mini: 3 calls, 2 cache hits, 1,234 tokens, $0.0004, 0 errors`; None when unused."""
    judge = (report.get("summary") or {}).get("judge") or {}
    if not (judge.get("calls") or judge.get("cache_hits") or judge.get("errors")):
        return None
    model = (report.get("settings") or {}).get("judge_model") or "?"
    tokens = (judge.get("prompt_tokens") or 0) + (judge.get("completion_tokens") or 0)
    return (f"judge {model}: {format_count(judge.get('calls'))} calls, "
            f"{format_count(judge.get('cache_hits'))} cache hits, {format_count(tokens)} tokens, "
            f"{format_cost(judge.get('cost_usd'))}, {format_count(judge.get('errors'))} errors")


def render_judge(report: dict[str, Any], console: Console) -> None:
    """The judge's spend, then (after `rescore --judge-repeat`) its agreement overall and per case."""
    line = judge_line(report)
    judge = (report.get("summary") or {}).get("judge") or {}
    if line is None and "agreement" not in judge:
        return
    console.print()
    if line is not None:
        console.print(Text(line, style="dim"))
    if "agreement" not in judge:
        return
    repeat = (report.get("settings") or {}).get("judge_repeat")
    console.print(Text(f"judge agreement: {format_rate(judge.get('agreement'))} "
                       f"(share of {format_count(judge.get('agreement_runs'))} judged runs whose "
                       f"{repeat} answers were identical)"))
    table = Table(box=None, show_header=True, padding=(0, 1))
    table.add_column("case", overflow="fold")
    table.add_column("agreement", justify="right", no_wrap=True)
    for case in report.get("cases") or []:
        if case.get("judge_agreement") is not None:
            value = case["judge_agreement"]
            table.add_row(Text(str(case.get("id"))),
                          Text(format_rate(value), style="" if value == 1 else "yellow"))
    if table.row_count:
        console.print(table)
