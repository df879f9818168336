"""`arela mcp`: the tools of `tools.py` served over the Model Context Protocol, on stdio (what MCP
clients start) or streamable HTTP, with the official SDK's low-level server.

Every call answers: a bad one with an error result (`isError`) holding the one line the CLI
would print, never by ending the server.
"""

from __future__ import annotations

import contextlib
import io
import ipaddress
import json
import logging
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from pydantic import ValidationError

from arela_index import __version__
from arela_index.errors import ArelaError, printable
from arela_index.mcp.live import LiveIndex
from arela_index.mcp.tools import TOOLS
from arela_index.mcp.workspace import Workspace

if TYPE_CHECKING:  # the SDK is the `mcp` extra's: imported when the server runs
    from mcp import types
    from mcp.server import Server

log = logging.getLogger("arela_index.mcp")

INSTRUCTIONS = (
    "arela-index answers questions about code repositories from three memories: the code, the "
    "symbol graph and the git history. Use `ask` for any question in words; the direct tools "
    "(find_definition, find_callers, find_callees, find_subclasses, file_history, "
    "recent_changes) when you know the symbol or file. Answers cite path:start-end or a commit "
    "and reflect files as they are saved."
)
_BY_NAME = {tool.name: tool for tool in TOOLS}


def call(workspace: Workspace, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    """Run one tool call: its JSON answer, or an error result saying in one line what to do."""
    from mcp import types

    tool = _BY_NAME.get(name)
    if tool is None:
        return _error(f"no tool {name!r}: the tools are {', '.join(_BY_NAME)}")
    try:
        args = tool.arguments.model_validate(arguments)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg'].lower()}"
            for e in exc.errors()
        )
        return _error(f"bad arguments to {name}: {problems} (see the tool's input schema)")
    try:
        data = tool.run(workspace, args)
    except ArelaError as exc:
        return _error(str(exc))
    except Exception as exc:  # the server answers the next call whatever this one did
        log.exception("arela mcp: %s failed", name)
        return _error(
            f"unexpected {type(exc).__name__}: {printable(str(exc))} "
            "(the server goes on; its log on stderr has the traceback)"
        )
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
        structured_content=data,
    )


def _error(line: str) -> types.CallToolResult:
    from mcp import types

    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"arela: {line}")], is_error=True
    )


def make_server(workspace: Workspace) -> Server[Any]:
    """The low-level MCP server answering `workspace`'s tools (calls run in worker threads)."""
    from mcp import types
    from mcp.server import Server

    read_only = types.ToolAnnotations(read_only_hint=True, open_world_hint=False)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=tool.name,
                    description=tool.description,
                    input_schema=tool.schema(),
                    annotations=read_only,
                )
                for tool in TOOLS
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await anyio.to_thread.run_sync(call, workspace, params.name, params.arguments or {})

    return Server(
        "arela-index",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def serve(
    repos: Sequence[str],
    *,
    http: int | None = None,
    host: str = "127.0.0.1",
    watch: bool = True,
    **settings: Any,
) -> int:
    """Serve the repositories until the client closes stdin (stdio) or the process is stopped
    (HTTP). Their indexes open in the background: the server answers `initialize` at once."""
    live = [LiveIndex(repo, **settings) for repo in repos]
    workspace = Workspace(live)
    logging.getLogger("arela_index.mcp").setLevel(logging.INFO)
    for repo in live:
        repo.start(watch=watch)
    server = make_server(workspace)
    names = ", ".join(name for name, _ in workspace)
    try:
        if http is None:
            log.info("arela mcp: serving %s on stdio", names)
            anyio.run(_stdio, server)
        else:
            log.info("arela mcp: serving %s on http://%s:%d/mcp", names, _url_host(host), http)
            if not _loopback(host):
                log.warning(
                    "arela mcp: %s is not a loopback address: whoever reaches it can read these "
                    "repositories through the server (there is no authentication)",
                    host,
                )
            anyio.run(_http, server, host, http)
    finally:
        for repo in live:
            repo.stop()
    return 0


async def _stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    # stdout carries the protocol alone: whatever else writes there (a library's print) goes
    # to stderr instead.
    protocol = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", write_through=True)
    with contextlib.redirect_stdout(sys.stderr):
        async with stdio_server(stdout=anyio.wrap_file(protocol)) as (read, write):
            await server.run(read, write, server.create_initialization_options())


async def _http(server: Server[Any], host: str, port: int) -> None:
    import uvicorn

    app = server.streamable_http_app(host=host)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve()


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
