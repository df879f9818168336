"""Graph memory speed on a real repository: build rate (files/s) and query latency (ms).

    python benchmarks/bench_graph.py /work/bench-repos/pytest [--repeat 5]

Build is timed in its parts (symbol extraction, cross-file resolution and writing, loading);
queries are questions made from the repository's own graph (callers of its most-called
functions, subclasses of its most-inherited classes, importers of its most-imported modules,
call paths that exist, typos), each asked `--repeat` times through CodeGraphRetriever.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

from arela_index.graph_store import GraphStore, _graph
from arela_index.parsing import extract_symbols, parses
from arela_index.retrievers.graph import CodeGraphRetriever
from arela_index.scanner import scan_repository
from arela_index.symbols import FileSymbols


def _most(
    store: GraphStore, relation: str, kinds: set[str], n: int, incoming: bool = True
) -> list[str]:
    counts: Counter[str] = Counter()
    for u, v, key in store.graph.edges(keys=True):
        node = v if incoming else u
        if key == relation and (store.symbol(node) or {}).get("kind") in kinds:
            counts[node] += 1
    return [name for name, _ in counts.most_common(n)]


def questions(store: GraphStore, per_kind: int = 6) -> list[tuple[str, str]]:
    """(relation, question) pairs about symbols this repository really has."""
    callables = {"function", "method"}
    classes = {"class", "interface", "struct", "trait", "enum"}
    called = _most(store, "calls", callables, per_kind)
    callers = _most(store, "calls", callables, per_kind, incoming=False)
    inherited = _most(store, "inherits", classes, per_kind)
    imported = _most(store, "imports", {"module"}, per_kind)
    out = [("callers", f"Who calls `{q}`?") for q in called]
    out += [("callees", f"What does `{q}` call?") for q in callers]
    out += [("subclasses", f"Which classes inherit from `{q}`?") for q in inherited]
    out += [
        ("bases", f"What does `{q}` inherit from?")
        for q in _most(store, "inherits", classes, per_kind, False)
    ]
    out += [("importers", f"What imports `{q}`?") for q in imported]
    out += [("definition", f"Where is `{q.rpartition('.')[2]}` defined?") for q in called]
    out += [("members", f"What methods does `{q}` have?") for q in inherited]
    out += [("neighbourhood", f"Tell me about `{q}`") for q in called]
    out += [
        ("closest", f"who calls {q.rpartition('.')[2][:-1]}?")
        for q in called
        if len(q.rpartition(".")[2]) > 6
    ]
    for start in callers:
        for link in store.callees(start):
            second = store.callees(link.symbol)
            target = next(
                (x.symbol for x in second if not x.symbol.startswith("?") and x.symbol != start),
                None,
            )
            if target and store.path(start, target):
                out.append(("path", f"How does `{start}` reach `{target}`?"))
                break
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    started = time.perf_counter()
    scan = scan_repository(args.repo)
    scan_s = time.perf_counter() - started
    code = [f for f in scan.files if parses(f.language)]
    texts = [(f, f.read_text()) for f in code]
    size = sum(len(t) for _, t in texts)

    started = time.perf_counter()
    parsed: dict[str, FileSymbols] = {f.path: extract_symbols(f, t) for f, t in texts}
    extract_s = time.perf_counter() - started
    started = time.perf_counter()
    graph = _graph(parsed.values())
    resolve_s = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "graph"
        started = time.perf_counter()
        store = GraphStore.build(scan, folder, parsed=parsed)
        build_s = (
            time.perf_counter() - started
        )  # resolution, graph and JSON writing (parsing given)
        started = time.perf_counter()
        GraphStore.build(scan, Path(tmp) / "full")
        full_s = time.perf_counter() - started
        started = time.perf_counter()
        store = GraphStore.load(folder)
        load_s = time.perf_counter() - started
        disk = sum(p.stat().st_size for p in folder.iterdir())
    del graph

    stats = store.stats()
    print(
        f"repository: {args.repo} ({len(scan.files)} files scanned in {scan_s:.2f} s, {len(code)} parsed, "
        f"{size / 1e6:.1f} MB of code)"
    )
    print(f"languages: {stats['languages']}; failures: {stats['parse_failures']}")
    print(
        f"graph: {stats['symbols']} symbols, {stats['external_names']} external names, edges {stats['edges']}"
    )
    print(
        f"extraction:         {extract_s:6.2f} s  {len(code) / extract_s:7.0f} files/s  "
        f"{size / 1e6 / extract_s:.2f} MB/s"
    )
    print(f"resolve + graph:    {resolve_s:6.2f} s")
    print(
        f"build given parsed: {build_s:6.2f} s  (resolve, graph, write JSON: what ArelaIndex adds)"
    )
    print(
        f"full build:         {full_s:6.2f} s  {len(code) / full_s:7.0f} parsed files/s  "
        f"{len(scan.files) / full_s:7.0f} scanned files/s"
    )
    print(f"load:               {load_s:6.2f} s  ({disk / 1e6:.1f} MB on disk)")

    retriever = CodeGraphRetriever(store, top_k=50, fanout=50)
    asked = questions(store)
    for _, question in asked:  # warm-up: lazy indexes, imports
        retriever.retrieve(question)
    timings: dict[str, list[float]] = {}
    empty = 0
    for relation, question in asked:
        for _ in range(args.repeat):
            started = time.perf_counter()
            found = retriever.retrieve(question)
            timings.setdefault(relation, []).append((time.perf_counter() - started) * 1000)
        empty += not found
    every = sorted(t for ts in timings.values() for t in ts)
    p95 = every[min(len(every) - 1, int(0.95 * len(every)))]
    print(
        f"queries: {len(asked)} questions x {args.repeat}: median {statistics.median(every):.2f} ms, "
        f"p95 {p95:.2f} ms, max {every[-1]:.2f} ms ({empty} answered nothing)"
    )
    for relation, ts in timings.items():
        print(
            f"  {relation:13} median {statistics.median(ts):6.2f} ms  max {max(ts):6.2f} ms  ({len(ts) // args.repeat} q)"
        )


if __name__ == "__main__":
    main()
