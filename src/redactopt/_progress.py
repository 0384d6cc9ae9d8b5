"""Where a long run is, and how long each of its phases took (issue 37, item 3).

Library code at every layer says where it is with :func:`report` (``report("scan-lp", boxes, None,
note="gap 0.006")``: a stage, how far it is, how far it goes, a short note) and times its phases
with ``with phase("fit"):``.  Both cost one check and do nothing unless a command watches
(:func:`watching`): the command line installs its progress bars as the listener
(:class:`redactopt.interface.progress.Bars`) and prints the phase times (``--format json``:
``"phases"``).  A library caller may watch too (``with watching(print) as w: ...; w.phases``).

Phase times are wall seconds of the thread that started watching, each given to the innermost
phase open there (a phase inside another pauses the outer one), so the phases never overlap and
their sum is at most the wall time of the watch; time in no phase is not counted.  Reports may
come from any thread (a release's design feeder); worker processes of a pool are fresh
interpreters and watch nothing.  This module imports nothing of redactopt (any layer may use it).
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["Watch", "watching", "report", "phase", "timed", "active"]


class Watch:
    """One watched run: its listener and the seconds of each phase (:attr:`phases`, in order of first use)."""

    def __init__(self, listener: Callable[..., None] | None) -> None:
        self.listener = listener
        self.phases: dict[str, float] = {}
        self.owner = threading.get_ident()
        self._open: list[list[Any]] = []  # [name, started] of the open phases, innermost last
        self._shown: list[str] = []  # every open phase, timed or not (what the listener shows)
        self.started = time.perf_counter()

    @property
    def current(self) -> str | None:
        """The innermost open phase, or ``None``."""
        return self._open[-1][0] if self._open else None

    def _enter(self, name: str) -> None:
        now = time.perf_counter()
        if self._open:  # the outer phase pauses
            outer = self._open[-1]
            self.phases[outer[0]] = self.phases.get(outer[0], 0.0) + (now - outer[1])
        self.phases.setdefault(name, 0.0)
        self._open.append([name, now])

    def _leave(self) -> None:
        now = time.perf_counter()
        name, started = self._open.pop()
        self.phases[name] = self.phases.get(name, 0.0) + (now - started)
        if self._open:
            self._open[-1][1] = now  # the outer phase resumes

    def seconds(self) -> dict[str, float]:
        """The phase times so far (open phases counted up to now), rounded to microseconds, downwards
        (so that their sum never exceeds the wall time by rounding)."""
        out = dict(self.phases)
        now = time.perf_counter()
        if self._open:
            name, started = self._open[-1]
            out[name] = out.get(name, 0.0) + (now - started)
        return {k: int(v * 1e6) / 1e6 for k, v in out.items()}


_lock = threading.Lock()
_watches: list[Watch] = []


def _forget() -> None:
    """In a child forked while watched: nothing watches there (its parent's bars are not its own)."""
    global _lock
    _watches.clear()
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget)


def active() -> bool:
    """Whether a listener watches (to skip building a note nobody reads, or a solver's callback)."""
    return any(w.listener is not None for w in _watches)


@contextmanager
def watching(listener: Callable[..., None] | None = None) -> Iterator[Watch]:
    """Watch the run inside: :func:`report` calls go to ``listener`` (``listener(stage, done, total)``;
    a listener with a ``note`` attribute also gets ``listener.note(stage, text)`` and one with ``phase``
    ``listener.phase(name)`` as phases begin), and phase times are kept in the :class:`Watch` yielded.

    Watches nest: reports reach every listener; phases are timed by the outermost watch only."""
    w = Watch(None if listener is report else listener)  # (report as the listener would call itself)
    with _lock:
        _watches.append(w)
    try:
        yield w
    finally:
        with _lock:
            _watches.remove(w)


def report(stage: str, done: float, total: float | None = None, *, note: str | None = None) -> None:
    """Tell whoever watches that ``stage`` is at ``done`` of ``total`` (``None``: unknown), with a short
    ``note`` (a gap, the optimiser running).  Nothing happens when nobody watches; a listener's error
    is not the run's (progress never changes a result), so it is swallowed."""
    if not _watches:
        return
    for w in list(_watches):
        if w.listener is None:
            continue
        try:
            if note is not None and hasattr(w.listener, "note"):
                w.listener.note(stage, note)
            w.listener(stage, done, total)
        except Exception:  # pragma: no cover - a broken listener must not break a design
            pass


@contextmanager
def phase(name: str, *, sub: bool = False) -> Iterator[None]:
    """Time the block as phase ``name`` of the outermost watch (only in the thread that watches; elsewhere,
    and when nobody watches, the block just runs).

    ``sub=True`` (the engine's optimisers, a class design's stages): a phase of its own only when no
    other phase is open, else a part of the open one (shown, not timed apart): a release's
    ``"design"`` phase is not split into optimisers, a lone design is."""
    w = _watches[0] if _watches else None
    if w is None or threading.get_ident() != w.owner:
        yield
        return
    timed = not (sub and w._open)
    if timed:
        w._enter(name)
    w._shown.append(name)
    _show(w)
    try:
        yield
    finally:
        w._shown.pop()
        if timed:
            w._leave()
        if w._shown:
            _show(w)


def _show(w: Watch) -> None:
    """Tell the listeners the phases open now (``"fit > design > frontier"``)."""
    shown = [name for i, name in enumerate(w._shown) if i == 0 or name != w._shown[i - 1]]  # design > design: once
    text = " > ".join(shown)
    for v in list(_watches):
        if v.listener is not None and hasattr(v.listener, "phase"):
            try:
                v.listener.phase(text)
            except Exception:  # pragma: no cover
                pass


def timed(name: str, *, sub: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator: every call of the function is phase ``name`` (:func:`phase`; one check when nobody watches)."""
    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def timed_call(*args: Any, **kw: Any) -> Any:
            if not _watches:
                return fn(*args, **kw)
            with phase(name, sub=sub):
                return fn(*args, **kw)
        return timed_call
    return wrap
