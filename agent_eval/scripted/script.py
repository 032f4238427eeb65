"""The scripted model's script: a JSON list of entries `{"match": {...}, "reply": ...}`, checked once, and
the pure choice of the entry that answers a request (the first that matches).

`match` (every key optional, all given must hold): `role` (agent, judge or user), `case` (a case id),
`turn` (0-based), `contains` (text the request's last message holds). `reply`: a text, `{"tool_calls":
[{"name", "arguments"?, "id"?}], "content"?}`, or `{"verdict": "PASS" | "FAIL", "reason"?}` (a judge's).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agent_eval.errors import ConfigError

ROLES = ("agent", "judge", "user")
MATCH_KEYS = ("role", "case", "turn", "contains")
MAX_SCRIPT_BYTES = 64 << 20


@dataclass(frozen=True)
class Asked:
    """What a request says about itself: its X-Agent-Eval-* headers and the text of its last message."""

    role: str | None = None
    case: str | None = None
    trial: int | None = None
    turn: int | None = None
    last: str = ""

    def describe(self) -> str:
        parts = [f"{name} {value!r}" for name, value in (("role", self.role), ("case", self.case),
                                                          ("trial", self.trial), ("turn", self.turn))
                 if value is not None]
        shown = self.last if len(self.last) <= 200 else self.last[:200] + "…"
        return ", ".join([*parts, f"last message {shown!r}"])


@dataclass(frozen=True)
class Entry:
    """One checked entry: what it matches, and its reply as a Chat Completions assistant message."""

    match: dict[str, Any]
    message: dict[str, Any]
    finish_reason: str
    text: str = field(default="")  # what usage is counted from

    def matches(self, asked: Asked) -> bool:
        match = self.match
        return (("role" not in match or match["role"] == asked.role)
                and ("case" not in match or match["case"] == asked.case)
                and ("turn" not in match or match["turn"] == asked.turn)
                and ("contains" not in match or match["contains"] in asked.last))

    def usage(self, request_text: str) -> tuple[int, int]:
        """(prompt, completion) tokens: about four characters a token, at least one."""
        return max(1, math.ceil(len(request_text) / 4)), max(1, math.ceil(len(self.text) / 4))


def pick(entries: Sequence[Entry], asked: Asked) -> Entry | None:
    """The first entry that matches the request, or None."""
    return next((entry for entry in entries if entry.matches(asked)), None)


def load_script(source: str | Path | Sequence[Any]) -> list[Entry]:
    """A script file (or the list itself) checked; a ConfigError naming the file, the entry and the field."""
    if isinstance(source, (str, Path)):
        path = Path(source)
        if path.exists() and not path.is_file():  # a folder, a FIFO or a device: never read
            raise ConfigError(f"{path}: not a regular file; the script is a JSON file.")
        try:
            with path.open("rb") as handle:
                data = handle.read(MAX_SCRIPT_BYTES + 1)
        except OSError as exc:
            raise ConfigError(f"cannot read the script {path} ({exc.strerror or exc}).") from None
        if len(data) > MAX_SCRIPT_BYTES:
            raise ConfigError(f"{path}: the script is over {MAX_SCRIPT_BYTES >> 20} MiB.")
        try:
            raw = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise ConfigError(f"{path}: not JSON ({exc}); a script is a JSON list of "
                              '{"match": {...}, "reply": ...} entries.') from None
        where = str(path)
    else:
        raw, where = source, "the script"
    if not isinstance(raw, list):
        raise ConfigError(f"{where}: a script is a JSON list of {{\"match\": {{...}}, \"reply\": ...}} entries, "
                          f"not a {_kind(raw)}.")
    return [_entry(item, where, n) for n, item in enumerate(raw, 1)]


def _entry(item: Any, where: str, n: int) -> Entry:
    def fail(name: str, message: str) -> ConfigError:
        return ConfigError(f"{where}, entry {n}, field {name!r}: {message}")

    if not isinstance(item, Mapping):
        raise ConfigError(f"{where}, entry {n}: an entry is an object {{\"match\": {{...}}, \"reply\": ...}}, "
                          f"not a {_kind(item)}.")
    for key in item:
        if key not in ("match", "reply"):
            raise fail(str(key), "unknown field; an entry has \"match\" and \"reply\".")
    match = item.get("match", {})
    if not isinstance(match, Mapping):
        raise fail("match", f"an object of {', '.join(MATCH_KEYS)}, not a {_kind(match)}.")
    for key, value in match.items():
        name = f"match.{key}"
        if key == "role" and value not in ROLES:
            raise fail(name, f"one of {', '.join(ROLES)}, not {value!r}.")
        if key == "turn" and (type(value) is not int or value < 0):
            raise fail(name, f"a whole number from 0 (the first user message is turn 0), not {value!r}.")
        if key in ("case", "contains") and (not isinstance(value, str) or not value):
            raise fail(name, f"a non-empty text, not {value!r}.")
        if key not in MATCH_KEYS:
            raise fail(name, f"unknown field; a match has {', '.join(MATCH_KEYS)}.")
    if "reply" not in item:
        raise fail("reply", "missing; a text, {\"tool_calls\": [...]} or {\"verdict\": \"PASS\"}.")
    message, finish, text = _reply(item["reply"], fail)
    return Entry(dict(match), message, finish, text)


def _reply(reply: Any, fail: Any) -> tuple[dict[str, Any], str, str]:
    if isinstance(reply, str):
        return {"role": "assistant", "content": reply, "tool_calls": None}, "stop", reply
    if not isinstance(reply, Mapping):
        raise fail("reply", f"a text, {{\"tool_calls\": [...]}} or {{\"verdict\": \"PASS\"}}, not a {_kind(reply)}.")
    kinds = [key for key in ("tool_calls", "verdict") if key in reply]
    if len(kinds) != 1:
        raise fail("reply", "an object with one of \"tool_calls\" or \"verdict\".")
    if kinds[0] == "verdict":
        return _verdict(reply, fail)
    for key in reply:
        if key not in ("tool_calls", "content"):
            raise fail(f"reply.{key}", "unknown field; a tool-call reply has \"tool_calls\" and \"content\".")
    content = reply.get("content")
    if content is not None and not isinstance(content, str):
        raise fail("reply.content", f"a text, not a {_kind(content)}.")
    calls = reply["tool_calls"]
    if not isinstance(calls, list) or not calls:
        raise fail("reply.tool_calls", "a non-empty list of {\"name\": ..., \"arguments\": {...}}.")
    wire = [_call(call, k, fail) for k, call in enumerate(calls)]
    text = (content or "") + "".join(c["function"]["name"] + c["function"]["arguments"] for c in wire)
    return {"role": "assistant", "content": content, "tool_calls": wire}, "tool_calls", text


def _call(call: Any, k: int, fail: Any) -> dict[str, Any]:
    name = f"reply.tool_calls[{k}]"
    if not isinstance(call, Mapping):
        raise fail(name, f"an object {{\"name\": ..., \"arguments\": {{...}}}}, not a {_kind(call)}.")
    for key in call:
        if key not in ("name", "arguments", "id"):
            raise fail(f"{name}.{key}", "unknown field; a tool call has \"name\", \"arguments\" and \"id\".")
    if not isinstance(call.get("name"), str) or not call["name"]:
        raise fail(f"{name}.name", "the tool's name, a non-empty text.")
    arguments = call.get("arguments", {})
    if isinstance(arguments, Mapping):
        arguments = orjson.dumps(arguments).decode()
    elif not isinstance(arguments, str):  # a text is sent as it is (to script malformed JSON)
        raise fail(f"{name}.arguments", f"an object (or its JSON text), not a {_kind(arguments)}.")
    call_id = call.get("id", f"call_{k}")
    if not isinstance(call_id, str) or not call_id:
        raise fail(f"{name}.id", "a non-empty text.")
    return {"id": call_id, "type": "function", "function": {"name": call["name"], "arguments": arguments}}


def _verdict(reply: Mapping[str, Any], fail: Any) -> tuple[dict[str, Any], str, str]:
    for key in reply:
        if key not in ("verdict", "reason"):
            raise fail(f"reply.{key}", "unknown field; a verdict reply has \"verdict\" and \"reason\".")
    verdict = reply["verdict"]
    if not isinstance(verdict, str) or verdict.upper() not in ("PASS", "FAIL"):
        raise fail("reply.verdict", f"PASS or FAIL, not {verdict!r}.")
    reason = reply.get("reason", "scripted verdict")
    if not isinstance(reason, str):
        raise fail("reply.reason", f"a text, not a {_kind(reason)}.")
    text = f"{verdict.upper()}\n{reason}"  # the judge's two-line protocol
    return {"role": "assistant", "content": text, "tool_calls": None}, "stop", text


def _kind(value: Any) -> str:
    return {dict: "object", list: "list", str: "text", bool: "boolean", int: "number", float: "number",
            type(None): "null"}.get(type(value), type(value).__name__)
