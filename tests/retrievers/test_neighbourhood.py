"""A description of what code does finds the function that does it through the code around it:
the source it matches best names, by the graph's calls, the files its callers and callees are in.
A helper that the question describes but in few of its words comes ahead of a module that shares
more of them and that no matching code calls, which comes first without the neighbourhood. A
pasted report is ranked by its own words: it names code in passing, and the neighbourhood of
what it matches leads away."""

from __future__ import annotations

import pytest
from support.engine_repos import cited_files, one_commit_index, other_modules

import arela_index.stores.code_search as code_search
from arela_index.index import ArelaIndex
from arela_index.stores.graph import GraphStore, table_neighbour_files
from arela_index.text.question import words

HASHING = '''"""Small helpers for text and bytes."""

import hashlib
import os


def salted_digest(secret, salt=None):
    """A SHA-256 digest of `secret` with a random salt in front."""
    salt = salt or os.urandom(16)
    return salt + hashlib.sha256(salt + secret.encode()).digest()
'''

SIGNUP = '''"""Signing up new members."""

from app.hashing import salted_digest


def register(members, name, password):
    """Store a new member: the password is kept only as a hash, never in plain text."""
    members[name] = salted_digest(password)
    return members[name]
'''

RESET = '''"""Resetting a member's forgotten password."""

from app.hashing import salted_digest


def reset_password(members, name, password):
    """Store the member's new password as a hash in place of the old one."""
    members[name] = salted_digest(password)
    return members[name]
'''

# Says more of the question's words than the helper does; nothing that matches calls it.
LEGACY = '''"""Rows of the old site, read once while members move over."""


def old_password_hash(row):
    """The password hash the old site kept for a member: an unsalted MD5, read but never stored
    again."""
    return row["md5"]
'''

OTHERS = other_modules("src/app")

FILES: dict[str, str | bytes] = {
    "README.md": "# app\n\nMembers and their passwords.\n",
    "src/app/__init__.py": "",
    "src/app/hashing.py": HASHING,
    "src/app/signup.py": SIGNUP,
    "src/app/reset.py": RESET,
    "src/app/legacy.py": LEGACY,
    **OTHERS,
}

QUESTION = "which function hashes passwords with a salt before they are stored?"

# The question inside a report's usual talk, none of it words of the repository's code.
REPORT = (
    "After upgrading yesterday, our staging deployment behaves differently and I cannot tell"
    f" why. {QUESTION[0].upper()}{QUESTION[1:]} I am asking because our audit tool flagged"
    " something during the nightly job on the staging cluster, and the team lead wants an answer"
    " before Friday's release meeting. We run everything inside docker on Ubuntu, Python three"
    " point eleven, with the default settings and nothing custom on top. I tried searching the"
    " documentation and the changelog first but found nothing useful there. Thanks a lot for any"
    " pointers, and sorry if this is obvious to somebody who knows this codebase well."
)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> ArelaIndex:
    return one_commit_index(tmp_path_factory.mktemp("neighbourhood"), "app", FILES)


def _cited(index: ArelaIndex) -> list[str]:
    return cited_files(index.code_retriever(top_k=8).search(QUESTION, source_first=True))


def test_the_helper_its_callers_call_comes_before_a_module_sharing_more_words(
    index: ArelaIndex,
) -> None:
    files = _cited(index)
    assert files.index("src/app/hashing.py") < files.index("src/app/legacy.py")


def test_without_the_neighbourhood_the_module_sharing_more_words_comes_first(
    index: ArelaIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(code_search, "NEIGHBOUR_WEIGHT", 0.0)
    files = _cited(index)
    assert files.index("src/app/legacy.py") < files.index("src/app/hashing.py")


def test_a_pasted_report_is_ranked_by_its_own_words(index: ArelaIndex) -> None:
    assert len(words(REPORT)) >= code_search.NEIGHBOUR_REPORT_WORDS
    files = cited_files(index.code_retriever(top_k=8).search(REPORT))
    assert files.index("src/app/legacy.py") < files.index("src/app/hashing.py")


def test_with_the_neighbourhood_a_report_would_rank_the_helper_first(
    index: ArelaIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(code_search, "NEIGHBOUR_REPORT_WEIGHT", code_search.NEIGHBOUR_WEIGHT)
    files = cited_files(index.code_retriever(top_k=8).search(REPORT))
    assert files.index("src/app/hashing.py") < files.index("src/app/legacy.py")


def test_the_table_and_the_whole_graph_name_the_same_neighbours(index: ArelaIndex) -> None:
    symbols = ["app.hashing.salted_digest", "app.signup.register", "app.legacy.old_password_hash"]
    expected = {
        "app.hashing.salted_digest": {"src/app/signup.py", "src/app/reset.py"},
        "app.signup.register": {"src/app/hashing.py"},
    }
    store = GraphStore.load(index.folder / "graph")
    assert table_neighbour_files(store.table, symbols) == expected
    whole = store.graph  # every row read into networkx, as tools that walk the graph do
    walked: dict[str, set[str]] = {}
    for name in symbols:
        callers = [u for u, _, key in whole.in_edges(name, keys=True) if key == "calls"]
        callees = [v for _, v, key in whole.out_edges(name, keys=True) if key == "calls"]
        paths = {whole.nodes[other].get("path") for other in callers + callees} - {None}
        if paths:
            walked[name] = paths
    assert walked == expected
