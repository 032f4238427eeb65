"""The terminal's dialogue section in 100 columns: a long tool call wraps under its arrow."""
from __future__ import annotations

import io

from rich.console import Console

from agent_eval.report.dialogue_section import render_dialogue


def test_a_long_tool_call_wraps_under_its_arrow_in_100_columns() -> None:
    output = '{"order_id":"ORD_1003","customer_id":"C002","status":"processing","items":[{"sku":"SNK-210"}]}'
    step = {"step": 0, "type": "tool_call", "name": "get_order", "args": {"order_id": "ORD_1003"}, "output": output}
    trace = {"user_messages": ["Change the address of ORD_1003"], "replies": ["What is the new address?"],
             "turn_steps": [1], "steps": [step], "stop_reason": "max_turns"}
    run = {"trial": 0, "status": "failed", "success": False, "checks": [], "metrics": {"turns": 1}, "trace": trace}
    report = {"cases": [{"id": "address", "status": "failed", "runs": [run]}], "summary": {}, "settings": {}}
    out = io.StringIO()
    render_dialogue(report, Console(file=out, width=100, color_system=None))
    lines = out.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if "↳ get_order" in line)
    end = next(i for i, line in enumerate(lines) if line.lstrip().startswith("agent"))
    assert end - start >= 2  # the call and its output do not fit one line of 100 columns
    assert all(line.startswith(" " * 6) and len(line) <= 100 for line in lines[start:end]), lines[start:end]
