r"""A data-dependent design for k-state chains: successive linear programming (SLP) with exact checks.

The design problem (Definitions 1 and 2 generalised) maximises the utility
:math:`\frac1n\sum_t\sum_v\pi_v(1-q_t[v])` subject to :math:`\mathcal L(X_p\to\mathbf Y)\le\epsilon`.
By the side reduction (docs/mathematics.md, "k-state chains") the constraint is

.. math:: c^{s}_{j,v}(x,x') = \log g^{s,j}_{xv}-\log g^{s,j}_{x'v}\ \le\ a_s(x,x'),\qquad
          a_\ell(x,x')+a_r(x,x')\le\epsilon,

for every side ``s``, every supported pattern (``j`` nearest ⊥, then ``v``; and "all ⊥") and every
ordered pair, with :math:`g^{s,j}=(P_sD_1\cdots P_sD_j P_s)_{\cdot v}` a polynomial in ``q``.  Its
gradient is a ratio of prefix and suffix products:

.. math:: \frac{\partial\log g^{s,j}_{xv}}{\partial q_t[y]}=
          \frac{(A_{t-1}P)_{xy}\,(P D_{t+1}\cdots D_{j}P)_{yv}}{g^{s,j}_{xv}},\qquad t\le j .

Each step linearises every near-active constraint at the current mechanism and solves the linear
programme "largest utility gain within a trust region, with a free budget split per ordered pair"
(HiGHS via :func:`scipy.optimize.linprog`); the step is kept only if the **exact** leakage
(:func:`redactopt.judge.leakage.leakage`) of the new mechanism is within the budget and the
utility rose, otherwise the trust region shrinks.  So every iterate is exactly feasible and
the utility never falls; it is a local method (no optimality claim, ``status="local"``).

**Support.**  A value redacted always (``q = 1``) has no pattern; it may be opened only if its
pattern's current ratios are within the budget for every pair; its constraints are switched on
by its own redaction probability (a big-M term that vanishes once it drops below ``1 - 0.02``;
a step that leaves it above stays closed).  The search starts from the
mechanism that redacts every record within ``window`` of ``p`` (the data-independent radius plus up
to 40 + 2 on each side, by default), which gives every pattern there a well-defined ratio.

**Several starts** (:func:`propose_kmultistart`, used by ``kdesign(method="optimal")`` on the
small problems where SCIP runs).  The steps open a redacted value only through its own pattern,
so a run stays near the structure it starts from (which values are published, which redacted).
:func:`opening_starts` adds the default start with one more value published at one record within
the data-independent radius or just beyond it, for every value Lemma 2 leaves publishable; on the
sticky benchmark chain (k = 3, n = 8, p = 0, eps = 1) the best run publishes a state fully at two
records, 0.505248 against 0.502692 from the default start.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from redactopt.judge.leakage import leakage, utility
from redactopt.judge.lemma2 import publishable
from redactopt.model.chain import Chain as KChain
from redactopt.model.chain import check_problem
from redactopt.model.influence import side_matrix
from redactopt.solvers.base import Candidate
from redactopt.solvers.dim import dim_enumerate

__all__ = ["propose_klocal", "propose_kmultistart", "opening_starts", "side_constraints", "start_window"]

#: Probabilities this close to 0 or 1 after a step are set to 0 or 1 (the exact check follows).
_SNAP = 1e-9

#: Beyond this data-independent radius (records on a side) the local search is not run (its linear
#: programmes grow with the window); the window is proposed instead.
MAX_WINDOW = 150

#: The start window extends the data-independent radius ``r`` by ``min(r, EXTRA) + 2`` records.
EXTRA = 40

#: A closed value counts as opened (its pattern constraints enforced) below 1 - _OPEN.
_OPEN = 0.02


def _prefix(P: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """``F[t] = A_t P`` (records ``0..t-1`` ⊥), each scaled to its maximum; shape ``(m, k, k)``."""
    m, k = Q.shape
    F = np.empty((m, k, k))
    A = np.eye(k)
    for t in range(m):
        f = A @ P
        top = f.max()
        F[t] = f / top if top > 0.0 else f
        A = F[t] * Q[t][None, :]
    return F


def side_constraints(P: np.ndarray, Q: np.ndarray) -> tuple[list, np.ndarray, np.ndarray]:
    r"""Every pattern constraint of one side with its gradient.

    Returns ``(rows, values, grads)``: ``rows[i] = (j, v, x, x')`` (``j = m`` and ``v = -1`` for
    "all ⊥"; the pattern is included whether or not ``v`` can currently be published), ``values[i]``
    the current log-ratio :math:`c` and ``grads[i]`` its gradient with respect to ``Q`` (shape
    ``(m, k)``).  A pair whose two probabilities are both 0 is left out; one that rules ``x`` out
    has ``c = inf`` (and a zero gradient).
    """
    m, k = Q.shape
    F = _prefix(P, Q)
    # suffix products S[t, j] = P D_{t+1} ... D_{j-1} P for t < j <= m - 1 (S[j-1, j] = P)
    S = np.zeros((m, m, k, k))
    for j in range(1, m):
        S[j - 1, j] = P
    for t in range(m - 3, -1, -1):
        blk = S[t + 1, t + 2 :]  # (m - t - 2, k, k)
        nxt = P @ (Q[t + 1][:, None] * blk)
        top = nxt.max(axis=(1, 2), keepdims=True)
        S[t, t + 2 :] = nxt / np.where(top > 0.0, top, 1.0)
    # all-⊥: h[t] = P D_{t+1} ... P D_{m-1} 1 (h[m-1] = 1)
    h = np.ones((m, k))
    for t in range(m - 2, -1, -1):
        v = P @ (Q[t + 1] * h[t + 1])
        top = v.max()
        h[t] = v / top if top > 0.0 else v
    rows, values, grads = [], [], []
    off = [(x, y) for x in range(k) for y in range(k) if x != y]
    # every (v, x, y) of a pattern in the order of the rows: v, then the ordered pairs
    vv = np.repeat(np.arange(k), len(off))
    xx = np.tile(np.array([x for x, _ in off]), k)
    yy = np.tile(np.array([y for _, y in off]), k)
    with np.errstate(divide="ignore", invalid="ignore"):
        for j in range(m):
            g = F[j]  # [x, v]
            gx, gy = g[xx, vv], g[yy, vv]
            both = (gx > 0.0) & (gy > 0.0)
            keep = both | (gx > 0.0)  # both positive, or x ruled out (the pattern must stay closed)
            if not keep.any():
                continue
            block = np.zeros((int(keep.sum()), m, k))
            if j and both.any():
                t = np.arange(j)
                num = F[t][:, :, :, None] * S[t, j][:, None, :, :]  # [t, x, y, v]
                den = np.einsum("txy,ty,tyv->txv", F[t], Q[t], S[t, j])
                dl = num / den[:, :, None, :]  # [t, x, y, v]
                sel = both[keep]
                # (advanced indices apart: the pattern axis comes first) -> [pattern, t, y]
                block[sel, :j] = dl[:, xx[both], :, vv[both]] - dl[:, yy[both], :, vv[both]]
            for i in np.flatnonzero(keep):
                v, x, y = int(vv[i]), int(xx[i]), int(yy[i])
                rows.append((j, v, x, y))
                values.append(math.log(g[x, v]) - math.log(g[y, v]) if both[i] else math.inf)
            grads.extend(block)
        gb = (F[m - 1] * Q[m - 1][None, :]).sum(axis=1)
        num = F[:, :, :] * h[:, None, :]  # [t, x, y]
        den = np.einsum("txy,ty,ty->tx", F, Q, h)
        dl = num / den[:, :, None]
        for x, y in off:
            if not (gb[x] > 0.0 and gb[y] > 0.0):
                continue
            rows.append((m, -1, x, y))
            values.append(math.log(gb[x]) - math.log(gb[y]))
            grads.append(dl[:, x, :] - dl[:, y, :])
    if not rows:
        return [], np.zeros(0), np.zeros((0, m, k))
    return rows, np.array(values), np.array(grads)


def start_window(n: int, p: int, delta_left: int, delta_right: int) -> tuple[int, int]:
    """Records redacted at the start on the left and on the right of ``p``: the data-independent
    radius ``r`` of each side plus ``min(r, EXTRA) + 2`` (module docstring), within the sequence."""
    return (min(p, delta_left + min(delta_left, EXTRA) + 2),
            min(n - 1 - p, delta_right + min(delta_right, EXTRA) + 2))


class _Side:
    def __init__(self, chain: KChain, name: str, records: np.ndarray):
        self.name, self.records = name, records  # 0-based indices, nearest first
        self.P = side_matrix(chain, name)


def _kept_closed(s: _Side, q: np.ndarray, rows: list, vals: np.ndarray, eps: float) -> np.ndarray:
    """Closed values (``q = 1``) that may not open: their pattern exceeds the budget for some pair, or is absent."""
    m, k = len(s.records), q.shape[1]
    worst = {}
    for (j, v, x, y), c in zip(rows, vals):
        if v >= 0:
            worst[(j, v)] = max(worst.get((j, v), -math.inf), c)
    fixed = np.zeros((m, k), dtype=bool)
    for t in range(m):
        for v in range(k):
            if q[s.records[t], v] >= 1.0:
                w = worst.get((t, v))
                fixed[t, v] = w is None or w > eps
    return fixed


def _near_active(
    s: _Side, q: np.ndarray, rows: list, vals: np.ndarray, fixed: np.ndarray, pidx: dict, tau: float
) -> list[int] | None:
    """The side's constraints within ``tau`` of their pair's largest log-ratio, to be linearised.

    Patterns of values kept closed are left out.  ``None`` when an open pattern rules a value out
    (the current point is not feasible).
    """
    side_max = np.full(len(pidx), -math.inf)
    for (j, v, x, y), c in zip(rows, vals):
        if v < 0 or q[s.records[j], v] < 1.0 or not fixed[j, v]:
            side_max[pidx[(x, y)]] = max(side_max[pidx[(x, y)]], c)
    keep = []
    for i, ((j, v, x, y), c) in enumerate(zip(rows, vals)):
        if v >= 0 and q[s.records[j], v] >= 1.0 and fixed[j, v]:
            continue
        if not math.isfinite(c):
            return None
        if c >= side_max[pidx[(x, y)]] - tau:
            keep.append(i)
    return keep


@dataclass
class _StepVars:
    """The LP's step variables: the column of each free ``(record, value)``, its bounds and its cost."""

    var_of: dict[tuple[int, int], int] = field(default_factory=dict)
    lb: list[float] = field(default_factory=list)
    ub: list[float] = field(default_factory=list)
    cost: list[float] = field(default_factory=list)

    def add_side(self, s: _Side, q: np.ndarray, fixed: np.ndarray, radius: float, pi: np.ndarray) -> None:
        """A variable for every value of the side not kept closed, its step within the trust region."""
        m, k = fixed.shape
        for t in range(m):
            for v in range(k):
                if fixed[t, v]:
                    continue
                r = int(s.records[t])
                self.var_of[(r, v)] = len(self.lb)
                self.lb.append(max(-radius, -q[r, v]))
                self.ub.append(min(radius, 1.0 - q[r, v]))
                self.cost.append(float(pi[v]))


