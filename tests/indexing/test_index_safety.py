"""The index on disk under kills, damage, old formats, rival builders and prying eyes.

Builds run as a user runs them (`python -m arela_index index` in a subprocess) and are killed
with SIGKILL at random moments; index files are truncated, emptied, overwritten and deleted one
kind at a time; two builders race. Whatever happens, the previous index stays loadable and
correct, a damaged one is refused with one line that names the file and the command to rebuild,
and nothing is ever written outside the chosen persist dir.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.fake_ollama import FakeOllama
from support.gitrepo import GitRepo
from support.harness import (
    PACKAGE_ROOT,
    assert_one_clear_line,
    build_many_modules,
    call_cli,
    run_cli,
)
from support.routing_repos import build_taskq

from arela_index.errors import ArelaError
from arela_index.index import ArelaIndex
from arela_index.indexing.persist import FORMAT_VERSION, current_build
from arela_index.ingest.scanner import scan_repository

QUESTIONS = (
    "who calls parse_config?",
    "how does retry_with_backoff work?",
    "what changed in worker.py?",
)


@pytest.fixture(autouse=True)
def static_embeddings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every build here, in this process or a child, embeds with the packaged static model, so
    indexes have every kind of file (vectors.faiss too) and rebuilds match the first build."""
    monkeypatch.setenv("ARELA_OFFLINE_EMBEDDING", "static")


@pytest.fixture(scope="module")
def taskq(tmp_path_factory: pytest.TempPathFactory) -> GitRepo:
    return build_taskq(tmp_path_factory.mktemp("safety") / "taskq")


