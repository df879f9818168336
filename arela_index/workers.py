"""Blocking work that async callers await runs in a few threads of arela-index's own.

Routing, searching and grading are CPU work under the interpreter lock: more threads than cores
add no throughput, and every extra thread is one more that the event loop's thread queues behind
each time it takes the lock back (after a syscall, a span's uuid, a future's wake-up). On 2 busy
cores, under 20 concurrent `aretrieve` calls, the loop's longest stalls ran 50-155 ms with 6
threads (Python's default executor) and 24-41 ms with 2 (`benchmarks/bench_async.py --threads`).
`ARELA_ASYNC_THREADS` sets the count (default: the number of cores, at least 2).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from arela_index.errors import ArelaError

P = ParamSpec("P")
T = TypeVar("T")
_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def threads() -> int:
    """How many threads run awaited work: ARELA_ASYNC_THREADS, else the cores (at least 2)."""
    raw = os.environ.get("ARELA_ASYNC_THREADS", "").strip()
    if not raw:
        return max(2, os.cpu_count() or 2)
    if not raw.isdigit() or int(raw) < 1:
        raise ArelaError(
            f"ARELA_ASYNC_THREADS={raw!r} must be a whole number of threads, 1 or more"
        )
    return int(raw)


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(threads(), thread_name_prefix="arela-async")
        return _pool


async def offload(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`fn(*args, **kwargs)` in arela-index's threads, with the caller's context variables, as
    `asyncio.to_thread` does in the loop's default executor.

    >>> asyncio.run(offload(sum, [1, 2, 3]))
    6
    """
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(_executor(), call)
