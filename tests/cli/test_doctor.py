"""`arela doctor` on real repositories and indexes: one line per check, exit code 0 only when all
is well, offline by choice counted as well, Ollama's state through FakeOllama."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.fake_ollama import FakeOllama
from support.gitrepo import GitRepo

from arela_index.cli.doctor import diagnose
from arela_index.cli.main import main
from arela_index.config import ArelaConfig
from arela_index.indexing.build import build_index
from arela_index.indexing.persist import FORMAT_VERSION, current_build
from arela_index.llm import sentence_model
from arela_index.llm.runtime import detect
from arela_index.policy import general

CONFIG_PY = "def load_config(path):\n    return open(path).read()\n"
CLI_PY = "from app.config import load_config\n\n\ndef main():\n    return load_config('app.toml')\n"
FILES: dict[str, str | bytes] = {
    "app/config.py": CONFIG_PY,
    "app/cli.py": CLI_PY,
    "README.md": "# app\n\nLoads its configuration.\n",
}


def make_repo(root: Path) -> GitRepo:
    repo = GitRepo(root)
    repo.commit(FILES, "Add the config loader", date="2024-03-01T10:00:00+00:00")
    repo.commit(
        {"app/cli.py": CLI_PY + "\n\nVERSION = '1.0'\n"},
        "Give the CLI a version",
        date="2024-03-02T10:00:00+00:00",
    )
    return repo


def index_of(root: Path, config: ArelaConfig) -> None:
    build_index(root, config, detect(config))


def doctor(
    capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, dict[str, tuple[str, str]]]:
    """Run `arela doctor`; the exit code and {check name: (status, rest of its line)}."""
    code = main(["doctor", *args])
    lines = capsys.readouterr().out.splitlines()
    checks = {}
    for line in lines[1:-1]:
        status, rest = line[:5].strip(), line[6:]
        checks[rest[:13].strip()] = (status, rest[13:].strip())
    return code, checks


def indexed_offline(tmp_path: Path) -> tuple[Path, Path]:
    """A new repository indexed offline: its root and its live build folder."""
    root = make_repo(tmp_path / "app").root
    index_of(root, ArelaConfig(offline=True))
    folder = current_build(root / ".arela")
    assert folder is not None
    return root, folder


@pytest.fixture(scope="module")
def offline_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = make_repo(tmp_path_factory.mktemp("doctor") / "app")
    index_of(repo.root, ArelaConfig(offline=True))
    return repo.root


def test_offline_by_choice_with_a_fresh_index_is_healthy(
    offline_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, checks = doctor(capsys, "--repo", str(offline_repo), "--offline")
    assert code == 0
    assert checks["ollama"][0] == "off" and "offline by choice" in checks["ollama"][1]
    assert {checks[m][0] for m in ("embed model", "router model", "answer model")} == {"off"}
    assert checks["index"] == ("ok", f"present at {offline_repo / '.arela'}")
    assert checks["working tree"] == ("ok", "all 3 files as indexed")
    assert checks["HEAD"][0] == "ok"
    assert checks["code memory"][0] == "ok" and " chunks from 3 files, " in checks["code memory"][1]
    assert checks["graph memory"][1].startswith("4 symbols in 2 files")  # 2 modules, 2 functions
    assert checks["audit memory"][1].startswith("2 commits")
    assert checks["meaning"][0] == "ok" and "all-MiniLM-L6-v2" in checks["meaning"][1]


def test_a_broken_sentence_model_is_a_failure_that_says_what_to_do(
    offline_repo: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setattr(sentence_model, "TOKENIZER", tmp_path / "tokenizer.json")
    code, checks = doctor(capsys, "--repo", str(offline_repo), "--offline")
    assert code == 1
    assert checks["meaning"][0] == "fail" and checks["meaning"][1].endswith(
        "→ reinstall arela-index"
    )
    monkeypatch.setenv("ARELA_MEANING_CHECK", "0")
    code, checks = doctor(capsys, "--repo", str(offline_repo), "--offline")
    assert code == 0 and checks["meaning"][0] == "off"


@pytest.mark.parametrize(("folder", "kind"), [("DATA", "general"), ("HISTORY", "history")])
def test_missing_general_questions_are_a_failure_that_says_what_to_do(
    offline_repo: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    folder: str,
    kind: str,
) -> None:
    monkeypatch.setattr(general, folder, tmp_path)
    code, checks = doctor(capsys, "--repo", str(offline_repo), "--offline")
    assert code == 1 and checks["meaning"][0] == "fail"
    assert f"{kind} questions are unreadable" in checks["meaning"][1]
    assert checks["meaning"][1].endswith("→ reinstall arela-index")


def test_the_same_checks_as_json(offline_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--repo", str(offline_repo), "--offline", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["healthy"] is True and report["mode"] == "offline by choice"
    names = [c["name"] for c in report["checks"]]
    assert names[:5] == ["ollama", "embed model", "router model", "answer model", "index"]
    assert all(set(c) == {"name", "status", "detail", "todo"} for c in report["checks"])


def test_no_ollama_without_choosing_offline_is_a_problem_with_two_ways_out(
    offline_repo: Path,
    fake_ollama: FakeOllama,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OLLAMA_HOST", fake_ollama.url)
    fake_ollama.set_fault("*", "down")
    code, checks = doctor(capsys, "--repo", str(offline_repo))
    assert code == 1
    status, line = checks["ollama"]
    assert status == "fail"
    assert "`ollama serve`" in line and "--offline / ARELA_OFFLINE=1" in line
    assert checks["embed model"][0] == "skip"
    assert checks["index"][0] == "ok"  # the index checks still run


def test_a_model_that_is_not_pulled_names_the_pull_command(
    offline_repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from arela_index.llm.ollama import forget_probes

    forget_probes()
    with FakeOllama(models=["nomic-embed-text:latest", "qwen2.5-coder:3b"]) as fake:
        monkeypatch.setenv("OLLAMA_HOST", fake.url)
        code, checks = doctor(capsys, "--repo", str(offline_repo))
    forget_probes()
    assert code == 1
    assert checks["ollama"][0] == "ok" and "2 models pulled" in checks["ollama"][1]
    assert checks["embed model"] == ("ok", "'nomic-embed-text' is pulled")
    status, line = checks["router model"]
    assert status == "fail" and "run `ollama pull qwen2.5:1.5b`" in line
    assert "ARELA_ROUTER_MODEL" in line
    assert checks["answer model"][0] == "ok"
    # Built offline while Ollama has the embedding model: worth a rebuild.
    assert checks["embedding"][0] == "warn" and "arela index" in checks["embedding"][1]


def test_everything_online_and_fresh_is_healthy(
    tmp_path: Path, fake_ollama_config: ArelaConfig
) -> None:
    root = make_repo(tmp_path / "app").root
    index_of(root, fake_ollama_config)
    diagnosis = diagnose(root, fake_ollama_config)
    assert diagnosis.healthy, diagnosis.to_text()
    assert diagnosis.exit_code == 0
    lines = {c.name: c for c in diagnosis.checks}
    assert lines["embedding"].detail == "ollama:nomic-embed-text"
    assert diagnosis.to_text().endswith("all is well (with Ollama)")


def test_an_index_with_another_embedding_model_says_which_to_set(
    tmp_path: Path, fake_ollama_config: ArelaConfig
) -> None:
    root = make_repo(tmp_path / "app").root
    index_of(root, fake_ollama_config)
    check = {
        c.name: c for c in diagnose(root, fake_ollama_config.with_(embed_model="other")).checks
    }
    assert check["embedding"].status == "fail"
    assert "ARELA_EMBED_MODEL=nomic-embed-text" in check["embedding"].todo


def test_no_index_says_how_to_build_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_repo(tmp_path / "app").root
    code, checks = doctor(capsys, "--repo", str(root), "--offline")
    assert code == 1
    assert checks["index"] == (
        "fail",
        f"no index at {root / '.arela'} → build it with `arela index {root}`",
    )
    assert "format" not in checks


def test_edits_deletions_and_new_commits_make_it_stale_until_refreshed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path / "app")
    config = ArelaConfig(offline=True)
    index_of(repo.root, config)
    repo.write({"app/config.py": CONFIG_PY + "\n\nDEFAULT = 'app.toml'\n"})
    repo.delete("README.md")
    code, checks = doctor(capsys, "--repo", str(repo.root), "--offline")
    assert code == 1
    assert checks["working tree"] == (
        "warn",
        "1 file added or changed, 1 deleted since the build (README.md, app/config.py)"
        f" → run `arela index {repo.root} --refresh`",
    )
    assert checks["HEAD"][0] == "ok"

    before = repo.git("rev-parse", "--short=7", "HEAD").strip()
    repo.commit(message="Default config path", date="2024-03-03T10:00:00+00:00")
    after = repo.git("rev-parse", "--short=7", "HEAD").strip()
    code, checks = doctor(capsys, "--repo", str(repo.root), "--offline")
    assert checks["HEAD"][0] == "warn"
    assert checks["HEAD"][1].startswith(f"moved from {before} to {after} (1 new commit) since")

    build_index(repo.root, config, detect(config), refresh=True)
    code, checks = doctor(capsys, "--repo", str(repo.root), "--offline")
    assert code == 0, checks
    assert checks["audit memory"][1].startswith("3 commits")


def test_an_index_of_an_older_format_says_rebuild(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, folder = indexed_offline(tmp_path)
    manifest = folder / "manifest.json"
    manifest.write_text(
        manifest.read_text().replace(f'"format_version": {FORMAT_VERSION}', '"format_version": 0')
    )
    code, checks = doctor(capsys, "--repo", str(root), "--offline")
    assert code == 1
    status, line = checks["format"]
    assert status == "fail" and "format version 0" in line and f"arela index {root}" in line


def test_a_damaged_index_file_is_named_with_the_way_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, folder = indexed_offline(tmp_path)
    code, checks = doctor(capsys, "--repo", str(root), "--offline")
    assert checks["integrity"][0] == "ok"
    for path in (folder / "graph").iterdir():
        path.write_text("{not json")
    code, checks = doctor(capsys, "--repo", str(root), "--offline")
    assert code == 1
    status, line = checks["integrity"]
    assert status == "fail" and "/graph/" in line and "unreadable" in line and "arela index" in line
    assert "graph memory" not in checks  # nothing is read from a damaged index


def test_doctor_reads_every_byte_even_where_the_files_stamps_did_not_move(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A load reads again only the files whose size or time moved; damage that kept both (a
    byte flipped in place, the time put back) is still the doctor's to find."""
    root, folder = indexed_offline(tmp_path)
    path = max(
        (p for p in (folder / "code").rglob("*") if p.is_file()), key=lambda p: p.stat().st_size
    )
    before = path.stat()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    code, checks = doctor(capsys, "--repo", str(root), "--offline")
    assert code == 1
    status, line = checks["integrity"]
    assert status == "fail" and path.name in line and "checksum mismatch" in line


def test_a_folder_without_git_has_no_history_and_that_is_fine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(str(text))
    index_of(root, ArelaConfig(offline=True))
    code, checks = doctor(capsys, "--repo", str(root), "--offline")
    assert code == 0, checks
    assert checks["HEAD"] == ("ok", "not a git repository: there is no history to follow")
    assert (
        checks["audit memory"][0] == "ok"
        and "history questions abstain" in checks["audit memory"][1]
    )


def test_a_missing_repository_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--repo", "/no/such/repo", "--offline"]) == 2
    assert capsys.readouterr().err.strip() == (
        "arela: no such folder: /no/such/repo (give the path of a repository)"
    )
