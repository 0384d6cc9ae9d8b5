r"""Exact optimum over data-independent mechanisms on k-state chains (Lemma 1 generalised).

A data-independent mechanism with probabilities in {0, 1} publishes a set of records whatever
their values.  On each side of ``p`` only the nearest published record matters (it cuts the
chain), so with nearest published distances ``a`` (left) and ``b`` (right)

.. math:: \mathcal L(a,b)=\max_{x\ne x'}\big[\ell_\ell(a)[x,x']+\ell_r(b)[x,x']\big],

with the window terms :math:`\ell_s` of :func:`redactopt.model.influence.window_terms` (the left
side on the time-reversed chain; a side with nothing published contributes 0).  The best mechanism
publishes everything beyond those records: a window of redacted records around ``p``.  Every
:math:`\ell_s(d)[x,x']` is non-increasing in ``d``, so for each left choice the feasible right
choices form a suffix and a binary search finds the nearest; :math:`O(n k^2\log n)` after the
terms (:math:`O(D k^3)` for the ``D`` distances that matter).

**Outward and inward** (as :mod:`redactopt.solvers.dim`).  A window is excluded only if its
computed leakage exceeds ``eps`` by more than its error bound (relative
:data:`~redactopt.model.influence.INFLUENCE_RTOL` plus the absolute bound
:func:`~redactopt.model.influence.influence_atol` of the longest distance; the proposal, whose
count bounds the exact window optimum), and the fallback is the best window whose computed leakage
is below ``eps`` by the same margin.  Terms beyond the distance ``D`` where every
:math:`\ell` has fallen below :math:`10^{-9}\epsilon` are replaced by 0 (outward) or by the value
at ``D`` (inward): both directions stay sound.  Indices are 0-based.
"""

from __future__ import annotations

import math
import time

import numpy as np

from redactopt.model.chain import check_problem
from redactopt.model.chain import Chain as KChain
from redactopt.model.influence import INFLUENCE_RTOL, influence_atol, side_matrix, window_terms
from redactopt.solvers.base import Candidate

__all__ = ["kdim_enumerate", "kdim_windows", "side_window_terms", "check_kproblem", "SCOPE"]

SCOPE = "data-independent"

#: Positive entries of a computed P^d below this are not trusted (see judge.lemma2).
_SAFE_MIN = 1e-290


def check_kproblem(chain: KChain, n: object, eps: object, p: object) -> tuple[int, float, int]:
    """Validate a design problem on a chain of any number of states (:func:`redactopt.model.chain.check_problem`)."""
    return check_problem(chain, n, eps, p, two_state=False)