def _linearised_rows(
    s: _Side, rows: list, vals: np.ndarray, grads: np.ndarray, keep: list[int], q: np.ndarray,
    var_of: dict[tuple[int, int], int], budget0: int, nvar: int, pidx: dict, radius: float,
) -> tuple[list[np.ndarray], list[float]]:
    """``A_ub`` rows and ``b_ub`` of the kept constraints: linearised log-ratio minus the pair's budget column.

    ``budget0`` is the column of the side's first pair budget.
    """
    k = q.shape[1]
    cols = np.array([[var_of.get((int(r), yy), -1) for yy in range(k)] for r in s.records], dtype=np.int64)
    free = cols >= 0
    a = np.zeros((len(keep), nvar))
    a[:, cols[free]] = grads[keep][:, free]
    A_rows, b = [], []
    for row, i in zip(a, keep):
        j, v, x, y = rows[i]
        row[budget0 + pidx[(x, y)]] = -1.0
        col = int(cols[j, v]) if 0 <= v and j < len(s.records) else -1
        if col >= 0 and q[int(s.records[j]), v] >= 1.0:
            # a closed value: enforced only once it opens past 1 - _OPEN (big-M, linear in q)
            big = max(0.0, vals[i]) + float(np.abs(grads[i]).sum()) * radius + 1.0
            row[col] -= big / _OPEN
            A_rows.append(row)
            b.append(big - vals[i])
            continue
        A_rows.append(row)
        b.append(-vals[i])
    return A_rows, b


