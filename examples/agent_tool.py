"""The index as a `QueryEngineTool` in a LlamaIndex agent.

    python examples/agent_tool.py [REPO] [--question "who calls build_index?"] [--offline]

With an Ollama answer model pulled, a `ReActAgent` (text-only tool use, so small local models
without native tool calling work) decides to call the tool and answers from what it returns.
Without one, the agent step is skipped with a message and the tool is called directly once.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from llama_index.core.tools import QueryEngineTool

from arela_index import ArelaIndex

THIS_REPOSITORY = Path(__file__).resolve().parent.parent


def run_agent(index: ArelaIndex, tool: QueryEngineTool, question: str) -> str:
    from llama_index.core.agent.workflow import ReActAgent

    from arela_index.llm.ollama import make_llm

    config = index.config
    llm = make_llm(config, config.answer_model, config.answer_timeout)
    agent = ReActAgent(tools=[tool], llm=llm, verbose=False)

    async def ask() -> str:
        # The workflow starts on the running loop, so `run` is called inside one.
        return str(await agent.run(user_msg=question))

    return asyncio.run(ask())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", nargs="?", default=str(THIS_REPOSITORY), help="the repository")
    parser.add_argument("--question", default="who calls build_index?")
    parser.add_argument(
        "--offline", action="store_true", help="do not use Ollama even if it answers"
    )
    args = parser.parse_args()

    index = ArelaIndex.from_repo(args.repo, **({"offline": True} if args.offline else {}))
    tool = index.as_tool(name="repository_context")
    print(f"tool {tool.metadata.name}: {tool.metadata.description}\n")

    model = index.config.answer_model
    if index.runtime.online and index.runtime.has_model(model):
        print(f"agent (ReActAgent on Ollama {model!r}): {args.question}")
        print(run_agent(index, tool, args.question), end="\n\n")
    else:
        why = index.runtime.reason or f"model {model!r} is not pulled"
        print(
            f"skipping the agent step: no Ollama answer model ({why}). "
            f"Start `ollama serve` and run `ollama pull {model}` to let an agent call the tool.\n"
        )

    output = tool.call(args.question)  # what the agent's tool call returns, called directly
    print(f"tool call: {args.question}")
    print(output.content)


if __name__ == "__main__":
    main()
