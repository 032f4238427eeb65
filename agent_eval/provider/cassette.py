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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from agent_eval.errors import ConfigError
from agent_eval.redaction import MASK, redact_secrets

HEADER = "cassette.json"
FORMAT = 1
UNMATCHED = frozenset({"stream", "stream_options", "user", "metadata", "store"})
_KEY_LIKE = re.compile(r"^(api[_-]?key|apikey|key|token|access[_-]?token|auth|authorization|secret|"
                       r"client[_-]?secret|password|bearer|x-api-key)$", re.IGNORECASE)
_SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_-.")
_MAX_NAME = 200  # bytes of a folder name, under every file system's 255
LINE_KEYS = ("seq", "role", "path", "request", "response", "status", "latency_s", "usage")
ROLES = frozenset({"agent", "judge", "user"})
MAX_LATENCY_S = 86_400  # a recorded latency is credited to the run: never negative, never past a day


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
    """value with every configured key, bearer token and sk- key in its strings replaced by ***, and the
    value of every key-like field (api_key, token, authorization, ...) by *** (docs/reference.md, "No secret
    is written")."""
    if isinstance(value, str):
        return redact_secrets(value)
    if isinstance(value, dict):
        return {k: (MASK if isinstance(k, str) and _KEY_LIKE.match(k) and v is not None else scrub(v))
                for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


def canonical(body: Any) -> Any:
    """The request as matched: fields that vary between identical requests, and key-like fields, removed."""
    if isinstance(body, dict):
        return {k: v for k, v in body.items() if k not in UNMATCHED and not _KEY_LIKE.match(str(k))}
    return body


def match_key(role: str, path: str, body: Any) -> bytes:
    """The lookup key of a request: role, path and canonical body, as bytes with sorted keys."""
    return orjson.dumps([role, path, canonical(body)], option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)


def first_difference(live: Any, recorded: Any, at: str = "") -> tuple[int, str] | None:
    """(fields equal before it, its path such as `messages[3].content`) of the first field where two
    canonical requests differ, walking keys in sorted order; None when they are equal."""
    equal = [0]

    def walk(a: Any, b: Any, where: str) -> str | None:
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b), key=str):
                inner = f"{where}.{key}" if where else str(key)
                if key not in a or key not in b:
                    return inner
                found = walk(a[key], b[key], inner)
                if found is not None:
                    return found
            return None
        if isinstance(a, list) and isinstance(b, list):
            for i in range(max(len(a), len(b))):
                if i >= len(a) or i >= len(b):
                    return f"{where}[{i}]"
                found = walk(a[i], b[i], f"{where}[{i}]")
                if found is not None:
                    return found
            return None
        if a == b and type(a) is type(b):
            equal[0] += 1
            return None
        return where or "(the whole body)"

    found = walk(canonical(live), canonical(recorded), at)
    return None if found is None else (equal[0], found)


# --- reading ------------------------------------------------------------------------------------------
@dataclass
class Exchange:
    """One recorded line."""

    seq: int
    role: str
    path: str
    request: Any
    response: Any
    status: int
    latency_s: float | None
    usage: Any
    stream: bool


def bad(path: Path, line: int | None, problem: str) -> ConfigError:
    where = f"{path}" + (f", line {line}" if line is not None else "")
    return ConfigError(f"--replay: the cassette {where} {problem}; record it again with --record DIR.")


def read_cassette(path: Path) -> list[Exchange]:
    """The exchanges of one cassette; ConfigError (exit 2) naming the file and line of a bad one."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise bad(path, None, f"cannot be read ({exc.strerror or exc})") from None
    out: list[Exchange] = []
    lines = data.split(b"\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = orjson.loads(line)
        except orjson.JSONDecodeError:
            truncated = number == len(lines) and not data.endswith(b"\n")
            raise bad(path, number, "is truncated" if truncated else "is not JSON") from None
        if not isinstance(item, dict) or any(k not in item for k in LINE_KEYS):
            missing = [k for k in LINE_KEYS if not isinstance(item, dict) or k not in item]
            raise bad(path, number, f"is not an exchange (no {', '.join(missing)})")
        if item["role"] not in ROLES or not isinstance(item["path"], str) or not isinstance(item["status"], int):
            raise bad(path, number, "has a role, path or status of the wrong kind")
        latency = item["latency_s"]
        if latency is not None and not (isinstance(latency, int | float) and not isinstance(latency, bool)
                                        and 0 <= latency <= MAX_LATENCY_S):
            raise bad(path, number, f"has a latency_s that is not a number of seconds from 0 to {MAX_LATENCY_S}")
        out.append(Exchange(len(out) + 1, item["role"], item["path"], item["request"], item["response"],
                            item["status"], float(latency) if isinstance(latency, int | float) else None,
                            item["usage"], bool(item.get("stream"))))
    return out


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


def check_recorded(folder: Path, header: dict[str, Any], label: str,
                   runs: list[tuple[str, int]]) -> dict[tuple[str, int], list[Exchange]]:
    """Every (case id, trial) to replay has a good cassette of this suite: its exchanges, by run."""
    if header["suite"] != label:
        raise bad(folder / HEADER, 1, f"records the suite {header['suite']!r}, not {label!r} (another suite)")
    missing: dict[str, list[int]] = {}
    found: dict[tuple[str, int], list[Exchange]] = {}
    for case_id, trial in runs:
        path = cassette_path(folder, case_id, trial)
        if not path.is_file():
            missing.setdefault(case_id, []).append(trial)
            continue
        found[(case_id, trial)] = read_cassette(path)
    if missing:
        shown = "; ".join(f"case {cid!r} trial{'s' if len(t) > 1 else ''} {', '.join(map(str, t))}"
                          for cid, t in list(missing.items())[:5])
        more = f" (and {len(missing) - 5} more cases)" if len(missing) > 5 else ""
        recorded = header.get("repeat")
        raise ConfigError(f"--replay {folder} has no recording of {shown}{more}"
                          + (f" (it recorded -k {recorded})" if recorded else "")
                          + "; replay with a -k and cases that were recorded, or record again with --record.")
    return found


# --- writing ------------------------------------------------------------------------------------------
def write_lines(path: Path, lines: list[dict[str, Any]]) -> None:
    """The cassette's lines, written whole (a temporary file renamed over it). A case folder that is a
    symbolic link (planted in a recording folder checked out from elsewhere) is refused, never followed."""
    if path.parent.is_symlink():
        raise OSError(errno.ELOOP, f"{path.parent} is a symbolic link, which a recording never follows")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".jsonl")
    written = False
    try:
        with os.fdopen(fd, "wb") as out:
            for line in lines:
                out.write(orjson.dumps(line, option=orjson.OPT_NON_STR_KEYS) + b"\n")
        os.replace(tmp, path)
        written = True
    finally:
        if not written:  # whatever stopped it: no temporary file left behind
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def write_header(folder: Path, header: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / HEADER).write_bytes(orjson.dumps(scrub({"format": FORMAT, **header}), option=orjson.OPT_INDENT_2))

