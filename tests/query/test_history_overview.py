"""Questions any history answers without naming a time, a file or a person: "what changed
recently?" is answered with the newest commits, "who are the main contributors?" with the authors
ranked by their commits; the same words about something else are still not about the repository.
Asked of a repository the size of a real one, as a user asks."""

from __future__ import annotations

import pytest
from llama_index.core.schema import NodeWithScore
from support.gitrepo import GitRepo

from arela_index.index import ArelaIndex

TOPICS = """broker partition offset consume produce retry schedule checkpoint serializer window
watermark sink source level point name record batch topic group lag""".split()  # noqa: SIM905
VERBS = """open close read write flush reset parse render merge wait fetch store load drop
seek poll ack nack split join encode decode verify track emit""".split()  # noqa: SIM905
# Who wrote the commits after the first, oldest first: Ada most, then Bob, then Cy.
AUTHORS = ["Ada Lovelace"] * 7 + ["Bob Stone"] * 5 + ["Cy Young"] * 2
AUTHORS = [AUTHORS[i] for i in (0, 7, 12, 1, 8, 2, 9, 3, 13, 10, 4, 5, 11, 6)]


class History:
    """A stream library's index and its commits, newest first."""

    def __init__(self, index: ArelaIndex, newest_first: list[str]) -> None:
        self.index, self.newest_first = index, newest_first
        self.retriever = index.as_retriever()

    def ask(self, question: str) -> tuple[list[NodeWithScore], bool]:
        nodes, trace = self.retriever.retrieve_with_trace(question)
        return nodes, trace.out_of_scope


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> History:
    repo = GitRepo(tmp_path_factory.mktemp("overview") / "streams")
    files = {}
    for topic in TOPICS:
        body = "\n".join(
            f"def {verb}_{topic}_{other}(value):\n    return value\n"
            for verb in VERBS
            for other in TOPICS[:8]
        )
        watch = f'def {topic}_changed(old, new):\n    """Whether the {topic} changed."""\n'
        files[f"src/streams/{topic}.py"] = body + "\n" + watch
    files["CHANGES.md"] = "# Changes\n"
    hashes = [repo.commit(files, "the stream processing library", author="Ada Lovelace",
                          date="2024-01-01T10:00:00+00:00")]  # fmt: skip
    for day, author in enumerate(AUTHORS, 2):
        topic = TOPICS[day % len(TOPICS)]
        change = {
            f"src/streams/{topic}.py": files[f"src/streams/{topic}.py"] + f"\nV = {day}\n",
            "CHANGES.md": files["CHANGES.md"] + f"\n- Changed the {topic} defaults.\n",
        }
        files.update(change)
        hashes.append(repo.commit(change, f"Tune the {topic} defaults", author=author,
                                  date=f"2024-01-{day:02d}T10:00:00+00:00"))  # fmt: skip
    index = ArelaIndex.from_repo(
        repo.root, persist_dir=str(repo.root / ".arela"), offline=True, show_progress=False
    )
    return History(index, hashes[::-1])


def commits(nodes: list[NodeWithScore]) -> list[str]:
    return [n.node.metadata["commit"] for n in nodes if n.node.metadata.get("kind") == "commit"]


@pytest.mark.parametrize(
    "question",
    [
        "what changed recently?",
        "list recent commits",
        "show me the latest changes",
        # a word of the history's own beside the phrase, or the phrase said another way
        "what has been worked on recently?",
        "what happened in the repo lately?",
        "what new changes have been made?",
        "which commits are the newest?",
        "what's new in the repo?",
        # a count no one gave
        "what changed in the last few weeks?",
        "show me the last few commits",
        # asked to be summed up, or who has been working on what
        "recap the last few commits",
        "summarize recent changes",
        "catch me up on the last few weeks",
        "what have people been working on lately?",
        # words no list holds: the sentence model reads them as asking the history alone
        "tldr of the recent commits",
        "brief me on recent work",
        "any notable changes lately?",
        "what's the latest?",
    ],
)
def test_what_changed_recently_is_the_newest_commits(history: History, question: str) -> None:
    nodes, refused = history.ask(question)
    found = commits(nodes)
    assert not refused and len(found) >= 3
    assert found == history.newest_first[: len(found)]  # the newest, newest first
    plan = str(nodes[0].node.metadata["plan"])
    assert f"the newest {len(found)} commits" in plan, plan  # every commit it names is shown


