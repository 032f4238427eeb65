"""What one OpenTelemetry trace records of an agent, read by the GenAI semantic conventions.

Both conventions are read: the current one (v1.37 on: `gen_ai.input.messages` /
`gen_ai.output.messages` attributes with typed `parts`) and the older one (the span events
`gen_ai.content.prompt` / `gen_ai.content.completion`, holding OpenAI-format messages as JSON).
See docs/import-and-score.md for the mapping.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from agent_eval.ingest.otlp import Span, json_value

INFERENCE_OPS = frozenset({"chat", "text_completion", "generate_content"})
TOOL_OP = "execute_tool"
AGENT_OP = "invoke_agent"
SYSTEM_ROLES = frozenset({"system", "developer"})
_INDEXED = re.compile(r"^gen_ai\.(prompt|completion)\.(\d+)\.(.+)$")


@dataclass
class Call:
    """A tool call the model asked for in a message (`tool_call` part or OpenAI `tool_calls`)."""

    call_id: str | None
    name: str
    args: Any


@dataclass
class Message:
    """One chat message: its role, its text (None without a text part) and its tool calls."""

    role: str
    text: str | None
    calls: list[Call] = field(default_factory=list)
    response_to: str | None = None  # a tool result's call id
    response: Any = None


@dataclass
class ToolStep:
    """One recorded tool call: from an `execute_tool` span, or from a message when there is none."""

    name: str
    args: Any  # a dict, the raw string of malformed JSON, or None when not recorded
    call_id: str | None = None
    start_ns: int | None = None
    end_ns: int | None = None
    output: Any = None
    error: str | None = None
    args_problem: str | None = None


@dataclass
class Inference:
    """One model call: its times, the model asked for and the tokens it used."""

    start_ns: int
    end_ns: int
    model: str | None
    input_tokens: int
    output_tokens: int


@dataclass
class Recorded:
    """The agent's run as one trace recorded it."""

    trace_id: str
    user_messages: list[str]
    replies: list[str | None]
    answer: str | None
    steps: list[ToolStep]
    inferences: list[Inference]
    start_ns: int
    end_ns: int
    agent_error: str | None = None

    @property
    def input_tokens(self) -> int:
        return sum(i.input_tokens for i in self.inferences)

    @property
    def output_tokens(self) -> int:
        return sum(i.output_tokens for i in self.inferences)


def operation(span: Span) -> str | None:
    """The span's GenAI operation, inferred for older instrumentations that do not name it."""
    op = span.attributes.get("gen_ai.operation.name")
    if isinstance(op, str) and op:
        return op
    if "gen_ai.tool.name" in span.attributes:
        return TOOL_OP
    if any(name.startswith("gen_ai.content.") for name, _ in span.events) or any(
            k in span.attributes for k in ("gen_ai.input.messages", "gen_ai.request.model", "gen_ai.prompt.0.role")):
        return "chat"
    return None


def is_genai(span: Span) -> bool:
    return any(k.startswith("gen_ai.") for k in span.attributes) or any(
        name.startswith("gen_ai.") for name, _ in span.events)


def _text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [item if isinstance(item, str) else item.get("text") if isinstance(item.get("text"), str)
                 else item.get("content") for item in content
                 if isinstance(item, str) or (isinstance(item, dict) and item.get("type", "text") == "text")]
        texts = [t for t in texts if isinstance(t, str)]
        return "\n".join(texts) if texts else None
    return None


def _message(raw: Any) -> Message | None:
    if isinstance(raw, dict) and "role" not in raw and isinstance(raw.get("message"), dict):
        raw = raw["message"]  # an OpenAI choice
    if not isinstance(raw, dict):
        return None
    msg = Message(role=str(raw.get("role") or ""), text=None)
    texts: list[str] = []
    for part in raw.get("parts") if isinstance(raw.get("parts"), list) else ():
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("content"), str):
            texts.append(part["content"])
        elif kind == "tool_call":
            msg.calls.append(Call(_str(part.get("id")), str(part.get("name") or ""), json_value(part.get("arguments"))))
        elif kind == "tool_call_response":
            msg.response_to, msg.response = _str(part.get("id")), part.get("response")
    text = _text_of(raw.get("content"))
    if text is not None:
        texts.append(text)
    for tc in raw.get("tool_calls") if isinstance(raw.get("tool_calls"), list) else ():
        if isinstance(tc, dict):
            fn = tc.get("function") if isinstance(tc.get("function"), dict) else tc
            msg.calls.append(Call(_str(tc.get("id")), str(fn.get("name") or ""), json_value(fn.get("arguments"))))
    if msg.role == "tool" and raw.get("tool_call_id") is not None:
        msg.response_to, msg.response = _str(raw.get("tool_call_id")), raw.get("content")
    msg.text = "\n".join(texts) if texts else None
    return msg


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def _messages(value: Any, role: str) -> list[Message] | None:
    value = json_value(value)
    if isinstance(value, str):  # a text completion's bare prompt or completion
        return [Message(role=role, text=value)] if value else None
    if isinstance(value, dict):
        value = value.get("messages", [value]) if "role" in value or "messages" in value else [value]
    if not isinstance(value, list):
        return None
    return [m for m in (_message(item) for item in value) if m is not None]


