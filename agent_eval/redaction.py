"""Secrets never shown: the configured keys, bearer tokens and OpenAI-style keys in a provider's or a
server's error text, and in the exceptions of user code, become `***` before the text is stored or shown
(URLs: `redact_url`, userinfo and key-like query values)."""
from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from agent_eval.records import Trace

PLACEHOLDER_KEY = "unused"
"""The key sent to an endpoint that needs none; it is no secret and is never redacted."""
MIN_SECRET_CHARS = 8
MASK = "***"

_KNOWN: set[str] = set()
_BEARER = re.compile(r"(Bearer\s+)[^\s'\",;}\]]+", re.IGNORECASE)
_SK = re.compile(r"sk-[A-Za-z0-9_-]{16,}")


def remember_secret(*keys: str | None) -> None:
    """Add configured keys (agent, judge, simulator) to those redacted from error text; short keys and
    the placeholder are not secrets."""
    for key in keys:
        if isinstance(key, str) and len(key) >= MIN_SECRET_CHARS and key != PLACEHOLDER_KEY:
            _KNOWN.add(key)


def redact_secrets(text: str) -> str:
    """text with every remembered key, every `Bearer <token>` and every `sk-...` key replaced by ***."""
    if not text:
        return text
    for key in sorted(_KNOWN, key=len, reverse=True):  # the longest first: a key inside another
        if key in text:
            text = text.replace(key, MASK)
    text = _BEARER.sub(lambda m: m.group(1) + MASK, text)
    return _SK.sub(MASK, text)


def redact_trace_errors(trace: Trace) -> None:
    """Redact, in place, the error texts user code put into a trace: the agent's exception and its
    traceback, and each step's (a tool's) error and traceback. The agent's answers are its data, kept."""
    if text := _text(trace.get("agent_error")):
        trace["agent_error"] = redact_secrets(text)
    if text := _text(trace.get("agent_error_traceback")):
        trace["agent_error_traceback"] = redact_secrets(text)
    for step in trace.get("steps") or ():
        if not step.get("error"):
            continue
        if text := _text(step.get("error")):
            step["error"] = redact_secrets(text)
        if text := _text(step.get("error_traceback")):
            step["error_traceback"] = redact_secrets(text)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


_SECRET_PARAM = re.compile(r"key|token|secret|password|sig|auth", re.IGNORECASE)


def redact_url(url: str | None) -> str | None:
    """The URL with its userinfo and the values of secret-looking query parameters replaced by ***."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
        host = parts.netloc
        if "@" in host:
            host = "***@" + host.rpartition("@")[2]
        query = parts.query
        if query:
            pairs = parse_qsl(query, keep_blank_values=True)
            if any(_SECRET_PARAM.search(name) for name, _ in pairs):
                query = urlencode([(name, "***" if _SECRET_PARAM.search(name) else value)
                                   for name, value in pairs], safe="*")
        return urlunsplit((parts.scheme, host, parts.path, query, parts.fragment))
    except ValueError:  # not a URL urllib can split: show nothing of it that might be a secret
        return "<unparseable URL>"


def is_redacted(url: str | None) -> bool:
    """True when `redact_url` would change the URL (it holds a secret that is never stored)."""
    return bool(url) and redact_url(url) != url


_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


def redact_urls(text: str | None) -> str | None:
    """text (an agent spec, a command line) with every URL in it redacted as `redact_url` does."""
    if not text or "://" not in text:
        return text
    return _URL_IN_TEXT.sub(lambda m: str(redact_url(m.group(0))), text)