def _take_step(q: np.ndarray, var_of: dict[tuple[int, int], int], x: np.ndarray) -> np.ndarray:
    """``q`` moved by the LP's step ``x``, within ``[0, 1]`` and snapped near 0 and 1."""
    new = q.copy()
    for (r, v), col in var_of.items():
        new[r, v] = min(1.0, max(0.0, q[r, v] + x[col]))
        if q[r, v] >= 1.0 and new[r, v] > 1.0 - _OPEN:
            new[r, v] = 1.0  # not opened (its constraints were not enforced)
    new[new < _SNAP] = 0.0
    new[new > 1.0 - _SNAP] = 1.0
    return new


def _step_lp(
    chain: KChain, q: np.ndarray, sides: list[_Side], eps: float, radius: float, tau: float,
    seconds: float = math.inf,
) -> np.ndarray | None:
    """Solve one trust-region LP; return the proposed mechanism (or None)."""
    from scipy.optimize import linprog  # scipy is a dependency; imported where used

    k = chain.k
    t0 = time.perf_counter()
    pairs = [(x, y) for x in range(k) for y in range(k) if x != y]
    pidx = {pr: i for i, pr in enumerate(pairs)}
    npair = len(pairs)
    step = _StepVars()
    blocks = []
    for s in sides:
        rows, vals, grads = side_constraints(s.P, q[s.records])
        fixed = _kept_closed(s, q, rows, vals, eps)
        keep = _near_active(s, q, rows, vals, fixed, pidx, tau)
        if keep is None:
            return None
        step.add_side(s, q, fixed, radius, chain.stationary)
        blocks.append((s, rows, vals, grads, keep))
    nq = len(step.lb)
    if nq == 0:
        return None
    nvar = nq + npair * len(sides)
    A_rows, b = [], []
    for si, (s, rows, vals, grads, keep) in enumerate(blocks):
        if keep:
            a_s, b_s = _linearised_rows(s, rows, vals, grads, keep, q, step.var_of, nq + si * npair, nvar, pidx, radius)
            A_rows += a_s
            b += b_s
    if len(sides) == 2:
        for i in range(npair):
            a = np.zeros(nvar)
            a[nq + i] = 1.0
            a[nq + npair + i] = 1.0
            A_rows.append(a)
            b.append(eps)
    c = np.concatenate([np.array(step.cost), np.zeros(npair * len(sides))])
    bounds = list(zip(step.lb, step.ub)) + [(0.0, eps)] * (npair * len(sides))
    seconds -= time.perf_counter() - t0  # building the rows took some of it
    if seconds <= 0.0:
        return None
    opts = {"time_limit": max(float(seconds), 0.01)} if math.isfinite(seconds) else {}
    res = linprog(c, A_ub=np.array(A_rows) if A_rows else None, b_ub=np.array(b) if b else None,
                  bounds=bounds, method="highs", options=opts)  # out of time: status 1, no step
    if res.status != 0 or res.x is None:
        return None
    return _take_step(q, step.var_of, res.x)


