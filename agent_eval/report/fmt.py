"""Number and text formats shared by every report: one format per kind of value, and `format_value` for a
suite metric in its own units."""
from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import Any

NA = "n/a"
REASON_MAX_CHARS = 100

# Rates are fractions with three decimals (the units of the JSON report and of --gate MAX_DROP),
# money is dollars (format_cost), and seconds have 2-3 decimals.


def format_rate(value: float | None) -> str:
    """A rate in [0, 1] as `0.875`; null as `n/a`."""
    return NA if value is None else f"{value:.3f}"


def format_cost(value: float | None) -> str:
    """An amount of money in USD, the one format of every output (report.js's `usd` is its twin): `$` and 4
    decimals below $10 (`$0.0012`, `$8.6000`), 2 decimals with thousands separators from $10 (`$12.35`,
    `$1,234.50`), `<$0.0001` for a positive amount below that, never scientific notation; `-` before a
    negative amount; null (or a non-finite amount) as `n/a`. Ties round up, as JavaScript's toFixed does."""
    if value is None or not math.isfinite(value):  # a non-finite amount is null in the JSON report
        return NA
    if value < 0:
        return "-" + format_cost(-value)
    if 0 < value < 0.0001:
        return "<$0.0001"
    cents = _rounded(value, "0.0001")
    if cents < 10:
        return f"${cents}"
    return f"${_rounded(value, '0.01'):,}"


def _rounded(value: float, step: str) -> Decimal:
    """The exact binary value rounded half up to `step` (what toFixed does)."""
    # Precision for any finite float (up to 309 integer digits), so a huge amount never raises.
    return Decimal(value).quantize(Decimal(step), rounding=ROUND_HALF_UP, context=Context(prec=400))


def format_seconds(value: float | None) -> str:
    """A duration as `0.123s`, `1.23s`, `12.3s` or `123s`; null as `n/a`."""
    if value is None:
        return NA
    if value >= 100:
        return f"{value:.0f}s"
    if value >= 10:
        return f"{value:.1f}s"
    if value >= 1:
        return f"{value:.2f}s"
    return f"{value:.3f}s"


def format_count(value: float | None) -> str:
    """A count with thousands separators; null as `n/a`."""
    return NA if value is None else f"{round(value):,}"


def format_value(metric: str, value: Any, signed: bool = False) -> str:
    """A metric value in its row's units (fmt): $ for money, s for time, thousands for counts; n/a for null."""
    if value is None:
        return NA
    from agent_eval.score.metric_registry import SUITE_METRIC_BY_NAME

    sign = "+" if signed and value > 0 else ""
    row = SUITE_METRIC_BY_NAME.get(metric)
    # A row's format; a gate path that is no row (pass_hat.2, scorers.x.y.true_count) is a rate or a count.
    kind = row.fmt if row is not None else "count" if metric.rsplit(".", 1)[-1] == "true_count" else "rate"
    if kind == "usd":
        return sign + format_cost(value)
    if kind == "seconds":
        return f"{sign}{value:.2f}s"
    if kind == "count":
        return f"{sign}{value:,.0f}" if float(value).is_integer() else f"{sign}{value:,.1f}"
    return f"{sign}{value:.3f}"


def format_ci(metric: str, ci: list[float] | None) -> str:
    """The confidence interval of a delta as [lo, hi], or n/a."""
    if not ci:
        return NA
    return f"[{format_value(metric, ci[0], signed=True)}, {format_value(metric, ci[1], signed=True)}]"


def one_line(text: str) -> str:
    """The text on one line (runs of whitespace, newlines included, become one space); never cut."""
    return " ".join(str(text).split())


def trim(text: str, limit: int = REASON_MAX_CHARS) -> str:
    """One line of at most `limit` characters, ending in `…` when cut."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


# ---------------------------------------------------------------- reading the report


def format_metric(name: str, value: Any) -> str:
    """A summary figure in its row's display format (score/metric_registry.py), `n/a` for null."""
    from agent_eval.score.metric_registry import SUITE_METRIC_BY_NAME

    metric = SUITE_METRIC_BY_NAME.get(name)
    kind = metric.fmt if metric is not None else "number"
    if value is None or kind == "number":
        return NA if value is None else f"{value:.3f}"
    shown = {"rate": format_rate, "seconds": format_seconds, "count": format_count, "usd": format_cost}[kind]
    return shown(value)


def format_interval(name: str, ci: Any) -> str:
    """A figure's 95% interval as `[lo, hi]` in its format, or empty when it has none."""
    if not (isinstance(ci, list) and len(ci) == 2):
        return ""
    return f"[{format_metric(name, ci[0])}, {format_metric(name, ci[1])}]"
