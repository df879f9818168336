"""`arela ask` handed to a running `arela serve`: it prints what a cold ask prints (stdout, stderr
and exit code) without loading LlamaIndex, sees the repository as it is now, never talks to a
server through a runtime folder others could have touched, and stays cold without a server or
with --no-server. Servers and asks run as subprocesses, as from a shell."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.gitrepo import GitRepo
from support.mcp_server import REFUND, SHOP, WAIT, make_repo, until

from arela_index.cli.main import main

pytestmark = pytest.mark.slow  # a server and cold asks in subprocesses

# What a handed-off ask must not load: LlamaIndex, NumPy, the index and the query loop.
HEAVY = ("llama_index.core", "numpy", "arela_index.index", "arela_index.query.engines")
# `arela ask` as the shell runs it, telling in a file which heavy modules it loaded.
PROBE = (
    "import json, os, sys\n"
    "from arela_index.cli.main import main\n"
    "code = main(sys.argv[1:])\n"
    "heavy = [m for m in json.loads(os.environ['PROBE_HEAVY']) if m in sys.modules]\n"
    "open(os.environ['PROBE_LOADED'], 'w').write(json.dumps(heavy))\n"
    "sys.exit(code)\n"
)
BATCH = (
    '{"question": "who calls checkout?", "id": 1.5}\n'
    "not json\n"
    '{"question": null, "id": [1]}\n'
    "\n"
    '{"question": "where is BulkDiscount defined?", "id": "b"}\n'
)


@dataclass(frozen=True)
class Asked:
    code: int
    out: str
    err: str
    heavy: list[str]  # the heavy modules the process loaded: none when a server answered

    @property
    def shown(self) -> tuple[int, str, str]:
        """What the user sees, less the timings every answer's JSON and --explain carry."""
        err = "".join(line for line in self.err.splitlines(True) if not line.startswith("timings"))
        return self.code, _without_timings(self.out), err


def _without_timings(out: str) -> str:
    lines = []
    for line in out.splitlines():
        if line.startswith("{"):
            answer = json.loads(line)
            answer.pop("timings_ms", None)
            line = json.dumps(answer)
        lines.append(line)
    return "\n".join(lines)


@pytest.fixture
def shop(tmp_path: Path) -> GitRepo:
    return make_repo(tmp_path / "shop", SHOP, "Cart, checkout and discounts")


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private XDG_RUNTIME_DIR of the test's (short: a socket's path has a bound)."""
    folder = Path(tempfile.mkdtemp(prefix="arela-run-"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


class Server:
    """`arela serve` for one repository in a subprocess, its stderr in a file."""

    def __init__(self, repo: Path, log: Path) -> None:
        self.log = log
        with open(log, "wb") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "arela_index", "serve", "--repo", str(repo), "--offline"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                env=dict(os.environ),
            )
        try:
            until(lambda: "ready:" in self.stderr() or self.process.poll() is not None, "ready")
        finally:
            if "ready:" not in self.stderr():
                self.process.kill()
                self.process.wait()
        assert self.process.poll() is None, self.stderr()

    def stderr(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> int:
        """Ctrl-C, as in its terminal; its exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                return self.process.wait(timeout=WAIT)
            except subprocess.TimeoutExpired:
                self.process.kill()
        return self.process.wait()


@pytest.fixture
def server(shop: GitRepo, runtime: Path, tmp_path: Path) -> Iterator[Server]:
    started = Server(shop.root, tmp_path / "serve.log")
    yield started
    started.stop()


def ask(repo: GitRepo, *args: str, stdin: str = "") -> Asked:
    """`arela ask ARGS --repo REPO --offline` in a process of its own."""
    with tempfile.NamedTemporaryFile("r", suffix=".json") as loaded:
        env = {**os.environ, "PROBE_HEAVY": json.dumps(HEAVY), "PROBE_LOADED": loaded.name}
        env.pop("ARELA_DEBUG", None)
        done = subprocess.run(
            [sys.executable, "-c", PROBE, "ask", *args, "--repo", str(repo.root), "--offline"],
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            timeout=WAIT,
        )
        return Asked(done.returncode, done.stdout, done.stderr, json.loads(loaded.read() or "[]"))