def side_window_terms(chain: KChain, m: int, side: str, eps: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Lower and upper values of :math:`\ell_s(d)[x,x']` for the choices ``d = 1..D+1`` and "none".

    Returns ``(low, high)``, each ``(c, k, k)`` with ``c = min(m, D+1) + 1`` choices, the last
    "nothing published" (0).  ``low`` is used for outward tests, ``high`` (non-increasing envelope,
    ``+inf`` where a value is ruled out) for inward ones; they differ only beyond ``D`` (module
    docstring) and where an underflow makes a computed power untrustworthy.  The diagonal is 0.
    """
    if chain.binary:
        return _binary_side_window_terms(chain, m, side, eps)
    k = chain.k
    P = side_matrix(chain, side)
    A = P > 0.0
    reach = np.eye(k, dtype=bool)
    cur = np.eye(k)
    lows, highs = [], []
    off = ~np.eye(k, dtype=bool)
    small = 1e-9 * eps
    for d in range(1, m + 1):
        cur = cur @ P
        reach = (reach.astype(np.int64) @ A.astype(np.int64)) > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            lg = np.log(cur.T)  # [v, x]
            r = lg[:, :, None] - lg[:, None, :]
        r = np.where(np.isnan(r), -np.inf, r).max(axis=0)
        r = np.where(off, r, 0.0)
        pos = cur[cur > 0.0]
        trusted = np.array_equal(cur > 0.0, reach) and (pos.size == 0 or pos.min() >= _SAFE_MIN)
        lows.append(r if trusted else np.zeros((k, k)))
        highs.append(r if trusted else np.full((k, k), np.inf) * off)
        if trusted and np.all(r <= small) and d < m:
            # beyond D = d everything is at most r (non-increasing): one more choice stands for them all
            lows.append(np.zeros((k, k)))
            highs.append(r.copy())
            break
    low = np.array(lows + [np.zeros((k, k))]).reshape(-1, k, k)
    high = np.array(highs + [np.zeros((k, k))]).reshape(-1, k, k)
    high = np.where(np.isnan(high), 0.0, high)
    # non-increasing envelope of the upper values (rounding can break monotonicity by an ulp)
    high = np.maximum.accumulate(high[::-1], axis=0)[::-1]
    return low, high


def _binary_side_window_terms(chain: KChain, m: int, side: str, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`side_window_terms` of a binary chain from the closed-form terms (:func:`window_terms`).

    The same choices as the matrix loop (cut after the first ``D`` where every term is at most
    ``1e-9 eps``), at the cost of the closed form: :math:`O(D)` vectorised, where the loop forms
    ``D`` matrix products.  The closed form has no underflow to distrust (every entry of
    :math:`P^d` of a binary chain is positive), so ``low`` and ``high`` differ only beyond ``D``.
    """
    small = 1e-9 * eps
    # the terms are about (1 + max(alpha/beta, beta/alpha)) |lambda|^d once |lambda|^d is small: start near D
    lam, a, b = abs(float(chain.lam)), float(chain.alpha), float(chain.beta)
    guess = 0 if lam == 0.0 else int(math.log(small / (1.0 + max(a / b, b / a))) / math.log(lam)) + 8
    size = min(m, max(64, guess))
    while True:  # grow the computed distances until the terms have fallen below `small` (or the side ends)
        terms = window_terms(chain, size, side)[:size]  # (size, 2, 2), distances 1..size
        below = np.flatnonzero((terms <= small).all(axis=(1, 2)))
        if below.size or size == m:
            break
        size = min(m, 4 * size)
    none = np.zeros((1, 2, 2))
    if below.size and below[0] + 1 < m:
        d = int(below[0]) + 1  # the first such distance D: one more choice stands for every farther one
        low = np.concatenate([terms[:d], none, none])
        high = np.concatenate([terms[:d], terms[d - 1 : d], none])
    else:
        low = np.concatenate([terms, none])
        high = low.copy()
    return low, np.maximum.accumulate(high[::-1], axis=0)[::-1]


def _counts(m: int, c: int) -> np.ndarray:
    """Records published on a side of ``m`` records for the choices 1..c-1 (distance) and none."""
    return np.concatenate([m - np.arange(1, c) + 1, [0]]).astype(int)


def _first_feasible(right: np.ndarray, budget: np.ndarray) -> np.ndarray:
    """For each row of ``budget`` (``(c_left, k, k)``), the first right choice with ``right <= budget`` on every pair.

    ``right`` is ``(c_right, k, k)``, non-increasing along its first axis for every pair, its last
    row ("none") 0; returns ``c_right`` where even "none" is infeasible.
    """
    k = right.shape[1]
    first = np.zeros(budget.shape[0], dtype=np.int64)
    for x in range(k):
        for y in range(k):
            if x == y:
                continue
            col = right[:, x, y]
            # searchsorted needs ascending order: search -col >= -budget
            first = np.maximum(first, np.searchsorted(-col, -budget[:, x, y], side="left"))
    return first


def _best(left: np.ndarray, right: np.ndarray, m_l: int, m_r: int, budget: float) -> tuple[int, int, int]:
    """Best pair of choice indices (``i`` left, ``j`` right) with ``left[i] + right[j] <= budget`` on every pair."""
    cl, cr = left.shape[0], right.shape[0]
    cnt_l, cnt_r = _counts(m_l, cl), _counts(m_r, cr)
    first = _first_feasible(right, budget - left)
    ok = np.flatnonzero(first < cr)
    if not ok.size:
        return cl - 1, cr - 1, 0
    totals = cnt_l[ok] + cnt_r[first[ok]]
    j = int(np.argmax(totals))  # ties: the nearest left choice
    return int(ok[j]), int(first[ok[j]]), int(totals[j])


def _window(n: int, p: int, i: int, j: int, cl: int, cr: int, k: int) -> tuple[np.ndarray, dict]:
    dl = i + 1 if i < cl - 1 else p + 1  # redact records at distances < dl
    dr = j + 1 if j < cr - 1 else n - p
    q = np.zeros((n, k))
    q[max(0, p - dl + 1) : min(n, p + dr)] = 1.0
    info = {"delta_left": int(min(dl - 1, p)), "delta_right": int(min(dr - 1, n - 1 - p))}
    info["published_left"] = p - info["delta_left"]
    info["published_right"] = n - 1 - p - info["delta_right"]
    return q, info


def kdim_enumerate(chain: KChain, n: int, *, eps: float, p: int, time_limit: float = 60.0,
                   verbose: bool = False, rng: object = None) -> Candidate:
    r"""Best data-independent window on a k-state chain by enumeration (module docstring).

    Returns
    -------
    Candidate
        ``solver="dim"``, ``status="optimal"``: the best window under the outward test, its
        count over ``n`` as ``upper_bound`` on the exact optimum over data-independent
        mechanisms (``bound_scope="data-independent"``, ``bound_solver="enumeration"``), and
        the inward optimum as fallback.  ``info`` holds the window radii.
    """
    n, eps, p = check_kproblem(chain, n, eps, p)
    t0 = time.perf_counter()
    k = chain.k
    m_l, m_r = p, n - 1 - p
    low_l, high_l = side_window_terms(chain, m_l, "left", eps)
    low_r, high_r = side_window_terms(chain, m_r, "right", eps)
    # the error bound of the largest distance covers every window (outward and inward both stay sound)
    slack = eps * INFLUENCE_RTOL + float(influence_atol(n, k))
    i, j, count = _best(low_l, low_r, m_l, m_r, eps + slack)
    ii, jj, _ = _best(high_l, high_r, m_l, m_r, eps - slack)
    q, info = _window(n, p, i, j, low_l.shape[0], low_r.shape[0], k)
    qf, _ = _window(n, p, ii, jj, high_l.shape[0], high_r.shape[0], k)
    q[p] = qf[p] = 1.0
    info.update(seconds=time.perf_counter() - t0)
    return Candidate(redact_prob=q, solver="dim", status="optimal", upper_bound=count / n,
                     bound_solver="enumeration", bound_scope=SCOPE, fallbacks=(qf,), info=info)


def _truncate(terms: np.ndarray, m: int) -> np.ndarray:
    """The choices of a side of ``m`` records from terms computed for a longer side."""
    c = terms.shape[0]
    if m + 1 >= c:
        return terms
    return np.concatenate([terms[:m], terms[-1:]])


def _term(terms: np.ndarray, d: np.ndarray, room: np.ndarray) -> np.ndarray:
    """Terms at distances ``d`` (``d > room``: nothing published on that side, 0), per member."""
    c = terms.shape[0]  # choices 1..c-1 (the last distance row stands for every farther one), then none
    idx = np.minimum(d, c - 1) - 1
    out = terms[np.clip(idx, 0, c - 2)]
    return np.where((d > room)[:, None, None], 0.0, out)


def _joint_window(high_l: np.ndarray, high_r: np.ndarray, members: np.ndarray, n: int,
                  budget: float) -> tuple[int, int]:
    """Best window ``[e_l + 1, e_r - 1]`` (published ends ``e_l``, ``e_r``; -1 / n for none) for a cluster.

    Every member ``p`` must keep ``l(p - e_l) + r(e_r - p) <= budget`` on every pair; both terms
    are non-increasing, so for each left end the feasible right ends form a suffix.
    """
    f, last = int(members.min()), int(members.max())
    off = ~np.eye(high_l.shape[1], dtype=bool)

    def ok(el: int, er: int) -> bool:
        left = _term(high_l, members - el, members)  # el = -1: distance p + 1 > room p: none
        right = _term(high_r, er - members, n - 1 - members)
        return bool(np.all((left + right)[:, off] <= budget))

    best = (-1, n, 0)
    er = n  # the smallest feasible right end never grows as the left end moves away (two pointers)
    for el in range(f - 1, -2, -1):
        if el + 1 + (n - last - 1) <= best[2]:
            break  # even publishing everything right of the cluster cannot beat the best any more
        if er == n and not ok(el, n):
            continue
        while er - 1 > last and ok(el, er - 1):
            er -= 1
        count = (el + 1) + (n - er)
        if count > best[2]:
            best = (el, er, count)
    return best[0], best[1]


def kdim_windows(chain: KChain, n: int, *, eps: float, private: tuple[int, ...]) -> np.ndarray:
    r"""Data-independent windows for several private records: one joint window optimum per cluster.

    Private records whose windows overlap are merged into clusters; each cluster gets the best
    window of redacted records that keeps *every* member's leakage (Lemma 1 with the member's own
    distances to the two published ends) within the budget — exact by enumeration of the left end
    with the smallest feasible right end, which never grows as the left end moves away (the terms
    are non-increasing).  The window terms are
    computed once per side.  Inward test (the caller verifies exactly).
    """
    n, eps, _ = check_kproblem(chain, n, eps, private[0] if private else 0)
    k = chain.k
    q = np.zeros((n, k))
    if not private:
        return q
    _, high_l = side_window_terms(chain, n - 1, "left", eps)
    _, high_r = side_window_terms(chain, n - 1, "right", eps)
    budget = eps - (eps * INFLUENCE_RTOL + float(influence_atol(n, k)))
    # start from each record's own window optimum (vectorised enumeration), then merge overlaps
    clusters, wins = [], []
    for p in sorted(private):
        hl, hr = _truncate(high_l, p), _truncate(high_r, n - 1 - p)
        i, j, _ = _best(hl, hr, p, n - 1 - p, budget)
        w, _ = _window(n, p, i, j, hl.shape[0], hr.shape[0], k)
        rows = np.flatnonzero(w.any(axis=1))
        clusters.append([p])
        wins.append((int(rows.min()) - 1, int(rows.max()) + 1))
    while True:  # merge clusters whose windows overlap; re-solve merged ones jointly
        merged: list[list[int]] = [clusters[0]]
        mwins: list[tuple[int, int] | None] = [wins[0]]
        for c, w in zip(clusters[1:], wins[1:]):
            prev = mwins[-1] if mwins[-1] is not None else (-1, n)
            if w[0] < prev[1]:
                merged[-1] = merged[-1] + c
                mwins[-1] = None
            else:
                merged.append(c)
                mwins.append(w)
        if all(w is not None for w in mwins):
            break
        clusters = merged
        wins = [w if w is not None else _joint_window(high_l, high_r, np.asarray(c), n, budget)
                for c, w in zip(merged, mwins)]
    for el, er in wins:
        q[el + 1 : er] = 1.0
    return q
