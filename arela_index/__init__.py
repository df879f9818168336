"""arela-index: a local-first code-context router for LlamaIndex.

>>> from arela_index import ArelaIndex
>>> index = ArelaIndex.from_repo(".")            # doctest: +SKIP
>>> print(index.as_query_engine().query("who calls load_config?"))  # doctest: +SKIP
"""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"


def _declare_subpackages() -> None:
    """Make `arela_index.retrievers` and `arela_index.selectors` packages, whatever the install.

    Both folders sit at the top of the repository and install inside the package: a wheel, or a
    strict editable install's link tree, puts them there; from the repository root, where this
    folder is the package, they are read where they are. selectors/ has no `__init__.py` so that
    from the root it can never shadow the standard library's `selectors` (asyncio imports it).
    """
    here = Path(__file__).parent
    installed = (here / "retrievers").is_dir()
    root = here if installed else here.parent
    if not installed and f"{__name__}.retrievers" not in sys.modules:
        # The repository's layout: retrievers/ is imported from where it is.
        folder = root / "retrievers"
        spec = importlib.util.spec_from_file_location(
            f"{__name__}.retrievers",
            folder / "__init__.py",
            submodule_search_locations=[str(folder)],
        )
        assert spec is not None and spec.loader is not None
        sys.modules[spec.name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[spec.name])
    package = types.ModuleType(f"{__name__}.selectors", "The selector: `ArelaSelector`.")
    package.__path__ = [str(root / "selectors")]
    package.__package__ = package.__name__

    def exports(name: str) -> Any:
        if name != "ArelaSelector":
            raise AttributeError(f"module {package.__name__!r} has no attribute {name!r}")
        from arela_index.selectors.arela_selector import ArelaSelector

        return ArelaSelector

    package.__getattr__ = exports  # type: ignore[method-assign]
    sys.modules.setdefault(package.__name__, package)


_declare_subpackages()

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
