"""The package imports the same way from the repository root (editable install) and as an installed
wheel, never shadows the standard library's `selectors` (which asyncio imports), exposes
nothing of the repository but the package, and has no import cycle."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent
STDLIB = sysconfig.get_paths()["stdlib"]
CHECK = (
    "import asyncio, selectors, arela_index, arela_index.selectors.arela_selector as s, "
    "arela_index.retrievers as r; from arela_index.selectors import ArelaSelector; "
    "from arela_index import RelevanceGrader, ArelaIndex; "
    "print(selectors.__file__); print(s.__file__); print(r.__file__)"
)
SUBPACKAGES = ("cli", "indexing", "llm", "parsing", "policy", "query", "stores", "text")


def _run(cwd: Path, env: dict[str, str] | None = None) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", CHECK],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def _modules() -> dict[str, Path]:
    """Every module of the installed package by dotted name, retrievers/ and selectors/ included."""
    found = {}
    for folder, package in (
        (ROOT / "arela_index", "arela_index"),
        (ROOT / "retrievers", "arela_index.retrievers"),
        (ROOT / "selectors", "arela_index.selectors"),
    ):
        for path in folder.rglob("*.py"):
            parts = [p for p in path.relative_to(folder).with_suffix("").parts if p != "__init__"]
            found[".".join([package, *parts])] = path
    return found


def _imported(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules `name` imports when it runs: functions' imports too, not those
    under `if TYPE_CHECKING:` (the type checker's only)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for inner in ast.walk(node)
    }
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
                for _ in range(node.level - 1):
                    package = package.rsplit(".", 1)[0]
                base = package + (f".{node.module}" if node.module else "")
            targets = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules]
            out.update(targets or [base])
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {t for t in out if t in modules and t != name}


def test_no_import_cycles() -> None:
    modules = _modules()
    graph = nx.DiGraph()
    for name, path in modules.items():
        graph.add_node(name)
        graph.add_edges_from((name, target) for target in _imported(name, path, modules))
    assert graph.number_of_edges() > 100  # the graph was read, not empty
    assert "arela_index.stores.code_search" in graph["arela_index.stores.code"]
    assert list(nx.simple_cycles(graph)) == []


def test_selectors_folder_has_no_init() -> None:
    assert (ROOT / "selectors").is_dir()
    assert not (ROOT / "selectors" / "__init__.py").exists()


def test_from_the_repository_root_the_stdlib_selectors_wins() -> None:
    stdlib_selectors, ours, retrievers = _run(ROOT)
    assert stdlib_selectors.startswith(STDLIB)
    assert ours.startswith(str(ROOT / "selectors"))
    assert retrievers.startswith(str(ROOT / "retrievers"))


@pytest.mark.parametrize("name", ["tests", "benchmarks", "examples", "scripts"])
def test_the_package_is_not_the_repository(name: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", f"import arela_index.{name}"], cwd=ROOT, capture_output=True
    )
    assert done.returncode != 0, f"arela_index.{name} imports: the package reaches outside itself"


@pytest.mark.slow
def test_installed_wheel_imports_without_shadowing(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    # Built from a copy: setuptools leaves a build/ folder behind in the tree it builds.
    source = tmp_path / "source"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", ".typecheck", "build", ".arela", "*.egg-info"
        ),
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(wheels),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheels.glob("arela_index-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "arela_index/selectors/arela_selector.py" in names
    # What makes `arela_index.selectors` a package to type checkers (setup.py writes it).
    assert "arela_index/selectors/__init__.pyi" in names
    assert "arela_index/retrievers/code.py" in names
    assert all(f"arela_index/{sub}/__init__.py" in names for sub in SUBPACKAGES)
    assert not any(n.startswith(("selectors/", "retrievers/")) for n in names)
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    stdlib_selectors, ours, retrievers = _run(elsewhere, {"PYTHONPATH": str(target)})
    assert stdlib_selectors.startswith(STDLIB)
    assert ours.startswith(str(target / "arela_index" / "selectors"))
    assert retrievers.startswith(str(target / "arela_index" / "retrievers"))


def test_the_decisions_sit_below_the_selector_and_the_query_loop() -> None:
    """Data flows one way: the query loop uses the router, the selector and the policy; none of
    them imports the loop, and the policy imports neither the selector nor the retrievers."""
    modules = _modules()
    above = {
        "arela_index.selectors": ("arela_index.query",),
        "arela_index.retrievers": ("arela_index.query",),
        "arela_index.policy": (
            "arela_index.query",
            "arela_index.selectors",
            "arela_index.retrievers",
        ),
    }
    for name, path in modules.items():
        for package, forbidden in above.items():
            if name.startswith(package + "."):
                reached = [t for t in _imported(name, path, modules) if t.startswith(forbidden)]
                assert reached == [], f"{name} imports {reached}"
