"""One tau2 task as one agent-eval case: the user scenario tau2's simulator gets, the gold actions, and the
checks of tau2's reward for airline and retail (DB x COMMUNICATE)."""
from __future__ import annotations

from typing import Any

CONVERTER_VERSION = "1"
MAX_TURNS = 100  # tau2 ends a simulation after 200 steps (messages); a dialogue turn takes at least two


def gold_calls(task: Any) -> list[dict[str, Any]]:
    """The task's gold actions as agent-eval calls, in order."""
    return [{"name": action.name, "args": dict(action.arguments)}
            for action in task.evaluation_criteria.actions or []]


def communicate_info(task: Any) -> list[str]:
    return [str(info) for info in task.evaluation_criteria.communicate_info or []]


def gold_reply(task: Any) -> str:
    """A reply that holds every piece of information the task needs communicated (tau2's agent never sends an
    empty message)."""
    return " ".join(communicate_info(task)) or "Done."


def to_case(task: Any, domain: str, split: str, version: str, max_errors: int) -> dict[str, Any]:
    """The case of `task`: graded on the final database (the gold actions' replay) and on each
    `communicate_info` appearing in some reply (commas removed, case ignored), as tau2 grades it."""
    criteria = task.evaluation_criteria
    case: dict[str, Any] = {
        "id": str(task.id),
        "scenario": str(task.user_scenario),
        "max_turns": MAX_TURNS,
        "max_tool_errors": max_errors,
        "expected_tools": gold_calls(task),
        "expected_env": "replay",
    }
    info = communicate_info(task)
    if info:
        case["expect"] = {"replies": "any", "strip": [","], "icontains": info}
    case["gold_reply"] = gold_reply(task)
    case["tags"] = ["tau2", domain]
    case["metadata"] = {
        "upstream": {"benchmark": "tau2", "version": version, "id": str(task.id), "domain": domain, "split": split},
        "nl_assertions": list(criteria.nl_assertions or []),
        "description": task.description.model_dump(mode="json") if task.description is not None else None,
    }
    return case
