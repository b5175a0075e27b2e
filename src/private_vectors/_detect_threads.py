"""Long-lived threads for text-stage calls that run under a timeout.

A detector call with a timeout runs on another thread, so the caller can stop waiting. Each
call used to get a thread of its own, which exited afterwards. When a thread exits, glibc puts
its malloc arena, with the freed raw text still in it, on a free list, and the next thread the
process starts takes it over: Chroma's writer threads among them, whose HNSW files persist
uninitialised memory (:mod:`private_vectors.integrations.chroma_files`). Raw documents freed
in exited detector threads were found in ``data_level0.bin`` this way; freed on a thread that
stays alive, they were not (``benchmarks/chroma_heap.py``).

So the calls share one process-wide pool whose threads live as long as the process: this
module's only state, kept on purpose (``tests/test_chroma_index_files.py`` shows why). A
call that times out keeps its thread busy; the pool is then replaced, so later calls are not
queued behind it. A forked child starts a pool of its own (threads do not survive a fork).
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["call_with_timeout"]

T = TypeVar("T")
_MAX_THREADS = 32  # threads start only when every live one is busy (concurrent callers)
_GUARD = threading.Lock()
_POOL: concurrent.futures.ThreadPoolExecutor | None = None


def _pool() -> concurrent.futures.ThreadPoolExecutor:
    global _POOL
    with _GUARD:
        if _POOL is None:
            _POOL = concurrent.futures.ThreadPoolExecutor(max_workers=_MAX_THREADS,
                                                          thread_name_prefix="private_vectors-detect")
        return _POOL


def _forget_in_child() -> None:
    """A forked child has none of the parent's threads: it starts its own pool when needed."""
    global _POOL
    _POOL = None


os.register_at_fork(after_in_child=_forget_in_child)


def _retire(pool: concurrent.futures.ThreadPoolExecutor) -> None:
    global _POOL
    with _GUARD:
        if _POOL is pool:
            _POOL = None
    pool.shutdown(wait=False, cancel_futures=True)


def call_with_timeout(fn: Callable[..., T], *args: object, timeout: float) -> T:
    """``fn(*args)`` on a long-lived thread, waiting at most ``timeout`` seconds.

    Raises:
        concurrent.futures.TimeoutError: the call took longer (it is not interrupted).
    """
    pool = _pool()
    future = pool.submit(fn, *args)
    try:
        return future.result(timeout=timeout)
    except concurrent.futures.TimeoutError:
        _retire(pool)
        raise
