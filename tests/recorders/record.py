"""Record the agent of tests/recorders/agent.py with a real instrumentation library, in its own process.

    python -m tests.recorders.record SETUP BASE_URL OUT_DIR [--root] [--tool-spans] [--content span|events]

Instrumentations patch the openai module for the whole process and read their settings once, so each
recording is made in a fresh interpreter. OUT_DIR receives traces.jsonl (OTLP/JSON lines, one export
request per LLM call batch), traces.pb (one ExportTraceServiceRequest), traces.pbd (two requests,
length-delimited) and, when the library wrote log records, logs.jsonl.
"""
from __future__ import annotations

import argparse
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def _setup_env(setup: str, content: str) -> None:
    if setup == "openai-v2":
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = \
            "SPAN_ONLY" if content == "span" else "EVENT_ONLY"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("setup", choices=["openai-v2", "openinference", "openllmetry", "logfire-v1", "logfire-v2"])
    parser.add_argument("base_url")
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--root", action="store_true", help="wrap the conversation in an agent span")
    parser.add_argument("--tool-spans", action="store_true", help="run each tool call in a tool span")
    parser.add_argument("--content", choices=["span", "events"], default="span")
    args = parser.parse_args(argv)
    _setup_env(args.setup, args.content)

    import openai
    import orjson
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tests.recorders import otlp_files
    from tests.recorders.agent import run_agent

    resource = Resource.create({"service.name": "shop-agent"})
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logs = InMemoryLogRecordExporter()
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    tracer = tracer_provider.get_tracer("shop-agent")

    if args.setup == "openai-v2":
        _util_genai_shim()
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
        tool_span = _genai_tool_span(tracer) if args.tool_spans else None
        root = _genai_agent_span(tracer) if args.root else None
    elif args.setup == "openinference":
        from openinference.instrumentation.openai import OpenAIInstrumentor as OIInstrumentor

        OIInstrumentor().instrument(tracer_provider=tracer_provider)
        tool_span = _openinference_tool_span(tracer) if args.tool_spans else None
        root = _openinference_agent_span(tracer) if args.root else None
    elif args.setup == "openllmetry":
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor as TraceloopInstrumentor

        TraceloopInstrumentor().instrument(tracer_provider=tracer_provider)
        tool_span = _genai_tool_span(tracer) if args.tool_spans else None
        root = _genai_agent_span(tracer) if args.root else None
    else:
        import logfire

        logfire.configure(send_to_logfire=False, console=False, service_name="shop-agent",
                          additional_span_processors=[SimpleSpanProcessor(spans)])
        logfire.instrument_openai(version=int(args.setup.removeprefix("logfire-v")))  # type: ignore[arg-type]
        tool_span = None
        root = (lambda: logfire.span("support conversation")) if args.root else None
        tracer_provider.force_flush = logfire.force_flush  # type: ignore[method-assign]

    client = openai.OpenAI(base_url=args.base_url, api_key="test", max_retries=0)
    if root is not None:
        with root():
            run_agent(client, tool_span=tool_span)
    else:
        run_agent(client, tool_span=tool_span)
    tracer_provider.force_flush()
    logger_provider.force_flush()

    finished = list(spans.get_finished_spans())
    out: Path = args.out_dir
    out.mkdir(parents=True, exist_ok=True)
    otlp_files.write_jsonl(out / "traces.jsonl", [otlp_files.trace_request(finished)])
    otlp_files.write_protobuf(out / "traces.pb", [otlp_files.trace_request(finished)])
    half = len(finished) // 2
    otlp_files.write_protobuf(out / "traces.pbd", [otlp_files.trace_request(finished[:half]),
                                                   otlp_files.trace_request(finished[half:])], delimited=True)
    from importlib import metadata

    libraries = {"openai-v2": "opentelemetry-instrumentation-openai-v2", "openinference":
                 "openinference-instrumentation-openai", "openllmetry": "opentelemetry-instrumentation-openai"}
    library = libraries.get(args.setup, "logfire")
    options = {"root": args.root, "tool_spans": args.tool_spans, "content": args.content}
    (out / "versions.json").write_text(orjson.dumps({"setup": args.setup, "options": options, "versions": {
        name: metadata.version(name) for name in (library, "openai", "opentelemetry-sdk")}},
        option=orjson.OPT_INDENT_2).decode() + "\n")
    records = list(logs.get_finished_logs())
    if records:
        otlp_files.write_jsonl(out / "logs.jsonl", [otlp_files.logs_request(records)])
    return 0


