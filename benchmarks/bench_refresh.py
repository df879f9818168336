"""What a refresh and a load cost against what changed, on a copy of a real repository.

    python benchmarks/bench_refresh.py /path/to/repo [--keep DIR] [--repeat N]

Clones REPO (a local `git clone`, so its own checkout is never touched) and indexes it offline,
then times, each step in a fresh process so that its peak RSS is its own:

    full build           `arela index` from nothing
    no-op refresh        `arela index --refresh` with nothing changed (target <= 0.5 s)
    from_repo            `ArelaIndex.from_repo()` on the unchanged index (target <= 0.5 s)
    first query          a load's deferred cost: the engine, the memories a first question
                         is routed to ("where is the main entry point defined?")
    history query        the same for a question about history ("what changed most recently?")
    one-file edit        a refresh after one source file gained a line (target <= 2 s)
    commit               a refresh after that edit was committed (history appended)

With `--repeat N` every step but the full build runs N times (an edit appends one more line
each round): the table gives each step's median, its range and its largest RSS.
Seconds are measured inside the process (imports excluded); peak RSS is the process's own and
its largest child's (parse workers, the history process, git). Target: no refresh peaks above
the full build.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STEPS = (
    "full build",
    "no-op refresh",
    "from_repo",
    "first query",
    "history query",
    "one-file edit",
    "commit",
)
# The first question a fresh process asks after loading: the engine is made, the memories
# the question is routed to are read (and only those).
FIRST_QUESTIONS = {
    "first query": "where is the main entry point defined?",
    "history query": "what changed most recently?",
}


def run_step(step: str, repo: Path, persist: Path) -> dict[str, object]:
    """One step, in this process: seconds, what it did, peak RSS."""
    from arela_index.config import ArelaConfig
    from arela_index.index import ArelaIndex
    from arela_index.indexing.build import build_index
    from arela_index.llm.runtime import detect

    config = ArelaConfig(offline=True, persist_dir=str(persist), show_progress=False)
    runtime = detect(config)
    started = time.perf_counter()
    what = ""
    if step == "from_repo":
        index = ArelaIndex.from_repo(repo, offline=True, persist_dir=str(persist))
        what = f"build {index.folder.name}"
    elif step in FIRST_QUESTIONS:
        index = ArelaIndex.from_repo(repo, offline=True, persist_dir=str(persist))
        started = time.perf_counter()
        answer = index.as_query_engine().query(FIRST_QUESTIONS[step])
        read = ", ".join(sorted(index._stores)) or "none"
        what = f"{len(answer.source_nodes)} sources, memories read: {read}"
    else:
        summary = build_index(repo, config, runtime, refresh=step != "full build")
        rebuilt = not any("nothing changed" in note for note in summary.notes)
        what = f"changed {summary.changed}, " + ("rebuilt" if rebuilt else "nothing rebuilt")
    seconds = time.perf_counter() - started
    return {
        "step": step,
        "seconds": round(seconds, 3),
        "what": what,
        "rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "child_rss_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
    }


def in_process(step: str, repo: Path, persist: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, __file__, str(repo), "--step", step, "--persist", str(persist)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


_CODE = (".py", ".js", ".ts", ".go", ".rs", ".java", ".kt", ".rb", ".c", ".cpp")


def edit_one_file(repo: Path) -> str:
    """Append a line to the repository's largest source file, as a comment of its language."""
    listed = subprocess.run(
        ["git", "-C", str(repo), "ls-files", "-z"], capture_output=True, check=True
    ).stdout.decode("utf-8", "surrogateescape")
    files = [f for f in listed.split("\0") if f.endswith(_CODE) and (repo / f).is_file()]
    target = max(files, key=lambda f: (repo / f).stat().st_size)
    mark = "#" if target.endswith((".py", ".rb")) else "//"
    with open(repo / target, "a", encoding="utf-8") as fh:
        fh.write(f"\n{mark} bench_refresh: one more line\n")
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo")
    parser.add_argument("--step", choices=STEPS, help=argparse.SUPPRESS)
    parser.add_argument("--persist", help=argparse.SUPPRESS)
    parser.add_argument("--keep", help="clone and index into this folder and keep them")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--repeat", type=int, default=1, help="rounds of every step but the full build (median)"
    )
    args = parser.parse_args()
    if args.step:
        print(json.dumps(run_step(args.step, Path(args.repo), Path(args.persist))))
        return

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="arela-bench-refresh-"))
    clone, persist = work / "repo", work / "index"
    if not clone.exists():
        subprocess.run(
            ["git", "clone", "-q", str(Path(args.repo).resolve()), str(clone)], check=True
        )
    rows: list[dict[str, object]] = []
    for round_ in range(args.repeat):
        for step in STEPS if round_ == 0 else STEPS[1:]:
            if step == "one-file edit":
                edited = edit_one_file(clone)
            if step == "commit":
                subprocess.run(
                    ["git", "-C", str(clone), "commit", "-qam", "bench edit"], check=True
                )
            rows.append(in_process(step, clone, persist))
            if step == "one-file edit":
                rows[-1]["what"] += f" ({edited})"
    if args.json:
        print(json.dumps(rows))
        return
    print(f"load: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores; {args.repeat} round(s)")
    print(f"{'step':<15} {'median s':>8} {'min-max s':>13} {'RSS MB':>7} {'child MB':>8}  what")
    for step in STEPS:
        mine = [row for row in rows if row["step"] == step]
        seconds = [float(str(row["seconds"])) for row in mine]
        print(
            f"{step:<15} {statistics.median(seconds):>8.3f} "
            f"{f'{min(seconds):.2f}-{max(seconds):.2f}':>13} "
            f"{max(int(str(row['rss_mb'])) for row in mine):>7} "
            f"{max(int(str(row['child_rss_mb'])) for row in mine):>8}  {mine[-1]['what']}"
        )
    if not args.keep:
        subprocess.run(["rm", "-rf", str(work)], check=False)


if __name__ == "__main__":
    main()
