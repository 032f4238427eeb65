"""The Rich terminal report, drawn only from the JSON report dict.

Rich renders, it doesn't decide: every figure shown here is read from the report dict, so the
terminal and the JSON file can never disagree. Runs may come without a `trace` (the runner keeps
traces out of memory), so nothing here requires one.

The report is a list of section renderers, `SECTIONS`. Each takes `(report, console)` and prints
nothing when its data is absent. A later section (judge summary, scorers, gate table, user-sim
dialogue) is one function and one entry in that list.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from agent_eval.records import Report
from agent_eval.score.prices import price_hint
from agent_eval.score.usage import invalid_usage_lines, invalid_usage_of
from agent_eval.report.verdict import verdict_parts
from agent_eval.report.fmt import NA, format_cost, format_count, format_metric
from agent_eval.report.cases_section import render_cases, render_failed_checks
from agent_eval.report.trust_section import rate_with_interval, render_flaky, render_intervals
from agent_eval.report.curve_section import curve_text, render_curve
from agent_eval.report.metrics_section import render_added_metrics, render_metric_errors
from agent_eval.report.judge_section import render_judge
from agent_eval.report.scorer_table import render_scorers
from agent_eval.report.dialogue_section import render_dialogue
from agent_eval.report.price_source import pricing_line
from agent_eval.score.metric_registry import SECTION_TITLES, SuiteMetric, in_section

SectionRenderer = Callable[[Report, Console], None]

NO_SUCCESSES = "no successes"


_STYLES = {"PASS": "green", "FAIL": "red", "ERROR": "magenta", "INTERRUPTED": "yellow"}


def _summary(report: Report) -> dict[str, Any]:
    return report.get("summary") or {}


def _repeat(report: Report) -> int:
    """K, the --repeat of the run: the settings' value, else the largest pass^k entry."""
    repeat = (report.get("settings") or {}).get("repeat")
    if isinstance(repeat, int) and repeat > 0:
        return repeat
    keys = [int(k) for k in (_summary(report).get("pass_hat") or {}) if str(k).isdigit()]
    return max(keys, default=1)


def count_successes(report: Report) -> int:
    """Successful runs among those counted in the figures (errored runs never count)."""
    return sum(
        1
        for case in report.get("cases") or []
        for run in case.get("runs") or []
        if run.get("status") != "error" and run.get("success")
    )


# ---------------------------------------------------------------- sections

def _dimension_table(title: str, rows: list[tuple[str, str]]) -> Table:
    table = Table(title=title, title_justify="left", title_style="bold", box=None,
                  show_header=False, padding=(0, 1))
    # A label is never squeezed: its column is as wide as the longest label, and a long value folds instead.
    table.add_column(style="dim", no_wrap=True, min_width=max((len(label) for label, _ in rows), default=1))
    table.add_column(overflow="fold")
    for label, value in rows:
        table.add_row(label, value)
    return table


def _print_dimensions(console: Console, tables: list[Table]) -> None:
    # Columns wraps onto a new line rather than squeezing labels, so an 80-column CI log stays legible.
    from rich.columns import Columns

    console.print(Columns(tables, padding=(0, 4)))


def render_header(report: Report, console: Console) -> None:
    """Suite and run id on one line; agent, model, repeat and threshold on the next."""
    settings = report.get("settings") or {}
    title = Text()
    title.append("agent-eval ", style="bold")
    title.append(str(report.get("suite") or "(unnamed suite)"), style="bold cyan")
    title.append(f" · run {report.get('run_id') or NA}")
    if report.get("interrupted"):
        title.append(" (interrupted: partial report)", style="bold yellow")
    elif report.get("stopped_early"):
        title.append(" (stopped early by -x: partial report)", style="bold yellow")
    elif report.get("stopped_at_budget"):
        title.append(" (stopped at the --max-cost budget: partial report)", style="bold yellow")
    console.print(title)
    if (bench := bench_line(settings)) is not None:
        console.print(Text(bench, style="bold"))
    console.print(Text(" · ".join([
        f"agent {report.get('agent') or NA}",
        f"model {report.get('model') or NA}",
        *([f"endpoint {settings['base_url']}"] if settings.get("base_url") else []),  # stored redacted
        f"repeat {settings.get('repeat', _repeat(report))}",
        f"threshold {settings.get('threshold', NA)}",
    ]), style="dim"))
    tape = tape_line(settings)
    if tape:
        console.print(Text(tape, style="dim"))
    for line in (judge_line(report), pricing_line(report), spend_line(report)):
        if line:
            console.print(Text(line, style="dim"))
    for model in unpriced_models(report):
        console.print(Text(f"cost n/a: {price_hint(model)}", style="yellow"))
    for why in invalid_usage_lines(report):
        console.print(Text(why, style="yellow"))


