"""Scenario cases: their fields, the suite's `user` block, and which simulator plays the user.

The simulator comes from the first source that sets one: the flags (`--user SPEC` or `--user-model
NAME`), then `AGENT_EVAL_USER_MODEL`, then the suite's `user` block (`{"agent": SPEC}` or `{"model":
NAME}`). The LLM's endpoint and key are `AGENT_EVAL_USER_BASE_URL` / `AGENT_EVAL_USER_API_KEY`,
falling back to the agent's.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_eval.errors import ConfigError

DEFAULT_MAX_TURNS = 10
SCENARIO_ONLY_FIELDS = ("user_description", "max_turns")
USER_BLOCK_KEYS = ("agent", "model")


def max_turns(case: dict) -> int:
    """The case's `max_turns` (default 10)."""
    value = case.get("max_turns")
    return DEFAULT_MAX_TURNS if value is None else int(value)


def check_scenario_fields(case: dict) -> list[tuple[str, str]]:
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


def check_user_block(block: Mapping[str, Any]) -> list[tuple[str, str]]:
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


@dataclass
class UserSettings:
    """The resolved simulator: a Python SPEC (with the folder it is relative to) or an LLM, or neither."""

    spec: str | None = None
    spec_base: Path | None = None
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None

    @property
    def label(self) -> str | None:
        """The report's `settings.user`: the SPEC or the model."""
        return self.spec or self.model


def _set(value: Any) -> bool:
    return value is not None and value != ""


def resolve_user(flags: Mapping[str, Any], suite_block: Mapping[str, Any], suite_dir: Path,
                 environ: Mapping[str, str], agent_base_url: str | None,
                 agent_api_key: str | None) -> UserSettings:
    """The simulator from flags, then the environment, then the suite block."""
    spec, model = flags.get("user"), flags.get("user_model")
    if _set(spec) and _set(model):
        raise ConfigError("--user and --user-model both name a user simulator; pass only one of them.")
    user = UserSettings()
    block = suite_block.get("user") or {}
    if _set(spec):
        user.spec, user.spec_base = spec, Path.cwd()
    elif _set(model):
        user.model = model
    elif _set(environ.get("AGENT_EVAL_USER_MODEL")):
        user.model = environ["AGENT_EVAL_USER_MODEL"]
    elif _set(block.get("agent")):
        user.spec, user.spec_base = block["agent"], suite_dir
    elif _set(block.get("model")):
        user.model = block["model"]
    if user.model:
        user.base_url = environ.get("AGENT_EVAL_USER_BASE_URL") or agent_base_url
        user.api_key = environ.get("AGENT_EVAL_USER_API_KEY") or agent_api_key
    return user


def require_user(user: UserSettings, runnable: list[dict], cases_file: Any) -> None:
    """Exit-2 check: a scenario case that will run needs a simulator, and an LLM one needs a key."""
    case = next((c for c in runnable if c.get("scenario") is not None), None)
    if case is None:
        return
    head = f"case {case['id']!r} of {cases_file} has a scenario"
    if user.label is None:
        raise ConfigError(f"{head}, and no user simulator is configured: pass --user file.py:function "
                          "(a Python simulator) or --user-model NAME (an LLM), set AGENT_EVAL_USER_MODEL, or "
                          "set \"user\": {\"agent\": SPEC} or {\"model\": NAME} in the suite block.")
    if user.model and not user.api_key:
        raise ConfigError(f"{head}, and the LLM user simulator {user.model!r} has no API key: set "
                          "AGENT_EVAL_USER_API_KEY (or OPENAI_API_KEY, which it falls back to), or use a "
                          "Python simulator with --user file.py:function.")


def build_simulator(user: UserSettings) -> Any:
    """The simulator of these settings (agent_eval.run.simulator), or None; ConfigError when it cannot load."""
    if user.spec:
        from agent_eval.suite.imports import load_callable
        from agent_eval.run.simulator import PythonSimulator

        return PythonSimulator(user.spec, load_callable(user.spec, user.spec_base or Path.cwd(),
                                                        what="user simulator"))
    if user.model:
        from agent_eval.run.simulator import LLMSimulator

        return LLMSimulator(user.model, user.base_url, user.api_key)
    return None