def propose_klocal(chain: KChain, n: int, *, eps: float, p: int = 0, time_limit: float = 30.0,
                   verbose: bool = False, rng: object = None, budget: float | None = None,
                   window: tuple[int, int] | None = None, start: np.ndarray | None = None,
                   max_iter: int = 400) -> Candidate:
    r"""A data-dependent design by successive linear programming (module docstring).

    Parameters
    ----------
    chain : KChain
    n, eps, p
        The problem (``p`` 0-based).
    time_limit : float
        Seconds for the whole search (it stops after the step that exceeds it).
    budget : float, optional
        The leakage every iterate must keep (exact check); default ``eps`` less a relative
        ``1e-8`` (the judge re-verifies exactly anyway).
    window : (int, int), optional
        Records redacted at the start on the left and on the right of ``p`` (the search can only
        redact within them).  Default: the data-independent optimum's radius ``r`` plus
        ``min(r, EXTRA) + 2`` on each side; beyond a radius of ``MAX_WINDOW`` the search is skipped
        and the window proposed (``status="heuristic"``).
    start : numpy.ndarray, optional
        A start mechanism instead (must be feasible for ``budget``).

    Returns
    -------
    Candidate
        ``solver="local"``, ``status="local"`` (or ``"time_limit"``); the data-independent window
        as fallback; no upper bound.  ``info`` holds iterations, accepted steps and seconds.
    """
    n, eps, p = check_problem(chain, n, eps, p, two_state=False)
    t0 = time.perf_counter()
    target = eps * (1.0 - 1e-8) if budget is None else float(budget)
    k = chain.k
    dim = dim_enumerate(chain, n, eps=eps, p=p)
    fallback = dim.fallbacks[0]
    if start is not None:
        q = np.array(start, dtype=float)
    else:
        if window is None:
            dl, dr = dim.info["delta_left"], dim.info["delta_right"]
            if max(dl, dr) > MAX_WINDOW:
                info = {"iterations": 0, "accepted": 0, "seconds": time.perf_counter() - t0,
                        "skipped": f"data-independent radius {max(dl, dr)} > {MAX_WINDOW}: the window is proposed"}
                return Candidate(redact_prob=fallback, solver="local", status="heuristic", info=info)
            window = start_window(n, p, dl, dr)
        q = np.zeros((n, k))
        q[p - window[0] : p + window[1] + 1] = 1.0
    q[p] = 1.0
    if leakage(chain, q, p).leakage > target:
        q = np.ones((n, k))
    # the sides: records that can be redacted plus the first always-published record
    red = np.flatnonzero(q.max(axis=1) > 0.0)
    lo, hi = int(red.min()), int(red.max())
    sides = []
    if p > 0:
        sides.append(_Side(chain, "left", np.arange(p - 1, max(lo - 1, 0) - 1, -1)))
    if p < n - 1:
        sides.append(_Side(chain, "right", np.arange(p + 1, min(hi + 1, n - 1) + 1)))
    u = utility(chain, q)
    radius, tau, margin = 0.25, 2.0, 0.0
    it = accepted = 0
    stopped = False
    last, t_step = 0.0, t0  # the last step's seconds: the next starts only if half of one like it fits
    while it < max_iter and radius > 1e-5:
        now = time.perf_counter()
        if it:
            last = now - t_step
        if now - t0 + 0.5 * last > time_limit:
            stopped = True
            break
        it += 1
        t_step = now
        left = time_limit - (t_step - t0)
        new = _step_lp(chain, q, sides, target - margin, radius, tau, left) if sides else None
        if new is None:
            if margin > 1e-6 * target:
                margin *= 0.25  # the aim below the budget made the programme infeasible
            else:
                radius /= 2.0
            continue
        nu = utility(chain, new)
        if nu <= u + 1e-12:
            radius /= 2.0
            continue
        lk = leakage(chain, new, p).leakage
        if lk <= target:
            q, u = new, nu
            accepted += 1
            radius = min(0.5, radius * 1.5)
            margin *= 0.5
        else:
            # the linearisation overshot: aim lower next time, and shrink the region
            margin = min(0.5 * target, margin + 1.5 * (lk - target))
            radius /= 1.5
    info = {"iterations": it, "accepted": accepted, "seconds": time.perf_counter() - t0,
            "start_window": list(window) if window is not None else None}
    return Candidate(redact_prob=q, solver="local", status="time_limit" if stopped else "local",
                     fallbacks=(fallback,), info=info)


