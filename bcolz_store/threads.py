"""The threads that encode and decode chunks: how many, and the pool they form.

Every chunk is compressed on its own (a chunk file is one Blosc buffer), and
python-blosc releases the GIL while it runs, so the chunks of one read, sum,
query or write can be decoded or encoded at once on several cores.  c-blosc
1.x itself would not: a chunk of 1 MiB is one Blosc block for 8-byte types,
which its own threads cannot split, and its context functions (those that
run without the GIL) start and join their threads on every call.  So the
unit of parallel work here is the chunk: a bounded pool of threads, each
running single-threaded Blosc on whole chunks, straight into the output.

:func:`set_nthreads` sets the size of the pool (default: the cores this
process may run on).  With one thread every task runs in the calling thread,
exactly as it would without a pool.  Results never depend on the number of
threads: each task writes only its own slice of the output, results are
combined in chunk order, and Blosc's bytes do not depend on threads.

The pool is made on first use (importing the package starts no thread); a
forked child makes its own.  A task that itself asks for parallel work runs
it inline, so a task never waits for the pool it is running on.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor, wait

from .errors import BcolzStoreError

__all__ = ["chunks_per_block", "cpu_count", "get_nthreads", "in_worker", "map_ordered",
           "set_nthreads", "window"]


def cpu_count() -> int:
    """Number of cores this process may run on (at least 1)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # pragma: no cover - not Linux
        return max(os.cpu_count() or 1, 1)


_lock = threading.Lock()
_nthreads = None          # None: cpu_count() on first use
_pool = None              # the ThreadPoolExecutor of _pool_size threads
_pool_size = 0
_local = threading.local()


def get_nthreads() -> int:
    """Threads that encode and decode chunks (see :func:`set_nthreads`)."""
    global _nthreads
    if _nthreads is None:
        _nthreads = cpu_count()
    return _nthreads


def set_nthreads(nthreads) -> int:
    """Set the number of threads that encode and decode chunks; return the previous number.

    Parameters
    ----------
    nthreads : int
        A positive number.  1 runs every chunk in the calling thread.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        If ``nthreads`` is not a positive integer.
    """
    import numbers
    if isinstance(nthreads, bool) or not isinstance(nthreads, numbers.Integral) or nthreads < 1:
        raise ValueError(f"nthreads must be a positive integer, not {nthreads!r}")
    previous = get_nthreads()
    global _nthreads
    _nthreads = int(nthreads)
    return previous


def in_worker() -> bool:
    """True in a thread of the pool (parallel work asked for there runs inline)."""
    return getattr(_local, "worker", False)


def _mark_worker() -> None:
    _local.worker = True


def _executor(size: int) -> ThreadPoolExecutor:
    """The pool, with ``size`` threads.  A pool of another size is replaced,
    not shut down: work still submitting to it finishes there, and its
    threads end once nothing refers to it."""
    global _pool, _pool_size
    with _lock:
        if _pool is None or _pool_size != size:
            _pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix="bcolz_store-chunks",
                                       initializer=_mark_worker)
            _pool_size = size
        return _pool


def _forget_pool_in_child() -> None:
    """A forked child has none of the parent's threads: it makes its own pool."""
    global _pool, _pool_size, _lock
    _pool = None
    _pool_size = 0
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


def window(nthreads: int | None = None) -> int:
    """Tasks in flight at once: twice the threads, so that a thread finishing
    a task finds the next one waiting (and memory stays bounded)."""
    return 2 * (get_nthreads() if nthreads is None else nthreads)


def chunks_per_block() -> int:
    """Chunks that a scan over consecutive blocks (a copy, a query's rows)
    should read at a time: one with one thread, else a window of them, so that
    each block is decoded in parallel."""
    size = get_nthreads()
    return 1 if size == 1 else window(size)


def _result(future):
    """``future.result()``; an error of the library is raised again from the
    caller's thread, without the pool thread's frames (``concurrent.futures``
    and the task's), its message and cause kept."""
    try:
        return future.result()
    except BcolzStoreError as err:
        raise err.with_traceback(None) from err.__cause__


def map_ordered(fn, items, limit: int | None = None):
    """Yield ``fn(item)`` for each of ``items``, in order, computed on the pool.

    At most ``limit`` tasks (default :func:`window`) are submitted and not yet
    yielded at any time, so whatever they hold (a decoded chunk, a compressed
    one) is bounded.  With one thread, fewer than two items, or inside a
    thread of the pool, every call runs in the calling thread.

    When a task raises, no further task is started, the running ones are
    waited for (they may write into buffers the caller owns), and the first
    error in item order is raised.  Closing the generator early does the
    same without raising.

    Parameters
    ----------
    fn : callable
        Called with one item; runs on a pool thread, without the GIL held by
        the caller.
    items : sequence or iterable
    limit : int, optional
        Tasks in flight at most (default twice the threads).

    Raises
    ------
    Exception
        What ``fn`` raised, for the first item that failed.
    """
    size = get_nthreads()
    if size == 1 or in_worker():
        for item in items:
            yield fn(item)
        return
    if hasattr(items, "__len__") and len(items) < 2:
        for item in items:
            yield fn(item)
        return
    pool = _executor(size)
    limit = max(limit or window(size), 1)
    pending = deque()
    source = iter(items)
    try:
        for item in source:
            pending.append(pool.submit(fn, item))
            if len(pending) >= limit:
                yield _result(pending.popleft())
        while pending:
            yield _result(pending.popleft())
    finally:
        if pending:       # an error, or the consumer stopped early
            for future in pending:
                future.cancel()
            wait(pending)
