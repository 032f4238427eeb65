"""Record an OpenAI Agents SDK agent with a real tracing integration, in its own process.

    python -m tests.recorders.agents_sdk SETUP BASE_URL OUT_DIR [--responses]   (SETUP: openinference | logfire)

The agent: "Support" has `lookup_order` and a handoff to "Refunds", which has `refund`. Both user turns
run inside one SDK `trace(...)`, as a conversation is usually traced, so they are one trace. The
scripted model (`SCRIPT`): turn 1 looks order 42 up twice in a row (a recorded mistake), hands off to
Refunds (`transfer_to_refunds`, the framework's own tool) and refunds it; turn 2 looks order 7 up.
The model is the SDK's `OpenAIChatCompletionsModel`, or with --responses its default, `OpenAIResponsesModel`.
OUT_DIR receives traces.jsonl (OTLP/JSON, one export request) and versions.json (the libraries used).
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
from importlib import metadata
from pathlib import Path

from tests.loopback import text, tool_calls

TURNS = ["Refund order 42", "And order 7?"]
SYSTEM = "You are a support agent. Be brief."
# (prompt, completion) tokens of each completion, distinct so sums can be checked by hand
USAGE = [(100, 10), (110, 11), (115, 5), (120, 12), (130, 13), (140, 14), (150, 15)]
SCRIPT = [
    tool_calls([("lookup_order", {"order_id": 42}, "call_a")], *USAGE[0]),
    tool_calls([("lookup_order", {"order_id": 42}, "call_b")], *USAGE[1]),
    tool_calls([("transfer_to_refunds", {}, "call_h")], *USAGE[2]),
    tool_calls([("refund", {"order_id": 42, "amount": 9.5}, "call_c")], *USAGE[3]),
    text("Refunded 9.50.", *USAGE[4]),
    tool_calls([("lookup_order", {"order_id": 7}, "call_d")], *USAGE[5]),
    text("Order 7 is in transit.", *USAGE[6]),
]
PROMPT_TOKENS = sum(p for p, _ in USAGE)  # 100+110+115+120+130+140+150 = 865
COMPLETION_TOKENS = sum(c for _, c in USAGE)  # 10+11+5+12+13+14+15 = 80
LIBRARIES = {"openinference": ["openai-agents", "openinference-instrumentation-openai-agents",
                               "opentelemetry-sdk"],
             "logfire": ["openai-agents", "logfire", "opentelemetry-sdk"]}


async def converse(base_url: str, responses: bool = False, one_trace: bool = True) -> list[str]:
    from agents import Agent, OpenAIChatCompletionsModel, OpenAIResponsesModel, Runner, function_tool, trace
    from openai import AsyncOpenAI

    @function_tool
    def lookup_order(order_id: int) -> str:
        """Look an order up."""
        return "paid" if order_id == 42 else "in transit"

    @function_tool
    def refund(order_id: int, amount: float) -> str:
        """Refund an order."""
        return "ok"

    client = AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0)
    model = (OpenAIResponsesModel if responses else OpenAIChatCompletionsModel)(model="gpt-test", openai_client=client)
    refunds = Agent(name="Refunds", instructions="You refund orders.", tools=[refund], model=model)
    support = Agent(name="Support", instructions=SYSTEM, tools=[lookup_order], handoffs=[refunds], model=model)
    replies = []
    with trace("Support conversation") if one_trace else contextlib.nullcontext():
        first = await Runner.run(support, TURNS[0])
        replies.append(str(first.final_output))
        second = await Runner.run(support, [*first.to_input_list(), {"role": "user", "content": TURNS[1]}])
        replies.append(str(second.final_output))
    return replies


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("setup", choices=sorted(LIBRARIES))
    parser.add_argument("base_url")
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--responses", action="store_true", help="the SDK's default model: the Responses API")
    parser.add_argument("--trace-per-turn", action="store_true", help="no trace(...) around the turns")
    args = parser.parse_args(argv)
    os.environ.pop("OPENAI_API_KEY", None)  # the SDK's own trace exporter stays off: it sends nothing

    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tests.recorders import otlp_files

    spans = InMemorySpanExporter()
    if args.setup == "openinference":
        from agents import set_trace_processors
        from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

        provider = TracerProvider(resource=Resource.create({"service.name": "shop-agent"}))
        provider.add_span_processor(SimpleSpanProcessor(spans))
        set_trace_processors([])  # no processor of the SDK's own: only OpenInference's
        OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
        flush = provider.force_flush
    else:
        import logfire

        logfire.configure(send_to_logfire=False, console=False, service_name="shop-agent",
                          additional_span_processors=[SimpleSpanProcessor(spans)])
        logfire.instrument_openai_agents()
        flush = logfire.force_flush
    replies = asyncio.run(converse(args.base_url, args.responses, not args.trace_per_turn))
    flush()
    out: Path = args.out_dir
    out.mkdir(parents=True, exist_ok=True)
    otlp_files.write_jsonl(out / "traces.jsonl", [otlp_files.trace_request(list(spans.get_finished_spans()))])
    versions = {name: metadata.version(name) for name in LIBRARIES[args.setup]}
    (out / "versions.json").write_text(json.dumps({"setup": args.setup, "options": {"responses": args.responses,
                                                                                 "trace_per_turn": args.trace_per_turn},
                                                   "versions": versions, "replies": replies}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
