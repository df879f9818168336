"""What LlamaIndex users drop in: one retriever (the query loop), a query engine with citations
and a chat engine over it. Offline, the answer is the ranked, cited context."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Callable, Generator, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole
from llama_index.core.base.response.schema import (
    AsyncStreamingResponse,
    Response,
    StreamingResponse,
)
from llama_index.core.callbacks import CallbackManager, CBEventType, EventPayload
from llama_index.core.chat_engine.types import (
    AgentChatResponse,
    BaseChatEngine,
    StreamingAgentChatResponse,
)
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events.retrieval import (
    RetrievalEndEvent,
    RetrievalStartEvent,
)
from llama_index.core.instrumentation.events.synthesis import (
    SynthesizeEndEvent,
    SynthesizeStartEvent,
)
from llama_index.core.llms import LLM
from llama_index.core.memory import BaseMemory, ChatMemoryBuffer
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.prompts import BasePromptTemplate, PromptTemplate
from llama_index.core.prompts.mixin import PromptDictType, PromptMixinType
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.response_synthesizers import BaseSynthesizer
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, QueryType

from arela_index.errors import ArelaError, OllamaUnavailable
from arela_index.llm.ollama import Rest
from arela_index.query import response_trace
from arela_index.query.answers import abstention, citation, offline_answer
from arela_index.query.grading import RelevanceGrader
from arela_index.query.grounding import check_answer
from arela_index.query.loop import QueryLoop, total
from arela_index.query.recent import RecentAnswers
from arela_index.retrievers.router import ArelaRouterRetriever
from arela_index.steps import Call, Steps, arun, run
from arela_index.text.question import Question
from arela_index.trace import Trace
from arela_index.workers import offload

ANSWER_PROMPT = PromptTemplate(
    "You answer a developer's question about a code repository, using only the quoted context.\n"
    "{passages}\n\nQuestion: {question}\n\n"
    "Answer concisely and precisely. After each claim cite the block it comes from with the label "
    "shown on the block in square brackets, e.g. [src/app/config.py:10-24] or [commit 1a2b3c4]. "
    "If the context does not answer the question, say so plainly instead of guessing."
)
# The variables an answer prompt fills in: arela's, or LlamaIndex's own (`text_qa_template`'s).
ANSWER_VARIABLES = (frozenset({"passages", "question"}), frozenset({"context_str", "query_str"}))
# What CitedSynthesizer can do: one cited answer over all kept nodes, or only the nodes.
RESPONSE_MODES = ("compact", "no_text")
# How a written answer that fails `check_answer` is flagged to its reader.
_UNCHECKED = "the model's answer is not grounded in its sources"

dispatcher = get_dispatcher(__name__)
_Answer = Response | StreamingResponse | AsyncStreamingResponse


class ArelaRetriever(BaseRetriever):
    """The query loop as one retriever: route, retrieve, fuse, grade and retry.

    The nodes `retrieve` returns carry the query's trace (hidden metadata `trace`) for the
    engine that receives them; `retrieve_with_trace` returns it beside them. With `recent`, a
    question asked again is answered from it (offline, where the answer cannot change).

    >>> retriever = index.as_retriever()                                   # doctest: +SKIP
    >>> RetrieverQueryEngine.from_args(retriever, llm=my_llm).query("who calls main?")  # doctest: +SKIP
    """

    def __init__(
        self,
        loop: QueryLoop,
        callback_manager: CallbackManager | None = None,
        recent: RecentAnswers | None = None,
        check: Callable[[list[NodeWithScore], Trace], list[NodeWithScore]] | None = None,
    ) -> None:
        from llama_index.core import Settings

        super().__init__(callback_manager=callback_manager or Settings.callback_manager)
        # `check`: the sources kept of those found (`WorktreeCheck`: what the files still hold).
        self.loop, self.recent, self.check = loop, recent, check
        response_trace.install()

    @property
    def router(self) -> ArelaRouterRetriever:
        return self.loop.router

    @property
    def grader(self) -> RelevanceGrader:
        return self.loop.grader

    def retrieve_with_trace(self, query: QueryType) -> tuple[list[NodeWithScore], Trace]:
        if (known := self._recalled(query)) is not None:
            return known
        nodes, trace = run(self.loop.steps(Question.read(query)))
        if self.check is not None:
            nodes = self.check(nodes, trace)
        return self._remember(query, (nodes, trace))

    def _recalled(self, query: QueryType) -> tuple[list[NodeWithScore], Trace] | None:
        known = self.recent.get(query) if self.recent is not None else None
        if known is not None:
            known[1].add_step("recalled", why="asked before: the answer this index gave then")
        return known

    def _remember(
        self, query: QueryType, result: tuple[list[NodeWithScore], Trace]
    ) -> tuple[list[NodeWithScore], Trace]:
        return self.recent.put(query, result) if self.recent is not None else result

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        nodes, trace = self.retrieve_with_trace(query_bundle)
        response_trace.retrieved(query_bundle, trace)
        return trace.attach(nodes)

    @dispatcher.span
    def retrieve_traced(self, query: QueryBundle) -> tuple[list[NodeWithScore], Trace]:
        """`retrieve_with_trace` reporting to callbacks and instrumentation as `retrieve` does,
        in a span of its own (the engine needs the trace even when no node is left to carry it)."""
        with self._retrieval(query) as done:
            return done(*self.retrieve_with_trace(query))

    async def aretrieve_traced(self, query: QueryBundle) -> tuple[list[NodeWithScore], Trace]:
        return await offload(self.retrieve_traced, query)

    @dispatcher.span
    async def aretrieve(self, str_or_query_bundle: QueryType) -> list[NodeWithScore]:
        """`retrieve`, callbacks and events included, in one of arela-index's worker threads.

        Routing, searching and grading are CPU work (and blocking model calls): on the event
        loop every step between two waits would hold it, and each span and callback event run
        there waits for the interpreter lock behind the other queries' threads
        (`benchmarks/bench_async.py`: the loop's longest stall under 20 concurrent calls).
        """
        query = _bundle(str_or_query_bundle)
        nodes, trace = await self.aretrieve_traced(query)
        response_trace.retrieved(query, trace)
        return nodes

    @contextmanager
    def _retrieval(self, query: QueryBundle) -> Iterator[Any]:
        dispatcher.event(RetrievalStartEvent(str_or_query_bundle=query))
        with (
            self.callback_manager.as_trace("query"),
            self.callback_manager.event(
                CBEventType.RETRIEVE, payload={EventPayload.QUERY_STR: query.query_str}
            ) as event,
        ):

            def done(nodes: list[NodeWithScore], trace: Trace) -> tuple[list[NodeWithScore], Trace]:
                nodes = trace.attach(nodes)
                event.on_end(payload={EventPayload.NODES: nodes})
                dispatcher.event(RetrievalEndEvent(str_or_query_bundle=query, nodes=nodes))
                return nodes, trace

            yield done

    def _get_prompt_modules(self) -> PromptMixinType:
        """The routing, grading and rewrite prompts: `selector:route_prompt`, `grader:grade_prompt`,
        `rewriter:rewrite_prompt`. One level deep, as LlamaIndex's `update_prompts` splits a key
        once: the router's selector is a module of this retriever, not of the router in it."""
        return {
            **self.router._get_prompt_modules(),
            "grader": self.grader,
            "rewriter": self.loop.rewriter,
        }


def _prompt_helpers(llm: LLM) -> dict[str, Any]:
    """The base synthesizer's prompt helpers (the user's in `Settings`, else made for `llm`)
    with LlamaIndex's tokenizer loaded when first used: made as the base class makes them, they
    would load tiktoken's tables now (half a second), and this synthesizer never counts tokens.
    The chat one where LlamaIndex has it (after 0.14.0)."""
    from llama_index.core import Settings
    from llama_index.core.indices import prompt_helper

    helpers = {
        "prompt_helper": Settings._prompt_helper
        or prompt_helper.PromptHelper.from_llm_metadata(llm.metadata, tokenizer=_tokens)
    }
    chat = getattr(prompt_helper, "ChatPromptHelper", None)
    if chat is not None:
        helpers["chat_prompt_helper"] = getattr(
            Settings, "_chat_prompt_helper", None
        ) or chat.from_llm_metadata(llm.metadata, tokenizer=_tokens)
    return helpers


def _tokens(text: str) -> list[Any]:
    """LlamaIndex's tokenizer, loaded when first used."""
    from llama_index.core.utils import get_tokenizer

    return get_tokenizer()(text)


class CitedSynthesizer(BaseSynthesizer):
    """Writes the answer: an LLM's, citing its sources, or offline the ranked cited context.

    With no relevant node it abstains without calling any LLM. `streaming=True` gives a
    `StreamingResponse`: the model's tokens, or offline the cited context in pieces;
    `response_mode="no_text"` gives only the source nodes.

    >>> CitedSynthesizer(llm=None, streaming=True).synthesize(q, nodes).response_gen  # doctest: +SKIP
    """

    def __init__(
        self,
        llm: LLM | None,
        callback_manager: CallbackManager | None = None,
        streaming: bool = False,
        response_mode: str = "compact",
    ) -> None:
        from llama_index.core import Settings
        from llama_index.core.llms import MockLLM

        if response_mode not in RESPONSE_MODES:
            raise ArelaError(
                f"response_mode {response_mode!r} is not supported: arela-index answers in "
                f"{' or '.join(RESPONSE_MODES)}"
            )
        # The base class wants an LLM; MockLLM keeps Settings.llm (OpenAI) from being read offline.
        llm_or_mock = llm or MockLLM()
        super().__init__(
            llm=llm_or_mock,
            callback_manager=callback_manager or Settings.callback_manager,
            streaming=streaming,
            **_prompt_helpers(llm_or_mock),
        )
        self.answer_llm = llm
        self.response_mode = response_mode
        self.answer_prompt: BasePromptTemplate = ANSWER_PROMPT
        self._rest = Rest()

    def _get_prompts(self) -> PromptDictType:
        return {"answer_prompt": self.answer_prompt}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        if "answer_prompt" in prompts:
            self.answer_prompt = _answer_prompt(prompts["answer_prompt"])

    def get_response(self, query_str: str, text_chunks: Sequence[str], **kwargs: Any) -> str:
        raise ArelaError("CitedSynthesizer answers from nodes: call synthesize(query, nodes)")

    async def aget_response(self, query_str: str, text_chunks: Sequence[str], **kwargs: Any) -> str:
        raise ArelaError("CitedSynthesizer answers from nodes: call asynthesize(query, nodes)")

    @dispatcher.span
    def synthesize(
        self, query: QueryType, nodes: list[NodeWithScore], *args: Any, **kwargs: Any
    ) -> Response | StreamingResponse:
        """`trace=`: the query's trace, when the nodes may have lost it (all filtered out)."""
        with self._events(query) as done:
            return done(run(self._synthesis(query, nodes, kwargs.get("trace"))))

    @dispatcher.span
    async def asynthesize(
        self, query: QueryType, nodes: list[NodeWithScore], *args: Any, **kwargs: Any
    ) -> Response | AsyncStreamingResponse:
        """As `synthesize`; streaming gives an `AsyncStreamingResponse`, as LlamaIndex's do."""
        with self._events(query) as done:
            response = await arun(self._synthesis(query, nodes, kwargs.get("trace")))
            if isinstance(response, StreamingResponse):
                return done(_awaitable_stream(response))
            return done(response)

    @contextmanager
    def _events(self, query: QueryType) -> Iterator[Any]:
        """SYNTHESIZE callbacks and Synthesize instrumentation events around one answer."""
        bundle = query if isinstance(query, QueryBundle) else QueryBundle(str(query))
        dispatcher.event(SynthesizeStartEvent(query=bundle))
        with self._callback_manager.event(
            CBEventType.SYNTHESIZE, payload={EventPayload.QUERY_STR: bundle.query_str}
        ) as event:

            def done(response: _Answer) -> _Answer:
                event.on_end(payload={EventPayload.RESPONSE: response})
                dispatcher.event(SynthesizeEndEvent(query=bundle, response=response))
                return response

            yield done

    def _synthesis(
        self, query: QueryType, nodes: list[NodeWithScore], trace: Trace | None = None
    ) -> Steps[Response | StreamingResponse]:
        # In a stock engine the trace comes with the nodes `ArelaRetriever.retrieve` returned.
        trace = trace or Trace.of(nodes)
        # The question as the loop read it (cut to the question limit): read again only when
        # no trace says (a pasted report is costly to read twice).
        question = trace.question if trace and trace.question else Question.read(query).text
        trace = trace or Trace(question=question)
        return (yield from self.respond_steps(question, nodes, trace))

    def respond_steps(
        self, question: str, nodes: list[NodeWithScore], trace: Trace
    ) -> Steps[Response | StreamingResponse]:
        """The answer, cited: written by the LLM, else the ranked context; or an abstention."""
        metadata = {"arela": trace, "abstained": not nodes}
        if self._streaming and nodes and self.answer_llm is not None:
            if self.response_mode != "no_text" and not (resting := self._rest.why()):
                gen = self._streamed(question, nodes, trace)
                return StreamingResponse(gen, source_nodes=nodes, metadata=metadata)
            if self.response_mode != "no_text":
                trace.add_step("fallback", stage="answer", why=resting)
        with trace.time("answer"):
            if self.response_mode == "no_text":
                text = ""
            elif not nodes:
                text = abstention(question, searched(trace), _why_empty(trace))
            elif self.answer_llm is None or self._streaming:
                text = offline_answer(question, nodes, _route_line(trace))
            else:
                text = yield from self._written(question, nodes, trace)
        if self._streaming:
            return StreamingResponse(_pieces(text), source_nodes=nodes, metadata=metadata)
        return Response(text, source_nodes=nodes, metadata=metadata)

    def _prompt_args(self, question: str, nodes: list[NodeWithScore]) -> dict[str, str]:
        """What the answer prompt is filled with, under arela's names and LlamaIndex's."""
        from arela_index.llm.ollama import quote_data

        # Each block is labelled with the very citation the answer should carry.
        passages = quote_data([(citation(n)[1:-1], n.node.get_content()) for n in nodes])
        return {
            "passages": passages,
            "question": question,
            "context_str": passages,
            "query_str": question,
        }

    def _ollama_errors(self) -> Any:
        from arela_index.llm.ollama import ollama_errors

        llm = self.answer_llm
        return ollama_errors(
            model=getattr(llm, "model", None),
            host=getattr(llm, "base_url", None),
            timeout=getattr(llm, "request_timeout", None),
        )

    def _written(self, question: str, nodes: list[NodeWithScore], trace: Trace) -> Steps[str]:
        llm = self.answer_llm
        assert llm is not None
        if resting := self._rest.why():
            trace.add_step("fallback", stage="answer", why=resting)
            return offline_answer(question, nodes, _route_line(trace))
        # `predict` formats a chat template as messages, any other as one prompt.
        prompt, args = self.answer_prompt, self._prompt_args(question, nodes)
        try:
            with self._ollama_errors():
                said = yield Call(
                    lambda: llm.predict(prompt, **args), lambda: llm.apredict(prompt, **args)
                )
            text = str(said).strip()
        except OllamaUnavailable as exc:
            self._rest.failed(str(exc))
            trace.add_step("fallback", stage="answer", why=str(exc))
            return offline_answer(question, nodes, _route_line(trace))
        if not text:
            trace.add_step("fallback", stage="answer", why="the model answered nothing")
            return offline_answer(question, nodes, _route_line(trace))
        checked = check_answer(text, nodes)
        trace.add_step("grounding", **checked.step(text))
        if not checked.cited:
            # Nothing ties it to its sources: the cited context is the answer.
            return (
                f"({_UNCHECKED}: {checked.why()}; the ranked context follows)\n"
                + offline_answer(question, nodes, _route_line(trace))
            )
        if not checked.grounded:
            return (
                f"Warning: {_UNCHECKED}: {checked.why()}; check it against its sources.\n\n{text}"
            )
        return text

    def _streamed(
        self, question: str, nodes: list[NodeWithScore], trace: Trace
    ) -> Generator[str, None, None]:
        """The model's tokens as they come; the offline answer if it fails before the first."""
        llm = self.answer_llm
        assert llm is not None
        said = ""
        try:
            with self._ollama_errors():
                for delta in llm.stream(self.answer_prompt, **self._prompt_args(question, nodes)):
                    if delta:
                        said += delta
                        yield delta
        except OllamaUnavailable as exc:
            self._rest.failed(str(exc))
            trace.add_step("fallback", stage="answer", why=str(exc))
            if not said:
                yield offline_answer(question, nodes, _route_line(trace))
                return
            yield f"\n\n(the model stopped: {exc})"
        if not said.strip():
            trace.add_step("fallback", stage="answer", why="the model answered nothing")
            yield offline_answer(question, nodes, _route_line(trace))
            return
        checked = check_answer(said, nodes)
        trace.add_step("grounding", **checked.step(said))
        if not checked.grounded:  # its tokens are out already: the warning closes the stream
            sources = " ".join(dict.fromkeys(citation(n) for n in nodes))
            yield f"\n\nWarning: {_UNCHECKED}: {checked.why()}. Sources: {sources}"


class ArelaQueryEngine(RetrieverQueryEngine):
    """A `RetrieverQueryEngine` whose answers cite `[path:lines]` / `[commit abc1234]` and carry
    the trace in `response.metadata["arela"]`. `node_postprocessors` run after the grader.

    >>> response = index.as_query_engine().query("who calls load_config?")  # doctest: +SKIP
    >>> print(response); response.metadata["arela"].to_text()                # doctest: +SKIP
    """

    def __init__(
        self,
        retriever: ArelaRetriever,
        synthesizer: CitedSynthesizer,
        node_postprocessors: list[BaseNodePostprocessor] | None = None,
        callback_manager: CallbackManager | None = None,
    ) -> None:
        super().__init__(
            retriever=retriever,
            response_synthesizer=synthesizer,
            node_postprocessors=node_postprocessors,
            callback_manager=callback_manager or synthesizer.callback_manager,
        )
        self.arela_retriever = retriever
        self.synthesizer = synthesizer

    def _get_prompt_modules(self) -> PromptMixinType:
        """The answer prompt, and the retriever's routing, grading and rewrite prompts."""
        return {
            "response_synthesizer": self.synthesizer,
            **self.arela_retriever._get_prompt_modules(),
        }

    def _postprocessed(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle, trace: Trace
    ) -> list[NodeWithScore]:
        kept = self._apply_node_postprocessors(nodes, query_bundle=query_bundle)
        if self._node_postprocessors:
            names = [type(p).__name__ for p in self._node_postprocessors]
            trace.add_step("postprocess", by=names, kept=len(kept), dropped=len(nodes) - len(kept))
            if not kept and nodes:
                trace.add_step("abstain", why=f"{', '.join(names)} kept none of {len(nodes)} nodes")
        return kept

    @dispatcher.span
    def _query(self, query_bundle: QueryBundle) -> Response | StreamingResponse:
        with self.callback_manager.event(
            CBEventType.QUERY, payload={EventPayload.QUERY_STR: query_bundle.query_str}
        ) as event:
            started = time.perf_counter()
            nodes, trace = self.arela_retriever.retrieve_traced(query_bundle)
            kept = self._postprocessed(nodes, query_bundle, trace)
            response = self.synthesizer.synthesize(query_bundle, kept, trace=trace)
            total(trace, started)
            event.on_end(payload={EventPayload.RESPONSE: response})
        return response

    @dispatcher.span
    async def _aquery(self, query_bundle: QueryBundle) -> Response | AsyncStreamingResponse:
        with self.callback_manager.event(
            CBEventType.QUERY, payload={EventPayload.QUERY_STR: query_bundle.query_str}
        ) as event:
            started = time.perf_counter()
            nodes, trace = await self.arela_retriever.aretrieve_traced(query_bundle)
            kept = self._postprocessed(nodes, query_bundle, trace)
            response = await self.synthesizer.asynthesize(query_bundle, kept, trace=trace)
            total(trace, started)
            event.on_end(payload={EventPayload.RESPONSE: response})
        return response


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


def _answer_prompt(prompt: BasePromptTemplate) -> BasePromptTemplate:
    """`prompt`, if it fills in the passages and the question under one pair of names: arela's
    (`{passages}`, `{question}`) or LlamaIndex's (`{context_str}`, `{query_str}`)."""
    used = frozenset(prompt.template_vars) - set(prompt.kwargs)  # partial_format fills some
    if used not in ANSWER_VARIABLES:
        raise ArelaError(
            "answer_prompt must use {passages} and {question}, or LlamaIndex's {context_str} "
            f"and {{query_str}}, and nothing else; it uses {', '.join(sorted(used)) or 'none'}"
        )
    return prompt


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


def _bundle(query: QueryType) -> QueryBundle:
    return query if isinstance(query, QueryBundle) else QueryBundle(str(query))


def _awaitable_stream(response: StreamingResponse) -> AsyncStreamingResponse:
    """The same stream for `async for`: each piece is pulled in a worker thread, so a model's
    slow tokens never hold the event loop."""
    pieces = iter(response.response_gen)

    async def gen() -> AsyncGenerator[str, None]:
        while (piece := await offload(next, pieces, None)) is not None:
            yield piece

    return AsyncStreamingResponse(
        gen(), source_nodes=response.source_nodes, metadata=response.metadata
    )


def _pieces(text: str) -> Generator[str, None, None]:
    """An answer streamed line by line (offline there are no tokens to wait for)."""
    yield from text.splitlines(keepends=True)
