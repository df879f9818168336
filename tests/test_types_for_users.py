"""A LlamaIndex app that imports arela-index as the README shows type-checks against the package
as installed here (`make install`: an editable install), with mypy and with pyright: both find
`arela_index`, and `ArelaSelector` in `arela_index.selectors`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each checker reads the package and what it imports

APP = """from llama_index.core.llms import MockLLM
from llama_index.core.retrievers import RouterRetriever
from llama_index.core.tools import RetrieverTool

from arela_index import ArelaIndex
from arela_index.retrievers import CodeMemoryRetriever
from arela_index.selectors import ArelaSelector


def router(index: ArelaIndex, tools: list[RetrieverTool]) -> RouterRetriever:
    code: CodeMemoryRetriever = index.code_retriever(top_k=3)
    tools.append(RetrieverTool.from_defaults(code, name="code", description="The code."))
    return RouterRetriever(selector=ArelaSelector(), retriever_tools=tools, llm=MockLLM())
"""
# A mistake of the app's own: proof that the checker read the app, not that it gave up.
MISTAKE = 'limit: int = "eight"\n'


@pytest.fixture
def app(tmp_path: Path) -> Path:
    """The app in a folder of its own: nothing of the repository is on the checker's path."""
    (tmp_path / "app.py").write_text(APP + MISTAKE, encoding="utf-8")
    return tmp_path


def test_mypy_finds_the_package_and_the_selector(app: Path) -> None:
    # The app's dependencies besides arela-index are read as Any: what is checked is arela-index.
    skipped = "llama_index.*,qdrant_client.*,numpy.*,networkx.*,faiss.*,pydantic.*,tree_sitter.*"
    (app / "mypy.ini").write_text(f"[mypy]\n[mypy-{skipped}]\nfollow_imports = skip\n")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "mypy.ini", "app.py"],
        cwd=app,
        capture_output=True,
        text=True,
        timeout=600,
    )
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert errors == [
        f"app.py:{APP.count(chr(10)) + 1}: error: Incompatible types in assignment "
        '(expression has type "str", variable has type "int")  [assignment]'
    ], done.stdout


def test_pyright_finds_the_package_and_the_selector(app: Path) -> None:
    if shutil.which("node") is None:
        pytest.skip("pyright runs on Node.js, which this machine lacks")
    done = subprocess.run(
        [sys.executable, "-m", "pyright", "--outputjson", "--pythonpath", sys.executable, "app.py"],
        cwd=app,
        capture_output=True,
        text=True,
        timeout=600,
    )
    try:
        report = json.loads(done.stdout)
    except ValueError:
        pytest.skip(f"pyright could not run here: {(done.stderr or done.stdout).strip()[:200]}")
    errors = [
        (d["range"]["start"]["line"] + 1, d["message"].splitlines()[0])
        for d in report["generalDiagnostics"]
        if d["severity"] == "error"
    ]
    assert [line for line, _ in errors] == [APP.count("\n") + 1], errors
