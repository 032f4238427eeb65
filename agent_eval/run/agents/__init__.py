"""Agent kinds, one row each of AGENT_KINDS: the built-in `openai` loop, `cmd:` programs, Python functions.

A row says how to recognise an --agent SPEC, how to build the agent and how `validate --agent` checks it.
The SPEC is resolved to its row once per command (`kind_of`), never per run.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agent_eval.errors import ConfigError
from agent_eval.plugins import claim
from agent_eval.plugins.calls import once
from agent_eval.run.agents.base import BUILT_IN, COMMAND_PREFIX, Agent, AgentStop, Reply, RunContext

__all__ = ["AGENT_KINDS", "BUILT_IN", "Agent", "AgentKind", "AgentStop", "Reply", "RunContext", "kind_of",
           "load_agent", "register_agent_kind"]


def _same(spec: str, base_dir: Path) -> str:
    return spec


def _nothing_to_check(spec: str, base_dir: Path, cases_dir: Path) -> None:
    return None


@dataclass(frozen=True)
class AgentKind:
    """One kind of --agent SPEC."""

    name: str
    matches: Callable[[str], bool]
    load: Callable[[str, Path, dict[str, Any]], Agent]  # (SPEC, folder of relative paths, settings) -> the agent
    check: Callable[[str, Path, Path], None] = _nothing_to_check  # (SPEC, folder, case file's folder): ConfigError
    uses_llm: bool = False  # it calls --model itself through agent_eval.llm, so a run needs a model and key
    absolute: Callable[[str, Path], str] = _same  # the SPEC with its paths made absolute (--resume compares them)


def _load_openai(spec: str, base_dir: Path, settings: dict[str, Any]) -> Agent:
    from agent_eval.run.agents.openai_loop import OpenAIAgent

    return OpenAIAgent(settings)


def _load_command(spec: str, base_dir: Path, settings: dict[str, Any]) -> Agent:
    from agent_eval.run.agents.command import CommandAgent

    return CommandAgent(spec, settings)


def _check_command(spec: str, base_dir: Path, cases_dir: Path) -> None:
    from agent_eval.run.agents.command import command_of

    command_of(spec, cases_dir)


def _load_python(spec: str, base_dir: Path, settings: dict[str, Any]) -> Agent:
    from agent_eval.run.agents.python import PythonAgent
    from agent_eval.suite.imports import load_callable

    return PythonAgent(spec, load_callable(spec, base_dir, what="agent"), settings)


def _check_python(spec: str, base_dir: Path, cases_dir: Path) -> None:
    from agent_eval.suite.imports import load_callable

    if not callable(load_callable(spec, base_dir, "agent")):
        raise ConfigError(f"agent {spec!r} is not callable; point the SPEC at a function")


def _absolute_python(spec: str, base_dir: Path) -> str:
    module_ref, _, attr = spec.rpartition(":")
    if module_ref.endswith(".py") or "/" in module_ref:
        return f"{(base_dir / module_ref).resolve()}:{attr}"
    return spec


def _load_gold(spec: str, base_dir: Path, settings: dict[str, Any]) -> Agent:
    from agent_eval.run.agents.gold import GoldAgent

    return GoldAgent()


AGENT_KINDS: list[AgentKind] = [
    AgentKind(BUILT_IN, lambda spec: spec == BUILT_IN, _load_openai, uses_llm=True),
    AgentKind("gold", lambda spec: spec == "gold", _load_gold),  # plays each case's expected_tools
    AgentKind("cmd", lambda spec: spec.startswith(COMMAND_PREFIX), _load_command, _check_command),
    # Last: every other SPEC is `file.py:function` or `module:function`.
    AgentKind("python", lambda spec: True, _load_python, _check_python, absolute=_absolute_python),
]


_BUILT_IN_KINDS = frozenset(kind.name for kind in AGENT_KINDS)


def register_agent_kind(kind: AgentKind) -> None:
    """Add a kind, tried before the Python row (which takes every SPEC no other row recognises); a name
    another module registered is a ConfigError naming both. The row's code (recognising, checking, loading
    the agent, making its paths absolute) goes through the guard: what it raises is exit 2 naming it."""
    owner = claim("agent kind", kind.name, _BUILT_IN_KINDS, __name__)
    kind = replace(kind, matches=once("agent kind", kind.name, owner, kind.matches),
                   load=once("agent kind", kind.name, owner, kind.load),
                   check=once("agent kind", kind.name, owner, kind.check),
                   absolute=once("agent kind", kind.name, owner, kind.absolute))
    AGENT_KINDS[:] = [k for k in AGENT_KINDS if k.name != kind.name]
    AGENT_KINDS.insert(len(AGENT_KINDS) - 1, kind)


def kind_of(spec: str) -> AgentKind:
    """The first row recognising SPEC."""
    return next(kind for kind in AGENT_KINDS if kind.matches(spec))


def load_agent(spec: str, base_dir: Path, settings: dict[str, Any]) -> Agent:
    """Build the agent named by SPEC: `openai`, `cmd:COMMAND ARGS...`, `file.py:function`, `module:function`,
    or any registered kind's SPEC."""
    return kind_of(spec).load(spec, base_dir, settings)
