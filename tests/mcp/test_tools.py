"""Every tool over stdio, spoken to with the MCP SDK's own client, on a real indexed repository:
the answers an agent gets, `ask` as `arela ask --json` gives it, and bad calls answered with the
CLI's one-line errors while the server goes on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed: pip install 'arela-index[mcp]'")

from support.gitrepo import GitRepo
from support.mcp_server import called, failed, stdio_session

pytestmark = pytest.mark.slow  # a server subprocess that imports llama_index and opens an index

TOOLS = {
    "ask",
    "find_definition",
    "find_callers",
    "find_callees",
    "find_subclasses",
    "file_history",
    "recent_changes",
}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "arela_index.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_tools_are_listed_with_schemas_and_descriptions_to_choose_by(
    shop: GitRepo, tmp_path: Path
) -> None:
    async def scenario() -> None:
        with open(tmp_path / "stderr.log", "w") as errlog:
            async with stdio_session(shop.root, errlog=errlog) as session:
                tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert set(tools) == TOOLS
        for tool in tools.values():
            schema = tool.input_schema
            assert schema["type"] == "object" and schema["additionalProperties"] is False
            assert "repo" in schema["properties"] and "repo" not in schema.get("required", [])
            assert all(p.get("description") for p in schema["properties"].values())
            assert tool.description and len(tool.description) > 60
            assert tool.annotations is not None and tool.annotations.read_only_hint
        assert tools["ask"].input_schema["required"] == ["question"]
        assert tools["find_callers"].input_schema["required"] == ["symbol"]
        assert "since" in tools["file_history"].input_schema["properties"]

    anyio.run(scenario)


def test_every_tool_answers_from_the_repository(shop: GitRepo, tmp_path: Path) -> None:
    async def scenario() -> None:
        with open(tmp_path / "stderr.log", "w") as errlog:
            async with stdio_session(shop.root, errlog=errlog) as session:
                ask = await called(session, "ask", question="who calls checkout?")
                definition = await called(session, "find_definition", symbol="checkout")
                callers = await called(session, "find_callers", symbol="checkout")
                callees = await called(session, "find_callees", symbol="handle_order")
                subclasses = await called(session, "find_subclasses", symbol="Discount")
                history = await called(session, "file_history", path="cart.py")
                since = await called(
                    session, "file_history", path="shop/cart.py", since="2024-06-01"
                )
                recent = await called(session, "recent_changes", limit=1)

        assert ask["repo"] == "shop" and ask["abstained"] is False
        assert ask["route"] == "structural → graph"
        assert "shop/api.py:4-5" in ask["citations"]  # handle_order, the caller
        assert ask["citations"] == [s["citation"].strip("[]") for s in ask["sources"]]
        assert ask["notes"] == []

        (found,) = definition["definitions"]
        assert found["symbol"] == "shop.cart.checkout" and found["citation"] == "shop/cart.py:13-15"
        assert found["doc"] == "Total the cart and take the payment."

        assert callers["symbol"] == "shop.cart.checkout"
        assert [(c["symbol"], c["citation"]) for c in callers["callers"]] == [
            ("shop.api.handle_order", "shop/api.py:5")
        ]
        assert "shop.cart.checkout" in [c["symbol"] for c in callees["callees"]]
        assert [(s["symbol"], s["citation"]) for s in subclasses["subclasses"]] == [
            ("shop.cart.BulkDiscount", "shop/cart.py:8")
        ]

        assert history["paths"] == ["shop/cart.py"]
        subjects = [c["subject"] for c in history["commits"]]
        assert subjects == ["Second version", "Cart, checkout and discounts"]
        assert history["commits"][0]["author"] == "Evan Price"
        assert history["commits"][0]["citation"] == f"commit {history['commits'][0]['commit'][:7]}"
        assert [c["subject"] for c in since["commits"]] == ["Second version"]
        assert "2024-06-01" in since["since"]
        assert [c["subject"] for c in recent["commits"]] == ["Second version"]

    anyio.run(scenario)


def test_ask_gives_what_arela_ask_json_gives(shop: GitRepo, tmp_path: Path) -> None:
    question = "how is the cart discounted at checkout?"

    async def scenario() -> dict[str, object]:
        with open(tmp_path / "stderr.log", "w") as errlog:
            async with stdio_session(shop.root, errlog=errlog) as session:
                data: dict[str, object] = await called(session, "ask", question=question)
                return data

    served = anyio.run(scenario)
    done = cli("ask", question, "--repo", str(shop.root), "--json", "--offline")
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    same = [key for key in printed if key != "timings_ms"]
    assert {k: served[k] for k in same} == {k: printed[k] for k in same}
    assert set(served) - set(printed) == {"repo", "citations", "route", "notes"}
    assert printed["sources"]  # a real answer, not two empty ones


def test_bad_calls_are_one_line_errors_and_the_server_goes_on(
    shop: GitRepo, tmp_path: Path
) -> None:
    async def scenario() -> list[str]:
        with open(tmp_path / "stderr.log", "w") as errlog:
            async with stdio_session(shop.root, errlog=errlog) as session:
                lines = [
                    await failed(session, "ask", question="   "),
                    await failed(session, "ask", question="who calls checkout?", top_k=0),
                    await failed(session, "ask", top_k=3),
                    await failed(session, "ask", question="x", colour="blue"),
                    await failed(session, "find_callers", symbol="no_such_function_here"),
                    await failed(session, "find_definition", symbol="checkout", repo="elsewhere"),
                    await failed(session, "file_history"),
                    await failed(session, "file_history", path="nowhere/missing.py"),
                    await failed(session, "recent_changes", since="whenever it was"),
                    await failed(session, "delete_everything"),
                ]
                # After all that, the same server still answers.
                after = await called(session, "find_callers", symbol="checkout")
                assert after["callers"][0]["symbol"] == "shop.api.handle_order"
                return lines

    empty, top_k, missing, extra, symbol, repo, nothing, path, since, tool = anyio.run(scenario)
    # The very line `arela ask` prints for the same mistake.
    cli_line = cli("ask", "   ", "--repo", str(shop.root), "--offline").stderr.strip()
    assert (
        empty
        == cli_line
        == (
            "arela: the question is empty: ask something about the repository, e.g. `who calls main?`"
        )
    )
    assert top_k.startswith("arela: bad arguments to ask: top_k: ")
    assert "greater than or equal to 1" in top_k
    assert (
        missing
        == "arela: bad arguments to ask: question: field required (see the tool's input schema)"
    )
    assert "colour: extra inputs are not permitted" in extra
    assert symbol.startswith("arela: no symbol named `no_such_function_here` in shop: ")
    assert repo.startswith("arela: no repository 'elsewhere' is served here: give one of shop")
    assert nothing.startswith("arela: give a path or a symbol")
    assert path.startswith(
        "arela: no file 'nowhere/missing.py' in the index or the history of shop"
    )
    assert since.startswith("arela: cannot read since='whenever it was' as a time: give a date")
    assert tool.startswith("arela: no tool 'delete_everything': the tools are ask, ")


def test_without_an_index_it_builds_one_and_a_partial_name_lists_what_it_may_mean(
    tmp_path: Path,
) -> None:
    from support.mcp_server import make_repo

    repo = make_repo(
        tmp_path / "store",
        {
            "store/files.py": "def save(path):\n    return path\n",
            "store/db.py": "def save(row):\n    return row\n\n\ndef flush():\n    save(1)\n",
        },
        "Two saves",
        index=False,
    )

    async def scenario() -> tuple[dict[str, object], dict[str, object]]:
        with open(tmp_path / "stderr.log", "w") as errlog:
            async with stdio_session(repo.root, errlog=errlog) as session:
                return (
                    await called(session, "find_callers", symbol="save"),
                    await called(session, "find_definition", symbol="save"),
                )

    callers, definitions = anyio.run(scenario)
    assert (repo.root / ".arela" / "CURRENT").is_file()  # built by the server, on first open
    assert callers["ambiguous"] is True
    assert [c["symbol"] for c in callers["candidates"]] == ["store.db.save", "store.files.save"]  # type: ignore[index]
    assert "call again with one of the candidates' names" in str(callers["note"])
    assert [d["citation"] for d in definitions["definitions"]] == [  # type: ignore[index]
        "store/db.py:1-2",
        "store/files.py:1-2",
    ]