@pytest.mark.parametrize(
    "args, stdin",
    [
        (("who calls checkout?",), ""),
        (("who calls checkout?", "--json", "--explain"), ""),
        (("--jsonl",), BATCH),
        (("-",), "who calls checkout?\n\nwhere is BulkDiscount defined?\n"),
    ],
    ids=["one question", "json", "jsonl batch", "lines on stdin"],
)
def test_a_handed_off_ask_prints_what_a_cold_one_prints(
    server: Server, shop: GitRepo, args: tuple[str, ...], stdin: str
) -> None:
    handed = ask(shop, *args, stdin=stdin)
    cold = ask(shop, *args, "--no-server", stdin=stdin)  # --no-server: cold with a server up
    assert handed.heavy == [] and cold.heavy != []
    assert handed.shown == cold.shown
    assert "shop/api.py:4-5" in handed.out
    assert "arela-index runs offline" in handed.err


def test_after_a_change_the_handed_off_answer_is_the_new_one(server: Server, shop: GitRepo) -> None:
    before = ask(shop, "who calls checkout?", "--json")
    assert before.heavy == [] and "shop/api.py:8-9" not in before.out

    (shop.root / "shop" / "api.py").write_text(REFUND, encoding="utf-8")  # saved, not committed
    after = ask(shop, "who calls checkout?", "--json")
    assert after.heavy == []
    assert "shop/api.py:8-9" in json.loads(after.out)["answer"]
    assert "older than the repository" not in after.err
    # What a cold ask says now: the server refreshed the index on disk, as `arela mcp` does.
    assert ask(shop, "who calls checkout?", "--json", "--no-server").shown == after.shown


def test_a_runtime_folder_others_could_touch_is_never_used(
    server: Server, shop: GitRepo, runtime: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = runtime / "arela"
    cold = ask(shop, "who calls checkout?", "--no-server")

    folder.chmod(0o777)  # the server's socket is there, but others could have put it there
    refused = ask(shop, "who calls checkout?")
    assert refused.heavy != [] and refused.shown == cold.shown
    folder.chmod(0o700)

    if os.getuid() == 0:  # only root can give a folder away
        os.chown(folder, 4242, -1)
        refused = ask(shop, "who calls checkout?")
        assert refused.heavy != [] and refused.shown == cold.shown
        os.chown(folder, 0, -1)

    linked = tmp_path / "linked"  # a link to the server's own folder: refused all the same
    linked.mkdir(mode=0o700)
    (linked / "arela").symlink_to(folder)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(linked))
    refused = ask(shop, "who calls checkout?")
    assert refused.heavy != [] and refused.shown == cold.shown


def test_serve_refuses_an_unsafe_runtime_folder_and_a_second_server(
    shop: GitRepo,
    runtime: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = runtime / "arela"
    folder.mkdir(mode=0o755)
    assert main(["serve", "--repo", str(shop.root), "--offline"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"arela: the runtime folder {folder} is open to others (mode 755)")
    assert "set XDG_RUNTIME_DIR" in err and "\n" not in err

    folder.chmod(0o700)
    first = Server(shop.root, tmp_path / "first.log")
    try:
        assert main(["serve", "--repo", str(shop.root), "--offline"]) == 2
        err = capsys.readouterr().err.strip()
        assert "another `arela serve` is already serving the index" in err
        assert "\n" not in err
        assert ask(shop, "who calls checkout?").heavy == []  # the first one still answers
    finally:
        assert first.stop() == 0
    assert "stopped" in first.stderr()
    assert not list(folder.glob("*.sock"))  # stopped cleanly: its socket is gone


def test_without_a_server_or_for_other_settings_the_ask_is_cold(
    server: Server, shop: GitRepo, runtime: Path
) -> None:
    other = ask(shop, "who calls checkout?", "--top-k", "2")  # the server answers top_k 8
    assert other.heavy != [] and "shop/api.py:4-5" in other.out
    assert server.stop() == 0
    alone = ask(shop, "who calls checkout?")
    assert alone.code == 0 and alone.heavy != []
    assert alone.shown == ask(shop, "who calls checkout?", "--no-server").shown


def test_what_the_served_index_logs_is_said_by_arela_serve(
    shop: GitRepo, runtime: Path, tmp_path: Path
) -> None:
    assert main(["index", str(shop.root), "--offline"]) == 0
    (cards,) = (shop.root / ".arela").glob("build-*/code/bm25_cards/params.index.json")
    cards.write_text("{damaged", encoding="utf-8")
    log = tmp_path / "serve.log"
    with open(log, "wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "arela_index", "serve", "--repo", str(shop.root), "--offline"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        until(lambda: "cannot open the index" in log.read_text(errors="replace"), "the warning")
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=WAIT)
    (line,) = [x for x in log.read_text().splitlines() if "cannot open the index" in x]
    assert line.startswith(f"arela serve: cannot open the index of {shop.root}")
