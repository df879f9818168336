"""A question about who calls a function nothing in the repository calls is answered with that
function, saying nothing calls it, not with other code that shares its name's words."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.gitrepo import GitRepo

from arela_index.index import ArelaIndex

JOBS = '''"""Maintenance jobs run by the scheduler."""


def purge(db, days):
    """Delete sessions older than `days`."""
    return db.delete("sessions", older_than=days)


def rotate(db):
    """Start a new log file."""
    return db.rotate_log()
'''
SESSIONS = '''"""Sessions: create, look up and purge them."""


class Sessions:
    def __init__(self, db):
        self.db = db

    def purge_expired(self):
        """Purge expired sessions; the purge runs per request."""
        return self.db.delete("sessions", expired=True)

    def create(self, user):
        self.purge_expired()
        return self.db.insert("sessions", user=user)
'''
CLI = '''"""The command line."""

from app.jobs import rotate


def main(db):
    rotate(db)
'''


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> ArelaIndex:
    repo = GitRepo(tmp_path_factory.mktemp("nothing-calls") / "app")
    files = {"app/__init__.py": "", "app/jobs.py": JOBS, "app/sessions.py": SESSIONS}
    repo.commit({**files, "app/cli.py": CLI}, "jobs, sessions and the command line")
    root = Path(repo.root)
    return ArelaIndex.from_repo(
        root, persist_dir=str(root / ".arela"), offline=True, show_progress=False
    )


def test_who_calls_a_function_nothing_calls_is_that_function_saying_so(
    index: ArelaIndex,
) -> None:
    nodes, trace = index.as_retriever().retrieve_with_trace("who calls purge?")
    assert not trace.out_of_scope and nodes
    first = nodes[0].node
    assert first.metadata["symbol"] == "app.jobs.purge"
    assert "is called by no functions" in first.get_content()


def test_who_calls_a_called_function_still_lists_its_callers(index: ArelaIndex) -> None:
    nodes = index.as_retriever().retrieve("who calls rotate?")
    assert "app.cli.main" in {n.node.metadata.get("symbol") for n in nodes}
