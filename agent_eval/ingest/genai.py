"""What one OpenTelemetry trace records of an agent, read by the GenAI semantic conventions.

Other conventions (OpenInference, logfire) are translated into these attributes first
(`ingest/conventions.py`); messages are read by `ingest/messages.py`. See docs/import-and-score.md.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from agent_eval.ingest.messages import Call, Message, input_messages, output_messages, str_or_none
from agent_eval.ingest.otlp import FRAMEWORK_TOOLS, HANDOFF, Span, json_value
from agent_eval.provider.tokens import sum_tokens, token_count

INFERENCE_OPS = frozenset({"chat", "text_completion", "generate_content"})
TOOL_OP = "execute_tool"
AGENT_OP = "invoke_agent"
SYSTEM_ROLES = frozenset({"system", "developer"})
NOT_EXECUTED = "not executed: the agent did not run this call"


@dataclass
class ToolStep:
    """One recorded tool call: from an `execute_tool` span, or from a message when there is none."""

    name: str
    args: Any  # a dict, the raw string of malformed JSON, or None when not recorded
    call_id: str | None = None
    start_ns: int | None = None
    end_ns: int | None = None  # None: not timed by a span, or a span that ends before it starts
    output: Any = None
    error: str | None = None
    args_problem: str | None = None
    executed: bool = True


@dataclass
class Inference:
    """One model call: its times, the model asked for and the tokens it used."""

    start_ns: int
    end_ns: int | None  # None when the span ends before it starts
    model: str | None
    input_tokens: int | None  # None: a count that is not an integer in 0 .. 2**53 - 1 (provider/tokens.py)
    output_tokens: int | None


@dataclass
class Recorded:
    """The agent's run as one trace (or one stitched conversation) recorded it."""

    trace_id: str
    user_messages: list[str]
    replies: list[str | None]
    answer: str | None
    steps: list[ToolStep]
    inferences: list[Inference]
    start_ns: int
    end_ns: int | None  # None when no span of the trace has a valid end
    agent_error: str | None = None
    trace_ids: list[str] = field(default_factory=list)
    case_id: str | None = None  # agent_eval.case_id, on traces agent-eval wrote itself
    trial: int | None = None
    warnings: list[str] = field(default_factory=list)
    framework_calls: list[Call] = field(default_factory=list)  # the framework's own calls (handoffs)
    system_prompt: str | None = None  # the first system (or developer) message the model was given

    @property
    def input_tokens(self) -> int | None:
        return sum_tokens(i.input_tokens for i in self.inferences)

    @property
    def output_tokens(self) -> int | None:
        return sum_tokens(i.output_tokens for i in self.inferences)


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


def _tokens(span: Span, key: str, older: str) -> int | None:
    """The span's token count, 0 when it has none, None when it is not one (1e300, -5, "many")."""
    value = span.attributes.get(key, span.attributes.get(older))
    if isinstance(value, str):  # OTLP/JSON writes an intValue as a string
        try:
            value = int(value)
        except ValueError:
            return None
    return token_count(value)


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
    call_id = str_or_none(attrs.get("gen_ai.tool.call.id"))
    step = ToolStep(name=name, args=None, call_id=call_id, start_ns=span.start_ns,
                    end_ns=None if span.is_backwards else span.end_ns, error=_step_error(span),
                    executed=attrs.get("agent_eval.executed") is not False)
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


Inferred = list[tuple[Span, list[Message] | None, list[Message] | None]]


def issued_calls(inferences: Inferred) -> list[tuple[Call, int]]:
    """Every tool call the model issued (its output messages), once per call id, with the end of its span."""
    found: list[tuple[Call, int]] = []
    seen: set[str] = set()
    for span, _, outputs in inferences:
        for msg in outputs or ():
            for call in msg.calls:
                if call.call_id is not None:
                    if call.call_id in seen:
                        continue
                    seen.add(call.call_id)
                found.append((call, span.end_ns))
    if not found and inferences:  # only the last request's history recorded the calls
        span, inputs, _ = inferences[-1]
        for msg in inputs or ():
            if msg.role == "assistant":
                for call in msg.calls:
                    if call.call_id is None or call.call_id not in seen:
                        seen.add(call.call_id or "")
                        found.append((call, span.start_ns))
    return found


def _message_step(call: Call, at: int, responses: dict[str, Any]) -> ToolStep:
    step = ToolStep(call.name, call.args, call.call_id, start_ns=at, output=responses.get(call.call_id or ""))
    _check_args(step)
    return step


def _with_unexecuted(steps: list[ToolStep], issued: list[tuple[Call, int]]) -> list[ToolStep]:
    """The execute_tool steps plus the issued calls no execute_tool span ran, each placed after the
    step of the call the model issued before it (or by time when there is none)."""
    ran_ids = {s.call_id: s for s in steps if s.call_id is not None}
    plain = [s for s in steps if s.call_id is None]
    out = list(steps)
    previous: ToolStep | None = None
    for call, at in issued:
        ran = ran_ids.get(call.call_id) if call.call_id is not None else None
        if ran is None and (call.call_id is None or not ran_ids):
            ran = next((s for s in plain if s.name == call.name and s.args == call.args), None)
            if ran is not None:
                plain.remove(ran)
        if ran is not None:
            previous = ran
            continue
        step = ToolStep(call.name, call.args, call.call_id, start_ns=at, executed=False)
        _check_args(step)
        step.error = NOT_EXECUTED + (f" ({step.args_problem})" if step.args_problem else "")
        if previous is not None:
            out.insert(next(k for k, s in enumerate(out) if s is previous) + 1, step)
        else:
            out.insert(next((k for k, s in enumerate(out) if (s.start_ns or 0) > at), len(out)), step)
        previous = step
    return out


