"""One release's checks and statements of issue 36, carried through its passes (:class:`ReleaseGuard`).

Every release entry (:func:`redactopt.release.apply.apply_table`, ``apply_frame``, the categorical
release of :mod:`redactopt.release.states`) makes one guard from its options — ``cover``,
``accept_model``, ``public_report`` — and calls it at fixed points:

1. before anything is read: :meth:`ReleaseGuard.check_paths`, :meth:`~ReleaseGuard.watch_columns`
   (the time columns the scan watches, :mod:`redactopt.release.refusals`);
2. after the scan: :meth:`~ReleaseGuard.after_scan` — the time order is judged (refused, or
   accepted and stated) and the decoys of the cover are drawn and made private
   (:mod:`redactopt.release.cover`), before the chain is fitted;
3. after the plan: :meth:`~ReleaseGuard.judge_model` — states never seen in the fit, and the
   model alternatives (:mod:`redactopt.release.alternatives`), refused or accepted; and
   :meth:`~ReleaseGuard.price_cover`, what the decoys cost;
4. with the report: :meth:`~ReleaseGuard.finish` (its first line, what it reveals, the cover, the
   model checks, every warning) and :meth:`~ReleaseGuard.write_public`.

A refusal is raised before the output is opened, so nothing is written.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from redactopt.io import STDIO, check_output_path
from redactopt.release.alternatives import judge_alternatives, release_evidence
from redactopt.release.bits import bit_source
from redactopt.release.cover import Cover, check_cover, cover_of, covered_scan
from redactopt.release.data import ScanState
from redactopt.release.refusals import (TimeWatch, refuse_broken_model, refuse_unseen_states, time_watch,
                                        watch_table)
from redactopt.release.reveals import finish_report, write_public_report

__all__ = ["ReleaseGuard", "count_real", "decoy_records"]


class ReleaseGuard:
    """The issue-36 options of one release and what they found (module docstring).

    ``cover``: decoys per private run (``None``/0: none); ``accept_model``: release although the time
    order, a model test or unseen states would refuse it (stated in the report's first line);
    ``public_report``: where the report without private positions goes; ``seed``: the release's seed
    (the cover draws from the same kind of source, on streams of its own).
    """

    def __init__(self, *, cover: int | None = None, accept_model: bool = False, seed: int | None = None,
                 public_report: str | os.PathLike[str] | None = None, force: bool = False) -> None:
        if not isinstance(accept_model, bool):
            raise TypeError(f"accept_model must be True or False, got {accept_model!r}")
        self.k = check_cover(cover)
        self.accept = accept_model
        self.source = bit_source(seed)
        self.public_path = None if public_report is None else Path(public_report)
        self.force = force
        self.watch: TimeWatch | None = None
        self.watched = False
        self.cover: Cover | None = None
        self.notes: list[str] = []
        self.alternatives: list[Any] = []
        self.real: tuple[ScanState, list[int] | None] | None = None

    # -- 1. before reading ----------------------------------------------------------------------------
    def check_paths(self, *others: Any) -> None:
        """The public report may not be standard output, an existing file (unless ``force``), or one of
        ``others`` (the input, the output, the report)."""
        if self.public_path is None:
            return
        if str(self.public_path) == STDIO:
            raise ValueError("--public-report needs a file (standard output is for the release or its report)")
        mine = self.public_path.resolve()
        for other in others:
            if other is not None and str(other) != STDIO and Path(other).resolve() == mine:
                raise ValueError(f"{self.public_path}: --public-report must be a file of its own (it is {other})")
        check_output_path(self.public_path, force=self.force, kind="json")

    def watch_columns(self, reader: Any, *, exclude: list[str | None], order_by: str | None) -> list[str]:
        """The time columns the scan reads besides its own (none with ``order_by``: the rows are ordered)."""
        if order_by is None:
            self.watch = time_watch(reader, exclude=exclude)
        return [] if self.watch is None else self.watch.columns

    # -- 2. after the scan ----------------------------------------------------------------------------
    def judge_time(self, *, reader: Any = None, by: str | None = None) -> None:
        """Refuse rows out of time order (or note them, with ``accept_model``); ``reader``: read the time
        columns now, when no scan watched them."""
        if self.watch is None:
            return
        if not self.watched and reader is not None:
            watch_table(reader, self.watch, by=by)
            self.watched = True
        self.notes += self.watch.refuse(accept=self.accept)
        self.watch = None  # judged once

    def draw_cover(self, state: ScanState, private: list[int] | None) -> tuple[ScanState, list[int] | None]:
        """Draw the cover: the scan (or ``private``, one sequence's positions) with the decoys private too
        (unchanged without a cover); the real ones are kept for the report."""
        self.real = (state, private)
        if not self.k:
            return state, private
        self.cover = cover_of(state, private, self.k, self.source)
        return covered_scan(state, private, self.cover)

    def after_scan(self, state: ScanState, private: list[int] | None, *, reader: Any = None,
                   by: str | None = None) -> tuple[ScanState, list[int] | None]:
        """:meth:`judge_time`, then :meth:`draw_cover`."""
        self.judge_time(reader=reader, by=by)
        return self.draw_cover(state, private)

    # -- 3. after the plan ----------------------------------------------------------------------------
    def judge_model(self, plan: Any, *, fit: Any, counts: Any, binary: bool = True) -> None:
        """States never seen in the fit, then every model alternative (raise, or note what was accepted)."""
        self.notes += refuse_unseen_states(fit, accept=self.accept)
        p = None if fit is None or fit.lr_test.p_value is None else float(fit.lr_test.p_value)
        evidence = release_evidence(plan, counts=counts, p_value=p)
        if not binary:
            evidence = type(evidence)(evidence.eps, False, counts, p, evidence.mechanisms)
        self.alternatives = judge_alternatives(evidence)
        self.notes += refuse_broken_model(self.alternatives, float(plan.eps), accept=self.accept)

    def add_alternatives(self, alternatives: list[Any], eps: float) -> None:
        """More model alternatives (judged elsewhere, :func:`~redactopt.release.alternatives.varying_alternatives`):
        recorded, and refused or accepted as the others."""
        self.alternatives += alternatives
        self.notes += refuse_broken_model(alternatives, eps, accept=self.accept)

    def price_cover(self, mass_with: float, replan: Callable[[ScanState, list[int] | None], float]) -> None:
        """Record the expected redacted records with the cover (``mass_with``) and without it
        (``replan(state, private)`` on the real private records alone)."""
        if self.cover is None or self.real is None:
            return
        self.cover.cost.update({"without": float(replan(*self.real)), "with": float(mass_with)})

    # -- 4. the report --------------------------------------------------------------------------------
    def finish(self, rep: dict[str, Any], *, sequences: int, with_private: int) -> dict[str, Any]:
        """The report with its notice, reveals, cover, model checks and warnings (:func:`finish_report`)."""
        cover = None
        if self.cover is not None:
            ids = list(self.real[0].ids) if self.real is not None else []
            cover = self.cover.to_dict(ids)
        model = {"alternatives": [a.to_dict() for a in self.alternatives], "accepted": list(self.notes)}
        return finish_report(rep, sequences=sequences, with_private=with_private, cover=cover, model=model)

    def real_private(self) -> dict[int, list[int]]:
        """The real private records (0-based) by sequence code (the decoys left out)."""
        if self.real is None:
            return {}
        state, private = self.real
        return {0: sorted(private)} if private is not None else state.private

    def write_public(self, rep: dict[str, Any]) -> None:
        if self.public_path is not None:
            write_public_report(self.public_path, rep, force=self.force)


def count_real(guard: ReleaseGuard) -> tuple[int, int]:
    """The real private records and the sequences holding them."""
    real = guard.real_private()
    return int(sum(len(v) for v in real.values())), int(sum(1 for v in real.values() if v))


def decoy_records(guard: ReleaseGuard) -> int:
    """The records the decoys made private (beyond the real ones)."""
    if guard.cover is None:
        return 0
    real = guard.real_private()
    return int(sum(len(set(guard.cover.decoy_positions(c)) - set(real.get(c, []))) for c in guard.cover.decoys))

