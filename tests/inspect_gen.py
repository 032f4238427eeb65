"""Inspect AI logs for tests, in the shapes inspect_ai writes (its log/_log.py EvalSample and
log/_recorders/eval.py): `.eval` zips whose members Inspect compresses with zstd (zip method 93),
and `--log-format json` EvalLogs. inspect-ai is not installed here, so these follow its source."""
from __future__ import annotations

import struct
import time
import zlib
from typing import Any

import orjson
import zstandard

from tests.recorders.agent import SYSTEM, TURNS


def _call(call_id: str, name: str, args: dict) -> dict:
    return {"id": call_id, "function": name, "arguments": args, "type": "function"}


def sample(epoch: int = 1, target: Any = "transit", sample_id: Any = "refund-42") -> dict[str, Any]:
    """The agent of tests/recorders/agent.py as an Inspect sample: two user turns, four tool calls
    (lookup_order(42) twice in a row), 750 input and 75 output tokens."""
    messages = [
        {"id": "m0", "role": "system", "content": SYSTEM},
        {"id": "m1", "role": "user", "content": TURNS[0], "source": "input"},
        {"id": "m2", "role": "assistant", "content": "", "tool_calls": [_call("call_a", "lookup_order",
                                                                              {"order_id": 42})], "model": "gpt-test"},
        {"id": "m3", "role": "tool", "content": "paid", "tool_call_id": "call_a", "function": "lookup_order"},
        {"id": "m4", "role": "assistant", "content": "", "tool_calls": [_call("call_b", "lookup_order",
                                                                              {"order_id": 42})], "model": "gpt-test"},
        {"id": "m5", "role": "tool", "content": "paid", "tool_call_id": "call_b", "function": "lookup_order"},
        {"id": "m6", "role": "assistant", "content": "", "tool_calls": [
            _call("call_c", "refund", {"order_id": 42, "amount": 9.5})], "model": "gpt-test"},
        {"id": "m7", "role": "tool", "content": "ok", "tool_call_id": "call_c", "function": "refund"},
        {"id": "m8", "role": "assistant", "content": [{"type": "text", "text": "Refunded 9.50."}], "model": "gpt-test"},
        {"id": "m9", "role": "user", "content": "attachment://b1946ac92492d2347c6235b4d2611184", "source": "input"},
        {"id": "m10", "role": "assistant", "content": "", "tool_calls": [_call("call_d", "lookup_order",
                                                                               {"order_id": 7})], "model": "gpt-test"},
        {"id": "m11", "role": "tool", "content": "in transit", "tool_call_id": "call_d", "function": "lookup_order"},
        {"id": "m12", "role": "assistant", "content": "Order 7 is in transit.", "model": "gpt-test"},
    ]
    usage = {"input_tokens": 750, "output_tokens": 75, "total_tokens": 825}
    out = {"id": sample_id, "epoch": epoch,
           "input": [messages[0], messages[1], {"id": "u2", "role": "user", "content": TURNS[1]}],
           "target": target, "messages": messages,
           "output": {"model": "gpt-test", "choices": [{"message": messages[-1], "stop_reason": "stop"}],
                      "usage": usage},
           "scores": {"includes": {"value": "C", "answer": "Order 7 is in transit."}},
           "metadata": {"shop": "demo"}, "store": {}, "events": [],
           "model_usage": {"openai/gpt-test": usage}, "total_time": 2.5, "working_time": 2.0,
           "uuid": f"uuid-{epoch}", "attachments": {"b1946ac92492d2347c6235b4d2611184": TURNS[1]}}
    if target is None:
        del out["target"]
    return out


def eval_log_json(samples: list[dict]) -> bytes:
    """A `--log-format json` log: the EvalLog with its samples."""
    return orjson.dumps({"version": 2, "status": "success", "eval": {"task": "refunds", "model": "openai/gpt-test"},
                         "plan": {}, "results": {}, "stats": {}, "samples": samples}, option=orjson.OPT_INDENT_2)


def eval_zip(members: dict[str, bytes], zstd: bool = True) -> bytes:
    """A zip as Inspect writes an `.eval`: each member compressed with zstd (method 93), else deflate."""
    local, central = b"", b""
    dos_time, dos_date = 0, (2026 - 1980) << 9 | 1 << 5 | 1
    for name, data in members.items():
        if zstd:
            body, method, version = zstandard.ZstdCompressor().compress(data), 93, 63
        else:
            deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
            body, method, version = deflate.compress(data) + deflate.flush(), 8, 20
        crc = zlib.crc32(data)
        raw = name.encode()
        offset = len(local)
        local += struct.pack("<IHHHHHIIIHH", 0x04034B50, version, 0, method, dos_time, dos_date, crc, len(body),
                             len(data), len(raw), 0) + raw + body
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, version, version, 0, method, dos_time, dos_date,
                               crc, len(body), len(data), len(raw), 0, 0, 0, 0, 0, offset) + raw
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central), len(local), 0)
    return local + central + end


def eval_log(samples: list[dict], zstd: bool = True) -> bytes:
    """An `.eval` log: header.json, one samples/{id}_epoch_{epoch}.json member per sample, summaries.json."""
    members = {"header.json": orjson.dumps({"version": 2, "status": "success",
                                            "eval": {"task": "refunds", "model": "openai/gpt-test",
                                                     "created": time.strftime("%Y-%m-%dT%H:%M:%S")}})}
    for s in samples:
        members[f"samples/{s['id']}_epoch_{s['epoch']}.json"] = orjson.dumps(s)
    members["summaries.json"] = orjson.dumps([{"id": s["id"], "epoch": s["epoch"]} for s in samples])
    return eval_zip(members, zstd)
