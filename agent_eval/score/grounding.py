"""Deterministic groundedness: facts by ASCII patterns, supported by what the agent saw.

Facts are taken in a fixed order, each pattern consuming the text it matched so a later pattern never
splits it: emails, ISO dates, id-like tokens, numbers (thousands separators removed). Numbers compare
by value, the others ignoring case. A run's facts are the distinct facts of all its replies.
"""
from __future__ import annotations

from agent_eval.records import Trace

import re
from decimal import Decimal
from functools import lru_cache
from typing import Any, NamedTuple

_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
_DATE = re.compile(r"(?<![0-9])[0-9]{4}-[0-9]{2}-[0-9]{2}(?![0-9])")
_ID_RUN = re.compile(r"[A-Za-z0-9_#-]+")
_LETTER = re.compile(r"[A-Za-z]")
_DIGIT = re.compile(r"[0-9]")
# A separated number needs whole groups of three; otherwise it is read as plain digit runs.
_NUMBER = re.compile(r"[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])(?:\.[0-9]+)?|[0-9]+(?:\.[0-9]+)?")


class Fact(NamedTuple):
    """One extracted fact: its kind, the text as written, and the key it is compared by."""

    kind: str  # "email" | "date" | "id" | "number"
    text: str
    key: Any  # lower-cased text, or the number's Decimal value

    def show(self) -> str:
        if self.kind == "number":
            return format(self.key.normalize(), "f")
        return self.text


def extract_facts(text: str) -> list[Fact]:
    """The facts of `text`, in the order they appear; each span belongs to one fact only."""
    if not text:
        return []
    found: list[tuple[int, Fact]] = []

    def take(kind: str, keep: Any = None) -> Any:
        def consume(match: re.Match[str]) -> str:
            value = match.group(0)
            if keep is not None and not keep(value):
                return value
            key = Decimal(value.replace(",", "")) if kind == "number" else value.lower()
            found.append((match.start(), Fact(kind, value, key)))
            return " " * len(value)  # same length, so later positions still sort in text order

        return consume

    rest = _EMAIL.sub(take("email"), text) if "@" in text else text
    rest = _DATE.sub(take("date"), rest)
    rest = _ID_RUN.sub(take("id", lambda v: _LETTER.search(v) and _DIGIT.search(v)), rest)
    _NUMBER.sub(take("number"), rest)
    found.sort(key=lambda pair: pair[0])
    return [fact for _, fact in found]


def fact_keys(text: str | None) -> set[Any]:
    """The comparison keys of the facts of `text`."""
    return {fact.key for fact in extract_facts(text or "")}


@lru_cache(maxsize=32)
def _prompt_keys(system_prompt: str) -> frozenset[Any]:
    # The system prompt is the same for every run of a suite: extract its facts once.
    return frozenset(fact_keys(system_prompt))


def _observations(trace: Trace) -> Any:
    """Each observation as the agent received it: the output, or the error text."""
    for step in trace.get("steps") or ():
        text = step.get("output")
        yield text if text is not None else step.get("error")


def assess(trace: Trace, system_prompt: str | None) -> tuple[float | None, list[str]]:
    """(groundedness, unsupported facts as written) of one run; (None, []) when no reply states a fact."""
    claimed: dict[Any, Fact] = {}
    for reply in trace.get("replies") or ():
        for fact in extract_facts(reply or ""):
            claimed.setdefault(fact.key, fact)
    if not claimed:
        return None, []
    missing = set(claimed)
    if system_prompt:
        missing -= _prompt_keys(system_prompt)
    sources = [*(trace.get("user_messages") or ()), *_observations(trace)]
    for text in sources:
        if not missing:
            break
        if text:
            missing -= fact_keys(text)
    unsupported = [fact.show() for key, fact in claimed.items() if key in missing]
    return (len(claimed) - len(missing)) / len(claimed), unsupported
