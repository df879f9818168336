"""Long, issue-like questions made from a repository's own history, for file localization.

    python benchmarks/history_questions.py [--repo /work/bench-repos/pytest] [--count 30]
        [--seed 7] > /tmp/history.jsonl
    python benchmarks/eval_swebench.py /tmp/history.jsonl

A commit whose message is long (a pull request's description: what was wrong, what changes) and
whose change touches exactly one source file (under `--source`, default pytest's `src/_pytest/`,
ending in `--ext`) becomes a question: the message, asked at the commit's parent, answered by
that file. Merges, releases, version bumps, reverts, cherry-picks and messages that name the
file's path are left out. `--count` of them are drawn with `--seed` (the same clone gives the same set), written as
JSON lines in SWE-bench Lite's shape (`id`, `base_commit`, `question`, `gold.files`), so
`eval_swebench.py` scores them like the SWE-bench set. The text stays in the clone: nothing of
the repository is committed here, only this recipe.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

_SKIP = re.compile(r"(?i)(bump|update|release|preparing|revert|\[pre-commit|pre-commit)")
_CHERRY_PICK = re.compile(r"^\(cherry picked", re.MULTILINE)


def commits(repo: Path) -> Iterator[tuple[str, list[str], str, list[str]]]:
    """(hash, parents, message, changed paths) of every non-merge commit, newest first."""
    log = subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "log",
            "--no-merges",
            "--format=%x1e%H%x00%P%x00%B%x00",
            "--name-only",
        ],
        capture_output=True,
        text=True,
        errors="replace",
        check=True,
    ).stdout
    for record in log.split("\x1e")[1:]:
        sha, parents, message, names = (record.split("\x00") + [""] * 4)[:4]
        yield sha.strip(), parents.split(), message.strip(), [n for n in names.split("\n") if n]


def questions(
    repo: Path, source: str, extensions: tuple[str, ...], min_chars: int
) -> list[dict[str, object]]:
    found: list[dict[str, object]] = []
    for sha, parents, message, paths in commits(repo):
        sources = [p for p in paths if p.startswith(source) and p.endswith(extensions)]
        if len(parents) != 1 or len(sources) != 1 or len(message) < min_chars:
            continue
        if sources[0] in message or _SKIP.match(message) or _CHERRY_PICK.search(message):
            continue
        found.append(
            {
                "id": f"history-{sha[:10]}",
                "base_commit": parents[0],
                "question": message,
                "gold": {"files": sources},
            }
        )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=Path("/work/bench-repos/pytest"))
    parser.add_argument("--source", default="src/_pytest/", help="path prefix of source files")
    parser.add_argument("--ext", default=".py", help="comma-separated source file extensions")
    parser.add_argument("--min-chars", type=int, default=400, help="shortest message kept")
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    pool = questions(args.repo, args.source, tuple(args.ext.split(",")), args.min_chars)
    chosen = random.Random(args.seed).sample(pool, min(args.count, len(pool)))
    print(f"{len(pool)} commits qualify; {len(chosen)} drawn", file=sys.stderr)
    for row in sorted(chosen, key=lambda r: str(r["id"])):
        print(json.dumps(row))


if __name__ == "__main__":
    main()