def test_a_history_question_in_other_words_says_what_it_read_like_each_time(
    history: History,
) -> None:
    for _ in range(2):  # a new retriever of the same index: not an answer remembered
        nodes, trace = history.index.as_retriever().retrieve_with_trace(
            "what's been going on in the repo?"
        )
        assert [m for m, _ in trace.memories] == ["audit"] and commits(nodes)
        assert any(note.startswith("it asks the history alone, like") for note in trace.notes)


@pytest.mark.parametrize(
    "question",
    [
        "who are the main contributors?",
        "who is the most active contributor?",
        "who commits most often?",
        "list the top contributors by number of commits",
        "who wrote most of the code?",
    ],
)
def test_the_main_contributors_are_the_authors_by_their_commits(
    history: History, question: str
) -> None:
    nodes, refused = history.ask(question)
    assert not refused and nodes
    ranking = nodes[0].node
    assert ranking.metadata["kind"] == "authors"
    lines = ranking.get_content().splitlines()
    # The first commit is Ada's too: 8 of 15, Bob 5, Cy 2.
    assert [line.split(":")[0] for line in lines[1:]] == [
        "1. Ada Lovelace",
        "2. Bob Stone",
        "3. Cy Young",
    ]
    assert "8 commits" in lines[1] and "5 commits" in lines[2] and "2 commits" in lines[3]


def test_the_main_contributors_to_a_file_are_its_authors_by_their_commits(
    history: History,
) -> None:
    nodes, refused = history.ask("who committed most to src/streams/offset.py?")
    assert not refused and nodes and nodes[0].node.metadata["kind"] == "authors"
    lines = nodes[0].node.get_content().splitlines()
    assert "touching src/streams/offset.py" in lines[0]
    assert lines[1:] == ["1. Ada Lovelace: 2 commits (100%), 2024-01-01 to 2024-01-02"]


@pytest.mark.parametrize(
    "question",
    [
        "what changed recently in the EU's data protection rules?",
        "who are the main contributors to climate change?",
        "list recent earthquakes in Japan",
        "what happened lately with the Mars rover?",
        "who commits most often to charity marathons?",
        "what's new in iOS 18?",
        pytest.param(
            "summarize recent changes to the tax code",
            # "Summarize recent changes" is all the sentence model reads: 0.58 to a question of
            # the history's, more than the fitted model's bar (README, *History asked in
            # other words*). Strict: it fails the day the question is refused again.
            marks=pytest.mark.xfail(strict=True, reason="read as asking the history alone"),
        ),
        "recap the last few episodes of the show",
    ],
)
def test_the_same_words_about_something_else_are_not_about_the_repository(
    history: History, question: str
) -> None:
    assert history.ask(question)[1]


@pytest.mark.parametrize(
    ("question", "count"),
    [
        ("show me the last 5 commits", 5),
        ("what were the last 7 commits?", 7),
        ("list the last 12 commits", 12),  # more than an answer holds otherwise
        ("show the 3 newest commits", 3),  # the count before the words
        ("give me a recap of the last 4 commits", 4),  # asked to be summed up
        ("tldr of the last 6 commits", 6),  # in words no list holds: the sentence model's reading
    ],
)
def test_the_last_n_commits_are_all_shown_newest_first(
    history: History, question: str, count: int
) -> None:
    nodes, refused = history.ask(question)
    assert not refused
    assert commits(nodes) == history.newest_first[:count]


def test_what_an_author_changed_is_their_commits_newest_first(history: History) -> None:
    nodes, refused = history.ask("what did Bob Stone change?")
    ada = [n for n in nodes if n.node.metadata.get("author") != "Bob Stone"]
    assert not refused and not ada
    assert len(commits(nodes)) == 5
