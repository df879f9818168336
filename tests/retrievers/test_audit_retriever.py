"""AuditLogRetriever answers when / who / why questions from a scripted history."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from llama_index.core.schema import MetadataMode, NodeWithScore
from support.gitrepo import GitRepo

from arela_index.ingest.scanner import scan_repository
from arela_index.retrievers.audit import AuditLogRetriever
from arela_index.retrievers.router import build_router
from arela_index.steps import arun, run
from arela_index.stores.audit import AuditStore
from arela_index.text.entities import Vocabulary
from arela_index.text.question import Question
from arela_index.trace import Trace

CONFIG = """from pathlib import Path


def parse_config(path):
    return open(path).read()


def load_defaults():
    return {}
"""
CLI = """import sys


def main():
    return Runner().run()


class Runner:
    def run(self):
        return 0
"""
ADR = """# 2. Store history in SQLite

Date: 2024-03-05

## Status

Accepted

## Context

We need full-text search over commits without a server, so we chose SQLite with FTS5.
"""
CHANGELOG = """# Changelog

## 1.1.0 (2024-02-20)
- Defaults come from the environment.

## 1.0.0 (2024-01-15)
- First release with a command line runner.
"""


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A small project: who did what when, with two tags, an ADR and a changelog."""
    repo = GitRepo(tmp_path_factory.mktemp("acme") / "repo")
    c = {}
    c["add"] = repo.commit(
        {"src/app/config.py": CONFIG, "README.md": "# acme\n"},
        "Add config loader",
        author="Alice Liddell",
        date="2024-01-02T10:00:00+01:00",
    )
    c["pathlib"] = repo.commit(
        {"src/app/config.py": CONFIG.replace("open(path).read()", "Path(path).read_text()")},
        "Parse config files with pathlib\n\nUse pathlib.Path so that Windows paths work.",
        author="Bob Stone",
        date="2024-01-10T09:00:00-05:00",
    )
    c["cli"] = repo.commit(
        {"src/app/cli.py": CLI},
        "Add command line runner",
        author="Alice Liddell",
        date="2024-01-15T14:00:00+01:00",
    )
    repo.tag("v1.0")
    cli_retry = CLI.replace("return 0", "return self.retry()")
    c["retry"] = repo.commit(
        {"src/app/cli.py": cli_retry},
        "Retry failed runs",
        author="Carol King",
        date="2024-02-01T11:00:00+00:00",
    )
    config_pathlib = CONFIG.replace("open(path).read()", "Path(path).read_text()")
    c["env"] = repo.commit(
        {"src/app/config.py": config_pathlib.replace("return {}", "return dict(os.environ)")},
        "Read defaults from the environment",
        author="Bob Stone",
        date="2024-02-20T16:00:00+00:00",
    )
    repo.tag("v1.1")
    c["adr"] = repo.commit(
        {"docs/adr/0002-sqlite.md": ADR, "CHANGELOG.md": CHANGELOG},
        "Record the storage decision",
        author="Carol King",
        date="2024-03-05T10:00:00+00:00",
    )
    c["exit"] = repo.commit(
        {"src/app/cli.py": cli_retry.replace("return Runner()", "sys.exit(Runner())")},
        "Fix exit code of main",
        author="Alice Liddell",
        date="2024-03-12T18:30:00+01:00",
    )
    c["root"] = str(repo.root)
    return c


