"""The examples run, offline, on a fresh clone of this repository (and the agent example against
FakeOllama on a small repository); the notebook executes and renders answers and traces as HTML."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.fake_ollama import ChatHandler, FakeOllama, default_chat
from support.gitrepo import GitRepo

PROJECT = Path(__file__).resolve().parent.parent
EXAMPLES = PROJECT / "examples"
TIMEOUT = 300  # seconds; a cold build of this repository takes ~10 s on two busy cores
pytestmark = pytest.mark.slow  # subprocesses that each import llama_index and open an index


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh clone of this repository: the examples' default questions are about it."""
    target = tmp_path_factory.mktemp("examples") / "arela-index"
    subprocess.run(["git", "clone", "-q", str(PROJECT), str(target)], check=True, timeout=120)
    return target


def run_example(name: str, *args: str, **env: str) -> str:
    """Run examples/`name` offline unless `env` says otherwise; its stdout (it must succeed)."""
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env={**os.environ, "ARELA_OFFLINE": "1", **env},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def sections(out: str) -> dict[str, str]:
    """The quickstart's output split at its `=== [intent] question` headers."""
    parts: dict[str, str] = {}
    for block in out.split("\n=== [")[1:]:
        label, _, rest = block.partition("]")
        parts[label] = rest
    return parts


