"""`arela ask` on a real indexed repository: the JSON contract key by key, batch mode, --explain,
--top-k and exit codes; once through the real `python -m arela_index` entry point."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.engine_repos import Indexed, indexed

from arela_index.cli.main import main
from arela_index.nodes import METADATA_KEYS

SOURCE_KEYS = {*METADATA_KEYS, "score", "citation", "text"}
TOP_KEYS = {
    "question",
    "intent",
    "memories",
    "abstained",
    "answer",
    "sources",
    "retries",
    "trace",
    "timings_ms",
}
STEP_KINDS = {"route", "grade", "retry", "fallback", "stop", "abstain", "memory_failed"}


@pytest.fixture(scope="module")
def taskq(tmp_path_factory: pytest.TempPathFactory) -> Indexed:
    return indexed("taskq", tmp_path_factory.mktemp("ask"))


def ask(
    taskq: Indexed,
    capsys: pytest.CaptureFixture[str],
    *args: str,
    stdin: str | None = None,
    monkeypatch: pytest.MonkeyPatch | None = None,
) -> tuple[int, str, str]:
    if stdin is not None:
        assert monkeypatch is not None
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    common = ["--repo", str(taskq.repo.root), "--persist-dir", str(taskq.persist_dir), "--offline"]
    code = main(["ask", *args, *common])
    out, err = capsys.readouterr()
    return code, out, err


def check_contract(answer: dict[str, Any]) -> None:
    """Every documented key, with its documented type."""
    assert set(answer) >= TOP_KEYS
    assert isinstance(answer["question"], str) and isinstance(answer["answer"], str)
    assert isinstance(answer["abstained"], bool) and isinstance(answer["retries"], int)
    assert all(isinstance(x, str) for x in answer["intent"] + answer["memories"])
    assert set(answer["timings_ms"]) == {"route", "retrieve", "grade", "answer", "total"}
    assert all(isinstance(v, int | float) and v >= 0 for v in answer["timings_ms"].values())
    route, *later = answer["trace"]
    assert route["kind"] == "route" and {"stage", "intents", "memories", "notes"} <= set(route)
    assert [m["memory"] for m in route["memories"]] == answer["memories"]
    assert [i["intent"] for i in route["intents"]] == answer["intent"]
    assert all(step["kind"] in STEP_KINDS for step in later)
    assert answer["retries"] == sum(step["kind"] == "retry" for step in later)
    scores = [s["score"] for s in answer["sources"]]
    assert scores == sorted(scores, reverse=True)  # best first
    for source in answer["sources"]:
        assert set(source) == SOURCE_KEYS
        assert source["memory"] in {"code", "graph", "audit"} and isinstance(source["text"], str)
        assert isinstance(source["score"], float) and 0.0 <= source["score"] <= 1.0
        for key in ("start_line", "end_line"):
            assert source[key] is None or isinstance(source[key], int)
        for key in ("file_path", "symbol", "kind", "commit", "author", "date", "language"):
            assert source[key] is None or isinstance(source[key], str)
        assert source["citation"] in answer["answer"]


def test_json_answer_follows_the_contract(
    taskq: Indexed, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = ask(taskq, capsys, "who calls resolve_envvar?", "--json")
    assert code == 0 and len(out.splitlines()) == 1
    answer = json.loads(out)
    check_contract(answer)
    assert answer["question"] == "who calls resolve_envvar?"
    assert answer["intent"] == ["structural"] and answer["memories"] == ["graph"]
    assert answer["abstained"] is False and answer["retries"] == 0
    caller = next(s for s in answer["sources"] if s["symbol"] == "taskq.config.load_config")
    assert caller["file_path"] == "src/taskq/config.py" and caller["kind"] == "relation"
    assert (
        caller["citation"] == f"[src/taskq/config.py:{caller['start_line']}-{caller['end_line']}]"
    )


def test_json_history_sources_carry_commit_author_and_date(
    taskq: Indexed, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = ask(taskq, capsys, "who added the Redis backend?", "--json")
    answer = json.loads(out)
    check_contract(answer)
    assert code == 0
    best = answer["sources"][0]
    assert best["commit"] == taskq.sha_of("Add Redis storage backend")
    assert (best["author"], best["date"][:10], best["kind"]) == (
        "Carol Diaz",
        "2024-03-18",
        "commit",
    )
    assert best["citation"] == f"[commit {best['commit'][:7]}]"


def test_json_abstention_and_retries(taskq: Indexed, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = ask(taskq, capsys, "what does frobnicate_widgets do?", "--json")
    answer = json.loads(out)
    check_contract(answer)
    assert code == 0 and answer["abstained"] is True and answer["sources"] == []
    # A name nothing holds: abstained at once, saying so (no retry needed to tell).
    assert answer["retries"] == 0 and answer["trace"][-1]["kind"] == "abstain"
    assert answer["intent"] == ["out_of_scope"] and answer["memories"] == []
    code, out, _ = ask(taskq, capsys, "what is the capital of France?", "--json")
    answer = json.loads(out)
    check_contract(answer)
    assert answer["intent"] == ["out_of_scope"] and answer["memories"] == []
    assert answer["abstained"] is True and answer["retries"] == 0


def test_batch_mode_answers_one_line_per_question(
    taskq: Indexed, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    questions = [
        "who calls resolve_envvar?",
        "what is the capital of France?",
        "who added the Redis backend?",
    ]
    code, out, _ = ask(
        taskq, capsys, "-", "--json", stdin="\n".join(questions) + "\n", monkeypatch=monkeypatch
    )
    lines = out.splitlines()
    assert code == 0 and len(lines) == 3
    answers = [json.loads(line) for line in lines]
    assert [a["question"] for a in answers] == questions
    assert [a["abstained"] for a in answers] == [False, True, False]
    for answer in answers:
        check_contract(answer)
    code, out, _ = ask(taskq, capsys, "-", stdin="\n".join(questions), monkeypatch=monkeypatch)
    lines = out.splitlines()
    assert code == 0 and len(lines) == 3
    assert lines[0].startswith("Most relevant context for: who calls resolve_envvar? (offline:")
    assert lines[1].startswith("This question does not seem to be about the repository")


def test_batch_mode_reports_a_bad_line_and_goes_on(
    taskq: Indexed, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Control characters only: a line that is not blank, and no question either.
    stdin = "who calls resolve_envvar?\n\x01\x02\nwho added the Redis backend?\n"
    code, out, _ = ask(taskq, capsys, "-", "--json", stdin=stdin, monkeypatch=monkeypatch)
    first, bad, last = (json.loads(line) for line in out.splitlines())
    assert code == 2
    assert bad == {
        "question": "\x01\x02",
        "error": "the question is empty: ask something about the repository, e.g. `who calls main?`",
    }
    assert not first["abstained"] and not last["abstained"]


ISSUE = """Scheduler crashes on a cron expression with a step

