"""Progress bars on standard error for long runs (tqdm), quiet unless a person is watching.

Bars are shown only when standard error is a terminal and ``--quiet`` was not given, so
logs, pipes and tests stay clean; a bar appears only once its stage has run for
:data:`DELAY` seconds (a run shorter than that shows nothing).  The library reports progress
through plain callables (``progress(stage, done, total)`` in
:func:`redactopt.release.apply.apply_table` and :func:`redactopt.engine.design.design`,
``progress(done, total)`` in :func:`redactopt.judge.attack.attack`) and through
:mod:`redactopt._progress` (``report``/``phase``, which every layer may call); :class:`Bars`
turns both into bars: a first line naming the command's current phase and its time, one bar per
stage below it (rows read, optimisers, branch-and-bound boxes, designs done of all), each with a
note (the optimiser running, the gap so far).  :func:`watched` installs them for a command and
gives its phase times (``--format json``: ``"phases"``).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO, TypeVar

from tqdm import tqdm

from redactopt import _progress

__all__ = ["DELAY", "progress_enabled", "Bars", "iterate", "watched", "phases_of", "phase_line"]

T = TypeVar("T")

#: Seconds a stage runs before its bar appears (a run shorter than this shows nothing); the environment
#: variable ``REDACTOPT_PROGRESS_DELAY`` sets another (0: at once).
DELAY = 1.0
#: Seconds between two redraws of the open bars (their clocks tick while a solver computes).
TICK = 0.5
#: Stages counted in rows (drawn with a rate); every other stage is drawn as ``done/total``.
ROW_STAGES = ("scan", "release", "read", "write")

tqdm.monitor_interval = 0  # no monitor thread of tqdm's own (the redraws are this module's)


def _delay() -> float:
    """:data:`DELAY`, or ``REDACTOPT_PROGRESS_DELAY`` seconds where it is set to a number >= 0."""
    try:
        value = float(os.environ.get("REDACTOPT_PROGRESS_DELAY", DELAY))
    except ValueError:
        return DELAY
    return value if value >= 0 else DELAY


def progress_enabled(quiet: bool, stream: TextIO | None = None) -> bool:
    """Whether to draw bars: not ``quiet`` and standard error is a terminal."""
    stream = sys.stderr if stream is None else stream
    return not quiet and bool(getattr(stream, "isatty", lambda: False)())


class Bars:
    """One tqdm bar per stage, fed by ``bars(stage, done, total)``; nothing when disabled.

    ``total=None`` draws a counter (the total is unknown, e.g. rows while a file is scanned);
    otherwise a bar with an estimate of the time left.  A stage that reaches its total is closed
    (it reappears if reported again).  ``note(stage, text)`` sets the text after a stage's bar;
    ``phase(name)`` names the phase on the first line (``title`` before it, e.g. the command).
    """

    def __init__(self, enabled: bool, *, unit: str = "rows", file: TextIO | None = None, delay: float | None = None,
                 title: str | None = None) -> None:
        self.enabled = enabled
        self.unit = unit
        self.delay = _delay() if delay is None else float(delay)
        self.file = file
        self._own: TextIO | None = None
        if enabled and file is None:  # a copy of standard error: bars go on while a solver silences fd 2 (SCIP)
            try:
                self._own = open(os.dup(sys.stderr.fileno()), "w", encoding=getattr(sys.stderr, "encoding", None)
                                 or "utf-8", errors="replace", buffering=1)
                self.file = self._own
            except (AttributeError, OSError, ValueError):  # pragma: no cover - no descriptor: sys.stderr itself
                self._own = None
        self.title = title
        self._bars: dict[str, Any] = {}
        self._notes: dict[str, str] = {}
        self._born: dict[str, str] = {}  # the phase each stage was first reported in
        self._phase = ""
        self._status: Any = None
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    # -- drawing -----------------------------------------------------------------------------------
    def _out(self) -> TextIO:
        return self.file if self.file is not None else sys.stderr

    def _start_ticker(self) -> None:
        if self._ticker is None:
            self._ticker = threading.Thread(target=self._tick, name="redactopt-progress", daemon=True)
            self._ticker.start()

    def _tick(self) -> None:
        """Redraw the open bars every :data:`TICK` seconds once they are due (so their clocks run)."""
        while not self._stop.wait(TICK):
            with self._lock:
                now = time.time()
                for bar in [self._status, *self._bars.values()]:
                    if bar is not None and not bar.disable and now >= bar.start_t + self.delay:
                        try:
                            bar.refresh()
                        except Exception:  # pragma: no cover - a closed terminal: stop drawing
                            return

    def _width(self) -> dict[str, Any]:
        """tqdm's size: the terminal's as it changes, or 80 x 24 where it reports none (a bare pty, which
        tqdm would take for a screen of no rows, and draw nothing)."""
        try:
            size = os.get_terminal_size(self._out().fileno())
            cols, rows = size.columns, size.lines
        except (OSError, ValueError, AttributeError):
            cols = rows = 0
        return {"dynamic_ncols": True} if cols > 0 and rows > 0 else {"ncols": cols or 80, "nrows": rows or 24}

    def _new(self, desc: str, total: float | None, rows: bool, note: str | None = None) -> Any:
        fmt = None
        if not rows:
            fmt = ("{desc}: {n_fmt}/{total_fmt} |{bar}| [{elapsed}<{remaining}]{postfix}" if total
                   else "{desc}: {n_fmt} [{elapsed}]{postfix}")
        return tqdm(total=total, desc=desc, unit=self.unit if rows else "", unit_scale=rows, leave=False,
                    file=self._out(), delay=self.delay, bar_format=fmt, postfix=note, **self._width())

    def __call__(self, stage: str, done: float, total: float | None) -> None:
        if not self.enabled:
            return
        with self._lock:
            self._start_ticker()
            bar = self._bars.get(stage)
            if bar is not None and bar.total != total and (bar.total is None) != (total is None):
                bar.close()
                bar = None
            if bar is None:
                bar = self._new(stage, total, stage in ROW_STAGES, self._notes.get(stage))
                self._bars[stage] = bar
                self._born[stage] = self._phase
            elif total is not None and bar.total != total:
                bar.total = total
            if stage in self._notes:
                bar.set_postfix_str(self._notes[stage], refresh=False)
            bar.update(done - bar.n)
            if total is not None and total > 0 and done >= total:
                self._drop(stage)

    def _drop(self, stage: str) -> None:
        bar = self._bars.pop(stage, None)
        if bar is not None:
            bar.close()
        self._notes.pop(stage, None)
        self._born.pop(stage, None)

    def note(self, stage: str, text: str) -> None:
        """The text after ``stage``'s bar from its next report on."""
        if self.enabled:
            with self._lock:
                self._notes[stage] = text

    def phase(self, name: str) -> None:
        """The phase now running, on the first line with its time since the command began."""
        if not self.enabled:
            return
        with self._lock:
            self._start_ticker()
            self._phase = name
            for stage, born in list(self._born.items()):  # a stage ends with the phase it was reported in
                if born and not (name == born or name.startswith(born + " > ")):
                    self._drop(stage)
            if self._status is None:
                self._status = tqdm(total=None, desc=self.title or "", leave=False, file=self._out(),
                                    delay=self.delay, bar_format="{desc} [{elapsed}]", **self._width())
            self._status.set_description_str(f"{self.title}: {name}" if self.title else name, refresh=False)
            if time.time() >= self._status.start_t + self.delay:
                self._status.refresh()

    def close(self) -> None:
        self._stop.set()
        if self._ticker is not None and self._ticker is not threading.current_thread():
            self._ticker.join(timeout=2 * TICK)
        with self._lock:
            for stage in list(self._bars):
                self._drop(stage)
            if self._status is not None:
                self._status.close()
                self._status = None
            if self._own is not None:
                try:
                    self._own.close()
                except OSError:  # pragma: no cover
                    pass
                self._own = None
                self.file = None

    def __enter__(self) -> "Bars":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextmanager
