"""`agent-eval plan REPORT [--detect DROP] [--power P]`: how many repeats and cases the gate needs."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from agent_eval.errors import EXIT_PASSED, ConfigError
from agent_eval.flags import setting
from agent_eval.report.fmt import format_cost

DEFAULT_DETECT: float = setting("detect").default
DEFAULT_POWER: float = setting("power").default


def plan_command(report_path: Path, console: Console, detect: float = DEFAULT_DETECT,
                 power: float = DEFAULT_POWER) -> int:
    """Simulate the gate on pass_at_1 for every design and print what each detects; 0, or 2 on bad input."""
    from agent_eval.report.gate import load_report
    from agent_eval.report.plan import MAX_CASES, MIN_CASES, case_rates, cost_per_run, plan

    if not (math.isfinite(detect) and 0 < detect < 1):
        raise ConfigError(f"--detect must be a drop of pass_at_1 between 0 and 1, such as 0.05 (got {detect}).")
    if not (math.isfinite(power) and 0 < power < 1):
        raise ConfigError(f"--power must be a probability between 0 and 1, such as 0.8 (got {power}).")
    report = load_report(report_path)
    rates = case_rates(report)
    if rates.size > MAX_CASES:  # each design holds pairs x cases x repeats draws: bounded, whatever the report
        raise ConfigError(f"{report_path} has {rates.size:,} cases with a pass rate; plan simulates suites of up to "
                          f"{MAX_CASES:,} (scaled to {4 * MAX_CASES:,}). Plan from a report of a sample of the cases "
                          "(run --filter), since a gate over more cases only detects smaller drops.")
    if rates.size < MIN_CASES:
        raise ConfigError(f"{report_path} has {rates.size} case(s) with a pass rate; plan needs at least {MIN_CASES} "
                          "to draw new cases like them. Run a larger suite first.")
    if not ((rates > 0) & (rates < 1)).any():  # every case passed all or none of its runs
        console.print(f"warning: no case of {report_path} passed some of its runs and failed others: the report "
                      "shows no run-to-run variation (or has one run per case), and plan draws new runs as "
                      "repeatable as that, so its answer is optimistic. Plan from a report run with -k 3 or more "
                      "on a model that varies.", highlight=False, markup=False, soft_wrap=True)
    from agent_eval.score.metric_registry import default_gates

    result = plan(rates, detect, power, cost_per_run(report), m=len(default_gates(report.get("summary") or {})))
    render_plan(result, console, str(report_path))
    return EXIT_PASSED


def _drop(value: float | None, largest: float) -> str:
    return f"{value:.3f}" if value is not None else f"> {largest:g}"


def render_plan(result: dict[str, Any], console: Console, source: str) -> None:
    def say(line: str) -> None:
        console.print(line, highlight=False, markup=False, soft_wrap=True)

    say(f"plan from {source}: {result['cases']} cases, mean pass rate {result['mean_pass_rate']:.3f}; "
        f"{result['pairs']:,} simulated pairs of runs per design (seeded), gated as pass_at_1 is "
        f"(paired case bootstrap, one-sided at {result['alpha']:g}/{result['m']}: the default gated metrics)")
    table = Table(box=box.SIMPLE_HEAD, title_justify="left",
                  title=f"What each design detects (power {result['power']:.0%})")
    for name in ("repeats k", "cases", "runs", "expected cost", "false alarms",
                 f"detects a {result['detect']:g} drop", f"min drop at {result['power']:.0%}"):
        table.add_column(name, justify="right")
    for d in result["designs"]:
        cost = format_cost(d["cost_usd"])
        good = d["power_at_detect"] >= result["power"]
        table.add_row(str(d["repeat"]), f"{d['cases']} (x{d['scale']})", f"{d['runs']:,}", cost,
                      f"{d['false_alarm']:.1%}", Text(f"{d['power_at_detect']:.1%}", style="green" if good else ""),
                      _drop(d["min_drop"], result["largest_drop"]))
    console.print(table)
    best = result["cheapest"]
    if best is None:
        strongest = max(result["designs"], key=lambda d: d["power_at_detect"])
        say(f"No design here detects a drop of {result['detect']:g} with probability {result['power']:.0%}; the "
            f"strongest, k={strongest['repeat']} over {strongest['cases']} cases, detects it "
            f"{strongest['power_at_detect']:.0%} of the time. Add cases, or plan for a larger drop (--detect).")
        return
    cost = (f", about {format_cost(best['cost_usd'])} at {format_cost(result['cost_per_run_usd'])} a run"
            if best["cost_usd"] is not None else " (the report's cost per run is unknown)")
    more = "" if best["scale"] == 1 else f" ({best['scale']}x the report's {result['cases']} cases)"
    say(f"Cheapest design that detects a drop of {result['detect']:g} in pass_at_1 with probability "
        f"{result['power']:.0%}: -k {best['repeat']} over {best['cases']} cases{more}: {best['runs']:,} runs{cost}.")
