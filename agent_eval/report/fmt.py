"""Number and text formats shared by every terminal section: one format per kind of value."""
from __future__ import annotations

NA = "n/a"
REASON_MAX_CHARS = 100

# Rates are fractions with three decimals (the units of the JSON report and of --gate MAX_DROP),
# costs are dollars, and seconds have 2-3 decimals.


def format_rate(value: float | None) -> str:
    """A rate in [0, 1] as `0.875`; null as `n/a`."""
    return NA if value is None else f"{value:.3f}"


def format_cost(value: float | None) -> str:
    """A cost in USD as `$0.0012` (`$12.35` from one dollar up); null as `n/a`."""
    if value is None:
        return NA
    if value >= 1:
        return f"${value:,.2f}"
    if value == 0 or value >= 0.0001:
        return f"${value:.4f}"
    return f"${value:.1e}"  # four decimals would print a real, tiny cost as $0.0000


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


def trim(text: str, limit: int = REASON_MAX_CHARS) -> str:
    """One line of at most `limit` characters, ending in `…` when cut."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


# ---------------------------------------------------------------- reading the report
