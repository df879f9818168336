"""A LlamaIndex agent using arela-index's MCP server through `llama-index-tools-mcp`.

    python examples/mcp_agent.py [REPO] [--question "who calls build_index?"] [--offline]

Starts `arela mcp --http` on a free port of 127.0.0.1 (one warm server for every call the agent
makes), and turns its tools into LlamaIndex `FunctionTool`s with `McpToolSpec`. With an Ollama
answer model pulled, a `ReActAgent` chooses among them (ask, find_callers, file_history, ...) and
answers from what they return. Without one, the agent step is skipped with a message and the
`ask` tool is called directly once, as the agent would call it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from llama_index.core.tools import FunctionTool
from llama_index.tools.mcp import BasicMCPClient, McpToolSpec

from arela_index.config import ArelaConfig
from arela_index.llm.runtime import detect

THIS_REPOSITORY = Path(__file__).resolve().parent.parent
STARTUP = 300.0  # seconds: a repository without an index is built first


def start_server(repo: str, offline: bool) -> tuple[subprocess.Popen[bytes], str]:
    """`arela mcp --http PORT` for `repo`, once it listens; its log goes to this stderr."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "arela_index.cli.main", "mcp", "--repo", repo]
    command += ["--http", str(port), *(["--offline"] if offline else [])]
    server = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + STARTUP
    while time.monotonic() < deadline and server.poll() is None:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return server, f"http://127.0.0.1:{port}/mcp"
        time.sleep(0.2)
    server.kill()
    sys.exit(f"the MCP server did not start (exit code {server.poll()}); its log is above")


async def run_agent(tools: list[FunctionTool], question: str, config: ArelaConfig) -> str:
    from llama_index.core.agent.workflow import ReActAgent

    from arela_index.llm.ollama import make_llm

    llm = make_llm(config, config.answer_model, config.answer_timeout)
    agent = ReActAgent(tools=tools, llm=llm, verbose=False)
    return str(await agent.run(user_msg=question))


def shown(output: Any) -> str:
    """A tool's answer as a person reads it: the answer, its citations and the route."""
    text = output.raw_output.content[0].text
    if output.raw_output.is_error:
        return text
    data = json.loads(text)
    lines = [data["answer"].rstrip(), "", f"route: {data['route']} (repository {data['repo']})"]
    return "\n".join([*lines, f"citations: {', '.join(data['citations']) or 'none'}"])


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", nargs="?", default=str(THIS_REPOSITORY), help="the repository")
    parser.add_argument("--question", default="who calls build_index?")
    parser.add_argument(
        "--offline", action="store_true", help="do not use Ollama even if it answers"
    )
    args = parser.parse_args()

    server, url = start_server(args.repo, args.offline)
    try:
        tools = await McpToolSpec(client=BasicMCPClient(url)).to_tool_list_async()
        print(f"MCP server {url}, tools: {', '.join(t.metadata.name for t in tools)}\n")

        config = ArelaConfig().with_(**({"offline": True} if args.offline else {}))
        runtime = detect(config)
        model = config.answer_model
        if runtime.online and runtime.has_model(model):
            print(f"agent (ReActAgent on Ollama {model!r}, the server's tools): {args.question}")
            print(await run_agent(tools, args.question, config), end="\n\n")
        else:
            why = runtime.reason or f"model {model!r} is not pulled"
            print(
                f"skipping the agent step: no Ollama answer model ({why}). Start `ollama serve` "
                f"and run `ollama pull {model}` to let an agent choose among the tools.\n"
            )
        ask = next(t for t in tools if t.metadata.name == "ask")
        output = await ask.acall(question=args.question)  # what the agent's call returns
        print(f"tool call: ask(question={args.question!r})")
        print(shown(output))
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    asyncio.run(main())