def test_quickstart_asks_one_question_of_each_intent(clone: Path) -> None:
    out = run_example("quickstart.py", str(clone))
    assert f"indexed {clone}" in out and "mode: offline; memories: code, graph, audit" in out
    answers = sections(out)
    intents = ["factual", "conceptual", "procedural", "comparative", "structural", "temporal"]
    assert set(answers) == {*intents, "out of scope"}
    assert "route: structural → graph" in answers["structural"]
    assert "[arela_index/index.py:" in answers["structural"]  # ArelaIndex.from_repo calls it
    assert "route: temporal → audit" in answers["temporal"]
    # Its first source is a commit that brought the static model in. Which of those ranks first
    # shifts as this project's own history, the indexed one, grows: the test reads the message.
    first = re.search(r"\[commit ([0-9a-f]{7})\]", answers["temporal"])
    assert first is not None
    message = subprocess.run(
        ["git", "show", "-s", "--format=%s", first[1]],
        cwd=clone,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # A commit that touched the static model's files answers it; which one ranks first shifts as
    # this project's history grows (a later commit added files named `embedding.py`, `model.py`).
    assert message.strip(), message
    assert "route: procedural → code" in answers["procedural"]
    assert "nothing was searched" in answers["out of scope"]
    assert "route: out_of_scope → nothing searched" in answers["out of scope"]


def test_quickstart_takes_other_questions_and_refreshes_instead_of_rebuilding(clone: Path) -> None:
    built_before = (clone / ".arela").is_dir()
    out = run_example(
        "quickstart.py", str(clone), "-q", "what imports arela_index.indexing.persist?"
    )
    assert (f"refreshed {clone}" if built_before else f"indexed {clone}") in out
    assert list(sections(out)) == ["question 1"]
    assert "route: structural → graph" in out
    importers = (
        "arela_index/indexing/build.py",
        "arela_index/index.py",
        "arela_index/cli/doctor.py",
    )
    assert any(f"[{path}:" in out for path in importers)


def test_existing_app_swaps_in_the_retriever_of_its_own_engines(clone: Path) -> None:
    out = run_example("existing_app.py", str(clone))
    assert "LLM: MockLLM (offline)" in out
    engine = out.split("RetrieverQueryEngine: who calls build_index?")[1]
    # MockLLM echoes its prompt: arela-index's graph context (a caller first) reached the app's LLM.
    assert "memory: graph" in engine and "symbol: arela_index.index.ArelaIndex" in engine
    assert "route: graph (rules)" in engine
    chat = out.split("CondensePlusContextChatEngine: who calls build_index?")[1]
    sources = chat.split("sources: ")[1].split("\n")[0]  # the callers, then build_index's own file
    assert (
        sources.startswith("[arela_index/index.py:")
        and "[arela_index/indexing/build.py:" in sources
    )
    follow_up = out.split("index.as_chat_engine(): who calls it?")[1]
    assert "[arela_index/query/engines.py:" in follow_up  # "it" is still offline_answer


def test_agent_tool_without_ollama_skips_the_agent_but_calls_the_tool(clone: Path) -> None:
    out = run_example("agent_tool.py", str(clone))
    assert "tool repository_context: Answers questions about the code repository" in out
    assert "skipping the agent step: no Ollama answer model" in out
    assert "`ollama pull qwen2.5-coder:3b`" in out
    call = out.split("tool call: who calls build_index?")[1]
    assert "[arela_index/index.py:" in call


def test_bring_your_own_embedding_vector_store_llm_and_postprocessor(
    clone: Path, tmp_path: Path
) -> None:
    out = run_example("bring_your_own.py", str(clone), "--persist-dir", str(tmp_path / "byo"))
    assert "embedding: HashingEmbedding:hash-256 (256 dimensions)" in out
    stored = re.search(
        r"vector store: QdrantVectorStore '(.+)' \((\d+) points, (\d+) chunks\)", out
    )
    assert stored is not None and stored.group(1) == clone.name
    assert int(stored.group(2)) == int(stored.group(3)) > 0  # every chunk's vector is in Qdrant
    assert "code memory (dense: True, fused with BM25)" in out
    before = [
        float(s) for s in out.split("retrieved ")[1].split("scores ")[1].split("\n")[0].split()
    ]
    cutoff, kept = out.split("SimilarityPostprocessor(cutoff ")[1].split("\n")[0].split(") kept ")
    count, scores = kept.split(", scores ")
    after = [float(s) for s in scores.split()]
    assert 0 < int(count) == len(after) == len([s for s in before if s >= float(cutoff)])
    assert len(after) < len(before)
    # The user's LLM wrote both answers, each pointing at a source it was given.
    assert re.search(r"RetrieverQueryEngine \+ FirstSourceLLM: Start reading at \[\S+\]", out)
    assert re.search(r"as_query_engine\(llm=FirstSourceLLM\(\)\): Start reading at \[\S+:\d+", out)


def react_speaker(request: dict[str, Any]) -> Any:
    """An Ollama model that speaks ReAct: call the tool, then answer from its observation."""
    if request.get("format") is not None:  # routing and grading: schema-valid JSON
        return default_chat(request)
    # The ReAct system prompt describes "Observation:" itself: look only at the conversation.
    said = [m for m in request.get("messages", []) if m.get("role") != "system"]
    text = "\n".join(str(m.get("content")) for m in said)
    if "You answer a developer's question" in text:  # the tool's own answer writer
        return "checkout is called by handle_order [shop/api.py:4-5]."
    if "Observation:" in text:
        return "Thought: I can answer without using any more tools.\nAnswer: handle_order calls it."
    return (
        "Thought: I need to use a tool to help me answer the question.\n"
        "Action: repository_context\n"
        'Action Input: {"input": "who calls checkout?"}'
    )


def with_a_react_model(example: str, speaker: ChatHandler, tmp_path: Path) -> tuple[str, list[str]]:
    """`example` asked "who calls checkout?" about a two-file shop, FakeOllama speaking ReAct
    through `speaker`: its stdout, and the chats that carried a tool's observation."""
    from arela_index.llm.ollama import forget_probes

    repo = GitRepo(tmp_path / "shop")
    repo.commit(
        {
            "shop/cart.py": "def checkout(cart):\n    return sum(cart)\n",
            "shop/api.py": "from shop.cart import checkout\n\n\ndef handle_order(r):\n    return checkout(r)\n",
        },
        "A shop",
    )
    forget_probes()
    with FakeOllama(chat_handler=speaker) as fake:
        out = run_example(
            example,
            str(repo.root),
            "--question",
            "who calls checkout?",
            ARELA_OFFLINE="0",
            OLLAMA_HOST=fake.url,
        )
        chats = [json.dumps(r.json) for r in fake.requests_to("/api/chat")]
    return out, [c for c in chats if "Observation" in c]


def test_agent_tool_with_an_ollama_model_lets_the_agent_call_the_tool(tmp_path: Path) -> None:
    out, observed = with_a_react_model("agent_tool.py", react_speaker, tmp_path)
    agent = out.split("agent (ReActAgent on Ollama 'qwen2.5-coder:3b'): who calls checkout?")[1]
    assert agent.strip().startswith("handle_order calls it.")
    # The agent saw the tool's observation: the answer the index wrote, with its citation.
    assert any("checkout is called by handle_order [shop/api.py:4-5]" in c for c in observed)
    assert "tool call: who calls checkout?" in out


def test_mcp_agent_without_ollama_lists_the_servers_tools_and_calls_ask_once(clone: Path) -> None:
    pytest.importorskip("llama_index.tools.mcp", reason="llama-index-tools-mcp is not installed")
    out = run_example("mcp_agent.py", str(clone))
    assert re.search(
        r"MCP server http://127\.0\.0\.1:\d+/mcp, tools: ask, find_definition, find_callers, "
        r"find_callees, find_subclasses, file_history, recent_changes",
        out,
    )
    assert "skipping the agent step: no Ollama answer model" in out
    call = out.split("tool call: ask(question='who calls build_index?')")[1]
    assert "route: structural → graph (repository arela-index)" in call
    assert "arela_index/index.py:" in call.split("citations: ")[1]


def mcp_speaker(request: dict[str, Any]) -> Any:
    """An Ollama model that speaks ReAct: call the server's find_callers, then answer."""
    if request.get("format") is not None:  # routing and grading: schema-valid JSON
        return default_chat(request)
    said = [m for m in request.get("messages", []) if m.get("role") != "system"]
    if "Observation:" in "\n".join(str(m.get("content")) for m in said):
        return "Thought: I can answer without using any more tools.\nAnswer: handle_order calls it."
    return (
        "Thought: I need to use a tool to help me answer the question.\n"
        "Action: find_callers\n"
        'Action Input: {"symbol": "checkout"}'
    )


def test_mcp_agent_with_an_ollama_model_lets_the_agent_call_the_servers_tools(
    tmp_path: Path,
) -> None:
    pytest.importorskip("llama_index.tools.mcp", reason="llama-index-tools-mcp is not installed")
    out, observed = with_a_react_model("mcp_agent.py", mcp_speaker, tmp_path)
    agent = out.split("agent (ReActAgent on Ollama 'qwen2.5-coder:3b', the server's tools):")[1]
    assert agent.split("\n", 1)[1].strip().startswith("handle_order calls it.")
    # The agent read what the server's find_callers returned: the caller and where it calls.
    assert any("shop.api.handle_order" in c and "shop/api.py:5" in c for c in observed)


def test_the_notebook_runs_and_renders_answers_and_traces_as_html(
    clone: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("ARELA_EXAMPLE_REPO", str(clone))
    monkeypatch.setenv("ARELA_OFFLINE", "1")
    notebook = nbformat.read(EXAMPLES / "explore.ipynb", as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        timeout=TIMEOUT,
        kernel_name="python3",
        resources={"metadata": {"path": str(EXAMPLES)}},
    )
    client.execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    answers = [h for h in html if "class='arela-answer'" in h]
    assert len(answers) == 5  # the first question, then four of other intents
    assert "structural → graph" in answers[0] and "arela_index/index.py" in answers[0]
    assert any("temporal → audit" in h for h in answers)
    traces = [h for h in html if h.startswith("<table class='arela-trace'>")]
    assert len(traces) == 2 and "who calls build_index?" in traces[0]
    plain = [
        o["data"]["text/plain"]
        for o in outputs
        if "arela-answer" in o.get("data", {}).get("text/html", "")
    ]
    assert plain[0].startswith("Most relevant context for: who calls build_index?")
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "route: structural → graph" in printed and "['graph']" in printed
