"""`agent-eval label REPORT`: label the judged runs of a report in the terminal, one line of input each.

For each run with a usable verdict (per criterion) it prints the case id, the trial, the criterion's
text, the user messages, the final answer and the judge's verdict, then reads `p`, `f`, `s` or `q`
(end of input too), or `p <note>` / `f <note>`; each label is appended to the labels file at once.
"""
from __future__ import annotations

from pathlib import Path
from collections.abc import Mapping
from typing import Any, TextIO

from rich.console import Console
from rich.text import Text

from agent_eval.records import Case, CaseEntry, RunRecord, field_of
from agent_eval.errors import ConfigError
from agent_eval.report.console import escape_control
from agent_eval.report.files import labels_path_of
from agent_eval.report.model import load_report
from agent_eval.report.shapes import JUDGED_SHAPE
from agent_eval.score.calibration import usable_verdict
from agent_eval.score.labels import Label, append_label

PROMPT = "label: p(ass) / f(ail) [note], s(kip), q(uit) > "


def _title(criterion: str) -> str:
    from agent_eval.score.judge import CRITERIA

    return next(c.title for c in CRITERIA if c.field == criterion)


def _inert(value: Any) -> Text:
    return Text(escape_control(str(value)))


def judged_items(data: Mapping[str, Any]) -> list[tuple[CaseEntry, RunRecord, str, tuple[Any, ...]]]:
    """(case entry, run, criterion, verdict) for each run and criterion with a usable verdict, in report
    order (trials ascending, rubric before expected_outcome)."""
    from agent_eval.score.judge import CRITERIA

    out = []
    for entry in data.get("cases") or []:
        for run in sorted(entry.get("runs") or [], key=lambda r: r["trial"]):
            for criterion in CRITERIA:
                verdict = usable_verdict(run.get(criterion.record))
                if verdict is not None:
                    out.append((entry, run, criterion.field, verdict))
    return out


def show_item(console: Console, entry: CaseEntry, run: RunRecord, criterion: str, verdict: tuple[Any, ...],
              case: Case | None) -> None:
    """One judged run as the labeller sees it; every piece of it is inert text."""
    console.print()
    head = Text(f"case {escape_control(str(entry.get('id')))} · trial {run['trial']} · "
                f"{_title(criterion)}", style="bold")
    console.print(head)
    text = field_of(case, criterion) if case else None
    console.print(Text(f"{_title(criterion)}: ", style="dim") +
                  _inert(text if text else "(not in the case file)"))
    trace = run.get("trace") or {}
    for message in trace.get("user_messages") or []:
        console.print(Text("user: ", style="dim") + _inert(message))
    final = trace.get("final_answer")
    console.print(Text("final answer: ", style="dim") + _inert(final if final is not None else "(none)"))
    line = Text("judge: ", style="dim") + Text(verdict[0], style="green" if verdict[0] == "PASS" else "red")
    if verdict[1]:
        line += _inert(f" {verdict[1]}")
    console.print(line)


def read_answer(stdin: TextIO, console: Console) -> tuple[str, str | None]:
    """("pass" | "fail" | "skip" | "quit", note); end of input is quit; anything else asks again."""
    while True:
        console.print(PROMPT, end="", highlight=False, markup=False)
        raw = stdin.readline()
        if not raw:
            console.print()
            return "quit", None
        word, _, rest = raw.strip().partition(" ")
        note = rest.strip() or None
        if word in ("p", "f"):
            return ("pass" if word == "p" else "fail"), note
        if word in ("s", "q") and note is None:
            return ("skip" if word == "s" else "quit"), None
        console.print("type p or f (a note may follow), s to skip, q to quit", highlight=False, markup=False)


def label_command(report: Path, console: Console, stdin: TextIO, *, cases: Path | None = None,
                  out: Path | None = None) -> int:
    """Label the report's judged runs from stdin, appending to `out`; exit 0."""
    from agent_eval.commands.judging import load_cases

    data = load_report(report, JUDGED_SHAPE)
    suite = load_cases(data, report, cases, console)
    by_id = {str(c["id"]): c for c in suite.cases}
    target = out or labels_path_of(report)
    items = judged_items(data)
    if not items:
        console.print(f"{report} has no judged run (no run with a PASS or FAIL verdict): nothing to label.",
                      highlight=False, markup=False)
        return 0
    written = 0
    for entry, run, criterion, verdict in items:
        show_item(console, entry, run, criterion, verdict, by_id.get(str(entry.get("id"))))
        answer, note = read_answer(stdin, console)
        if answer == "quit":
            break
        if answer == "skip":
            continue
        label = Label(run_id=str(data["run_id"]), case_id=str(entry.get("id")), trial=run["trial"],
                      label=answer, criterion=criterion, note=note)
        try:
            append_label(target, label)
        except OSError as exc:
            raise ConfigError(f"cannot write the labels file {target} ({exc.strerror or exc}); pass --out "
                              "FILE somewhere writable.") from None
        written += 1
    console.print(f"{written} label(s) written to {target}", highlight=False, markup=False, soft_wrap=True)
    return 0
