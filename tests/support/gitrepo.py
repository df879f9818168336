"""Real git repositories in temp folders, with scripted authors and dates."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


class GitRepo:
    """A git work tree for tests: write files, commit them as someone at some date.

    >>> repo = GitRepo(tmp_path / "r")                                   # doctest: +SKIP
    >>> repo.commit({"a.py": "def f(): ..."}, "add f", author="Alice", date="2024-03-01T10:00:00")  # doctest: +SKIP
    """

    def __init__(self, root: Path, init: bool = True) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        if init:
            self.git("init", "-q", "-b", "main")
            self.git("config", "user.name", "Test")
            self.git("config", "user.email", "test@example.com")
            self.git("config", "commit.gpgsign", "false")

    def git(self, *args: str, env: dict[str, str] | None = None) -> str:
        done = subprocess.run(
            ["git", "-C", str(self.root), *args],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, **(env or {})},
        )
        return done.stdout

    def write(self, files: dict[str, str | bytes]) -> None:
        for rel, content in files.items():
            path = self.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")

    def delete(self, *paths: str) -> None:
        for rel in paths:
            (self.root / rel).unlink()

    def commit(
        self,
        files: dict[str, str | bytes] | None = None,
        message: str = "change",
        author: str = "Test",
        email: str | None = None,
        date: str = "2024-01-01T12:00:00+00:00",
        delete: tuple[str, ...] = (),
    ) -> str:
        self.write(files or {})
        self.delete(*delete)
        self.git("add", "-A")
        email = email or f"{author.split()[0].lower()}@example.com"
        env = {
            "GIT_AUTHOR_NAME": author,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_NAME": author,
            "GIT_COMMITTER_EMAIL": email,
            "GIT_COMMITTER_DATE": date,
        }
        self.git("commit", "-q", "--allow-empty", "-m", message, env=env)
        return self.git("rev-parse", "HEAD").strip()

    def tag(self, name: str) -> None:
        self.git("tag", name)