def bench_line(settings: dict[str, Any]) -> str | None:
    """`bench: bfcl multi_turn_base @ bfcl-eval 2026.3.23 (200 cases)` for a suite `bench import` wrote."""
    bench = settings.get("bench")
    if not isinstance(bench, dict):
        return None
    parts = " ".join(str(p) for p in bench.get("parts") or [])
    origin = (f"{bench.get('package')} {bench.get('version')}" if bench.get("version") else
              f"{bench.get('package')} checkout {str(bench.get('commit') or 'unknown commit')[:12]}")
    cases = (bench.get("counts") or {}).get("cases")
    return f"bench: {bench.get('benchmark')} {parts} @ {origin} ({cases} cases)"


def spend_line(report: Report) -> str | None:
    """`spent $0.1500 of the --max-cost budget of $5.0000` (agent, judge and simulator); None without a budget."""
    budget = _summary(report).get("budget")
    if not isinstance(budget, dict) or not isinstance(budget.get("limit_usd"), (int, float)):
        return None
    spent = budget.get("spent_usd")
    shown = format_cost(spent) if isinstance(spent, (int, float)) else "an unknown amount"
    return f"spent {shown} of the --max-cost budget of {format_cost(budget['limit_usd'])} (agent, judge and simulator)"


def judge_line(report: Report) -> str | None:
    """"judge: <model>", saying so when it is the agent's own model; None when no judge was asked."""
    settings = report.get("settings") or {}
    model = settings.get("judge_model")
    used = (_summary(report).get("judge") or {})
    if not settings.get("judge", True) or not model or not any(used.get(k) for k in ("calls", "cache_hits")):
        return None
    if (settings.get("sources") or {}).get("judge_model") == "agent":
        return f"judge: {model} (the agent's model; set --judge-model for an independent judge)"
    return f"judge: {model}"


def unpriced_models(report: Report) -> list[str]:
    """The models of settings.prices that neither the suite nor genai-prices prices."""
    prices = (report.get("settings") or {}).get("prices")
    return [m for m, source in prices.items() if source is None] if isinstance(prices, dict) else []


def cost_text(report: Report, value: float | None) -> str:
    """A cost, or why it is n/a: a model without a price."""
    if value is None and unpriced_models(report):
        return f"{NA} (no price for {', '.join(unpriced_models(report))})"
    if value is None and invalid_usage_of(report)["runs"]:
        return f"{NA} (invalid token counts)"
    return format_cost(value)


def figure_text(report: Report, metric: SuiteMetric) -> str:
    """A headline figure in its row's format; a null per-success figure says `no successes` when no run
    succeeded, and a null amount of money says why (a model without a price, invalid token counts)."""
    value = _summary(report).get(metric.name)
    if value is None and metric.statistic.kind == "per_success" and count_successes(report) == 0:
        return NO_SUCCESSES
    if metric.fmt == "usd":
        return cost_text(report, value)
    return format_metric(metric.name, value)


def _shown(*sections: str) -> list[SuiteMetric]:
    return [m for m in in_section(*sections) if m.in_terminal]


def outcome_rows(report: Report) -> list[tuple[str, str]]:
    """The Outcome dimension: the outcome rows (the lead with its interval; the figures at K only when
    K > 1, where they are not pass@1 again; the pass^k curve last), then case and run counts."""
    s = _summary(report)
    k = _repeat(report)
    rows = []
    shown = [m for m in _shown("outcome") if not (m.at_k and k == 1)]
    for m in shown:
        if m.per_k:
            continue
        text = rate_with_interval(report, m.name) if m.lead and m.interval else figure_text(report, m)
        rows.append((m.label_at(k), text))
    for m in shown:  # a figure per k is drawn as a curve, after the numbers
        per_k = s.get(m.name) if m.per_k else None
        if isinstance(per_k, dict) and len(per_k) > 1:
            rows.append((m.label_at(k), curve_text(per_k)))
    count = {key: format_count(s.get(f"cases_{key}")) for key in ("passed", "failed", "skipped", "errored")}
    rows.append(("cases", f"{count['passed']} passed, {count['failed']} failed"))
    rows.append(("", f"{count['skipped']} skipped, {count['errored']} errored"))
    if s.get("cases_not_run"):
        rows.append(("", f"{format_count(s['cases_not_run'])} not run"))
    runs = f"{format_count(s.get('runs'))}"
    if s.get("runs_errored"):
        runs += f" (+{format_count(s['runs_errored'])} errored)"
    rows.append(("runs", runs))
    return rows


def trajectory_rows(report: Report) -> list[tuple[str, str]]:
    """The Trajectory dimension: the suite means and rates of docs/metrics.md."""
    return [(m.label, figure_text(report, m)) for m in _shown("trajectory")]


def cost_latency_rows(report: Report) -> list[tuple[str, str]]:
    """The Cost & latency dimension: the cost rows, the latency rows, then the rate-limited endpoints."""
    return [*((m.label, figure_text(report, m)) for m in _shown("cost", "latency")), *provider_rows(report)]


