"""Record an Inspect AI eval of the shop agent with inspect_ai itself, against the loopback server.

    python -m tests.recorders.inspect_log BASE_URL OUT_DIR

One task, two samples played for two epochs by Inspect's own tool loop (`use_tools` + `generate`) on
the OpenAI-compatible provider (`openai-api/loop/gpt-test`), scored by `includes()`. The loopback
answers by the conversation so far (`SCRIPT`), so every epoch sees the same model. "refund-42" (target
"9.50"): lookup_order(42), lookup_order(42) again (a recorded mistake), refund(42, 9.5), the answer.
"where-7" (no target): lookup_order(7), the answer.
OUT_DIR receives the log as `.eval` (Inspect's default) and as `--log-format json`.
"""
from __future__ import annotations

import json
import os
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from tests.loopback import router, text, tool_calls


def _reply(messages: list[dict]) -> Any:
    done = sum(1 for m in messages if m.get("role") == "tool")
    if any(m.get("role") == "user" and "order 7" in str(m.get("content")) for m in messages):
        if done == 0:
            return tool_calls([("lookup_order", {"order_id": 7}, "call_d")], 140, 14)
        return text("Order 7 is in transit.", 150, 15)
    usage = (100 + 10 * done, 10 + done)  # 100/10, 110/11, 120/12, 130/13
    if done == 0:
        return tool_calls([("lookup_order", {"order_id": 42}, "call_a")], *usage)
    if done == 1:
        return tool_calls([("lookup_order", {"order_id": 42}, "call_b")], *usage)
    if done == 2:
        return tool_calls([("refund", {"order_id": 42, "amount": 9.5}, "call_c")], *usage)
    return text("Refunded 9.50.", *usage)


SCRIPT = router(_reply)
CALLS_PER_LOG = 24  # two logs (.eval, .json), each two epochs of four model calls (refund-42) and two (where-7)
USAGE = {"refund-42": (100 + 110 + 120 + 130, 10 + 11 + 12 + 13),  # = (460, 46) per epoch
         "where-7": (140 + 150, 14 + 15)}  # = (290, 29) per epoch


def shop_task() -> Any:
    from inspect_ai import Task
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate, system_message, use_tools
    from inspect_ai.tool import tool

    @tool
    def lookup_order() -> Any:
        async def execute(order_id: int) -> str:
            """Look an order up.

            Args:
                order_id: The order's number.
            """
            return "paid" if order_id == 42 else "in transit"
        return execute

    @tool
    def refund() -> Any:
        async def execute(order_id: int, amount: float) -> str:
            """Refund an order.

            Args:
                order_id: The order's number.
                amount: How much to refund.
            """
            return "ok"
        return execute

    return Task(dataset=[Sample(id="refund-42", input="Refund order 42", target="9.50"),
                         Sample(id="where-7", input="Where is order 7?")],
                solver=[system_message("You are a support agent. Be brief."), use_tools(lookup_order(), refund()),
                        generate()],
                scorer=includes(), epochs=2, name="shop")


def main(argv: list[str]) -> int:
    base_url, out = argv[0], Path(argv[1]).resolve()
    os.environ.update(LOOP_API_KEY="test", LOOP_BASE_URL=base_url)
    from inspect_ai import eval as inspect_eval

    out.mkdir(parents=True, exist_ok=True)
    for log_format in ("eval", "json"):
        (log,) = inspect_eval(shop_task(), model="openai-api/loop/gpt-test", log_dir=str(out / log_format),
                              log_format=log_format, display="none", max_connections=1)
        assert log.status == "success", log.error
        produced = Path(log.location.removeprefix("file://"))
        produced.rename(out / f"shop.{log_format}")
        (out / log_format).rmdir()
    (out / "versions.json").write_text(json.dumps({"setup": "inspect", "options": {
        "model": "openai-api/loop/gpt-test", "epochs": 2, "log_format": ["eval", "json"]}, "versions": {
        "inspect-ai": metadata.version("inspect-ai")}}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
