"""Reading other tools' record files (a JSON list or JSON Lines) and naming the records left out."""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import orjson

from agent_eval.records import Case
from agent_eval.errors import ConfigError
from agent_eval.suite.fields import MAX_DEPTH, is_too_deep

TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels; no case or run could hold it"


@dataclass(frozen=True)
class Unmappable:
    """A record that could not be mapped: where it is (line, index or trace id) and why."""

    where: str
    reason: str
    left_out: bool = True  # False: a warning about a record that was read (a span with no latency)

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


def read_bytes(path: Path) -> bytes:
    """The file's bytes; ConfigError (exit 2) when it cannot be read."""
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {path} ({exc.strerror or exc}); pass the path of an existing file.") \
            from None


def read_records(path: Path) -> tuple[list[tuple[str, Any]], list[Unmappable]]:
    """The records of a JSON list, one JSON object, or JSON Lines, each with its label.

    A list entry is labelled `index N` (0-based) and a JSON Lines record `line N` (1-based). A line
    that is not JSON is returned as unmappable; blank lines are skipped.
    """
    data = read_bytes(path)
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        doc = None
    else:
        if isinstance(doc, list):
            return [(f"index {i}", item) for i, item in enumerate(doc)], []
        return [("line 1", doc)], []
    if data.lstrip()[:1] == b"[":  # a JSON list that does not parse whole: the entries before the break
        return _list_entries(data)
    records: list[tuple[str, Any]] = []
    bad: list[Unmappable] = []
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append((f"line {number}", orjson.loads(line)))
        except orjson.JSONDecodeError as exc:
            bad.append(Unmappable(f"line {number}", f"not JSON ({exc})"))
    if data.lstrip()[:1] == b"{" and not any(isinstance(record, dict) for _, record in records):
        return _cut_document(data)  # one JSON object cut short, not JSON Lines: its members before the break
    return records, bad


def _cut_document(data: bytes) -> tuple[list[tuple[str, Any]], list[Unmappable]]:
    doc, broke = partial_document(data)
    where = Unmappable("the document", f"cut short or broken at {broke}; what follows is left out")
    return ([("line 1", doc)] if doc else []), [where]


def _list_entries(data: bytes) -> tuple[list[tuple[str, Any]], list[Unmappable]]:
    """The entries of a JSON list read one by one up to the first that does not parse (a file cut short),
    which is named and left out with everything after it."""
    text = data.decode("utf-8", "replace")
    items, at, problem = _entries(text, text.index("[") + 1)
    records = [(f"index {i}", item) for i, item in enumerate(items)]
    if problem is None:
        after = [Unmappable(f"index {len(records)}", "not JSON after the list")] if text[at:].strip() else []
        return records, after
    why = ("the list is cut short after it" if at >= len(text)
           else f"not JSON, cut short or broken, left out with anything after it ({problem})")
    return records, [Unmappable(f"index {len(records)}", why)]


def _skip(text: str, at: int, chars: str = " \t\r\n") -> int:
    while at < len(text) and text[at] in chars:
        at += 1
    return at


def _entries(text: str, at: int) -> tuple[list[Any], int, str | None]:
    """The complete entries of the JSON list whose `[` is just before `at`, the position after the list (or
    where it broke), and why it broke (None when the list closes)."""
    decoder = json.JSONDecoder()
    items: list[Any] = []
    while True:
        at = _skip(text, at, " \t\r\n,")
        if at >= len(text):
            return items, at, "the file ends inside it"
        if text[at] == "]":
            return items, at + 1, None
        try:
            item, at = decoder.raw_decode(text, at)
        except (ValueError, RecursionError) as exc:
            return items, at, str(exc)
        items.append(item)


_NESTED = 4  # objects this deep inside a cut document are read member by member too (a test run's testCases)


