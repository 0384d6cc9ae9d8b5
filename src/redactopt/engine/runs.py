r"""Runs of adjacent private records in the design layer: a window design per run and what it certifies.

A group of private records splits into maximal *runs* of adjacent positions (:func:`private_runs`).
A run of two or more records is designed on a window of the sequence around it by the run
decomposition (:func:`redactopt.solvers.runs.propose_run`), judged exactly on the window
(:func:`~redactopt.judge.certify.finalize`, every record of the run), and the window is doubled until
the design publishes both of its outermost records with certainty: embedded with everything else
published its leakage is the window's (the cut argument, docs/mathematics.md §8).

**What it certifies** (:class:`~redactopt.judge.relaxation.Relaxation`).  Every mechanism on the whole
sequence private about the run's records, restricted to the window, is private for the window alone
(dropping records is post-processing; the window starts at a stationary record), so it publishes at
most the window's certified bound there — whatever other private records the sequence holds (a
problem with fewer private records is a relaxation, docs/mathematics.md §7c).  The one-record
relaxations the run solver computed on the same window are carried with it when one of them won.

Indices are 0-based.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from redactopt.engine.window import window_radius
from redactopt.errors import PrivacyCheckError
from redactopt.judge.certify import DesignResult, finalize
from redactopt.judge.lemma2 import leakage_ceiling
from redactopt.judge.relaxation import Relaxation
from redactopt.model.chain import MarkovChain
from redactopt.solvers.runs import propose_run, run_bound

__all__ = ["private_runs", "RunWindow", "design_run_window", "split_bound", "RUN_AUTO_GRID"]

#: Upper-bound and policy grids of the run solver for ``method="auto"`` (``optimal`` refines the upper-bound
#: grid from the frontier's 4000 until its target gap): a coarser grid costs a quarter of the time.
RUN_AUTO_GRID = 1000


def private_runs(private: Sequence[int]) -> list[tuple[int, int]]:
    """The maximal runs ``(first, last)`` of adjacent positions of a sorted set of private records."""
    out: list[list[int]] = []
    for p in sorted(set(int(v) for v in private)):
        if out and p == out[-1][1] + 1:
            out[-1][1] = p
        else:
            out.append([p, p])
    return [(a, b) for a, b in out]


@dataclass(frozen=True)
class RunWindow:
    """A run's design on the rows ``lo..hi`` (verified there about every record of the run) and its certificate.

    ``result`` is the window's :class:`~redactopt.judge.certify.DesignResult` (its rows are ``lo..hi``);
    ``relaxation`` the bound it certifies on those rows for every mechanism private about the run.
    """

    lo: int
    hi: int
    result: DesignResult
    relaxation: Relaxation

    @property
    def block(self) -> np.ndarray:
        return np.asarray(self.result.redact_prob)


def _trivial(chain: MarkovChain, n: int, eps: float, first: int, last: int) -> RunWindow:
    """``eps`` at or beyond the ceiling (or independent records): everything but the run published, which is optimal."""
    q = np.zeros((n, 2))
    q[first: last + 1] = 1.0
    u = (n - (last - first + 1)) / n
    res = finalize(chain, q, private=list(range(first, last + 1)), eps=eps, method="run-frontier", upper_bound=u,
                   solver="closed-form", info={"source": "run-frontier", "note": "every record but the run published"})
    return RunWindow(0, n - 1, res, Relaxation(0, n - 1, u * n, "closed-form", "run", (first, last)))


def _judged(chain: MarkovChain, m: int, eps: float, first: int, last: int, time_limit: float, target_gap: float,
            grid: int | None) -> DesignResult:
    """The run solver's proposals on a window of ``m`` records, judged exactly; the best verified one."""
    cand = propose_run(chain, m, eps=eps, first=first, last=last, time_limit=time_limit, target_gap=target_gap,
                       grid=grid)
    run = list(range(first, last + 1))
    best: DesignResult | None = None
    info = dict(cand.info, source="run-frontier", solver_status=cand.status)
    for q in (cand.redact_prob,) + tuple(cand.fallbacks):
        try:
            res = finalize(chain, q, private=run, eps=eps, method="run-frontier", upper_bound=cand.upper_bound,
                           solver=cand.bound_solver or "run-frontier", info=info,
                           stopped=cand.status == "time_limit")
        except PrivacyCheckError:
            continue
        if best is None or res.utility > best.utility:
            best = res
    if best is None:  # every proposal failed: redacting the whole window leaks nothing
        best = finalize(chain, np.ones((m, 2)), private=run, eps=eps, method="run-frontier",
                        upper_bound=cand.upper_bound, solver=cand.bound_solver or "run-frontier",
                        info=dict(info, fallback="all records redacted"))
    return best


