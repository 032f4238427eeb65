"""The observation an agent sees for an MCP tool result (agent_eval/suite/mcp_client.py)."""
from __future__ import annotations

import base64

import pytest

mcp_types = pytest.importorskip("mcp.types")

from agent_eval.suite.mcp_client import observation  # noqa: E402


def result(*content: object, structured: dict | None = None, is_error: bool = False) -> object:
    return mcp_types.CallToolResult(content=list(content), structured_content=structured, is_error=is_error)


def text(value: str) -> object:
    return mcp_types.TextContent(type="text", text=value)


def test_text_parts_are_joined_by_newlines_and_win_over_structured_content() -> None:
    assert observation(result(text("a"), text("b"), structured={"x": 1})) == "a\nb"


def test_structured_content_alone_is_compact_json() -> None:
    assert observation(result(structured={"total": 3, "names": ["é"]})) == '{"total":3,"names":["é"]}'


def test_other_parts_are_shown_by_type_and_size() -> None:
    png = base64.b64encode(b"\x00" * 1234).decode()
    image = mcp_types.ImageContent(type="image", data=png, mime_type="image/png")
    audio = mcp_types.AudioContent(type="audio", data=base64.b64encode(b"abc").decode(), mime_type="audio/wav")
    assert observation(result(image, audio)) == "<image/png, 1234 bytes>\n<audio/wav, 3 bytes>"
    assert observation(result(text("see"), image)) == "see\n<image/png, 1234 bytes>"


def test_secrets_in_a_server_url_are_not_shown() -> None:
    from agent_eval.suite.mcp_spec import ServerSpec

    spec = ServerSpec(index=0, url="https://u:pw@host/mcp?api_key=abc&x=1")
    assert "pw" not in spec.label and "abc" not in spec.label and spec.label.startswith("https://")
