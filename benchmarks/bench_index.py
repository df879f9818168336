"""Offline indexing speed and peak memory on a real repository.

    python benchmarks/bench_index.py /path/to/repo [--runs 2] [--no-embedding]

Prints files/s, chunks/s, seconds per memory and peak RSS. Target (issue 2): >= 200 files/s offline
for a Python repository of a few hundred files on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import tempfile
import time
from pathlib import Path

from arela_index.build import build_index
from arela_index.config import ArelaConfig
from arela_index.runtime import detect


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument(
        "--no-embedding", action="store_true", help="sparse only (offline_embedding=none)"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    rates, chunk_rates, summaries = [], [], []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            config = ArelaConfig(
                offline=True,
                persist_dir=tmp,
                show_progress=False,
                offline_embedding="none" if args.no_embedding else "static",
            )
            started = time.perf_counter()
            summary = build_index(args.repo, config, detect(config))
            seconds = time.perf_counter() - started
            rates.append(summary.files / seconds)
            chunk_rates.append(summary.chunks / seconds)
            summaries.append(summary)
    last = summaries[-1]
    result = {
        "repo": str(Path(args.repo).resolve()),
        "mode": last.mode,
        "files": last.files,
        "chunks": last.chunks,
        "files_per_s": round(statistics.median(rates), 1),
        "chunks_per_s": round(statistics.median(chunk_rates), 1),
        "seconds": round(statistics.median(s.seconds for s in summaries), 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "runs": args.runs,
    }
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>14}: {value}")


if __name__ == "__main__":
    main()
