"""What one pass over an imported BFCL multi-turn suite costs a model, estimated from its gold trajectories.

    .venv/bin/python bench/bfcl_cost.py SUITE_FOLDER [--model gpt-4.1-mini --model gpt-4.1]

For every case it rebuilds the Chat Completions requests the built-in `openai` agent would send if the model
answered exactly as the gold does: per user turn, one completion that makes the turn's gold calls (none on a
turn whose gold is empty) and one that answers in text (`--reply-tokens`, 40 by default). Each request holds
the case's tool schemas and the whole conversation so far, with each tool result the text the suite's tools
return (BFCL's own classes, played here through the suite's backend). Tokens are estimated as characters / 4
(no tokenizer is available offline); prices come from genai-prices, as agent-eval's reports price runs. A
real model that explores, retries or asks makes more completions: this is the floor of a run's cost.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from agent_eval.bench.bfcl.runtime import build_backend, make_tool, suite_tools  # noqa: E402

CHARS_PER_TOKEN = 4


def case_tokens(case: dict[str, Any], schemas: dict[str, dict[str, Any]], reply_tokens: int) -> tuple[int, int, int]:
    """(input tokens, output tokens, completions) of one gold pass over `case`."""
    world = build_backend(case["initial_env"])
    offered = list(case["tools"])
    history: list[Any] = []
    tokens_in = tokens_out = completions = 0
    gold = case["expected_tools"]
    for turn, message in enumerate(case["messages"]):
        offered += (case.get("tools_added") or {}).get(str(turn), [])
        tools_chars = len(orjson.dumps([schemas[name] for name in offered]))
        history.append({"role": "user", "content": message})
        calls = [c for c in gold if c["turn"] == turn]
        if calls:
            tokens_in += (tools_chars + len(orjson.dumps(history))) // CHARS_PER_TOKEN
            made = [{"id": f"call_{i}", "type": "function",
                     "function": {"name": c["name"], "arguments": orjson.dumps(c["args"]).decode()}}
                    for i, c in enumerate(calls)]
            tokens_out += len(orjson.dumps(made)) // CHARS_PER_TOKEN
            history.append({"role": "assistant", "content": None, "tool_calls": made})
            for i, c in enumerate(calls):
                history.append({"role": "tool", "tool_call_id": f"call_{i}",
                                "content": make_tool(c["name"])(world, **c["args"])})
            completions += 1
        tokens_in += (tools_chars + len(orjson.dumps(history))) // CHARS_PER_TOKEN
        tokens_out += reply_tokens
        history.append({"role": "assistant", "content": "x" * reply_tokens * CHARS_PER_TOKEN})
        completions += 1
    return tokens_in, tokens_out, completions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("suite", type=Path)
    parser.add_argument("--model", action="append", default=None)
    parser.add_argument("--reply-tokens", type=int, default=40)
    args = parser.parse_args()
    from genai_prices import Usage, calc_price

    _, schema_list = suite_tools(str(args.suite / "tools.py"))
    schemas = {s["function"]["name"]: s for s in schema_list}
    cases = orjson.loads((args.suite / "cases.json").read_bytes())["cases"]
    totals = [case_tokens(case, schemas, args.reply_tokens) for case in cases]
    tokens_in, tokens_out, completions = (sum(t[i] for t in totals) for i in range(3))
    print(f"{args.suite}: {len(cases)} cases, {completions} completions, ~{tokens_in:,} input and ~{tokens_out:,} "
          f"output tokens ({tokens_in // len(cases):,} / {tokens_out // len(cases):,} per case)")
    for model in args.model or ["gpt-4.1-mini", "gpt-4.1"]:
        price = calc_price(Usage(input_tokens=tokens_in, output_tokens=tokens_out), model_ref=model)
        print(f"  {model}: ${float(price.total_price):.2f} per pass (k=1)")


if __name__ == "__main__":
    main()
