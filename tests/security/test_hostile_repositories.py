"""Repositories built as an attacker would build them, indexed and asked through the real CLI.

Each test is one row of SECURITY.md's table: it makes the hostile repository with git in a
temporary folder beside a folder of the user's (a build folder, a lock file, a file they care
about, a Python file with a marker), runs `python -m arela_index` as a user would, and checks what
the user is promised: the outside folder is byte for byte what it was, nothing of it reached the
index or the output, and a refusal is one line that says what to do.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from support.gitrepo import GitRepo
from support.harness import Run, assert_one_clear_line, run_cli
from support.hostile import fingerprint, index_bytes, make_outside

from arela_index.errors import IndexProblem
from arela_index.index import ArelaIndex
from arela_index.indexing.persist import current_build
from arela_index.ingest.scanner import scan_repository

APP = {
    "README.md": "# vault\n\nA small service that checks logins.\n",
    "auth.py": "def check_login(user, password):\n    return user.verify(password)\n",
    "build-tools/tool.py": "def release():\n    return 'tool'\n",
    ".gitignore": "*.pyc\n",
}
FAKE_CODE = "def check_login(user, password):\n    return True  # FORGED_BACKDOOR accepts anyone\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    return make_outside(tmp_path / "outside")


def hostile_repo(tmp_path: Path, files: dict[str, str | bytes] | None = None) -> GitRepo:
    repo = GitRepo(tmp_path / "repo")
    repo.commit({**APP, **(files or {})}, "Initial service", author="Mallory")
    return repo


def commit_link(repo: GitRepo, name: str, target: Path | str) -> None:
    path = repo.root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, path)
    repo.git("add", "-A")
    repo.git("commit", "-qm", f"add {name}")


def index(repo: GitRepo, *extra: str) -> Run:
    return run_cli("index", str(repo.root), "--offline", *extra)


# -- the index folder --------------------------------------------------------------------------


def test_a_committed_arela_symlink_to_another_folder_is_refused(
    tmp_path: Path, outside: Path
) -> None:
    repo = hostile_repo(tmp_path)
    commit_link(repo, ".arela", outside)
    (outside / "CURRENT").write_text("build-release\n")  # what an index there would hold
    before = fingerprint(outside)
    run = index(repo)
    assert_one_clear_line(run, f"{repo.root / '.arela'} is a symbolic link", "--persist-dir")
    asked = run_cli("ask", "what does check_login do?", "--repo", str(repo.root), "--offline")
    assert_one_clear_line(asked, f"{repo.root / '.arela'} is a symbolic link")
    doctor = run_cli("doctor", "--repo", str(repo.root), "--offline")
    assert doctor.code != 0 and "is a symbolic link" in doctor.out
    assert fingerprint(outside) == before  # build-release/ and lock untouched, nothing written


def test_a_committed_lock_symlink_never_empties_its_target(tmp_path: Path, outside: Path) -> None:
    repo = hostile_repo(tmp_path)
    commit_link(repo, ".arela/lock", outside / "precious.txt")
    before = fingerprint(outside)
    for args in (
        ["index", str(repo.root)],
        ["ask", "what does check_login do?", "--repo", str(repo.root)],
    ):
        run = run_cli(*args, "--offline")
        assert_one_clear_line(run, "ships an index", "--persist-dir")
    assert fingerprint(outside) == before


def test_a_lock_that_became_a_symlink_in_a_users_index_is_refused(
    tmp_path: Path, outside: Path
) -> None:
    repo = hostile_repo(tmp_path)
    persist = tmp_path / "index"
    assert index(repo, "--persist-dir", str(persist)).code == 0
    (persist / "lock").unlink()
    os.symlink(outside / "precious.txt", persist / "lock")
    before = fingerprint(outside)
    run = index(repo, "--persist-dir", str(persist))
    assert_one_clear_line(run, f"{persist / 'lock'} is a symbolic link", "rm ")
    assert fingerprint(outside) == before


def test_a_committed_dangling_gitignore_symlink_creates_nothing_outside(
    tmp_path: Path, outside: Path
) -> None:
    repo = hostile_repo(tmp_path)
    target = outside / "planted" / "gitignore"
    (outside / "planted").mkdir()
    commit_link(repo, ".arela/.gitignore", target)
    before = fingerprint(outside)
    run = index(repo)
    assert_one_clear_line(run, "ships an index")
    assert not target.exists() and fingerprint(outside) == before


@pytest.mark.parametrize(
    "where", ["a folder of the user's", "the repository itself", "a tracked folder"]
)
def test_a_persist_dir_that_is_not_an_index_is_refused(
    tmp_path: Path, outside: Path, where: str
) -> None:
    repo = hostile_repo(tmp_path)
    (outside / "CURRENT").write_text("build-release\n")
    persist, expected = {
        "a folder of the user's": (
            outside,
            f"{outside} is not an arela index; choose an empty folder or remove it",
        ),
        "the repository itself": (repo.root, "holds the repository"),
        "a tracked folder": (repo.root / "build-tools" / "idx", "a folder git tracks"),
    }[where]
    watched = [outside, repo.root]
    before = [fingerprint(w) for w in watched]
    run = index(repo, "--persist-dir", str(persist))
    assert_one_clear_line(run, expected, "--persist-dir")
    assert [fingerprint(w) for w in watched] == before
    assert repo.git("status", "--porcelain") == ""


# -- an index the repository ships -------------------------------------------------------------


def forged_index(tmp_path: Path, repo: GitRepo) -> Path:
    """An index of fake code, its manifest's hashes edited to match the real files and its
    repository root set to the real one, as a forger who knows where the clone is would."""
    fake = GitRepo(tmp_path / "fake")
    fake.commit({**APP, "auth.py": FAKE_CODE}, "fake")
    made = tmp_path / "made-elsewhere"
    assert run_cli("index", str(fake.root), "--persist-dir", str(made), "--offline").code == 0
    persist = tmp_path / "forged"
    shutil.copytree(made, persist)  # shipped to the user, as an archive would bring it
    folder = current_build(persist)
    assert folder is not None
    manifest = json.loads((folder / "manifest.json").read_text())
    real = {f.path: f.sha256 for f in scan_repository(repo.root).files}
    manifest["files"] = real
    manifest["repo_root"] = str(repo.root)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return persist


def test_a_committed_forged_index_is_never_loaded(tmp_path: Path, outside: Path) -> None:
    repo = hostile_repo(tmp_path)
    shutil.copytree(forged_index(tmp_path, repo), repo.root / ".arela")
    (repo.root / ".arela" / ".gitignore").unlink()  # shipped: git tracks all of it
    repo.git("add", "-f", ".arela")
    repo.git("commit", "-qm", "ship an index")
    own = tmp_path / "own-index"
    ask = ["ask", "what does check_login do?", "--repo", str(repo.root), "--offline"]
    for args in (ask, ["index", str(repo.root), "--refresh", "--offline"]):
        run = run_cli(*args)
        line = assert_one_clear_line(
            run, "ships an index", f"arela index {repo.root} --persist-dir"
        )
        assert "FORGED_BACKDOOR" not in run.out + run.err
    with pytest.raises(IndexProblem, match="ships an index"):
        ArelaIndex.from_repo(repo.root, offline=True)
    with pytest.raises(IndexProblem, match="ships an index"):
        ArelaIndex.load(repo.root / ".arela", offline=True)
    # The way out it names works: an index of the user's own, elsewhere.
    assert "--persist-dir" in line
    assert run_cli("index", str(repo.root), "--persist-dir", str(own), "--offline").code == 0
    mine = run_cli(*ask, "--persist-dir", str(own))
    assert mine.code == 0 and "user.verify(password)" in mine.out
    assert "FORGED_BACKDOOR" not in mine.out


def test_an_untracked_forged_index_never_answers_with_its_fake_text(tmp_path: Path) -> None:
    """A forged index that git does not track (unpacked from an archive, copied by hand) and
    whose root is the real one: every source is checked against the working tree."""
    repo = hostile_repo(tmp_path)
    persist = forged_index(tmp_path, repo)
    ask = [
        "ask",
        "what does check_login do?",
        "--repo",
        str(repo.root),
        "--persist-dir",
        str(persist),
    ]
    run = run_cli(*ask, "--json", "--offline")
    assert run.code == 0, run.err
    answer = json.loads(run.out)
    assert "FORGED_BACKDOOR" not in run.out
    assert all("FORGED_BACKDOOR" not in s["text"] for s in answer["sources"])
    assert any(step["kind"] == "unverified" for step in answer["trace"])
    refreshed = run_cli(
        "index", str(repo.root), "--persist-dir", str(persist), "--refresh", "--offline"
    )
    assert refreshed.code == 0, refreshed.err
    assert "FORGED_BACKDOOR" not in index_bytes(persist).decode("utf-8", "replace")


def test_an_index_built_from_another_repository_is_refused(tmp_path: Path) -> None:
    repo = hostile_repo(tmp_path)
    persist = tmp_path / "index"
    other = GitRepo(tmp_path / "other")
    other.commit({"other.py": "def other():\n    return 1\n"}, "other")
    assert run_cli("index", str(other.root), "--persist-dir", str(persist), "--offline").code == 0
    run = run_cli(
        "ask",
        "what does check_login do?",
        "--repo",
        str(repo.root),
        "--persist-dir",
        str(persist),
        "--offline",
    )
    assert_one_clear_line(
        run, f"built from {other.root}", f"arela index {repo.root} --persist-dir {persist}"
    )


# -- files of the repository ------------------------------------------------------------------


def test_a_folder_replaced_by_a_link_outside_is_never_read(tmp_path: Path, outside: Path) -> None:
    repo = hostile_repo(tmp_path, {"lib/leak.py": "def leak():\n    return 1\n"})
    shutil.rmtree(repo.root / "lib")
    os.symlink(outside, repo.root / "lib")  # git still lists lib/leak.py
    persist = tmp_path / "index"
    run = index(repo, "--persist-dir", str(persist))
    assert run.code == 0, run.err
    assert b"OUTSIDE_SECRET_MARKER" not in index_bytes(persist)
    skipped = ArelaIndex.load(persist, offline=True).manifest.skipped
    assert skipped.get("symlink", 0) >= 1
    ask = run_cli(
        "ask",
        "what is OUTSIDE_SECRET_MARKER?",
        "--repo",
        str(repo.root),
        "--persist-dir",
        str(persist),
        "--offline",
    )
    assert "OUTSIDE_SECRET_MARKER" not in ask.out.replace("what is OUTSIDE_SECRET_MARKER?", "")


def test_links_to_secret_files_are_judged_by_their_targets_names(tmp_path: Path) -> None:
    key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----\n"
    repo = hostile_repo(tmp_path, {".env": "DB_PASSWORD=pw-envfile-7781xq\n", "keys/id_rsa": key})
    commit_link(repo, "settings.sh", ".env")
    commit_link(repo, "deploy_key.txt", "keys/id_rsa")
    persist = tmp_path / "index"
    assert index(repo, "--persist-dir", str(persist)).code == 0
    data = index_bytes(persist)
    assert (
        b"pw-envfile-7781xq" not in data
        and b"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ" not in data
    )
    index_ = ArelaIndex.load(persist, offline=True)
    assert (
        "settings.sh" not in index_.manifest.files and "deploy_key.txt" not in index_.manifest.files
    )
    assert index_.manifest.skipped.get("secret", 0) >= 4


# -- secrets in text indexed whatever it holds ------------------------------------------------

PRIVATE_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9OiZ1BjP5CE/Wm/Rr500P\n"
    "QzxwvTrbnmLkjhgFdsaPoiuYtrewQmnbvcxzLkjhgFdsaPoiuYtrewQm\n"
    "-----END RSA PRIVATE KEY-----"
)
TOKENS = {
    "aws_in_name": "AWS_KEY_AKIAQZXWVTRBNMLKJHGF",
    "github_after_underscore": "my_ghp_QzxwvTrbnmLkjhgFdsaPoiuYtrewQmnbvcxz",
    "terraform": 'secret_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzqxwvtrbnm"',
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJtYWxsb3J5In0.Qz8vTr7bnmLkjhgFdsaPoiu",
    "stripe": "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "slack_webhook": "https://hooks.slack.com/services/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",
    "database_url": "postgres://app:pw7781xq@db.internal/prod",
}
SECRET_PARTS = (
    "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9OiZ1BjP5CE",
    "QzxwvTrbnmLkjhgFdsaPoiuYtrewQmnbvcxzLkjhgFdsaPoiuYtrewQm",
    "END RSA PRIVATE KEY",
    "AKIAQZXWVTRBNMLKJHGF",
    "ghp_QzxwvTrbnmLkjhgFdsaPoiuYtrewQmnbvcxz",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzqxwvtrbnm",
    "eyJzdWIiOiJtYWxsb3J5In0",
    "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "B0ABCDE34/QzxwvTrbnmLkjhgFdsaPoiuY",
    "pw7781xq",
)


def leaked(text: str | bytes) -> list[str]:
    low = (text.decode("utf-8", "replace") if isinstance(text, bytes) else text).lower()
    return [part for part in SECRET_PARTS if part.lower() in low]


def test_a_private_key_in_a_commit_message_is_redacted_whole(tmp_path: Path) -> None:
    repo = hostile_repo(tmp_path)
    repo.commit(
        {"auth.py": APP["auth.py"] + "\n# rotated\n"},
        f"Rotate the deploy key\n\n{PRIVATE_KEY}\n\nDone.",
        author="Bob Chen",
        date="2024-03-01T10:00:00+00:00",
    )
    persist = tmp_path / "index"
    assert index(repo, "--persist-dir", str(persist)).code == 0
    assert leaked(index_bytes(persist)) == []  # audit.sqlite, its FTS tables and all the rest
    run = run_cli(
        "ask",
        "what changed recently?",
        "--explain",
        "--repo",
        str(repo.root),
        "--persist-dir",
        str(persist),
        "--offline",
    )
    assert run.code == 0, run.err
    assert "Rotate the deploy key" in run.out and "Done." in run.out
    assert leaked(run.out + run.err) == []


@pytest.mark.parametrize("name", sorted(TOKENS))
def test_credentials_in_code_and_commit_messages_stay_out(tmp_path: Path, name: str) -> None:
    token = TOKENS[name]
    repo = hostile_repo(
        tmp_path, {f"deploy/{name}.py": f'"""Deployment settings."""\nSETTING = 1\n{token}\n'}
    )
    repo.commit(
        {"auth.py": APP["auth.py"] + "\n# new key\n"},
        f"Configure deployment: {token}",
        author="Bob Chen",
    )
    persist = tmp_path / "index"
    assert index(repo, "--persist-dir", str(persist)).code == 0
    assert leaked(index_bytes(persist)) == []
    loaded = ArelaIndex.load(persist, offline=True)
    # A URL's password is redacted where it stands; any other credential leaves its file out.
    assert (f"deploy/{name}.py" in loaded.manifest.files) == (name == "database_url")
    run = run_cli(
        "ask",
        "what changed recently?",
        "--repo",
        str(repo.root),
        "--persist-dir",
        str(persist),
        "--offline",
    )
    assert run.code == 0 and leaked(run.out) == []
    assert "Configure deployment" in run.out


ENGINE = '''"""Connecting to the database."""


def create_engine(url):
    """Make an engine that opens pooled connections to the database at `url`.

    >>> engine = create_engine("postgresql://scott:tiger8191@localhost/test")
    """
    return Engine(url)
'''


def test_a_module_that_shows_a_connection_url_is_found_without_its_password(
    tmp_path: Path,
) -> None:
    """Docstrings write connection URLs with a password by example: the module stays in the
    index (it is the one a question about connecting is about), the password never does."""
    repo = hostile_repo(tmp_path, {"db/engine.py": ENGINE})
    persist = tmp_path / "index"
    assert index(repo, "--persist-dir", str(persist)).code == 0
    assert b"tiger8191" not in index_bytes(persist)
    run = run_cli(
        "ask",
        "how is an engine made that opens pooled connections to the database?",
        "--repo",
        str(repo.root),
        "--persist-dir",
        str(persist),
        "--offline",
        "--json",
    )
    assert run.code == 0 and "tiger8191" not in run.out
    answer = json.loads(run.out)
    assert answer["sources"][0]["file_path"] == "db/engine.py"
    assert "scott:[redacted]@localhost" in run.out
