"""Sync and async from one definition: code that waits (on a memory, an embedder or a model) is
a generator that yields a `Call` where it waits; `run` makes each call in line, `arun` awaits it.

No event loop is started for a sync caller, and an async caller is never blocked by a sync call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Call(Generic[T]):
    """One wait, said both ways: `sync()` returns the value, `async_()` is awaited for it.

    >>> import asyncio
    >>> def doubled(x: int) -> Steps[int]:
    ...     found = yield Call(lambda: x, lambda: asyncio.sleep(0, x))
    ...     return 2 * found
    >>> run(doubled(21))
    42
    """

    sync: Callable[[], T]
    async_: Callable[[], Awaitable[T]]


# A definition that waits: yields Calls, is sent their values, returns R.
Steps = Generator[Call[Any], Any, R]


def run(steps: Steps[R]) -> R:
    """Drive `steps` synchronously; a call's exception is raised inside `steps`, where it waited."""
    try:
        call = next(steps)
        while True:
            try:
                value = call.sync()
            except Exception as exc:
                call = steps.throw(exc)
            else:
                call = steps.send(value)
    except StopIteration as done:
        return done.value


async def arun(steps: Steps[R]) -> R:
    """Drive `steps` in the running event loop, awaiting each call."""
    try:
        call = next(steps)
        while True:
            try:
                value = await call.async_()
            except Exception as exc:
                call = steps.throw(exc)
            else:
                call = steps.send(value)
    except StopIteration as done:
        return done.value


def structured_call(llm: Any, output_cls: type[T], prompt: Any, **variables: Any) -> Call[T]:
    """Ask a model for an `output_cls` (`arela_index.llm.ollama.structured`), either way."""
    from arela_index.llm.ollama import astructured, structured

    return Call(
        lambda: structured(llm, output_cls, prompt, **variables),  # type: ignore[type-var]
        lambda: astructured(llm, output_cls, prompt, **variables),  # type: ignore[type-var]
    )
