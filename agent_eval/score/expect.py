"""The output checks of a case's `expect` block: one row per key, holding its check and its validation.

Adding an `expect` key is one function and one row of EXPECT_CHECKS here: the check runs on every
case that has the key, and case validation (suite/validation.py) reads the row's `validate` to reject
a bad value with exit 2; nothing else changes (docs/architecture.md).
"""
from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent_eval.records import Case, Check, Trace
from agent_eval.plugins import claim
from agent_eval.plugins.calls import once, per_run
from agent_eval.score.envdiff import show_json as _show
from agent_eval.score.grounding import assess
from agent_eval.score.matchers import RegexTimeout, compile_regex, regex_matches
from agent_eval.score.safety import safety_of
from agent_eval.score.verdict import Verdict, check_entry

ExpectCheck = Callable[[Any, Trace, Case], Verdict]


@dataclass(frozen=True)
class ExpectKey:
    """One `expect` key: `check(value, trace, case)` gives its verdict; `validate(value)` lists what is
    wrong with a value in the case file (messages with the fix), empty when it is fine."""

    check: ExpectCheck
    validate: Callable[[Any], list[str]] = lambda value: []

    def __call__(self, value: Any, trace: Trace, case: Case) -> Verdict:
        return self.check(value, trace, case)


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _texts(trace: Trace, case: Case) -> list[str]:
    """What the text checks read: the last reply, or with `replies: "any"` every assistant text of the run
    (text sent beside tool calls included); `strip`'s characters removed from each."""
    expect = case.get("expect") or {}
    if expect.get("replies") == "any":
        kept = trace.get("assistant_texts")
        texts = list(kept) if kept is not None else [r for r in trace.get("replies") or () if r]
    else:
        texts = [trace.get("final_answer") or ""]
    strip = expect.get("strip")
    if strip:
        table = str.maketrans("", "", "".join(strip))
        texts = [text.translate(table) for text in texts]
    return texts


def _shown(texts: list[str]) -> str:
    if len(texts) == 1:
        return f"reply: {_show(texts[0], 160)}"
    return f"{len(texts)} replies: {_show(texts, 240)}"


def _text_check(fold: bool, forbid: bool) -> ExpectCheck:
    """The contains family: every item must be in the reply (or, with forbid, none may be)."""
    how = " (ignoring case)" if fold else ""

    def check(value: Any, trace: Trace, case: Case) -> Verdict:
        texts = _texts(trace, case)
        haystacks = [text.casefold() for text in texts] if fold else texts
        found = [s for s in _items(value)
                 if any((str(s).casefold() if fold else str(s)) in haystack for haystack in haystacks)]
        if forbid and found:
            return False, f"reply contains forbidden{how} {_show(found)}; {_shown(texts)}"
        missing = [s for s in _items(value) if s not in found]
        if not forbid and missing:
            return False, f"reply lacks{how} {_show(missing)}; {_shown(texts)}"
        return True, f"reply contains{how} {'none of ' if forbid else ''}{_show(value)}"

    return check


def _expect_regex(value: Any, trace: Trace, case: Case) -> Verdict:
    texts = _texts(trace, case)
    for pattern in _items(value):
        compiled = compile_regex(pattern) if isinstance(pattern, str) else None
        if compiled is None:
            return False, f"{_show(pattern)} is not a valid regular expression"
        try:
            if not any(regex_matches(pattern, text) for text in texts):
                return False, f"no match for regex {_show(pattern)} in {_shown(texts)}"
        except RegexTimeout as exc:
            return False, str(exc)
    return True, f"reply matches {_show(value)}"


def _card_types(trace: Trace) -> list[Any]:
    return [card.get("type") for card in trace.get("cards") or () if isinstance(card, dict)]


def _card_check(forbid: bool) -> ExpectCheck:
    """has_card (every type returned) or, with forbid, no_card (none of them returned)."""

    def check(value: Any, trace: Trace, case: Case) -> Verdict:
        types = _card_types(trace)
        bad = [t for t in _items(value) if (t in types) == forbid]
        if bad:
            problem = "forbidden card type(s) returned" if forbid else "missing card type(s)"
            return False, f"{problem} {_show(bad)}; returned card types: {_show(types)}"
        return True, f"{'no card of' if forbid else 'cards include'} {_show(value)}"

    return check


def _expect_any_card(value: Any, trace: Trace, case: Case) -> Verdict:
    types = _card_types(trace)
    hits = [t for t in _items(value) if t in types]
    if hits:
        return True, f"card {_show(hits[0])} returned"
    return False, f"expected one of card types {_show(value)}; returned card types: {_show(types)}"


def _expect_final_agent(value: Any, trace: Trace, case: Case) -> Verdict:
    agent = trace.get("final_agent")
    if agent in _items(value):
        return True, f"final agent {_show(agent)}"
    return False, f"expected final agent {_show(value)}, found {_show(agent)}"


def _expect_forbidden_tools(value: Any, trace: Trace, case: Case) -> Verdict:
    forbidden = _items(value)
    hits = [f"step {s.get('step', i)} {s.get('name')}"
            for i, s in enumerate(trace.get("steps") or ()) if s.get("name") in forbidden]
    if hits:
        return False, f"forbidden tool called: {', '.join(hits)}"
    return True, f"none of {_show(value)} called"


