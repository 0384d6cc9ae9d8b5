r"""Exact optimum over data-independent local redaction mechanisms (Section V, Lemma 1, Theorem 2).

A data-independent mechanism has :math:`\Pr(Y_t=\perp\mid X_t=x)` not depending on ``x``;
an optimal one uses probabilities in :math:`\{0,1\}` (Section V), i.e. it publishes a
set of records.  By Lemma 1 its leakage is the max-influence of the nearest published
record on each side of ``p``, and given :math:`X_p` the two sides are independent, so
for nearest published distances :math:`a` (left) and :math:`b` (right)

.. math::
    \mathcal L(a, b) = \max_{x\in\{0,1\}} \big[\ell_x(a) + \ell_x(b)\big],\qquad
    \ell_x(d) = \max_v \log\frac{(P^d)_{xv}}{(P^d)_{\bar x v}},

with :math:`\ell_x(\text{none}) = 0` for a side with nothing published.  Everything beyond
the nearest published record can then be published too, so the optimum is a window
:math:`[p-\Delta_\ell, p+\Delta_r]` of redacted records.  Each :math:`\ell_x` is
non-increasing in :math:`d` (data processing: :math:`X_{p+d+1}` is :math:`X_{p+d}`
passed through :math:`P`, independently of everything else given :math:`X_{p+d}`), so
for each left choice the feasible right choices form a suffix.

**Any number of states** (Lemma 1 generalised, ``docs/mathematics.md`` §6).  On a chain of ``k``
states only the nearest published record on each side still matters (it cuts the chain), and

.. math:: \mathcal L(a,b)=\max_{x\ne x'}\big[\ell_\ell(a)[x,x']+\ell_r(b)[x,x']\big]

with the window terms :math:`\ell_s` of :func:`redactopt.model.influence.window_terms` (the left
side on the time-reversed chain); on two states :math:`\ell_s(d)[x,\bar x] = \ell_x(d)`.  Every
:math:`\ell_s(d)[x,x']` is non-increasing in ``d``, so the same binary search applies:
:math:`O(n k^2\log n)` after the terms (:math:`O(D k^3)` for the ``D`` distances that matter).

Solvers (one module for every chain; the registry's ``dim`` and ``dim-milp``):

* :func:`dim_enumerate` — for every left choice the nearest feasible right choice by
  binary search: on a binary chain from the closed-form :math:`\ell_x`, on any other chain
  from the matrix products of :func:`side_window_terms`;
* :func:`dim_milp` — the same problem on a binary chain as a MILP in OR-Tools MathOpt with
  one-hot choices on each side and the two linear leakage constraints, with the MILP's dual
  bound;
* :func:`dim_windows` — the joint window optimum of several private records (any chain).

**Outward and inward.**  The closed-form :math:`\ell_x` carry rounding errors of about
1e-12 relative (:data:`redactopt.model.influence.INFLUENCE_RTOL` bounds them), so a window
is only excluded when it is :func:`~redactopt.model.influence.provably_above` the budget:
the proposal is the best window under that *outward* test (its count bounds the exact
optimum over windows), and the fallback the best window under the *inward* test (budget
shrunk by the same margin), which the exact judge accepts whenever the first one sits on
a floating tie it refuses.  On a chain of more states (or a two-state chain with an
impossible transition) the margin adds the absolute error bound
:func:`~redactopt.model.influence.influence_atol` of the longest distance, and terms beyond the
distance ``D`` where every :math:`\ell` has fallen below :math:`10^{-9}\epsilon` are replaced by 0
(outward) or by the value at ``D`` (inward): both directions stay sound.

Theorem 2 of the paper is **not** an upper bound everywhere: the exact optimum found
here beats it (``tests/test_dim.py::test_theorem2_bound_is_beaten``).  Indices are
0-based.
"""

from __future__ import annotations

import math
import time
from datetime import timedelta

import numpy as np

