"""Cassettes on disk (`run --record DIR`, `run --replay DIR`): their names, lines, secrets and matching.

A cassette holds one run's LLM exchanges, `DIR/<case id>/<trial>.jsonl`, one JSON line per exchange:
{seq, role, path, request, response, status, latency_s, usage}. A case id becomes a folder name that
cannot escape DIR and names one case only (percent-encoding, below). `DIR/cassette.json` says what was
recorded. Requests are matched by their canonical form: keys sorted, the fields that vary between
identical requests (stream, stream_options, user, metadata, store) and any key-like field removed.
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from agent_eval.errors import ConfigError
from agent_eval.limits import MAX_MESSAGE_BYTES
from agent_eval.redaction import MASK, redact_secrets

HEADER = "cassette.json"
FORMAT = 1
UNMATCHED = frozenset({"stream", "stream_options", "user", "metadata", "store"})
_KEY_LIKE = re.compile(r"^(api[_-]?key|apikey|key|token|access[_-]?token|auth|authorization|secret|"
                       r"client[_-]?secret|password|bearer|x-api-key)$", re.IGNORECASE)
_HOLDS_CREDENTIALS = re.compile(r"(^|_)(headers|query|params)$", re.IGNORECASE)
_SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_-.")
_MAX_NAME = 200  # bytes of a folder name, under every file system's 255
LINE_KEYS = ("seq", "role", "path", "request", "response", "status", "latency_s", "usage")
ROLES = frozenset({"agent", "judge", "user"})
MAX_LATENCY_S = 86_400  # a recorded latency is credited to the run: never negative, never past a day
CLIENT_CLOSED = "client_closed"  # the status of a request abandoned at --timeout while recording
MAX_LINE = 2 * MAX_MESSAGE_BYTES + 2**20  # an answer at its cap, a request at its cap, and the line's own keys
MAX_DEPTH = 254  # the deepest nesting orjson writes back (a cassette is rewritten when a replay goes live)


def case_folder(case_id: str) -> str:
    """A case id as one folder name: bytes outside [a-z0-9_.-] (capitals too, for file systems that ignore
    case; and a leading dot) percent-encoded, so that no id climbs out of DIR or names another case's
    folder or the header file; "" is "%"; a long one keeps a prefix and its hash."""
    raw = case_id.encode("utf-8", "surrogatepass")
    name = "".join(chr(b) if b in _SAFE and not (i == 0 and b == 0x2E) else f"%{b:02X}"
                   for i, b in enumerate(raw)) or "%"
    if name == HEADER:  # the recording's own header file
        name = name.replace(".", "%2E")
    if len(name) > _MAX_NAME:
        name = name[:_MAX_NAME - 65] + "~" + hashlib.sha256(raw).hexdigest()
    return name


def cassette_path(folder: Path, case_id: str, trial: int) -> Path:
    return folder / case_folder(case_id) / f"{trial}.jsonl"


# --- secrets and the canonical request ---------------------------------------------------------------
def scrub(value: Any) -> Any:
    """value with every configured key, bearer token and sk- key in its strings replaced by *** (docs/reference.md,
    "No secret is written"). A field's name alone never hides its value: a tool schema's `key` parameter and
    a logprob's `token` are data."""
    if isinstance(value, str):
        return redact_secrets(value)
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


def scrub_request(body: Any) -> Any:
    """A request body as recorded: `scrub`, and the value of each credential field replaced by ***: a
    key-like field (`api_key`, `token`, `authorization`, ...) at the top of the body or in one of its
    header or query objects (`extra_headers`, `query`, ...), where a client puts credentials."""
    if not isinstance(body, dict):
        return scrub(body)
    out: dict[Any, Any] = {}
    for k, v in body.items():
        if isinstance(k, str) and _KEY_LIKE.match(k) and v is not None:
            out[k] = MASK
        elif isinstance(k, str) and _HOLDS_CREDENTIALS.search(k) and isinstance(v, dict):
            out[k] = {name: MASK if isinstance(name, str) and _KEY_LIKE.match(name) and value is not None
                      else scrub(value) for name, value in v.items()}
        else:
            out[k] = scrub(v)
    return out


def canonical(body: Any) -> Any:
    """The request as matched: fields that vary between identical requests, and key-like fields, removed."""
    if isinstance(body, dict):
        return {k: v for k, v in body.items() if k not in UNMATCHED and not _KEY_LIKE.match(str(k))}
    return body


