"""Running `arela` the way a user does, and repositories built to stress it.

The reliability tests (faults, index safety, hostile input, secrets, concurrency) share these:
a CLI run in a real subprocess or in-process, the check that what a user saw was one clear line
and no traceback, and a generated repository big enough that a build takes a few seconds.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from support.gitrepo import GitRepo

from arela_index.cli.main import main

PACKAGE_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Run:
    """What one `arela` command did: its exit code and what it printed."""

    code: int
    out: str
    err: str

    @property
    def problems(self) -> list[str]:
        """stderr lines other than the one-time offline notice and logged warnings."""
        return [
            line
            for line in self.err.splitlines()
            if line.strip() and "runs offline" not in line and not line.startswith("arela-index:")
        ]


def run_cli(
    *args: str | bytes,
    env: dict[str, str] | None = None,
    stdin: str | bytes | None = None,
    timeout: float = 300,
) -> Run:
    """`python -m arela_index ARGS` in a subprocess, as a user would run it (bytes arguments go
    to the command line as they are, as a shell would pass a name that is not UTF-8)."""
    done = subprocess.run(
        [sys.executable, "-m", "arela_index", *args],
        input=stdin.encode("utf-8", "surrogatepass") if isinstance(stdin, str) else stdin,
        capture_output=True,
        timeout=timeout,
        cwd=PACKAGE_ROOT,
        env={**os.environ, "PYTHONIOENCODING": "utf-8", **(env or {})},
    )
    decode = lambda b: b.decode("utf-8", "replace")  # noqa: E731
    return Run(done.returncode, decode(done.stdout), decode(done.stderr))


def call_cli(*args: str) -> Run:
    """`arela ARGS` in this process: the same `main`, minus the interpreter start-up."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return Run(code, out.getvalue(), err.getvalue())


def assert_one_clear_line(run: Run, *expected: str) -> str:
    """Exit 2, no traceback, and exactly one `arela: ...` line that contains each of `expected`."""
    assert run.code == 2, f"exit {run.code}, stderr:\n{run.err}\nstdout:\n{run.out[:2000]}"
    assert "Traceback" not in run.err and "Traceback" not in run.out
    assert len(run.problems) == 1, run.err
    line = run.problems[0]
    assert line.startswith("arela: ") and "unexpected" not in line, line
    for text in expected:
        assert text in line, f"{text!r} not in {line!r}"
    return line


def module_file(i: int, functions: int = 8) -> str:
    """A Python module whose functions call into the next module: real parse and graph work."""
    return "\n".join(
        f"def func_{i}_{j}(value):\n"
        f'    """Step {j} of stage {i}: hands the value on to stage {i + 1}."""\n'
        f"    return func_{i + 1}_{j}(value) + {j}\n"
        for j in range(functions)
    )


def build_many_modules(root: Path, modules: int = 300, commits: int = 20) -> GitRepo:
    """A git repository of `modules` Python files with a short history: a build of a few seconds
    that parses in worker processes (the path a killed build must clean up after)."""
    repo = GitRepo(root)
    repo.commit(
        {f"pkg/stage{i:03d}.py": module_file(i) for i in range(modules)},
        "Initial stages",
        author="Alice Martin",
        date="2024-01-10T10:00:00+00:00",
    )
    for c in range(commits):
        path = f"pkg/stage{c:03d}.py"
        repo.commit(
            {path: module_file(c) + f"\n\nTUNING_{c} = {c}\n"},
            f"Tune stage {c}",
            author="Bob Chen",
            date=f"2024-02-{c % 28 + 1:02d}T09:00:00+00:00",
        )
    return repo
