"""The package imports the same way from the repository root (editable install) and as an installed
wheel, never shadows the standard library's `selectors` (which asyncio imports), and exposes
nothing of the repository but the package."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STDLIB = sysconfig.get_paths()["stdlib"]
CHECK = (
    "import asyncio, selectors, arela_index, arela_index.selectors.arela_selector as s, "
    "arela_index.retrievers as r; from arela_index.selectors import ArelaSelector; "
    "print(selectors.__file__); print(s.__file__); print(r.__file__)"
)
SUBPACKAGES = ("cli", "indexing", "llm", "parsing", "query", "stores", "text")


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
