"""The index stays fresh: a saved file and a new commit reach the answers within a bounded wait,
a refresh that fails is said in the next answer while the old index goes on answering, and a
server killed in the middle of a refresh restarts on its index, intact."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed: pip install 'arela-index[mcp]'")

from support.gitrepo import GitRepo
from support.harness import build_many_modules, module_file
from support.mcp_server import REFUND, HttpServer, called, eventually, http_session, until

from arela_index.index import ArelaIndex
from arela_index.indexing.persist import build_lock, current_build

pytestmark = pytest.mark.slow  # servers in subprocesses, refreshed as files change


def test_a_saved_file_and_a_new_commit_reach_the_answers(
    shop: GitRepo, http_server: Callable[..., HttpServer]
) -> None:
    server = http_server(shop.root)

    async def scenario() -> None:
        async with http_session(server.url) as session:
            before = await called(session, "ask", question="who calls checkout?")
            assert "shop/api.py:8-9" not in before["citations"]

            (shop.root / "shop" / "api.py").write_text(
                REFUND, encoding="utf-8"
            )  # saved, not committed

            async def cites_refund() -> bool:
                callers = await called(session, "find_callers", symbol="checkout")
                return "shop.api.refund" in [c["symbol"] for c in callers["callers"]]

            await eventually(cites_refund, "find_callers to see the saved refund()")
            callers = await called(session, "find_callers", symbol="checkout")
            assert {c["citation"] for c in callers["callers"]} == {"shop/api.py:5", "shop/api.py:9"}
            after = await called(session, "ask", question="who calls checkout?")
            assert "shop/api.py:8-9" in after["citations"]

            shop.commit(message="Refunds", author="Fay Lin", date="2024-07-01T09:00:00+00:00")

            async def sees_commit() -> bool:
                recent = await called(session, "recent_changes", limit=1)
                return recent["commits"][0]["subject"] == "Refunds"

            await eventually(sees_commit, "recent_changes to see the new commit")
            history = await called(session, "file_history", path="api.py", limit=1)
            assert history["commits"][0]["author"] == "Fay Lin"

    anyio.run(scenario)
    assert "refreshed" in server.stderr()


def test_a_failed_refresh_is_said_and_the_old_index_answers_until_one_succeeds(
    shop: GitRepo, http_server: Callable[..., HttpServer]
) -> None:
    server = http_server(shop.root)
    persist = shop.root / ".arela"

    async def scenario() -> None:
        async with http_session(server.url) as session:
            await called(session, "find_callers", symbol="checkout")  # opened and warm
            # Another `arela index` holds the index while the file changes: the refresh fails.
            with build_lock(persist):
                (shop.root / "shop" / "api.py").write_text(REFUND, encoding="utf-8")

                async def failure_said() -> dict[str, object] | None:
                    answer = await called(session, "ask", question="who calls checkout?")
                    notes = " ".join(answer["notes"])
                    return answer if "the last refresh of" in notes else None

                answer = await eventually(failure_said, "the failed refresh in the notes")
                assert "another `arela index`" in " ".join(answer["notes"])  # type: ignore[arg-type]
                assert "shop/api.py:8-9" not in answer["citations"]  # type: ignore[operator]
                callers = await called(session, "find_callers", symbol="checkout")
                assert len(callers["callers"]) == 1  # still the index before the edit

            # The lock released, the server tries again by itself.
            async def refreshed() -> dict[str, object] | None:
                answer = await called(session, "ask", question="who calls checkout?")
                return answer if "shop/api.py:8-9" in answer["citations"] else None

            answer = await eventually(refreshed, "the retried refresh")
            assert not any("the last refresh" in note for note in answer["notes"])  # type: ignore[union-attr]

    anyio.run(scenario)
    assert server.process.poll() is None


def test_killed_mid_refresh_it_restarts_on_its_index_intact(
    tmp_path: Path, http_server: Callable[..., HttpServer]
) -> None:
    repo = build_many_modules(tmp_path / "stages", modules=300, commits=2)
    ArelaIndex.build(repo.root, offline=True)
    persist = repo.root / ".arela"
    before = current_build(persist)
    server = http_server(repo.root)

    def mid_refresh() -> bool:
        builds = {p for p in persist.glob("build-*") if p.is_dir()}
        return bool(builds - {before}) and current_build(persist) == before

    async def edit_then_ask(url: str) -> dict[str, object]:
        async with http_session(url) as session:
            await called(session, "find_callers", symbol="func_5_0")
            # Every module changes: the refresh parses 300 files, seconds on two cores.
            repo.write({f"pkg/stage{i:03d}.py": module_file(i, functions=9) for i in range(300)})
            until(mid_refresh, "the refresh to start a new build", wait=60)
            # Meanwhile questions are answered, from the index before the edit.
            answer: dict[str, object] = await called(session, "ask", question="who calls func_5_0?")
            return answer

    during = anyio.run(edit_then_ask, server.url)
    assert mid_refresh()  # still refreshing when that answer came
    assert "pkg/stage004.py:1-3" in during["citations"]  # type: ignore[operator]
    assert any("is being refreshed" in note for note in during["notes"])  # type: ignore[attr-defined]
    server.kill()
    assert current_build(persist) == before  # the killed refresh never became the index
    index = ArelaIndex.load(persist, offline=True)
    assert index.graph.find("pkg.stage005.func_5_0")[0] == ["pkg.stage005.func_5_0"]

    restarted = http_server(repo.root)

    async def scenario() -> None:
        async with http_session(restarted.url) as session:
            callers = await called(session, "find_callers", symbol="func_5_0")
            assert callers["callers"][0]["symbol"] == "pkg.stage004.func_4_0"

            async def sees_edit() -> bool:
                found = await called(session, "find_definition", symbol="pkg.stage005.func_5_8")
                return bool(found["match"] == "exact")  # not a near spelling of an old one

            # The restarted server finds the index behind the tree and refreshes it.
            await eventually(sees_edit, "the restarted server to refresh")

    anyio.run(scenario)
    assert current_build(persist) != before
    assert not [p for p in persist.glob("build-*") if p != current_build(persist)]