from redactopt._validate import check_real
from redactopt.model.chain import Chain, check_problem
from redactopt.model.influence import (
    INFLUENCE_RTOL,
    influence_atol,
    side_log_ratio_envelope,
    side_log_ratio_maxima,
    side_matrix,
    window_terms,
)
from redactopt.solvers.base import Candidate

__all__ = ["dim_enumerate", "dim_milp", "dim_windows", "side_window_terms", "SCOPE"]

SCOPE = "data-independent"

#: Positive entries of a computed P^d below this are not trusted (see judge.lemma2).
_SAFE_MIN = 1e-290


def _terms(chain: Chain, m: int, *, envelope: bool = False) -> np.ndarray:
    r""":math:`\ell_x(d)` for the choices ``d = 1..m`` and "nothing published" (last row, 0).

    With ``envelope`` the non-increasing envelope (for binary search, never below the terms).
    """
    ell = side_log_ratio_envelope(chain, m) if envelope else side_log_ratio_maxima(chain, m)
    return np.vstack([ell, np.zeros((1, 2))])


def side_window_terms(chain: Chain, m: int, side: str, eps: float) -> tuple[np.ndarray, np.ndarray]:
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


def _binary_side_window_terms(chain: Chain, m: int, side: str, eps: float) -> tuple[np.ndarray, np.ndarray]:
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


def _pairs(ell: np.ndarray) -> np.ndarray:
    r"""Two-state terms :math:`\ell_x(d)` (``(c, 2)``) as the pair terms ``[d, x, \bar x]`` of any chain (``(c, 2, 2)``)."""
    out = np.zeros((ell.shape[0], 2, 2))
    out[:, 0, 1], out[:, 1, 0] = ell[:, 0], ell[:, 1]
    return out


def dim_enumerate(chain: Chain, n: int, *, eps: float, p: int, time_limit: float = 60.0,
                  verbose: bool = False, rng: object = None) -> Candidate:
    r"""Best data-independent window by enumeration (Lemma 1 and its k-state form), :math:`O(n\log n)`.

    For every left choice (nearest published record at distance :math:`1..p`, or none)
    the smallest feasible right window is found by binary search on the non-increasing
    terms; the best pair maximises the number of published records.  On a binary chain the
    terms are the closed-form :math:`\ell_x` of
    :func:`redactopt.model.influence.side_log_ratio_maxima` (the right side's non-increasing
    envelope for the search) with the relative margin ``INFLUENCE_RTOL``; on any other chain
    the matrix terms of :func:`side_window_terms`, with the absolute error bound of the longest
    distance added to the margin (module docstring).  ``time_limit``, ``verbose`` and ``rng`` are
    accepted for the common solver signature; the enumeration takes milliseconds.

    Returns
    -------
    Candidate
        ``solver="dim"``, ``status="optimal"``: the best window under the outward test
        (module docstring) with ``upper_bound`` its count over ``n`` (an upper bound on the
        exact optimum over data-independent mechanisms, ``bound_scope="data-independent"``,
        ``bound_solver="enumeration"``), and the inward optimum as fallback.  ``info``
        holds the window radii.
    """
    n, eps, p = check_problem(chain, n, eps, p, two_state=False)
    t0 = time.perf_counter()
    m_l, m_r = p, n - 1 - p
    if chain.binary:
        low_l = high_l = _pairs(_terms(chain, m_l))
        low_r = high_r = _pairs(_terms(chain, m_r, envelope=True))
        slack = eps * INFLUENCE_RTOL
    else:
        low_l, high_l = side_window_terms(chain, m_l, "left", eps)
        low_r, high_r = side_window_terms(chain, m_r, "right", eps)
        # the error bound of the largest distance covers every window (outward and inward both stay sound)
        slack = eps * INFLUENCE_RTOL + float(influence_atol(n, chain.k))
    i, j, count = _best(low_l, low_r, m_l, m_r, eps + slack)
    ii, jj, _ = _best(high_l, high_r, m_l, m_r, eps - slack)
    q, info = _window(n, p, i, j, low_l.shape[0], low_r.shape[0], chain.k)
    qf, _ = _window(n, p, ii, jj, high_l.shape[0], high_r.shape[0], chain.k)
    q[p] = qf[p] = 1.0
    if chain.binary:
        info["windows_checked"] = m_l + 1
    info.update(seconds=time.perf_counter() - t0)
    return Candidate(redact_prob=q, solver="dim", status="optimal", upper_bound=count / n,
                     bound_solver="enumeration", bound_scope=SCOPE, fallbacks=(qf,), info=info)


