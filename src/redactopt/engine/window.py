r"""One private record in a long sequence: a design on the window around it, the rest published.

A record published with certainty cuts every likelihood ratio of Definition 1 (the cut argument,
docs/mathematics.md §8): by the Markov property everything beyond it is independent of
:math:`X_p` given the output.  So a design of the records ``lo..hi`` around ``p`` that publishes
its outermost records with certainty has, embedded in ``n`` records with everything outside
published, exactly the window's leakage — and its utility is the window's plus one per record
outside.  :func:`design_window` doubles the window until the design cuts at both ends;
:func:`design_sparse` embeds it as a :class:`~redactopt.judge.certify.SparseDesign`, verified
exactly on its block (:func:`~redactopt.judge.certify.finalize_sparse`), in time and memory
that depend on the window, not on ``n``.

**Its certificate.**  Every ``eps``-private mechanism on the ``n`` records, restricted to the
window, is ``eps``-private for the window alone (dropping records is post-processing, and the
window starts at a stationary record), so it publishes at most ``m`` times the window's
certified bound there and one per record elsewhere:
:math:`\nu \le (m\,U_w + n - m)/n`, rounded outward.

**The paper's mechanisms** are defined on all ``n`` records, by distances: 3R's regions, and
MQ's window, whose radii depend on ``n`` (Algorithm 1) and are computed for ``n``.  3R on a
window whose edge record is in :math:`R_S` is 3R on ``n`` records restricted to it (every
farther record is in :math:`R_S` too: the max-influence does not increase with distance); with
the tuned split the window is accepted only when that split keeps the records beyond it in
:math:`R_S` on both sides, which makes it Theorem 1's best split for ``n`` records as well.

Indices are 0-based.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np

from redactopt import _progress
from redactopt._validate import check_eps, check_n, check_private
from redactopt.engine.local import MIN_SOLVER_SECONDS, Progress, design_whole
from redactopt.engine.registry import METHODS
from redactopt.judge.certify import DesignResult, SparseDesign, SparseRows, finalize_sparse
from redactopt.judge.lemma2 import lemma2_upper_bound
from redactopt.judge.tolerances import round_up
from redactopt.model.chain import Chain, MarkovChain, check_problem
from redactopt.model.classes import ChainClass
from redactopt.model.influence import delta_star, max_influence
from redactopt.paper.mechanisms import default_split, markov_quilt_window, three_region

__all__ = ["window_radius", "covers", "design_window", "design_sparse", "paper_sparse"]

#: Keys of a window design's ``info`` longer than this (per-record strings) are dropped from the sparse one.
_INFO_MAX_STR = 200


#: Methods that take no time limit (closed forms and the paper's constructions): their windows grow as needed.
_UNTIMED = ("dim", "3r", "3r-calibrated", "mq")
#: Methods that, once the time limit has passed before their window cut, finish the doubling with the
#: data-independent optimum (a closed form in time linear in the window), the result marked as stopped.
_TIMED_FALLBACK = ("optimal", "frontier", "global", "sgp", "local", "dim-milp")


def _stopped(res: DesignResult) -> DesignResult:
    """``res`` marked as stopped by the time limit (its certificate still holds: the bound is a bound)."""
    return dataclasses.replace(res, certificate=dataclasses.replace(res.certificate, stopped=True),
                               info=dict(res.info, time_limit="the window grew past the time limit: its last "
                                                              "doublings designed with 'dim'"))


#: The first window's radius on a chain of more than two states (doubled until the design cuts).
KSTATE_RADIUS = 32


def window_radius(chain: Chain, eps: float) -> int:
    r"""The radius a window design starts from: :math:`2\Delta^\star(\epsilon/2) + 16` records a side.

    Beyond :math:`\Delta^\star(\epsilon/2)` each side may publish everything within half the budget,
    so designs usually cut well inside (the release's "far" distance is the same,
    :func:`redactopt.engine.cache.far_start`).  :math:`\Delta^\star` is a closed form of two states;
    on more states the first window has :data:`KSTATE_RADIUS` records a side (the window is doubled
    until the design cuts, whatever the first radius: the cut argument holds for any number of states).
    """
    if not chain.binary:
        return KSTATE_RADIUS
    return 2 * delta_star(chain, eps / 2.0 or eps) + 16  # eps = 5e-324: its half underflows to 0


def covers(chain: MarkovChain, n: int, eps: float, p: int) -> bool:
    """Whether the first window around ``p`` is the whole sequence (then there is nothing to cut)."""
    r = window_radius(chain, eps)
    return p - r <= 0 and p + r >= n - 1


def _small_info(info: dict) -> dict:
    return {k: v for k, v in info.items()
            if not (isinstance(v, str) and len(v) > _INFO_MAX_STR) and not isinstance(v, np.ndarray)}


def _tuned_split_holds(chain: MarkovChain, n: int, lo: int, hi: int, p: int, res: DesignResult) -> bool:
    """3R with the tuned split: the records beyond the window are in R_S at the split found (see the module)."""
    el, er = res.info.get("eps_left"), res.info.get("eps_right")
    left = lo == 0 or (el is not None and float(max_influence(chain, p - lo + 1)) <= el)
    right = hi == n - 1 or (er is not None and float(max_influence(chain, hi + 1 - p)) <= er)
    return left and right


def design_window(chain: MarkovChain, n: int, *, eps: float, p: int, method: str = "optimal",
                  radius: int | None = None, memo: dict | None = None,
                  **kw: Any) -> tuple[int, int, DesignResult]:
    """:func:`~redactopt.engine.design.design` for ``p`` on the records ``lo..hi`` around it, doubled until
    the design publishes both outermost records with certainty (or covers the sequence).

    Returns ``(lo, hi, result)``; ``result`` is verified on its window (embedding it is exact by the
    cut, and the callers verify the embedding too).  ``memo`` shares designs of windows of the same
    length and private offset between calls; ``kw`` goes to ``design`` (``split``, ``time_limit``, ...).
    """
    R = min(n, window_radius(chain, eps)) if radius is None else max(1, int(radius))
    tuned_3r = method == "3r" and kw.get("split", "auto") == "auto"
    limit = float(kw.pop("time_limit", 60.0))
    deadline = time.monotonic() + limit  # the time limit is the whole design's: every window shares it
    stopped = False
    while True:
        lo, hi = max(0, p - R), min(n - 1, p + R)
        key = (hi - lo + 1, p - lo)
        if memo is not None and key in memo:
            res = memo[key]
        else:
            left = max(deadline - time.monotonic(), MIN_SOLVER_SECONDS)
            _progress.report("window", hi - lo + 1, None, note=f"records {lo + 1}-{hi + 1} of {n}")
            res = design_whole(chain, hi - lo + 1, eps=eps, p=p - lo, method=method, time_limit=left,
                               **kw)  # type: ignore[arg-type]
            if memo is not None:
                memo[key] = res
        qw = np.asarray(res.redact_prob)
        cut = (lo == 0 or not qw[0].any()) and (hi == n - 1 or not qw[-1].any())
        if (lo == 0 and hi == n - 1) or (cut and (not tuned_3r or _tuned_split_holds(chain, n, lo, hi, p, res))):
            return lo, hi, (_stopped(res) if stopped else res)
        if time.monotonic() >= deadline and method not in _UNTIMED:
            # out of time before the design cut: the whole sequence redacted beyond this window's design is
            # private (redacting more is post-processing) -- the cheap closed form takes over instead
            stopped = True
            method = "dim" if method in _TIMED_FALLBACK else method
        R *= 2


def design_sparse(chain: MarkovChain, n: int, *, eps: float, p: int = 0, method: str = "optimal",
                  radius: int | None = None, **kw: Any) -> SparseDesign:
    r""":func:`~redactopt.engine.design.design` of one private record in a sequence of any length.

    Parameters
    ----------
    chain : Chain
        One chain (a class of chains: :func:`redactopt.engine.design.design_sparse`).
    n : int
        Number of records (up to :data:`~redactopt._validate.MAX_N`; time and memory depend on the window).
    eps : float
        Privacy budget (nats).
    p : int
        0-based index of the private record.
    method : str
        A method of :func:`~redactopt.engine.design.design`.
    radius : int, optional
        The first window's radius (default :func:`window_radius`).
    **kw
        ``split``, ``time_limit``, ``certify_time``, ``options``, ``progress``, ``verbose``, ``rng``
        of :func:`~redactopt.engine.design.design`.

    Returns
    -------
    SparseDesign
        The window design embedded (everything outside published), verified exactly on its block;
        its certificate is the smaller of the window's carried to ``n`` records (module docstring)
        and Lemma 2's for ``n``; ``info`` adds ``window`` (0-based ``[lo, hi]``).
    """
    if isinstance(chain, ChainClass):
        raise TypeError("a class of chains is designed by redactopt.design_sparse (redactopt.engine.design), "
                        "at every deciding chain; this is the window design of one chain")
    n, eps = check_n(n), check_eps(eps)
    (p,) = check_private(p, n, "p")
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if method == "mq":
        return _mq_sparse(chain, n, eps, p)
    lo, hi, res = design_window(chain, n, eps=eps, p=p, method=method, radius=radius, **kw)
    m, c = hi - lo + 1, res.certificate
    carried = round_up((m * c.upper_bound + (n - m)) / n, 4)
    lemma2 = lemma2_upper_bound(chain, n, eps=eps, private=[p])
    bound, solver = (carried, c.solver) if carried < lemma2 else (lemma2, "lemma2")
    info = dict(_small_info(res.info), window=[lo, hi], window_method=res.method)
    k = res.class_certificate  # a bound over a class of mechanisms (DIM), carried the same way
    kb = None if k is None else (round_up((m * k.upper_bound + (n - m)) / n, 4), k.solver, k.scope)
    return finalize_sparse(chain, n, [(lo, np.asarray(res.redact_prob))], private=[p], eps=eps, method=res.method,
                           upper_bound=bound, solver=solver, info=info, stopped=c.stopped,
                           regions=[(lo, hi, m * c.upper_bound, c.solver)], class_bound=kb)


def _mq_sparse(chain: MarkovChain, n: int, eps: float, p: int) -> SparseDesign:
    """Algorithm 1 as printed, its radii computed for ``n`` records: one block of redacted records."""
    dl, dr = markov_quilt_window(chain, n, eps=eps, p=p)
    lo, hi = p - dl, p + dr
    return finalize_sparse(chain, n, [(lo, np.ones((hi - lo + 1, 2)))], private=[p], eps=eps, method="mq",
                           upper_bound=lemma2_upper_bound(chain, n, eps=eps, private=[p]), solver="lemma2",
                           info={"delta_left": dl, "delta_right": dr, "window": [lo, hi]})


def _block_rows(n: int, lo: int, block: np.ndarray) -> SparseRows:
    """``block`` (rows ``lo..``) in ``n`` records as :class:`~redactopt.judge.certify.SparseRows`: its
    maximal runs of rows that can be redacted, everything else published."""
    live = np.flatnonzero(block.any(axis=1))
    if not live.size:
        return SparseRows(n, (), ())
    cuts = np.flatnonzero(np.diff(live) > 1)
    firsts, lasts = np.r_[live[0], live[cuts + 1]], np.r_[live[cuts], live[-1]]
    return SparseRows(n, tuple(int(lo + a) for a in firsts),
                      tuple(np.ascontiguousarray(block[a: b + 1]) for a, b in zip(firsts, lasts)))


def paper_sparse(chain: MarkovChain, n: int, *, eps: float, p: int, which: str) -> SparseRows:
    r"""The paper's mechanism on ``n`` records, as printed, built on the records it can redact.

    ``which``: ``"3r"`` (Eqs. 1–2, the default split of
    :func:`~redactopt.paper.mechanisms.default_split`), ``"3r-algorithm2"`` (Theorem 1 /
    Algorithm 2: regions from the whole ``eps``) or ``"mq"`` (Algorithm 1, radii for ``n``).  3R
    redacts nothing from the first distance :math:`\Delta^\star(\epsilon_s)` of a side on (every
    record from there on is in :math:`R_S`: the max-influence does not increase with distance), so
    3R on that window *is* 3R on ``n`` records restricted to it, with the same regions and the
    same :math:`|R_M|` per side.
    """
    if which == "mq":
        dl, dr = markov_quilt_window(chain, n, eps=eps, p=p)
        return _block_rows(n, p - dl, np.ones((dl + dr + 1, 2)))
    if which not in ("3r", "3r-algorithm2"):
        raise ValueError(f"which must be '3r', '3r-algorithm2' or 'mq', got {which!r}")
    el, er = default_split(n, p, eps) if which == "3r" else (eps, eps)

    def reach(budget: float, side: int) -> int:  # records of the side that can be redacted, and one more
        return side if budget <= 0.0 else min(side, delta_star(chain, budget))

    lo, hi = p - reach(el, p), p + reach(er, n - 1 - p)
    kw = {"eps_left": el} if which == "3r" else {"reading": "algorithm2"}
    mech = three_region(chain, hi - lo + 1, eps=eps, p=p - lo, **kw)  # type: ignore[arg-type]
    return _block_rows(n, lo, np.asarray(mech.redact_prob))


def design_local(chain: Chain, n: int, *, eps: float, p: int = 0, method: str = "optimal",
                 split: str | float | None = "auto", time_limit: float = 60.0,
                 rng: np.random.Generator | None = None, certify_time: float = 0.0,
                 options: dict[str, Any] | None = None, progress: Progress | None = None,
                 verbose: bool = False, whole: bool = False) -> DesignResult:
    """:func:`redactopt.engine.design.design` of one chain: a sequence longer than the window around ``p``
    (:func:`covers`) is designed on that window by :func:`design_sparse` and densified (the cut argument),
    any other on all its records by :func:`redactopt.engine.local.design_whole` (``whole``: always so)."""
    n, eps, p = check_problem(chain, n, eps, p, two_state=False)
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if not whole and not covers(chain, n, eps, p):
        return design_sparse(chain, n, eps=eps, p=p, method=method, split=split, time_limit=time_limit,
                             rng=rng, certify_time=certify_time, options=options, progress=progress,
                             verbose=verbose).to_result()
    return design_whole(chain, n, eps=eps, p=p, method=method, split=split, time_limit=time_limit, rng=rng,
                        certify_time=certify_time, options=options, progress=progress, verbose=verbose)