def provider_rows(report: Report) -> list[tuple[str, str]]:
    """One row per endpoint that was rate limited: "429 x 731, waited 84 s, concurrency 50 -> 9"."""
    ceiling = (report.get("settings") or {}).get("concurrency")
    rows = []
    for entry in _summary(report).get("provider") or ():
        if not isinstance(entry, dict) or not entry.get("rate_limited"):
            continue
        waited = float(entry.get("retry_wait_s") or 0.0)
        shown = f"{waited:.0f}" if waited >= 10 else f"{waited:.1f}"
        line = f"429 x {entry['rate_limited']}, waited {shown} s"
        if ceiling is not None and entry.get("min_concurrency") is not None:
            line += f", concurrency {ceiling} -> {entry['min_concurrency']}"
        role = entry.get("role")
        rows.append(("provider" if role == "agent" else f"provider ({role})", line))
    return rows


def render_headline(report: Report, console: Console) -> None:
    """The three headline dimensions side by side."""
    console.print()
    _print_dimensions(console, [
        _dimension_table(SECTION_TITLES["outcome"], outcome_rows(report)),
        _dimension_table(SECTION_TITLES["trajectory"], trajectory_rows(report)),
        _dimension_table(SECTION_TITLES["cost"], cost_latency_rows(report)),
    ])


def escalation_counts(report: Report) -> tuple[int, int, int]:
    """(escalated runs, of them in `authorized: false` cases, runs of such cases); errored runs left out."""
    escalated = unauthorized = escalated_unauthorized = 0
    for case in report.get("cases") or []:
        for run in case.get("runs") or []:
            if run.get("status") == "error":
                continue
            is_unauthorized = (run.get("metrics") or {}).get("blocked_correctly") is not None
            escalated += bool(run.get("escalated"))
            unauthorized += is_unauthorized
            escalated_unauthorized += bool(run.get("escalated")) and is_unauthorized
    return escalated, escalated_unauthorized, unauthorized


def render_safety(report: Report, console: Console) -> None:
    """The Safety dimension with escalation counts; nothing when no run qualified."""
    s = _summary(report)
    escalated, escalated_unauthorized, unauthorized = escalation_counts(report)
    shown = _shown("safety")
    if all(s.get(m.name) is None for m in shown) and not escalated:
        return
    rows = [(m.label, figure_text(report, m)) for m in shown]
    text = f"{escalated} run(s)"
    if unauthorized:
        text += f", {escalated_unauthorized} of {unauthorized} unauthorized"
    rows.append(("escalated", text))
    console.print()
    _print_dimensions(console, [_dimension_table(SECTION_TITLES["safety"], rows)])


def verdict_text(report: Report) -> Text:
    """One line: the exit code and what caused it for this run (report/verdict.py)."""
    word, code, meaning = verdict_parts(report)
    line = Text()
    line.append(f"{word} ", style=f"bold {_STYLES.get(word, 'bold')}")
    line.append(f"(exit {code}): {meaning}")
    return line


def render_verdict(report: Report, console: Console) -> None:
    """The closing one-line verdict."""
    console.print()
    console.print(verdict_text(report))


# Order of the report. Hooks for later sections go between the cases and the verdict, e.g.
# render_judge (summary.judge), render_scorers (summary.scorers), render_gate (report["gate"]),
# render_dialogue (trace user_messages/replies of scenario runs).
def render_gate_section(report: Report, console: Console) -> None:
    """The regression gate table, when the run had a baseline."""
    if gate := report.get("gate"):
        from agent_eval.report.gate_table import render_gate

        console.print()
        render_gate(gate, console)


SECTIONS: list[SectionRenderer] = [
    render_header,
    render_headline,
    render_safety,
    render_intervals,
    render_added_metrics,
    render_metric_errors,
    render_curve,
    render_cases,
    render_flaky,
    render_failed_checks,
    render_dialogue,
    render_judge,
    render_scorers,
    render_gate_section,
    render_verdict,
]


# The sections -v changes.
VERBOSE_SECTIONS = (render_intervals, render_added_metrics, render_curve, render_cases, render_failed_checks)


def render_report(report: Report, console: Console, verbose: bool = False) -> None:
    """Print the whole terminal report of a JSON report dict; `verbose` is -v."""
    for section in SECTIONS:
        if section in VERBOSE_SECTIONS:
            section(report, console, verbose=verbose)
        else:
            section(report, console)


def tape_line(settings: Mapping[str, Any]) -> str | None:
    """The header's line of a replayed or recorded run (the terminal's and the page's), else None."""
    if settings.get("replay"):
        return (f"replaying {settings['replay']} (recorded {settings.get('replay_recorded_at') or NA}, "
                f"model {settings.get('replay_model') or NA})")
    if settings.get("record"):
        return f"recording to {settings['record']}"
    return None
