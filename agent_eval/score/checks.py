"""The deterministic checks (docs/reference.md#checks): trajectory, env assertions, expected_env and output (`expect`).

Every check is a small pure function; tables map a name to its function, so adding a check is one
function and one row. A check entry is `{"name", "passed", "detail"}`.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_eval.score.env_checks import env_checks, expected_env_checks
from agent_eval.score.envdiff import show_json as _show
from agent_eval.score.matchers import compile_regex, match_call, max_matching
from agent_eval.score.grounding import assess
from agent_eval.score.safety import authorization_checks, policy_checks, safety_of

Verdict = tuple[bool, str]


def _show_call(name: Any, args: Any) -> str:
    return f"{name}({_show(args, 120)})" if args not in (None, {}) else f"{name}()"


def _check(name: str, verdict: Verdict) -> dict:
    return {"name": name, "passed": verdict[0], "detail": verdict[1]}


# ---------------------------------------------------------------- trajectory


def _names(steps: list[dict]) -> str:
    return "[" + ", ".join(str(step.get("name")) for step in steps) + "]"


def _uncovered_detail(expected: list[dict], steps: list[dict], pairing: list[int | None]) -> str:
    parts = []
    for exp, j in zip(expected, pairing, strict=True):
        if j is not None:
            continue
        same_name = [s.get("args") for s in steps if s.get("name") == exp.get("name")]
        seen = f"; calls of it had args {', '.join(_show(a, 80) for a in same_name[:3])}" if same_name else ""
        parts.append(_show_call(exp.get("name"), exp.get("args")) + seen)
    return f"expected calls not covered: {'; '.join(parts)}. Actual calls: {_names(steps)}"


def _covers_expected(expected: list[dict], steps: list[dict]) -> Verdict:
    pairing = max_matching(expected, steps)
    if all(j is not None for j in pairing):
        return True, f"all {len(expected)} expected calls matched among {len(steps)} calls"
    return False, _uncovered_detail(expected, steps, pairing)


def _strict(expected: list[dict], steps: list[dict]) -> Verdict:
    if len(expected) != len(steps):
        return False, (
            f"expected {len(expected)} calls in order {_names(expected)}, "
            f"got {len(steps)}: {_names(steps)}"
        )
    for index, (exp, step) in enumerate(zip(expected, steps, strict=True)):
        if not match_call(exp, step):
            return False, (
                f"step {index}: expected {_show_call(exp.get('name'), exp.get('args'))}, "
                f"got {_show_call(step.get('name'), step.get('args'))}"
            )
    return True, f"all {len(steps)} calls matched in order"


def _subset(expected: list[dict], steps: list[dict]) -> Verdict:
    pairing = max_matching(expected, steps)
    used = {j for j in pairing if j is not None}
    extra = [i for i in range(len(steps)) if i not in used]
    if not extra:
        return True, f"all {len(steps)} calls are among the {len(expected)} expected calls"
    shown = "; ".join(
        f"step {i} {_show_call(steps[i].get('name'), steps[i].get('args'))}" for i in extra[:5]
    )
    return False, (
        f"{len(extra)} call(s) not allowed by expected_tools: {shown}. "
        f"Expected calls: {_names(expected)}"
    )


TRAJECTORY_MODES: dict[str, Callable[[list[dict], list[dict]], Verdict]] = {
    "unordered": _covers_expected,
    "superset": _covers_expected,
    "strict": _strict,
    "subset": _subset,
}


def check_trajectory(mode: str, expected: list[dict], steps: list[dict]) -> dict:
    """The `trajectory` check entry: the run's calls against expected_tools in this mode."""
    judge = TRAJECTORY_MODES.get(mode)
    if judge is None:
        return _check("trajectory", (False, f"unknown trajectory mode {mode!r}"))
    passed, detail = judge(expected, steps)
    return _check("trajectory", (passed, f"{mode}: {detail}"))


# ---------------------------------------------------------------- output (`expect`)


def _items(value: Any) -> list:
    return value if isinstance(value, list) else [value]


def _answer(trace: dict) -> str:
    return trace.get("final_answer") or ""


def _quote(answer: str) -> str:
    return _show(answer, 160)


def _text_check(fold: bool, forbid: bool) -> Callable[[Any, dict, dict], Verdict]:
    """The contains family: every item must be in the reply (or, with forbid, none may be)."""
    how = " (ignoring case)" if fold else ""

    def check(value: Any, trace: dict, case: dict) -> Verdict:
        answer = _answer(trace)
        haystack = answer.casefold() if fold else answer
        found = [s for s in _items(value) if (str(s).casefold() if fold else str(s)) in haystack]
        if forbid and found:
            return False, f"reply contains forbidden{how} {_show(found)}; reply: {_quote(answer)}"
        missing = [s for s in _items(value) if s not in found]
        if not forbid and missing:
            return False, f"reply lacks{how} {_show(missing)}; reply: {_quote(answer)}"
        return True, f"reply contains{how} {'none of ' if forbid else ''}{_show(value)}"

    return check


