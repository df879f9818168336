"""The memory retrievers and the router: `from arela_index.retrievers import CodeMemoryRetriever`."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "CodeMemoryRetriever": ".code",
    "CodeGraphRetriever": ".graph",
    "AuditLogRetriever": ".audit",
    "ArelaRouterRetriever": ".router",
    "build_router": ".router",
}

if TYPE_CHECKING:
    from .audit import AuditLogRetriever
    from .code import CodeMemoryRetriever
    from .graph import CodeGraphRetriever
    from .router import ArelaRouterRetriever, build_router


def __getattr__(name: str) -> Any:
    # Lazy, so importing one retriever does not pay for the others' dependencies.
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module, __name__), name)


__all__ = [
    "ArelaRouterRetriever",
    "AuditLogRetriever",
    "CodeGraphRetriever",
    "CodeMemoryRetriever",
    "build_router",
]
