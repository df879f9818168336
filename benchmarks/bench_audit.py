"""Audit memory speed on a real history: ingest rate (commits/s) and query latency (median, p95).

    python benchmarks/bench_audit.py                        # all of /work/bench-repos/pytest
    python benchmarks/bench_audit.py --max-commits 5000     # only the newest 5,000 commits
    python benchmarks/bench_audit.py --builds 3             # three timed ingests and their median
    python benchmarks/bench_audit.py --repo R --builds 2 --rounds 0   # a damaged clone: same rows?

Targets on 2 cores: at least 2,000 commits/s ingest, at most 5 ms median query.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from arela_index.ingest.changes import Changes
from arela_index.ingest.scanner import scan_repository
from arela_index.retrievers.audit import AuditLogRetriever
from arela_index.stores.audit import DB_FILE, AuditStore
from arela_index.text.entities import Vocabulary

QUESTIONS = [
    "When was src/_pytest/terminal.py last changed and why?",
    "who changed `getfixturevalue`?",
    "what changed last week?",
    "history of the assertion rewriting",
    "what did Bruno Oliveira change in 2019?",
    "what changed since 8.1.0?",
    "what's new in 8.3.0?",
    "who added pathlib support to tmpdir?",
    "latest commit touching pyproject.toml",
    "show me the last 10 commits",
    "when was approx introduced?",
    "what changed in March 2024?",
    "why did we drop python 2 support?",
    "who fixed the junitxml timestamp bug?",
    "what changed between 2023-01-01 and 2023-02-01?",
    "who last touched src/_pytest/fixtures.py?",
    "what did Ran Benita change last month?",
    "when did the cache provider learn about lastfailed?",
    "commits about monkeypatch setenv",
    'NEAR("fixture" OR -scope*) ^ "',
]


def cpu_seconds() -> float:
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def digest(folder: Path) -> str:
    """A fingerprint of every row a build stored, in a fixed order: equal builds, equal prints."""
    sha = hashlib.sha256()
    with sqlite3.connect(folder / DB_FILE) as conn:
        for table in ("commits", "files", "symbols", "decisions", "tags"):
            for row in conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2"):
                sha.update(repr(row).encode())
    return sha.hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--repo", default="/work/bench-repos/pytest")
    parser.add_argument("--max-commits", type=int, default=None, help="newest N commits only")
    parser.add_argument("--rounds", type=int, default=20, help="times each question is asked")
    parser.add_argument("--builds", type=int, default=1, help="ingests timed (median reported)")
    args = parser.parse_args()

    # Wall times suffer when other work shares the cores; CPU times say what this code costs.
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start")
    scan = scan_repository(args.repo)
    with tempfile.TemporaryDirectory(prefix="arela-bench-") as tmp:
        rates: list[float] = []
        digests: list[str] = []
        for run in range(args.builds):
            folder = Path(tmp) / f"audit{run}"
            load = os.getloadavg()[0]
            cpu, wall = cpu_seconds(), time.perf_counter()
            store = AuditStore.build(scan, folder, max_commits=args.max_commits)
            wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
            stats = store.stats()
            n = stats["commits"]
            rates.append(n / wall)
            if run == 0:
                which = f"newest {args.max_commits:,}" if args.max_commits else "all"
                print(f"history: {args.repo}, {which} commits: {n:,} ({stats['merges']:,} merges), "
                      f"{stats['authors']:,} authors, {stats['decisions']} decision records, {stats['tags']} tags")  # fmt: skip
            print(f"ingest: {wall:.2f} s wall, {cpu:.2f} s CPU (git + Python) -> {n / wall:,.0f} commits/s "
                  f"(target >= 2,000; {n / cpu:,.0f} per CPU second); "
                  f"database {(folder / DB_FILE).stat().st_size / 1e6:.1f} MB; load {load:.2f} before")  # fmt: skip
            digests.append(digest(folder))
            if stats.get("note"):
                print(f"  note: {stats['note']}")
        if args.builds > 1:
            print(f"ingest median of {args.builds}: {statistics.median(rates):,.0f} commits/s")
            same = "yes" if len(set(digests)) == 1 else "NO"
            print(f"rows the same in all {args.builds} builds: {same} ({', '.join(digests)})")

        if not args.rounds:
            print(f"load average {os.getloadavg()[0]:.2f} at the end")
            return
        if args.max_commits:
            print(
                "refresh: not measured (a build limited to the newest commits is rebuilt in full)"
            )
        else:
            again = time.perf_counter()
            AuditStore.build(scan, Path(tmp) / "refresh", previous=store, changes=Changes())
            print(f"refresh with no new commits: {time.perf_counter() - again:.2f} s")
        vocabulary = Vocabulary(paths=[f.path for f in scan.files], authors=store.authors())
        retriever = AuditLogRetriever(AuditStore.load(folder), vocabulary=vocabulary, top_k=8)
        cold = time.perf_counter()
        retriever.retrieve(QUESTIONS[0])
        print(f"first query after load (cold caches): {(time.perf_counter() - cold) * 1000:.1f} ms")
        times: list[float] = []
        cpu_times: list[float] = []
        per_question: dict[str, list[float]] = {q: [] for q in QUESTIONS}
        for _ in range(args.rounds):
            for question in QUESTIONS:
                start, start_cpu = time.perf_counter(), time.process_time()
                retriever.retrieve(question)
                elapsed = (time.perf_counter() - start) * 1000
                cpu_times.append((time.process_time() - start_cpu) * 1000)
                times.append(elapsed)
                per_question[question].append(elapsed)
        print(f"query: {len(times)} queries ({len(QUESTIONS)} questions x {args.rounds}), "
              f"median {statistics.median(times):.2f} ms, p95 {percentile(times, 0.95):.2f} ms "
              f"(target median <= 5 ms); CPU time median {statistics.median(cpu_times):.2f} ms, "
              f"p95 {percentile(cpu_times, 0.95):.2f} ms")  # fmt: skip
        slowest = sorted(per_question.items(), key=lambda kv: -statistics.median(kv[1]))[:3]
        for question, values in slowest:
            print(f"  slowest: {statistics.median(values):6.2f} ms  {question}")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
