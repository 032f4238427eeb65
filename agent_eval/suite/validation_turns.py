"""Validation of the fields that speak of user turns and of the tools a case offers: `turn` in
`expected_tools`, `expected_env: "replay_per_turn"`, `expected_observations`, `tools`, `tools_added`,
`gold_reply`. Turns are the 0-based indices of `messages` (a `query` is turn 0); a `scenario` case has none."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_eval.records import Case
from agent_eval.score.matchers import is_literal
from agent_eval.suite.fields import did_you_mean

if TYPE_CHECKING:
    from agent_eval.suite.tools import ToolSet

Problems = list[tuple[str, str]]
SCENARIO_NOTE = ("a scenario case has no scripted turns (the gold agent plays every gold call in its first "
                 "turn); use \"messages\", or remove it")


def _turns(case: Case) -> int | None:
    """How many scripted user turns the case has; None for a scenario case."""
    if case.get("scenario") is not None:
        return None
    return len(case.get("messages") or []) or 1


def validate_turn_fields(case: Case, tools: ToolSet | None) -> Problems:
    """Every problem of the case's turn and tool-offer fields, as (field, message with the fix)."""
    n = _turns(case)
    problems: Problems = []
    problems.extend(_gold_turns(case, n))
    problems.extend(_replays(case, n))
    problems.extend(_offer(case, n, tools))
    errors = case.get("max_tool_errors")
    if errors is not None and (isinstance(errors, bool) or not isinstance(errors, int) or errors < 1):
        problems.append(("max_tool_errors", "must be a whole number >= 1: the run ends when its tool errors "
                                            "reach it"))
    reply = case.get("gold_reply")
    if reply is not None and not isinstance(reply, str) and not (
            isinstance(reply, list) and all(isinstance(r, str) for r in reply)):
        problems.append(("gold_reply", "must be a string, or a list of strings (one per user message)"))
    elif isinstance(reply, list):
        if case.get("messages") is None:
            problems.append(("gold_reply", "a list (one reply per user turn) needs \"messages\"; give one string"))
        elif len(reply) != n:
            problems.append(("gold_reply", f"holds {len(reply)} replies for {n} user messages; give one per "
                                           "message, or one string"))
    return problems


def _gold_turns(case: Case, n: int | None) -> Problems:
    calls = case.get("expected_tools") or []
    given = [i for i, call in enumerate(calls) if call.get("turn") is not None]
    if not given:
        return []
    if n is None:
        return [(f"expected_tools[{given[0]}].turn", f"`turn` needs scripted user turns: {SCENARIO_NOTE}")]
    problems: Problems = []
    missing = [i for i in range(len(calls)) if i not in given]
    if missing:
        problems.append((f"expected_tools[{missing[0]}].turn", "if one expected_tools entry has `turn`, all must; "
                         "add the 0-based index of the user message this call answers"))
    for i in given:
        if not 0 <= calls[i]["turn"] < n:
            problems.append((f"expected_tools[{i}].turn", f"must be between 0 and {n - 1} (the index of a user "
                             f"message; the case has {n})"))
    return problems


def _replays(case: Case, n: int | None) -> Problems:
    problems: Problems = []
    if case.get("expected_observations") not in (None, "replay"):
        problems.append(("expected_observations", "must be \"replay\" (each turn's gold observations must be "
                                                  "among those the run received)"))
    for name, value, what in (("expected_env", "replay_per_turn", "\"replay_per_turn\""),
                              ("expected_observations", "replay", "\"replay\"")):
        if case.get(name) != value:
            continue
        if n is None:
            problems.append((name, f"{what} checks each scripted user turn: {SCENARIO_NOTE}"))
        if case.get("expected_tools") is None:
            problems.append((name, f"{what} replays expected_tools; add expected_tools"))
        for i, call in enumerate(case.get("expected_tools") or []):
            if not is_literal(call.get("args") or {}):
                problems.append((f"expected_tools[{i}].args", f"{name} {what} needs literal args (no $ matchers)"))
    return problems


def _names(value: Any, where: str, tools: ToolSet | None) -> Problems:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return [(where, "must be a list of tool names")]
    problems: Problems = []
    known = tools.names if tools is not None else frozenset()
    for i, name in enumerate(value):
        if known and name not in known:
            problems.append((f"{where}[{i}]", f"no suite tool is named {name!r}{did_you_mean(name, known)}; the "
                             f"suite's tools are {', '.join(sorted(known))}"))
        elif name in value[:i]:
            problems.append((f"{where}[{i}]", f"{name!r} is listed twice; list it once"))
    return problems


def _offer(case: Case, n: int | None, tools: ToolSet | None) -> Problems:
    problems: Problems = []
    if case.get("tools") is not None:
        problems.extend(_names(case["tools"], "tools", tools))
    added = case.get("tools_added")
    if added is None:
        return problems
    if not isinstance(added, dict):
        return problems + [("tools_added", "must be an object {\"<turn>\": [tool names]}")]
    if case.get("messages") is None:
        return problems + [("tools_added", "tools added at a later user turn need \"messages\" (several user "
                                           "turns); list the tools in \"tools\" instead, or remove it")]
    assert n is not None
    seen: dict[str, str] = {}
    base = set(case.get("tools") or ())
    for key, names in added.items():
        where = f"tools_added.{key}"
        if not key.isdecimal() or not 1 <= int(key) <= n - 1:
            problems.append((where, f"a key is the 0-based index of a user message in \"messages\", from 1 to "
                                    f"{n - 1}, written as a string (\"1\")"))
        problems.extend(_names(names, where, tools))
        for name in names if isinstance(names, list) else ():
            if name in base:
                problems.append((where, f"{name!r} is in \"tools\" already (offered from the start); remove it "
                                        "from one of them"))
            elif name in seen:
                problems.append((where, f"{name!r} is added at turn {seen[name]} already; add it once"))
            seen.setdefault(name, key)
        if isinstance(names, list) and not names:
            problems.append((where, "adds no tool; list the tools offered from this turn on, or remove the key"))
    return problems
