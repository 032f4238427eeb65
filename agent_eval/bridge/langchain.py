"""LangChain and LangGraph on the bridge: `tools(task)` and `chat_model(task)`
(extra `agent-eval-trials[langchain]`)."""
from __future__ import annotations

from typing import Any

from agent_eval.bridge._common import endpoint_of, observe, parse_arguments, require, suite_tools

__all__ = ["chat_model", "tools"]


def tools(task: Any) -> list[Any]:
    """The suite's tools as `StructuredTool`s with the suite's JSON schemas; each call reaches the sandbox
    with the model's tool-call id, and a tool error comes back to the model as its observation text."""
    require("langchain_core", "langchain")
    from langchain_core.tools import StructuredTool

    class SuiteTool(StructuredTool):
        def _to_args_and_kwargs(self, tool_input: Any, tool_call_id: str | None,
                                ) -> tuple[tuple[Any, ...], dict[str, Any]]:
            # The arguments go to the sandbox as the model sent them: it validates them, not LangChain.
            return (), {"call": (parse_arguments(tool_input), tool_call_id)}

        async def _arun(self, *_: Any, **kwargs: Any) -> str:
            args, call_id = kwargs["call"]
            return await observe(task, self.name, args, call_id)

        def _run(self, *_: Any, **kwargs: Any) -> str:
            args, call_id = kwargs["call"]
            return task._observation_sync(self.name, args, call_id)

    async def unused(**_: Any) -> str:  # StructuredTool wants a function; SuiteTool runs its own
        raise NotImplementedError

    return [SuiteTool(name=name, description=description, args_schema=parameters, coroutine=unused)
            for name, description, parameters in suite_tools(task)]


def chat_model(task: Any) -> Any:
    """A `ChatOpenAI` for `task.model` over the run's recording endpoint (no retries of its own)."""
    require("langchain_openai", "langchain")
    from langchain_openai import ChatOpenAI

    from pydantic import SecretStr

    from agent_eval.bridge._transport import async_http_client, sync_http_client

    base_url, api_key = endpoint_of(task)
    shared = async_http_client()  # ChatOpenAI builds a sync client beside the async one: both shared
    return ChatOpenAI(model=task.model or "gpt-4o-mini", base_url=base_url, api_key=SecretStr(api_key),
                      max_retries=0, timeout=None, http_client=sync_http_client(),
                      **({"http_async_client": shared} if shared is not None else {}))