Since upgrading to taskq 2.1 (released last week), scheduling a job with `*/5 * * * *` fails:

```
Traceback (most recent call last):
  File "app.py", line 12, in <module>
    scheduler.schedule(job, "*/5 * * * *")
  File "src/taskq/scheduler.py", line 16, in schedule
    job.fields = parse_cron(cron)
ValueError: invalid literal for int() with base 10: '*/5'
```

Expected: the job runs every five minutes.
"""


def test_a_whole_file_is_one_question(
    taskq: Indexed, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    issue = tmp_path / "issue.md"
    issue.write_text(ISSUE)
    code, out, _ = ask(taskq, capsys, "--file", str(issue), "--json")
    (line,) = out.splitlines()
    answer = json.loads(line)
    check_contract(answer)
    assert code == 0 and answer["question"] == ISSUE
    # A pasted report naming code the repository holds is never abstained, whatever its
    # version numbers and dates say.
    assert not answer["abstained"] and "code" in answer["memories"]
    files = list(dict.fromkeys(s["file_path"] for s in answer["sources"]))
    assert "src/taskq/scheduler.py" in files
    # Where is the bug? The answer ranks files, not one or two sources.
    assert len(files) >= 3, files


def test_a_whole_stdin_is_one_question(
    taskq: Indexed, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = ask(taskq, capsys, "--file", "-", "--json", stdin=ISSUE, monkeypatch=monkeypatch)
    (line,) = out.splitlines()
    assert code == 0 and json.loads(line)["question"] == ISSUE


def test_jsonl_batch_keeps_ids_and_reports_bad_lines(
    taskq: Indexed, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    batch = tmp_path / "questions.jsonl"
    batch.write_text(
        json.dumps({"id": "issue-7", "question": ISSUE})
        + "\nnot json\n"
        + json.dumps({"question": "who calls resolve_envvar?"})
        + "\n"
    )
    code, out, _ = ask(taskq, capsys, "--jsonl", "--file", str(batch))
    first, bad, last = (json.loads(line) for line in out.splitlines())
    assert code == 2
    assert first["id"] == "issue-7" and first["question"] == ISSUE
    assert set(bad) == {"question", "error"} and bad["error"].startswith("line 2 is not a JSON")
    assert "id" not in last and not last["abstained"]


def test_jsonl_from_stdin_as_the_help_says_blank_lines_skipped_errors_keep_their_id(
    taskq: Indexed,
) -> None:
    from support.harness import run_cli

    # `cat batch.jsonl | arela ask --jsonl --repo R`, through the real entry point.
    batch = "\n".join(
        [
            json.dumps({"id": 1, "question": "who calls resolve_envvar?"}),
            "",
            json.dumps({"id": 6}),
            "   ",
            json.dumps({"id": "last", "question": "what does parse_config return?"}),
        ]
    )
    common = ["--repo", str(taskq.repo.root), "--persist-dir", str(taskq.persist_dir), "--offline"]
    run = run_cli("ask", "--jsonl", *common, stdin=batch + "\n")
    first, bad, last = (json.loads(line) for line in run.out.splitlines())
    assert run.code == 2  # a line was bad; the others were answered
    assert first["id"] == 1 and not first["abstained"]
    assert bad["id"] == 6 and bad["error"].startswith("line 3 is not a JSON object")
    assert last["id"] == "last" and last["question"] == "what does parse_config return?"


def test_blank_lines_of_ask_dash_are_skipped_as_in_jsonl(
    taskq: Indexed, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    questions = "who calls resolve_envvar?\n\n  \nwhat does parse_config return?\n"
    code, out, _ = ask(taskq, capsys, "-", "--json", stdin=questions, monkeypatch=monkeypatch)
    answers = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and all("error" not in a for a in answers)
    assert [a["question"] for a in answers] == [
        "who calls resolve_envvar?",
        "what does parse_config return?",
    ]


def test_a_missing_question_file_is_one_line_and_exit_code_2(
    taskq: Indexed, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = ask(taskq, capsys, "--file", str(tmp_path / "nope.md"))
    assert code == 2 and out == ""
    assert err.startswith("arela: cannot read the question file") and err.count("\n") == 1


def test_explain_prints_the_trace_for_a_person(
    taskq: Indexed, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = ask(
        taskq, capsys, "who calls the function that parses cron expressions?", "--explain"
    )
    assert code == 0
    answer, explained = out.split("\nquestion  ", 1)
    assert answer.startswith("Most relevant context for:")
    rows = explained.splitlines()
    assert rows[0].endswith("who calls the function that parses cron expressions?")
    assert any(r.startswith("intent    structural") for r in rows)
    assert any("retry" in r and "memories=['code']" in r for r in rows)
    # With --json the trace goes to stderr: stdout stays one JSON object per line.
    code, out, err = ask(taskq, capsys, "who calls resolve_envvar?", "--json", "--explain")
    json.loads(out)
    assert "question  who calls resolve_envvar?" in err and "steps" in err


def test_top_k_caps_the_sources(taskq: Indexed, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = ask(taskq, capsys, "what does parse_config return?", "--json", "--top-k", "2")
    answer = json.loads(out)
    assert code == 0 and 1 <= len(answer["sources"]) <= 2


def test_an_empty_question_is_one_line_and_exit_code_2(
    taskq: Indexed, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = ask(taskq, capsys, "   ")
    assert code == 2 and out == ""
    assert err == (
        "arela: the question is empty: ask something about the repository, e.g. `who calls main?`\n"
    )


def test_a_bad_top_k_is_a_usage_error(taskq: Indexed, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        ask(taskq, capsys, "who calls main?", "--top-k", "0")
    assert exited.value.code == 2
    assert "--top-k: must be at least 1" in capsys.readouterr().err


def test_a_missing_repository_is_one_line_and_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["ask", "who calls main?", "--repo", str(tmp_path / "nowhere"), "--offline"])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert captured.err == (
        f"arela: no such folder: {tmp_path / 'nowhere'} (give the path of a repository)\n"
    )


def test_the_real_entry_point_in_batch_mode(taskq: Indexed) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "arela_index", "ask", "-", "--json", "--offline",
         "--repo", str(taskq.repo.root), "--persist-dir", str(taskq.persist_dir)],
        input="who calls resolve_envvar?\nwhat is the capital of France?\n",
        capture_output=True, text=True, timeout=120, env={**os.environ, "ARELA_DEBUG": ""},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a["abstained"] for a in answers] == [False, True]
    assert "runs offline" in done.stderr  # said once, on stderr, never in the JSON