@pytest.fixture(scope="module")
def store(history: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> AuditStore:
    return AuditStore.build(
        scan_repository(history["root"]), tmp_path_factory.mktemp("index") / "audit"
    )


@pytest.fixture(scope="module")
def retriever(store: AuditStore, history: dict[str, str]) -> AuditLogRetriever:
    scan = scan_repository(history["root"])
    symbols = [
        "app.config.parse_config",
        "app.config.load_defaults",
        "app.cli.main",
        "app.cli.Runner",
        "app.cli.Runner.run",
    ]
    vocabulary = Vocabulary(
        symbols=symbols, paths=[f.path for f in scan.files], authors=store.authors()
    )
    return AuditLogRetriever(store, vocabulary=vocabulary, top_k=10)


def commits(results: list[NodeWithScore]) -> list[str]:
    return [r.node.metadata["commit"] for r in results if r.node.metadata["kind"] == "commit"]


def test_when_was_a_file_last_changed_and_why(
    retriever: AuditLogRetriever, history: dict[str, str]
) -> None:
    results = retriever.retrieve("When was src/app/cli.py last changed and why?")
    assert commits(results) == [history["exit"], history["retry"], history["cli"]]
    top = results[0].node
    assert top.metadata["file_path"] == "src/app/cli.py"
    assert top.metadata["author"] == "Alice Liddell"
    assert top.metadata["date"] == "2024-03-12T18:30:00+01:00"
    assert top.text.startswith(
        f"commit {history['exit'][:10]} by Alice Liddell on 2024-03-12T18:30:00+01:00"
    )
    assert "Fix exit code of main" in top.text and "src/app/cli.py (+1 -1)" in top.text
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)


def test_who_changed_a_function(retriever: AuditLogRetriever, history: dict[str, str]) -> None:
    results = retriever.retrieve("who changed `parse_config`?")
    assert set(commits(results)) == {history["add"], history["pathlib"]}
    assert {r.node.metadata["author"] for r in results} == {"Alice Liddell", "Bob Stone"}
    assert all(r.node.metadata["symbol"] == "parse_config" for r in results)
    # A method: created by one commit ("+def run"), edited inside its body by another (hunk header).
    assert set(commits(retriever.retrieve("who touched Runner.run()"))) == {
        history["cli"],
        history["retry"],
    }


def test_words_rank_the_commits_of_a_named_file(
    retriever: AuditLogRetriever, history: dict[str, str]
) -> None:
    results = retriever.retrieve("who added pathlib support to config.py?")
    assert commits(results)[0] == history["pathlib"]
    assert results[0].node.metadata["author"] == "Bob Stone"


def test_everything_in_a_date_range(retriever: AuditLogRetriever, history: dict[str, str]) -> None:
    results = retriever.retrieve("what changed between 2024-01-05 and 2024-02-05?")
    assert commits(results) == [history["retry"], history["cli"], history["pathlib"]]
    assert "2024-01-05 to 2024-02-05" in results[0].node.metadata["plan"]


def test_a_tag_range_and_since_a_tag(retriever: AuditLogRetriever, history: dict[str, str]) -> None:
    assert commits(retriever.retrieve("what changed between v1.0 and v1.1?")) == [
        history["env"],
        history["retry"],
    ]
    since = commits(retriever.retrieve("what changed since tag v1.1?"))
    assert since == [history["exit"], history["adr"]]


def test_relative_phrases_use_the_newest_commit_not_the_clock(
    retriever: AuditLogRetriever, history: dict[str, str]
) -> None:
    results = retriever.retrieve("what changed last week?")
    assert commits(results) == [
        history["exit"]
    ]  # 2024-03-06..12; the ADR commit of the 5th is older
    assert "relative to the newest commit, 2024-03-12" in results[0].node.metadata["plan"]
    assert commits(retriever.retrieve("show me the last 2 commits")) == [
        history["exit"],
        history["adr"],
    ]
    assert commits(retriever.retrieve("what did the last commit change?")) == [history["exit"]]
    assert commits(retriever.retrieve("who committed last?")) == [history["exit"]]


def test_recently_is_the_newest_commits_or_orders_what_else_is_asked(
    retriever: AuditLogRetriever, history: dict[str, str]
) -> None:
    results = retriever.retrieve("what changed recently?")
    newest = [history[k] for k in ("exit", "adr", "env", "retry", "cli", "pathlib", "add")]
    assert commits(results) == newest  # all seven: fewer than the ten an answer shows
    assert "the newest 10 commits" in results[0].node.metadata["plan"]
    # Beside a file it bounds nothing: that file's commits, newest first.
    named = commits(retriever.retrieve("who changed src/app/config.py recently?"))
    assert named == [history["env"], history["pathlib"], history["add"]]


