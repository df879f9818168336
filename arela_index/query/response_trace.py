"""`response.metadata["arela"]` for any LlamaIndex query engine over an `ArelaRetriever`.

A stock synthesizer keys a response's metadata by node id and never sees the trace, and an
abstention reaches it with no node at all. So the trace is added where every query engine reports
a finished query, LlamaIndex's `QueryEndEvent`: from the response's nodes, or, when none is left,
from the last retrieval of the same question in this context (thread or task).
"""

from __future__ import annotations

import threading
from contextvars import ContextVar
from typing import Any

from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.events.query import QueryEndEvent, QueryStartEvent
from llama_index.core.schema import QueryBundle, QueryType

from arela_index.trace import Trace

_retrieved: ContextVar[tuple[str, Trace] | None] = ContextVar("arela_retrieved", default=None)
_installed = threading.Event()
_install_lock = threading.Lock()


class TraceOnResponse(BaseEventHandler):
    """Puts the query's trace in `response.metadata["arela"]` when a query engine is done.

    >>> install()  # done by every ArelaRetriever; then, with any engine:
    >>> # RetrieverQueryEngine.from_args(index.as_retriever()).query(q).metadata["arela"]
    """

    @classmethod
    def class_name(cls) -> str:
        return "ArelaTraceOnResponse"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        if isinstance(event, QueryStartEvent):
            _retrieved.set(None)  # a trace never outlives its question into the next one
        elif isinstance(event, QueryEndEvent):
            response: Any = event.response
            trace = Trace.of(getattr(response, "source_nodes", None) or []) or _last(event.query)
            if trace is not None and hasattr(response, "metadata"):
                response.metadata = response.metadata or {}
                response.metadata.setdefault("arela", trace)


def retrieved(query: QueryType, trace: Trace) -> None:
    """Note the trace of a retrieval, for the end of the query that asked for it."""
    _retrieved.set((_text(query), trace))


def install() -> None:
    """Add the handler to LlamaIndex's root dispatcher, once per process."""
    with _install_lock:
        if not _installed.is_set():
            get_dispatcher().add_event_handler(TraceOnResponse())
            _installed.set()


def _last(query: QueryType) -> Trace | None:
    last = _retrieved.get()
    return last[1] if last is not None and last[0] == _text(query) else None


def _text(query: QueryType) -> str:
    return query.query_str if isinstance(query, QueryBundle) else str(query)