def partial_document(data: bytes) -> tuple[Any, str | None]:
    """A JSON object read as far as it goes, for a file cut short (or broken) mid-way: its members before the
    break (an object member, up to a few levels deep, likewise), a list member keeping its complete entries
    (an incremental parse of, say, a log's samples), and where it broke ("byte N, in `samples` after 3
    complete entries"); (None, where) when it is not an object. (doc, None) when the object closes."""
    text = data.decode("utf-8", "replace")
    at = _skip(text, 0)
    if text[at:at + 1] != "{":
        return None, "byte 0, not a JSON object"
    doc, at, why = _object(text, at + 1, ())
    if why is None:
        return doc, None
    return doc, f"byte {len(text[:at].encode('utf-8', 'replace')):,}, {why}"


def _object(text: str, at: int, path: tuple[str, ...]) -> tuple[dict[str, Any], int, str | None]:
    """The members of the object whose `{` is just before `at`, the position after it (or of the break), and
    why it broke (None when it closes)."""
    decoder = json.JSONDecoder()
    doc: dict[str, Any] = {}
    while True:
        key: Any
        at, key = _skip(text, at, " \t\r\n,"), None
        if text[at:at + 1] == "}":
            return doc, at + 1, None
        if at >= len(text):
            return doc, at, "the file ends before " + (f"`{'.'.join(path)}`" if path else "the document") + " closes"
        try:
            key, at = decoder.raw_decode(text, at)
            at = _skip(text, at)
            if text[at:at + 1] != ":" or not isinstance(key, str):
                return doc, at, "in a member's name"
            at, inside = _skip(text, at + 1), f"`{'.'.join((*path, key))}`"
            if text[at:at + 1] == "[":
                items, at, problem = _entries(text, at + 1)
                doc[key] = items
                if problem is not None:
                    noun = "entry" if len(items) == 1 else "entries"
                    return doc, at, f"in {inside} after {len(items)} complete {noun}"
                continue
            if text[at:at + 1] == "{" and len(path) < _NESTED:
                doc[key], at, problem = _object(text, at + 1, (*path, key))
                if problem is not None:
                    return doc, at, problem
                continue
            doc[key], at = decoder.raw_decode(text, at)
        except (ValueError, RecursionError):
            return doc, at, f"in `{'.'.join((*path, key))}`" if isinstance(key, str) else "in a member's name"


def conversation(users: Sequence[str]) -> Case:
    """A case's user side: `query` for one user message, `messages` for several (the caller adds the id)."""
    return cast(Case, {"query": users[0]} if len(users) == 1 else {"messages": list(users)})


def map_each_record(records: list[tuple[str, Any]], to_case: Callable[[str, Any], Case],
                    bad: list[Unmappable]) -> tuple[list[tuple[str, Case]], list[Unmappable]]:
    """(label, case) of each record that maps; the others (too deep, or refused by to_case) join `bad`."""
    mapped = []
    for where, record in records:
        if isinstance(record, (dict, list)) and is_too_deep(record):
            bad.append(Unmappable(where, TOO_DEEP))
            continue
        try:
            mapped.append((where, to_case(where, record)))
        except ValueError as exc:
            bad.append(Unmappable(where, str(exc)))
    return mapped, bad


def content_text(content: Any, *, any_type: bool = False, strings: bool = False, fallback: str | None = None,
                 resolve: Callable[[Any], Any] | None = None) -> str | None:
    """A message's content as text, the one flattener of every reader: a string as it is; a list of parts
    joined by newlines, keeping the `text` of each part of type `text` (`any_type`: of every part; `strings`:
    bare strings too; `fallback`: the key read when `text` is not a string; `resolve`: applied to the content
    and to each text first, e.g. Inspect's attachments); None when it holds no text."""
    if resolve is not None:
        content = resolve(content)
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts = []
    for part in content:
        if isinstance(part, str):
            if strings:
                texts.append(part)
            continue
        if not isinstance(part, dict) or not (any_type or part.get("type", "text") == "text"):
            continue
        text = part.get("text") if resolve is None else resolve(part.get("text"))
        if not isinstance(text, str) and fallback is not None:
            text = part.get(fallback)
        if isinstance(text, str):
            texts.append(text)
    return "\n".join(texts) if texts else None
