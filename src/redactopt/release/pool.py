"""The release's process pool: distinct designs computed on several processes, the same results as one.

:func:`pool_map` shares a list of design calls between this process and a pool of worker
processes (a fork server with redactopt's design code preloaded, started early by
:func:`warm_pool`); the workers never run the caller's ``__main__`` and leave Ctrl-C to the
process that started them, which stops them at once.  Designs are deterministic, so where
each one runs changes nothing but the time.
"""

from __future__ import annotations

import collections
import concurrent.futures
import multiprocessing
import os
import signal
import sys
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from redactopt import _progress

__all__ = ["MapDesigns", "pool_map", "warm_pool", "worker_count"]

#: ``map_designs(fn, argument tuples)`` returns ``[fn(*a) for a in argument tuples]`` in order.
MapDesigns = Callable[[Callable, list[tuple]], list]

#: Serialises :func:`_without_main` across threads.
_MAIN_LOCK = threading.RLock()


@contextmanager
def _without_main() -> Iterator[None]:
    """Start worker processes without running the caller's ``__main__`` again in them.

    A fresh worker normally re-imports the main script (multiprocessing's "spawn" and
    "forkserver"), which runs a script's top-level code — a library call without an
    ``if __name__ == "__main__"`` guard would start a release in every worker.  The workers
    only run :func:`redactopt.engine.cache.design_shape` on keys (redactopt's own classes),
    so the main module is hidden while they start.
    """
    with _MAIN_LOCK:  # one swap at a time: releases started from several threads restore it in order
        main = sys.modules.get("__main__")
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            yield
        finally:
            if main is not None:
                sys.modules["__main__"] = main


def _pool_context() -> multiprocessing.context.BaseContext:
    """Fork server with redactopt's design code preloaded where there is one, else spawn."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["redactopt.engine.cache"])
        return ctx
    return multiprocessing.get_context("spawn")


def worker_count(workers: int | None) -> int:
    count = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1) \
        if workers is None else int(workers)
    if count < 1:
        raise ValueError(f"workers must be >= 1, got {workers!r}")
    return count


def warm_pool(workers: int | None) -> None:
    """Start the fork server of :func:`pool_map` now, without waiting for it.

    It imports redactopt's design code (about a second) in its own process while the caller
    goes on (a release scans its input meanwhile); the pool's workers then start at once.
    Nothing happens for one worker or where there is no fork server.  Changes only the time.
    """
    if worker_count(workers) < 2 or "forkserver" not in multiprocessing.get_all_start_methods():
        return
    from multiprocessing import forkserver

    with _without_main():
        _pool_context()
        _adopt_temp_dir()
        forkserver.ensure_running()


@contextmanager
def pool_map(workers: int | None) -> Iterator[MapDesigns]:
    """A ``map_designs`` over this process and a pool of ``workers - 1`` more (default: every core).

    Every call shares its designs out: the pool's processes take them from the front, one
    each at a time (a feeder thread hands a process the next one as soon as it is free), and
    this process takes them from the back, so ``workers`` designs run at once and nothing
    waits in a queue while a process is idle; a call with a single design never leaves this
    process.  The pool starts at the first call with two or more designs and is shut down on
    leaving the ``with`` block.  Its workers come from a fork server with redactopt's design
    code preloaded (fresh processes, not forks of this one, which may be running pyarrow's
    threads; :func:`warm_pool` starts it early), and never run the caller's main script
    (:func:`_without_main`).  Designs are deterministic, so where each one runs changes
    nothing but the time.
    """
    count = worker_count(workers)
    pool: list[concurrent.futures.ProcessPoolExecutor] = []

    def run(fn: Callable, args: list[tuple]) -> list:
        _progress.report("designs", 0, len(args))
        if count < 2 or len(args) < 2:
            return [_counted(i, len(args), fn(*a)) for i, a in enumerate(args)]
        todo = collections.deque(enumerate(args))
        lock = threading.Lock()
        out: dict[int, Any] = {}
        running: set[concurrent.futures.Future] = set()
        index: dict[concurrent.futures.Future, int] = {}
        failed: list[BaseException] = []

        def hand_out() -> None:  # the next designs from the front, one per free process
            while len(running) < count - 1:
                with lock:
                    if not todo:
                        return
                    i, a = todo.popleft()
                f = pool[0].submit(fn, *a)
                running.add(f)
                index[f] = i

        def feed() -> None:
            try:
                while running:
                    done, _ = concurrent.futures.wait(running, return_when=concurrent.futures.FIRST_COMPLETED)
                    for f in done:
                        running.discard(f)
                        out[index.pop(f)] = f
                        _progress.report("designs", len(out), len(args))
                    hand_out()
            except BaseException as exc:  # pragma: no cover - a broken pool: raised below
                failed.append(exc)

        with _without_main():
            if not pool:
                _adopt_temp_dir()
                pool.append(concurrent.futures.ProcessPoolExecutor(count - 1, mp_context=_pool_context(),
                                                                   initializer=_worker_ignores_interrupt))
            hand_out()  # the workers start here, main hidden
        feeder = threading.Thread(target=feed, name="redactopt-design-feeder", daemon=True)
        feeder.start()
        try:
            while True:  # this process: from the back
                with lock:
                    if not todo:
                        break
                    i, a = todo.pop()
                out[i] = fn(*a)
                _progress.report("designs", len(out), len(args))
        except BaseException:
            # stop handing out, and do not wait for the designs still running: the pool's processes are
            # terminated on leaving (the feeder, a daemon, ends with them)
            with lock:
                todo.clear()
            raise
        feeder.join()
        if failed:  # pragma: no cover
            raise failed[0]
        return [out[i].result() if isinstance(out[i], concurrent.futures.Future) else out[i]
                for i in range(len(args))]

    try:
        yield run
    except BaseException:
        # an error or an interrupt here: stop the workers now rather than wait for their designs
        managers = [getattr(p, "_executor_manager_thread", None) for p in pool]
        for p in pool:
            p.shutdown(wait=False, cancel_futures=True)  # (forgets its manager thread: joined below)
        for child in multiprocessing.active_children():
            child.terminate()  # SIGTERM: the workers ignore only Ctrl-C
        # the manager thread must be gone before the interpreter exits: Python 3.11's exit hook wakes
        # it without a lock while it closes its pipe, which prints "Exception ignored ... send_bytes"
        for thread in managers:
            if thread is not None:
                thread.join(timeout=10.0)
        raise
    finally:
        for p in pool:
            p.shutdown(cancel_futures=True)


def _counted(i: int, total: int, result: Any) -> Any:
    """``result``, the ``i``-th of ``total`` designs, reported done (:mod:`redactopt._progress`)."""
    _progress.report("designs", i + 1, total)
    return result


def _adopt_temp_dir() -> None:
    """multiprocessing's temporary folder (the fork server's socket), made now and announced
    (:func:`redactopt._tempfiles.adopt`): a command stopped by a signal leaves it behind otherwise."""
    from multiprocessing import util

    from redactopt import _tempfiles

    _tempfiles.adopt(util.get_temp_dir())


def _worker_ignores_interrupt() -> None:
    """A design worker leaves Ctrl-C to the process that started it (no traceback of its own)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
