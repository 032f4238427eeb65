"""What an episode notes after each agent turn, for the case-file features that read turns: the state after
the turn (`expected_env: "replay_per_turn"`), and whether a stop tool ended the episode."""
from __future__ import annotations

from typing import Any

from agent_eval.records import Case
from agent_eval.run.sandbox import Sandbox
from agent_eval.run.world import EnvTemplate


class TurnWatch:
    """Notes each finished agent turn of one run; `diffs` is the trace's `turn_env_diffs` when kept."""

    def __init__(self, case: Case, template: EnvTemplate, sandbox: Sandbox, stop_tools: frozenset[str]) -> None:
        self.template, self.sandbox, self.stop_tools = template, sandbox, stop_tools
        self.diffs: list[list[dict[str, Any]]] | None = [] if case.get("expected_env") == "replay_per_turn" else None

    def turn_done(self, first_step: int) -> bool:
        """After an agent turn whose calls start at step `first_step`, outside its latency and --timeout: note
        the state it left (a BackendError propagates: the run is an `error`); True when it called a stop tool."""
        if self.diffs is not None:
            self.diffs.append(self.template.frozen_diff(self.sandbox.env))
        return bool(self.stop_tools) and any(
            step["name"] in self.stop_tools and step.get("invalid_args") != "unknown tool"
            for step in self.sandbox.steps[first_step:])
