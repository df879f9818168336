"""Which files are tests when a question about code ranks source first: a package's `testing`
module (`sphinx.testing`, `xarray.testing`) is source, a root `testing/` folder holds tests."""

from __future__ import annotations

import pytest
from llama_index.core.schema import NodeWithScore
from support.engine_repos import one_commit_index
from support.stock_bm25 import stock_bm25

from arela_index.index import ArelaIndex
from arela_index.text.question import Question
from arela_index.text.tokens import expand_identifiers

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
    "src/docsite/testing/fixtures.py": FIXTURES,
    "testing/test_fixtures.py": ROOT_TEST,
}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> ArelaIndex:
    return one_commit_index(tmp_path_factory.mktemp("test_paths"), "docsite", FILES)


def _files(hits: list[NodeWithScore]) -> list[str]:
    return list(dict.fromkeys(h.node.metadata["file_path"] for h in hits))


def _plain_first(index: ArelaIndex, question: str) -> str:
    """The file of the plain chunk BM25's best chunk (llama_index's retriever)."""
    hit = stock_bm25(index.code.chunks).retrieve(expand_identifiers(question))[0]
    return str(index.code.by_id[hit.node.node_id].metadata["file_path"])


def test_a_packages_testing_module_is_source_and_a_root_testing_folder_holds_tests(
    index: ArelaIndex,
) -> None:
    question = "how is a throwaway site built in a folder?"
    hits = index.code_retriever(top_k=4).ask(Question.read(question), ["factual"])
    assert _files(hits)[:2] == ["src/docsite/testing/fixtures.py", "testing/test_fixtures.py"]
    # Ranked as the plain BM25 ranks them, the test came first.
    assert _plain_first(index, question) == "testing/test_fixtures.py"