def _milp_counts(m: int) -> np.ndarray:
    """Records published on a side of ``m`` records for each choice (distance 1..m, none)."""
    return _counts(m, m + 1)


def _window_q(n: int, p: int, a: int, b: int, m_left: int, m_right: int) -> np.ndarray:
    """Redaction array of a binary chain for the choice index ``a`` (left) and ``b`` (right).

    Choice ``k`` on a side means the nearest published record is at distance ``k + 1``;
    ``k = m`` means nothing is published on that side.
    """
    return _window(n, p, a, b, m_left + 1, m_right + 1, 2)[0]


def _window_info(a: int, b: int, m_left: int, m_right: int) -> dict:
    return _window(m_left + m_right + 1, m_left, a, b, m_left + 1, m_right + 1, 2)[1]


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


def dim_windows(chain: Chain, n: int, *, eps: float, private: tuple[int, ...]) -> np.ndarray:
    r"""Data-independent windows for several private records: one joint window optimum per cluster.

    Private records whose windows overlap are merged into clusters; each cluster gets the best
    window of redacted records that keeps *every* member's leakage (Lemma 1 with the member's own
    distances to the two published ends) within the budget — exact by enumeration of the left end
    with the smallest feasible right end, which never grows as the left end moves away (the terms
    are non-increasing).  The window terms are
    computed once per side.  Inward test (the caller verifies exactly).
    """
    n, eps, _ = check_problem(chain, n, eps, private[0] if private else 0, two_state=False)
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


def _mathopt_solver(name: str | None):
    from ortools.math_opt.python import mathopt  # heavy (0.6 s): only when the MILP is asked for

    order = ["HIGHS", "GSCIP", "CP_SAT"] if name is None else [str(name).upper()]
    for key in order:
        if not hasattr(mathopt.SolverType, key):
            raise ValueError(f"solver must be one of HIGHS, GSCIP, CP_SAT, got {name!r}")
        st = getattr(mathopt.SolverType, key)
        probe = mathopt.Model()
        v = probe.add_binary_variable()
        probe.maximize(v)
        try:
            mathopt.solve(probe, st)
        except Exception:  # the solver is not compiled into this OR-Tools build
            continue
        return st, key
    raise ValueError(f"no MILP solver among {order} is available in this OR-Tools build")


