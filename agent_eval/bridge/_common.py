"""What every framework module shares: the tools of a task, its endpoint, and the missing-extra message."""
from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import orjson

from agent_eval.errors import ConfigError


def require(module: str, extra: str) -> Any:
    """Import a framework module, or say which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(f"agent_eval.bridge needs {module.split('.')[0]}: pip install 'agent-eval-trials[{extra}]' "
                          f"({exc})") from None


def suite_tools(task: Any) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(name, description, JSON schema of the parameters) of each tool of the task, schemas unchanged."""
    for schema in task.tool_schemas:
        function = schema.get("function") or {}
        parameters = function.get("parameters") or {"type": "object", "properties": {}}
        yield function["name"], function.get("description") or "", parameters


def endpoint_of(task: Any) -> tuple[str, str]:
    """(base_url, api_key) of the task's recording endpoint; a clear error when the agent is not on one."""
    if not getattr(task, "base_url", None):
        raise ConfigError("this task has no recording endpoint (task.base_url is None): agent_eval.bridge "
                          "works inside an agent that agent-eval runs with --agent file.py:function")
    return task.base_url, task.api_key


def parse_arguments(raw: Any) -> Any:
    """A framework's raw JSON arguments as a dict; the raw string when they are not a JSON object (the
    sandbox records malformed JSON as the built-in agent's calls are)."""
    if isinstance(raw, dict):
        return raw
    try:
        args = orjson.loads(raw or "{}")
    except (orjson.JSONDecodeError, TypeError):
        return raw if isinstance(raw, str) else str(raw)
    return args if isinstance(args, dict) else raw


def endpoint_client(task: Any) -> Any:
    """An `AsyncOpenAI` over the task's recording endpoint: no retries and no timeout of its own (agent-eval
    retries and waits for the provider), on the loop's shared transport (bridge/_transport.py)."""
    from openai import AsyncOpenAI

    from agent_eval.bridge._transport import async_http_client

    base_url, api_key = endpoint_of(task)
    shared = async_http_client()
    return AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=None,
                       **({"http_client": shared} if shared is not None else {}))


async def observe(task: Any, name: str, args: Any, call_id: str | None) -> str:
    """The observation text the built-in agent would send the model ("Error: ..." on a tool error)."""
    return await task._observation(name, args, call_id)
