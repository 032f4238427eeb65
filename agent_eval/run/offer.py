"""The tools a case offers the agent: the case's `tools` (default every suite tool), plus `tools_added` from
the user turn that adds them. A call of a tool added at a later turn still runs (as BFCL's executor runs it)
and is recorded as `not_yet_offered`; a name outside both lists is an unknown tool."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_eval.records import Case

if TYPE_CHECKING:
    from agent_eval.suite.tools import ToolSet


@dataclass(frozen=True)
class Offer:
    """Which tools a case may call, and which of them the agent has been shown at a turn."""

    allowed: frozenset[str]  # every tool the case names (in `tools` or `tools_added`)
    base: frozenset[str]  # offered from the first turn
    added: tuple[tuple[int, frozenset[str]], ...]  # (turn, names) in turn order

    def offered_at(self, turn: int) -> frozenset[str]:
        """The names offered at user turn `turn` (0-based)."""
        names = self.base
        for at, more in self.added:
            if at <= turn:
                names = names | more
        return names

    def schemas_at(self, tools: ToolSet, turn: int) -> list[dict[str, Any]]:
        """The schemas the agent sees at `turn`, in the suite's order."""
        names = self.offered_at(turn)
        return [schema for schema in tools.schemas if schema["function"]["name"] in names]


def offer_of(case: Case, tools: ToolSet) -> Offer | None:
    """The case's offer, or None when it offers every suite tool from the start (no `tools`, no `tools_added`)."""
    listed, added = case.get("tools"), case.get("tools_added")
    if listed is None and not added:
        return None
    later = {int(turn): frozenset(names) for turn, names in (added or {}).items()}
    named_later = frozenset().union(*later.values()) if later else frozenset()
    base = frozenset(listed) if listed is not None else frozenset(tools.names) - named_later
    return Offer(base | named_later, base, tuple(sorted(later.items())))