def _framework_calls(spans: list[Span], issued: list[tuple[Call, int]],
                     ) -> tuple[list[Call], list[tuple[Call, int]]]:
    """(the framework's own calls, the rest): a call of the Agents SDK's handoff tool
    (`transfer_to_<agent>`) where a handoff span says the framework handed over to that agent, or of a
    tool a convention names as the framework's (pydantic-ai's output tools)."""
    own = {_handoff_tool(str(s.attributes[HANDOFF])) for s in spans if s.attributes.get(HANDOFF) is not None}
    for span in spans:
        names = span.attributes.get(FRAMEWORK_TOOLS)
        if isinstance(names, list):
            own.update(n for n in names if isinstance(n, str))
    if not own:
        return [], issued
    return [call for call, _ in issued if call.name in own], [(call, at) for call, at in issued if call.name not in own]


def _handoff_tool(agent: str) -> str:
    """The Agents SDK's default name of the tool that hands over to `agent`."""
    return "transfer_to_" + re.sub(r"[^a-zA-Z0-9_]", "_", agent.replace(" ", "_")).lower()


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


def _own_ids(spans: list[Span]) -> tuple[str | None, int | None]:
    """`agent_eval.case_id` / `agent_eval.trial`, on the traces agent-eval writes of its own runs."""
    for span in spans:
        case_id = span.attributes.get("agent_eval.case_id")
        if case_id is not None:
            trial = span.attributes.get("agent_eval.trial")
            return str(case_id), trial if isinstance(trial, int) and not isinstance(trial, bool) else None
    return None, None


def _backwards(trace_id: str, spans: list[Span]) -> list[str]:
    return [f"trace {trace_id}: span {s.name[:80]!r} (span id {s.span_id}) ends before it starts; "
            "its latency is left null" for s in spans if s.is_backwards]


def _conversation(inferences: Inferred) -> tuple[list[Message], list[Message] | None]:
    """The longest input list seen (system messages dropped) and the output that followed it."""
    best: list[Message] = []
    best_out: list[Message] | None = None
    for _, inputs, outputs in inferences:
        kept = [m for m in inputs or () if m.role not in SYSTEM_ROLES]
        if len(kept) >= len(best) and kept:
            best, best_out = kept, outputs
    return best, best_out


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
    talk = inferences
    if not any(inputs for _, inputs, _ in inferences):
        # agent-eval's own traces (--otel) hold the conversation on the invoke_agent span only
        talk = [(s, input_messages(s), output_messages(s)) for s in spans if operation(s) == AGENT_OP]
        if not any(inputs for _, inputs, _ in talk):
            return ("no user message recorded: no inference span (gen_ai.operation.name chat, text_completion "
                    "or generate_content) has input messages; turn on message content capture")
    longest, _ = _conversation(talk)
    users = [m.text for m in longest if m.role == "user" and m.text is not None]
    if not users:
        return "the inference spans' input messages hold no user message with text"
    with_output = [(inputs, outputs) for _, inputs, outputs in talk if outputs is not None]
    answer = None
    convo: list[Message] = []
    if with_output:
        inputs, outputs = with_output[-1]
        if talk is not inferences:  # one reply per user message, in order
            convo = [m for pair in zip(inputs or (), outputs, strict=False) for m in pair]
            outputs = outputs[-1:]
        else:
            convo = [*(inputs or ()), *outputs]
        # Several output messages are alternative choices (n > 1): the first one is the answer.
        answer = next((m.text for m in outputs if m.role in ("assistant", "") and m.text), None)
    tool_spans = [s for s in spans if operation(s) == TOOL_OP]
    framework, issued = _framework_calls(spans, issued_calls(inferences))
    if tool_spans:
        steps = _with_unexecuted([_tool_step(s, calls, responses) for s in tool_spans], issued)
    else:
        steps = [_message_step(call, at, responses) for call, at in issued]
    inference_records = [Inference(s.start_ns, None if s.is_backwards else s.end_ns, _model(s),
                                   _tokens(s, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
                                   _tokens(s, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"))
                         for s, _, _ in inferences]
    ends = [s.end_ns for s in spans if not s.is_backwards]
    case_id, trial = _own_ids(spans)
    system = next((m.text for _, inputs, _ in talk for m in inputs or () if m.role in SYSTEM_ROLES and m.text), None)
    return Recorded(trace_id=trace_id, user_messages=users, replies=_replies(users, convo, answer), answer=answer,
                    steps=steps, inferences=inference_records, start_ns=min(s.start_ns for s in spans),
                    end_ns=max(ends) if ends else None, agent_error=_agent_error(spans), trace_ids=[trace_id],
                    case_id=case_id, trial=trial, warnings=_backwards(trace_id, spans), framework_calls=framework,
                    system_prompt=system)


def _model(span: Span) -> str | None:
    model = span.attributes.get("gen_ai.request.model") or span.attributes.get("gen_ai.response.model")
    return str(model) if model else None
