"""Validation of a case's simulated-user fields and of the suite's `user` block (exit 2 with the fix)."""
from __future__ import annotations

from agent_eval.records import Case

from collections.abc import Mapping
from typing import Any

SCENARIO_ONLY_FIELDS = ("user_description", "max_turns")
USER_BLOCK_KEYS = ("agent", "model")


def validate_scenario_fields(case: Case) -> list[tuple[str, str]]:
    """Problems of a case's simulated-user fields, as (field, message with the fix)."""
    problems = []
    if "scenario" in case and (not isinstance(case["scenario"], str) or not case["scenario"].strip()):
        problems.append(("scenario", "must be a non-empty string: who the user is, what they want and what "
                                     "they know"))
    for name in ("user_description", "expected_outcome"):
        if case.get(name) is not None and not isinstance(case[name], str):
            problems.append((name, "must be a string"))
    turns = case.get("max_turns")
    if turns is not None and (isinstance(turns, bool) or not isinstance(turns, int) or turns < 1):
        problems.append(("max_turns", "must be a whole number >= 1 (the default is 10)"))
    if case.get("scenario") is None:
        for name in SCENARIO_ONLY_FIELDS:
            if case.get(name) is not None:
                problems.append((name, f"{name} only applies to a simulated user; add a \"scenario\" or "
                                       "remove it"))
    return problems


def validate_user_block(block: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Problems of the suite's `user` block, as (field, message with the fix)."""
    if "user" not in block or block["user"] is None:
        return []
    user = block["user"]
    if not isinstance(user, dict):
        return [("suite.user",
                 "must be an object: {\"agent\": \"file.py:function\"} or {\"model\": \"NAME\"}")]
    problems = [(f"suite.user.{key}", f"unknown key; use {' or '.join(USER_BLOCK_KEYS)}")
                for key in user if key not in USER_BLOCK_KEYS]
    given = [key for key in USER_BLOCK_KEYS if user.get(key) is not None]
    for key in given:
        if not isinstance(user[key], str) or not user[key].strip():
            problems.append((f"suite.user.{key}", "must be a non-empty string"))
    if len(given) != 1:
        problems.append(("suite.user", "give exactly one of \"agent\" (a Python simulator SPEC) or \"model\" "
                                       "(an LLM simulator)"))
    return problems
