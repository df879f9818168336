"""Event-loop stalls: the longest the loop waits while 20 `aretrieve` calls run concurrently.

    python benchmarks/bench_async.py [--repo /work/bench-repos/pytest]
        [--index /tmp/arela-bench-async/pytest] [--concurrent 20] [--rounds 5] [--static]
        [--threads N]

Builds the repository's index once (offline) into `--index`, outside the repository, and loads
it. A ticker task wakes every millisecond and records how late it woke: the lateness is how
long something else held the event loop. Each round starts `--concurrent` `aretrieve` calls of
a new `index.as_retriever()` at once (the labelled pytest questions, a different slice each round)
and reports the longest stall, the 99th percentile of the ticks' lateness, and the wall time of
the round; then the ticker alone, whose lateness is the machine's own (other processes). Work
that runs on the loop (a retriever searching in place) shows as a long stall; work handed to
threads does not. `--static` builds and queries with the packaged static
embedding (dense retrieval fused with BM25) instead of BM25 alone. `--threads N` sets how many threads
arela-index runs awaited work in (ARELA_ASYNC_THREADS; default the cores, at least 2): CPU-bound
threads contending for the interpreter lock delay the loop too, the more of them the longer.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from pathlib import Path

from _common import open_index

from arela_index.cli.evaluate import load_golden, percentile

HERE = Path(__file__).resolve().parent
TICK = 0.001  # seconds between the ticker's wake-ups


async def _ticker(lateness: list[float], stop: asyncio.Event) -> None:
    """Sleeps a tick at a time and records how much later than asked each wake-up came."""
    while not stop.is_set():
        asked = time.perf_counter()
        await asyncio.sleep(TICK)
        lateness.append(time.perf_counter() - asked - TICK)


async def _round(retriever: object, questions: list[str]) -> tuple[float, float, float, int]:
    """Longest stall, p99 lateness (ms), the round's seconds and how many nodes came back."""
    lateness: list[float] = []
    stop = asyncio.Event()
    ticker = asyncio.create_task(_ticker(lateness, stop))
    await asyncio.sleep(0.05)  # the ticker is running before the first call starts
    lateness.clear()
    started = time.perf_counter()
    found = await asyncio.gather(*(retriever.aretrieve(q) for q in questions))  # type: ignore[attr-defined]
    seconds = time.perf_counter() - started
    stop.set()
    await ticker
    ms = [x * 1000 for x in lateness]
    return max(ms), percentile(ms, 0.99), seconds, sum(len(nodes) for nodes in found)


async def _idle(seconds: float) -> float:
    """The longest lateness of the ticker alone: what the machine itself (other processes
    taking the cores) adds to every figure."""
    lateness: list[float] = []
    stop = asyncio.Event()
    ticker = asyncio.create_task(_ticker(lateness, stop))
    await asyncio.sleep(seconds)
    stop.set()
    await ticker
    return max(lateness) * 1000


async def _main(args: argparse.Namespace) -> None:
    if args.threads:
        os.environ["ARELA_ASYNC_THREADS"] = str(args.threads)  # read when the pool is made
    settings = {"offline": True, "show_progress": False}
    if args.static:
        settings["offline_embedding"] = "static"
    index, built = open_index(args.repo, args.index, **settings)  # type: ignore[arg-type]
    if built is not None:
        print(f"built the index of {args.repo} in {built:.1f} s")
    dense = index.code_retriever().dense
    print(f"{index.code.stats()['chunks']} chunks, dense side {'on' if dense else 'off'}")
    questions = [g.question for g in load_golden(HERE / "questions_pytest_mixed.jsonl")]
    await index.as_retriever().aretrieve(questions[0])  # the index's lazy parts, built first
    stalls = []
    print(f"{'round':>5}  {'longest stall ms':>16}  {'p99 lateness ms':>15}  {'round s':>7}  nodes")
    for n in range(args.rounds):
        start = (n * args.concurrent) % len(questions)
        batch = [questions[(start + i) % len(questions)] for i in range(args.concurrent)]
        # A new retriever each round: one that was asked a question before answers it again
        # from its recent answers, which would hide the work this measures.
        stall, p99, seconds, nodes = await _round(index.as_retriever(), batch)
        stalls.append(stall)
        print(f"{n + 1:>5}  {stall:>16.1f}  {p99:>15.1f}  {seconds:>7.2f}  {nodes}")
    idle = [await _idle(0.2) for _ in range(args.rounds)]
    print(
        f"longest stall over {args.rounds} rounds of {args.concurrent} concurrent aretrieve: "
        f"max {max(stalls):.1f} ms, median {statistics.median(stalls):.1f} ms; "
        f"the ticker alone for 0.2 s: max {max(idle):.1f} ms, median {statistics.median(idle):.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repo", type=Path, default=Path("/work/bench-repos/pytest"))
    parser.add_argument("--index", type=Path, default=Path("/tmp/arela-bench-async/pytest"))
    parser.add_argument("--concurrent", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--static", action="store_true")
    parser.add_argument(
        "--threads", type=int, default=0, help="arela-index's threads for awaited work"
    )
    asyncio.run(_main(parser.parse_args()))


if __name__ == "__main__":
    main()
