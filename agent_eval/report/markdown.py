"""`--markdown FILE`: a GitHub-flavoured summary fit for $GITHUB_STEP_SUMMARY.

The verdict line the terminal ends with (`FAIL (exit 1): 2 cases failed`) under the title, headline
metrics, the failing cases with their first failed check, and the gate table when the report has a
baseline. The file is appended to, as GitHub asks for the step summary, so several runs of one job each
add their own section.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from agent_eval.report.files import make_parent
from agent_eval.records import Report
from agent_eval.report.fmt import format_value, one_line, trim
from agent_eval.report.gate_table import gate_notes, gate_rows
from agent_eval.score.metric_registry import SUITE_METRIC_TABLE, in_section
from agent_eval.report.reasons import case_reason, judge_off_note
from agent_eval.report.metrics_section import added_rows
from agent_eval.report.price_source import pricing_line
from agent_eval.report.verdict import verdict_line

MAX_FAILING_ROWS = 50
_PLAIN = re.compile(r"[A-Za-z0-9 .,;:'=+%/-]*")  # no character that Markdown or HTML gives a meaning
_TICKS = re.compile("`+")
CELL_MAX_CHARS = 200
_MARKUP = re.compile(r"[\\`*_\[\]<>#|!~]")  # escaped in the verdict line, which names metrics and files


def cell(text: Any) -> str:
    """Text safe inside a Markdown table cell: one line, pipes escaped, shortened (a code span is kept
    whole, so that cutting it can never expose its text to Markdown)."""
    value = str(text)
    if not value.startswith("`"):
        value = trim(value, CELL_MAX_CHARS)
    return value.replace("|", "\\|")


def inert(text: Any) -> str:
    """Untrusted text (from the agent, its tools or the case file) that Markdown shows as it is: plain
    words stay plain, anything else becomes a code span, which makes no link, image, HTML or heading.
    A line of prose (a title, a note) is never cut; only table cells are (cell)."""
    value = one_line(text)
    return value if _PLAIN.fullmatch(value) and "www." not in value.lower() else _span(value)


def _code(text: Any) -> str:
    """Untrusted text as a code span, always (case ids and failure reasons); never cut: a case's reason is
    the same string in every output (reasons.case_reason), its tool exception at its end included."""
    return _span(one_line(text))


def _escaped(text: str) -> str:
    """Our own prose with each character Markdown gives a meaning backslash-escaped (it stays readable)."""
    return _MARKUP.sub(lambda m: "\\" + m.group(0), text)


def _span(value: str) -> str:
    fence = "`" * (max((len(run) for run in _TICKS.findall(value)), default=0) + 1)
    padded = f" {value} " if value.startswith("`") or value.endswith("`") else value
    return f"{fence}{padded}{fence}"


def table_lines(header: list[str], rows: list[list[str]], right: frozenset[int] | set[int] = frozenset()) -> list[str]:
    """A Markdown table: the header as given, each cell of the rows made safe (cell); `right`: right-aligned columns."""
    align = ["---:" if i in right else ":---" for i in range(len(header))]
    return [f"| {' | '.join(header)} |", f"| {' | '.join(align)} |",
            *(f"| {' | '.join(cell(c) for c in row)} |" for row in rows)]


def _repeat(report: Report) -> Any:
    return (report.get("settings") or {}).get("repeat") or "K"


def headline_lines(report: Report) -> list[str]:
    """The title, the case counts and the headline metrics table."""
    s = report.get("summary") or {}
    title = f"## agent-eval: {inert(report.get('suite') or 'suite')}"
    who = " · ".join(inert(x) for x in (report.get("agent"), report.get("model"), report.get("run_id")) if x)
    counts = (f"**{s.get('cases_passed', 0)} passed**, {s.get('cases_failed', 0)} failed, "
              f"{s.get('cases_errored', 0)} errored, {s.get('cases_skipped', 0)} skipped "
              f"of {s.get('cases_total', len(report.get('cases') or []))} cases; "
              f"{s.get('runs', 0)} runs (k={_repeat(report)})")
    k = _repeat(report)
    # The headline rows (the figures at K only when K > 1: else they are pass@1 again, as in the terminal);
    # then the safety rates, null when no case exercises them, so shown only with a value; then `more`.
    rows = [[m.label_at(k), format_value(m.name, s.get(m.name))] for m in SUITE_METRIC_TABLE
            if m.in_markdown and m.section not in ("safety", "more") and m.name in s and not (m.at_k and k == 1)]
    rows += [[m.label, format_value(m.name, s[m.name])] for m in in_section("safety") if s.get(m.name) is not None]
    rows += [[label, f"{value} {interval}".strip()] for label, value, interval in added_rows(report)]
    lines = [title, "", f"**{_escaped(verdict_line(report))}**", ""]
    settings = report.get("settings") or {}
    if settings.get("replay"):  # the model's answers came from a recording (run --replay)
        who += (f" · replaying {inert(settings['replay'])} (recorded {inert(settings.get('replay_recorded_at'))}, "
                f"model {inert(settings.get('replay_model'))})")
    if who:
        lines += [who, ""]
    if priced := pricing_line(report):  # the terminal header's line: where the prices came from
        lines += [inert(priced), ""]
    if report.get("interrupted"):
        lines += ["> [!WARNING]", "> This run was interrupted; the figures cover the finished runs only.", ""]
    elif report.get("stopped_at_budget"):
        from agent_eval.report.verdict import budget_line

        lines += ["> [!WARNING]", f"> This run {budget_line(report)}; the figures cover the finished runs only.", ""]
    return lines + [counts, "", *table_lines(["metric", "value"], rows, right={1}), ""]


def failing_lines(report: Report) -> list[str]:
    """The failed and errored cases, each with its first failed check (or its error)."""
    failing = [c for c in report.get("cases") or [] if c.get("status") in ("failed", "error")]
    if not failing:
        return ["No failing cases.", ""]
    rows = [[_code(c.get("id")), (c.get("status") or "") + judge_off_note(c),
             "n/a" if c.get("pass_rate") is None else f"{c['pass_rate']:.0%}", _code(case_reason(c))]
            for c in failing[:MAX_FAILING_ROWS]]
    header = ["case", "status", "pass rate", "reason"]
    lines = [f"### Failing cases ({len(failing)})", "", *table_lines(header, rows, right={2})]
    if len(failing) > MAX_FAILING_ROWS:
        lines.append(f"\n…and {len(failing) - MAX_FAILING_ROWS} more; see the JSON report.")
    return lines + [""]


def gate_lines(gate: dict[str, Any]) -> list[str]:
    """The regression gate: its table, its notes and its overall verdict."""
    verdict = ("⚠️ **nothing to gate**" if gate.get("nothing_to_gate") else
               "❌ **regression**" if gate.get("regression") else "✅ no regression")
    base = f" vs `{gate['base_run_id']}`" if gate.get("base_run_id") else ""
    rows = [[*cells[:-1], f"**{cells[-1]}**" if cells[-1] == "regressed" else cells[-1]]
            for cells in gate_rows(gate)]
    return [f"### Regression gate{base}: {verdict}", "",
            *table_lines(["metric", "base", "new", "delta", "CI", "verdict"], rows, right={1, 2, 3, 4}), "",
            *(f"- {inert(line)}" for line in gate_notes(gate)), ""]


def render_markdown(report: Report) -> str:
    """The whole summary as one Markdown string."""
    lines = headline_lines(report) + failing_lines(report)
    if gate := report.get("gate"):
        lines += gate_lines(gate)
    return "\n".join(lines) + "\n"


def write_markdown(report: Report, path: str | Path) -> None:
    """Append the summary to `path` (created when missing), as $GITHUB_STEP_SUMMARY expects."""
    data = render_markdown(report).encode("utf-8")
    fd = os.open(make_parent(Path(path)), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        written = os.write(fd, data)  # one write: a reader never sees a section cut in two
        while written < len(data):  # a short write (a pipe, a signal): the rest follows at once
            written += os.write(fd, data[written:])
    finally:
        os.close(fd)
