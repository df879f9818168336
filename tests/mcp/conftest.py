"""Fixtures of the MCP server tests: two small repositories indexed for real, and HTTP servers
stopped after each test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support.gitrepo import GitRepo
from support.mcp_server import SHOP, WEATHER, HttpServer, make_repo, start_http_server


@pytest.fixture
def shop(tmp_path: Path) -> GitRepo:
    return make_repo(tmp_path / "shop", SHOP, "Cart, checkout and discounts")


@pytest.fixture
def weather(tmp_path: Path) -> GitRepo:
    return make_repo(tmp_path / "weather", WEATHER, "Forecasts from station readings")


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[Callable[..., HttpServer]]:
    """Starts `arela mcp --http` servers (each once it listens); stops them after the test."""
    started: list[HttpServer] = []

    def start(*repos: Path, extra: tuple[str, ...] = ()) -> HttpServer:
        server = start_http_server(tmp_path / f"server-{len(started)}.log", *repos, extra=extra)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
