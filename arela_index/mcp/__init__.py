"""arela-index as an MCP server for coding agents and editors (`arela mcp`; the `mcp` extra).

>>> from arela_index.mcp import serve                       # doctest: +SKIP
>>> serve(["path/to/repo"], http=8765, offline=True)        # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from arela_index.errors import ArelaError


def serve(repos: Sequence[str], **options: Any) -> int:
    """Serve `repos` (see `arela_index.mcp.server.serve`); a clear error when the `mcp` extra
    is not installed."""
    try:
        import mcp.server  # noqa: F401
        import uvicorn  # noqa: F401
        import watchfiles  # noqa: F401
    except ModuleNotFoundError as exc:
        raise ArelaError(
            f"`arela mcp` needs the MCP SDK ({exc.name} is not installed): "
            "pip install 'arela-index[mcp]'"
        ) from None
    from arela_index.mcp.server import serve as run

    return run(repos, **options)
