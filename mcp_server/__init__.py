"""`python -m stats mcp`: the store, read-only, for agents. `answers` holds what each tool says
(the same functions the CLI and pages use), `bounds` how an answer is kept under its token
bound, `server` declares the tools to the MCP SDK and runs a transport."""

from .answers import MAX_LIMIT, Settings, answer

__all__ = ["MAX_LIMIT", "Settings", "answer"]
