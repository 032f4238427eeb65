"""A check's verdict, (passed, detail), and the check entry of the report it becomes."""
from __future__ import annotations

from agent_eval.records import Check

Verdict = tuple[bool, str]


def check_entry(name: str, verdict: Verdict) -> Check:
    """The report's check entry `{"name", "passed", "detail"}` of a verdict."""
    return {"name": name, "passed": verdict[0], "detail": verdict[1]}
