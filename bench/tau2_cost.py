"""What a tau2 run costs, estimated from the gold trajectories (no model is called).

    python bench/tau2_cost.py SUITE_FOLDER [--model gpt-4.1-mini --model gpt-4.1] [--trials 4]

For every case of an imported suite, a run is modelled on its gold: the agent makes exactly the gold calls
(one completion each, its input the system prompt, the tool schemas and the dialogue so far, the tool results
being the gold calls' real observations), and sends one text after every two calls and at the end; the
simulated user speaks once per agent text plus once to open (one completion each, its input the user prompt
with the scenario and the dialogue without tool messages). Tokens are counted as characters / 4 (no
tokenizer is available offline). The agent's and the user's model are the same. No prompt caching is
counted, so this is an upper bound for providers that cache. Prices come from genai-prices.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CALL_OUT, TEXT_OUT, USER_OUT = 40, 60, 30  # tokens the model writes: a call, an agent text, a user message


def tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def completions(case: dict[str, Any], system: int, schemas: int, user_prompt: int,
                observations: list[str]) -> list[tuple[str, int, int]]:
    """(who, input tokens, output tokens) of each completion of one modelled run of `case`."""
    calls = case["expected_tools"]
    scenario = user_prompt + tokens(case["scenario"])
    out = [("user", scenario, USER_OUT)]  # the user's opening message
    dialogue = user_dialogue = USER_OUT
    for n, seen in enumerate(observations, start=1):
        out.append(("agent", system + schemas + dialogue, CALL_OUT))
        dialogue += CALL_OUT + tokens(seen)
        if n % 2 == 0 or n == len(calls):
            out.append(("agent", system + schemas + dialogue, TEXT_OUT))
            dialogue += TEXT_OUT + USER_OUT
            user_dialogue += TEXT_OUT
            out.append(("user", scenario + user_dialogue, USER_OUT))
            user_dialogue += USER_OUT
    if not calls:
        out.append(("agent", system + schemas + dialogue, TEXT_OUT))
        out.append(("user", scenario + user_dialogue + TEXT_OUT, USER_OUT))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite", type=Path)
    parser.add_argument("--model", action="append")
    parser.add_argument("--trials", type=int, default=4)
    args = parser.parse_args()
    from genai_prices import Usage, calc_price

    from agent_eval.suite.tool_loading import load_tools

    document = orjson.loads((args.suite / "cases.json").read_bytes())
    suite, cases = document["suite"], document["cases"]
    tools = load_tools("tools.py", args.suite)
    assert tools.backend is not None
    system = tokens(suite["system_prompt"])
    schemas = tokens((args.suite / "tools.json").read_text())
    user_prompt = tokens(suite["user"]["prompt"])
    made: list[tuple[str, int, int]] = []
    for case in cases:
        world = tools.backend.build({"db": "db.json"})
        seen = []
        for call in case["expected_tools"]:
            try:
                seen.append(str(tools.invoke(call["name"], dict(call["args"]), world)))
            except Exception as exc:  # noqa: BLE001 - an error's text is what the model reads
                seen.append(f"Error: {exc}")
        made += completions(case, system, schemas, user_prompt, seen)
    for who in ("agent", "user"):
        mine = [m for m in made if m[0] == who]
        print(f"{suite['name']} ({len(cases)} cases), {who}: {len(mine)} completions, "
              f"{sum(m[1] for m in mine):,} input and {sum(m[2] for m in mine):,} output tokens per trial")
    for model in args.model or ["gpt-4.1-mini", "gpt-4.1"]:
        price = sum(float(calc_price(Usage(input_tokens=i, output_tokens=o), model_ref=model).total_price)
                    for _, i, o in made)
        print(f"  {model}: ${price:.2f} per trial, ${price * args.trials:.2f} for k={args.trials}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
