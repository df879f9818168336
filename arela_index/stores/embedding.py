"""Which model made an index's vectors: the code memory and its vector store both record it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EmbeddingInfo:
    """Which model made an index's vectors; queries must embed with the very same one.

    >>> EmbeddingInfo("ollama", "nomic-embed-text", 768).label
    'ollama:nomic-embed-text'
    """

    provider: str  # "ollama" | "static" | the class of a user's model (e.g. "HuggingFaceEmbedding")
    name: str
    dim: int = 0

    @property
    def label(self) -> str:
        return f"{self.provider}:{self.name}"
