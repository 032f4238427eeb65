"""The report's `settings` block of resolved settings: each shown row of the settings table, in the order
reports have always had, with no key and no secret (a URL is shown with its secret replaced by ***)."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_eval.flags import Setting, all_settings
from agent_eval.flags.rows import JUDGE_MODEL, NO_JUDGE, RAY, RAY_ADDRESS, REPLAY, REPLAY_MISS
from agent_eval.llm import redact_url
from agent_eval.redaction import redact_urls

if TYPE_CHECKING:
    from agent_eval.run.config import Settings


def settings_block(cfg: Settings) -> dict[str, Any]:
    """The block: REPORT_ORDER's keys first, then each other shown row of `run` in the table's order."""
    rows = {row.key: row for row in all_settings() if "run" in row.commands and row.shown != "hidden"}
    shown: dict[str, Any] = {}
    for key in (*REPORT_ORDER, *(key for key in rows if key not in REPORT_ORDER)):
        if key in _SHOWN:
            shown.update(_SHOWN[key](cfg))
        else:
            row = rows[key]
            value = cfg.get(row.name)
            shown[key] = _show(row, not value if row.negated else value)
    return shown


# The report's settings block, in the order reports have always had; a shown row not named here follows
# them in the table's order (a plugin's last). `_SHOWN` writes the entries that are not one row's value.
REPORT_ORDER = ("repeat", "threshold", "filter", "judge", "judge_model", "judge_base_url", "no_cache", "concurrency",
                "max_steps", "timeout", "judge_timeout", "base_url", "user", "agent", "model", "sources",
                "last_failed", "scored_from", "workers", "ray", "otel", "otlp_endpoint", "rate_limit",
                "judge_rate_limit", "retry_budget", "max_cost", "record", "replay", "replay_miss")

_SHOWN: dict[str, Callable[[Settings], dict[str, Any]]] = {
    "judge_model": lambda c: {"judge_model": None if c[NO_JUDGE] else c[JUDGE_MODEL]},
    "judge_base_url": lambda c: {"judge_base_url": None if c[NO_JUDGE] else redact_url(c.judge_base_url)},
    "sources": lambda c: {"sources": dict(c.sources)},
    "last_failed": lambda c: {"last_failed": c.last_failed},
    "scored_from": lambda c: {"scored_from": c.source} if c.source else {},
    "ray": lambda c: {"ray": redact_urls(c[RAY_ADDRESS] or "local") if c[RAY] else None},
    "replay_miss": lambda c: {"replay_miss": c[REPLAY_MISS], "replay_recorded_at": (c.recorded or {}).get("created_at"),
                              "replay_model": (c.recorded or {}).get("model")} if c[REPLAY] else {},
}


def _show(row: Setting[Any], value: Any) -> Any:
    if isinstance(value, (list, tuple)):  # a repeatable flag's values
        return [_show(row, v) for v in value]
    if value is None or row.shown == "value":
        return str(value) if isinstance(value, Path) else value  # a path as text, as JSON holds it
    if row.shown == "url":
        return redact_url(value)
    return redact_urls(value) if row.shown == "urls" else str(value)
