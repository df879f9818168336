"""A question asked of code whose name is an everyday word: "what does mean do?" of a library that
defines `mean` is about that function and is answered with its definition; a question using the
word in its everyday sense ("what does mean time between failures measure?") is still refused.
Asked of a real indexed repository, as a user asks."""

from __future__ import annotations

import pytest
from support.gitrepo import GitRepo

from arela_index.index import ArelaIndex

STATS = '''"""Summary statistics of samples of numbers."""


def mean(values):
    """The arithmetic average of `values`: their total over their count."""
    return total(values) / len(values)


def total(values):
    """The sum of `values`, added in order."""
    result = 0.0
    for value in values:
        result += value
    return result


def spread(values):
    """The variance of `values` around their average."""
    centre = mean(values)
    return mean([(v - centre) ** 2 for v in values])
'''
VECTORS = '''"""Vectors as lists of numbers."""


def inner(left, right):
    """The inner product of two vectors of the same length."""
    return sum(a * b for a, b in zip(left, right))


def norm(vector):
    """The length of a vector: the square root of its inner product with itself."""
    return inner(vector, vector) ** 0.5


def angle_cosine(left, right):
    """The cosine of the angle between two vectors."""
    return inner(left, right) / (norm(left) * norm(right))
'''
README = "# numbox\n\nSmall numeric helpers: summary statistics and vectors of numbers.\n"


@pytest.fixture(scope="module")
def numbox(tmp_path_factory: pytest.TempPathFactory) -> ArelaIndex:
    folder = tmp_path_factory.mktemp("everyday")
    repo = GitRepo(folder / "numbox")
    files = {"numbox/stats.py": STATS, "numbox/vectors.py": VECTORS, "README.md": README}
    repo.commit(files, "summary statistics and vectors")
    return ArelaIndex.build(repo.root, persist_dir=str(folder / "index"), offline=True)


def symbols(nodes: list) -> set[str]:
    return {n.node.metadata.get("symbol", "").rpartition(".")[2] for n in nodes}


@pytest.mark.parametrize(
    ("asked", "answered_by", "everyday"),
    [
        ("who calls inner?", {"norm", "angle_cosine"}, "who calls the shots in a startup?"),
        ("what does inner return?", {"inner"}, "what does inner peace feel like?"),
        ("how does inner work?", {"inner"}, "how does gravity work?"),
        (
            "what calls inner?",
            {"norm", "angle_cosine"},
            "what does mean time between failures measure?",
        ),
    ],
)
def test_a_symbol_named_by_an_everyday_word_is_answered_and_the_word_itself_is_not(
    numbox: ArelaIndex, asked: str, answered_by: set[str], everyday: str
) -> None:
    retriever = numbox.as_retriever()
    nodes, trace = retriever.retrieve_with_trace(asked)
    assert not trace.out_of_scope and answered_by <= symbols(nodes)
    nodes, trace = retriever.retrieve_with_trace(everyday)
    assert trace.out_of_scope and nodes == []


def test_its_definition_is_answered_and_the_everyday_sense_refused(numbox: ArelaIndex) -> None:
    retriever = numbox.as_retriever()
    nodes, trace = retriever.retrieve_with_trace("what does inner return?")
    assert any("def inner(left, right):" in n.node.get_content() for n in nodes)
    nodes, trace = retriever.retrieve_with_trace("who calls the shots in a startup?")
    assert trace.out_of_scope and nodes == []
