from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
# Never reach for a real Ollama or OpenAI unless a test asks for it.
os.environ.setdefault("IS_TESTING", "1")

from gitrepo import GitRepo  # noqa: E402


@pytest.fixture
def git_repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path / "repo")
