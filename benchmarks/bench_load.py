"""Load: 8 concurrent clients (threads, then asyncio tasks) x 200 questions on one loaded index.

    python benchmarks/bench_load.py [--repo /work/bench-repos/pytest]
        [--index /tmp/arela-bench-load/pytest] [--clients 8] [--questions 200] [--rounds 2]
        [--static] [--fake-ollama]

Builds the repository's index once (offline) into `--index`, outside the repository and the
project, and loads it once. Asks the question set sequentially for the reference answers, then
has `--clients` threads share one query engine, each asking every question in its own order,
`--rounds` times; then the same with asyncio tasks (`aquery`). Every concurrent answer must
equal the sequential one: text, sources, intents and memories. Prints errors and mismatches,
throughput, latency (p50, p95, p99) and resident memory after each round, so growth from round
to round shows. Exits 1 when any query failed or differed.

The questions: the labeled pytest set (benchmarks/questions_pytest_mixed.jsonl) when it
applies, then questions made from the index's own symbols, files and authors (who calls X,
what does X do, when did F change, compare X and Y, ...) and a few out of scope, up to
`--questions`. `--static` builds and queries with the packaged static embedding model (dense
and sparse retrieval fused; the offline default is sparse only). `--fake-ollama` runs every
Ollama stage against tests/support/fake_ollama.py in this process (routing, grading, rewriting and
writing answers concurrently through the real llama_index Ollama classes); the figures then
include that HTTP round trip.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from _common import has_index

from arela_index.cli.evaluate import load_golden, percentile
from arela_index.index import ArelaIndex

HERE = Path(__file__).resolve().parent
Answer = tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...]]


def rss_mb() -> float:
    """Resident memory of this process now (Linux), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def question_set(index: Any, count: int, repo: Path) -> list[str]:
    """Labeled questions when they are about this repository, then ones made from its names."""
    questions: list[str] = []
    labeled = HERE / "questions_pytest_mixed.jsonl"
    if repo.name == "pytest" and labeled.exists():
        questions += [gold.question for gold in load_golden(labeled)]
    rng = random.Random(8)
    symbols = sorted(s for s in index.graph.symbol_names() if "." in s)
    files = sorted(index.manifest.files)
    authors = sorted(index.audit.authors())[:50]
    short = lambda s: s.rsplit(".", 1)[-1]  # noqa: E731
    makers: list[Callable[[], str]] = [
        lambda: f"who calls {short(rng.choice(symbols))}?",
        lambda: f"what does {short(rng.choice(symbols))} do?",
        lambda: f"where is {rng.choice(symbols)} defined?",
        lambda: f"how does {short(rng.choice(symbols))} work?",
        lambda: f"when did {rng.choice(files)} last change?",
        lambda: f"what changed in {rng.choice(files)} recently?",
        lambda: (
            f"difference between {short(rng.choice(symbols))} and {short(rng.choice(symbols))}?"
        ),
        lambda: f"what did {rng.choice(authors)} change?" if authors else "what changed last week?",
        lambda: "what is the capital of France?",
    ]
    while len(questions) < count:
        question = rng.choice(makers)()
        if question not in questions:
            questions.append(question)
    return questions[:count]


def answer_of(response: Any) -> Answer:
    trace = response.metadata["arela"]
    return (
        str(response),
        tuple(n.node.node_id for n in response.source_nodes),
        tuple(name for name, _ in trace.intents),
        tuple(trace.memory_names),
    )


class Tally:
    """Latencies, errors and mismatches of one concurrent round."""

    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self.mismatches: list[str] = []

    def record(self, question: str, started: float, got: Any, reference: dict[str, Answer]) -> None:
        self.latencies.append((time.perf_counter() - started) * 1000)
        if isinstance(got, BaseException):
            self.errors.append(f"{question!r}: {type(got).__name__}: {got}")
        elif answer_of(got) != reference[question]:
            self.mismatches.append(question)


def with_threads(engine: Any, orders: list[list[str]], reference: dict[str, Answer]) -> Tally:
    tally = Tally()

    def client(order: list[str]) -> None:
        for question in order:
            started = time.perf_counter()
            try:
                got: Any = engine.query(question)
            except Exception as exc:  # counted, never hidden
                got = exc
            tally.record(question, started, got, reference)

    with ThreadPoolExecutor(max_workers=len(orders)) as pool:
        list(pool.map(client, orders))
    return tally


