"""What the three memory retrievers share: `search(question)`, `ask` for a question already read,
and `retrieve` around them."""

from __future__ import annotations

from collections.abc import Sequence

from llama_index.core import Settings
from llama_index.core.callbacks import CallbackManager
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle

from arela_index.text.question import Question
from arela_index.text.shape import Reading
from arela_index.workers import offload


class MemoryRetriever(BaseRetriever):
    """A memory of one repository. `retrieve` is LlamaIndex's (spans, callback events);
    `search` is the same answer without them, for the router, which times each memory itself.

    >>> retriever.search("who calls load_config?") == retriever.retrieve("who calls load_config?")  # doctest: +SKIP
    True
    """

    def __init__(self, callback_manager: CallbackManager | None = None) -> None:
        # The Settings manager, as stock retrievers use: each top-level query resets its event
        # log, which a manager of our own would grow by one entry per query, forever.
        super().__init__(callback_manager=callback_manager or Settings.callback_manager)

    def search(self, question: str) -> list[NodeWithScore]:
        """This memory's fresh nodes for `question`, scores in [0, 1]; nothing found gives []."""
        raise NotImplementedError  # not abstract: LlamaIndex would wrap each one in a span

    def files(
        self,
        question: str,
        count: int,
        intents: Sequence[str] = (),
        shape: Reading | None = None,
    ) -> list[NodeWithScore]:
        """The best node of each of the `count` best files, for a memory that ranks files (the
        code memory); none for the others. `shape`: the question's as written (None: read from
        its text)."""
        return []

    def candidates(self, question: str, count: int) -> list[NodeWithScore]:
        """The `count` first passages of a memory that ranks passages by words (the code
        memory), unscored: what the sentence model compares a question with; none otherwise."""
        return []

    @property
    def fallback(self) -> str | None:
        """Why the last query was answered in a lesser way (the code memory going sparse-only),
        or None."""
        return None

    def ask(self, question: Question, intents: Sequence[str] = ()) -> list[NodeWithScore]:
        """`search` for a question already read (the router's way in): a memory that reads what
        a question names takes it from `question` instead of reading the text again, and may
        use the `intents` the route read in it."""
        return self.search(question.text)

    async def aask(self, question: Question, intents: Sequence[str] = ()) -> list[NodeWithScore]:
        """`ask` in a worker thread (see `_aretrieve`)."""
        return await offload(self.ask, question, intents)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        question = Question.carried_by(query_bundle)
        return self.search(query_bundle.query_str) if question is None else self.ask(question)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # A search is CPU work (BM25, graph walks, SQLite) or a blocking call (an embedder): on
        # the event loop it would hold up every other task for its length.
        question = Question.carried_by(query_bundle)
        if question is None:
            return await offload(self.search, query_bundle.query_str)
        return await offload(self.ask, question)
