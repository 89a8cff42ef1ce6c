"""Calls to the MCP server as an agent makes them: through the SDK's client, in one session."""

from __future__ import annotations

import anyio
from mcp import Client


def session(target, batch: list[tuple[str, dict]], mode: str = "auto") -> list[tuple[str, bool]]:
    """(text, is_error) of each call, made in one session of the SDK's client."""
    async def go():
        out = []
        async with Client(target, mode=mode) as client:
            for tool, args in batch:
                result = await client.call_tool(tool, args)
                assert len(result.content) == 1 and result.content[0].type == "text"
                out.append((result.content[0].text, bool(result.is_error)))
        return out

    return anyio.run(go)
