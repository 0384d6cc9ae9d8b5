"""The one repair and fallback ladder for proposals (used by :func:`redactopt.engine.design.design`).

Solvers propose (:class:`redactopt.solvers.base.Candidate`); this module decides which of
their proposals verify exactly and repairs those that almost do, always toward *more*
redaction (post-processing: Definition 1's leakage is non-increasing in every entry of ``q``,
``redactopt.engine.joint``'s docstring gives the argument), so a repair never raises the
leakage.  Verdicts are :func:`redactopt.judge.certify.verify`'s (exact near the boundary).
"""

from __future__ import annotations

import math

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from redactopt._search import bisect_boundary
from redactopt.judge.certify import snap_variants, verify
from redactopt.judge.leakage import check_mechanism, utility
from redactopt.judge.lemma2 import publishable
from redactopt.model.chain import Chain
from redactopt.solvers.base import Candidate

__all__ = ["Rules", "judge_candidate", "run_ladder"]


@dataclass(frozen=True)
class Rules:
    """What the ladder needs of a chain model, with the chain, ``eps`` and ``p`` bound.

    ``verify(q)`` is the exact check (``(result, passed)``, the result carrying a
    ``witness`` and a ``leakage``); ``check(q)`` validates a proposal; ``lemma2_closed(q)``
    closes the values Lemma 2 forbids; ``utility(q)`` is the expected published fraction.
    The binary chain (:func:`judge_candidate`) and the k-state chain
    (:func:`redactopt.engine.kdesign.kjudge_candidate`) run the same ladder with their own.
    """

    verify: Callable[[np.ndarray], tuple[Any, bool]]
    check: Callable[[np.ndarray], np.ndarray]
    lemma2_closed: Callable[[np.ndarray], np.ndarray]
    utility: Callable[[np.ndarray], float]


#: Resolution of the push toward redaction (:func:`_pushed`).
_PUSH_TOL = 2.0 ** -40


def _pushed(rules: Rules, q: np.ndarray) -> np.ndarray | None:
    """Repair: push the partly published entries toward 1 just far enough to verify exactly.

    ``q + θ(1 - q)`` on the entries strictly between 0 and 1; leakage is non-increasing in
    θ (post-processing), so bisection finds the smallest verified θ.  ``None`` if even
    θ = 1 fails (then the always-published records themselves leak too much).
    """
    partial = (q > 0.0) & (q < 1.0)
    if not partial.any():
        return None

    def at(theta: float) -> np.ndarray:
        return np.where(partial, q + theta * (1.0 - q), q)

    seen: dict[float, bool] = {}

    def ok(theta: float) -> bool:
        if theta not in seen:
            seen[theta] = rules.verify(at(theta))[1]
        return seen[theta]

    if not ok(1.0):
        return None
    # The smallest verified multiple of 2**-40: what 40 halvings of [0, 1] give, and the same
    # points.  It is usually tiny (a proposal a rounding away from eps), where those halvings
    # pass one by one; so the powers 2**-4, 2**-8, ... are checked first, and the halvings
    # start below the last one that passes (answers are remembered, none is asked twice).
    good, bad = 1.0, 0.0
    theta = 2.0 ** -4
    while theta >= _PUSH_TOL and ok(theta):
        good, theta = theta, theta / 16.0
    steps = round(math.log2(good / _PUSH_TOL))
    return at(bisect_boundary(ok, good, bad, steps=steps))


def _lemma2_closed(chain: Chain, q: np.ndarray, p: int, eps: float) -> np.ndarray:
    """Repair without loss: redact always every value Lemma 2 forbids (decided exactly).

    A value published with positive probability whose pointwise influence exceeds ``eps``
    makes a mechanism leak more than ``eps`` (Lemma 2), so every eps-private mechanism
    redacts it always: closing it costs nothing a private mechanism could have.
    """
    q = q.copy()
    for rows, side in ((np.arange(0, p), "left"), (np.arange(p + 1, q.shape[0]), "right")):
        if not rows.size:
            continue
        d = np.abs(rows - p)
        allowed = publishable(chain, int(d.max()), eps=eps, side=side)[d - 1]
        q[rows] = np.where(allowed, q[rows], 1.0)
    return q


