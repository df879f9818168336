"""What a refresh and a load cost against what changed, on a copy of a real repository.

    python benchmarks/bench_refresh.py /path/to/repo [--keep DIR] [--no-build]

Clones REPO (a local `git clone`, so its own checkout is never touched) and indexes it offline,
then times, each step in a fresh process so that its peak RSS is its own:

    full build           `arela index` from nothing
    no-op refresh        `arela index --refresh` with nothing changed (target <= 0.5 s)
    from_repo            `ArelaIndex.from_repo()` on the unchanged index (target <= 0.5 s)
    first query          a load's deferred cost: the memories a first question reads
    one-file edit        a refresh after one source file gained a line (target <= 2 s)
    commit               a refresh after that edit was committed (history appended)

Seconds are measured inside the process (imports excluded); peak RSS is the process's own and
its largest child's (parse workers, the history process, git). Target: no refresh peaks above
the full build.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STEPS = ("full build", "no-op refresh", "from_repo", "first query", "one-file edit", "commit")


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
    elif step == "first query":
        index = ArelaIndex.from_repo(repo, offline=True, persist_dir=str(persist))
        started = time.perf_counter()
        answer = index.as_query_engine().query("where is the main entry point defined?")
        what = f"{len(answer.source_nodes)} sources"
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
    rows = []
    for step in STEPS:
        if step == "one-file edit":
            edited = edit_one_file(clone)
        if step == "commit":
            subprocess.run(["git", "-C", str(clone), "commit", "-qam", "bench edit"], check=True)
        rows.append(in_process(step, clone, persist))
        if step == "one-file edit":
            rows[-1]["what"] += f" ({edited})"
    if args.json:
        print(json.dumps(rows))
        return
    print(f"{'step':<15} {'seconds':>8} {'RSS MB':>7} {'child MB':>8}  what")
    for row in rows:
        print(
            f"{row['step']:<15} {row['seconds']:>8} {row['rss_mb']:>7} "
            f"{row['child_rss_mb']:>8}  {row['what']}"
        )
    if not args.keep:
        subprocess.run(["rm", "-rf", str(work)], check=False)


if __name__ == "__main__":
    main()
