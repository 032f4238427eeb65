"""Token counts: which ones are valid, and their sums.

A provider's (or a recorded span's) token count that is not an integer in 0 .. 2**53 - 1 is data, not a
crash: it is stored as null, counted in the run's `metrics.usage_invalid`, and makes the run's cost null.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson

MAX_TOKENS = 2**53 - 1
"""The largest token count a JSON reader holds exactly."""
TOKEN_KEYS = ("prompt_tokens", "completion_tokens")
USAGE_PATHS = ("/chat/completions", "/responses")
"""The paths under /v1 whose answers carry a usage (the recording endpoint reads it from either shape)."""


def token_count(value: Any) -> int | None:
    """value as a token count: an int (or an integral float such as 12.0) in 0 .. 2**53 - 1, else None.

    A bool is not a count; a missing value (None) is 0, not invalid."""
    if value is None:
        return 0
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value <= MAX_TOKENS else None
    if isinstance(value, float):
        return int(value) if value.is_integer() and 0 <= value <= MAX_TOKENS else None
    return None


def sum_tokens(counts: Iterable[int | None]) -> int | None:
    """The sum of the valid counts (null ones are left out); None when it would pass 2**53 - 1."""
    total = 0
    for count in counts:
        if count is not None:
            total += count
            if total > MAX_TOKENS:
                return None
    return total


def has_usage(call: Mapping[str, Any]) -> bool:
    """True when a usage record's counts were read from an answer: not a request that got none (the agent
    hung up: `client_closed`; a failure) nor a path that carries no usage (`GET /models`)."""
    status, path = call.get("status"), call.get("path")
    answered = status is None and "status" not in call or (
        isinstance(status, int) and not isinstance(status, bool) and 200 <= status < 300)
    return answered and (path is None or path in USAGE_PATHS)


def invalid_counts(llm_calls: Iterable[Mapping[str, Any]]) -> int:
    """How many token counts of these usage records are null (a provider's impossible number); a record
    with no usage to read (`has_usage`) has none."""
    return sum(1 for call in llm_calls if has_usage(call) for key in TOKEN_KEYS if key in call and call[key] is None)


def loads_answer(raw: bytes | str) -> Any:
    """An answer's JSON, read by orjson; when orjson refuses a legal number it cannot hold as a double
    (1e309), by the standard library instead, which makes it inf (then an impossible token count, not
    an unreadable answer). orjson.JSONDecodeError when neither can read it."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        import json

        try:
            return json.loads(raw)
        except (ValueError, RecursionError):
            raise orjson.JSONDecodeError("not JSON", "", 0) from None
