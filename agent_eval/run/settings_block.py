"""The report's `settings` block of resolved settings: each shown row of the settings table at its `report`
place (where reports have always had it), with no key and no secret (a URL is shown with its secret
replaced by ***)."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_eval.flags import Setting, all_settings
from agent_eval.flags.rows import JUDGE_MODEL, LAST_FAILED, NO_JUDGE, RAY, RAY_ADDRESS, REPLAY, REPLAY_MISS, attach
from agent_eval.llm import redact_url
from agent_eval.redaction import redact_urls
from agent_eval.run.frozen import thawed

if TYPE_CHECKING:
    from agent_eval.run.config import Settings


def settings_block(cfg: Settings) -> dict[str, Any]:
    """The block: each shown row of `run` (and the entries that are no row's value) by its `report` place, as
    reports have always had them; a row with none (a plugin's) after them, in the table's order."""
    entries = [(row.report, row.show or _shown(row)) for row in all_settings()
               if "run" in row.commands and (row.shown != "hidden" or row.report is not None)]
    block: dict[str, Any] = {}
    for _, show in sorted([*entries, *_OWN], key=lambda entry: _LAST if entry[0] is None else entry[0]):
        block.update(show(cfg))
    return block


_LAST = 1 << 30
Show = Callable[["Settings"], Mapping[str, Any]]


def _shown(row: Setting[Any]) -> Show:
    return lambda cfg: {row.key: _show(row, not cfg.get(row.name) if row.negated else cfg.get(row.name))}


# The rows shown otherwise than as their value, and (`_OWN`) the entries that are no row's value, with their places.
attach(JUDGE_MODEL, show=lambda c: {"judge_model": None if c[NO_JUDGE] else c[JUDGE_MODEL]})
attach(LAST_FAILED, show=lambda c: {"last_failed": thawed(c.last_failed)})
attach(RAY, show=lambda c: {"ray": redact_urls(c[RAY_ADDRESS] or "local") if c[RAY] else None})
attach(REPLAY_MISS, show=lambda c: {"replay_miss": c[REPLAY_MISS], "replay_recorded_at": (c.recorded or {}).get(
    "created_at"), "replay_model": (c.recorded or {}).get("model")} if c[REPLAY] else {})
_OWN: list[tuple[int | None, Show]] = [
    (6, lambda c: {"judge_base_url": None if c[NO_JUDGE] else redact_url(c.judge_base_url)}),
    (16, lambda c: {"sources": thawed(c.sources)}),
    (18, lambda c: {"scored_from": thawed(c.source)} if c.source else {}),
]


def _show(row: Setting[Any], value: Any) -> Any:
    if isinstance(value, (list, tuple)):  # a repeatable flag's values
        return [_show(row, v) for v in value]
    value = thawed(value)  # a (frozen) mapping as the dict it was given as
    if value is None or row.shown == "value":
        return str(value) if isinstance(value, Path) else value  # a path as text, as JSON holds it
    if row.shown == "url":
        return redact_url(value)
    return redact_urls(value) if row.shown == "urls" else str(value)
