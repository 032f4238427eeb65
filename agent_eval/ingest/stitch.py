"""One conversation per case whatever its spans' parents: per-call and per-turn traces, stitched.

A trace whose root is an inference span (instrumentations that give each LLM call its own trace), or
one turn's trace (an agent root, or a root of no GenAI operation, over model calls: the Agents SDK
without a `trace(...)` around the turns), joins an earlier conversation when its first call's input
messages (system messages dropped) begin with that conversation's last input followed by its output
(compared by role and content, ignoring `finish_reason`). A trace that holds only a tool span joins
the conversation that issued its call id, else the one whose model call ended last before it started.
"""
from __future__ import annotations

from dataclasses import dataclass, field
import orjson

from agent_eval.ingest.genai import AGENT_OP, INFERENCE_OPS, SYSTEM_ROLES, TOOL_OP, operation
from agent_eval.ingest.messages import Message, input_messages, output_messages
from agent_eval.ingest.otlp import Span

Key = tuple[str, str, tuple[tuple[str, bytes], ...], str]


def _key(message: Message) -> Key:
    calls = tuple((c.name, orjson.dumps(c.args, option=orjson.OPT_SORT_KEYS)) for c in message.calls)
    response = "" if message.response is None else str(message.response)
    return (message.role, message.text or "", calls, response)


def _keys(messages: list[Message] | None) -> list[Key]:
    return [_key(m) for m in messages or () if m.role not in SYSTEM_ROLES]


@dataclass
class _Conversation:
    trace_ids: list[str]
    tail: list[Key]  # the last call's input followed by its output
    call_ids: set[str] = field(default_factory=set)
    last_end: int = 0


def _roots(spans: list[Span]) -> list[Span]:
    ids = {s.span_id for s in spans}
    return [s for s in spans if not s.parent_id or s.parent_id not in ids]


def _root_op(spans: list[Span]) -> str | None:
    roots = _roots(spans)
    ops = {operation(s) for s in roots}
    if len(ops) != 1:
        return None
    (op,) = ops
    return "inference" if op in INFERENCE_OPS else op


def _joinable(spans: list[Span]) -> bool:
    """A trace of one model call (its root the inference span), or of one turn (a root of the agent's or
    of no GenAI operation, holding model calls: the Agents SDK's trace per `Runner.run`); never one of
    agent-eval's own runs, which name their case."""
    op = _root_op(spans)
    if op == "inference":
        return True
    return (op in (AGENT_OP, None) and any(operation(s) in INFERENCE_OPS for s in spans)
            and not any("agent_eval.case_id" in s.attributes for s in spans))


def stitch(traces: dict[str, list[Span]]) -> list[tuple[list[str], list[Span]]]:
    """The conversations of the traces: (trace ids, earliest first; their spans in start order)."""
    per_call = sorted((tid for tid, spans in traces.items() if _joinable(spans)),
                      key=lambda tid: traces[tid][0].start_ns)
    conversations: list[_Conversation] = []
    by_first: dict[Key, list[_Conversation]] = {}  # the conversations by the first message of their tail
    for tid in per_call:
        spans = traces[tid]
        calls = [s for s in spans if operation(s) in INFERENCE_OPS]
        replies = output_messages(calls[-1]) or []
        inputs, outputs = _keys(input_messages(calls[0])), _keys(replies[:1])
        last_inputs = inputs if len(calls) == 1 else _keys(input_messages(calls[-1]))
        joined = None
        # only a conversation whose tail starts as these inputs do can be continued by them
        for convo in sorted(by_first.get(inputs[0], ()) if inputs else (), key=lambda c: -len(c.tail)):
            if inputs[:len(convo.tail)] == convo.tail:
                joined = convo
                break
        if joined is None:
            joined = _Conversation([], [])
            conversations.append(joined)
        else:
            by_first[joined.tail[0]].remove(joined)
        joined.trace_ids.append(tid)
        joined.tail = last_inputs + outputs
        if joined.tail:
            by_first.setdefault(joined.tail[0], []).append(joined)
        joined.last_end = max(joined.last_end, max(s.end_ns for s in spans))
        for message in replies:
            joined.call_ids.update(c.call_id for c in message.calls if c.call_id)
    for tid in sorted(traces, key=lambda t: traces[t][0].start_ns):
        if _root_op(traces[tid]) != TOOL_OP or not conversations:
            continue
        span = traces[tid][0]
        call_id = span.attributes.get("gen_ai.tool.call.id")
        home = next((c for c in conversations if call_id and str(call_id) in c.call_ids), None)
        if home is None:
            before = [c for c in conversations if c.last_end <= span.start_ns]
            home = max(before, key=lambda c: c.last_end) if before else None
        if home is not None:
            home.trace_ids.append(tid)
    stitched = {t for c in conversations for t in c.trace_ids}
    out: list[tuple[list[str], list[Span]]] = [([tid], traces[tid]) for tid in traces if tid not in stitched]
    for convo in conversations:
        ids = sorted(convo.trace_ids, key=lambda t: traces[t][0].start_ns)
        spans = sorted((s for t in ids for s in traces[t]), key=lambda s: (s.start_ns, s.end_ns))
        out.append((ids, spans))
    out.sort(key=lambda item: item[1][0].start_ns)
    return out