def with_tasks(engine: Any, orders: list[list[str]], reference: dict[str, Answer]) -> Tally:
    tally = Tally()

    async def client(order: list[str]) -> None:
        for question in order:
            started = time.perf_counter()
            try:
                got: Any = await engine.aquery(question)
            except Exception as exc:  # counted, never hidden
                got = exc
            tally.record(question, started, got, reference)

    async def everyone() -> None:
        await asyncio.gather(*(client(order) for order in orders))

    asyncio.run(everyone())
    return tally


def report(name: str, tally: Tally, seconds: float, memory: float) -> None:
    lat = tally.latencies
    print(
        f"{name:<18} {len(lat):>5} queries in {seconds:6.1f} s = {len(lat) / seconds:6.1f} q/s | "
        f"p50 {percentile(lat, 0.5):6.1f} ms  p95 {percentile(lat, 0.95):6.1f} ms  "
        f"p99 {percentile(lat, 0.99):6.1f} ms | errors {len(tally.errors)}  "
        f"differing {len(tally.mismatches)} | RSS {memory:6.0f} MB"
    )
    for line in (tally.errors + [f"differs: {q!r}" for q in tally.mismatches])[:5]:
        print(f"    {line}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=Path("/work/bench-repos/pytest"))
    parser.add_argument(
        "--index", type=Path, default=None, help="default /tmp/arela-bench-load/<repo name>"
    )
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2, help="concurrent rounds per kind")
    parser.add_argument("--static", action="store_true", help="offline with the static embedder")
    parser.add_argument(
        "--fake-ollama", action="store_true", help="Ollama stages against a local fake"
    )
    args = parser.parse_args()

    persist = args.index or Path("/tmp/arela-bench-load") / args.repo.name
    settings: dict[str, Any] = {"offline": True}
    if args.static:
        settings["offline_embedding"] = "static"
        persist = persist.with_name(persist.name + "-static")
    fake = None
    if args.fake_ollama:
        sys.path.insert(0, str(HERE.parent / "tests"))
        from support.fake_ollama import FakeOllama, healthy_chat

        fake = FakeOllama(chat_handler=healthy_chat, lifetime=86_400).__enter__()
        settings = {"ollama_host": fake.url, "router_timeout": 30.0, "answer_timeout": 60.0}
        persist = persist.with_name(persist.name + "-fake-ollama")
    if not has_index(persist):
        started = time.perf_counter()
        ArelaIndex.build(args.repo, persist_dir=str(persist), **settings)
        print(
            f"built the index of {args.repo} into {persist} in {time.perf_counter() - started:.0f} s"
        )

    base = rss_mb()
    started = time.perf_counter()
    index = ArelaIndex.load(persist, **settings)
    engine = index.as_query_engine()
    questions = question_set(index, args.questions, args.repo)
    print(
        f"loaded {persist} in {time.perf_counter() - started:.1f} s: {len(index.code.chunks)} chunks, "
        f"{len(index.graph.symbol_names())} symbols, {index.audit.stats().get('commits')} commits; "
        f"RSS {base:.0f} -> {rss_mb():.0f} MB; {args.clients} clients x {len(questions)} questions"
        + (" (Ollama stages: fake server)" if fake else " (offline)")
    )

    reference: dict[str, Answer] = {}
    sequential = Tally()
    started = time.perf_counter()
    for question in questions:
        began = time.perf_counter()
        reference[question] = answer_of(engine.query(question))
        sequential.latencies.append((time.perf_counter() - began) * 1000)
    report("sequential", sequential, time.perf_counter() - started, rss_mb())
    repeat = Tally()
    started = time.perf_counter()
    for question in questions:  # the same again, one client: answers must not drift over time
        began = time.perf_counter()
        repeat.record(question, began, engine.query(question), reference)
    report("sequential again", repeat, time.perf_counter() - started, rss_mb())

    failed = bool(repeat.errors or repeat.mismatches)
    for kind, run in (("threads", with_threads), ("asyncio tasks", with_tasks)):
        for round_ in range(1, args.rounds + 1):
            rng = random.Random(round_)
            orders = [rng.sample(questions, len(questions)) for _ in range(args.clients)]
            started = time.perf_counter()
            tally = run(engine, orders, reference)
            report(f"{kind} #{round_}", tally, time.perf_counter() - started, rss_mb())
            failed |= bool(tally.errors or tally.mismatches)
    if fake is not None:
        fake.__exit__(None, None, None)
    print(f"median sequential latency {statistics.median(sequential.latencies):.1f} ms")
    print("FAILED: errors or answers that differ from the sequential run" if failed else "OK")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
