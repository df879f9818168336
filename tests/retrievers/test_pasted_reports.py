"""A pasted issue report that quotes the failing test is about the source that fixes it: its
test code does not make it a question about tests, which would rank the test suite first."""

from __future__ import annotations

import pytest
from support.engine_repos import one_commit_index

from arela_index.index import ArelaIndex
from arela_index.text.question import Question
from arela_index.text.shape import read_question

PARSER = '''"""Reading the settings file."""


def parse_settings(text):
    """Each `key = value` line of the settings file, as a dict."""
    pairs = {}
    for line in text.splitlines():
        key, _, value = line.partition("=")
        pairs[key.strip()] = value.strip()
    return pairs
'''
# Tests of every module: the words of a test report lean toward them.
TESTS = {
    f"tests/test_{name}.py": "\n\n".join(
        f"def test_{name}_{case}(tmp_path):\n"
        f"    fixture = tmp_path / '{case}.txt'\n"
        f"    assert {name}(fixture.read_text()) == expected_{case}()  # pytest fixture"
        for case in ("empty", "comment", "blank_line", "unicode", "long_value")
    )
    for name in ("parse_settings", "render", "merge")
}
REPORT = (
    "parse_settings fails on an empty settings file. Running pytest with this test:\n\n"
    "def test_parse_settings_empty(tmp_path):\n"
    "    fixture = tmp_path / 'empty.txt'\n"
    "    fixture.write_text('')\n"
    "    assert parse_settings(fixture.read_text()) == {}\n\n"
    "the assert fails: the result is {'': ''} instead of an empty dict. The test passes with "
    "a settings file that has one line. Expected: an empty file gives no settings."
)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> ArelaIndex:
    files: dict[str, str | bytes] = {
        "src/app/settings.py": PARSER,
        "src/app/render.py": "def render(rows):\n    return '\\n'.join(rows)\n",
        "src/app/merge.py": "def merge(a, b):\n    return {**a, **b}\n",
        **TESTS,
    }
    return one_commit_index(tmp_path_factory.mktemp("reports"), "reports", files)


class _SaysAboutTests:
    """The "about_tests" model as it reads a report quoting its test: about tests."""

    def decide(self, evidence: dict[str, float]) -> bool:
        return True


@pytest.mark.parametrize(
    ("question", "first"),
    [
        (REPORT, "src/app/settings.py"),
        ("which test checks an empty settings file?", "tests/test_parse_settings.py"),
    ],
)
def test_a_pasted_report_is_about_the_source_whatever_its_test_code_says(
    index: ArelaIndex, question: str, first: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    retriever = index.code_retriever(top_k=5)
    monkeypatch.setattr(retriever, "_about_tests", _SaysAboutTests())
    hits = retriever.search(question, source_first=True)
    assert hits[0].node.metadata["file_path"] == first


def test_a_report_asked_through_the_engine_is_read_with_its_line_breaks(
    index: ArelaIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its words on one line are no report (one paragraph, no code block, under 80 words): the
    # question's shape, read once as written, says it is one.
    question = Question.read(REPORT)
    assert question.shape.report and not read_question(question.text).report
    retriever = index.code_retriever(top_k=5)
    monkeypatch.setattr(retriever, "_about_tests", _SaysAboutTests())
    hits = retriever.ask(question, ("conceptual",))
    assert hits[0].node.metadata["file_path"] == "src/app/settings.py"