def _indexed(span: Span, kind: str) -> list[Message] | None:
    """OpenLLMetry's flattened attributes: gen_ai.prompt.0.role, gen_ai.completion.0.tool_calls.0.name."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in span.attributes.items():
        m = _INDEXED.match(key)
        if m and m.group(1) == kind:
            found.setdefault(int(m.group(2)), {})[m.group(3)] = value
    if not found:
        return None
    out = []
    for _, fields in sorted(found.items()):
        calls = {}
        for key, value in fields.items():
            parts = key.split(".")
            if len(parts) == 3 and parts[0] == "tool_calls" and parts[1].isdigit():
                calls.setdefault(int(parts[1]), {})[parts[2]] = value
        raw = {"role": fields.get("role") or ("assistant" if kind == "completion" else "user"),
               "content": fields.get("content"),
               "tool_calls": [{"id": c.get("id"), "function": c} for _, c in sorted(calls.items())]}
        message = _message(raw)
        if message is not None:
            out.append(message)
    return out


def _span_messages(span: Span, side: str, older: str, role: str) -> list[Message] | None:
    """The `side` ("input"/"output") messages: the newer attribute, the older event, or indexed attributes."""
    if f"gen_ai.{side}.messages" in span.attributes:
        return _messages(span.attributes[f"gen_ai.{side}.messages"], role)
    for name, attrs in span.events:
        if name == f"gen_ai.content.{older}" and f"gen_ai.{older}" in attrs:
            return _messages(attrs[f"gen_ai.{older}"], role)
    return _indexed(span, older)


def input_messages(span: Span) -> list[Message] | None:
    """The span's input messages in either convention; None when none were recorded."""
    return _span_messages(span, "input", "prompt", "user")


def output_messages(span: Span) -> list[Message] | None:
    """The span's output messages in either convention; None when none were recorded."""
    return _span_messages(span, "output", "completion", "assistant")


def _tokens(span: Span, key: str, older: str) -> int:
    value = span.attributes.get(key, span.attributes.get(older))
    try:
        return max(0, int(value)) if value is not None and not isinstance(value, bool) else 0
    except (TypeError, ValueError, OverflowError):
        return 0


def _step_error(span: Span) -> str | None:
    kind = span.attributes.get("error.type")
    if kind is None and not span.is_error:
        return None
    parts = [str(p) for p in (kind, span.status_message) if p not in (None, "")]
    return ": ".join(parts) or "error"


def _tool_step(span: Span, calls: dict[str, Call], responses: dict[str, Any]) -> ToolStep:
    attrs = span.attributes
    name = attrs.get("gen_ai.tool.name")
    if not isinstance(name, str) or not name:
        name = span.name.removeprefix("execute_tool").strip() or span.name
    call_id = _str(attrs.get("gen_ai.tool.call.id"))
    step = ToolStep(name=name, args=None, call_id=call_id, start_ns=span.start_ns, end_ns=span.end_ns,
                    error=_step_error(span))
    if "gen_ai.tool.call.arguments" in attrs:
        step.args = json_value(attrs["gen_ai.tool.call.arguments"])
    elif call_id is not None and call_id in calls:
        step.args = calls[call_id].args
    _check_args(step)
    if "gen_ai.tool.call.result" in attrs:
        step.output = attrs["gen_ai.tool.call.result"]
    elif call_id is not None:
        step.output = responses.get(call_id)
    return step


def _check_args(step: ToolStep) -> None:
    if step.args is None or isinstance(step.args, dict):
        return
    step.args_problem = "malformed JSON" if isinstance(step.args, str) else "arguments are not a JSON object"


