"""Pasted bug reports and long questions through `arela ask` on a real indexed repository: the
code memory is always searched, a version or "recently" in a report does not make it a history
question, words inside a traceback are not phrasing cues, and history still answers history."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.engine_repos import Indexed, indexed

from arela_index.cli.main import main

# Every cue the rules used to trip on: a release, "recently", "callers", "the same", "instead
# of", an issue template's "What happened", and a traceback.
REPORT = """Scheduler rejects cron steps in 0.2.0

Recently, after the 0.2.0 release, scheduling a job with a step fails. All the callers of
`Scheduler.schedule` get the same error instead of a scheduled job:

```
Traceback (most recent call last):
  File "app.py", line 12, in <module>
    scheduler.schedule(job, "*/5 * * *")
  File "src/taskq/scheduler.py", line 20, in schedule
    job.fields = parse_cron(cron)
  File "src/taskq/scheduler.py", line 10, in parse_cron
    raise ValueError("a cron expression has five fields")
ValueError: a cron expression has five fields
```

**What happened**: the job was never queued. Tested on taskq 0.2.0 with Python 3.11.
"""


@pytest.fixture(scope="module")
def taskq(tmp_path_factory: pytest.TempPathFactory) -> Indexed:
    return indexed("taskq", tmp_path_factory.mktemp("reports"))


def ask(taskq: Indexed, capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    common = ["--repo", str(taskq.repo.root), "--persist-dir", str(taskq.persist_dir), "--offline"]
    assert main(["ask", *args, *common, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def files(answer: dict[str, Any]) -> list[str]:
    return [s["file_path"] for s in answer["sources"]]


def test_a_pasted_bug_report_with_a_version_and_a_traceback_searches_code(
    taskq: Indexed, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    issue = tmp_path / "issue.md"
    issue.write_text(REPORT)
    answer = ask(taskq, capsys, "--file", str(issue))
    assert "code" in answer["memories"] and "audit" not in answer["memories"]
    assert "temporal" not in answer["intent"] and "comparative" not in answer["intent"]
    assert answer["abstained"] is False
    assert "src/taskq/scheduler.py" in files(answer)


def test_a_one_line_bug_report_with_a_version_is_not_a_history_question(
    taskq: Indexed, capsys: pytest.CaptureFixture[str]
) -> None:
    answer = ask(taskq, capsys, "parse_cron raises ValueError on '*/5' in 0.2.0")
    assert "code" in answer["memories"] and "audit" not in answer["memories"]
    assert answer["abstained"] is False
    assert "src/taskq/scheduler.py" in files(answer)


def test_why_does_x_inherit_from_y_searches_code_and_graph(
    taskq: Indexed, capsys: pytest.CaptureFixture[str]
) -> None:
    answer = ask(taskq, capsys, "why does RedisBackend inherit from StorageBackend?")
    assert {"code", "graph"} <= set(answer["memories"])
    assert answer["abstained"] is False
    assert "src/taskq/storage/redis_backend.py" in files(answer)


def test_who_changed_something_last_week_still_reads_history_alone(
    taskq: Indexed, capsys: pytest.CaptureFixture[str]
) -> None:
    answer = ask(taskq, capsys, "who changed load_config last week?")
    assert answer["memories"] == ["audit"] and answer["intent"] == ["temporal"]


def test_a_long_question_about_behaviour_keeps_code_beside_the_graph(
    taskq: Indexed, capsys: pytest.CaptureFixture[str]
) -> None:
    answer = ask(
        taskq,
        capsys,
        "Where is the call chain through which a job handed to the scheduler ends up being "
        "retried with exponential backoff when it fails?",
    )
    assert {"code", "graph"} <= set(answer["memories"])
    assert "src/taskq/worker.py" in files(answer)
