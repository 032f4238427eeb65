"""The simulated user's settings: a case's turn limit, and which simulator plays the user.

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

from agent_eval.records import Case
from agent_eval.errors import ConfigError
from agent_eval.flags import Flags

DEFAULT_MAX_TURNS = 10


def max_turns(case: Case) -> int:
    """The case's `max_turns` (default 10)."""
    value = case.get("max_turns")
    return DEFAULT_MAX_TURNS if value is None else int(value)


@dataclass(frozen=True)
class UserSettings:
    """The resolved simulator: a Python SPEC (with the folder it is relative to) or an LLM, or neither."""

    spec: str | None = None
    spec_base: Path | None = None
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    source: str = "default"  # where the simulator came from: "flag", "env" or "suite"
    timeout_s: float | None = None  # --judge-timeout bounds each simulator request too
    prompt: str | None = None  # the suite's user.prompt (its text), replacing the LLM simulator's built-in one
    stop_tokens: tuple[str, ...] = ()  # the suite's user.stop_tokens; empty: ###STOP###

    @property
    def label(self) -> str | None:
        """The report's `settings.user`: the SPEC or the model."""
        return self.spec or self.model


def _set(value: Any) -> bool:
    return value is not None and value != ""


def resolve_user(flags: Flags, suite_block: Mapping[str, Any], suite_dir: Path,
                 environ: Mapping[str, str], agent_base_url: str | None,
                 agent_api_key: str | None) -> UserSettings:
    """The simulator from flags, then the environment, then the suite block."""
    spec, model = flags.text("user"), flags.text("user_model")
    if _set(spec) and _set(model):
        raise ConfigError("--user and --user-model both name a user simulator; pass only one of them.")
    block = suite_block.get("user") or {}
    found: dict[str, Any] = {}
    if _set(spec):
        found = {"spec": spec, "spec_base": Path.cwd(), "source": "flag"}
    elif _set(model):
        found = {"model": model, "source": "flag"}
    elif _set(environ.get("AGENT_EVAL_USER_MODEL")):
        found = {"model": environ["AGENT_EVAL_USER_MODEL"], "source": "env"}
    elif _set(block.get("agent")):
        found = {"spec": block["agent"], "spec_base": suite_dir, "source": "suite"}
    elif _set(block.get("model")):
        found = {"model": block["model"], "source": "suite"}
    if isinstance(block.get("prompt"), str):  # validated: the text, or a file that can be read
        from agent_eval.suite.validation_scenario import prompt_text

        found["prompt"] = prompt_text(block["prompt"], suite_dir)
    found["stop_tokens"] = tuple(block.get("stop_tokens") or ())
    if found.get("model"):
        from agent_eval.redaction import PLACEHOLDER_KEY

        base_url = found["base_url"] = environ.get("AGENT_EVAL_USER_BASE_URL") or agent_base_url
        api_key = environ.get("AGENT_EVAL_USER_API_KEY") or agent_api_key
        found["api_key"] = PLACEHOLDER_KEY if not api_key and base_url else api_key  # a local server takes no key
    return UserSettings(**found)


def require_user(user: UserSettings, runnable: list[Case], cases_file: Any) -> None:
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
