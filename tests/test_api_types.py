"""The public API says what it returns: each annotation of ArelaIndex is the class it hands out."""

from __future__ import annotations

import typing
from pathlib import Path

import pytest
from support.routing_repos import build_taskq

import arela_index.index as index_module
from arela_index.index import ArelaIndex

METHODS = [
    "as_retriever",
    "as_query_engine",
    "as_chat_engine",
    "as_tool",
    "code_retriever",
    "graph_retriever",
    "audit_retriever",
    "selector",
]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> ArelaIndex:
    root = build_taskq(tmp_path_factory.mktemp("types") / "taskq").root
    persist = tmp_path_factory.mktemp("types-index") / "index"
    return ArelaIndex.build(root, offline=True, persist_dir=str(persist), show_progress=False)


@pytest.mark.parametrize("name", METHODS)
def test_each_method_returns_what_its_annotation_says(index: ArelaIndex, name: str) -> None:
    from llama_index.core.chat_engine.types import BaseChatEngine
    from llama_index.core.tools import QueryEngineTool

    from arela_index.query.engines import ArelaQueryEngine, ArelaRetriever
    from arela_index.retrievers.audit import AuditLogRetriever
    from arela_index.retrievers.code import CodeMemoryRetriever
    from arela_index.retrievers.graph import CodeGraphRetriever
    from arela_index.selectors.arela_selector import ArelaSelector

    public = [
        BaseChatEngine,
        QueryEngineTool,
        ArelaQueryEngine,
        ArelaRetriever,
        AuditLogRetriever,
        CodeMemoryRetriever,
        CodeGraphRetriever,
        ArelaSelector,
    ]
    names = {**vars(index_module), **{cls.__name__: cls for cls in public}}
    returns = typing.get_type_hints(getattr(ArelaIndex, name), globalns=names)["return"]
    assert returns in public
    assert isinstance(getattr(index, name)(), returns)


def test_afrom_repo_is_a_coroutine_function() -> None:
    import inspect

    assert inspect.iscoroutinefunction(ArelaIndex.afrom_repo)
    assert Path(inspect.getfile(ArelaIndex.afrom_repo)).name == "index.py"
