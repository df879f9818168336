"""History questions keep their limits (years, people) through every retry, end to end: the
answer never trades the year or the person asked about for others, and a person's name is never
rewritten as an identifier that looks like it."""

from __future__ import annotations

import pytest
from support.gitrepo import GitRepo

from arela_index.index import ArelaIndex
from arela_index.query.rewrite import kept_limits, offline_rewrite
from arela_index.text.entities import Vocabulary
from arela_index.text.question import Question

SESSIONS = "def load(data):\n    return dict(data)\n\n\nclass SessionInterface:\n    pass\n"


@pytest.fixture(scope="module")
def flaskish(tmp_path_factory: pytest.TempPathFactory) -> ArelaIndex:
    repo = GitRepo(tmp_path_factory.mktemp("limits") / "flaskish")
    repo.commit(
        {"src/flaskish/sessions.py": SESSIONS, "README.md": "# flaskish\n"},
        "Start the session support",
        author="Armin Ronacher",
        date="2010-04-06T10:00:00+00:00",
    )
    for date, who in (
        ("2022-05-01", "David Lord"),
        ("2023-03-01", "Jane Doe"),
        ("2023-09-01", "David Lord"),
        ("2024-05-01", "David Lord"),
        ("2026-05-01", "Jane Doe"),
    ):
        body = SESSIONS + f"\n\nCHANGED = {date!r}\n"
        repo.commit(
            {"src/flaskish/sessions.py": body},
            f"Sessions: cookie handling of {date}",
            author=who,
            date=f"{date}T10:00:00+00:00",
        )
    return ArelaIndex.build(repo.root, offline=True, persist_dir=str(repo.root / ".arela"))


def test_a_year_limits_the_answer(flaskish: ArelaIndex) -> None:
    nodes = flaskish.as_retriever(similarity_top_k=8).retrieve("who changed sessions.py in 2023?")
    commits = [n for n in nodes if n.node.metadata.get("commit")]
    assert commits and all(str(n.node.metadata["date"]).startswith("2023") for n in commits)
    assert {n.node.metadata["author"] for n in commits} == {"Jane Doe", "David Lord"}


def test_a_person_before_the_history_began_is_not_found(flaskish: ArelaIndex) -> None:
    response = flaskish.as_query_engine().query("what did David Lord change in 2009?")
    assert not response.source_nodes
    assert response.metadata["arela"].steps[-1]["kind"] == "abstain"


def test_a_retry_keeps_the_year_and_never_makes_a_surname_an_identifier() -> None:
    vocabulary = Vocabulary(
        symbols=["flaskish.sessions.load"],
        paths=["src/flaskish/sessions.py"],
        authors=["David Lord"],
    )
    question = Question.read("what did David Lord change in 2009?")
    rewritten = kept_limits(question, offline_rewrite(question, vocabulary), vocabulary)
    assert "in 2009" in rewritten and "lord" in rewritten.lower()
    assert "load" not in rewritten.split()
