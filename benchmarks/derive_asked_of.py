"""Derive questions asked of one name from the code: "what does Class.method do?", gold the file
that defines it. Four per checkout, drawn (seed 38) among the public methods of source files
(no tests, docs, examples or benchmarks) whose `Class.method` is defined once and whose name
other source files write at least three times: the passages that mention it compete with its
definition. With `--classes`: "what is Class?", of the classes holding such methods whose name
is camel case; with `--pairs`: "how does A differ from B?" of two such classes of one checkout,
gold both files; with `--inherited`: "what does Class.method do?" of a public method a class
inherits from a base class the repository defines once (the only one of its bases that defines
it), gold the base's file.

    python benchmarks/derive_asked_of.py --repos-dir DIR owner/name=CHECKOUT ... > SET.jsonl
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import re
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

ASIDE = ("/test", "/doc", "/example", "/bench")
CAMEL = re.compile(r"[a-z][A-Z]")


def methods(root: Path) -> tuple[list[tuple[str, str, str]], dict[str, str]]:
    """Each public method of more than two statements, as (class, method, path); and the texts."""
    listed = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z", "*.py"], capture_output=True, text=True
    ).stdout.split("\0")
    texts = {
        p: (root / p).read_text(errors="replace")
        for p in listed
        if p and not any(a in "/" + p for a in ASIDE) and (root / p).is_file()
    }
    found = []
    for path, cls in classes_of(texts):
        for f in cls.body:
            public = not getattr(f, "name", "_").startswith("_")
            if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef) and public:
                found.extend([(cls.name, f.name, path)] if len(f.body) > 2 else [])
    return found, texts


def classes_of(texts: dict[str, str]) -> Iterator[tuple[str, ast.ClassDef]]:
    """Each module-level class of the files that parse, with its file's path."""
    for path, text in texts.items():
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        yield from ((path, c) for c in tree.body if isinstance(c, ast.ClassDef))


def inherited(texts: dict[str, str]) -> list[tuple[str, str, str]]:
    """(class, method, the base's path) for each public method of more than two statements a
    class defined once inherits, unchanged, from the one base (defined once) that defines it."""
    classes: dict[str, list[tuple[str, list[str], dict[str, int]]]] = {}
    for path, cls in classes_of(texts):
        bases = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in cls.bases]
        defs = {
            f.name: len(f.body)
            for f in cls.body
            if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        classes.setdefault(cls.name, []).append((path, bases, defs))
    found = []
    for name, [(_, bases, defs)] in ((n, d) for n, d in classes.items() if len(d) == 1):
        known = [classes[b][0] for b in bases if len(classes.get(b, ())) == 1]
        for base_path, _, base_defs in known:
            for method, size in base_defs.items():
                others = sum(method in other for _, _, other in known)
                if not method.startswith("_") and size > 2 and method not in defs and others == 1:
                    found.append((name, method, base_path))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos-dir", type=Path, required=True)
    parser.add_argument("--per-checkout", type=int, default=4)
    parser.add_argument("--classes", action="store_true", help='"what is Class?" instead')
    parser.add_argument("--pairs", action="store_true", help='"how does A differ from B?"')
    parser.add_argument("--inherited", action="store_true", help="a method a class inherits")
    parser.add_argument("checkouts", nargs="+", help="owner/name=CHECKOUT_FOLDER")
    args = parser.parse_args()
    rng = random.Random(38)
    for pair in args.checkouts:
        repo, folder = pair.split("=", 1)
        root = args.repos_dir / folder
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        found, texts = methods(root)
        if args.inherited:
            found = inherited(texts)
        if args.classes or args.pairs:
            # Each camel-case class once per file that defines it, asked of by its name alone.
            found = list(dict.fromkeys(("", c, p) for c, _, p in found if CAMEL.search(c)))
        once = Counter(f"{c}.{m}" for c, m, _ in found)  # defined once: the name is the symbol
        pool = [
            (c, m, p)
            for c, m, p in found
            if once[f"{c}.{m}"] == 1
            and (args.inherited or sum(q != p and m in t for q, t in texts.items()) >= 3)
        ]
        if args.pairs:
            drawn = rng.sample(pool, min(2 * args.per_checkout, len(pool) // 2 * 2))
            for (_, a, a_path), (_, b, b_path) in zip(drawn[::2], drawn[1::2], strict=True):
                row = {
                    "id": f"pair-{folder.split('@')[0]}-{a}-{b}",
                    "repo": repo,
                    "base_commit": commit,
                    "question": f"how does {a} differ from {b}?",
                    "kind": "named",
                    "about_tests": False,
                    "gold": {"files": sorted({a_path, b_path})},
                }
                print(json.dumps(row))
            continue
        for cls, method, path in rng.sample(pool, min(args.per_checkout, len(pool))):
            name = method if args.classes else f"{cls}.{method}"
            question = f"what is {name}?" if args.classes else f"what does {name} do?"
            row = {
                "id": f"{'inherited' if args.inherited else 'asked'}-{folder.split('@')[0]}-{name}",
                "repo": repo,
                "base_commit": commit,
                "question": question,
                "kind": "named",
                "about_tests": False,
                "gold": {"files": [path]},
            }
            print(json.dumps(row))


if __name__ == "__main__":
    main()
