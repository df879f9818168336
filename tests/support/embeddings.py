"""A user's own LlamaIndex embedding model, for tests: deterministic, and it counts its texts."""

from __future__ import annotations

from llama_index.core.base.embeddings.base import BaseEmbedding, Embedding
from llama_index.core.bridge.pydantic import PrivateAttr
from support.fake_ollama import hashing_embedding


class CountingHashEmbedding(BaseEmbedding):
    """Words and trigrams hashed into `dim` buckets (as FakeOllama embeds), recording every text
    it was asked to embed, so a test can tell what a build embedded and what it reused.

    >>> model = CountingHashEmbedding(dim=32)
    >>> len(model.get_text_embedding("parse the config")), model.texts
    (32, ['parse the config'])
    """

    model_name: str = "hash-words-trigrams"
    dim: int = 64
    _texts: list[str] = PrivateAttr(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "CountingHashEmbedding"

    @property
    def texts(self) -> list[str]:
        return list(self._texts)

    def _vector(self, text: str) -> Embedding:
        self._texts.append(text)
        return hashing_embedding(text, self.dim)

    def _get_query_embedding(self, query: str) -> Embedding:
        return self._vector(query)

    def _get_text_embedding(self, text: str) -> Embedding:
        return self._vector(text)

    async def _aget_query_embedding(self, query: str) -> Embedding:
        return self._vector(query)