@pytest.fixture(scope="module")
def built(taskq: GitRepo, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An intact offline index of taskq with static embeddings, so vectors.faiss is there too."""
    persist = tmp_path_factory.mktemp("built") / "index"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("ARELA_OFFLINE_EMBEDDING", "static")
        done = call_cli("index", str(taskq.root), "--persist-dir", str(persist), "--offline")
    assert done.code == 0
    return persist


def answers(persist: Path, questions: tuple[str, ...] = QUESTIONS) -> list[tuple[str, list[str]]]:
    """What a user gets from this index: each answer's text and its sources."""
    engine = ArelaIndex.load(persist, offline=True).as_query_engine()
    out = []
    for question in questions:
        response = engine.query(question)
        out.append((str(response), [n.node.node_id for n in response.source_nodes]))
    return out


def assert_whole(persist: Path, root: Path) -> None:
    """One complete build, consistent across its memories and with the repository it claims."""
    index = ArelaIndex.load(persist, offline=True)  # verifies every file's checksum
    scanned = {f.path: f.sha256 for f in scan_repository(root).files}
    head = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert index.manifest.files == scanned and index.manifest.head == head
    assert {c.metadata["file_path"] for c in index.code.chunks} <= set(scanned)
    assert index.audit.stats()["commits"] == int(
        subprocess.run(
            ["git", "-C", str(root), "rev-list", "--count", "HEAD"],
            capture_output=True, text=True, check=True,
        ).stdout
    )  # fmt: skip
    builds = [p.name for p in persist.iterdir() if p.name.startswith("build-")]
    assert builds == [index.folder.name]


# -- damaged files -----------------------------------------------------------------------------


def damage(file: Path, how: str, rng: random.Random) -> None:
    data = file.read_bytes()
    if how == "truncated":
        file.write_bytes(data[: len(data) // 2])
    elif how == "emptied":
        file.write_bytes(b"")
    elif how == "overwritten":
        file.write_bytes(rng.randbytes(max(64, len(data))))
    elif how == "bytes flipped":  # damage that may still parse: only a checksum tells
        spoiled = bytearray(data)
        at = rng.randrange(len(spoiled))
        spoiled[at] ^= 0x5A
        file.write_bytes(bytes(spoiled))
    else:
        file.unlink()


DAMAGE = ("truncated", "emptied", "overwritten", "bytes flipped", "deleted")
INDEX_FILES = (
    "manifest.json",
    "code/chunks.jsonl",
    "code/chunks.index.npy",
    "code/vectors.faiss",
    "code/embedding.json",
    "code/bm25/vocab.terms.npy",
    "code/bm25/vocab.ends.npy",
    "code/bm25/data.csc.index.npy",
    "code/bm25/indices.csc.index.npy",
    "code/bm25/indptr.csc.index.npy",
    "code/bm25/params.index.json",
    "code/bm25/names.json",
    "code/bm25_files/data.csc.index.npy",
    "code/bm25_files/indices.csc.index.npy",
    "code/bm25_files/indptr.csc.index.npy",
    "code/bm25_files/params.index.json",
    "code/bm25_files/names.json",
    "code/bm25_cards/data.csc.index.npy",
    "code/bm25_cards/indices.csc.index.npy",
    "code/bm25_cards/indptr.csc.index.npy",
    "code/bm25_cards/params.index.json",
    "code/bm25_cards/names.json",
    "code/terms.npz",
    "code/terms.json",
    "graph/graph.sqlite",
    "graph/symbols.json",
    "graph/names.json",
    "audit/audit.sqlite",
    "audit/authors.json",
    "worktree.json",
    "name-stems.json",
)
# Files that only make a refresh faster: damaged, they cost reading every file again.
SPEED_ONLY = ("file-stats.json",)


def test_every_file_of_the_index_is_listed_here(built: Path) -> None:
    folder = current_build(built)
    assert folder is not None
    on_disk = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    assert on_disk == set(INDEX_FILES) | set(SPEED_ONLY)


def reading(name: str) -> str:
    """A question that reads the memory holding the index file `name` (a memory is read when
    a question is first routed to it)."""
    memory = name.split("/")[0]
    return {"code": QUESTIONS[1], "audit": QUESTIONS[2]}.get(memory, QUESTIONS[0])


@pytest.mark.parametrize("name", INDEX_FILES)
def test_a_damaged_file_is_one_line_naming_it_and_the_rebuild(
    built: Path, taskq: GitRepo, tmp_path: Path, name: str
) -> None:
    rng = random.Random(name)
    for how in DAMAGE:
        persist = tmp_path / how.replace(" ", "-")
        shutil.copytree(built, persist)
        folder = current_build(persist)
        assert folder is not None
        if name == "manifest.json" and how == "bytes flipped":
            continue  # it holds the checksums, not its own: a flip that still parses may pass
        damage(folder / name, how, rng)
        run = call_cli(
            "ask", reading(name), "--repo", str(taskq.root), "--persist-dir", str(persist)
        )
        line = assert_one_clear_line(run, str(folder / name), "arela index")
        assert ("missing" in line) == (how == "deleted"), line


@pytest.mark.parametrize("how", ["truncated", "emptied", "overwritten"])
def test_a_damaged_current_pointer_is_one_line_too(
    built: Path, taskq: GitRepo, tmp_path: Path, how: str
) -> None:
    persist = tmp_path / "index"
    shutil.copytree(built, persist)
    damage(persist / "CURRENT", how, random.Random(how))
    run = call_cli("ask", QUESTIONS[0], "--repo", str(taskq.root), "--persist-dir", str(persist))
    assert_one_clear_line(run, str(persist / "CURRENT"), "arela index")


def test_a_missing_current_pointer_means_no_index_so_ask_builds_one(
    built: Path, taskq: GitRepo, tmp_path: Path
) -> None:
    persist = tmp_path / "index"
    shutil.copytree(built, persist)
    (persist / "CURRENT").unlink()
    run = call_cli(
        "ask", QUESTIONS[0], "--repo", str(taskq.root), "--persist-dir", str(persist), "--offline"
    )
    assert run.code == 0 and not run.problems
    assert answers(persist) == answers(built)
    assert_whole(persist, taskq.root)  # the orphaned build folder was cleared


def test_damage_seen_by_a_real_process_is_one_line_and_the_advised_command_mends_it(
    built: Path, taskq: GitRepo, tmp_path: Path
) -> None:
    persist = tmp_path / "index"
    shutil.copytree(built, persist)
    folder = current_build(persist)
    assert folder is not None
    damage(folder / "code/vectors.faiss", "bytes flipped", random.Random(7))
    for args in (
        ["ask", reading("code/vectors.faiss"), "--repo", str(taskq.root)],
        ["index", str(taskq.root), "--refresh"],
    ):
        run = run_cli(*args, "--persist-dir", str(persist), "--offline")
        assert_one_clear_line(run, "vectors.faiss", "checksum", "arela index")
    mended = run_cli("index", str(taskq.root), "--persist-dir", str(persist), "--offline")
    assert mended.code == 0, mended.err
    assert answers(persist) == answers(built)
    assert_whole(persist, taskq.root)


@pytest.mark.parametrize("version", [FORMAT_VERSION - 1, FORMAT_VERSION + 1])  # older, newer
def test_an_index_of_another_format_version_says_how_to_rebuild(
    built: Path, taskq: GitRepo, tmp_path: Path, version: int
) -> None:
    persist = tmp_path / "index"
    shutil.copytree(built, persist)
    folder = current_build(persist)
    assert folder is not None
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["format_version"] = version
    (folder / "manifest.json").write_text(json.dumps(manifest))
    for args in (
        ["ask", QUESTIONS[0], "--repo", str(taskq.root)],
        ["index", str(taskq.root), "--refresh"],
    ):
        run = call_cli(*args, "--persist-dir", str(persist), "--offline")
        assert_one_clear_line(run, f"format version {version}", f"arela index {taskq.root}")


def test_an_index_written_before_checksums_still_loads(built: Path, tmp_path: Path) -> None:
    persist = tmp_path / "index"
    shutil.copytree(built, persist)
    folder = current_build(persist)
    assert folder is not None
    manifest = json.loads((folder / "manifest.json").read_text())
    del manifest["checksums"]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    assert answers(persist) == answers(built)


# -- killed builds ---------------------------------------------------------------------------


def _survivors(group: int) -> list[str]:
    """Live processes (zombies aside) left in a killed build's process group."""
    ps = subprocess.run(
        ["ps", "-o", "pid=,stat=", "-g", str(group)], capture_output=True, text=True
    )
    return [
        line for line in ps.stdout.splitlines() if line.split()[1:] and "Z" not in line.split()[1]
    ]


def _index_command(root: Path, persist: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "arela_index",
        "index",
        str(root),
        "--persist-dir",
        str(persist),
        *extra,
    ]


@pytest.mark.slow
def test_a_build_killed_at_random_moments_leaves_the_previous_index_whole(tmp_path: Path) -> None:
    repo = build_many_modules(tmp_path / "repo")
    questions = ("who calls func_3_2?", "what does func_150_4 do?", "what changed in stage007.py?")
    persist = tmp_path / "index"
    assert call_cli("index", str(repo.root), "--persist-dir", str(persist), "--offline").code == 0
    expected = {repo.git("rev-parse", "HEAD").strip(): answers(persist, questions)}
    repo.commit(
        {"pkg/stage999.py": "def brand_new_stage(value):\n    return func_3_2(value)\n"},
        "Add the last stage",
    )
    reference = tmp_path / "reference"
    started = time.monotonic()
    done = subprocess.run(
        _index_command(repo.root, reference, "--offline"), capture_output=True, cwd=PACKAGE_ROOT
    )
    whole_build = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    expected[repo.git("rev-parse", "HEAD").strip()] = answers(reference, questions)

    rng = random.Random(20240601)
    kills = 6
    for n in range(kills):
        # One moment in each sixth of a whole build: start-up, scan, parse, history, writing.
        delay = whole_build * (n + rng.random()) / kills
        build = subprocess.Popen(
            _index_command(repo.root, persist, "--offline"),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=PACKAGE_ROOT,
            start_new_session=True,
        )  # fmt: skip
        time.sleep(delay)
        build.send_signal(signal.SIGKILL)
        build.wait()
        for _ in range(50):  # the kernel ends parse workers with their parent (PDEATHSIG)
            if not _survivors(build.pid):
                break
            time.sleep(0.1)
        assert _survivors(build.pid) == [], f"orphans after a kill at {delay:.2f} s"
        index = ArelaIndex.load(persist, offline=True)
        assert index.manifest.head in expected, f"kill at {delay:.2f} s"
        assert answers(persist, questions) == expected[index.manifest.head], (
            f"kill at {delay:.2f} s"
        )

    # The next build is not refused by a lock a dead builder held, and clears what it left.
    final = run_cli("index", str(repo.root), "--persist-dir", str(persist), "--offline")
    assert final.code == 0, final.err
    assert_whole(persist, repo.root)
    assert answers(persist, questions) == expected[repo.git("rev-parse", "HEAD").strip()]


# -- rival builders ---------------------------------------------------------------------------


@pytest.mark.slow
def test_a_second_build_while_one_runs_is_refused_and_the_first_completes(
    taskq: GitRepo, tmp_path: Path
) -> None:
    persist = tmp_path / "index"
    with FakeOllama(slow_seconds=8.0) as fake:
        fake.set_fault("/api/embed", "slow")  # the first build holds the lock while it embeds
        env = {**os.environ, "OLLAMA_HOST": fake.url, "ARELA_EMBED_TIMEOUT": "30"}
        first = subprocess.Popen(
            _index_command(taskq.root, persist),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=PACKAGE_ROOT,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while not fake.requests_to("/api/embed") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert fake.requests_to("/api/embed"), "the first build never started embedding"
        second = run_cli("index", str(taskq.root), "--persist-dir", str(persist), "--offline")
        _, err = first.communicate(timeout=120)
    assert_one_clear_line(second, f"pid {first.pid}", "is building", str(persist), "retry")
    assert first.returncode == 0, err.decode()
    index = ArelaIndex.load(persist, offline=True)
    assert index.code.embedding is not None and index.code.embedding.provider == "ollama"
    assert_whole(persist, taskq.root)


@pytest.mark.slow
def test_builds_started_together_never_mix(tmp_path: Path) -> None:
    repo = build_many_modules(tmp_path / "repo", modules=120, commits=5)
    persist = tmp_path / "index"
    for round_ in range(3):
        repo.commit(
            {f"pkg/round{round_}.py": f"def round_{round_}():\n    return {round_}\n"},
            f"Round {round_}",
        )
        command = _index_command(repo.root, persist, "--offline")
        builds = [
            subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=PACKAGE_ROOT
            )
            for _ in range(2)
        ]
        results = [(b.wait(timeout=300), b.communicate()[1].decode()) for b in builds]
        assert 0 in [code for code, _ in results], results
        for code, err in results:
            assert code == 0 or (code == 2 and "is building" in err and "Traceback" not in err)
        assert_whole(persist, repo.root)


# -- where it writes --------------------------------------------------------------------------


def _snapshot(root: Path, skip: Path) -> dict[str, tuple[bool, int, int]]:
    seen = {}
    for current, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if Path(current, d) != skip]
        for name in [*dirs, *files]:
            path = Path(current, name)
            info = path.lstat()
            seen[str(path.relative_to(root))] = (path.is_dir(), info.st_size, info.st_mtime_ns)
    return seen


def test_a_build_writes_only_inside_its_persist_dir(taskq: GitRepo, tmp_path: Path) -> None:
    home, scratch = tmp_path / "home", tmp_path / "scratch"
    home.mkdir()
    scratch.mkdir()
    persist = tmp_path / "elsewhere" / "index"
    env = {"HOME": str(home), "TMPDIR": str(scratch), "XDG_CACHE_HOME": str(home / ".cache")}
    watched = [taskq.root.parent, tmp_path]
    before = [_snapshot(root, persist) for root in watched]
    time.sleep(0.01)  # a write in the same clock tick would keep its mtime
    for args in (
        ["index", str(taskq.root), "--persist-dir", str(persist), "--offline"],
        ["index", str(taskq.root), "--persist-dir", str(persist), "--offline", "--refresh"],
        [
            "ask",
            QUESTIONS[0],
            "--repo",
            str(taskq.root),
            "--persist-dir",
            str(persist),
            "--offline",
        ],
    ):
        assert run_cli(*args, env=env).code == 0
    after = [_snapshot(root, persist) for root in watched]
    # Only the persist dir itself (and its parent, created for it) appeared. Git's history
    # reader may use TMPDIR while it runs (its folder's mtime moves) but leaves nothing there.
    created = {"elsewhere", os.path.join("elsewhere", "index")}
    assert before[0] == after[0]
    assert list(scratch.iterdir()) == []
    settled = {k: v for k, v in after[1].items() if k not in created and k != "scratch"}
    assert settled == {k: v for k, v in before[1].items() if k != "scratch"}
    assert (persist / "CURRENT").is_file()


def test_the_default_index_folder_keeps_the_repository_clean(tmp_path: Path) -> None:
    repo = build_taskq(tmp_path / "taskq")
    before = _snapshot(repo.root, repo.root / ".arela")
    assert run_cli("index", str(repo.root), "--offline").code == 0
    assert _snapshot(repo.root, repo.root / ".arela") == before
    assert repo.git("status", "--porcelain") == ""  # .arela/ ignores itself


def test_a_loaded_index_keeps_answering_while_a_rebuild_replaces_it(
    built: Path, taskq: GitRepo, tmp_path: Path
) -> None:
    persist = tmp_path / "index"
    shutil.copytree(built, persist)
    engine = ArelaIndex.load(persist, offline=True).as_query_engine()
    first = [str(engine.query(q)) for q in QUESTIONS]
    old = current_build(persist)
    assert call_cli("index", str(taskq.root), "--persist-dir", str(persist), "--offline").code == 0
    assert old is not None and not old.exists()  # its folder is gone; its files are still open
    assert [str(engine.query(q)) for q in QUESTIONS] == first


def test_a_load_that_meets_a_finishing_rebuild_reads_the_new_index(
    built: Path, taskq: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arela_index.stores.graph import GraphStore

    persist = tmp_path / "index"
    shutil.copytree(built, persist)
    old = current_build(persist)
    load = GraphStore.load
    rebuilt: list[Path] = []

    def rebuild_midway(directory: Path) -> GraphStore:
        if not rebuilt:  # the index has read CURRENT and the code memory; a rebuild now finishes
            rebuilt.append(directory)  # first: the build loads graphs too
            run = call_cli("index", str(taskq.root), "--persist-dir", str(persist), "--offline")
            assert run.code == 0
        return load(directory)

    monkeypatch.setattr(GraphStore, "load", staticmethod(rebuild_midway))
    index = ArelaIndex.load(persist, offline=True)
    index.code, index.graph  # noqa: B018 - memories are read on first use: this is that use
    assert rebuilt == [old / "graph"] and old is not None and not old.exists()
    assert index.folder == current_build(persist) != old
    assert str(index.as_query_engine().query(QUESTIONS[0])).strip()


@pytest.mark.parametrize("linked", ["name-stems.json", "graph/names.json", "code/chunks.jsonl"])
def test_a_refresh_takes_no_file_linked_out_of_the_previous_build(
    tmp_path: Path, linked: str
) -> None:
    """An index may come with the repository: a refresh that carries the previous build's files
    over (only the history moved) never reads what one of them links to outside the folder."""
    repo = build_taskq(tmp_path / "taskq")
    persist = tmp_path / "index"
    ArelaIndex.build(repo.root, persist_dir=str(persist), offline=True)
    folder = current_build(persist)
    assert folder is not None
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-OUTSIDE-THE-INDEX\n", encoding="utf-8")
    (folder / linked).unlink()
    (folder / linked).symlink_to(secret)
    repo.git("commit", "--allow-empty", "-m", "only the history moves")
    with contextlib.suppress(ArelaError):  # refusing the linked file is as good as leaving it
        ArelaIndex.build(repo.root, refresh=True, persist_dir=str(persist), offline=True)
    assert secret.stat().st_nlink == 1
    for root, _dirs, files in os.walk(persist):
        for name in files:
            path = Path(root) / name
            if not path.is_symlink():
                assert b"SECRET-OUTSIDE" not in path.read_bytes(), path
