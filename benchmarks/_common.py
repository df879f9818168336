"""What several benchmarks share: the index of a benchmark repository, built once and reused."""

from __future__ import annotations

import os
import random
import subprocess
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from arela_index.errors import IndexProblem
from arela_index.index import ArelaIndex
from arela_index.indexing.persist import current_build


def has_index(persist_dir: Path) -> bool:
    """Whether `persist_dir` holds a finished index."""
    return persist_dir.is_dir() and current_build(persist_dir) is not None


def open_index(
    repo: Path, persist_dir: Path, rebuild: bool = False, **settings: Any
) -> tuple[ArelaIndex, float | None]:
    """The index in `persist_dir`, built from `repo` first when there is none it can read (or
    `rebuild`), and the seconds that build took (None when it was loaded)."""
    if not rebuild and has_index(persist_dir):
        try:
            return ArelaIndex.load(persist_dir, **settings), None
        except IndexProblem:
            pass  # written by another version of the index format, or damaged: built again
    started = time.perf_counter()
    index = ArelaIndex.build(repo, persist_dir=str(persist_dir), **settings)
    return index, time.perf_counter() - started


# -- a generated repository to measure on -------------------------------------------------------

PACKAGES = 40
COMMITS = 300
AUTHORS = [
    "Ada Moreau", "Bo Lindqvist", "Chidi Okeke", "Dana Ruiz", "Emil Novak", "Fatima Zahra",
    "Goran Petrov", "Hana Sato", "Ines Duarte", "Jon Berg", "Kira Ivanova", "Liam O'Neill",
]  # fmt: skip


def generate(root: Path, files: int, seed: int = 33, commits: int = COMMITS) -> None:
    """A git repository of `files` Python modules in PACKAGES packages (classes, subclasses,
    functions calling into other modules, docstrings), with `commits` commits by 12 people over
    a year (the first adds everything, each next one touches one to four modules)."""
    from wordfreq import top_n_list

    rng = random.Random(seed)
    words = [w for w in top_n_list("en", 4000) if w.isalpha() and w.isascii() and len(w) > 3]
    per_package = max(1, files // PACKAGES)
    modules = [
        (f"pkg{p:02d}", f"{rng.choice(words)}_{m:02d}")
        for p in range(PACKAGES)
        for m in range(per_package)
    ][:files]
    defined: list[tuple[str, str, str]] = []  # (module path, function, class)
    sources: dict[str, str] = {}
    for package, name in modules:
        module = f"{package}.{name}"
        imports, body = [], []
        cls = "".join(w.title() for w in rng.sample(words, 2))
        base = rng.choice(defined) if defined and rng.random() < 0.3 else None
        if base is not None:
            imports.append(f"from {base[0]} import {base[2]}")
        sentence = " ".join(rng.sample(words, 9))
        body.append(
            f"class {cls}({base[2] if base else 'object'}):\n"
            f'    """{sentence.capitalize()}."""\n\n'
            f"    def {rng.choice(words)}(self, value):\n"
            f"        return value\n"
        )
        for _ in range(rng.randint(2, 5)):
            function = f"{rng.choice(words)}_{rng.choice(words)}"
            doc = " ".join(rng.sample(words, 12)).capitalize()
            callee = rng.choice(defined) if defined else None
            call = f"{callee[1]}(value)" if callee else "value"
            if callee is not None:
                imports.append(f"from {callee[0]} import {callee[1]}")
            body.append(
                f"def {function}(value):\n"
                f'    """{doc}."""\n'
                f"    result = {call}\n"
                f"    return result\n"
            )
            defined.append((module, function, cls))
        header = "\n".join(dict.fromkeys(imports))
        sources[f"{package}/{name}.py"] = (header + "\n\n\n" if header else "") + "\n\n".join(body)
    for package in {p for p, _ in modules}:
        sources[f"{package}/__init__.py"] = ""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    write(root, sources)
    commit(root, "Initial import", AUTHORS[0], "2024-01-02T09:00:00+00:00")
    paths = sorted(p for p in sources if not p.endswith("__init__.py"))
    for n in range(1, commits):
        touched = rng.sample(paths, rng.randint(1, 4))
        for path in touched:
            sources[path] += f"\n\nTUNED_{n} = {rng.randint(1, 999)}\n"
        write(root, {p: sources[p] for p in touched})
        when = datetime(2024, 1, 2, 9, tzinfo=timezone.utc) + timedelta(days=n * 360 / commits)
        subject = f"{rng.choice(['Fix', 'Tune', 'Simplify'])} {rng.choice(words)} in {Path(touched[0]).stem}"
        commit(root, subject, rng.choice(AUTHORS), when.isoformat())


def git(root: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **(env or {})},
    )
    return done.stdout


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def commit(root: Path, subject: str, author: str, date: str) -> None:
    email = author.split()[0].lower() + "@example.com"
    env = {
        **{f"GIT_{who}_NAME": author for who in ("AUTHOR", "COMMITTER")},
        **{f"GIT_{who}_EMAIL": email for who in ("AUTHOR", "COMMITTER")},
        **{f"GIT_{who}_DATE": date for who in ("AUTHOR", "COMMITTER")},
    }
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", subject, env=env)
