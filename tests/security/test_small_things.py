"""The small things seen on the way (issue 29, point 5): batch ids that are not JSON numbers, a
question that is not text, top_k checked alike, a full disk, control characters in file names,
fix hints with the real paths, and a question while another build runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.gitrepo import GitRepo
from support.harness import PACKAGE_ROOT, assert_one_clear_line, run_cli

from arela_index.errors import ArelaError
from arela_index.index import ArelaIndex

FILES = {
    "README.md": "# ledger\n\nKeeps accounts and posts entries.\n",
    "ledger/entries.py": "def post_entry(book, entry):\n    book.append(entry)\n    return book\n",
}


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> tuple[GitRepo, Path]:
    base = tmp_path_factory.mktemp("ledger")
    repo = GitRepo(base / "my repo")  # a space: every hint must quote it
    repo.commit(FILES, "Ledger", author="Ana")
    persist = base / "the index"
    assert run_cli("index", str(repo.root), "--persist-dir", str(persist), "--offline").code == 0
    return repo, persist


def _strict(line: str) -> dict[str, object]:
    def refuse(constant: str) -> object:
        raise ValueError(f"not JSON: {constant}")

    value = json.loads(line, parse_constant=refuse)
    assert isinstance(value, dict)
    return value


def test_jsonl_ids_that_are_no_json_numbers_come_back_as_valid_json(
    ledger: tuple[GitRepo, Path],
) -> None:
    repo, persist = ledger
    lines = [
        '{"id": NaN, "question": "what does post_entry do?"}',
        '{"id": 1e999, "question": "what does post_entry do?"}',
        '{"id": -Infinity, "question": "what does post_entry do?"}',
        '{"id": "q-4", "question": null}',
        '{"id": 5, "question": ["a", "list"]}',
    ]
    run = run_cli(
        "ask", "-", "--jsonl", "--repo", str(repo.root), "--persist-dir", str(persist), "--offline",
        stdin="\n".join(lines) + "\n",
    )  # fmt: skip
    assert run.code == 2  # some lines were errors
    out = [_strict(line) for line in run.out.splitlines()]
    assert [o["id"] for o in out] == ["NaN", "1e999", "-Infinity", "q-4", 5]
    assert all("sources" in o for o in out[:3])
    assert out[3]["error"].startswith('line 4: "question" must be text, not null')  # type: ignore[union-attr]
    assert "not list" in str(out[4]["error"])


@pytest.mark.parametrize("top_k", [0, -3, 2.5, True, "8"])
def test_top_k_is_checked_alike_everywhere(ledger: tuple[GitRepo, Path], top_k: object) -> None:
    _, persist = ledger
    with pytest.raises(ArelaError) as loaded:
        ArelaIndex.load(persist, offline=True, top_k=top_k)
    index = ArelaIndex.load(persist, offline=True)
    for make in (
        lambda: index.as_retriever(top_k=top_k),
        lambda: index.as_retriever(similarity_top_k=top_k),
        lambda: index.as_query_engine(top_k=top_k),
        lambda: index.code_retriever(top_k=top_k),
    ):
        with pytest.raises(ArelaError) as made:
            make()
        assert str(made.value) == str(loaded.value)
    assert "top_k must be a whole number of at least 1" in str(loaded.value)


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MB file system of its own (a tmpfs, so a full disk is real, not simulated)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small file system here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_names_the_folder_and_what_to_free(tmp_path: Path, tiny_disk: Path) -> None:
    repo = GitRepo(tmp_path / "big")
    repo.commit(
        {f"pkg/m{i:03d}.py": f"def func_{i}(x):\n    return x + {i}\n" * 40 for i in range(200)},
        "many modules",
    )
    persist = tiny_disk / "index"
    run = run_cli("index", str(repo.root), "--persist-dir", str(persist), "--offline")
    line = assert_one_clear_line(run, f"the disk holding {persist} is full", "free space")
    assert "--persist-dir" in line and "MB" in line
    assert not [p for p in persist.iterdir() if p.name.startswith("build-")]  # nothing half-made


def test_control_characters_in_file_names_are_printed_escaped(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    name = "src/clear\x1b[2J\u202eyfi.py"
    repo.commit({name: "def clear_screen_name():\n    return 'cleared'\n"}, "odd name")
    persist = tmp_path / "index"
    assert run_cli("index", str(repo.root), "--persist-dir", str(persist), "--offline").code == 0
    run = run_cli("ask", "what does clear_screen_name do?", "--repo", str(repo.root),
                  "--persist-dir", str(persist), "--offline")  # fmt: skip
    assert run.code == 0, run.err
    assert "\x1b" not in run.out and "\u202e" not in run.out
    assert "[src/clear\\x1b[2J\\u202eyfi.py:1-2]" in run.out
    as_json = run_cli("ask", "what does clear_screen_name do?", "--json", "--repo", str(repo.root),
                      "--persist-dir", str(persist), "--offline")  # fmt: skip
    assert json.loads(as_json.out)["sources"][0]["file_path"] == name  # data stays exact


def test_fix_hints_name_the_real_paths_shell_quoted(
    ledger: tuple[GitRepo, Path], tmp_path: Path
) -> None:
    repo, built = ledger
    persist = tmp_path / "damaged index"
    shutil.copytree(built, persist)
    (next(persist.glob("build-*")) / "graph" / "graph.sqlite").write_text("{")
    run = run_cli("ask", "who calls post_entry?", "--repo", str(repo.root),
                  "--persist-dir", str(persist), "--offline")  # fmt: skip
    assert_one_clear_line(
        run, f"`arela index '{repo.root}' --persist-dir '{persist}'`", "graph.sqlite"
    )
    (repo.root / "ledger" / "entries.py").write_text(FILES["ledger/entries.py"] + "# more\n")
    try:
        stale = run_cli("ask", "what does post_entry do?", "--repo", str(repo.root),
                        "--persist-dir", str(built), "--offline")  # fmt: skip
    finally:
        repo.git("checkout", "--", ".")
    assert stale.code == 0
    assert f"run `arela index '{repo.root}' --persist-dir '{built}' --refresh`" in stale.err


def test_from_repo_while_another_build_runs_answers_from_the_good_index(
    ledger: tuple[GitRepo, Path], tmp_path: Path
) -> None:
    repo, _ = ledger
    persist = tmp_path / "index"
    assert run_cli("index", str(repo.root), "--persist-dir", str(persist), "--offline").code == 0
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\nfrom pathlib import Path\n"
         "from arela_index.indexing.persist import build_lock\n"
         f"with build_lock(Path({str(persist)!r})):\n"
         "    print('held', flush=True)\n    time.sleep(60)\n"],
        stdout=subprocess.PIPE, cwd=PACKAGE_ROOT,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        (repo.root / "ledger" / "new.py").write_text("def fresh():\n    return 1\n")
        try:
            index = ArelaIndex.from_repo(repo.root, persist_dir=str(persist), offline=True)
        finally:
            os.unlink(repo.root / "ledger" / "new.py")
        note = next(n for n in index.notes if "is building" in n)
        assert f"pid {holder.pid}" in note and "answering meanwhile from the index built" in note
        response = index.as_query_engine().query("what does post_entry do?")
        assert "ledger/entries.py" in [n.node.metadata["file_path"] for n in response.source_nodes]
    finally:
        holder.kill()
        holder.wait()
