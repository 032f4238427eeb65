"""The errors a library caller can see, all under AgentEvalError (a user mistake is one short message on
stderr and exit 2), and every exit code."""
from __future__ import annotations

from dataclasses import dataclass, field

# Every command's exit codes, each written once (docs/reference.md lists what they mean).
EXIT_PASSED = 0  # every selected case passed (or the command did what it was asked)
EXIT_FAILED = 1  # a case failed, or the baseline gate found a regression
EXIT_ERROR = 2  # an infrastructure error, every case skipped, or a user mistake
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)
EXIT_TERMINATED = 143  # SIGTERM (128 + SIGTERM): what `timeout`, docker and Kubernetes send
EXIT_MEANINGS = {
    EXIT_PASSED: ("PASS", "every selected case passed"),
    EXIT_FAILED: ("FAIL", "a case failed or the baseline gate found a regression"),
    EXIT_ERROR: ("ERROR", "a case ended in an infrastructure error, or every case was skipped"),
    EXIT_INTERRUPTED: ("INTERRUPTED", "interrupted; resume with --resume"),
    EXIT_TERMINATED: ("INTERRUPTED", "stopped by SIGTERM; resume with --resume"),
}
"""What the verdict line says for each exit code of `run`, `score` and `rescore`: (word, meaning)."""


class AgentEvalError(Exception):
    """The root of every error agent-eval raises to its caller: `except AgentEvalError` catches them all."""


@dataclass
class Problem:
    """One problem in a case file: where it is and how to fix it."""

    path: str
    case_id: str | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = self.path
        if self.case_id is not None:
            where += f", case {self.case_id!r}"
        if self.field:
            where += f", field {self.field!r}"
        return f"{where}: {self.message}"


@dataclass
class CaseFileError(AgentEvalError):
    """A case file (or a file it names) is invalid; `problems` lists every problem found."""

    problems: list[Problem] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join(str(p) for p in self.problems)


class ConfigError(AgentEvalError):
    """A setting is missing or wrong (no model, no key, bad flag, unimportable agent)."""


class ToolError(AgentEvalError):
    """Raised by `task.call_tool` when the tool call ended in an error."""


class InfrastructureError(AgentEvalError):
    """A run could not be played through no fault of the agent's: its status becomes `error`."""


class ProviderError(InfrastructureError):
    """An LLM call that failed after the SDK's retries, or whose answer cannot be read.

    The message names the endpoint (secrets removed) and the model, and holds no key (redaction.py);
    `status_code` is the HTTP status when the provider answered with one.
    """

    def __init__(self, message: str, status_code: int | None = None) -> None:
        from agent_eval.redaction import redact_secrets

        super().__init__(redact_secrets(message))  # a provider may echo the key in its error body
        self.status_code = status_code
