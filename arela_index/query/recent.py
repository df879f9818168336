"""The answers to the last questions a retriever was asked, so asking again costs a lookup.

Offline, the query loop is a pure function of the question and the index a retriever was made
over, so its result can be handed out again; each caller gets its own copies, because engines
and postprocessors mutate nodes (scores, the trace key) and traces (their later steps).
"""

from __future__ import annotations

from collections import OrderedDict
from threading import Lock

from llama_index.core.schema import NodeWithScore, QueryBundle, QueryType

from arela_index.nodes import fresh
from arela_index.trace import Trace

Result = tuple[list[NodeWithScore], Trace]


class RecentAnswers:
    """A least-recently-used map from a question's text to the loop's (nodes, trace).

    >>> recent = RecentAnswers(size=2)
    >>> recent.get("who calls f?") is None
    True
    """

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._results: OrderedDict[str, Result] = OrderedDict()
        self._lock = Lock()  # one retriever may serve many threads

    def get(self, query: QueryType) -> Result | None:
        with self._lock:
            found = self._results.get(_key(query))
            if found is None:
                return None
            self._results.move_to_end(_key(query))
        return _copied(found)

    def put(self, query: QueryType, result: Result) -> Result:
        """Remember `result` for `query`; the caller keeps `result` itself to mutate."""
        with self._lock:
            self._results[_key(query)] = _copied(result)
            self._results.move_to_end(_key(query))
            while len(self._results) > self.size:
                self._results.popitem(last=False)
        return result


def _key(query: QueryType) -> str:
    return query.query_str if isinstance(query, QueryBundle) else str(query)


def _copied(result: Result) -> Result:
    nodes, trace = result
    return [fresh(n.node, n.score) for n in nodes], trace.fork()
