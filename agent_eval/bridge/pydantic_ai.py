"""pydantic-ai on the bridge: `toolset(task)` and `model(task)` (extra `agent-eval-trials[pydantic-ai]`)."""
from __future__ import annotations

from typing import Any

from agent_eval.bridge._common import endpoint_client, observe, require, suite_tools

__all__ = ["model", "toolset"]

_RETRIES = 1_000  # a tool never asks the model to retry; the framework's own refusals are not capped lower


def toolset(task: Any) -> Any:
    """A `FunctionToolset` of the suite's tools, each with the suite's schema, arguments unvalidated (the
    sandbox validates them, as it does for the built-in agent)."""
    require("pydantic_ai", "pydantic-ai")
    from pydantic_ai import Tool
    from pydantic_ai.toolsets import FunctionToolset

    made = []
    for name, description, parameters in suite_tools(task):
        async def invoke(ctx: Any, _name: str = name, **args: Any) -> str:
            return await observe(task, _name, args, getattr(ctx, "tool_call_id", None))

        made_tool = Tool.from_schema(invoke, name=name, description=description, json_schema=parameters,
                                     takes_ctx=True)
        made_tool.strict = False  # strict mode (or its guess at it) would rewrite the schema
        made.append(made_tool)
    return FunctionToolset(made, max_retries=_RETRIES)


def model(task: Any) -> Any:
    """An `OpenAIChatModel` for `task.model` over the run's recording endpoint."""
    require("pydantic_ai", "pydantic-ai")
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    client = endpoint_client(task)
    return OpenAIChatModel(task.model or "gpt-4o-mini", provider=OpenAIProvider(openai_client=client))
