"""`agent-eval validate`: check a case file, and import the code its suite block names; nothing runs."""
from __future__ import annotations

from pathlib import Path

from rich.console import Console

from agent_eval.errors import ConfigError
from agent_eval.run.agents import BUILT_IN, kind_of
from agent_eval.suite.cases import Suite, load_suite


def validate_command(cases: Path, console: Console, err: Console, agent: str | None = None) -> int:
    """Exit 0 with one line when the case file is valid (its warnings on stderr); exit 2 otherwise.

    `agent` (the --agent flag) is loaded as `run` loads it: a path relative to the current directory, a
    `cmd:` program found from the case file's folder."""
    suite = load_suite(cases)
    load_suite_code(suite)
    if agent is not None:
        check_agent(agent, Path.cwd(), suite)
    if suite.warnings:
        from agent_eval.commands.conclude import say  # the run's whole ending: only for a warning

        for warning in suite.warnings:
            say(err, warning)
    console.print(f"{cases}: {len(suite.cases)} cases, valid.", highlight=False, markup=False)
    return 0


def load_suite_code(suite: Suite) -> None:
    """Import the agent and the user simulator that the suite block names, as `run` would."""
    from agent_eval.suite.imports import load_callable

    spec = suite.settings.get("agent")
    user = suite.settings.get("user")
    named = [("agent", spec), ("user simulator", user.get("agent") if isinstance(user, dict) else None)]
    for what, ref in named:
        if what == "agent" and isinstance(ref, str) and ref:
            check_agent(ref, suite.base_dir, suite)
        elif isinstance(ref, str) and ref and ref not in (BUILT_IN, "gold") and not callable(
                load_callable(ref, suite.base_dir, what)):
            raise ConfigError(f"{what} {ref!r} in {suite.path} is not callable; point the SPEC at a function")


def check_agent(spec: str, base_dir: Path, suite: Suite) -> None:
    """ConfigError unless SPEC loads, as its kind checks it: a callable for a Python agent, a program found
    for a `cmd:` one."""
    kind_of(spec).check(spec, base_dir, suite.path.resolve().parent)
