"""Progress bars on standard error for long runs (tqdm), quiet unless a person is watching.

Bars are shown only when standard error is a terminal and ``--quiet`` was not given, so
logs, pipes and tests stay clean.  The library reports progress through plain callables
(``progress(stage, done, total)`` in :func:`redactopt.release.apply.apply_table` and
:func:`redactopt.engine.design.design`,
``progress(done, total)`` in :func:`redactopt.judge.attack.attack`); :class:`Bars`
turns those calls into bars.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import Any, TextIO, TypeVar

from tqdm import tqdm

__all__ = ["progress_enabled", "Bars", "iterate"]

T = TypeVar("T")


def progress_enabled(quiet: bool, stream: TextIO | None = None) -> bool:
    """Whether to draw bars: not ``quiet`` and standard error is a terminal."""
    stream = sys.stderr if stream is None else stream
    return not quiet and bool(getattr(stream, "isatty", lambda: False)())


class Bars:
    """One tqdm bar per stage, fed by ``bars(stage, done, total)``; nothing when disabled.

    ``total=None`` draws a counter with a rate (the total is unknown, e.g. rows while a
    file is scanned); otherwise a bar with an estimate of the time left.
    """

    def __init__(self, enabled: bool, *, unit: str = "rows", file: TextIO | None = None, delay: float = 0.0) -> None:
        self.enabled = enabled
        self.unit = unit
        self.file = file
        self.delay = delay
        self._bars: dict[str, Any] = {}

    def __call__(self, stage: str, done: int, total: int | None) -> None:
        if not self.enabled:
            return
        bar = self._bars.get(stage)
        if bar is None:
            bar = tqdm(total=total, desc=stage, unit=self.unit, unit_scale=True, leave=False,
                       file=self.file if self.file is not None else sys.stderr, delay=self.delay)
            self._bars[stage] = bar
        bar.update(done - bar.n)

    def close(self) -> None:
        for bar in self._bars.values():
            bar.close()
        self._bars.clear()

    def __enter__(self) -> "Bars":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def iterate(items: Iterable[T], desc: str, enabled: bool, *, total: int | None = None) -> Iterator[T]:
    """``items``, with a bar on standard error when ``enabled``."""
    if not enabled:
        yield from items
        return
    with tqdm(items, desc=desc, total=total, leave=False, file=sys.stderr) as bar:
        yield from bar