def _expect_max_tool_calls(value: Any, trace: Trace, case: Case) -> Verdict:
    count = len(trace.get("steps") or ())
    limits = _items(value)
    if not all(isinstance(n, (int, float)) and not isinstance(n, bool) for n in limits):
        return False, f"max_tool_calls needs a number, got {_show(value)}"
    limit = min(limits) if limits else 0
    if count <= limit:
        return True, f"{count} call(s) <= {limit}"
    return False, f"{count} tool calls, more than the maximum of {limit}"


def _expect_grounded(value: Any, trace: Trace, case: Case) -> Verdict:
    """`expect: {"grounded": true}`: every fact stated in the replies is supported by a source."""
    score, unsupported = assess(trace, safety_of(case)["system_prompt"])
    if score is None:
        return True, "the replies state no fact"
    if unsupported:
        return False, f"unsupported fact(s): {', '.join(unsupported[:10])} (groundedness {score:.3f})"
    return True, "every stated fact is supported by a tool output, a user message or the system prompt"


def _whole_number(value: Any) -> list[str]:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return ["must be a whole number >= 0"]
    return []


def _only_true(value: Any) -> list[str]:
    if value is not True:
        return ["must be true (every stated fact must be supported); remove the key to not check"]
    return []


def _regexes(value: Any) -> list[str]:
    out = []
    for pattern in value if isinstance(value, list) else [value]:
        try:
            re.compile(pattern)
        except (re.error, TypeError) as exc:
            out.append(f"invalid regular expression {pattern!r}: {exc}")
    return out


def _replies(value: Any) -> list[str]:
    if value not in ("last", "any"):
        return ["must be \"last\" (the reply to the last user message, the default) or \"any\" (every "
                "assistant text of the run)"]
    return []


def _strip(value: Any) -> list[str]:
    if not isinstance(value, list) or not value or not all(isinstance(c, str) and len(c) == 1 for c in value):
        return ["must be a non-empty list of single characters, removed from the reply before matching "
                "(e.g. [\",\"])"]
    return []


EXPECT_CHECKS: dict[str, ExpectKey] = {
    "contains": ExpectKey(_text_check(fold=False, forbid=False)),
    "not_contains": ExpectKey(_text_check(fold=False, forbid=True)),
    "icontains": ExpectKey(_text_check(fold=True, forbid=False)),
    "not_icontains": ExpectKey(_text_check(fold=True, forbid=True)),
    "regex": ExpectKey(_expect_regex, _regexes),
    "has_card": ExpectKey(_card_check(forbid=False)),
    "any_card": ExpectKey(_expect_any_card),
    "no_card": ExpectKey(_card_check(forbid=True)),
    "final_agent": ExpectKey(_expect_final_agent),
    "forbidden_tools": ExpectKey(_expect_forbidden_tools),
    "max_tool_calls": ExpectKey(_expect_max_tool_calls, _whole_number),
    "grounded": ExpectKey(_expect_grounded, _only_true),
}
MODIFIERS: dict[str, Callable[[Any], list[str]]] = {"replies": _replies, "strip": _strip}
"""Keys that change how the text checks read the replies, and are no check of their own."""
EXPECT_KEYS = EXPECT_CHECKS.keys()
"""The `expect` keys this version checks: a live view, so a row added to EXPECT_CHECKS shows here."""


_BUILT_IN_KEYS = frozenset(EXPECT_CHECKS) | MODIFIERS.keys()


def register_expect_key(name: str, key: ExpectKey) -> None:
    """Add the `expect` key `name`; a name another module registered is a ConfigError naming both. Its code
    goes through the guard: a `check` that raises fails `expect:NAME` with a detail naming the plugin and
    the exception; a `validate` that raises is exit 2 naming them."""
    owner = claim("expect key", name, _BUILT_IN_KEYS, __name__)

    def failed(message: str) -> Verdict:
        return False, message

    EXPECT_CHECKS[name] = ExpectKey(per_run("expect key", name, owner, key.check, failed),
                                    once("expect key", name, owner, key.validate))


def validate_expect(expect: dict[str, Any]) -> list[tuple[str, str]]:
    """Every problem of a case's `expect` block, as (field, message with the fix)."""
    problems = []
    if expect and all(key in MODIFIERS for key in expect):
        problems.append(("expect", f"{' and '.join(expect)} only say how the text checks read the replies; add "
                                   "a check (contains, icontains, regex, ...) or remove the expect block"))
    for key, value in expect.items():
        if key in MODIFIERS:
            problems.extend((f"expect.{key}", message) for message in MODIFIERS[key](value))
            continue
        row = EXPECT_CHECKS.get(key)
        if row is None:
            known = sorted({*EXPECT_KEYS, *MODIFIERS})
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.75)
            hint = f"did you mean `{close[0]}`?" if close else f"use one of {', '.join(known)}"
            problems.append((f"expect.{key}", f"unknown expect key; {hint}"))
            continue
        problems.extend((f"expect.{key}", message) for message in row.validate(value))
    return problems


def expect_checks(case: Case, trace: Trace, final_env: Any, expected_env: Any) -> list[Check]:
    """One entry per `expect` key of the case that this version checks (validation rejects the others)."""
    expect = case.get("expect")
    out: list[Check] = []
    for key, value in (expect.items() if isinstance(expect, dict) else ()):
        row = EXPECT_CHECKS.get(key)
        if row is not None:
            out.append(check_entry(f"expect:{key}", row.check(value, trace, case)))
    return out
