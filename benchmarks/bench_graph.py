"""Graph memory speed on a real repository: build rate (files/s) and query latency (ms).

    python benchmarks/bench_graph.py /work/bench-repos/pytest [--repeat 5]

Build is timed in its parts (symbol extraction, cross-file resolution and writing, loading),
in wall and CPU seconds (CPU is the steadier figure on a shared machine). Queries are questions
made from the repository's own graph (callers of its most-called functions, subclasses of its
most-inherited classes, importers of its most-imported modules, call paths that exist, typos),
each asked `--repeat` times through CodeGraphRetriever.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from arela_index.cli.evaluate import percentile
from arela_index.ingest.scanner import scan_repository
from arela_index.parsing.dispatch import extract_symbols, parses
from arela_index.parsing.symbols import CLASS_KINDS, FileSymbols
from arela_index.retrievers.graph import CodeGraphRetriever
from arela_index.stores.graph import GraphStore, _graph


class _Clock:
    """Wall and CPU seconds of named steps."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        wall, cpu = time.perf_counter(), time.process_time()
        yield
        self.wall[name] = time.perf_counter() - wall
        self.cpu[name] = time.process_time() - cpu

    def line(self, name: str) -> str:
        return f"{self.wall[name]:6.2f} s wall {self.cpu[name]:6.2f} s CPU"


def _most(
    store: GraphStore,
    relation: str,
    kinds: set[str] | frozenset[str],
    n: int,
    incoming: bool = True,
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
    called = _most(store, "calls", callables, per_kind)
    callers = _most(store, "calls", callables, per_kind, incoming=False)
    inherited = _most(store, "inherits", CLASS_KINDS, per_kind)
    inheriting = _most(store, "inherits", CLASS_KINDS, per_kind, incoming=False)
    out = [("callers", f"Who calls `{q}`?") for q in called]
    out += [("callees", f"What does `{q}` call?") for q in callers]
    out += [("subclasses", f"Which classes inherit from `{q}`?") for q in inherited]
    out += [("bases", f"What does `{q}` inherit from?") for q in inheriting]
    out += [
        ("importers", f"What imports `{q}`?") for q in _most(store, "imports", {"module"}, per_kind)
    ]
    out += [("definition", f"Where is `{q.rpartition('.')[2]}` defined?") for q in called]
    out += [("members", f"What methods does `{q}` have?") for q in inherited]
    out += [("neighbourhood", f"Tell me about `{q}`") for q in called]
    out += [("closest", f"who calls {q.rpartition('.')[2][:-1]}?") for q in called if len(q) > 6]
    for start in callers:
        for link in store.callees(start):
            nexts = [x.symbol for x in store.callees(link.symbol) if not x.symbol.startswith("?")]
            goal = next((x for x in nexts if x != start and store.path(start, x)), None)
            if goal:
                out.append(("path", f"How does `{start}` reach `{goal}`?"))
                break
    return out


def _time_queries(
    retriever: CodeGraphRetriever, asked: list[tuple[str, str]], repeat: int, label: str
) -> None:
    wall: dict[str, list[float]] = {}
    cpu: list[float] = []
    empty = 0
    for relation, question in asked:
        for _ in range(repeat):
            started, started_cpu = time.perf_counter(), time.process_time()
            found = retriever.retrieve(question)
            wall.setdefault(relation, []).append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - started_cpu) * 1000)
        empty += not found
    every = [t for ts in wall.values() for t in ts]
    print(
        f"queries {label}: {len(asked)} questions x {repeat}: wall median {statistics.median(every):.2f} ms, "
        f"p95 {percentile(every, 0.95):.2f} ms, max {max(every):.2f} ms | CPU median {statistics.median(cpu):.2f} ms, "
        f"p95 {percentile(cpu, 0.95):.2f} ms, max {max(cpu):.2f} ms ({empty} answered nothing)"
    )
    if label == "as loaded":
        for relation, ts in wall.items():
            print(
                f"  {relation:13} median {statistics.median(ts):6.2f} ms  max {max(ts):6.2f} ms  ({len(ts) // repeat} q)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    clock = _Clock()
    with clock("scan"):
        scan = scan_repository(args.repo)
    code = [f for f in scan.files if parses(f.language)]
    texts = [(f, f.read_text()) for f in code]
    size = sum(len(t) for _, t in texts)
    with clock("extract"):
        parsed: dict[str, FileSymbols] = {f.path: extract_symbols(f, t) for f, t in texts}
    with clock("resolve"):
        _graph(parsed.values())
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "graph"
        with clock("given"):
            GraphStore.build(scan, folder, parsed=parsed)
        with clock("full"):
            GraphStore.build(scan, Path(tmp) / "full")
        with clock("load"):
            store = GraphStore.load(folder)
        disk = sum(p.stat().st_size for p in folder.iterdir())

    stats = store.stats()
    print(
        f"repository: {args.repo}: {len(scan.files)} files scanned, {len(code)} parsed ({size / 1e6:.1f} MB)"
    )
    print(f"languages: {stats['languages']}; parse failures: {stats['parse_failures']}")
    print(
        f"graph: {stats['symbols']} symbols, {stats['external_names']} external names, edges {stats['edges']}"
    )
    extract = clock.cpu["extract"]
    print(
        f"extraction:         {clock.line('extract')}  {len(code) / extract:5.0f} files/s, "
        f"{size / 1e6 / extract:.2f} MB/s (CPU)"
    )
    print(f"resolve + graph:    {clock.line('resolve')}")
    print(
        f"build given parsed: {clock.line('given')}  (resolve, graph, table: what indexing adds to parsing)"
    )
    full = clock.cpu["full"]
    print(
        f"full build:         {clock.line('full')}  {len(code) / full:5.0f} parsed files/s, "
        f"{len(scan.files) / full:.0f} scanned files/s (CPU)"
    )
    print(f"load:               {clock.line('load')}  ({disk / 1e6:.1f} MB on disk)")

    retriever = CodeGraphRetriever(store, top_k=50, fanout=50)
    asked = questions(store)
    for _, question in asked:  # warm-up: lazy indexes, imports
        retriever.retrieve(question)
    # A long-lived process may gc.freeze() after loading: the graph's objects then leave the
    # cyclic collector's full passes, which are the slow outliers.
    _time_queries(retriever, asked, args.repeat, "as loaded")
    gc.freeze()
    _time_queries(retriever, asked, args.repeat, "after gc.freeze()")


if __name__ == "__main__":
    main()