def opening_starts(chain: KChain, n: int, *, eps: float, p: int, budget: float) -> list[np.ndarray]:
    r"""Start mechanisms that publish one more value than the default start, each within ``budget``.

    The default start (:func:`start_window`) redacts every record near ``p``; the successive LPs
    open a redacted value only through its own pattern, so they stay near the structure they start
    from (which values are published, which redacted).  Each start here publishes exactly one value
    ``v`` at one record ``r`` within the data-independent radius or just beyond it (where that
    start redacts everything), for every ``(r, v)`` that Lemma 2 leaves publishable
    (:func:`redactopt.judge.lemma2.publishable`) and whose exact leakage is within ``budget``.
    """
    dim = dim_enumerate(chain, n, eps=eps, p=p)
    dl, dr = dim.info["delta_left"], dim.info["delta_right"]
    if max(dl, dr) > MAX_WINDOW:
        return []
    wl, wr = start_window(n, p, dl, dr)
    base = np.zeros((n, chain.k))
    base[p - wl : p + wr + 1] = 1.0
    cells: list[tuple[int, int]] = []
    reach_l, reach_r = min(dl + 1, wl), min(dr + 1, wr)  # the radius and the first record beyond it
    if reach_l > 0:
        ok = publishable(chain, reach_l, eps=eps, side="left")
        cells += [(p - 1 - d, int(v)) for d in range(reach_l) for v in np.flatnonzero(ok[d])]
    if reach_r > 0:
        ok = publishable(chain, reach_r, eps=eps, side="right")
        cells += [(p + 1 + d, int(v)) for d in range(reach_r) for v in np.flatnonzero(ok[d])]
    starts = []
    for r, v in cells:
        q = base.copy()
        q[r, v] = 0.0
        if leakage(chain, q, p).leakage <= budget:
            starts.append(q)
    return starts


