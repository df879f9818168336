"""`arela index` as a user runs it: in a shell (piped or on a terminal) and through `cli.main`."""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from support.gitrepo import GitRepo

from arela_index.cli.main import main
from arela_index.index import ArelaIndex
from arela_index.indexing.persist import current_build

GOOD = {
    "app/main.py": (
        "from app.util import normalise_path\n\n\n"
        "def run(argv: list[str]) -> int:\n"
        '    """Entry point: index every path given on the command line."""\n'
        "    for raw in argv:\n"
        "        print(normalise_path(raw))\n"
        "    return 0\n"
    ),
    "app/util.py": (
        "def normalise_path(raw: str) -> str:\n"
        '    """Forward slashes, no trailing slash, no duplicate separators."""\n'
        '    parts = [p for p in raw.replace("\\\\", "/").split("/") if p]\n'
        '    return "/".join(parts)\n'
    ),
    "cmd/tool.go": 'package main\n\nfunc main() {\n\tprintln("tool")\n}\n',
    "README.md": "# Tool\n\nIndexes paths.\n\n## Usage\n\nRun `tool PATH`.\n",
}
TIMEOUT = 180  # seconds: only a guard against a hung child, never a speed assertion


def _arela(*args: str, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """`python -m arela_index ...` with its output piped, as in a script or CI."""
    return subprocess.run(
        [*prefix, sys.executable, "-m", "arela_index", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
    )


def _one_error_line(err: str) -> str:
    said = [line for line in err.splitlines() if line.startswith("arela:")]
    assert len(said) == 1, err
    assert "Traceback" not in err
    return said[0]


@pytest.fixture
def repo(git_repo: GitRepo) -> GitRepo:
    git_repo.commit({**GOOD, ".env": "TOKEN=abc123\n", "package-lock.json": "{}\n"}, "first")
    return git_repo


# -- the summary -------------------------------------------------------------------------------


def test_index_prints_a_summary_and_no_progress_bar_when_piped(
    repo: GitRepo, tmp_path: Path
) -> None:
    persist = tmp_path / "idx"
    done = _arela("index", str(repo.root), "--persist-dir", str(persist), "--offline")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert re.search(r"^indexed .+ \(offline.*\) in \d+\.\d s", out, re.M)
    files = re.search(r"^  files: 4 \((.+)\)$", out, re.M)
    assert files and set(files.group(1).split(", ")) == {"python 2", "go 1", "markdown 1"}
    chunks = len(ArelaIndex.load(persist, offline=True).code.chunks)
    assert re.search(rf"^  chunks: {chunks}$", out, re.M) and chunks >= 4
    skipped = re.search(r"^  skipped: 2 \((.+)\)$", out, re.M)
    assert skipped and set(skipped.group(1).split(", ")) == {"secret 1", "lockfile 1"}
    assert re.search(r"^  seconds: .*\d+\.\d s", out, re.M)
    # Piped: no bar, no carriage returns; the offline notice comes once on stderr.
    assert "\r" not in done.stderr and "parsing" not in done.stderr
    assert done.stderr.count("runs offline") == 1


def _on_a_terminal(argv: list[str]) -> tuple[int, str]:
    """Run with stderr on a pseudo-terminal of 100 columns; return the exit code and stderr."""
    import fcntl
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    child = subprocess.Popen(
        [sys.executable, "-m", "arela_index", *argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=slave,
    )
    os.close(slave)
    seen = b""
    while select.select([master], [], [], TIMEOUT)[0]:
        try:
            data = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        seen += data
    os.close(master)
    return child.wait(timeout=TIMEOUT), seen.decode("utf-8", "replace")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_the_progress_bar_shows_on_a_terminal(repo: GitRepo, tmp_path: Path) -> None:
    code, err = _on_a_terminal(
        ["index", str(repo.root), "--persist-dir", str(tmp_path / "idx"), "--offline"]
    )
    assert code == 0
    assert re.search(r"\rparsing: +\d+%\|.*\| \d+/4 ", err)


def test_refresh_reports_what_changed(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["index", str(repo.root), "--persist-dir", str(tmp_path / "idx"), "--offline"]
    assert main(argv) == 0
    repo.commit({"app/util.py": GOOD["app/util.py"] + "\n\ndef noop() -> None:\n    pass\n"})
    capsys.readouterr()
    assert main([*argv, "--refresh"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("refreshed ")
    assert "changed files: 1, deleted files: 0" in out


# -- bad input: exit 2 and one line that says what to do ---------------------------------------


@pytest.mark.parametrize(
    ("case", "says"),
    [
        ("missing", "no such folder"),
        ("file", "is a file, not a folder (give the repository's folder)"),
        ("persist under a file", "cannot write the index to"),
    ],
)
def test_bad_input_exits_2_with_one_line_that_says_what_to_do(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, says: str
) -> None:
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a repository\n")
    path, persist = {
        "missing": (tmp_path / "no-such-repo", tmp_path / "idx"),
        "file": (a_file, tmp_path / "idx"),
        # As root, chmod cannot make a folder unwritable; a path under a file is unwritable for all.
        "persist under a file": (repo.root, a_file / "idx"),
    }[case]
    code = main(["index", str(path), "--persist-dir", str(persist), "--offline"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    line = _one_error_line(err)
    assert says in line
    assert line.endswith(
        {
            "missing": "(give the path of a repository)",
            "file": "(give the repository's folder)",
            "persist under a file": "choose another with --persist-dir",
        }[case]
    )
    assert not (tmp_path / "idx").exists()


def test_an_unexpected_error_quoting_file_bytes_is_one_escaped_line(
    repo: GitRepo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def fails(*_: object, **__: object) -> None:
        # What a parser may say about a file's bytes: control codes, non-UTF-8, any length.
        raise ValueError("invalid literal for int(): '{o\x00\x1e\x1b[2J\udcff\n" + "P" * 5000)

    monkeypatch.setattr(ArelaIndex, "build", fails)
    code = main(["index", str(repo.root), "--persist-dir", str(tmp_path / "idx"), "--offline"])
    line = _one_error_line(capsys.readouterr().err)
    assert code == 1 and line.startswith("arela: unexpected ValueError: invalid literal")
    assert line.isascii() and line.isprintable() and len(line) < 400
    assert "\\x1b" in line  # escaped, not sent to the terminal


def test_a_missing_argument_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as usage:
        main(["index"])
    assert usage.value.code == 2
    assert "usage: arela index" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["git init only", "plain empty folder", "only skipped files"])
def test_an_empty_repository_exits_0_and_says_there_is_nothing_to_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    root = tmp_path / "empty"
    if kind == "plain empty folder":
        root.mkdir()
    else:
        repo = GitRepo(root)
        if kind == "only skipped files":
            repo.commit({".env": "A=1\n", "yarn.lock": "x\n", "logo.png": b"\x89PNG\0\0"})
    code = main(["index", str(root), "--persist-dir", str(tmp_path / "idx"), "--offline"])
    out = capsys.readouterr().out
    assert code == 0
    assert "  files: 0" in out and "  chunks: 0" in out
    assert "no files to index" in out
    assert ArelaIndex.load(tmp_path / "idx", offline=True).code.is_empty()


def _unprivileged() -> tuple[str, ...]:
    """A command prefix under which `chmod 000` really makes a file unreadable.

    Root reads any file through CAP_DAC_OVERRIDE / CAP_DAC_READ_SEARCH: drop them for the child.
    """
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: cannot make a file unreadable")
    caps = "-dac_override,-dac_read_search"
    return (setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}")


def test_bad_files_are_indexed_around_and_reported_as_skipped(
    repo: GitRepo, tmp_path: Path
) -> None:
    root = repo.root
    # Left untracked (git lists untracked files too): git itself could not add the unreadable one.
    (root / "app" / "locked.py").write_text("def hidden_function():\n    return 1\n")
    (root / "app" / "locked.py").chmod(0)
    (root / "app" / "legacy.py").write_bytes(b"\xff\xfe\xfd\xfc broken \x80\x81\n" * 200)
    with open(root / "app" / "huge.py", "wb") as fh:  # 50 MB, sparse on disk
        fh.truncate(50 * 1024 * 1024)
    os.symlink("loop_b.py", root / "loop_a.py")
    os.symlink("loop_a.py", root / "loop_b.py")
    persist = tmp_path / "idx"
    try:
        done = _arela(
            "index", str(root), "--persist-dir", str(persist), "--offline", prefix=_unprivileged()
        )
    finally:
        (root / "app" / "locked.py").chmod(0o644)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    skipped = re.search(r"^  skipped: (\d+) \((.+)\)$", done.stdout, re.M)
    assert skipped, done.stdout
    reasons = dict(item.rsplit(" ", 1) for item in skipped.group(2).split(", "))
    assert reasons == {
        "unreadable": "1",
        "undecodable": "1",
        "too large": "1",
        "symlink": "2",
        "secret": "1",
        "lockfile": "1",
    }
    assert "  files: 4 (" in done.stdout
    index = ArelaIndex.load(persist, offline=True)
    assert {c.metadata["file_path"] for c in index.code.chunks} == set(GOOD)
    hit = index.code_retriever(top_k=1).retrieve("normalise path separators")
    assert hit[0].node.metadata["symbol"] == "app.util.normalise_path"


def test_a_damaged_index_on_refresh_is_one_line_naming_the_file(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["index", str(repo.root), "--persist-dir", str(tmp_path / "idx"), "--offline"]
    assert main(argv) == 0
    folder = current_build(tmp_path / "idx")
    assert folder is not None
    (folder / "code" / "chunks.jsonl").write_text('{"id": "code:1", "te')
    capsys.readouterr()
    assert main([*argv, "--refresh"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    command = f"arela index {repo.root} --persist-dir {tmp_path / 'idx'}"  # the real one
    assert "chunks.jsonl" in line and line.endswith(f"rebuild the index with `{command}`")
    assert main(argv) == 0  # and the rebuild it asks for works


# -- help --------------------------------------------------------------------------------------


def test_help_answers_without_building_anything() -> None:
    done = _arela("--help")
    assert done.returncode == 0 and done.stdout.startswith("usage: arela")
    assert re.search(r"^\s+index\s", done.stdout, re.M)
    sub = _arela("index", "--help")
    assert sub.returncode == 0
    for option in ("--persist-dir", "--offline", "--refresh"):
        assert option in sub.stdout
    script = Path(sys.executable).with_name("arela")
    if script.exists():  # the console script installed with the package
        installed = subprocess.run(
            [str(script), "--help"], capture_output=True, text=True, timeout=TIMEOUT
        )
        assert installed.returncode == 0 and installed.stdout == done.stdout
