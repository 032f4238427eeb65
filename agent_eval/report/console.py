"""The consoles the CLI prints on: untrusted text is inert there.

Rich markup is off (a `[/]` in a path, a flag value or a case id is text), and every control character
other than newline and tab is shown escaped (`\x1b` as the four characters `\x1b`), so an agent, a tool
or a case file cannot move the cursor, clear the screen or restyle the terminal.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from rich.console import Console
from rich.segment import Segment

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def escape_control(text: str) -> str:
    """text with each control character except newline and tab shown as `\\xNN`."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text) if _CONTROL.search(text) else text


class SafeConsole(Console):
    """A Console that never reads markup and never writes a control character it did not make itself."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("markup", False)
        super().__init__(**kwargs)

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(_escaped(buffer))


def _escaped(buffer: Iterable[Segment]) -> Iterator[Segment]:
    for segment in buffer:
        if segment.control or not _CONTROL.search(segment.text):
            yield segment
        else:
            yield Segment(escape_control(segment.text), segment.style, segment.control)
