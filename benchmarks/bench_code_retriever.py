"""Query latency of the code memory's retriever alone, next to the chunk BM25 inside it.

    python benchmarks/bench_code_retriever.py [--index /work/bench-repos/pytest-arela]
        [--questions benchmarks/questions_pytest_mixed.jsonl benchmarks/questions_pytest_code.jsonl]
        [--long ../shared/eval/swebench-lite-pytest.jsonl] [--top-k 8] [--rounds 5]

Loads an offline-built index (build one with `python -m arela_index index REPO --persist-dir DIR
--offline`), makes `CodeMemoryRetriever(store, top_k=...)` once, asks every question once to warm
up, then `--rounds` times, and prints the median and p95 milliseconds of one `retrieve`: for
the short questions of `--questions` and, apart, for the long ones of `--long` (issue texts,
JSONL with a `question` field). The store's own chunk BM25 (bm25s's `retrieve`, asked for the
same top-k) is timed over the same questions for reference; an index with vectors is also asked
through `index.code_retriever()` (dense and sparse, with the index's embedder).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def questions_of(paths: list[Path]) -> list[str]:
    out = []
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                out.append(json.loads(line)["question"])
    return out


def timed(ask: Callable[[str], Any], questions: list[str], rounds: int) -> list[float]:
    """Milliseconds of each ask, after one warm-up pass."""
    for question in questions:
        ask(question)
    spent = []
    for _ in range(rounds):
        for question in questions:
            started = time.perf_counter()
            ask(question)
            spent.append((time.perf_counter() - started) * 1000)
    return spent


def line(label: str, ms: list[float]) -> str:
    ordered = sorted(ms)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"{label:44s} median {statistics.median(ms):6.2f} ms   p95 {p95:6.2f} ms   (n={len(ms)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, default=Path("/work/bench-repos/pytest-arela"))
    parser.add_argument(
        "--questions",
        type=Path,
        nargs="+",
        default=[HERE / "questions_pytest_mixed.jsonl", HERE / "questions_pytest_code.jsonl"],
    )
    parser.add_argument("--long", type=Path, nargs="*", default=[], help="JSONL of issue texts")
    parser.add_argument("--top-k", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    from arela_index.index import ArelaIndex
    from arela_index.retrievers.code import CodeMemoryRetriever
    from arela_index.text.tokens import index_terms

    index = ArelaIndex.load(args.index, offline=True)
    store = index.code
    started = time.perf_counter()
    retriever = CodeMemoryRetriever(store, top_k=args.top_k)
    setup = (time.perf_counter() - started) * 1000
    systems: dict[str, Callable[[str], Any]] = {"CodeMemoryRetriever": retriever.retrieve}
    if store.embedding is not None and index.embed_model is not None:
        hybrid = index.code_retriever(top_k=args.top_k)  # dense too, with the index's embedder
        systems[f"... + {store.embedding.label}"] = hybrid.retrieve
    assert store.sparse is not None
    chunk_bm25 = store.sparse.chunks

    def stock(question: str) -> Any:
        terms = index_terms(question)
        return chunk_bm25.retrieve([terms], k=args.top_k, show_progress=False) if terms else []

    print(f"index {args.index}: {len(store.chunks)} chunks; retriever made in {setup:.0f} ms")
    systems["its chunk BM25 alone (bm25s retrieve)"] = stock
    sets = {"short": questions_of(args.questions), "long": questions_of(args.long)}
    for name, questions in sets.items():
        if not questions:
            continue
        rounds = args.rounds if name == "short" else max(1, args.rounds // 2)
        for label, ask in systems.items():
            print(line(f"{label}, {name} questions", timed(ask, questions, rounds)))


if __name__ == "__main__":
    main()
