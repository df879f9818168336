"""The one build step pyproject.toml cannot say: a typing stub that makes `arela_index.selectors`
a package to type checkers. Its folder, selectors/, has no `__init__.py` on purpose (from the
repository root it must never shadow the standard library's `selectors`), and no stub may sit
there either (mypy, run from the root, would read it as that module); so the stub is written
into the package as built, for wheels and strict editable installs alike."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

STUB = '''"""The selector: `from arela_index.selectors import ArelaSelector`."""

from arela_index.selectors.arela_selector import ArelaSelector as ArelaSelector

__all__ = ["ArelaSelector"]
'''


class BuildWithStub(build_py):
    """`build_py`, and the stub `arela_index/selectors/__init__.pyi` in the package it builds."""

    def run(self) -> None:
        super().run()
        self._stub().parent.mkdir(parents=True, exist_ok=True)
        self._stub().write_text(STUB, encoding="utf-8")

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), str(self._stub())]

    def _stub(self) -> Path:
        return Path(self.build_lib, "arela_index", "selectors", "__init__.pyi")


setup(cmdclass={"build_py": BuildWithStub})