def match_key(role: str, path: str, body: Any) -> bytes:
    """The lookup key of a request: role, path and canonical body, as bytes with sorted keys."""
    return orjson.dumps([role, path, canonical(body)], option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)


ABSENT = object()  # a field one of two requests does not have
SHOWN_CHARS = 200  # of each value a replay miss shows


class Difference(NamedTuple):
    """Where two canonical requests first differ: the fields equal before it, its path, both values."""

    equal: int
    path: str
    live: Any
    recorded: Any


def first_difference(live: Any, recorded: Any, at: str = "") -> Difference | None:
    """The first field (a path such as `messages[3].content`) where two canonical requests differ, walking
    keys in sorted order, with both values (ABSENT where one has none); None when they are equal."""
    equal = [0]

    def walk(a: Any, b: Any, where: str) -> tuple[str, Any, Any] | None:
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b), key=str):
                inner = f"{where}.{key}" if where else str(key)
                if key not in a or key not in b:
                    return inner, a.get(key, ABSENT), b.get(key, ABSENT)
                found = walk(a[key], b[key], inner)
                if found is not None:
                    return found
            return None
        if isinstance(a, list) and isinstance(b, list):
            for i in range(max(len(a), len(b))):
                if i >= len(a) or i >= len(b):
                    return f"{where}[{i}]", a[i] if i < len(a) else ABSENT, b[i] if i < len(b) else ABSENT
                found = walk(a[i], b[i], f"{where}[{i}]")
                if found is not None:
                    return found
            return None
        if a == b and type(a) is type(b):
            equal[0] += 1
            return None
        return where or "(the whole body)", a, b

    found = walk(canonical(live), canonical(recorded), at)
    return None if found is None else Difference(equal[0], *found)


def shown_value(value: Any) -> str:
    """A differing value as a replay miss shows it: JSON, cut to SHOWN_CHARS characters."""
    if value is ABSENT:
        return "(absent)"
    text = orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "…"


# --- reading ------------------------------------------------------------------------------------------
@dataclass
class Exchange:
    """One recorded line."""

    seq: int
    role: str
    path: str
    request: Any
    response: Any
    status: int | str  # an HTTP status, or CLIENT_CLOSED
    latency_s: float | None
    usage: Any
    stream: bool


def bad(path: Path, line: int | None, problem: str) -> ConfigError:
    where = f"{path}" + (f", line {line}" if line is not None else "")
    return ConfigError(f"--replay: the cassette {where} {problem}; record it again with --record DIR.")


def read_cassette(path: Path, max_line: int = MAX_LINE) -> list[Exchange]:
    """The exchanges of one cassette, read a line at a time (no line past `max_line` bytes is read whole);
    ConfigError (exit 2) naming the file and line of a bad one."""
    out: list[Exchange] = []
    try:
        with path.open("rb") as stream:
            number = 0
            while line := stream.readline(max_line + 1):
                number += 1
                if len(line) > max_line and not line.endswith(b"\n"):
                    raise bad(path, number, f"is longer than {max_line // 2**20} MiB (an answer and a request "
                                            "at their 64 MiB caps)")
                if line.strip():
                    out.append(_exchange(path, number, line, len(out) + 1))
    except OSError as exc:
        raise bad(path, None, f"cannot be read ({exc.strerror or exc})") from None
    return out