def propose_kmultistart(chain: KChain, n: int, *, eps: float, p: int = 0, time_limit: float = 30.0,
                        verbose: bool = False, rng: object = None, budget: float | None = None) -> Candidate:
    """:func:`propose_klocal` from the default start and from every :func:`opening_starts` start.

    The best local optimum is proposed, the others (and the data-independent window) as fallbacks;
    ``time_limit`` is shared by the runs (the default start first).  Every run keeps its iterates
    within ``budget`` exactly; the judge re-verifies the proposal anyway.

    Returns
    -------
    Candidate
        ``solver="multistart"``, ``status="local"`` (or ``"time_limit"`` when the time ran out
        before every start was tried); ``info`` holds each start's utility.
    """
    n, eps, p = check_problem(chain, n, eps, p, two_state=False)
    t0 = time.perf_counter()
    target = eps * (1.0 - 1e-8) if budget is None else float(budget)
    first = propose_klocal(chain, n, eps=eps, p=p, time_limit=time_limit, budget=target)
    runs = [first]
    starts = opening_starts(chain, n, eps=eps, p=p, budget=target) if first.status != "heuristic" else []
    stopped = first.status == "time_limit"
    for q0 in starts:
        left = time_limit - (time.perf_counter() - t0)
        if left <= 0.0:
            stopped = True
            break
        runs.append(propose_klocal(chain, n, eps=eps, p=p, time_limit=left, budget=target, start=q0))
    utils = [utility(chain, c.redact_prob) for c in runs]
    order = np.argsort(utils)[::-1]
    best = runs[int(order[0])]
    others = tuple(runs[int(i)].redact_prob for i in order[1:]) + first.fallbacks
    info = {"starts": len(runs), "start_utilities": [float(u) for u in utils], "best_start": int(order[0]),
            "seconds": time.perf_counter() - t0}
    return Candidate(redact_prob=best.redact_prob, solver="multistart", status="time_limit" if stopped else "local",
                     fallbacks=others, info=info)
