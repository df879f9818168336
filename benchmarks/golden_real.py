"""Graph and history golden sets derived from real repositories nobody tuned routing on, and how
the selector routes them.

    python benchmarks/golden_real.py [--repos /work/repos/flask /work/repos/click /work/repos/httpx]
        [--per-kind 12] [--out SETS.jsonl] [--show-wrong]

From each repository's own facts, not from anyone's phrasing of them:
  graph    callers from the AST (a function called from at least two other files: "who calls
           X?" and its paraphrases, gold = the callers' files), definitions ("where is X
           defined?", gold = its file) and subclasses (gold = the subclasses' files);
  history  last changes from `git log` ("when was PATH last changed?", "who last touched
           PATH?", gold = the last commit touching it), and authors ("what did NAME change?").
Each question is routed by ArelaSelector over a vocabulary read the same way (AST symbols,
tracked paths, commit authors), offline; a graph question is routed right when the graph is
among its memories and a history question when the audit memory is. Prints routing accuracy
per repository and kind, and the share that went to the expected memory alone.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from arela_index.selectors.arela_selector import ArelaSelector
from arela_index.text.entities import Vocabulary

REPOS = [Path("/work/repos/flask"), Path("/work/repos/click"), Path("/work/repos/httpx")]
CALLER_PHRASES = (
    "who calls {name}?",
    "which functions call {name}?",
    "where is {name} called from?",
    "what uses {name}?",
)
DEFINITION_PHRASES = ("where is {name} defined?", "which file defines {name}?")
SUBCLASS_PHRASES = ("which classes inherit from {name}?", "list the subclasses of {name}")
FILE_HISTORY_PHRASES = (
    "when was {path} last changed?",
    "who last touched {path}?",
    "what changed in {path} recently?",
    "which commits modified {path}?",
)
AUTHOR_PHRASES = ("what did {author} change?",)


@dataclass(frozen=True)
class Golden:
    repo: str
    kind: str  # graph | history
    question: str
    gold: tuple[str, ...]
    memory: str


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout


def python_files(repo: Path) -> list[str]:
    return [
        p
        for p in git(repo, "ls-files", "*.py").splitlines()
        if p.startswith(("src/", repo.name + "/")) and (repo / p).is_file()
    ]


def module_of(path: str) -> str:
    parts = Path(path).with_suffix("").parts
    return ".".join(parts[1:] if parts[0] == "src" else parts).removesuffix(".__init__")


def _stable(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def read_code(repo: Path) -> tuple[dict[str, str], dict[str, set[str]], dict[str, set[str]]]:
    """Definitions (qualified name → file), callers (function name → calling files) and
    subclasses (base class name → files of its subclasses), from the AST."""
    defined: dict[str, str] = {}
    calls: dict[str, set[str]] = defaultdict(set)
    subclasses: dict[str, set[str]] = defaultdict(set)
    for path in python_files(repo):
        try:
            tree = ast.parse((repo / path).read_text("utf-8", errors="replace"))
        except SyntaxError:
            continue
        module = module_of(path)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                defined[f"{module}.{node.name}"] = path
            if isinstance(node, ast.ClassDef):
                for base in node.bases:
                    name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
                    if name:
                        subclasses[name].add(path)
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                        defined[f"{module}.{node.name}.{item.name}"] = path
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name:
                    calls[name].add(path)
    return defined, calls, subclasses


def goldens(repo: Path, per_kind: int) -> Iterator[Golden]:
    defined, calls, subclasses = read_code(repo)
    top = {q.rsplit(".", 1)[-1]: f for q, f in defined.items() if q.count(".") <= 2}
    called = sorted(
        (n for n, f in top.items() if not n.startswith("_") and len(calls[n] - {f}) >= 2),
        key=_stable,
    )[:per_kind]
    for i, name in enumerate(called):
        phrase = CALLER_PHRASES[i % len(CALLER_PHRASES)]
        gold = tuple(sorted(calls[name] - {top[name]}))
        yield Golden(repo.name, "graph", phrase.format(name=name), gold, "graph")
    for i, name in enumerate(sorted(top, key=_stable)[: per_kind // 2]):
        phrase = DEFINITION_PHRASES[i % len(DEFINITION_PHRASES)]
        yield Golden(repo.name, "graph", phrase.format(name=name), (top[name],), "graph")
    bases = sorted((n for n in subclasses if n in top and n[:1].isupper()), key=_stable)
    for i, name in enumerate(bases[: per_kind // 2]):
        phrase = SUBCLASS_PHRASES[i % len(SUBCLASS_PHRASES)]
        gold = tuple(sorted(subclasses[name]))
        yield Golden(repo.name, "graph", phrase.format(name=name), gold, "graph")
    for i, path in enumerate(sorted(python_files(repo), key=_stable)[:per_kind]):
        last = git(repo, "log", "-1", "--format=%H", "--", path).strip()
        phrase = FILE_HISTORY_PHRASES[i % len(FILE_HISTORY_PHRASES)]
        yield Golden(repo.name, "history", phrase.format(path=path), (last,), "audit")
    authors = git(repo, "log", "-300", "--format=%an").splitlines()
    frequent = sorted(set(authors), key=lambda a: (-authors.count(a), a))[:3]
    for author in frequent:
        shas = git(repo, "log", "-300", f"--author={author}", "--format=%H").split()
        yield Golden(
            repo.name, "history", AUTHOR_PHRASES[0].format(author=author), tuple(shas), "audit"
        )


def vocabulary(repo: Path) -> Vocabulary:
    defined, _, _ = read_code(repo)
    return Vocabulary(
        symbols=defined,
        paths=git(repo, "ls-files").splitlines(),
        authors=set(git(repo, "log", "-2000", "--format=%an").splitlines()),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", type=Path, nargs="+", default=REPOS)
    parser.add_argument("--per-kind", type=int, default=12)
    parser.add_argument("--out", type=Path, help="write the golden sets here (JSON lines)")
    parser.add_argument("--show-wrong", action="store_true")
    args = parser.parse_args()
    rows = []
    totals: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for repo in args.repos:
        if not (repo / ".git").exists():
            sys.exit(f"golden_real: {repo} is not a git checkout: clone it first")
        selector = ArelaSelector(vocabulary(repo))
        for item in goldens(repo, args.per_kind):
            memories = [m for m, _ in selector.route(item.question).memories]
            right, alone = item.memory in memories, memories == [item.memory]
            for key in ((repo.name, item.kind), ("all", item.kind)):
                totals[key][0] += 1
                totals[key][1] += right
                totals[key][2] += alone
            if args.show_wrong and not right:
                print(f"  wrong: {item.repo}: {item.question!r} -> {memories}")
            rows.append({**item.__dict__, "gold": list(item.gold), "routed": memories})
    print(f"{'repository':12} {'kind':8} {'n':>4} {'routed right':>13} {'to it alone':>12}")
    for (name, kind), (n, right, alone) in sorted(totals.items()):
        print(f"{name:12} {kind:8} {n:4d} {right / n:12.1%} {alone / n:12.1%}")
    if args.out:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
        print(f"golden sets: {args.out}")


if __name__ == "__main__":
    main()
