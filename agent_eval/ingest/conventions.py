"""The span conventions other than GenAI's that import reads: one row per convention.

Each row translates a span's own attributes into the GenAI attributes `genai.py` reads. A span that
already names its GenAI operation (`gen_ai.operation.name`) is read by those first: its other
conventions only fill in what the GenAI attributes leave out, so it is counted once.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_eval.ingest import logfire, openinference, pydantic_ai, traceloop
from agent_eval.ingest.otlp import Span

Translate = Callable[[Span], "dict[str, Any] | None"]

CONVENTIONS: dict[str, Translate] = {
    "openinference": openinference.translate,
    "logfire": logfire.translate,
    "traceloop": traceloop.translate,
    "pydantic-ai": pydantic_ai.translate,
}


def to_genai(spans: list[Span]) -> list[Span]:
    """The spans with each other convention's attributes added as GenAI ones (never over a GenAI one);
    spans a convention marks as duplicates (logfire's streaming request half) are left out."""
    kept = []
    halves = logfire.streamed_request_halves(spans)
    for span in spans:
        if id(span) in halves:
            continue
        for translate in CONVENTIONS.values():
            found = translate(span)
            if found is None:
                continue
            if found.get(logfire.DROP):
                break
            for key, value in found.items():
                span.attributes.setdefault(key, value)
        else:
            kept.append(span)
    return kept