def _closed(rules: Rules, q: np.ndarray, p: int) -> np.ndarray:
    """Repair: close the published values the witness output shows, until it verifies exactly.

    A partly published value whose own pattern leaks (say, ``v`` at distance 1 with
    influence just above ``eps``) keeps leaking however close to 1 its redaction
    probability is pushed; only redacting it always removes the pattern.  Each round closes
    (sets to 1) the partly published entries that the worst output publishes nearest to
    ``p`` on each side; leakage never rises (post-processing).  Stops when it verifies or
    the worst output publishes nothing that can be closed (then the caller pushes the rest).
    """
    q = q.copy()
    for _ in range(q.size):
        res, ok = rules.verify(q)
        if ok:
            return q
        w = res.witness
        left = np.flatnonzero(w[:p] >= 0)
        right = np.flatnonzero(w[p + 1 :] >= 0)
        shown = ([int(left[-1])] if left.size else []) + ([p + 1 + int(right[0])] if right.size else [])
        changed = False
        for t in shown:
            v = int(w[t])
            if 0.0 < q[t, v] < 1.0:
                q[t, v] = 1.0
                changed = True
        if not changed:
            break
    return q


def judge_candidate(chain: Chain, cand: Candidate, *, eps: float,
                    p: int) -> tuple[np.ndarray | None, float, dict, list[str]]:
    """The single repair and fallback ladder (:func:`run_ladder`) for any chain."""
    rules = Rules(verify=lambda q: verify(chain, q, (p,), eps),
                  check=lambda q: check_mechanism(q, (p,), k=chain.k)[0],
                  lemma2_closed=lambda q: _lemma2_closed(chain, q, p, eps),
                  utility=lambda q: utility(chain, q))
    return run_ladder(rules, cand, eps=eps, p=p)


def run_ladder(rules: Rules, cand: Candidate, *, eps: float,
               p: int) -> tuple[np.ndarray | None, float, dict, list[str]]:
    """The single repair and fallback ladder: the best exactly verified proposal of a candidate.

    Every proposal (the candidate's, then its fallbacks) is tried snapped, then snapped
    toward privacy only (:func:`~redactopt.judge.certify.snap_variants`); one that fails both is repaired by closing
    the values Lemma 2 forbids, then by pushing its partly published values toward
    redaction (:func:`_pushed`) and by closing the values its witness shows
    (:func:`_closed`); the verified proposal of largest utility wins.  Returns it (``None``
    if nothing verified), its utility, what was done to it, and the reasons proposals were
    refused.  :func:`design` packages the winner through
    :func:`~redactopt.judge.certify.finalize`, which verifies it once more.
    """
    best: tuple[np.ndarray | None, float, dict] = (None, -1.0, {})
    refused: list[str] = []
    for k, raw in enumerate((cand.redact_prob, *cand.fallbacks)):
        variants = [rules.check(v) for v in snap_variants(np.asarray(raw, dtype=float))]
        accepted, how = None, {}
        for label, q in zip(("snapped", "snapped toward redaction"), variants):
            res, ok = rules.verify(q)
            if ok:
                accepted, how = q, dict(cand.proposal_info(k), proposal=k,
                                        repair=None if label == "snapped" else label)
                break
            refused.append(f"{cand.solver} proposal {k} ({label}): exact leakage {res.leakage:.12g} > eps={eps:.12g}")
        if accepted is not None:
            repaired = [(accepted, how)]
        else:
            repaired = []
            base = rules.lemma2_closed(variants[1])
            if rules.verify(base)[1]:
                repaired.append((base, dict(cand.proposal_info(k), proposal=k, repair="Lemma 2 values closed")))
            pushed = _pushed(rules, base)
            if pushed is not None:
                repaired.append((pushed, dict(cand.proposal_info(k), proposal=k, repair="pushed toward redaction")))
            closed: np.ndarray | None = _closed(rules, base, p)
            if not rules.verify(closed)[1]:
                closed = _pushed(rules, closed)
            if closed is not None:
                repaired.append((closed, dict(cand.proposal_info(k), proposal=k,
                                              repair="witness values closed")))
        for q, why in repaired:
            u = rules.utility(q)
            if u > best[1]:
                best = (q, u, why)
    return best[0], best[1], best[2], refused
