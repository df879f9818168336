"""arela-index: a local-first code-context router for LlamaIndex.

>>> from arela_index import ArelaIndex
>>> index = ArelaIndex.from_repo(".")            # doctest: +SKIP
>>> print(index.as_query_engine().query("who calls load_config?"))  # doctest: +SKIP
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"


def _declare_selectors() -> None:
    """Make `arela_index.selectors` a real package, whatever the install.

    Its folder has no `__init__.py` so that, from the repository root, it can never shadow the
    standard library's `selectors` (asyncio imports it). A wheel installs it as
    `arela_index/selectors/`; an editable install leaves it at the top of the repository, where
    setuptools' editable finder does not resolve a nested package without an `__init__.py`.
    """
    here = Path(__file__).parent
    folder = here / "selectors"
    if not folder.is_dir():
        folder = here.parent / "selectors"
    package = types.ModuleType(f"{__name__}.selectors", "The selector: `ArelaSelector`.")
    package.__path__ = [str(folder)]
    package.__package__ = package.__name__

    def exports(name: str) -> Any:
        if name != "ArelaSelector":
            raise AttributeError(f"module {package.__name__!r} has no attribute {name!r}")
        from arela_index.selectors.arela_selector import ArelaSelector

        return ArelaSelector

    package.__getattr__ = exports  # type: ignore[method-assign]
    sys.modules.setdefault(package.__name__, package)


_declare_selectors()

# Public names load lazily so that `arela --help` and `import arela_index` stay fast.
_EXPORTS = {
    "ArelaIndex": "arela_index.index",
    "ArelaConfig": "arela_index.config",
    "ArelaError": "arela_index.errors",
    "Answer": "arela_index.cli.display",
    "ArelaSelector": "arela_index.selectors.arela_selector",
    "CodeMemoryRetriever": "arela_index.retrievers.code",
    "CodeGraphRetriever": "arela_index.retrievers.graph",
    "AuditLogRetriever": "arela_index.retrievers.audit",
    "RelevanceGrader": "arela_index.query.grading",
}

if TYPE_CHECKING:
    from arela_index.cli.display import Answer
    from arela_index.config import ArelaConfig
    from arela_index.errors import ArelaError
    from arela_index.index import ArelaIndex
    from arela_index.query.grading import RelevanceGrader
    from arela_index.retrievers.audit import AuditLogRetriever
    from arela_index.retrievers.code import CodeMemoryRetriever
    from arela_index.retrievers.graph import CodeGraphRetriever
    from arela_index.selectors.arela_selector import ArelaSelector


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'arela_index' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "Answer",
    "ArelaConfig",
    "ArelaError",
    "ArelaIndex",
    "ArelaSelector",
    "AuditLogRetriever",
    "CodeGraphRetriever",
    "CodeMemoryRetriever",
    "RelevanceGrader",
    "__version__",
]
