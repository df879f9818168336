"""A question that describes code finds it by its docstring and name (the chunks' heads), where
the words it shares with long bodies elsewhere would bury it; a package's `testing` module is
source, a root `testing/` folder holds tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from llama_index.core.schema import NodeWithScore
from support.gitrepo import GitRepo
from support.stock_bm25 import stock_bm25

from arela_index.index import ArelaIndex
from arela_index.text.question import Question
from arela_index.text.tokens import expand_identifiers

MEMBERS = '''"""The sets of members a directive documents."""


class AllMembers:
    """A set holding every member: the members option given without a list."""

    def __contains__(self, item):
        return True


class EmptyMembers:
    """A set that never matches any member: an exclude-members option left empty."""

    def __contains__(self, item):
        return False

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0

    def __repr__(self):
        return f"{type(self).__name__}()"

    def union(self, other):
        """The other set, as the union with nothing at all is that set itself."""
        return other

    def intersection(self, other):
        """Nothing, whatever the other set holds."""
        return self
'''

# A long body in the question's words: plain chunk BM25 ranks it first.
OPTIONS = '''"""Reading a directive's options."""


def filter_members(options, members):
    """Keep the members a directive should document."""
    wanted = options.get("members")
    excluded = options.get("exclude-members") or ()
    kept = []
    for member in members:
        # Each member is matched against the members option, then against exclude-members.
        if wanted is not None and member not in wanted:
            continue
        # A member the exclude-members option matches is dropped, whatever members matched.
        if member in excluded:
            continue
        # Private members need their own option: a member that matches no option is kept.
        # A member that never matches any option is kept; one that matches any exclude-members
        # entry never is, and a class member matches as a class attribute would.
        if member.startswith("_") and not options.get("private-members"):
            continue
        kept.append(member)
    return kept


def describe_option(name, value):
    """One option as the directive's header shows it."""
    return f":{name}: {value}"
'''

FIXTURES = '''"""What a user's own tests build a throwaway site with."""


def make_site(folder, pages):
    """A throwaway site in `folder` with `pages`, built once and discarded after the run."""
    for name, text in pages.items():
        (folder / name).write_text(text)
    return folder
'''

ROOT_TEST = """from docsite.testing.fixtures import make_site


def test_a_throwaway_site_is_built_in_a_folder(tmp_path):
    # The throwaway site is built in the folder given, and the folder holds the site's pages.
    site = make_site(tmp_path, {"index.rst": "hello"})
    assert site == tmp_path  # built in that folder
    assert (site / "index.rst").read_text() == "hello"
"""

FILES: dict[str, str | bytes] = {
    "src/docsite/members.py": MEMBERS,
    "src/docsite/options.py": OPTIONS,
    "src/docsite/testing/fixtures.py": FIXTURES,
    "testing/test_fixtures.py": ROOT_TEST,
}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> ArelaIndex:
    folder: Path = tmp_path_factory.mktemp("heads")
    repo = GitRepo(folder / "docsite")
    repo.commit(FILES, "docsite")
    return ArelaIndex.build(
        repo.root, persist_dir=str(folder / "index"), offline=True, show_progress=False
    )


def _files(hits: list[NodeWithScore]) -> list[str]:
    return list(dict.fromkeys(h.node.metadata["file_path"] for h in hits))


def _plain_first(index: ArelaIndex, question: str) -> str:
    """The file of the plain chunk BM25's best chunk (llama_index's retriever)."""
    hit = stock_bm25(index.code.chunks).retrieve(expand_identifiers(question))[0]
    return str(index.code.by_id[hit.node.node_id].metadata["file_path"])


def _first(index: ArelaIndex, question: str) -> NodeWithScore:
    return index.code_retriever(top_k=3).ask(Question.read(question), ["factual"])[0]


def test_a_class_described_by_its_docstring_comes_before_a_body_in_the_same_words(
    index: ArelaIndex,
) -> None:
    question = "which class never matches any member for the exclude-members option?"
    assert _plain_first(index, question) == "src/docsite/options.py"
    assert _first(index, question).node.metadata["symbol"] == "docsite.members.EmptyMembers"


def test_a_packages_testing_module_is_source_and_a_root_testing_folder_holds_tests(
    index: ArelaIndex,
) -> None:
    question = "how is a throwaway site built in a folder?"
    hits = index.code_retriever(top_k=4).ask(Question.read(question), ["factual"])
    assert _files(hits)[:2] == ["src/docsite/testing/fixtures.py", "testing/test_fixtures.py"]
    # Ranked as the plain BM25 ranks them, the test came first.
    assert _plain_first(index, question) == "testing/test_fixtures.py"
