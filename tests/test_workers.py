"""Awaited work runs in arela-index's own few threads, with the caller's context variables."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

from arela_index.errors import ArelaError
from arela_index.workers import offload, threads

REQUEST: contextvars.ContextVar[str] = contextvars.ContextVar("request")


def test_offloaded_work_runs_off_the_loop_with_the_callers_context() -> None:
    def where() -> tuple[int, str, str]:
        return threading.get_ident(), threading.current_thread().name, REQUEST.get()

    async def ask() -> tuple[int, tuple[int, str, str]]:
        REQUEST.set("question 7")
        return threading.get_ident(), await offload(where)

    loop_thread, (thread, name, request) = asyncio.run(ask())
    assert thread != loop_thread and name.startswith("arela-async")
    assert request == "question 7"


def test_the_thread_count_is_the_cores_unless_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARELA_ASYNC_THREADS", raising=False)
    assert threads() >= 2
    monkeypatch.setenv("ARELA_ASYNC_THREADS", "3")
    assert threads() == 3
    monkeypatch.setenv("ARELA_ASYNC_THREADS", "many")
    with pytest.raises(ArelaError, match="ARELA_ASYNC_THREADS='many' must be a whole number"):
        threads()
