"""`arela mcp` on the command line: its mistakes are one clear line, and the SDK stays off the
path of every other command (`arela --help` and `arela ask` never import it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.gitrepo import GitRepo
from support.harness import assert_one_clear_line, run_cli

# Runs `arela ARGS`, then says whether anything of the MCP SDK, the watcher or the HTTP server
# was imported on the way.
PROBE = """
import sys
from arela_index.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
heavy = [m for m in sys.modules if m.split(".")[0] in {"mcp", "watchfiles", "uvicorn"}]
print("\\nimported:", heavy[:3])
"""
# The same `arela mcp` with the SDK's import failing, as where the extra is not installed.
WITHOUT_SDK = """
import sys
class NoSDK:
    def find_spec(self, name, path=None, target=None):
        if name == "mcp" or name.startswith("mcp."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, NoSDK())
from arela_index.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def probe(*args: str, script: str = PROBE) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=300
    )


def test_help_and_ask_never_import_the_sdk(git_repo: GitRepo) -> None:
    git_repo.commit({"app.py": "def main():\n    return 1\n"}, "first")
    for args in (
        ["--help"],
        ["mcp", "--help"],
        ["ask", "who calls main?", "--repo", str(git_repo.root), "--offline"],
    ):
        done = probe(*args)
        assert done.stdout.rstrip().endswith("imported: []"), (args, done.stdout, done.stderr)
    assert "--http PORT" in probe("mcp", "--help").stdout


def test_mistakes_are_one_clear_line(tmp_path: Path, git_repo: GitRepo) -> None:
    pytest.importorskip("mcp", reason="without the extra, the first line names the SDK")
    git_repo.commit({"app.py": "x = 1\n"}, "first")
    repo = str(git_repo.root)
    assert_one_clear_line(run_cli("mcp", "--repo", str(tmp_path / "nowhere")), "no such folder")
    assert_one_clear_line(
        run_cli("mcp", "--repo", repo, "--repo", repo), "the same repository is given twice"
    )
    assert_one_clear_line(
        run_cli(
            "mcp", "--repo", repo, "--repo", str(tmp_path), "--persist-dir", str(tmp_path / "i")
        ),
        "--persist-dir names one index",
    )
    done = run_cli("mcp", "--repo", repo, "--http", "0")
    assert done.code == 2 and "must be a port from 1 to 65535" in done.err


def test_without_the_extra_it_says_what_to_install(git_repo: GitRepo) -> None:
    git_repo.commit({"app.py": "x = 1\n"}, "first")
    done = probe("mcp", "--repo", str(git_repo.root), "--offline", script=WITHOUT_SDK)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "arela: `arela mcp` needs the MCP SDK (mcp is not installed): "
        "pip install 'arela-index[mcp]'"
    )