def _exchange(path: Path, number: int, line: bytes, seq: int) -> Exchange:
    try:
        item = orjson.loads(line)
    except MemoryError:
        raise ConfigError(f"--replay: the cassette {path}, line {number} ({len(line) // 2**20} MiB) does not fit "
                          "in memory; replay on a machine with more memory, or with fewer runs at once "
                          "(--concurrency).") from None
    except orjson.JSONDecodeError as exc:
        if "depth limit" in str(exc):  # orjson reads up to 1024 levels
            raise bad(path, number, f"is nested deeper than {MAX_DEPTH} levels") from None
        raise bad(path, number, "is not JSON" if line.endswith(b"\n") else "is truncated") from None
    if line.count(b"[") + line.count(b"{") > MAX_DEPTH and not _writable(item):  # fewer brackets: not as deep
        raise bad(path, number, f"is nested deeper than {MAX_DEPTH} levels")
    if not isinstance(item, dict) or any(k not in item for k in LINE_KEYS):
        missing = [k for k in LINE_KEYS if not isinstance(item, dict) or k not in item]
        raise bad(path, number, f"is not an exchange (no {', '.join(missing)})")
    status = item["status"]
    if (item["role"] not in ROLES or not isinstance(item["path"], str)
            or not (status == CLIENT_CLOSED or isinstance(status, int) and not isinstance(status, bool))):
        raise bad(path, number, "has a role, path or status of the wrong kind")
    latency = item["latency_s"]
    if latency is not None and not (isinstance(latency, int | float) and not isinstance(latency, bool)
                                    and 0 <= latency <= MAX_LATENCY_S):
        raise bad(path, number, f"has a latency_s that is not a number of seconds from 0 to {MAX_LATENCY_S}")
    return Exchange(seq, item["role"], item["path"], item["request"], item["response"], status,
                    float(latency) if isinstance(latency, int | float) else None, item["usage"],
                    bool(item.get("stream")))


def _writable(item: Any) -> bool:
    """True when orjson can write `item` back (its nesting within MAX_DEPTH)."""
    try:
        orjson.dumps(item, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:  # orjson's "Recursion limit reached"
        return False
    return True


def read_header(folder: Path) -> dict[str, Any]:
    """DIR/cassette.json; ConfigError (exit 2) when it is missing or not a recording's."""
    path = folder / HEADER
    if not path.is_file():
        raise ConfigError(f"--replay {folder}: no {HEADER} there; make a recording first with "
                          f"`agent-eval run --record {folder}`.")
    try:
        header = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        raise bad(path, 1, "is not JSON") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT or not isinstance(header.get("suite"), str):
        raise bad(path, 1, f"is not an agent-eval recording (format {FORMAT} with a suite)")
    return header


def suite_label(name: str | None, cases_file: Path) -> str:
    """What a recording names its suite by: the suite's name, else the case file's name."""
    return name or cases_file.name


def check_recorded(folder: Path, header: Mapping[str, Any], label: str, runs: list[tuple[str, int]]) -> None:
    """Every (case id, trial) to replay has a cassette of this suite (each is read when its run starts)."""
    if header["suite"] != label:
        raise bad(folder / HEADER, 1, f"records the suite {header['suite']!r}, not {label!r} (another suite)")
    missing: dict[str, list[int]] = {}
    for case_id, trial in runs:
        if not cassette_path(folder, case_id, trial).is_file():
            missing.setdefault(case_id, []).append(trial)
    if missing:
        shown = "; ".join(f"case {cid!r} trial{'s' if len(t) > 1 else ''} {', '.join(map(str, t))}"
                          for cid, t in list(missing.items())[:5])
        more = f" (and {len(missing) - 5} more cases)" if len(missing) > 5 else ""
        recorded = header.get("repeat")
        raise ConfigError(f"--replay {folder} has no recording of {shown}{more}"
                          + (f" (it recorded -k {recorded})" if recorded else "")
                          + "; replay with a -k and cases that were recorded, or record again with --record.")


# --- writing ------------------------------------------------------------------------------------------
def write_lines(path: Path, lines: list[dict[str, Any]]) -> None:
    """The cassette's lines, written whole (a temporary file renamed over it). A case folder or a cassette
    that is a symbolic link (planted in a recording folder checked out from elsewhere) is refused."""
    for link in (path.parent, path):
        if link.is_symlink():
            raise OSError(errno.ELOOP, f"{link} is a symbolic link, which a recording never follows")
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_whole(path, (orjson.dumps(line, option=orjson.OPT_NON_STR_KEYS) + b"\n" for line in lines))


def _write_whole(path: Path, parts: Any) -> None:
    """`parts` (bytes) written to a temporary file beside `path`, then renamed over it (never through a link)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    written = False
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                out.write(part)
        os.replace(tmp, path)
        written = True
    finally:
        if not written:  # whatever stopped it: no temporary file left behind
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def write_header(folder: Path, header: dict[str, Any]) -> None:
    """DIR/cassette.json (the caller has refused a link there)."""
    folder.mkdir(parents=True, exist_ok=True)
    _write_whole(folder / HEADER, [orjson.dumps(scrub({"format": FORMAT, **header}), option=orjson.OPT_INDENT_2)])

