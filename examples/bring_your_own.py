"""Bring your own LlamaIndex pieces: your embedding model, your vector store, your LLM and your
node postprocessors, with arela-index's routing, memories and grading in between.

    python examples/bring_your_own.py [REPO] [--persist-dir DIR] [--question Q]

Runs offline as it stands, with pieces defined here because no model hub is reachable:
- embedding model: `HashingEmbedding`, a deterministic bag of words and trigrams (any
  `BaseEmbedding` works the same: HuggingFace, OpenAI, Ollama, ...);
- vector store: Qdrant in local mode, in a folder. For a Qdrant server or cluster, only the
  client changes: `QdrantClient(url="http://qdrant:6333")`;
- LLM: `FirstSourceLLM`, a tiny `CustomLLM` that points at the first source it was given;
- postprocessor: LlamaIndex's `SimilarityPostprocessor`.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding, Embedding
from llama_index.core.llms import CompletionResponse, CompletionResponseGen, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.postprocessor import SimilarityPostprocessor
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.vector_stores.qdrant import QdrantVectorStore
from qdrant_client import QdrantClient

from arela_index import ArelaIndex
from arela_index.query.answers import citation

THIS_REPOSITORY = Path(__file__).resolve().parent.parent
# SimilarityPostprocessor keeps nodes whose graded score (the relevance model's probability) is
# at least this: the better half of what arela kept, for an LLM with a small context.
CUTOFF = 0.6


class HashingEmbedding(BaseEmbedding):
    """Words and character trigrams hashed into `dim` signed buckets, unit length."""

    model_name: str = "hash-256"
    dim: int = 256

    def _vector(self, text: str) -> Embedding:
        vector = np.zeros(self.dim)
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            padded = f"<{word}>"
            for feature in [word, *(padded[i : i + 3] for i in range(len(padded) - 2))]:
                digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
                vector[int.from_bytes(digest[:4], "little") % self.dim] += (
                    1.0 if digest[4] & 1 else -1.0
                )
        norm = np.linalg.norm(vector)
        return (vector / norm).tolist() if norm else [1.0] + [0.0] * (self.dim - 1)

    def _get_query_embedding(self, query: str) -> Embedding:
        return self._vector(query)

    def _get_text_embedding(self, text: str) -> Embedding:
        return self._vector(text)

    async def _aget_query_embedding(self, query: str) -> Embedding:
        return self._vector(query)


class FirstSourceLLM(CustomLLM):
    """Answers by pointing at the first source in its prompt: your LLM writes the answer."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="first-source")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        # Our passages are labelled `<<<DATA ... n | path:lines>>>`; stock prompts carry metadata.
        found = re.search(r"\| (\S+:\d+(?:-\d+)?)>>>", prompt) or re.search(
            r"file_path: (\S+)", prompt
        )
        where = f"[{found.group(1)}]" if found else "nothing in the context"
        return CompletionResponse(text=f"Start reading at {where}.")

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        yield self.complete(prompt, formatted, **kwargs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", nargs="?", default=str(THIS_REPOSITORY), help="the repository")
    parser.add_argument("--persist-dir", help="index folder (default: a folder in the temp dir)")
    parser.add_argument("--question", default="how does the index refresh changed files?")
    args = parser.parse_args()
    repo = Path(args.repo).resolve()
    persist = Path(args.persist_dir or Path(tempfile.gettempdir()) / "arela-byo" / repo.name)
    persist.mkdir(parents=True, exist_ok=True)

    # Your vector store: Qdrant (local mode here; a server takes QdrantClient(url=...)).
    client = QdrantClient(path=str(persist / "qdrant"))
    vector_store = QdrantVectorStore(client=client, collection_name=repo.name)
    index = ArelaIndex.from_repo(
        repo,
        persist_dir=str(persist / "index"),
        embed_model=HashingEmbedding(),  # your embedding model builds the dense side
        vector_store=vector_store,
    )
    embedding = index.manifest.embedding or {}
    points = client.count(repo.name).count
    print(
        f"embedding: {embedding.get('provider')}:{embedding.get('name')} ({embedding.get('dim')} dimensions)"
    )
    print(
        f"vector store: {index.manifest.memories['code']['vector_store']} ({points} points, {len(index.code.chunks)} chunks)"
    )

    code = index.code_retriever(top_k=3)
    print(f"\ncode memory (dense: {code.dense}, fused with BM25): {args.question}")
    for hit in code.retrieve(args.question):
        print(f"  {hit.score:.2f} {citation(hit)}")

    # Your query engine, LLM and postprocessor around arela-index's routed, graded retriever.
    retriever = index.as_retriever(top_k=8)
    retrieved = retriever.retrieve(args.question)
    engine = RetrieverQueryEngine.from_args(
        retriever,
        llm=FirstSourceLLM(),
        node_postprocessors=[SimilarityPostprocessor(similarity_cutoff=CUTOFF)],
    )
    response = engine.query(args.question)
    before = " ".join(f"{n.score:.2f}" for n in retrieved)
    after = " ".join(f"{n.score:.2f}" for n in response.source_nodes)
    print(f"\nretrieved {len(retrieved)} nodes, scores {before}")
    print(
        f"SimilarityPostprocessor(cutoff {CUTOFF}) kept {len(response.source_nodes)}, scores {after}"
    )
    print(f"RetrieverQueryEngine + FirstSourceLLM: {response}")

    # Or arela-index's own query engine, with your LLM writing the cited answer.
    answer = index.as_query_engine(llm=FirstSourceLLM()).query(args.question)
    print(f"index.as_query_engine(llm=FirstSourceLLM()): {answer}")
    client.close()


if __name__ == "__main__":
    main()
