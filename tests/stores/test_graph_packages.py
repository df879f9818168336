"""A Python file is named as Python imports it: by its packages (folders with an `__init__.py`),
the folder above the top one being its source root (`lib/pkg/sub/mod.py` is `pkg.sub.mod`), so
the calls written through `from pkg.sub import mod` reach it; a file outside any package keeps
its path name; a refresh after an `__init__.py` comes or goes is the full build's."""

from __future__ import annotations

from pathlib import Path

from support.gitrepo import GitRepo
from support.graph_repos import graph_files

from arela_index.config import ArelaConfig
from arela_index.index import ArelaIndex
from arela_index.indexing.build import build_index
from arela_index.llm.runtime import detect
from arela_index.parsing.modules import python_modules
from arela_index.stores.graph import GraphStore

LIB: dict[str, str | bytes] = {
    "lib/pkg/__init__.py": "from .sub.mod import func\n",
    "lib/pkg/sub/__init__.py": "",
    "lib/pkg/sub/mod.py": "def func():\n    return 1\n",
    "lib/pkg/sub/other.py": (
        "from .mod import func\nfrom .. import sub\n\n\ndef use():\n    return func()\n"
    ),
    # Syntax newer than Python 3.11 (parsed by tree-sitter there): its relative import too.
    "lib/pkg/sub/modern.py": (
        'from .mod import func\n\n\ndef show(d):\n    return f"{d["k"]}" + str(func())\n'
    ),
    "tests/test_mod.py": (
        "from pkg.sub import mod\n\n\ndef test_func():\n    assert mod.func() == 1\n"
    ),
    "src/app/__init__.py": "",
    "src/app/core.py": "def run():\n    return 2\n",
    "src/tool.py": "from app.core import run\n\n\ndef main():\n    return run()\n",
    "setup.py": "def setup():\n    pass\n",
}


def _index(root: Path, persist: Path, refresh: bool = False) -> GraphStore:
    config = ArelaConfig(offline=True, show_progress=False, persist_dir=str(persist))
    build_index(root, config, detect(config), refresh=refresh)
    return ArelaIndex.load(persist, offline=True).graph


def _chunk_symbols(persist: Path) -> list[tuple[str, str]]:
    """The code memory's chunks by file and symbol: a chunk names its symbol's module too."""
    chunks = ArelaIndex.load(persist, offline=True).code.chunks
    return sorted((c.metadata["file_path"], c.metadata["symbol"] or "") for c in chunks)


def _callers(graph: GraphStore, qualname: str) -> set[str]:
    return {link.symbol for link in graph.callers(qualname) if link.resolved}


def test_a_package_under_lib_is_named_and_called_as_it_is_imported(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    repo.commit(LIB, "first")
    graph = _index(repo.root, tmp_path / "index")
    func = graph.symbol("pkg.sub.mod.func")
    assert func is not None and func["path"] == "lib/pkg/sub/mod.py"
    assert graph.symbol("lib.pkg.sub.mod.func") is None
    # The test calls it through an absolute import, a sibling through a relative one.
    assert _callers(graph, "pkg.sub.mod.func") == {
        "tests.test_mod.test_func",
        "pkg.sub.other.use",
        "pkg.sub.modern.show",
    }
    importers = {link.symbol for link in graph.importers("pkg.sub.mod")}
    assert {"tests.test_mod", "pkg.sub.other", "pkg"} <= importers
    assert "pkg.sub" in {link.symbol for link in graph.imports("pkg.sub.other.use")}
    # src/ layout as before; files outside any package keep their path names.
    assert graph.symbol("app.core.run") is not None
    assert _callers(graph, "app.core.run") == {"src.tool.main"}
    assert graph.symbol("tests.test_mod.test_func") is not None
    assert graph.symbol("setup.setup") is not None


def test_a_package_named_as_another_keeps_its_path_names_and_every_symbol(
    tmp_path: Path,
) -> None:
    files: dict[str, str | bytes] = {
        "foo/__init__.py": "def real():\n    return 1\n",
        "tests/foo/__init__.py": "def fake():\n    return 2\n",
        "tests/foo/helpers.py": "from . import fake\n\n\ndef helper():\n    return fake()\n",
        "tests/test_foo.py": "from foo import real\n\n\ndef test_real():\n    real()\n",
    }
    repo = GitRepo(tmp_path / "repo")
    repo.commit(files, "first")
    graph = _index(repo.root, tmp_path / "index")
    assert graph.symbol("foo.real")["path"] == "foo/__init__.py"
    assert graph.symbol("tests.foo.fake")["path"] == "tests/foo/__init__.py"
    # The whole shadowed package keeps its path names: its relative import still means it.
    assert graph.symbol("tests.foo.helpers.helper")["path"] == "tests/foo/helpers.py"
    assert _callers(graph, "tests.foo.fake") == {"tests.foo.helpers.helper"}
    assert _callers(graph, "foo.real") == {"tests.test_foo.test_real"}
    assert python_modules(reversed(list(files))) == python_modules(files)
    # Of two trees of one name elsewhere, the one with more modules keeps it, whatever the order
    # (data/pkg keeps its path names: it is not among the names that differ from them).
    fixture = ["data/pkg/__init__.py", "lib/pkg/__init__.py", "lib/pkg/x.py"]
    assert python_modules(fixture) == python_modules(reversed(fixture))
    assert python_modules(fixture) == {"lib/pkg/__init__.py": "pkg", "lib/pkg/x.py": "pkg.x"}


def test_a_refresh_after_an_init_file_comes_or_goes_is_the_full_builds(tmp_path: Path) -> None:
    files = {p: t for p, t in LIB.items() if p != "lib/pkg/__init__.py"}
    repo = GitRepo(tmp_path / "repo")
    repo.commit(files, "first")
    refreshed = tmp_path / "refreshed"
    before = _index(repo.root, refreshed)
    assert before.symbol("sub.mod.func") is not None  # lib/pkg is no package yet: sub is the top
    repo.commit({"lib/pkg/__init__.py": LIB["lib/pkg/__init__.py"]}, "a package")
    after = _index(repo.root, refreshed, refresh=True)
    assert after.symbol("pkg.sub.mod.func") is not None
    assert "tests.test_mod.test_func" in _callers(after, "pkg.sub.mod.func")
    full = tmp_path / "full"
    _index(repo.root, full)
    assert graph_files(refreshed) == graph_files(full)
    assert ("lib/pkg/sub/mod.py", "pkg.sub.mod.func") in _chunk_symbols(refreshed)
    assert _chunk_symbols(refreshed) == _chunk_symbols(full)

    repo.delete("lib/pkg/__init__.py")
    repo.commit({}, "no package")
    gone = _index(repo.root, refreshed, refresh=True)
    assert gone.symbol("sub.mod.func") is not None
    assert gone.symbol("pkg.sub.mod.func") is None
    again = tmp_path / "again"
    _index(repo.root, again)
    assert graph_files(refreshed) == graph_files(again)
    assert _chunk_symbols(refreshed) == _chunk_symbols(again)