def test_the_main_contributors_are_the_authors_by_their_commits(
    retriever: AuditLogRetriever,
) -> None:
    results = retriever.retrieve("who are the main contributors?")
    assert [r.node.metadata["kind"] for r in results] == ["authors"]
    lines = results[0].node.get_content().splitlines()
    assert "7 commits by 3 authors, 2024-01-02 to 2024-03-12" in lines[0]
    assert lines[1].startswith("1. Alice Liddell: 3 commits (43%)")
    assert [line.split(":")[0] for line in lines[2:]] == ["2. Carol King", "3. Bob Stone"]
    # Within a time or a file the question names.
    in_cli = retriever.retrieve("who committed most to src/app/cli.py?")[0].node.get_content()
    assert "touching src/app/cli.py" in in_cli.splitlines()[0]
    assert in_cli.splitlines()[1:] == [
        "1. Alice Liddell: 2 commits (67%), 2024-01-15 to 2024-03-12",
        "2. Carol King: 1 commit (33%), 2024-02-01",
    ]
    since = retriever.retrieve("who was the most active committer since February 2024?")
    assert since[0].node.get_content().splitlines()[1].startswith("1. Carol King: 2 commits")


def test_first_and_introduced_go_oldest_first(
    retriever: AuditLogRetriever, history: dict[str, str]
) -> None:
    assert commits(retriever.retrieve("what was the very first commit?"))[0] == history["add"]
    assert commits(retriever.retrieve("when was src/app/cli.py created?"))[0] == history["cli"]


def test_what_did_someone_change(retriever: AuditLogRetriever, history: dict[str, str]) -> None:
    results = retriever.retrieve("what did Carol change?")
    assert commits(results) == [history["adr"], history["retry"]]
    assert all(r.node.metadata["kind"] == "commit" for r in results)
    assert commits(retriever.retrieve("what did Bob Stone change in January 2024?")) == [
        history["pathlib"]
    ]


def test_decision_records(retriever: AuditLogRetriever) -> None:
    results = retriever.retrieve("why did we choose SQLite?")
    top = results[0].node
    assert top.metadata["kind"] == "decision"
    assert top.metadata["file_path"] == "docs/adr/0002-sqlite.md"
    assert top.metadata["status"] == "Accepted" and top.metadata["date"] == "2024-03-05"
    assert "Store history in SQLite" in top.text


def test_changelog_sections(retriever: AuditLogRetriever) -> None:
    results = retriever.retrieve("what's new in 1.1.0?")
    decisions = [r.node for r in results if r.node.metadata["kind"] == "decision"]
    assert decisions[0].metadata["version"] == "1.1.0"
    assert decisions[0].metadata["date"] == "2024-02-20"
    assert "Defaults come from the environment" in decisions[0].text
    assert results[0].score == 1.0


def test_nothing_found_is_an_empty_list(retriever: AuditLogRetriever) -> None:
    assert retriever.retrieve("zebra quantum marmalade") == []
    assert retriever.retrieve("   ") == []
    assert retriever.retrieve("what changed in 1999?") == []


@pytest.mark.parametrize(
    "hostile",
    [
        'NEAR("config" OR * - ^',
        '"',
        "config AND NOT main OR",
        "col:x -y* ^z",
        "'; DROP TABLE commits; --",
    ],
)
def test_hostile_text_is_searched_not_executed(retriever: AuditLogRetriever, hostile: str) -> None:
    results = retriever.retrieve(hostile)
    assert all(0.0 <= (r.score or 0.0) <= 1.0 for r in results)
    if "config" in hostile:
        assert results


