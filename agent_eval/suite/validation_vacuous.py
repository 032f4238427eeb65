"""Checks that cannot fail are validation errors: an empty regex, an empty card or tool list, no call
expected under a trajectory mode that then passes anything."""
from __future__ import annotations

from agent_eval.records import Case

from typing import Any


def vacuous_checks(case: Case) -> list[tuple[str, str]]:
    """(field, message with the fix) for each check of the case that passes whatever the run does."""
    problems: list[tuple[str, str]] = []
    raw = case.get("expect")
    expect: dict[str, Any] = raw if isinstance(raw, dict) else {}
    pattern = expect.get("regex")
    if pattern == "" or pattern == [] or (isinstance(pattern, list) and "" in pattern):
        problems.append(("expect.regex", "an empty pattern matches every answer, so the check cannot fail; "
                         "give the text the answer must match, or remove expect.regex"))
    for key, what in (("has_card", "card types the run must return"), ("no_card", "card types it must not return"),
                      ("forbidden_tools", "tools the agent must not call")):
        if expect.get(key) == []:
            problems.append((f"expect.{key}", f"an empty list cannot fail; list the {what}, or remove expect.{key}"))
    mode = case.get("trajectory")
    if case.get("expected_tools") == [] and mode in ("unordered", "superset"):
        problems.append(("trajectory", f"expected_tools [] with trajectory {mode!r} passes any calls; use "
                         "\"trajectory\": \"subset\" for \"no call at all\""))
    return problems