def _message_steps(inferences: list[tuple[Span, list[Message] | None, list[Message] | None]],
                   responses: dict[str, Any]) -> list[ToolStep]:
    """Tool calls from the assistant messages, for traces that have no execute_tool span."""
    steps: list[ToolStep] = []
    seen: set[str] = set()

    def take(call: Call, at: int) -> None:
        if call.call_id is not None:
            if call.call_id in seen:
                return
            seen.add(call.call_id)
        step = ToolStep(call.name, call.args, call.call_id, start_ns=at, output=responses.get(call.call_id or ""))
        _check_args(step)
        steps.append(step)

    for span, _, outputs in inferences:
        for msg in outputs or ():
            for call in msg.calls:
                take(call, span.end_ns)
    if not steps and inferences:
        span, inputs, _ = inferences[-1]
        for msg in inputs or ():
            if msg.role == "assistant":
                for call in msg.calls:
                    take(call, span.start_ns)
    return steps


def _replies(user_messages: list[str], convo: list[Message], answer: str | None) -> list[str | None]:
    """One reply per user message: the last assistant text before the next user message."""
    replies: list[str | None] = []
    current: str | None = None
    seen_user = False
    for msg in convo:
        if msg.role == "user":
            if seen_user:
                replies.append(current)
            current, seen_user = None, True
        elif msg.role == "assistant" and msg.text:
            current = msg.text
    if len(replies) + 1 != len(user_messages):
        replies = [None] * (len(user_messages) - 1)
    return [*replies, answer]


def _agent_error(spans: list[Span]) -> str | None:
    ids = {s.span_id for s in spans}
    for span in spans:
        is_root = not span.parent_id or span.parent_id not in ids
        op = operation(span)
        if span.is_error and op != TOOL_OP and (is_root or op == AGENT_OP):
            return _step_error(span)
    return None


def read_trace(trace_id: str, spans: list[Span]) -> Recorded | str:
    """The agent's run recorded by one trace's spans (in start order), or why it cannot be read."""
    if not any(is_genai(s) for s in spans):
        return "no GenAI span (no gen_ai.* attribute or event)"
    inferences = [(s, input_messages(s), output_messages(s)) for s in spans if operation(s) in INFERENCE_OPS]
    calls: dict[str, Call] = {}
    responses: dict[str, Any] = {}
    for _, inputs, outputs in inferences:
        for msg in (*(inputs or ()), *(outputs or ())):
            for call in msg.calls:
                if call.call_id is not None:
                    calls.setdefault(call.call_id, call)
            if msg.response_to is not None:
                responses.setdefault(msg.response_to, msg.response)
    with_input = [(s, inputs) for s, inputs, _ in inferences if inputs]
    if not with_input:
        return ("no user message recorded: no inference span (gen_ai.operation.name chat, text_completion "
                "or generate_content) has input messages; turn on message content capture")
    first_inputs = with_input[0][1]
    users = [m.text for m in first_inputs if m.role == "user" and m.text is not None]
    if not users:
        return "the earliest inference span's input messages hold no user message with text"
    with_output = [(inputs, outputs) for _, inputs, outputs in inferences if outputs is not None]
    answer = None
    convo: list[Message] = []
    if with_output:
        inputs, outputs = with_output[-1]
        # Several output messages are alternative choices (n > 1): the first one is the answer.
        answer = next((m.text for m in outputs if m.role in ("assistant", "") and m.text), None)
        convo = [*(inputs or ()), *outputs]
    tool_spans = [s for s in spans if operation(s) == TOOL_OP]
    if tool_spans:
        steps = [_tool_step(s, calls, responses) for s in tool_spans]
    else:
        steps = _message_steps(inferences, responses)
    inference_records = [Inference(s.start_ns, s.end_ns, _model(s), _tokens(s, "gen_ai.usage.input_tokens",
                                   "gen_ai.usage.prompt_tokens"),
                                   _tokens(s, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"))
                         for s, _, _ in inferences]
    return Recorded(trace_id=trace_id, user_messages=users, replies=_replies(users, convo, answer), answer=answer,
                    steps=steps, inferences=inference_records, start_ns=min(s.start_ns for s in spans),
                    end_ns=max(s.end_ns for s in spans), agent_error=_agent_error(spans))


def _model(span: Span) -> str | None:
    model = span.attributes.get("gen_ai.request.model") or span.attributes.get("gen_ai.response.model")
    return str(model) if model else None
