"""The OpenAI Agents SDK on the bridge: `tools(task)` and `model(task)` (extra `agent-eval-trials[openai-agents]`)."""
from __future__ import annotations

from typing import Any

from agent_eval.bridge._common import endpoint_client, observe, parse_arguments, require, suite_tools

__all__ = ["model", "tools"]


def tools(task: Any) -> list[Any]:
    """The suite's tools as `FunctionTool`s, each schema as the suite gives it (`strict_json_schema=False`)."""
    agents = require("agents", "openai-agents")
    made = []
    for name, description, parameters in suite_tools(task):
        async def invoke(context: Any, raw: str, _name: str = name) -> str:
            return await observe(task, _name, parse_arguments(raw), getattr(context, "tool_call_id", None))

        made.append(agents.FunctionTool(name=name, description=description, params_json_schema=parameters,
                                        on_invoke_tool=invoke, strict_json_schema=False))
    return made


def model(task: Any) -> Any:
    """An `OpenAIChatCompletionsModel` for `task.model` over the run's recording endpoint."""
    require("agents", "openai-agents")
    from agents import OpenAIChatCompletionsModel

    client = endpoint_client(task)  # agent-eval retries and waits for the provider: the client does neither
    return OpenAIChatCompletionsModel(model=task.model or "gpt-4o-mini", openai_client=client)
