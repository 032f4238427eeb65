"""task.mcp_url: the run's tools over streamable-HTTP MCP, on the recording endpoint's port."""
from __future__ import annotations

from typing import Any


async def attach_mcp(ctx: Any) -> None:
    """Serve the run's tools at /r/<token>/mcp when the mcp package is installed (else mcp_url stays None)."""
    return None
