"""An app that already uses LlamaIndex keeps its own query engine and chat engine and only swaps
its retriever for `ArelaIndex.as_retriever()`.

    python examples/existing_app.py [REPO] [--offline]

The app's LLM is its own choice: here Ollama's answer model when it is pulled, otherwise
`MockLLM` (which echoes its prompt, so you see exactly the context arela-index handed over).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from llama_index.core.chat_engine import CondensePlusContextChatEngine
from llama_index.core.llms import LLM, MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import BaseRetriever

from arela_index import ArelaIndex
from arela_index.query.answers import citation
from arela_index.trace import Trace

THIS_REPOSITORY = Path(__file__).resolve().parent.parent


# -- the existing app: written against any BaseRetriever, unchanged by the swap ----------------


def build_app(
    retriever: BaseRetriever, llm: LLM
) -> tuple[RetrieverQueryEngine, CondensePlusContextChatEngine]:
    query_engine = RetrieverQueryEngine.from_args(retriever, llm=llm)
    chat_engine = CondensePlusContextChatEngine.from_defaults(retriever=retriever, llm=llm)
    return query_engine, chat_engine


def app_llm(index: ArelaIndex) -> LLM:
    """Ollama's answer model when it is there, else MockLLM: never the OpenAI default."""
    config, runtime = index.config, index.runtime
    if runtime.online and runtime.has_model(config.answer_model):
        from llama_index.llms.ollama import Ollama

        from arela_index.llm.ollama import base_url

        return Ollama(
            model=config.answer_model,
            base_url=base_url(config.ollama_host),
            request_timeout=config.answer_timeout,
            context_window=config.answer_context_window,
        )
    return MockLLM()


def first_lines(text: str, n: int = 8) -> str:
    lines = str(text).strip().splitlines()
    more = f"\n    … {len(lines) - n} more lines" if len(lines) > n else ""
    return "\n".join(f"    {line}" for line in lines[:n]) + more


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", nargs="?", default=str(THIS_REPOSITORY), help="the repository")
    parser.add_argument(
        "--offline", action="store_true", help="do not use Ollama even if it answers"
    )
    parser.add_argument("--question", default="who calls build_index?")
    args = parser.parse_args()

    index = ArelaIndex.from_repo(args.repo, **({"offline": True} if args.offline else {}))
    # Before: retriever = VectorStoreIndex(nodes, embed_model=...).as_retriever(similarity_top_k=5)
    retriever = index.as_retriever(top_k=5)
    llm = app_llm(index)
    query_engine, chat_engine = build_app(retriever, llm)
    print(f"LLM: {type(llm).__name__} ({index.runtime.mode})\n")

    response = query_engine.query(args.question)
    print(f"RetrieverQueryEngine: {args.question}")
    print(first_lines(str(response)))
    print("  sources:", " ".join(citation(n) for n in response.source_nodes))
    trace = Trace.of(response.source_nodes)
    if trace is not None:
        print("  route:", ", ".join(trace.memory_names), f"({trace.stage})\n")

    chat = chat_engine.chat(args.question)
    print(f"CondensePlusContextChatEngine: {args.question}")
    print(first_lines(chat.response, 4))
    print("  sources:", " ".join(citation(n) for n in chat.source_nodes), "\n")

    # arela-index's own chat engine carries names into follow-ups even without an LLM.
    own_chat = index.as_chat_engine()
    for message in ("what does offline_answer do?", "who calls it?"):
        answer = own_chat.chat(message)
        print(f"index.as_chat_engine(): {message}")
        print("  sources:", " ".join(citation(n) for n in answer.source_nodes[:3]))


if __name__ == "__main__":
    main()