def dim_milp(
    chain: Chain,
    n: int,
    *,
    eps: float,
    p: int,
    time_limit: float = 30.0,
    verbose: bool = False,
    rng: object = None,
    solver: str | None = None,
) -> Candidate:
    r"""Best data-independent window as a MILP (OR-Tools MathOpt).

    Binaries :math:`a_k` (left) and :math:`b_k` (right) choose the nearest published
    record on each side (distance :math:`k+1`, or none); exactly one per side.  With
    :math:`\ell_x` from :func:`redactopt.model.influence.side_log_ratio_maxima` (Lemma 1;
    the sides add because they are independent given :math:`X_p`):

    .. math::
        \max \sum_k a_k c^\ell_k + \sum_k b_k c^r_k \quad\text{s.t.}\quad
        \sum_k a_k\ell_x(k) + \sum_k b_k \ell_x(k) \le \epsilon\ (x=0,1),\quad
        \sum_k a_k = \sum_k b_k = 1,

    where :math:`c_k` counts the published records of the choice.  Solved with the
    outward budget (the dual bound, rounded down to a count, bounds the exact optimum
    over windows) and with the inward budget (the fallback), as :func:`dim_enumerate`.

    Parameters
    ----------
    time_limit : float
        Seconds per MILP solve.
    solver : {"HIGHS", "GSCIP", "CP_SAT"}, optional
        Default: the first of these available.

    Returns
    -------
    Candidate
        ``solver="dim"``, ``bound_solver="ortools-mathopt-<solver>"``,
        ``bound_scope="data-independent"``; ``status`` ``"optimal"`` or ``"time_limit"``.
    """
    n, eps, p = check_problem(chain, n, eps, p)
    time_limit = check_real(time_limit, "time_limit")
    if time_limit <= 0.0:
        raise ValueError(f"time_limit must be > 0, got {time_limit!r}")
    from ortools.math_opt.python import mathopt  # heavy: only when the MILP is asked for

    st, solver_name = _mathopt_solver(solver)
    t0 = time.perf_counter()
    m_left, m_right = p, n - 1 - p
    left, right = _terms(chain, m_left), _terms(chain, m_right)
    cnt_left, cnt_right = _milp_counts(m_left), _milp_counts(m_right)

    def solve(budget: float):
        model = mathopt.Model(name="dim")
        av = [model.add_binary_variable(name=f"a{k}") for k in range(m_left + 1)]
        bv = [model.add_binary_variable(name=f"b{k}") for k in range(m_right + 1)]
        model.add_linear_constraint(mathopt.fast_sum(av) == 1)
        model.add_linear_constraint(mathopt.fast_sum(bv) == 1)
        for x in (0, 1):
            model.add_linear_constraint(
                mathopt.fast_sum(float(left[k, x]) * av[k] for k in range(m_left + 1))
                + mathopt.fast_sum(float(right[k, x]) * bv[k] for k in range(m_right + 1))
                <= budget
            )
        model.maximize(
            mathopt.fast_sum(int(cnt_left[k]) * av[k] for k in range(m_left + 1))
            + mathopt.fast_sum(int(cnt_right[k]) * bv[k] for k in range(m_right + 1))
        )
        params = mathopt.SolveParameters(
            time_limit=timedelta(seconds=float(time_limit)),
            relative_gap_tolerance=0.0,
            absolute_gap_tolerance=0.5,  # the objective is an integer count
            enable_output=bool(verbose),
        )
        res = mathopt.solve(model, st, params=params)
        if res.has_primal_feasible_solution():
            vals = res.variable_values()
            a = max(range(m_left + 1), key=lambda k: vals[av[k]])
            b = max(range(m_right + 1), key=lambda k: vals[bv[k]])
        else:
            a, b = m_left, m_right  # publish nothing: always feasible
        return a, b, res.termination

    a, b, term = solve(eps * (1.0 + INFLUENCE_RTOL))
    ai, bi, _ = solve(eps * (1.0 - INFLUENCE_RTOL))
    bound = term.objective_bounds.dual_bound
    # The objective is an integer: the dual bound can be rounded down (with room for the
    # MILP's own tolerance).
    count_bound = min(n - 1, math.floor(bound + 1e-6)) if math.isfinite(bound) else n - 1
    info = _window_info(a, b, m_left, m_right)
    info.update(termination=str(term.reason.name), dual_bound=float(bound), seconds=time.perf_counter() - t0)
    optimal = term.reason == mathopt.TerminationReason.OPTIMAL
    return Candidate(
        redact_prob=_window_q(n, p, a, b, m_left, m_right),
        solver="dim",
        status="optimal" if optimal else "time_limit",
        upper_bound=count_bound / n,
        bound_solver=f"ortools-mathopt-{solver_name.lower()}",
        bound_scope=SCOPE,
        fallbacks=(_window_q(n, p, ai, bi, m_left, m_right),),
        info=info,
    )
