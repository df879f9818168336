"""arela-index: a local-first code-context router for LlamaIndex.

>>> from arela_index import ArelaIndex
>>> index = ArelaIndex.from_repo(".")            # doctest: +SKIP
>>> print(index.as_query_engine().query("who calls load_config?"))  # doctest: +SKIP
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# In a source checkout retrievers/ and selectors/ sit beside this folder; an installed wheel
# puts them inside it. Extending __path__ only in the first case keeps both layouts importable
# as arela_index.retrievers / arela_index.selectors without a top-level `selectors` package.
_here = os.path.dirname(os.path.abspath(__file__))
if not os.path.isdir(os.path.join(_here, "retrievers")):
    __path__.append(os.path.dirname(_here))

# Public names load lazily so that `arela --help` and `import arela_index` stay fast.
_EXPORTS = {
    "ArelaIndex": "arela_index.index",
    "ArelaConfig": "arela_index.config",
    "ArelaError": "arela_index.errors",
    "Answer": "arela_index.display",
    "ArelaSelector": "arela_index.selectors.arela_selector",
    "CodeMemoryRetriever": "arela_index.retrievers.code",
    "CodeGraphRetriever": "arela_index.retrievers.graph",
    "AuditLogRetriever": "arela_index.retrievers.audit",
}

if TYPE_CHECKING:
    from arela_index.config import ArelaConfig
    from arela_index.display import Answer
    from arela_index.errors import ArelaError
    from arela_index.index import ArelaIndex
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
    "__version__",
]
