"""A multi-megabyte shared env: the per-run copy, the final_env_diff, and whole runs replaying trajectories.

    .venv/bin/python bench/large_env.py [--orders 6000] [--cases 100] [--repeat 4]

It builds a retail database like a public benchmark's (users, products, orders), a tools module over it,
and cases whose Python agent replays a fixed trajectory (two lookups and one write), then reports:
- the cost of one private env copy by copy.deepcopy and by an orjson round trip of pre-serialised bytes;
- the cost of final_env_diff for an untouched env and for an env with one write;
- wall time, runs per second and peak RSS of `agent-eval run` on that suite (a subprocess).
"""
from __future__ import annotations

import argparse
import copy
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agent_eval.run.world import EnvTemplate  # noqa: E402

TOOLS = '''
from agent_eval import tool

@tool
def get_order(order_id: str, env: dict) -> dict:
    """Look up an order.

    Args:
        order_id: The order id.
    """
    return env["orders"][order_id]

@tool
def get_user(user_id: str, env: dict) -> dict:
    """Look up a user.

    Args:
        user_id: The user id.
    """
    return env["users"][user_id]

@tool
def cancel_order(order_id: str, reason: str, env: dict) -> dict:
    """Cancel a pending order.

    Args:
        order_id: The order id.
        reason: Why.
    """
    order = env["orders"][order_id]
    if order["status"] != "pending":
        raise ValueError(f"order {order_id} is {order['status']}")
    order["status"] = "cancelled"
    order["cancel_reason"] = reason
    return order
'''

AGENT = '''
import json

def agent(task):
    order_id = task.metadata["order_id"]
    order = json.loads(task.call_tool("get_order", order_id=order_id))
    task.call_tool("get_user", user_id=order["user_id"])
    task.call_tool("cancel_order", order_id=order_id, reason="no longer needed")
    return f"Order {order_id} is cancelled."
'''


def build_env(orders: int) -> dict:
    users = {f"user_{i}": {"user_id": f"user_{i}", "name": f"User {i}", "email": f"user{i}@example.com",
                           "address": {"street": f"{i} Main St", "city": "Springfield", "zip": f"{10000 + i}"},
                           "payment_methods": [{"id": f"card_{i}", "brand": "visa", "last4": f"{i % 10000:04d}"}]}
             for i in range(orders // 3)}
    products = {f"prod_{i}": {"product_id": f"prod_{i}", "name": f"Product {i}",
                              "variants": [{"sku": f"sku_{i}_{v}", "price": 10.0 + v, "available": v % 2 == 0}
                                           for v in range(4)]}
                for i in range(200)}
    order_map = {f"#W{i:07d}": {"order_id": f"#W{i:07d}", "user_id": f"user_{i % (orders // 3)}",
                                "status": "pending" if i % 2 == 0 else "delivered",
                                "items": [{"sku": f"sku_{i % 200}_{j}", "price": 10.0 + j, "qty": 1} for j in range(3)],
                                "history": [{"at": "2024-05-01T10:00:00", "event": "placed"}]}
                 for i in range(orders)}
    return {"users": users, "products": products, "orders": order_map}


def per_call_us(fn, number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--orders", type=int, default=6000)
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=4)
    args = parser.parse_args(argv)

    env = build_env(args.orders)
    blob = orjson.dumps(env)
    print(f"env: {len(blob) / 1e6:.1f} MB of JSON ({args.orders} orders)")
    template = EnvTemplate(env)
    print(f"  copy.deepcopy          {per_call_us(lambda: copy.deepcopy(env), 5) / 1000:8.2f} ms")
    print(f"  orjson.loads(bytes)    {per_call_us(template.fresh, 20) / 1000:8.2f} ms   (what each run pays)")
    untouched = template.fresh()
    written = template.fresh()
    written["orders"]["#W0000000"]["status"] = "cancelled"
    print(f"  diff, untouched env    {per_call_us(lambda: template.diff(untouched), 20) / 1000:8.2f} ms")
    print(f"  diff, one write        {per_call_us(lambda: template.diff(written), 5) / 1000:8.2f} ms")

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "tools.py").write_text(TOOLS)
        (folder / "agent.py").write_text(AGENT)
        (folder / "db.json").write_bytes(blob)
        cases = [{"id": f"cancel-{i}", "query": "Please cancel my order.", "metadata": {"order_id": f"#W{2 * i:07d}"},
                  "expected_tools": [{"name": "get_order", "args": {"order_id": f"#W{2 * i:07d}"}},
                                     {"name": "get_user"},
                                     {"name": "cancel_order", "args": {"order_id": f"#W{2 * i:07d}"}}],
                  "trajectory": "unordered",
                  "expected_env_check": [{"path": ["orders", f"#W{2 * i:07d}", "status"], "equals": "cancelled"}]}
                 for i in range(args.cases)]
        suite = {"suite": {"name": "large-env", "tools": "tools.py", "agent": "agent.py:agent",
                           "initial_env": "db.json"}, "cases": cases}
        (folder / "cases.json").write_bytes(orjson.dumps(suite))
        command = [sys.executable, "-m", "agent_eval.cli", "run", "--cases", str(folder / "cases.json"),
                   "-k", str(args.repeat), "--quiet", "--no-html", "--output-dir", str(folder / "out")]
        start = time.perf_counter()
        proc = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ))
        wall = time.perf_counter() - start
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        runs = args.cases * args.repeat
        print(f"agent-eval run: {runs} runs, exit {proc.returncode}, {wall:.2f} s wall "
              f"({runs / wall:.0f} runs/s, {wall / runs * 1000:.1f} ms per run incl. start-up), peak RSS {rss:.0f} MiB")
        print("  " + proc.stdout.strip().splitlines()[0])
        return 0 if proc.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
