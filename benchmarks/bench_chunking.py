"""Chunking speed and chunk shape on a real repository (parsing timed apart: it is not chunking).

    python benchmarks/bench_chunking.py /path/to/repo [--runs 3]

Prints files/s and chunks/s of `chunk_file` alone, the parse time for comparison, chunks per
kind and the spread of chunk sizes. Chunking should cost a small fraction of the whole offline
indexing budget (>= 200 files/s on 2 cores).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter

from arela_index.ingest.chunking import chunk_file
from arela_index.ingest.languages import is_doc
from arela_index.ingest.scanner import scan_repository
from arela_index.parsing.dispatch import extract_symbols


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    files = scan_repository(args.repo).files
    texts = [f.read_text() for f in files]
    started = time.perf_counter()
    symbols = [
        None if is_doc(f.language) else extract_symbols(f, t)
        for f, t in zip(files, texts, strict=True)
    ]
    parse_seconds = time.perf_counter() - started
    definitions = [s.definitions if s is not None and not s.error else None for s in symbols]

    timings = []
    for _ in range(args.runs):
        started = time.perf_counter()
        chunks = [chunk_file(f, t, d) for f, t, d in zip(files, texts, definitions, strict=True)]
        timings.append(time.perf_counter() - started)
    seconds = statistics.median(timings)
    nodes = [n for per_file in chunks for n in per_file]
    sizes = sorted(len(n.text) for n in nodes)
    kinds = Counter(n.metadata["kind"] for n in nodes)

    print(f"repo: {args.repo}  files: {len(files)}  chunks: {len(nodes)}")
    rate = f"{len(files) / seconds:,.0f} files/s  {len(nodes) / seconds:,.0f} chunks/s"
    print(f"chunking: {seconds:.3f} s  {rate}")
    print(
        f"parsing, for comparison: {parse_seconds:.3f} s  {len(files) / parse_seconds:,.0f} files/s"
    )
    print("chunks per kind: " + ", ".join(f"{k} {v}" for k, v in kinds.most_common()))
    print(
        "chunk characters: "
        + "  ".join(
            f"p{p} {sizes[min(len(sizes) - 1, len(sizes) * p // 100)]}" for p in (5, 50, 95)
        )
        + f"  max {sizes[-1]}"
    )


if __name__ == "__main__":
    main()
