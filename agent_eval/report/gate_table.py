"""The gate table in the terminal (Rich), plus its rows and notes, which the Markdown summary shares."""
from __future__ import annotations

from typing import Any


from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from agent_eval.report.fmt import format_ci, format_value

VERDICT_STYLE = {"regressed": "bold red", "improved": "green", "no significant change": "dim", "n/a": "dim"}


def gate_rows(gate: dict[str, Any]) -> list[list[str]]:
    """metric, base, new, delta, CI, verdict as display strings; shared by the terminal and Markdown."""
    rows = []
    for row in gate["metrics"]:
        name = row["metric"]
        rows.append([name, format_value(name, row["base"]), format_value(name, row["new"]),
                     format_value(name, row["delta"], signed=True), format_ci(name, row["ci"]),
                     row["verdict"]])
    return rows


def gate_notes(gate: dict[str, Any]) -> list[str]:
    """The lines under the table: how it decided, then the pair's notes."""
    return [method_line(gate), *pair_notes(gate)]


def method_line(gate: dict[str, Any]) -> str:
    """How the gate decided: the common cases, Holm's procedure over m tests, the bounds, the resamples."""
    level = 1 - gate["alpha"] / max(gate["m"], 1)
    return (f"{gate['cases_common']} common cases; Holm's step-down procedure over m={gate['m']} test(s) at "
            f"{gate['alpha']:.0%}, one-sided bounds at {level:.3%}; {gate['resamples']:,} paired bootstrap "
            f"resamples, seed {gate['seed']}.")


def pair_notes(gate: dict[str, Any]) -> list[str]:
    """The notes of one comparison: tolerances, unpaired cases, regressed cases, the Fisher note, and why
    listed cases did not make the gate fire (with pass_at_1's minimum detectable drop)."""
    lines = []
    for row in gate["metrics"]:
        if row.get("max_drop"):
            worse = "a drop" if row["direction"] == "higher" else "a rise"
            limit = format_value(row["metric"], row["max_drop"])
            lines.append(f"{row['metric']} tolerates {worse} of up to {limit}")
    for key, label in (("only_in_base", "only in the base report (not gated)"),
                       ("only_in_new", "only in the new report (not gated)"),
                       ("excluded_cases", "skipped or errored in a report (not gated)")):
        if gate.get(key):
            lines.append(f"{len(gate[key])} case(s) {label}: {', '.join(gate[key])}")
    for case in gate.get("regressed_cases") or []:
        lines.append(f"regressed case {case['id']}: {case['base_successes']}/{case['base_runs']} -> "
                     f"{case['new_successes']}/{case['new_runs']} (Fisher p = {case['p_value']:.4g})")
    if gate.get("note"):
        lines.append(f"note: {gate['note']}")
    explained = cases_without_metric_line(gate)
    if explained:
        lines.append(explained)
    return lines


def cases_without_metric_line(gate: dict[str, Any]) -> str | None:
    """One line for listed cases under a gate that did not fire: why, and what this pair could detect."""
    listed = gate.get("regressed_cases") or []
    if not listed or gate.get("regression"):
        return None
    line = (f"{len(listed)} case(s) listed as regressed, but no metric regressed: no suite-level bound passed "
            "its allowed drop, so the gate passes")
    row = next((r for r in gate.get("metrics") or [] if r.get("metric") == "pass_at_1"), None)
    if row is not None and row.get("min_detectable_drop") is not None:
        line += (f"; pass_at_1 would have had to fall about {row['min_detectable_drop']:.3f} further than it did "
                 f"(delta {format_value('pass_at_1', row['delta'], signed=True)}) to be flagged "
                 "(more cases or --repeat detect smaller drops)")
    return line + "."


def render_gate(gate: dict[str, Any], console: Console) -> None:
    """Print the gate table and its notes; the verdict of the whole gate comes last."""
    rows = gate_rows(gate)
    table = Table(title="Regression gate (new vs base)", title_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False, collapse_padding=True)
    # Metric names are what users pass to --gate, so they are never cut; on a narrow terminal the
    # confidence interval and the verdict wrap instead.
    table.add_column("metric", no_wrap=True, min_width=max((len(r[0]) for r in rows), default=6))
    for column in ("base", "new", "delta"):
        table.add_column(column, justify="right", no_wrap=True)
    table.add_column("CI", justify="right", min_width=9)
    table.add_column("verdict", min_width=9)
    for cells in rows:
        table.add_row(*map(Text, cells[:-1]), Text(cells[-1], style=VERDICT_STYLE.get(cells[-1], "")))
    console.print(table)
    for line in gate_notes(gate):
        console.print(line, markup=False, highlight=False)
    if gate.get("nothing_to_gate"):
        console.print(Text.assemble(("Gate: nothing to gate", "bold magenta"), f": {gate['nothing_to_gate']} (exit 2)"))
    elif gate["regression"]:
        console.print(Text.assemble(("Gate: REGRESSION", "bold red"), " (exit 1)"))
    else:
        console.print(Text("Gate: no regression", style="green"))
