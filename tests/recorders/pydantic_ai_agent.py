"""Record a pydantic-ai agent with pydantic-ai's own OpenTelemetry instrumentation, in its own process.

    python -m tests.recorders.pydantic_ai_agent BASE_URL OUT_DIR

The agent has `lookup_order` and `refund` and a structured output (`Refund`), which pydantic-ai asks for
through a tool of its own, `final_result`: the framework's tool, which has no tool span. The scripted
model (`SCRIPT`): lookup_order(42) twice in a row (a recorded mistake), refund(42, 9.5), then
final_result. OUT_DIR receives traces.jsonl (OTLP/JSON, one export request).
"""
from __future__ import annotations

import sys
from pathlib import Path

from tests.loopback import tool_calls

PROMPT = "Refund order 42"
USAGE = [(100, 10), (110, 11), (120, 12), (130, 13)]
SCRIPT = [
    tool_calls([("lookup_order", {"order_id": 42}, "call_a")], *USAGE[0]),
    tool_calls([("lookup_order", {"order_id": 42}, "call_b")], *USAGE[1]),
    tool_calls([("refund", {"order_id": 42, "amount": 9.5}, "call_c")], *USAGE[2]),
    tool_calls([("final_result", {"order_id": 42, "refunded": 9.5}, "call_f")], *USAGE[3]),
]
PROMPT_TOKENS = sum(p for p, _ in USAGE)  # 100+110+120+130 = 460
COMPLETION_TOKENS = sum(c for _, c in USAGE)  # 10+11+12+13 = 46


def main(argv: list[str]) -> int:
    base_url, out = argv[0], Path(argv[1])
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from openai import AsyncOpenAI
    from pydantic import BaseModel
    from pydantic_ai import Agent, InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from tests.recorders import otlp_files

    class Refund(BaseModel):
        order_id: int
        refunded: float

    spans = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "shop-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(spans))
    client = AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0)
    model = OpenAIChatModel("gpt-test", provider=OpenAIProvider(openai_client=client))
    Agent.instrument_all(InstrumentationSettings(tracer_provider=provider, include_content=True))
    agent = Agent(model, output_type=Refund, system_prompt="You are a support agent. Be brief.")

    @agent.tool_plain
    def lookup_order(order_id: int) -> str:
        """Look an order up."""
        return "paid" if order_id == 42 else "in transit"

    @agent.tool_plain
    def refund(order_id: int, amount: float) -> str:
        """Refund an order."""
        return "ok"

    result = agent.run_sync(PROMPT)
    assert result.output == Refund(order_id=42, refunded=9.5), result.output
    provider.force_flush()
    out.mkdir(parents=True, exist_ok=True)
    otlp_files.write_jsonl(out / "traces.jsonl", [otlp_files.trace_request(list(spans.get_finished_spans()))])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
