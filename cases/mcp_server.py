"""The support-demo shop served over MCP (stdio): the same orders and rules as tools.py, one process per run.

agent-eval starts this server for every run, with the run's initial env in the JSON file named by
AGENT_EVAL_ENV_FILE, and reads the `state://env` resource at the start and the end of the run: that is
the run's env, which `expected_env_check` looks at. The shop's rules are tools.py's own functions, so
the Python suite and this one can never disagree about what a refund does.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import tools  # tools.py beside this file: the shop's rules, as plain functions of (env, ...)
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

# Run by hand (or shared, with no env file), the server starts from the suite's env.json.
with open(os.environ.get("AGENT_EVAL_ENV_FILE") or Path(__file__).with_name("env.json"), encoding="utf-8") as f:
    STATE: dict = json.load(f)

server = MCPServer("support-shop")


def _run(fn: Any, **args: Any) -> str:
    """Run one shop rule on the state; its exception is a tool error, worded as agent-eval words them."""
    try:
        result = fn(STATE, **args)
    except Exception as exc:  # noqa: BLE001
        raise ToolError(f"{type(exc).__name__}: {exc}") from None
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"))


@server.tool()
def get_order(order_id: str) -> str:
    """Look up one order: its status, items, total, shipping address, carrier and tracking number."""
    return _run(tools.get_order, order_id=order_id)


@server.tool()
def refund_order(order_id: str, reason: str, amount: float | None = None) -> str:
    """Refund a delivered order, in full or in part. Refused if it is not delivered or already refunded."""
    return _run(tools.refund_order, order_id=order_id, reason=reason, amount=amount)


@server.tool()
def cancel_order(order_id: str) -> str:
    """Cancel an order that has not shipped yet (status "processing"); the payment is voided."""
    return _run(tools.cancel_order, order_id=order_id)


@server.tool()
def transfer_to_human(reason: str) -> str:
    """Hand the conversation to a human support agent, who answers the customer by email."""
    return _run(tools.transfer_to_human, reason=reason)


# The ~10 lines that let agent-eval check the state: the env comes in as a file, goes out as a resource.
@server.resource("state://env")
def state() -> str:
    return json.dumps(STATE, ensure_ascii=False)


if __name__ == "__main__":
    server.run()
