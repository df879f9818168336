"""The MCP server as a client sees it: `arela mcp` run as a subprocess and spoken to with the MCP
SDK's own client, over stdio or streamable HTTP; and small real repositories indexed for real.
The SDK is imported only by the functions that speak to the server (the tests skip without it)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from support.gitrepo import GitRepo

from arela_index.index import ArelaIndex

if TYPE_CHECKING:
    from mcp import ClientSession

WAIT = 90.0  # seconds any one step may take on two busy cores; a poll ends as soon as it holds

SHOP = {
    "shop/__init__.py": "",
    "shop/cart.py": (
        "class Discount:\n"
        '    """A price rule applied at checkout."""\n\n'
        "    def apply(self, total):\n"
        "        return total\n\n\n"
        "class BulkDiscount(Discount):\n"
        "    def apply(self, total):\n"
        "        return total * 0.9 if total > 100 else total\n\n\n"
        "def checkout(cart):\n"
        '    """Total the cart and take the payment."""\n'
        "    return BulkDiscount().apply(sum(cart))\n"
    ),
    "shop/api.py": (
        "from shop.cart import checkout\n\n\n"
        "def handle_order(request):\n"
        "    return checkout(request)\n"
    ),
}
# SHOP's shop/api.py with a second caller of checkout: an edit a refresh must see.
REFUND = (
    "from shop.cart import checkout\n\n\n"
    "def handle_order(request):\n"
    "    return checkout(request)\n\n\n"
    "def refund(request):\n"
    "    return -checkout(request)\n"
)
WEATHER = {
    "weather/__init__.py": "",
    "weather/forecast.py": (
        "def readings(city):\n"
        '    """Temperature readings of a city\'s stations."""\n'
        "    return [12.0, 14.5, 13.0]\n\n\n"
        "def average(values):\n"
        "    return sum(values) / len(values)\n\n\n"
        "def forecast(city):\n"
        '    """Tomorrow\'s temperature forecast: the mean of the station readings."""\n'
        "    return average(readings(city))\n"
    ),
    "weather/cli.py": (
        'from weather.forecast import forecast\n\n\ndef main():\n    print(forecast("Oslo"))\n'
    ),
}


def make_repo(root: Path, files: dict[str, str], message: str, index: bool = True) -> GitRepo:
    """A git repository with `files` in a first commit and one more change, indexed offline
    (unless not `index`)."""
    repo = GitRepo(root)
    repo.commit(files, message, author="Dana Okafor", date="2024-05-02T08:00:00+00:00")
    first = next(p for p in files if files[p])
    repo.commit(
        {first: files[first] + "\n\nVERSION = 2\n"},
        "Second version",
        author="Evan Price",
        date="2024-06-11T14:00:00+00:00",
    )
    if index:
        ArelaIndex.build(repo.root, offline=True)
    return repo


def server_args(*repos: Path, http: int | None = None, extra: tuple[str, ...] = ()) -> list[str]:
    """`arela mcp` for these repositories, offline, as a client would start it."""
    args = ["-m", "arela_index.cli.main", "mcp", "--offline", *extra]
    for repo in repos:
        args += ["--repo", str(repo)]
    return [*args, "--http", str(http)] if http is not None else args


@contextlib.asynccontextmanager
async def stdio_session(*repos: Path, errlog: TextIO) -> AsyncIterator[ClientSession]:
    """A session with a server the SDK's stdio client starts (and stops) itself."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=server_args(*repos),
        env={"IS_TESTING": "1"},
    )
    async with (
        stdio_client(params, errlog=errlog) as (read, write),
        ClientSession(read, write, read_timeout_seconds=WAIT) as session,
    ):
        await session.initialize()
        yield session


@contextlib.asynccontextmanager
async def http_session(url: str) -> AsyncIterator[ClientSession]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write, read_timeout_seconds=WAIT) as session,
    ):
        await session.initialize()
        yield session


@dataclass
class HttpServer:
    """`arela mcp --http` running in a subprocess, its stderr in a file."""

    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stderr(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()

    def kill(self) -> None:
        """SIGKILL, as an OOM killer or a closed laptop lid would end it: no cleanup at all."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=WAIT)


def start_http_server(log: Path, *repos: Path, extra: tuple[str, ...] = ()) -> HttpServer:
    """`arela mcp --http` for `repos` on a free port, once it listens."""
    port = free_port()
    with open(log, "wb") as err:
        process = subprocess.Popen(
            [sys.executable, *server_args(*repos, http=port, extra=extra)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env={**os.environ, "IS_TESTING": "1"},
        )
    server = HttpServer(process, port, log)
    until(lambda: listening(port) or process.poll() is not None, "the server to listen")
    assert process.poll() is None, server.stderr()
    return server


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def listening(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def until(check: Callable[[], Any], what: str, wait: float = WAIT) -> Any:
    """Poll `check` until it returns something truthy (bounded by `wait` seconds)."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"waited {wait:.0f} s for {what}")


async def eventually(check: Callable[[], Awaitable[Any]], what: str, wait: float = WAIT) -> Any:
    """`until` for a check that talks to the server."""
    import anyio

    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        got = await check()
        if got:
            return got
        await anyio.sleep(0.2)
    raise AssertionError(f"waited {wait:.0f} s for {what}")


async def called(session: ClientSession, tool: str, **arguments: Any) -> Any:
    """A tool's JSON answer (the call must succeed)."""
    result = await session.call_tool(tool, arguments)
    text = result.content[0].text  # type: ignore[union-attr]
    assert not result.is_error, text
    data = json.loads(text)
    assert data == result.structured_content
    return data


async def failed(session: ClientSession, tool: str, **arguments: Any) -> str:
    """The one line a bad call answers with (the call must be an error)."""
    result = await session.call_tool(tool, arguments)
    text: str = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error, text
    assert "\n" not in text and "Traceback" not in text, text
    return text