def design_run_window(chain: MarkovChain, n: int, *, eps: float, first: int, last: int, time_limit: float = 60.0,
                      target_gap: float = 1e-4, grid: int | None = None) -> RunWindow:
    """The run ``first..last`` (0-based) of an ``n``-record sequence designed on a window around it (module docstring).

    The window reaches :func:`~redactopt.engine.window.window_radius` records beyond each end of the run
    and doubles until the design publishes its outermost records with certainty (or it is the whole
    sequence).  ``target_gap`` (utility per record of the window) and ``grid`` go to the run solver.
    """
    sides = int(first > 0) + int(last < n - 1)
    if chain.lam == 0.0 or sides == 0 or eps >= leakage_ceiling(chain, sides):
        return _trivial(chain, n, eps, first, last)
    R = window_radius(chain, eps)
    while True:
        lo, hi = max(0, first - R), min(n - 1, last + R)
        res = _judged(chain, hi - lo + 1, eps, first - lo, last - lo, time_limit, target_gap, grid)
        qw = np.asarray(res.redact_prob)
        cut = (lo == 0 or not qw[0].any()) and (hi == n - 1 or not qw[-1].any())
        if cut or (lo == 0 and hi == n - 1):
            c = res.certificate
            won = res.info.get("bound_record")  # a one-record relaxation's bound won (window row), else the run's
            relax = Relaxation(lo, hi, c.upper_bound * (hi - lo + 1), c.solver, "run" if won is None else "record",
                               (first, last) if won is None else (int(won) + lo,))
            return RunWindow(lo, hi, res, relax)
        R *= 2


#: A region holding more runs than this is bounded without the split (each piece costs a bound).
SPLIT_MAX_GROUPS = 6

#: Where a gap between two runs is split (fractions of the gap): the pieces' bound is the smallest over them.
SPLIT_FRACTIONS = (0.25, 0.5, 0.75)

_SPLITS: dict[tuple, tuple[float, tuple[int, ...]]] = {}


def split_bound(chain: MarkovChain, eps: float, lo: int, hi: int,
                private: Sequence[int]) -> tuple[float, tuple[int, ...]] | None:
    r"""A bound on what any mechanism private about every record of ``private`` publishes in rows ``lo..hi`` that
    hold two or more runs: the rows cut between consecutive runs into pieces, one run each, and the pieces'
    run bounds (:func:`redactopt.solvers.runs.run_bound`, each piece a problem of its own) added up.

    Valid for any cut (docs/mathematics.md §7c): a private mechanism restricted to a piece is private
    about the piece's run (a marginal of the output; the piece starts at a stationary record), and the
    pieces share no row.  The smallest sum over the cuts at :data:`SPLIT_FRACTIONS` of each gap (a chain
    of pieces: a dynamic programme over the cuts), and the cuts (last row of each piece but the last);
    ``None`` for one run or more than :data:`SPLIT_MAX_GROUPS`.  Memoised by the rows' geometry.
    """
    mine = [int(p) for p in private if lo <= p <= hi]
    groups = private_runs(mine)
    if not 2 <= len(groups) <= SPLIT_MAX_GROUPS:
        return None
    key = (chain, float(eps), hi - lo, tuple(p - lo for p in mine))
    if key not in _SPLITS:
        _SPLITS[key] = _split_programme(chain, eps, [(a - lo, b - lo) for a, b in groups], hi - lo)
    total, path = _SPLITS[key]
    return total, tuple(k + lo for k in path)


def _split_programme(chain: MarkovChain, eps: float, groups: list[tuple[int, int]],
                     hi: int) -> tuple[float, tuple[int, ...]]:
    """:func:`split_bound` on rows ``0..hi`` (the region's rows counted from its first)."""
    cuts = []
    for (_, b1), (a2, _) in zip(groups, groups[1:]):
        cuts.append(sorted({min(a2 - 1, max(b1, b1 + int(round(f * (a2 - 1 - b1))))) for f in SPLIT_FRACTIONS}))
    ends = cuts + [[hi]]
    # best[k] = (smallest sum of the pieces so far, their cuts) with the current piece ending at row k
    best: dict[int, tuple[float, tuple[int, ...]]] = {-1: (0.0, ())}
    for (a, b), options in zip(groups, ends):
        nxt = {}
        for k in options:
            for start_prev, (total, path) in best.items():
                start = start_prev + 1
                piece = run_bound(chain, k - start + 1, eps=eps, first=a - start, last=b - start)
                cand = (total + piece, path + (k,))
                if k not in nxt or cand[0] < nxt[k][0]:
                    nxt[k] = cand
        best = nxt
    total, path = best[hi]
    return total, path[:-1]