def _util_genai_shim() -> None:
    """openai-v2 2.4b0 imports `opentelemetry.util.genai.instruments`, which util-genai 1.3b0 (the one
    installed beside it) renamed; give it the two histogram factories it asks for, as 1.3b0 makes them."""
    try:
        import opentelemetry.util.genai.instruments  # noqa: F401
        return
    except ModuleNotFoundError:
        pass
    import types

    shim = types.ModuleType("opentelemetry.util.genai.instruments")
    shim.create_duration_histogram = lambda meter: meter.create_histogram(  # type: ignore[attr-defined]
        "gen_ai.client.operation.duration", unit="s", description="GenAI operation duration")
    shim.create_token_histogram = lambda meter: meter.create_histogram(  # type: ignore[attr-defined]
        "gen_ai.client.token.usage", unit="{token}", description="Measures number of input and output tokens used")
    sys.modules[shim.__name__] = shim
    from opentelemetry.util.genai.handler import TelemetryHandler

    # ...and the handler methods it calls, under their 1.3b0 names
    handler: Any = TelemetryHandler
    if not hasattr(handler, "start_inference"):
        handler.start_inference = lambda self, provider, **kw: self.inference(provider, **kw)
        handler.stop_llm = lambda self, invocation: invocation.stop()
        handler.fail_llm = lambda self, invocation, error: invocation.fail(error)


class _ToolSpan:
    """A context manager around one tool call whose result the agent hands back (`result`)."""

    def __init__(self, cm: Any, on_result: Any) -> None:
        self._cm, self._on_result, self._span = cm, on_result, None

    def __enter__(self) -> _ToolSpan:
        self._span = self._cm.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self._cm.__exit__(*exc)

    def result(self, value: str) -> None:
        self._on_result(self._span, value)


def _genai_tool_span(tracer: Any) -> Any:
    """An execute_tool span as the GenAI conventions name it (the instrumentation writes none itself)."""
    def make(name: str, call_id: str, arguments: str) -> _ToolSpan:
        attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "gen_ai.tool.call.id": call_id,
                 "gen_ai.tool.call.arguments": arguments, "gen_ai.tool.type": "function"}
        return _ToolSpan(tracer.start_as_current_span(f"execute_tool {name}", attributes=attrs),
                         lambda span, value: span.set_attribute("gen_ai.tool.call.result", value))
    return make


def _genai_agent_span(tracer: Any) -> Any:
    attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support"}
    return lambda: tracer.start_as_current_span("invoke_agent support", attributes=attrs)


def _openinference_tool_span(tracer: Any) -> Any:
    """A TOOL span as OpenInference's manual instrumentation writes one (tool.parameters is the schema)."""
    from openinference.semconv.trace import OpenInferenceSpanKindValues, SpanAttributes

    from tests.recorders.agent import TOOLS

    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}

    def make(name: str, call_id: str, arguments: str) -> _ToolSpan:
        import json

        attrs = {SpanAttributes.OPENINFERENCE_SPAN_KIND: OpenInferenceSpanKindValues.TOOL.value,
                 SpanAttributes.TOOL_NAME: name, SpanAttributes.TOOL_PARAMETERS: json.dumps(schemas[name]),
                 SpanAttributes.INPUT_VALUE: arguments, SpanAttributes.INPUT_MIME_TYPE: "application/json",
                 "tool_call.id": call_id}
        return _ToolSpan(tracer.start_as_current_span(name, attributes=attrs),
                         lambda span, value: span.set_attribute(SpanAttributes.OUTPUT_VALUE, value))
    return make


def _openinference_agent_span(tracer: Any) -> Any:
    from openinference.semconv.trace import OpenInferenceSpanKindValues, SpanAttributes

    @contextmanager
    def root() -> Any:
        attrs = {SpanAttributes.OPENINFERENCE_SPAN_KIND: OpenInferenceSpanKindValues.AGENT.value,
                 SpanAttributes.INPUT_VALUE: "Refund order 42"}
        with tracer.start_as_current_span("support agent", attributes=attrs) as span:
            yield span
    return root


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
