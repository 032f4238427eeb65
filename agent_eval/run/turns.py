"""What an episode notes after each agent turn, for the case-file features that read turns: the state after
the turn (`expected_env: "replay_per_turn"`), and whether a stop tool ended the episode."""
from __future__ import annotations

from typing import Any

from agent_eval.records import Case
from agent_eval.run.sandbox import Sandbox
from agent_eval.run.world import EnvTemplate


class TurnWatch:
    """Notes each finished agent turn of one run; `diffs` is the trace's `turn_env_diffs` when kept."""

    def __init__(self, case: Case, template: EnvTemplate, sandbox: Sandbox) -> None:
        self.template, self.sandbox = template, sandbox
        self.diffs: list[list[dict[str, Any]]] | None = [] if case.get("expected_env") == "replay_per_turn" else None

    def turn_done(self) -> None:
        """After an agent turn, outside its latency and --timeout: the state it left (a BackendError
        propagates: the run is an `error`)."""
        if self.diffs is not None:
            self.diffs.append(self.template.frozen_diff(self.sandbox.env))
