"""The case table of the terminal report, and -v's list of every failed check of every failed run."""
from __future__ import annotations


from rich.console import Console
from rich.table import Table
from rich.text import Text

from agent_eval.records import CaseEntry, Report, RunRecord
from agent_eval.report.fmt import NA, one_line
from agent_eval.report.reasons import case_reason, failure_lines, frames_lines, judge_off_note, run_failure_reason


STATUS_STYLES = {"passed": "green", "failed": "red", "error": "magenta", "skipped": "yellow", "not_run": "dim"}
SHORT_CASE_LIST = 50  # above this many cases, the table lists only those that did not pass (-v lists all)


def case_pass_counts(case: CaseEntry) -> tuple[int, int]:
    """(c, n) of a case: n runs that did not end in error, c of them successful."""
    counted = [run for run in case.get("runs") or [] if run.get("status") != "error"]
    return sum(1 for run in counted if run.get("success")), len(counted)


def format_pass_rate(case: CaseEntry) -> str:
    """`2/3 (67%)`; `n/a` for a case with no counted run (skipped, or every run errored)."""
    c, n = case_pass_counts(case)
    if n == 0:
        return NA
    return f"{c}/{n} ({100 * c / n:.0f}%)"


def render_cases(report: Report, console: Console, verbose: bool = False) -> None:
    """One row per case: id, status, pass rate, and why it failed, errored or was skipped.

    Above SHORT_CASE_LIST cases only those that did not pass are listed, with a count of the others,
    unless `verbose`. Reasons wrap, never cut: a CI log must hold the whole reason.
    """
    all_cases = report.get("cases") or []
    cases = all_cases
    if not verbose and len(all_cases) > SHORT_CASE_LIST:
        cases = [c for c in all_cases if c.get("status") != "passed"]
    hidden = len(all_cases) - len(cases)
    if not cases:
        console.print()
        console.print(f"Cases: all {hidden:,} passed (-v lists them).", highlight=False)
        return
    table = Table(title="Cases", title_justify="left", title_style="bold", expand=False)
    # Ids are what users grep and --filter on, so one is never cut: an id has no spaces, so it stays
    # on one line unless it is wider than its column, and then it folds onto more lines. (no_wrap
    # would forbid the fold, and an id wider than the terminal would push the other columns out.)
    longest = max(len(str(c.get("id", ""))) for c in cases)
    table.add_column("case", overflow="fold", min_width=min(longest, 40))
    table.add_column("status", no_wrap=True, min_width=7)  # `passed (judge off)` under --no-judge
    table.add_column("pass rate", no_wrap=True, justify="right", min_width=10)
    table.add_column("reason", overflow="fold", min_width=30)
    for case in cases:
        status = str(case.get("status") or "")
        table.add_row(
            Text(str(case.get("id"))),
            Text(status, style=STATUS_STYLES.get(status, "")).append(judge_off_note(case)),
            format_pass_rate(case),
            Text(case_reason(case)),
        )
    console.print()
    console.print(table)
    if hidden:
        console.print(f"{hidden:,} passed case(s) not listed (-v lists every case).", highlight=False)


def render_failed_checks(report: Report, console: Console, verbose: bool = False) -> None:
    """-v: every failed check of every failed or errored run, each on its own wrapped line."""
    if not verbose:
        return
    lines: list[Text] = []
    for case in report.get("cases") or []:
        for run in case.get("runs") or []:
            if run_failure_reason(run) is None:
                continue
            head = Text(f"{case.get('id')} #{run.get('trial')} ", style="bold")
            head.append(str(run.get("status")), style=STATUS_STYLES.get(str(run.get("status")), ""))
            lines.append(head)
            for reason in run_failure_reasons(run):
                lines.append(Text(f"  - {reason}"))
            for frame in frames_lines(run):  # where the agent or a tool raised, the user's frames only
                lines.append(Text(f"    {frame}", style="dim" if frame.startswith("  at ") else ""))
    if lines:
        console.print()
        console.print(Text("Failed checks", style="bold"))
        for line in lines:
            console.print(line)


def run_failure_reasons(run: RunRecord) -> list[str]:
    """Every reason one run did not succeed: its error, each failed check and judge verdict, its stop
    reason, and the errors of its scorers and plugin metrics."""
    reasons = [f"error: {run['error']}"] if run.get("error") else []
    reasons += failure_lines(run)
    reasons += [f"scorer {name} raised: {message}" for name, message in (run.get("scorer_errors") or {}).items()]
    reasons += list((run.get("metric_errors") or {}).values())  # each names its metric, plugin and exception
    return [one_line(r) for r in reasons]
