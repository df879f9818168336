"""The offline dense embedding: a static model distilled from all-MiniLM-L6-v2, in the package."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding, Embedding
from llama_index.core.bridge.pydantic import Field, PrivateAttr

from arela_index.errors import ArelaError

if TYPE_CHECKING:
    from model2vec import StaticModel

MODEL_DIR = Path(__file__).parent.parent / "data" / "static-minilm"
MODEL_NAME = "arela-static-minilm-128"
# The files the model is read from; with all three present nothing looks elsewhere.
_MODEL_FILES = ("model.safetensors", "tokenizer.json", "config.json")


def load_static_model(folder: Path = MODEL_DIR) -> StaticModel:
    """The model2vec model in `folder`, read from local files only.

    model2vec treats a path that does not exist as a hub id and downloads it, so the folder is
    checked first and a missing or broken model is an `ArelaError`, never a download. Its files
    are read here rather than by `StaticModel.from_pretrained`, whose module imports the Hugging
    Face hub client to write model cards: 0.25 CPU-s of a question's first use of the model.
    """
    missing = [name for name in _MODEL_FILES if not (folder / name).is_file()]
    if missing:
        raise ArelaError(
            f"the static embedding model is missing from {folder} ({', '.join(missing)}); "
            "reinstall arela-index"
        )
    try:
        from model2vec import StaticModel
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer
    except ImportError as err:
        raise ArelaError(
            "offline dense retrieval needs the `static` extra: pip install 'arela-index[static]'"
        ) from err
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        tensors = load_file(str(folder / "model.safetensors"))
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        return StaticModel(tensors["embeddings"], tokenizer, config=config, normalize=True)
    except Exception as err:  # safetensors, tokenizers and json each raise their own types
        raise ArelaError(
            f"the static embedding model in {folder} is unreadable ({type(err).__name__}: {err}); "
            "reinstall arela-index"
        ) from err


def encodable(text: str) -> str:
    """The text with its lone surrogates (from undecodable input), which the tokenizer refuses,
    replaced."""
    return text.encode("utf-8", "replace").decode("utf-8")


class StaticEmbedding(BaseEmbedding):
    """Unit-length vectors from the static model in the package: offline, deterministic, no torch.

    Vectors are normalised, so an inner product (e.g. FAISS `IndexFlatIP`) is the cosine.

    >>> embed = StaticEmbedding()
    >>> vector = embed.get_query_embedding("how is the terminal width decided?")
    >>> len(vector) == embed.dim
    True
    """

    model_name: str = Field(default=MODEL_NAME, description="Recorded in the index manifest.")
    # Each call costs little beyond tokenising, so large batches only save call overhead.
    embed_batch_size: int = Field(default=512, gt=0, le=2048)
    _model: StaticModel = PrivateAttr()

    def __init__(self, folder: Path = MODEL_DIR, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._model = load_static_model(folder)

    @classmethod
    def class_name(cls) -> str:
        return "ArelaStaticEmbedding"

    @property
    def dim(self) -> int:
        """Length of every vector (recorded in the manifest with `model_name`)."""
        return int(self._model.dim)

    def vectors(self, texts: list[str]) -> np.ndarray:
        """The texts' unit-length vectors, one row each."""
        texts = [encodable(t) for t in texts]
        return self._model.encode(texts, normalize=True, use_multiprocessing=False)

    def _embed(self, texts: list[str]) -> list[Embedding]:
        return self.vectors(texts).tolist()

    def _get_query_embedding(self, query: str) -> Embedding:
        return self._embed([query])[0]

    def _get_text_embedding(self, text: str) -> Embedding:
        return self._embed([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return self._embed(texts)

    # No I/O to wait on: the async variants compute in place.
    async def _aget_query_embedding(self, query: str) -> Embedding:
        return self._get_query_embedding(query)

    async def _aget_text_embedding(self, text: str) -> Embedding:
        return self._get_text_embedding(text)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return self._get_text_embeddings(texts)


@lru_cache(maxsize=1)
def default_static_embedding() -> StaticEmbedding:
    """The packaged static embedding, loaded once per process."""
    return StaticEmbedding()
