"""What the recording endpoint reads of an agent's model traffic: usage and tool calls, from Chat
Completions and Responses bodies, whole or streamed as server-sent events."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from agent_eval.provider.tokens import loads_answer, token_count


@dataclass(slots=True)
class ModelCall:
    """One tool call a model issued: its id, name and raw JSON arguments, in the order issued."""

    call_id: str | None
    name: str
    arguments: str


@dataclass(slots=True)
class Answer:
    """What one recorded completion held."""

    prompt_tokens: int | None = 0  # 0 when the answer gives no usage (as for the built-in agent); None: impossible
    completion_tokens: int | None = 0
    model: str | None = None
    calls: list[ModelCall] = field(default_factory=list)


def request_tools(body: Any) -> set[str]:
    """The tool names a request offered the model (chat `tools[].function.name` or Responses `tools[].name`)."""
    names: set[str] = set()
    tools = body.get("tools") if isinstance(body, dict) else None
    for tool in tools if isinstance(tools, list) else ():
        if not isinstance(tool, dict):
            continue
        function = tool.get("function")
        name = function.get("name") if isinstance(function, dict) else tool.get("name")
        if isinstance(name, str):
            names.add(name)
    return names


def _arguments(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "{}" if value is None else orjson.dumps(value).decode()


def read_usage(answer: Answer, usage: Any) -> None:
    """Usage of either shape: chat (prompt/completion_tokens) or Responses (input/output_tokens)."""
    if not isinstance(usage, dict):
        return
    prompt = usage.get("prompt_tokens", usage.get("input_tokens"))
    completion = usage.get("completion_tokens", usage.get("output_tokens"))
    answer.prompt_tokens, answer.completion_tokens = token_count(prompt), token_count(completion)


def read_answer(path: str, data: Any) -> Answer:
    """Usage, model and tool calls of a whole (not streamed) answer body."""
    answer = Answer()
    if not isinstance(data, dict):
        return answer
    read_usage(answer, data.get("usage"))
    model = data.get("model")
    answer.model = model if isinstance(model, str) else None
    if path == "/responses":
        _read_response_items(answer, data.get("output"))
        return answer
    choices = data.get("choices")
    message = choices[0].get("message") if isinstance(choices, list) and choices and isinstance(
        choices[0], dict) else None
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    for call in calls if isinstance(calls, list) else ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            call_id = call.get("id")
            answer.calls.append(ModelCall(call_id if isinstance(call_id, str) else None, function["name"],
                                          _arguments(function.get("arguments"))))
    return answer


def _read_response_items(answer: Answer, items: Any) -> None:
    for item in items if isinstance(items, list) else ():
        if isinstance(item, dict) and item.get("type") == "function_call" and isinstance(item.get("name"), str):
            call_id = item.get("call_id")
            answer.calls.append(ModelCall(call_id if isinstance(call_id, str) else None, item["name"],
                                          _arguments(item.get("arguments"))))


class StreamReader:
    """Reads a server-sent event stream as it passes through; `forward(event)` says whether the agent
    gets an event (a usage-only chunk it did not ask for is held back)."""

    def __init__(self, path: str, agent_wants_usage: bool) -> None:
        self.path = path
        self.answer = Answer()
        self._wants_usage = agent_wants_usage
        self._pending = b""
        self._chat_calls: dict[int, list[Any]] = {}  # index -> [id, name, argument parts]

    def feed(self, chunk: bytes) -> list[bytes]:
        """The complete events in chunk (with what came before), each to forward as it is."""
        self._pending += chunk
        if b"\n\n" not in self._pending and b"\r\n\r\n" not in self._pending:
            return []
        data = self._pending.replace(b"\r\n", b"\n")
        *events, self._pending = data.split(b"\n\n")
        return [event + b"\n\n" for event in events if self._read(event)]

    def rest(self) -> bytes:
        """What is left when the stream ends (an unterminated last event), forwarded as it is."""
        rest, self._pending = self._pending, b""
        if rest.strip():
            self._read(rest)
        return rest

    def finish(self) -> Answer:
        for k in sorted(self._chat_calls):
            call_id, name, parts = self._chat_calls[k]
            if name:
                self.answer.calls.append(ModelCall(call_id, name, "".join(parts)))
        self._chat_calls.clear()
        return self.answer

    def _read(self, event: bytes) -> bool:
        payload = b"".join(line[5:].lstrip() for line in event.split(b"\n") if line.startswith(b"data:"))
        if not payload or payload == b"[DONE]":
            return True
        try:
            data = loads_answer(payload)
        except orjson.JSONDecodeError:
            return True
        if not isinstance(data, dict):
            return True
        if self.path == "/responses":
            if data.get("type") in ("response.completed", "response.incomplete", "response.failed"):
                whole = read_answer("/responses", data.get("response"))
                self.answer = whole
            return True
        if isinstance(data.get("model"), str):
            self.answer.model = data["model"]
        usage = data.get("usage")
        if isinstance(usage, dict):
            read_usage(self.answer, usage)
        choices = data.get("choices")
        if isinstance(usage, dict) and not choices and not self._wants_usage:
            return False  # the usage chunk agent-eval asked for on the agent's behalf
        for choice in choices if isinstance(choices, list) else ():
            delta = choice.get("delta") if isinstance(choice, dict) else None
            calls = delta.get("tool_calls") if isinstance(delta, dict) else None
            for call in calls if isinstance(calls, list) else ():
                self._read_call_delta(call)
        return True

    def _read_call_delta(self, call: Any) -> None:
        if not isinstance(call, dict):
            return
        given = call.get("index")
        index: int = given if isinstance(given, int) else len(self._chat_calls)
        entry = self._chat_calls.setdefault(index, [None, "", []])
        if isinstance(call.get("id"), str):
            entry[0] = call["id"]
        function = call.get("function")
        if isinstance(function, dict):
            if isinstance(function.get("name"), str):
                entry[1] += function["name"]
            if isinstance(function.get("arguments"), str):
                entry[2].append(function["arguments"])
