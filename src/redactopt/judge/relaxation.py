r"""Bounds from relaxations: a problem with fewer private records bounds the one with more.

**Proposition (docs/mathematics.md §7c).**  Let :math:`S` be the private records of a problem on
``n`` records and :math:`T\subseteq S`.  Every mechanism that is :math:`\epsilon`-private about
every record of :math:`S` is so about every record of :math:`T`, and the utility is the same function
of the mechanism in both problems (the records of :math:`S\setminus T` are redacted: they publish
nothing), so :math:`\mathrm{OPT}_S\le\mathrm{OPT}_T\le U_T` for any certified bound :math:`U_T`.

A bound is certified on the rows where it was computed.  A :class:`Relaxation` says: every mechanism
private about ``private`` (a subset of the private records) publishes at most ``bound`` expected
records in the rows ``start..stop`` (a window certificate: the mechanism restricted to those rows is
private for the window alone, which starts at a stationary record).  For any rows ``lo..hi``,

.. math:: \mathrm{pub}(lo..hi)\le\mathrm{pub}(J)+|lo..hi\setminus J|-|S\cap(lo..hi\setminus J)|,

:math:`J` the relaxation's rows (every record publishes at most one, a private one none, and
:math:`\mathrm{pub}(J\cap lo..hi)\le\mathrm{pub}(J)` since nothing publishes less than nothing):
:func:`bound_on_rows`.  :func:`best_bound` takes the smallest of a region's own bound and every
relaxation's, and says which won.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Relaxation", "bound_on_rows", "best_bound", "relaxation_label"]


@dataclass(frozen=True)
class Relaxation:
    """A certified bound of a problem with fewer private records, on the rows where it holds.

    Every mechanism private about the records ``private`` (0-based, a subset of the problem's private
    records) publishes at most ``bound`` expected records in rows ``start..stop`` (0-based, inclusive);
    ``solver`` names the bound, ``kind`` what was relaxed to (``"run"``: a run of adjacent private
    records, ``"record"``: one private record alone).
    """

    start: int
    stop: int
    bound: float
    solver: str
    kind: str
    private: tuple[int, ...]

    @property
    def label(self) -> str:
        """``"run 9-11"`` or ``"record 11"`` (1-based, as the command line counts)."""
        return relaxation_label(self.kind, self.private)


def relaxation_label(kind: str, private: Sequence[int]) -> str:
    """A relaxation's name for reports, its private records counted from 1."""
    if kind == "run":
        return f"run {private[0] + 1}-{private[-1] + 1}"
    return f"record {private[0] + 1}"


def _count_in(sorted_priv: Sequence[int], lo: int, hi: int) -> int:
    return max(0, bisect_right(sorted_priv, hi) - bisect_left(sorted_priv, lo)) if hi >= lo else 0


def bound_on_rows(relax: Relaxation, lo: int, hi: int, private: Sequence[int]) -> float:
    """What ``relax`` certifies on rows ``lo..hi``: its bound plus one per row of ``lo..hi`` outside its rows that
    is not private (``private``: the problem's private records, sorted).  Expected records; not rounded."""
    priv = sorted(private)
    outside = 0
    for a, b in ((lo, min(hi, relax.start - 1)), (max(lo, relax.stop + 1), hi)):
        if b >= a:
            outside += (b - a + 1) - _count_in(priv, a, b)
    return relax.bound + outside


def best_bound(lo: int, hi: int, own: tuple[float, str], relaxations: Sequence[Relaxation],
               private: Sequence[int]) -> tuple[float, str, Relaxation | None]:
    """The smallest bound on rows ``lo..hi``: ``own`` = ``(bound, solver)`` (all the private records) or a
    relaxation's (:func:`bound_on_rows`); returns ``(bound, solver, the relaxation that won or None)``.
    Only relaxations whose rows meet ``lo..hi`` are tried (the others give at least the rows' count)."""
    bound, solver, won = float(own[0]), own[1], None
    for r in relaxations:
        if r.stop < lo or r.start > hi:
            continue
        b = bound_on_rows(r, lo, hi, private)
        if b < bound:
            bound, solver, won = b, r.solver, r
    return bound, solver, won