def test_nodes_are_fresh_and_keep_bookkeeping_out_of_the_llm_view(
    retriever: AuditLogRetriever,
) -> None:
    first = retriever.retrieve("Fix exit code")
    first[0].node.metadata["author"] = "Mallory"
    second = retriever.retrieve("Fix exit code")
    assert second[0].node.metadata["author"] == "Alice Liddell"
    assert first[0].node is not second[0].node
    node = second[0].node
    assert node.metadata["memory"] == "audit" and node.metadata["kind"] == "commit"
    seen = node.get_content(MetadataMode.LLM)
    assert "trace" not in seen and "retriever" not in seen and "Alice Liddell" in seen


def test_trace_plan_says_how_the_question_was_read(retriever: AuditLogRetriever) -> None:
    plan = retriever.plan("When did Bob Stone last change src/app/config.py since v1.0?")
    assert plan.authors == ["Bob Stone"]
    assert plan.paths == ["src/app/config.py"]
    assert plan.order == "newest"
    assert plan.window is not None and "after tag v1.0" in plan.window.text
    assert "author Bob Stone" in plan.describe() and "file src/app/config.py" in plan.describe()


def test_a_lower_case_word_is_not_an_author(git_repo: GitRepo, tmp_path: Path) -> None:
    git_repo.commit(
        {"runner.py": "x = 1\n"},
        "Speed up the test runner",
        author="Test",
        date="2024-05-01T10:00:00+00:00",
    )
    git_repo.commit(
        {"other.py": "y = 1\n"},
        "Speed up the other runner",
        author="Ann",
        date="2024-05-02T10:00:00+00:00",
    )
    store = AuditStore.build(scan_repository(git_repo.root), tmp_path / "audit")
    retriever = AuditLogRetriever(store, top_k=5)
    assert retriever.plan("who sped up the test runner?").authors == []
    assert len(commits(retriever.retrieve("who sped up the test runner?"))) == 2
    assert retriever.plan("what did Test change?").authors == ["Test"]