def watched(enabled: bool, title: str | None = None, **kw: Any) -> Iterator[tuple[Bars, _progress.Watch]]:
    """Bars (drawn when ``enabled``) listening to everything the library reports (:mod:`redactopt._progress`),
    and the :class:`~redactopt._progress.Watch` that times the phases."""
    with Bars(enabled, title=title, **kw) as bars, _progress.watching(bars if enabled else None) as watch:
        yield bars, watch


def phases_of(args: Any) -> dict[str, float]:
    """The phase times of the command ``args`` runs (``--format json``: ``"phases"``); ``{}`` outside ``main``."""
    watch = getattr(args, "_watch", None)
    return {} if watch is None else watch.seconds()


def phase_line(command: str, watch: _progress.Watch) -> str:
    """``redactopt apply: 20.8 s (read 0.14 s, fit 1.2 s, ...)``: the command's wall time and its phases."""
    wall = time.perf_counter() - watch.started
    parts = ", ".join(f"{k} {v:.3g} s" for k, v in watch.seconds().items())
    return f"redactopt {command}: {wall:.3g} s" + (f" ({parts})" if parts else "")


def iterate(items: Iterable[T], desc: str, enabled: bool, *, total: int | None = None) -> Iterator[T]:
    """``items``, with a bar on standard error when ``enabled``."""
    if not enabled:
        yield from items
        return
    with tqdm(items, desc=desc, total=total, leave=False, file=sys.stderr) as bar:
        yield from bar
