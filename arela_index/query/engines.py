"""What LlamaIndex users drop in: one retriever (the query loop), a query engine with citations
and a chat engine over it. Offline, the answer is the ranked, cited context."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole
from llama_index.core.base.response.schema import Response
from llama_index.core.callbacks import CallbackManager
from llama_index.core.chat_engine.types import (
    AgentChatResponse,
    BaseChatEngine,
    StreamingAgentChatResponse,
)
from llama_index.core.llms import LLM
from llama_index.core.memory import BaseMemory, ChatMemoryBuffer
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.response_synthesizers import BaseSynthesizer
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, QueryType

from arela_index.errors import ArelaError, OllamaUnavailable
from arela_index.llm.ollama import Rest
from arela_index.query.answers import abstention, citation, offline_answer
from arela_index.query.grading import RelevanceGrader
from arela_index.query.loop import QueryLoop
from arela_index.query.steps import Call, Steps, arun, run
from arela_index.query.trace import Trace
from arela_index.retrievers.router import ArelaRouterRetriever
from arela_index.text.question import Question

ANSWER_PROMPT = (
    "You answer a developer's question about a code repository, using only the quoted context.\n"
    "{passages}\n\nQuestion: {question}\n\n"
    "Answer concisely and precisely. After each claim cite the block it comes from with the label "
    "shown on the block in square brackets, e.g. [src/app/config.py:10-24] or [commit 1a2b3c4]. "
    "If the context does not answer the question, say so plainly instead of guessing."
)


class ArelaRetriever(BaseRetriever):
    """The query loop as one retriever: route, retrieve, fuse, grade and retry.

    The nodes `retrieve` returns carry the query's trace (hidden metadata `trace`) for the
    engine that receives them; `retrieve_with_trace` returns it beside them.

    >>> retriever = index.as_retriever()                                   # doctest: +SKIP
    >>> RetrieverQueryEngine.from_args(retriever, llm=my_llm).query("who calls main?")  # doctest: +SKIP
    """

    def __init__(self, loop: QueryLoop, callback_manager: CallbackManager | None = None) -> None:
        super().__init__(callback_manager=callback_manager)
        self.loop = loop

    @property
    def router(self) -> ArelaRouterRetriever:
        return self.loop.router

    @property
    def grader(self) -> RelevanceGrader:
        return self.loop.grader

    def retrieve_with_trace(self, query: QueryType) -> tuple[list[NodeWithScore], Trace]:
        return run(self.loop.steps(Question.read(query)))

    async def aretrieve_with_trace(self, query: QueryType) -> tuple[list[NodeWithScore], Trace]:
        return await arun(self.loop.steps(Question.read(query)))

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        nodes, trace = self.retrieve_with_trace(query_bundle)
        return trace.attach(nodes)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        nodes, trace = await self.aretrieve_with_trace(query_bundle)
        return trace.attach(nodes)


class CitedSynthesizer(BaseSynthesizer):
    """Writes the answer: an LLM's, citing its sources, or offline the ranked cited context.

    With no relevant node it abstains without calling any LLM.
    """

    def __init__(self, llm: LLM | None, callback_manager: CallbackManager | None = None) -> None:
        from llama_index.core.llms import MockLLM

        # The base class wants an LLM; MockLLM keeps Settings.llm (OpenAI) from being read offline.
        super().__init__(llm=llm or MockLLM(), callback_manager=callback_manager)
        self.answer_llm = llm
        self._rest = Rest()

    def _get_prompts(self) -> dict[str, Any]:
        return {}

    def _update_prompts(self, prompts: Any) -> None:
        return None

    def get_response(self, query_str: str, text_chunks: Sequence[str], **kwargs: Any) -> str:
        raise ArelaError("CitedSynthesizer answers from nodes: call synthesize(query, nodes)")

    async def aget_response(self, query_str: str, text_chunks: Sequence[str], **kwargs: Any) -> str:
        raise ArelaError("CitedSynthesizer answers from nodes: call asynthesize(query, nodes)")

    def synthesize(
        self, query: QueryType, nodes: list[NodeWithScore], *args: Any, **kwargs: Any
    ) -> Response:
        return run(self._synthesis(query, nodes))

    async def asynthesize(
        self, query: QueryType, nodes: list[NodeWithScore], *args: Any, **kwargs: Any
    ) -> Response:
        return await arun(self._synthesis(query, nodes))

    def _synthesis(self, query: QueryType, nodes: list[NodeWithScore]) -> Steps[Response]:
        # In a stock engine the trace comes with the nodes `ArelaRetriever.retrieve` returned.
        question = query.query_str if isinstance(query, QueryBundle) else str(query)
        trace = Trace.of(nodes) or Trace(question=question)
        return (yield from self.respond_steps(question, nodes, trace))

    def respond_steps(
        self, question: str, nodes: list[NodeWithScore], trace: Trace
    ) -> Steps[Response]:
        """The answer, cited: written by the LLM, else the ranked context; or an abstention."""
        with trace.time("answer"):
            if not nodes:
                text = abstention(question, searched(trace), _why_empty(trace))
            elif self.answer_llm is None:
                text = offline_answer(question, nodes, _route_line(trace))
            else:
                text = yield from self._written(question, nodes, trace)
        return Response(text, source_nodes=nodes, metadata={"arela": trace, "abstained": not nodes})

    def _written(self, question: str, nodes: list[NodeWithScore], trace: Trace) -> Steps[str]:
        from arela_index.llm.ollama import ollama_errors, quote_data

        llm = self.answer_llm
        assert llm is not None
        if resting := self._rest.why():
            trace.add_step("fallback", stage="answer", why=resting)
            return offline_answer(question, nodes, _route_line(trace))
        # Each block is labelled with the very citation the answer should carry.
        passages = quote_data([(citation(n)[1:-1], n.node.get_content()) for n in nodes])
        prompt = ANSWER_PROMPT.format(passages=passages, question=question)
        try:
            with ollama_errors(
                model=getattr(llm, "model", None),
                host=getattr(llm, "base_url", None),
                timeout=getattr(llm, "request_timeout", None),
            ):
                completion = yield Call(lambda: llm.complete(prompt), lambda: llm.acomplete(prompt))
            text = completion.text.strip()
        except OllamaUnavailable as exc:
            self._rest.failed(str(exc))
            trace.add_step("fallback", stage="answer", why=str(exc))
            return offline_answer(question, nodes, _route_line(trace))
        if not text:
            trace.add_step("fallback", stage="answer", why="the model answered nothing")
            return offline_answer(question, nodes, _route_line(trace))
        cited = [c for c in dict.fromkeys(citation(n) for n in nodes) if c in text]
        if not cited:  # the reader must still see where the answer comes from
            text += "\n\nSources: " + " ".join(dict.fromkeys(citation(n) for n in nodes))
        return text


class ArelaQueryEngine(RetrieverQueryEngine):
    """A `RetrieverQueryEngine` whose answers cite `[path:lines]` / `[commit abc1234]` and carry
    the trace in `response.metadata["arela"]`.

    >>> response = index.as_query_engine().query("who calls load_config?")  # doctest: +SKIP
    >>> print(response); response.metadata["arela"].to_text()                # doctest: +SKIP
    """

    def __init__(self, retriever: ArelaRetriever, synthesizer: CitedSynthesizer) -> None:
        super().__init__(retriever=retriever, response_synthesizer=synthesizer)
        self.arela_retriever = retriever
        self.synthesizer = synthesizer

    def _query(self, query_bundle: QueryBundle) -> Response:
        loop = self.arela_retriever.loop
        return run(loop.answer_steps(Question.read(query_bundle), self.synthesizer))

    async def _aquery(self, query_bundle: QueryBundle) -> Response:
        loop = self.arela_retriever.loop
        return await arun(loop.answer_steps(Question.read(query_bundle), self.synthesizer))


class OfflineChatEngine(BaseChatEngine):
    """Chat without an LLM: a follow-up that names nothing inherits the names of the last
    question in the chat history that named something ("and who calls it?"), and each answer is
    the ranked, cited context. A `chat_history` given to the engine or to `chat` is that history.

    >>> chat = index.as_chat_engine()           # offline  # doctest: +SKIP
    >>> chat.chat("what does load_config do?"); chat.chat("who calls it?")  # doctest: +SKIP
    """

    def __init__(
        self,
        query_engine: ArelaQueryEngine,
        chat_history: list[ChatMessage] | None = None,
        memory: BaseMemory | None = None,
    ) -> None:
        self._engine = query_engine
        self._memory = memory or ChatMemoryBuffer.from_defaults(token_limit=8000)
        if chat_history is not None:
            self._memory.set(chat_history)

    def _condense(self, message: str) -> str:
        if Question.of(message).named:
            return message
        names = self._last_names()
        return f"{message} ({' '.join(names)})" if names else message

    def _last_names(self) -> list[str]:
        """What the latest question of the history that named something named."""
        for said in reversed(self._memory.get_all()):
            if said.role == MessageRole.USER and (named := Question.of(said.content or "").named):
                return named
        return []

    def chat(
        self, message: str, chat_history: list[ChatMessage] | None = None
    ) -> AgentChatResponse:
        if chat_history is not None:
            self._memory.set(chat_history)
        response = self._engine.query(self._condense(message))
        self._memory.put(ChatMessage(role=MessageRole.USER, content=message))
        self._memory.put(ChatMessage(role=MessageRole.ASSISTANT, content=str(response)))
        return AgentChatResponse(
            response=str(response), source_nodes=response.source_nodes, metadata=response.metadata
        )

    async def achat(
        self, message: str, chat_history: list[ChatMessage] | None = None
    ) -> AgentChatResponse:
        return await asyncio.to_thread(self.chat, message, chat_history)

    def stream_chat(
        self, message: str, chat_history: list[ChatMessage] | None = None
    ) -> StreamingAgentChatResponse:
        answer = self.chat(message, chat_history)
        done = ChatMessage(role=MessageRole.ASSISTANT, content=answer.response)
        stream = StreamingAgentChatResponse(
            chat_stream=(r for r in [ChatResponse(message=done, delta=answer.response)]),
            source_nodes=answer.source_nodes,
        )
        # The memory already holds the answer; the stream only has to deliver it.
        stream.write_response_to_history(ChatMemoryBuffer.from_defaults())
        return stream

    async def astream_chat(
        self, message: str, chat_history: list[ChatMessage] | None = None
    ) -> StreamingAgentChatResponse:
        return await asyncio.to_thread(self.stream_chat, message, chat_history)

    def reset(self) -> None:
        self._memory.reset()

    @property
    def chat_history(self) -> list[ChatMessage]:
        return self._memory.get_all()


def searched(trace: Trace) -> list[str]:
    """Every memory the question was looked up in: the route's, then the retries'."""
    retried = (m for step in trace.steps if step.get("kind") == "retry" for m in step["memories"])
    return list(dict.fromkeys([*trace.memory_names, *retried]))


def _route_line(trace: Trace) -> str:
    memories = ", ".join(searched(trace)) or "none"
    intents = ", ".join(name for name, _ in trace.intents) or "unknown"
    return f"intent {intents}; searched {memories}"


def _why_empty(trace: Trace) -> str:
    for step in reversed(trace.steps):
        if step.get("kind") == "abstain":
            return str(step.get("why", ""))
    return "nothing relevant was found"