def test_an_author_named_by_a_handle_is_found_with_or_without_its_at(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    """A .mailmap may name an author by a handle ("@octo-cat"): "what did @octo-cat change?" and
    "what did octo-cat change?" are about that author's commits."""
    git_repo.write({".mailmap": "@octo-cat <octo@example.com> Octo Cat <octo@example.com>\n"})
    mine = git_repo.commit(
        {"runner.py": "x = 1\n"}, "Speed up the runner", author="Octo Cat", email="octo@example.com"
    )
    git_repo.commit({"other.py": "y = 1\n"}, "Add the other runner", author="Ann")
    retriever = AuditLogRetriever(
        AuditStore.build(scan_repository(git_repo.root), tmp_path / "audit"), top_k=5
    )
    for question in ("what did @octo-cat change?", "what did octo-cat change?"):
        assert retriever.plan(question).authors == ["@octo-cat"], question
        assert commits(retriever.retrieve(question)) == [mine], question
    assert retriever.plan("what did octo change?").authors == []


def test_a_full_name_is_not_read_as_the_author_its_first_name_is(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    """With an author called Matthew and one called Matthew Riedel, "what did Matthew Riedel
    change?" is about the second alone, and "what did Matthew change?" about the first."""
    first = git_repo.commit({"a.py": "x = 1\n"}, "Add a", author="Matthew", email="m@example.com")
    second = git_repo.commit({"b.py": "y = 1\n"}, "Add b", author="Matthew Riedel")
    retriever = AuditLogRetriever(
        AuditStore.build(scan_repository(git_repo.root), tmp_path / "audit"), top_k=5
    )
    assert retriever.plan("what did Matthew Riedel change?").authors == ["Matthew Riedel"]
    assert commits(retriever.retrieve("what did Matthew Riedel change?")) == [second]
    assert commits(retriever.retrieve("what did Matthew change?")) == [first]


def test_a_deleted_file_is_still_known_to_history(git_repo: GitRepo, tmp_path: Path) -> None:
    created = git_repo.commit(
        {"old_tool.py": "x = 1\n", "keep.py": "y = 1\n"},
        "Add the old tool",
        date="2024-05-01T10:00:00+00:00",
    )
    gone = git_repo.commit(
        delete=("old_tool.py",), message="Retire the old tool", date="2024-05-02T10:00:00+00:00"
    )
    scan = scan_repository(git_repo.root)
    store = AuditStore.build(scan, tmp_path / "audit")
    vocabulary = Vocabulary(paths=[f.path for f in scan.files], authors=store.authors())
    retriever = AuditLogRetriever(store, vocabulary=vocabulary)
    assert retriever.plan("when was old_tool.py deleted?").paths == ["old_tool.py"]
    assert commits(retriever.retrieve("when was old_tool.py last changed?")) == [gone, created]
    # Found by reading history's paths for the one asked about, not by indexing them all.
    assert "history_vocabulary" not in vars(store)


def test_a_file_in_a_dot_folder_is_the_one_asked_about(git_repo: GitRepo, tmp_path: Path) -> None:
    ci = git_repo.commit(
        {".github/workflows/ci.yml": "on: push\n", "app.py": "x = 1\n"},
        "Add the CI workflow",
        date="2024-05-01T10:00:00+00:00",
    )
    git_repo.commit({"app.py": "x = 2\n"}, "Change the app", date="2024-05-02T10:00:00+00:00")
    bumped = git_repo.commit(
        {".github/workflows/ci.yml": "on: [push, pull_request]\n"},
        "Run CI on pull requests",
        date="2024-05-03T10:00:00+00:00",
    )
    scan = scan_repository(git_repo.root)
    store = AuditStore.build(scan, tmp_path / "audit")
    vocabulary = Vocabulary(paths=[f.path for f in scan.files], authors=store.authors())
    retriever = AuditLogRetriever(store, vocabulary=vocabulary)
    question = "what changed in ./.github/workflows/ci.yml?"
    assert retriever.plan(question).paths == [".github/workflows/ci.yml"]
    assert commits(retriever.retrieve(question)) == [bumped, ci]


def test_an_empty_memory_answers_nothing(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x = 1\n")
    store = AuditStore.build(scan_repository(tmp_path / "src"), tmp_path / "audit")
    assert AuditLogRetriever(store).retrieve("what changed last week?") == []


def test_a_rewrite_keeps_the_question_s_limits(
    retriever: AuditLogRetriever, history: dict[str, str]
) -> None:
    """A retry's query may drop the time phrase and the person: the limits are the question's."""
    asked = Question.read("what did Bob Stone change in February 2024?")
    assert commits(retriever.ask(asked)) == [history["env"]]
    rewritten = asked.rewritten("config")
    plan = retriever.plan(rewritten)
    assert plan.authors == ["Bob Stone"] and plan.window is not None
    assert plan.window.phrase == "in February 2024"
    assert commits(retriever.ask(rewritten)) == [history["env"]]
    # The same word asked afresh is limited by nothing: every commit of config.py.
    fresh = commits(retriever.ask(Question.read("config")))
    assert set(fresh) == {history["add"], history["pathlib"], history["env"]}


def test_a_rewrite_keeps_its_limits_through_a_router_sync_or_async(
    retriever: AuditLogRetriever, history: dict[str, str]
) -> None:
    rewritten = Question.read("what did Bob Stone change in February 2024?").rewritten("config")
    router = build_router(None, None, retriever)
    found = run(router.fetch_steps(["audit"], rewritten, Trace()))
    assert commits(found) == [history["env"]]
    found = asyncio.run(arun(router.fetch_steps(["audit"], rewritten, Trace())))
    assert commits(found) == [history["env"]]
    assert commits(asyncio.run(retriever.aretrieve(rewritten.bundle()))) == [history["env"]]


def test_the_plan_cuts_the_time_phrase_a_rewrite_put_back(retriever: AuditLogRetriever) -> None:
    asked = Question.read("who changed config.py in January 2024?")
    plan = retriever.plan(asked.rewritten("config.py in January 2024"))
    assert plan.window is not None and plan.window.start is not None
    assert plan.window.start.month == 1 and "january" not in plan.terms
