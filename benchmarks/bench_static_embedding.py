"""Speed and size of the packaged static embedding: `python benchmarks/bench_static_embedding.py`.

Chunks are ~300 model tokens of the standard library's own source, so any machine can run it.
Prints the model's size on disk, its load time, chunks embedded per second through the
LlamaIndex batch path, and the latency of one query.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sysconfig
import time
from pathlib import Path

from model2vec import StaticModel

from arela_index.llm.static_embedding import MODEL_DIR, StaticEmbedding, load_static_model


def code_chunks(model: StaticModel, count: int, tokens: int) -> list[str]:
    """`count` chunks of consecutive source lines, each cut once it reaches `tokens` tokens."""
    chunks: list[str] = []
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        lines: list[str] = []
        size = 0
        for line in path.read_text(errors="replace").splitlines():
            lines.append(line)
            size += len(model.tokenize([line])[0])
            if size >= tokens:
                chunks.append("\n".join(lines))
                lines, size = [], 0
                if len(chunks) == count:
                    return chunks
    return chunks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=4000)
    parser.add_argument("--tokens", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    model_bytes = sum(p.stat().st_size for p in MODEL_DIR.iterdir() if p.suffix != ".md")
    started = time.perf_counter()
    embed = StaticEmbedding()
    load_s = time.perf_counter() - started

    model = load_static_model()
    chunks = code_chunks(model, args.chunks, args.tokens)
    mean_tokens = statistics.mean(len(ids) for ids in model.tokenize(chunks))
    rates = []
    for _ in range(args.rounds):
        started = time.perf_counter()
        embed.get_text_embedding_batch(chunks)
        rates.append(len(chunks) / (time.perf_counter() - started))
    queries = [f"how does the parser handle option number {i}?" for i in range(200)]
    started = time.perf_counter()
    for query in queries:
        embed.get_query_embedding(query)
    query_ms = (time.perf_counter() - started) / len(queries) * 1000

    print(f"model: {embed.model_name}, {embed.dim} dims, {model_bytes / 1e6:.2f} MB on disk")
    print(f"cpus: {os.cpu_count()}, load: {load_s:.2f} s")
    print(f"chunks: {len(chunks)} of {mean_tokens:.0f} tokens on average")
    print(f"embedding: {statistics.median(rates):,.0f} texts/s (median of {args.rounds})")
    print(f"one query: {query_ms:.2f} ms")


if __name__ == "__main__":
    main()
