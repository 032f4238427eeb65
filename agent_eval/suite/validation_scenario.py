"""Validation of a case's simulated-user fields and of the suite's `user` block (exit 2 with the fix)."""
from __future__ import annotations

from agent_eval.records import Case

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent_eval.suite.fields import unknown_key_message

SCENARIO_ONLY_FIELDS = ("user_description", "max_turns")
USER_BLOCK_KEYS = ("agent", "model", "prompt", "stop_tokens")
SIMULATOR_KEYS = ("agent", "model")
PROMPT_FILE_SUFFIXES = (".txt", ".md")  # a `prompt` ending so is a file beside the case file, else the text


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


def validate_user_block(block: Mapping[str, Any], base_dir: Path | None = None) -> list[tuple[str, str]]:
    """Problems of the suite's `user` block, as (field, message with the fix)."""
    if "user" not in block or block["user"] is None:
        return []
    user = block["user"]
    if not isinstance(user, dict):
        return [("suite.user",
                 "must be an object: {\"agent\": \"file.py:function\"} or {\"model\": \"NAME\"}")]
    problems = [(f"suite.user.{key}", unknown_key_message(key, USER_BLOCK_KEYS, "key"))
                for key in user if key not in USER_BLOCK_KEYS]
    given = [key for key in SIMULATOR_KEYS if user.get(key) is not None]
    for key in (*given, *(["prompt"] if user.get("prompt") is not None else [])):
        if not isinstance(user[key], str) or not user[key].strip():
            problems.append((f"suite.user.{key}", "must be a non-empty string"))
    tokens = user.get("stop_tokens")
    if tokens is not None and (not isinstance(tokens, list) or not tokens
                               or not all(isinstance(t, str) and t.strip() for t in tokens)):
        problems.append(("suite.user.stop_tokens", "must be a non-empty list of non-empty strings: a simulated "
                                                   "user's message holding one ends the dialogue"))
    if isinstance(user.get("prompt"), str) and base_dir is not None:
        try:
            prompt_text(user["prompt"], base_dir)
        except OSError as exc:
            problems.append(("suite.user.prompt", f"cannot read {base_dir / user['prompt']}: {exc.strerror or exc}; "
                                                  "fix the path (relative to the case file), or give the text"))
    if len(given) > 1 or not (given or set(user) & {"prompt", "stop_tokens"}):
        problems.append(("suite.user", "give exactly one of \"agent\" (a Python simulator SPEC) or \"model\" "
                                       "(an LLM simulator)"))
    return problems


def prompt_text(prompt: str, base_dir: Path) -> str:
    """The user block's `prompt`: read from the file it names when it ends in .txt or .md, else the text itself;
    OSError when the file cannot be read."""
    if prompt.strip().endswith(PROMPT_FILE_SUFFIXES) and "\n" not in prompt:
        return (base_dir / prompt.strip()).read_text(encoding="utf-8")
    return prompt