def _expect_regex(value: Any, trace: dict, case: dict) -> Verdict:
    answer = _answer(trace)
    for pattern in _items(value):
        compiled = compile_regex(pattern) if isinstance(pattern, str) else None
        if compiled is None:
            return False, f"{_show(pattern)} is not a valid regular expression"
        if compiled.search(answer) is None:
            return False, f"no match for regex {_show(pattern)} in reply: {_quote(answer)}"
    return True, f"reply matches {_show(value)}"


def _card_types(trace: dict) -> list:
    return [card.get("type") for card in trace.get("cards") or () if isinstance(card, dict)]


def _card_check(forbid: bool) -> Callable[[Any, dict, dict], Verdict]:
    """has_card (every type returned) or, with forbid, no_card (none of them returned)."""

    def check(value: Any, trace: dict, case: dict) -> Verdict:
        types = _card_types(trace)
        bad = [t for t in _items(value) if (t in types) == forbid]
        if bad:
            problem = "forbidden card type(s) returned" if forbid else "missing card type(s)"
            return False, f"{problem} {_show(bad)}; returned card types: {_show(types)}"
        return True, f"{'no card of' if forbid else 'cards include'} {_show(value)}"

    return check


def _expect_any_card(value: Any, trace: dict, case: dict) -> Verdict:
    types = _card_types(trace)
    hits = [t for t in _items(value) if t in types]
    if hits:
        return True, f"card {_show(hits[0])} returned"
    return False, f"expected one of card types {_show(value)}; returned card types: {_show(types)}"


def _expect_final_agent(value: Any, trace: dict, case: dict) -> Verdict:
    agent = trace.get("final_agent")
    if agent in _items(value):
        return True, f"final agent {_show(agent)}"
    return False, f"expected final agent {_show(value)}, found {_show(agent)}"


def _expect_forbidden_tools(value: Any, trace: dict, case: dict) -> Verdict:
    forbidden = _items(value)
    hits = [f"step {s.get('step', i)} {s.get('name')}"
            for i, s in enumerate(trace.get("steps") or ()) if s.get("name") in forbidden]
    if hits:
        return False, f"forbidden tool called: {', '.join(hits)}"
    return True, f"none of {_show(value)} called"


def _expect_max_tool_calls(value: Any, trace: dict, case: dict) -> Verdict:
    count = len(trace.get("steps") or ())
    limits = _items(value)
    if not all(isinstance(n, (int, float)) and not isinstance(n, bool) for n in limits):
        return False, f"max_tool_calls needs a number, got {_show(value)}"
    limit = min(limits) if limits else 0
    if count <= limit:
        return True, f"{count} call(s) <= {limit}"
    return False, f"{count} tool calls, more than the maximum of {limit}"



def _expect_grounded(value: Any, trace: dict, case: dict) -> Verdict:
    """`expect: {"grounded": true}`: every fact stated in the replies is supported by a source."""
    score, unsupported = assess(trace, safety_of(case)["system_prompt"])
    if score is None:
        return True, "the replies state no fact"
    if unsupported:
        return False, f"unsupported fact(s): {', '.join(unsupported[:10])} (groundedness {score:.3f})"
    return True, "every stated fact is supported by a tool output, a user message or the system prompt"


EXPECT_CHECKS: dict[str, Callable[[Any, dict, dict], Verdict]] = {
    "contains": _text_check(fold=False, forbid=False),
    "not_contains": _text_check(fold=False, forbid=True),
    "icontains": _text_check(fold=True, forbid=False),
    "not_icontains": _text_check(fold=True, forbid=True),
    "regex": _expect_regex,
    "has_card": _card_check(forbid=False),
    "any_card": _expect_any_card,
    "no_card": _card_check(forbid=True),
    "final_agent": _expect_final_agent,
    "forbidden_tools": _expect_forbidden_tools,
    "max_tool_calls": _expect_max_tool_calls,
    "grounded": _expect_grounded,
}
EXPECT_KEYS = EXPECT_CHECKS.keys()
"""The `expect` keys this version checks: a live view, so a row added to EXPECT_CHECKS shows here."""


# ---------------------------------------------------------------- the run


def _trajectory_checks(case: dict, trace: dict, final_env: Any, expected_env: Any) -> list[dict]:
    mode = case.get("trajectory")
    if not mode:
        return []
    return [check_trajectory(mode, case.get("expected_tools") or [], trace.get("steps") or [])]


def _expect_checks(case: dict, trace: dict, final_env: Any, expected_env: Any) -> list[dict]:
    expect = case.get("expect")
    out: list[dict] = []
    for key, value in (expect.items() if isinstance(expect, dict) else ()):
        check = EXPECT_CHECKS.get(key)
        if check is not None:
            out.append(_check(f"expect:{key}", check(value, trace, case)))
    return out


CheckFamily = Callable[[dict, dict, Any, Any], list[dict]]
CHECK_FAMILIES: list[CheckFamily] = [
    _trajectory_checks,
    env_checks,
    expected_env_checks,
    _expect_checks,
    authorization_checks,
    policy_checks,
]
"""The families of the check list, in its order; authorization and policy append their rows here."""


def check_run(case: dict, trace: dict, final_env: Any, expected_env: dict | None) -> list[dict]:
    """Every deterministic check entry of one run, in the order of the check list."""
    checks: list[dict] = []
    for family in CHECK_FAMILIES:
        checks.extend(family(case, trace, final_env, expected_env))
    return checks
