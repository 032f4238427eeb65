"""`--otlp-endpoint URL`: each run's trace POSTed as OTLP/HTTP JSON, with OTEL_EXPORTER_OTLP_HEADERS.

A failed POST never changes a verdict: the command gets one warning with the count and the first reason.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote

import orjson

HEADERS_ENV = "OTEL_EXPORTER_OTLP_HEADERS"
TIMEOUT_S = 10.0


def otlp_headers(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """OTEL_EXPORTER_OTLP_HEADERS ("k1=v1,k2=v2", values URL-encoded) as headers."""
    raw = (os.environ if env is None else env).get(HEADERS_ENV, "")
    headers: dict[str, str] = {}
    for item in raw.split(","):
        key, sep, value = item.partition("=")
        if sep and key.strip():
            headers[unquote(key.strip())] = unquote(value.strip())
    return headers


def post_requests(url: str, requests: Iterable[dict[str, Any]], headers: dict[str, str] | None = None,
                  ) -> tuple[int, int, str | None]:
    """POST each export request to url: (sent, failed, the first failure's reason)."""
    import httpx

    sent = failed = 0
    reason: str | None = None
    all_headers = {**otlp_headers(), **(headers or {}), "Content-Type": "application/json"}
    with httpx.Client(timeout=TIMEOUT_S) as client:
        for request in requests:
            try:
                response = client.post(url, content=orjson.dumps(request), headers=all_headers)
                ok = 200 <= response.status_code < 300
                why = None if ok else f"HTTP {response.status_code}"
            except (httpx.HTTPError, ValueError, OSError) as exc:
                ok, why = False, f"{type(exc).__name__}: {exc}"
            if ok:
                sent += 1
            else:
                failed += 1
                reason = reason or why
    return sent, failed, reason


def warning(url: str, failed: int, total: int, reason: str | None) -> str:
    """The one warning of a command whose POSTs failed."""
    return (f"warning: {failed} of {total} run trace(s) could not be sent to --otlp-endpoint {url} ({reason}); "
            "the verdict is unchanged.")
