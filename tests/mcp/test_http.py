"""`arela mcp --http`: streamable HTTP with the SDK's own client, bound to 127.0.0.1 unless told
otherwise, and several repositories in one server, each call routed to the one it is about."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed: pip install 'arela-index[mcp]'")

from support.gitrepo import GitRepo
from support.mcp_server import HttpServer, called, failed, http_session, listening

pytestmark = pytest.mark.slow  # a server subprocess that imports llama_index and opens an index


def test_over_http_on_the_loopback_address_only(
    shop: GitRepo, http_server: Callable[..., HttpServer]
) -> None:
    server = http_server(shop.root)

    async def scenario() -> None:
        async with http_session(server.url) as session:
            names = {tool.name for tool in (await session.list_tools()).tools}
            assert {"ask", "find_callers", "recent_changes"} <= names
            callers = await called(session, "find_callers", symbol="checkout")
            assert callers["callers"][0]["citation"] == "shop/api.py:5"
            ask = await called(session, "ask", question="who inherits from Discount?")
            assert "shop/cart.py:8-10" in ask["citations"]
            assert (await failed(session, "ask", question="")).startswith(
                "arela: the question is empty"
            )

    anyio.run(scenario)
    assert f"serving shop on http://127.0.0.1:{server.port}/mcp" in server.stderr()
    # Another address of this very machine does not reach it: bound to 127.0.0.1 alone.
    assert listening(server.port, "127.0.0.1") and not listening(server.port, "127.0.0.2")


def test_several_repositories_each_call_goes_to_the_one_it_is_about(
    shop: GitRepo, weather: GitRepo, http_server: Callable[..., HttpServer]
) -> None:
    server = http_server(shop.root, weather.root)

    async def scenario() -> None:
        async with http_session(server.url) as session:
            checkout = await called(session, "ask", question="who calls checkout?")
            assert checkout["repo"] == "shop" and "shop/api.py:4-5" in checkout["citations"]
            assert checkout["repo_choice"].startswith("chose shop: ")

            readings = await called(
                session, "ask", question="how is the forecast averaged from station readings?"
            )
            assert readings["repo"] == "weather"
            assert any(c.startswith("weather/forecast.py:") for c in readings["citations"])

            forecast = await called(session, "find_callers", symbol="forecast")
            assert forecast["repo"] == "weather"
            assert forecast["callers"][0]["citation"] == "weather/cli.py:5"
            assert (await called(session, "find_definition", symbol="BulkDiscount"))[
                "repo"
            ] == "shop"
            assert (await called(session, "file_history", path="forecast.py"))["repo"] == "weather"

            # Named, a repository is asked even about what only the other knows.
            named = await called(session, "find_callers", symbol="average", repo="weather")
            assert named["repo"] == "weather" and "repo_choice" not in named
            asked = await called(session, "ask", question="who calls checkout?", repo="weather")
            assert asked["repo"] == "weather" and "shop/api.py:4-5" not in asked["citations"]

            # Without repo, the newest commits of both, each saying whose it is.
            recent = (await called(session, "recent_changes", limit=3))["commits"]
            assert [c["subject"] for c in recent[:2]] == ["Second version"] * 2
            assert {c["repo"] for c in recent[:2]} == {"shop", "weather"}
            assert recent[2]["date"] < recent[1]["date"]

            unknown = await failed(session, "find_callers", symbol="no_such_thing_at_all")
            assert unknown.startswith(
                "arela: no symbol named `no_such_thing_at_all` in shop, weather"
            )
            wrong = await failed(session, "recent_changes", repo="nope")
            assert wrong.startswith(
                "arela: no repository 'nope' is served here: give one of shop, weather"
            )

    anyio.run(scenario)
