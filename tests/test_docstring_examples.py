"""Every example in the package's docstrings runs and shows what it says, imported by the names a
user imports (`arela_index.selectors...`, never the bare folder, which would shadow the standard
library's `selectors`). Examples that need a built index or a model are marked `+SKIP`."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = (
    (ROOT / "arela_index", "arela_index"),
    (ROOT / "retrievers", "arela_index.retrievers"),
    (ROOT / "selectors", "arela_index.selectors"),
)


def _module_names() -> list[str]:
    names = []
    for folder, package in FOLDERS:
        for path in sorted(folder.rglob("*.py")):
            if path.name == "__main__.py":
                continue  # running it is the CLI
            parts = [p for p in path.relative_to(folder).with_suffix("").parts if p != "__init__"]
            names.append(".".join([package, *parts]))
    return names


@pytest.mark.parametrize("name", _module_names())
def test_docstring_examples_show_what_they_say(name: str) -> None:
    module = importlib.import_module(name)
    # verbose=False: left unset, doctest turns verbose when "-v" is on the command line (`pytest
    # -v`), and its "Trying:" lines would read as failures.
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    runner = doctest.DocTestRunner(verbose=False, optionflags=flags)
    failed: list[str] = []
    for test in doctest.DocTestFinder(exclude_empty=True).find(module, name):
        runner.run(test, out=failed.append)
    assert not failed, "".join(failed)
