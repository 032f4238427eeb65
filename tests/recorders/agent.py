"""The small openai-SDK agent every recording is made of: a chat loop that runs its tools locally.

The conversation, scripted on the loopback server by `SCRIPT`: two user turns; in the first the model
looks order 42 up twice in a row (a recorded mistake), then refunds it; in the second it looks order 7 up.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

from tests.loopback import text, tool_calls

TURNS = ["Refund order 42", "And order 7?"]
SYSTEM = "You are a support agent. Be brief."
TOOLS = [
    {"type": "function", "function": {"name": "lookup_order", "description": "Look an order up.",
                                      "parameters": {"type": "object",
                                                     "properties": {"order_id": {"type": "integer"}},
                                                     "required": ["order_id"]}}},
    {"type": "function", "function": {"name": "refund", "description": "Refund an order.",
                                      "parameters": {"type": "object",
                                                     "properties": {"order_id": {"type": "integer"},
                                                                    "amount": {"type": "number"}},
                                                     "required": ["order_id", "amount"]}}},
]
# (prompt, completion) tokens of each completion, distinct so sums can be checked by hand
USAGE = [(100, 10), (110, 11), (120, 12), (130, 13), (140, 14), (150, 15)]
SCRIPT = [
    tool_calls([("lookup_order", {"order_id": 42}, "call_a")], *USAGE[0]),
    tool_calls([("lookup_order", {"order_id": 42}, "call_b")], *USAGE[1]),
    tool_calls([("refund", {"order_id": 42, "amount": 9.5}, "call_c")], *USAGE[2]),
    text("Refunded 9.50.", *USAGE[3]),
    tool_calls([("lookup_order", {"order_id": 7}, "call_d")], *USAGE[4]),
    text("Order 7 is in transit.", *USAGE[5]),
]
# What the agent really did, for the hand arithmetic of the tests
CALLS = [("lookup_order", {"order_id": 42}), ("lookup_order", {"order_id": 42}),
         ("refund", {"order_id": 42, "amount": 9.5}), ("lookup_order", {"order_id": 7})]
PROMPT_TOKENS = sum(p for p, _ in USAGE)  # 100+110+120+130+140+150 = 750
COMPLETION_TOKENS = sum(c for _, c in USAGE)  # 10+11+12+13+14+15 = 75


def lookup_order(order_id: int) -> str:
    return "paid" if order_id == 42 else "in transit"


def refund(order_id: int, amount: float) -> str:
    return "ok"


IMPLS: dict[str, Callable[..., str]] = {"lookup_order": lookup_order, "refund": refund}
ToolSpan = Callable[[str, str, str], Any]  # (name, call id, arguments) -> a context manager


def run_agent(client: Any, model: str = "gpt-test", tool_span: ToolSpan | None = None) -> list[str]:
    """Play both turns; each tool call runs inside `tool_span(...)` when given. Returns the replies."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    replies = []
    for turn in TURNS:
        messages.append({"role": "user", "content": turn})
        while True:
            response = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
            msg = response.choices[0].message
            if not msg.tool_calls:
                messages.append({"role": "assistant", "content": msg.content})
                replies.append(msg.content)
                break
            messages.append({"role": "assistant", "content": msg.content, "tool_calls": [
                {"id": c.id, "type": "function", "function": {"name": c.function.name,
                                                               "arguments": c.function.arguments}}
                for c in msg.tool_calls]})
            for call in msg.tool_calls:
                span = tool_span(call.function.name, call.id, call.function.arguments) if tool_span else None
                with span or nullcontext():
                    result = IMPLS[call.function.name](**json.loads(call.function.arguments))
                    if span is not None and hasattr(span, "result"):
                        span.result(result)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return replies
