"""The terminal's dialogue section: the conversation of each failed or errored scenario case.

For each such case it prints the first unsuccessful run that kept its dialogue: the user's and the
agent's turns, with the tool calls of each agent turn between them. Also one line of summary.user_sim.
"""
from __future__ import annotations

from typing import Any

import orjson
from rich.console import Console
from rich.padding import Padding
from rich.text import Text

from agent_eval.records import CaseEntry, Report, RunRecord, Step
from agent_eval.report.dialogue import dialogue_turns
from agent_eval.report.fmt import format_cost, format_count, trim
from agent_eval.report.reasons import run_failure_reason

TURN_CHARS = 300
ARGS_CHARS = 80
OUTPUT_CHARS = 60


def _args(args: Any) -> str:
    if isinstance(args, str):
        return args
    try:
        return orjson.dumps(args).decode()
    except TypeError:
        return repr(args)


def _call_line(step: Step) -> Padding:
    """`↳ name(args) → output`, indented under its turn; a line too long for the terminal wraps under
    the arrow, never back at the left margin."""
    line = Text()
    line.append(f"↳ {step.get('name')}({trim(_args(step.get('args')), ARGS_CHARS)})", style="cyan")
    if step.get("error") is not None:
        line.append(f" → error: {trim(str(step['error']), OUTPUT_CHARS)}", style="red")
    else:
        line.append(f" → {trim(str(step.get('output')), OUTPUT_CHARS)}", style="dim")
    return Padding(line, (0, 0, 0, 6), expand=False)


def is_scenario_run(run: RunRecord) -> bool:
    """A run of a scenario case, as a report records it: its `turns` metric is null outside scenario runs."""
    return (run.get("metrics") or {}).get("turns") is not None


def _dialogue_run(case: CaseEntry) -> RunRecord | None:
    """The first unsuccessful run of a case whose trace holds a dialogue."""
    for run in case.get("runs") or []:
        trace = run.get("trace") or {}
        if run.get("status") in ("failed", "error") and "turn_steps" in trace and is_scenario_run(run):
            return run
    return None


def render_dialogue(report: Report, console: Console) -> None:
    """Each failed or errored scenario case's dialogue, and the simulator's spend; nothing otherwise."""
    shown = False
    for case in report.get("cases") or []:
        if case.get("status") not in ("failed", "error"):
            continue
        run = _dialogue_run(case)
        if run is None:
            continue
        if not shown:
            console.print()
            console.print(Text("Dialogues of failed scenario cases", style="bold"))
            shown = True
        head = Text(f"{case.get('id')}", style="bold")
        head.append(f" · trial {run.get('trial')} · {run.get('status')}", style="red")
        reason = run_failure_reason(run)
        status_word = f"{run.get('status')}: "
        if reason and reason.startswith(status_word):  # "error · error: ..." says it twice
            reason = reason[len(status_word):]
        if reason:
            head.append(f": {trim(reason)}")
        console.print(head)
        for i, turn in enumerate(dialogue_turns(run["trace"]), start=1):
            console.print(Text(f"  user {i:>2}  ", style="yellow").append(trim(turn["user"], TURN_CHARS),
                                                                          style="default"))
            for step in turn["steps"]:
                console.print(_call_line(step))
            if turn["reply"] is None:
                console.print(Text("  agent     (no reply)", style="dim"))
            else:
                console.print(Text(f"  agent{i:>3}  ", style="green").append(trim(turn["reply"], TURN_CHARS),
                                                                          style="default"))
    sim = (report.get("summary") or {}).get("user_sim") or {}
    if sim.get("calls"):
        console.print()
        console.print(Text(f"user simulator ({(report.get('settings') or {}).get('user') or 'n/a'}): "
                           f"{format_count(sim['calls'])} calls, "
                           f"{format_count(sim.get('prompt_tokens'))} prompt + "
                           f"{format_count(sim.get('completion_tokens'))} completion tokens, "
                           f"{format_cost(sim.get('cost_usd'))}, {format_count(sim.get('errors'))} errors "
                           "(not counted as the agent's)", style="dim"))
