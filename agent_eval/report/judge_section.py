"""The terminal's judge section: summary.judge in one line, and the judge's agreement after a rescore."""
from __future__ import annotations


from rich.console import Console
from rich.table import Table
from rich.text import Text

from agent_eval.records import Report
from agent_eval.report.fmt import format_cost, format_count, format_rate


def judge_line(report: Report) -> str | None:
    """`judge gpt-4o-mini: 3 calls, 2 cache hits, 1,234 tokens, $0.0004, 0 errors; 3 of 4 run(s) judged (...)`;
    with judging on and no run judged, `judge: on, 0 calls: ...`; None when no case asked for the judge."""
    judge = (report.get("summary") or {}).get("judge") or {}
    to_judge = (report.get("summary") or {}).get("runs_to_judge")
    judged = sum(1 for case in report.get("cases") or [] for run in case.get("runs") or []
                 if run.get("judge") or run.get("judge_expected_outcome"))
    if not (judge.get("calls") or judge.get("cache_hits") or judge.get("errors")):
        # Judging was on for a case with a rubric, and not one run reached the judge: say so.
        if to_judge and not judged:
            return "judge: on, 0 calls: every judged run failed a deterministic check first"
        return None
    model = (report.get("settings") or {}).get("judge_model") or "?"
    tokens = (judge.get("prompt_tokens") or 0) + (judge.get("completion_tokens") or 0)
    runs = ""
    if isinstance(to_judge, int) and isinstance(judged, int):
        runs = f"; {judged} of {to_judge} run(s) judged"
        runs += " (the others failed a deterministic check first)" if judged < to_judge else ""
    return (f"judge {model}: {format_count(judge.get('calls'))} calls, "
            f"{format_count(judge.get('cache_hits'))} cache hits, {format_count(tokens)} tokens, "
            f"{format_cost(judge.get('cost_usd'))}, {format_count(judge.get('errors'))} errors{runs}")


def render_judge(report: Report, console: Console) -> None:
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
