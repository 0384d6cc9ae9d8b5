r"""The Three-Region mechanism with a tuned budget split, and 3R calibrated to be private.

The exact frontier split (:func:`frontier_split`) and two library calls on top of
:func:`redactopt.paper.mechanisms.three_region`:

* :func:`tuned_three_region` — the split :math:`\epsilon_\ell+\epsilon_r=\epsilon` with the
  most utility as the paper computes it (Theorem 1's closed form with side budgets,
  Section IV) among the splits whose 3R is **exactly** private (``private=False``: among all
  of them, as the paper does — the paper's Eq. 20 ignores the first published record after
  a run of redactions, so that one may leak; its exact leakage is reported beside the utility).
* :func:`calibrated_three_region` — 3R's structure (regions from the split, the
  high-influence value always redacted in :math:`R_M`, :math:`R_L` redacted,
  :math:`R_S` published) with the redaction probability of the low value in
  :math:`R_M` chosen so that the **exact** leakage (Definition 1) is at most
  :math:`\epsilon`; a proposal (:class:`redactopt.solvers.base.Candidate`) that
  :func:`redactopt.engine.design.design` judges.

Indices are 0-based.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from redactopt._search import bisect_boundary
from redactopt._validate import check_real
from redactopt.engine.ladder import judge_candidate
from redactopt.errors import PrivacyCheckError
from redactopt.judge.certify import DesignResult, finalize, snap, verify
from redactopt.judge.lemma2 import lemma2_upper_bound
from redactopt.judge.segments import first_published
from redactopt.judge.tolerances import safe_budget
from redactopt.model.chain import MarkovChain, check_problem
from redactopt.model.influence import low_value, pointwise_influence, regions
from redactopt.judge.leakage import side_extremes, utility
from redactopt.paper.mechanisms import Mechanism, default_split, three_region, three_region_utility
from redactopt.solvers.base import Candidate
from redactopt.solvers.frontier import frontier_analysis

__all__ = ["TunedSplit", "tuned_three_region", "calibrated_three_region", "FrontierSplit", "frontier_split"]


@dataclass(frozen=True)
class TunedSplit:
    """The best budget split for the 3R mechanism and what it gives.

    Attributes
    ----------
    eps_left, eps_right : float
        The split, ``eps_left + eps_right == eps`` (``eps_right`` is computed as
        ``eps - eps_left``, exactly as :func:`~redactopt.paper.mechanisms.three_region` does).
    mechanism : Mechanism
        ``three_region(chain, n, eps=eps, p=p, eps_left=eps_left)`` (reading ``"section4"``).
    utility : float
        Theorem 1's utility of that mechanism (:func:`~redactopt.paper.mechanisms.three_region_utility`).
    leakage : float
        Its exact leakage (Definition 1); it may exceed ``eps``.
    """

    eps_left: float
    eps_right: float
    mechanism: Mechanism
    utility: float
    leakage: float


def _side_thresholds(chain: MarkovChain, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted min and max pointwise influences of the ``m`` records on one side (Def. 3)."""
    if m == 0:
        return np.zeros(0), np.zeros(0)
    d = np.arange(1, m + 1)
    i0 = np.asarray(pointwise_influence(chain, d, 0))
    i1 = np.asarray(pointwise_influence(chain, d, 1))
    return np.sort(np.minimum(i0, i1)), np.sort(np.maximum(i0, i1))


def _side_utility(lo: np.ndarray, hi: np.ndarray, budget: np.ndarray, pi_low: float) -> np.ndarray:
    r"""Published records on one side for each budget: :math:`|R_S| + \pi_{low}|R_M|(1-e^{-b/|R_M|})`.

    Region rules of :func:`redactopt.model.influence.regions`: ``S`` iff ``max_x i <= b``,
    ``M`` iff ``min_x i <= b < max_x i``.
    """
    s = np.searchsorted(hi, budget, side="right")
    m = np.searchsorted(lo, budget, side="right") - s
    with np.errstate(divide="ignore", invalid="ignore"):
        med = np.where(m > 0, m * -np.expm1(-budget / np.maximum(m, 1)), 0.0)
    return s + pi_low * med


def _split_candidates(chain: MarkovChain, n: int, eps: float, p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""The finitely many splits that can maximise Theorem 1's utility, their utilities, the breakpoints.

    Region membership changes only at the breakpoints :math:`e=i_x(d)` (left records) and
    :math:`e=\epsilon-i_x(d)` (right records).  Between two breakpoints the region sizes
    :math:`M_\ell, M_r` are fixed and :math:`\nu` is concave with derivative
    :math:`\pi_{low}(e^{-e/M_\ell}-e^{-(\epsilon-e)/M_r})`, so its maximiser is
    :math:`e^\star=\epsilon M_\ell/(M_\ell+M_r)` clipped to the interval.  Candidates: the
    breakpoints, the floats next to each (so that :math:`\epsilon-(\epsilon-i)` rounding cannot
    miss a jump), every interval's :math:`e^\star` and the default split.
    """
    lo_l, hi_l = _side_thresholds(chain, p)
    lo_r, hi_r = _side_thresholds(chain, n - 1 - p)
    pi_low = float(chain.stationary[low_value(chain)])
    breaks = np.concatenate([[0.0, eps], lo_l, hi_l, eps - lo_r, eps - hi_r])
    breaks = np.unique(breaks[(breaks >= 0.0) & (breaks <= eps)])
    near = np.concatenate([np.nextafter(breaks, -np.inf), np.nextafter(breaks, np.inf)])
    cands = [breaks, near[(near >= 0.0) & (near <= eps)]]
    if breaks.size > 1:
        mid = 0.5 * (breaks[:-1] + breaks[1:])
        m_l = np.searchsorted(lo_l, mid, side="right") - np.searchsorted(hi_l, mid, side="right")
        m_r = np.searchsorted(lo_r, eps - mid, side="right") - np.searchsorted(hi_r, eps - mid, side="right")
        tot = m_l + m_r
        with np.errstate(divide="ignore", invalid="ignore"):
            star = np.where(tot > 0, eps * m_l / np.maximum(tot, 1), mid)
        cands.append(np.clip(star, breaks[:-1], breaks[1:]))
    cands.append(np.array([default_split(n, p, eps)[0]]))
    e = np.unique(np.clip(np.concatenate(cands), 0.0, eps))
    value = _side_utility(lo_l, hi_l, e, pi_low) + _side_utility(lo_r, hi_r, eps - e, pi_low)
    return e, value, breaks


def _best_private_split(chain: MarkovChain, n: int, eps: float, p: int, e: np.ndarray, value: np.ndarray,
                        breaks: np.ndarray, default_left: float) -> float | None:
    """The most useful candidate split whose 3R is exactly ``eps``-private, improved inside intervals.

    Candidates are tried by Theorem 1's utility (ties toward the default split), each judged by
    :func:`~redactopt.judge.certify.verify`; the first private one is the start.  Every more
    useful candidate leaks; in each interval between breakpoints that holds one, the most useful
    of them is approached by bisection from the interval's most useful private candidate (the
    utility is concave there, so points between them are at least as useful as the private end;
    the bisection always keeps a private point, and its utility is computed, not assumed).
    Intervals go by their leaking candidate's utility and stop when it cannot beat the best
    found.  ``None`` if no candidate is private.
    """
    memo: dict[float, bool] = {}

    def private(el: float) -> bool:
        if el not in memo:
            q = three_region(chain, n, eps=eps, p=p, eps_left=el).redact_prob
            memo[el] = verify(chain, q, (p,), eps)[1]
        return memo[el]

    order = np.lexsort((np.abs(e - default_left), -value))
    first = next((k for k, i in enumerate(order) if private(float(e[i]))), None)
    if first is None:
        return None
    best, best_value = float(e[order[first]]), float(value[order[first]])
    interval = np.searchsorted(breaks, e, side="right")
    leaking: dict[int, int] = {}
    for i in order[:first]:  # all leak; the most useful of each interval
        leaking.setdefault(int(interval[i]), int(i))
    for k, i in sorted(leaking.items(), key=lambda ki: -value[ki[1]]):
        if value[i] <= best_value:
            break
        mate = next((j for j in order if interval[j] == k and value[j] <= value[i] and private(float(e[j]))), None)
        if mate is None:
            continue
        el = bisect_boundary(private, float(e[mate]), float(e[i]), steps=40)
        u = n * three_region_utility(chain, n, eps=eps, p=p, eps_left=el)  # records, as value
        if u > best_value:
            best, best_value = el, u
    return best


def tuned_three_region(chain: MarkovChain, n: int, *, eps: float, p: int = 0, private: bool = True) -> TunedSplit:
    r"""The split :math:`\epsilon_\ell+\epsilon_r=\epsilon` of 3R as printed with the most utility.

    With :math:`e=\epsilon_\ell`, Theorem 1's utility (Section IV reading) is

    .. math::
        n\,\nu(e) = |R_S^{(\ell)}(e)| + |R_S^{(r)}(\epsilon-e)|
        + \pi_{low}\sum_{s} |R_M^{(s)}|\big(1-e^{-\epsilon_s/|R_M^{(s)}|}\big),

    maximised exactly over the finitely many candidates of :func:`_split_candidates`.  3R's own
    privacy argument is incomplete (Eq. 20), so by default (``private=True``) only splits whose
    mechanism is **exactly** ``eps``-private count: the most useful such candidate, improved
    toward the leaking optimum of its interval (:func:`_best_private_split`).  With
    ``private=False`` the split maximising Theorem 1's utility whatever it leaks (the paper's
    choice; ``audit --method 3r --split auto`` judges that one).

    Parameters
    ----------
    chain : MarkovChain
    n : int
        Number of records.
    eps : float
        Total budget.
    p : int
        0-based index of the private record.
    private : bool
        Only exactly ``eps``-private splits (default).

    Returns
    -------
    TunedSplit
        Ties are broken towards the default split (:func:`~redactopt.paper.mechanisms.default_split`).
        ``leakage`` is the exact leakage (at most ``eps`` by default).

    Raises
    ------
    PrivacyCheckError
        ``private=True`` and 3R as printed leaks more than ``eps`` at every candidate split.
    """
    n, eps, p = check_problem(chain, n, eps, p)
    e, value, breaks = _split_candidates(chain, n, eps, p)
    default_left = default_split(n, p, eps)[0]
    if private:
        found = _best_private_split(chain, n, eps, p, e, value, breaks, default_left)
        if found is None:
            raise PrivacyCheckError(f"3R as printed leaks more than eps={eps:g} at every budget split it can take "
                                    "(its Eq. 20 ignores the first published record after a run of redactions)")
        best = found
    else:
        top = value.max()
        ties = e[value >= top - 1e-12 * max(1.0, top)]
        best = float(ties[np.argmin(np.abs(ties - default_left))])
    mech = three_region(chain, n, eps=eps, p=p, eps_left=best)
    util = three_region_utility(chain, n, eps=eps, p=p, eps_left=best)
    return TunedSplit(
        eps_left=best,
        eps_right=float(mech.info["eps_right"]),
        mechanism=mech,
        utility=util,
        leakage=mech.leakage().leakage,
    )


# ---------------------------------------------------------------------------
# calibrated 3R
# ---------------------------------------------------------------------------
_GRID = 32
_BISECT = 56


def _structure(chain: MarkovChain, n: int, p: int, eps_left: float, eps_right: float):
    """3R's fixed part for a split: the base array (``R_M`` low value published) and
    the ``R_M`` indices of each side."""
    reg = regions(chain, n, p, eps_left, eps_right)
    q = np.zeros((n, 2))
    q[(reg.labels == "L") | (reg.labels == "P")] = 1.0
    lo = reg.low_value
    med = (reg.medium_left(), reg.medium_right())
    for idx in med:
        q[idx, 1 - lo] = 1.0
    return q, med, lo, reg


def _with_probs(base: np.ndarray, med, lo: int, probs: tuple[float, float]) -> np.ndarray:
    q = base.copy()
    for idx, pr in zip(med, probs):
        q[idx, lo] = pr
    return snap(q)


def _smallest_feasible(h, upper: float, budget: float, h_many=None) -> float:
    """Smallest ``x`` in ``[0, upper]`` with ``h(x) <= budget`` on a grid, refined by bisection.

    ``h(upper) <= budget`` must hold.  The exact leakage need not be monotone in ``x``,
    so the grid locates the first feasible grid point and bisection refines the
    boundary between it and the infeasible grid point before it, always keeping a
    feasible end.  A feasible island narrower than the grid step may be missed; the
    answer is feasible regardless.  ``h_many`` (optional) evaluates the whole grid at
    once (:func:`_side_logs_many`); the grid point it picks is checked with ``h`` before
    the bisection starts from it, else the grid is scanned with ``h``.
    """
    if upper == 0.0:
        return 0.0
    grid = np.linspace(0.0, upper, _GRID + 1)
    k = None
    if h_many is not None:
        ok = np.append(np.asarray(h_many(grid[:-1])) <= budget, True)
        k = int(np.argmax(ok))
        if k < _GRID and not h(float(grid[k])) <= budget:
            k = None
    if k is None:
        ok = np.array([h(x) <= budget for x in grid[:-1]] + [True])
        k = int(np.argmax(ok))
    if k == 0:
        return 0.0
    return bisect_boundary(lambda x: h(x) <= budget, float(grid[k]), float(grid[k - 1]), steps=_BISECT)


def _side_logs_many(P: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``(log M, -log m)`` of one side for a batch of mechanisms ``rows[b]`` (nearest first).

    The scalar recursion of the side's patterns (docs/mathematics.md §4: "the ``k`` nearest
    are ⊥, record ``k+1`` shows ``v``", then "all ⊥"), vectorised over the batch.  Rounded
    differently from :func:`~redactopt.judge.leakage.side_extremes`, so it only proposes:
    :func:`_smallest_feasible` checks its pick exactly.
    """
    B, m = rows.shape[0], rows.shape[1]
    hi = np.full(B, -np.inf)
    lo = np.full(B, np.inf)
    f = np.broadcast_to(P, (B, 2, 2)).copy()
    live = np.ones(B, bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        for k in range(m):
            q = rows[:, k, :]
            for v in (0, 1):
                r = f[:, 0, v] / f[:, 1, v]
                use = live & (q[:, v] < 1.0) & ~np.isnan(r)
                hi = np.where(use, np.maximum(hi, r), hi)
                lo = np.where(use, np.minimum(lo, r), lo)
            live &= q.max(axis=1) > 0.0
            if not live.any():
                break
            if k == m - 1:  # every record of the side ⊥
                r = (f[:, 0, 0] * q[:, 0] + f[:, 0, 1] * q[:, 1]) / (f[:, 1, 0] * q[:, 0] + f[:, 1, 1] * q[:, 1])
                use = live & ~np.isnan(r)
                hi = np.where(use, np.maximum(hi, r), hi)
                lo = np.where(use, np.minimum(lo, r), lo)
                break
            g = (f * q[:, None, :]) @ P
            f = g / g.max(axis=(1, 2), keepdims=True)
        none = ~(hi > -np.inf)  # no pattern on this side: ratio 1
        hi[none] = lo[none] = 1.0
        return np.stack([np.log(hi), -np.log(lo)], axis=1)


class _Sides:
    r"""Exact leakage of the 3R structure with per-side probabilities, one side at a time.

    Given :math:`X_p` the two sides are independent, so the leakage (Definition 1) is
    :math:`\max_x(\ell_x+r_x)` over the largest log ratios :math:`\ell_x, r_x` of the sides
    favouring ``x`` (:func:`~redactopt.judge.leakage.side_extremes`).  Each side's pair is
    computed once per probability and reused while the other side moves, the same numbers
    as :func:`~redactopt.judge.leakage.leakage` on the whole array (same recursion, same
    sums), at half the work or less.  ``None`` for a side means "fully redacted".
    """

    def __init__(self, chain: MarkovChain, p: int, base: np.ndarray, med, lo: int) -> None:
        self.chain, self.p, self.base, self.med, self.lo = chain, p, base, med, lo
        self.memo: dict[tuple[int, float | None], tuple[float, float]] = {}

    def side(self, s: int, x: float | None) -> tuple[float, float]:
        key = (s, x)
        if key not in self.memo:
            p = self.p
            if x is None:
                rows = np.ones((p if s == 0 else self.base.shape[0] - p - 1, 2))
            else:
                pr = [1.0, 1.0]
                pr[s] = x
                q = _with_probs(self.base, self.med, self.lo, (pr[0], pr[1]))
                rows = q[:p][::-1] if s == 0 else q[p + 1:]
            ext = side_extremes(self.chain, rows)
            self.memo[key] = (math.log(ext.top[0]), -math.log(ext.bottom[0]))
        return self.memo[key]

    def joint(self, s: int, x: float | None, y: float | None) -> float:
        """Leakage with side ``s`` at ``x`` and the other side at ``y``."""
        a, b = self.side(s, x), self.side(1 - s, y)
        left, right = (a, b) if s == 0 else (b, a)
        return max(0.0, left[0] + right[0], left[1] + right[1])

    def joint_many(self, s: int, xs: np.ndarray, y: float | None) -> np.ndarray:
        """:meth:`joint` for many ``x`` at once, by :func:`_side_logs_many` (a proposal only)."""
        p, base = self.p, self.base
        rows = np.repeat((base[:p][::-1] if s == 0 else base[p + 1:])[None], len(xs), axis=0)
        idx = (p - 1 - self.med[s]) if s == 0 else (self.med[s] - p - 1)
        rows[:, idx, self.lo] = np.asarray(xs, dtype=float)[:, None]
        a = _side_logs_many(self.chain.transition_matrix, snap(rows))
        b = np.asarray(self.side(1 - s, y))
        return np.maximum(0.0, np.max(a + b, axis=1))


def _structure_of(chain: MarkovChain, n: int, p: int, labels: str):
    """3R's fixed part for region labels (``"P"``, ``"S"``, ``"M"``, ``"L"`` per record): the base
    array (``R_M``'s low value published), the ``R_M`` indices of each side and the low value."""
    lab = np.array(list(labels))
    q = np.zeros((n, 2))
    q[(lab == "L") | (lab == "P")] = 1.0
    lo = low_value(chain)
    t = np.arange(n)
    med = (np.flatnonzero((lab == "M") & (t < p)), np.flatnonzero((lab == "M") & (t > p)))
    for idx in med:
        q[idx, 1 - lo] = 1.0
    return q, med, lo


class _Structure:
    """One 3R structure (the regions a split gives), its exact sides and its grid table.

    ``grid`` holds each side's ``(log M, -log m)`` with its ``R_M`` low value redacted with
    probability ``GRID_P[i]`` (:func:`_side_logs_many`, a proposal-grade evaluation), from which
    :meth:`upper_bound` bounds — and :meth:`start` proposes — the most useful pair of probabilities.
    Records published with certainty nearer than a side's ``R_M`` are the nearest ``R_S`` records.
    """

    def __init__(self, chain: MarkovChain, n: int, p: int, eps: float, labels: str) -> None:
        self.chain, self.n, self.p, self.eps, self.labels = chain, n, p, eps, labels
        self.base, self.med, self.lo = _structure_of(chain, n, p, labels)
        self.shrunk = [0, 0]
        self.target = safe_budget(eps, n)
        self.sides = _Sides(chain, p, self.base, self.med, self.lo)
        self.pi_low = float(chain.stationary[self.lo])
        self.published = float(np.sum(~self.base.any(axis=1)))  # R_S records
        self.m = (self.med[0].size, self.med[1].size)

    def shrink(self) -> bool:
        """Floating ties only: while everything in R_M redacted leaks more than eps (it cannot in exact
        arithmetic, R_S being defined by the side budgets), redact the nearest R_S record of the side
        that leaks more.  Whether anything changed."""
        p = self.p
        for _ in range(self.n):
            if self.sides.joint(0, 1.0, 1.0) <= self.eps:
                self.published = float(np.sum(~self.base.any(axis=1)))
                return sum(self.shrunk) > 0
            a, b = self.sides.side(0, 1.0), self.sides.side(1, 1.0)
            s = 0 if max(a) >= max(b) else 1
            mask = (np.arange(self.n) < p) if s == 0 else (np.arange(self.n) > p)
            pub = np.flatnonzero(mask & ~self.base.any(axis=1))
            if not pub.size:
                s = 1 - s
                mask = (np.arange(self.n) < p) if s == 0 else (np.arange(self.n) > p)
                pub = np.flatnonzero(mask & ~self.base.any(axis=1))
            if not pub.size:  # everything but R_M redacted already: nothing left to shrink (eps below rounding)
                break
            self.base[pub[np.argmin(np.abs(pub - p))]] = 1.0
            self.shrunk[s] += 1
            self.sides = _Sides(self.chain, p, self.base, self.med, self.lo)
        self.published = float(np.sum(~self.base.any(axis=1)))
        return sum(self.shrunk) > 0

    def value(self, pl: np.ndarray | float, pr: np.ndarray | float) -> np.ndarray | float:
        """Expected published records with per-side probabilities ``pl``, ``pr``."""
        return self.published + self.pi_low * (self.m[0] * (1.0 - pl) + self.m[1] * (1.0 - pr))

    def table(self, grids: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        """Joint leakage on the grid: ``[i, j]`` with the left side at ``GRID_P[i]``, the right at ``GRID_P[j]``."""
        L, R = grids
        return np.maximum(0.0, np.maximum(L[:, None, 0] + R[None, :, 0], L[:, None, 1] + R[None, :, 1]))

    def upper_bound(self, grids: tuple[np.ndarray, np.ndarray]) -> float:
        """Above the value of every pair whose exact leakage is <= the target (monotone: a feasible pair
        rounded up to the grid is feasible, and the grid point below it is at least as useful)."""
        ok = self.table(grids) <= self.target + 1e-9 * max(self.eps, 1.0)
        below = GRID_P[np.maximum(np.arange(GRID_P.size) - 1, 0)]
        vals = self.value(below[:, None], below[None, :])
        return float(np.max(np.where(ok, vals, -np.inf)))

    def start(self, grids: tuple[np.ndarray, np.ndarray]) -> tuple[float, float]:
        """The most useful grid pair the batched table finds within the target (else (1, 1))."""
        ok = self.table(grids) <= self.target
        vals = np.where(ok, self.value(GRID_P[:, None], GRID_P[None, :]), -np.inf)
        i, j = np.unravel_index(int(np.argmax(vals)), vals.shape)
        return (float(GRID_P[i]), float(GRID_P[j])) if np.isfinite(vals[i, j]) else (1.0, 1.0)


#: Redaction probabilities of the grid on which each structure is bounded (:class:`_Structure`).
GRID_P = np.linspace(0.0, 1.0, _GRID + 1)


def _side_grids(structures: list[_Structure], s: int) -> list[np.ndarray]:
    """Side ``s`` of every structure on the grid (:data:`GRID_P`), each distinct side once, batched.

    A side is only needed up to its nearest record published with certainty (the cut): the rows
    after it are dropped, and sides are padded with published rows, which end every pattern.
    """
    keys, rows_of = {}, []
    for st in structures:
        p, base = st.p, st.base
        rows = base[:p][::-1] if s == 0 else base[p + 1:]
        idx = (p - 1 - st.med[0]) if s == 0 else (st.med[1] - p - 1)
        m = min(first_published(rows) + 1, rows.shape[0])
        key = (rows[:m].tobytes(), idx[idx < m].tobytes())
        if key not in keys:
            keys[key] = len(rows_of)
            rows_of.append((rows[:m], idx[idx < m], st.lo))
    width = max([r.shape[0] for r, _, _ in rows_of] + [0])
    out = []
    if width == 0:
        return [np.zeros((GRID_P.size, 2)) for _ in structures]
    per = max(1, (1 << 21) // (width * GRID_P.size))  # a few MB per batch
    P = structures[0].chain.transition_matrix
    for a in range(0, len(rows_of), per):
        chunk = rows_of[a:a + per]
        batch = np.zeros((len(chunk), GRID_P.size, width, 2))
        for k, (rows, idx, lo) in enumerate(chunk):
            batch[k, :, : rows.shape[0]] = rows  # an uncut side is the whole side: the longest
            batch[k][:, idx, lo] = GRID_P[:, None]
        logs = _side_logs_many(P, snap(batch.reshape(-1, width, 2)))
        out += list(logs.reshape(len(chunk), GRID_P.size, 2))
    order = []
    for st in structures:
        p, base = st.p, st.base
        rows = base[:p][::-1] if s == 0 else base[p + 1:]
        idx = (p - 1 - st.med[0]) if s == 0 else (st.med[1] - p - 1)
        m = min(first_published(rows) + 1, rows.shape[0])
        order.append(out[keys[(rows[:m].tobytes(), idx[idx < m].tobytes())]])
    return order


#: Bisection steps of the calibration inside one grid cell (1/32 wide): about 3e-8 in probability.
_REFINE = 20


def _lowest(h, cur: float, budget: float) -> float:
    """The smallest feasible value of one probability below ``cur`` (``h(cur) <= budget``): down the
    grid :data:`GRID_P` while it passes, then bisection inside the cell; keeps a feasible end."""
    k = int(np.searchsorted(GRID_P, cur, side="left"))  # GRID_P[k] >= cur
    good = cur
    while k > 0 and GRID_P[k - 1] < good and h(float(GRID_P[k - 1])) <= budget:
        k -= 1
        good = float(GRID_P[k])
    if k == 0 or good == 0.0:
        return good
    return bisect_boundary(lambda x: h(x) <= budget, good, float(GRID_P[k - 1]), steps=_REFINE)


def _calibrate_structure(st: _Structure, start: tuple[float, float]) -> tuple[np.ndarray, dict]:
    r"""The calibrated probabilities of one structure: from the grid's start, each side lowered in
    turn as far as the exact joint leakage allows, twice (:func:`_lowest`).  A function of the
    structure only (never of the split that produced it), so a tuned split is at least as good
    as every split.  The exact leakage need not be monotone in one coordinate; every step keeps
    a feasible end whatever its shape.
    """
    sides, target = st.sides, st.target
    probs = [1.0 if st.m[0] == 0 else start[0], 1.0 if st.m[1] == 0 else start[1]]
    if sides.joint(0, probs[0], probs[1]) > target:
        probs = [1.0, 1.0]
    if sides.joint(0, 1.0, 1.0) <= target:
        for _ in range(2):
            for s in (0, 1):
                if st.m[s] == 0 or probs[s] == 0.0:
                    continue

                def h(x: float, s: int = s) -> float:
                    pr = list(probs)
                    pr[s] = x
                    return sides.joint(0, pr[0], pr[1])

                probs[s] = _lowest(h, probs[s], target)
    q = _with_probs(st.base, st.med, st.lo, (probs[0], probs[1]))
    info = {"p_left": float(probs[0]), "p_right": float(probs[1]), "regions": st.labels, "low_value": int(st.lo),
            "shrunk_left": st.shrunk[0], "shrunk_right": st.shrunk[1]}
    return q, info


def _structures(chain: MarkovChain, n: int, p: int, eps: float, splits: np.ndarray) -> dict[str, float]:
    """The distinct 3R structures (region labels) of the splits, each with the first split giving it.

    The labels of :func:`~redactopt.model.influence.regions` for every split at once: the same
    influences (computed per distance) and the same comparisons, ``eps - eps_left`` on the right.
    """
    splits = np.clip(np.asarray(splits, dtype=float), 0.0, eps)
    code = np.full((splits.size, n), ord("P"), dtype=np.uint8)
    for side, (dist, budget) in enumerate(((np.arange(p, 0, -1), splits), (np.arange(1, n - p), eps - splits))):
        if not dist.size:
            continue
        i0, i1 = pointwise_influence(chain, dist, 0), pointwise_influence(chain, dist, 1)
        lo, hi = np.minimum(i0, i1)[None, :], np.maximum(i0, i1)[None, :]
        b = budget[:, None]
        lab = np.where(hi <= b, ord("S"), np.where(lo <= b, ord("M"), ord("L"))).astype(np.uint8)
        if side == 0:
            code[:, :p] = lab
        else:
            code[:, p + 1:] = lab
    _, first = np.unique(code, axis=0, return_index=True)
    return {code[i].tobytes().decode("ascii"): float(splits[i]) for i in sorted(first)}


def _calibrate(chain: MarkovChain, n: int, p: int, eps: float, eps_left: float | None) -> list[tuple[float, np.ndarray, dict]]:
    """Calibrated 3R for one split, or (``None``) for every split: the most useful structure first.

    Every structure a split in ``[0, eps]`` can give (the candidates of :func:`_split_candidates`
    and the floats next to them) is bounded on the grid (:meth:`_Structure.upper_bound`); they
    are calibrated by that bound, most promising first, until the bound of the next cannot beat
    the best found: a skipped structure could not have won.
    """
    if eps_left is not None:
        found = _structures(chain, n, p, eps, np.array([eps_left]))
    else:
        e, _, _ = _split_candidates(chain, n, eps, p)
        e = np.unique(np.concatenate([e] + [np.nextafter(e, d) for d in (-np.inf, np.inf)]))
        found = _structures(chain, n, p, eps, e[(e >= 0.0) & (e <= eps)])
    sts = [_Structure(chain, n, p, eps, lab) for lab in found]
    left, right = _side_grids(sts, 0), _side_grids(sts, 1)
    for k, st in enumerate(sts):  # (1, 1) within rounding of eps: decided exactly, shrunk if it must be
        if st.table((left[k][-1:], right[k][-1:]))[0, 0] > eps * (1.0 - 1e-7) and st.shrink():
            left[k], right[k] = _side_grids([st], 0)[0], _side_grids([st], 1)[0]
    bounds = [st.upper_bound((left[k], right[k])) for k, st in enumerate(sts)]
    starts = [st.start((left[k], right[k])) for k, st in enumerate(sts)]
    incumbent = max(range(len(sts)), key=lambda k: sts[k].value(*starts[k]))  # calibrated first
    done = []
    for k in [incumbent] + sorted((k for k in range(len(sts)) if k != incumbent), key=lambda k: -bounds[k]):
        if done and bounds[k] * (1.0 + 1e-12) < max(u for u, _, _ in done) * n:
            break
        q, info = _calibrate_structure(sts[k], starts[k])
        el = found[sts[k].labels]
        info.update(eps_left=el, eps_right=eps - el, split="given" if eps_left is not None else "auto",
                    structures=len(sts))
        done.append((utility(chain, q), q, info))
    for d in done:
        d[2]["structures_calibrated"] = len(done)
    done.sort(key=lambda d: -d[0])
    return done


def calibrated_three_region(
    chain: MarkovChain,
    n: int,
    *,
    eps: float,
    p: int = 0,
    eps_left: float | None = None,
    time_limit: float = 60.0,
    verbose: bool = False,
    rng: object = None,
) -> Candidate:
    r"""3R with the low value's redaction probability in :math:`R_M` calibrated to exact leakage.

    Keeps the structure of the 3R mechanism (Section IV, Eqs. 1–2): regions from the
    split, :math:`R_L` and the high-influence value in :math:`R_M` always redacted,
    :math:`R_S` published.  Instead of :math:`p_t=e^{-\epsilon_s/|R_M^{(s)}|}`, whose
    privacy argument (Eq. 20) is incomplete, one common :math:`p_s` per side is chosen
    so that the exact leakage (Definition 1, :func:`redactopt.judge.leakage.leakage`) is at
    most :math:`\epsilon`, as useful as the search finds (see the notes).

    Parameters
    ----------
    chain : MarkovChain
    n : int
        Number of records.
    eps : float
        Total budget.
    p : int
        0-based index of the private record.
    eps_left : float, optional
        Use this split.  By default (``--split auto``) every split is searched: each of the
        finitely many structures the splits of ``[0, eps]`` give is bounded, and calibrated
        while its bound can beat the best found, so the result is at least as useful as the
        calibration of every split.
    time_limit, verbose, rng
        The common solver signature (:mod:`redactopt.solvers.base`); calibration draws
        nothing at random.

    Returns
    -------
    Candidate
        ``solver="3r-calibrated"``, ``status="heuristic"``, no bound (the judge certifies
        with Lemma 2's).  ``info`` holds a split giving the structure (``eps_left``,
        ``eps_right``), the per-side probabilities, the regions, and how many structures
        were found and calibrated; the next most useful structure is a fallback.

    Notes
    -----
    A split enters only through the regions it gives (the structure): the probabilities are
    a function of the structure alone (:func:`_calibrate_structure`), so two splits with the
    same regions give the same mechanism, and the best structure beats every split.  For a
    structure, the grid of :data:`GRID_P` probabilities per side (33 points, batched over all
    structures) proposes the most useful pair within the budget and bounds every pair
    (leakage is non-increasing in each probability: post-processing); then each side is
    lowered in turn by a grid refined by bisection, with the exact leakage, not assumed
    monotone in :math:`p_s`.  Redacting all of :math:`R_M` is always private: the nearest
    published records are then the nearest :math:`R_S` records, whose max-influences are at
    most the side budgets.
    """
    n, eps, p = check_problem(chain, n, eps, p)
    if eps_left is not None:
        eps_left = check_real(eps_left, "eps_left")
        if not 0.0 <= eps_left <= eps:
            raise ValueError(f"eps_left must lie in [0, eps] = [0, {eps}], got {eps_left!r}")
    proposals = _calibrate(chain, n, p, eps, eps_left)[:2]
    return Candidate(redact_prob=proposals[0][1], solver="3r-calibrated", status="heuristic",
                     fallbacks=tuple(q for _, q, _ in proposals[1:]), info=proposals[0][2],
                     fallback_info=tuple(i for _, _, i in proposals[1:]))


# ---------------------------------------------------------------------------
# the exact frontier split
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class FrontierSplit:
    r"""The best split of a budget between the two sides of the private record, and what it gives.

    Attributes
    ----------
    design : DesignResult
        The optimum (verified exactly; its certificate bounds every eps-private mechanism).
    left, right : (float, float)
        Each side's budgets ``(a, b)``: its largest log-ratio in favour of :math:`X_p=0`
        and in favour of :math:`X_p=1` (the design spends slightly less, so that rounding
        never decides it).  ``left[0] + right[0] <= eps`` and ``left[1] + right[1] <= eps``.
    diagonal : DesignResult
        The best design of the paper's family :math:`\epsilon_\ell+\epsilon_r=\epsilon`,
        one symmetric budget per side (:math:`a=b`); ``diagonal.class_certificate`` bounds
        that family.
    diagonal_eps_left : float
        Its left budget :math:`\epsilon_\ell`.
    """

    design: DesignResult
    left: tuple[float, float]
    right: tuple[float, float]
    diagonal: DesignResult
    diagonal_eps_left: float


def frontier_split(chain: MarkovChain, n: int, *, eps: float, p: int = 0, time_limit: float = 60.0,
                   target_gap: float = 1e-4) -> FrontierSplit:
    r"""The exact frontier call: the best split :math:`(a, b)` of ``eps`` and each side's design.

    .. math:: \mathrm{OPT}(\epsilon)=\max_{a,b} F_\ell(a,b)+F_r(\epsilon-a,\epsilon-b)

    over asymmetric side budgets (:mod:`redactopt.solvers.frontier`), and the best split of
    the paper's diagonal family :math:`a=b` beside it, both verified exactly and certified
    (the diagonal over its family).  ``p`` is 0-based.
    """
    n, eps, p = check_problem(chain, n, eps, p)
    fa = frontier_analysis(chain, n, eps=eps, p=p, time_limit=time_limit, target_gap=target_gap)
    bound = min(lemma2_upper_bound(chain, n, eps=eps, private=[p]), fa.upper_bound)
    results, winners = [], []
    for label, props, cls in (("frontier", (fa.redact_prob, fa.edge), None),
                              ("frontier-diagonal", (fa.diagonal_redact_prob,),
                               (fa.diagonal_upper_bound, "frontier-dp", "symmetric side budgets"))):
        cand = Candidate(props[0], label, "optimal", fallbacks=tuple(props[1:]))
        q, _, how, why = judge_candidate(chain, cand, eps=eps, p=p)
        if q is None:
            raise PrivacyCheckError(f"{label}: no proposal passed the exact check: " + "; ".join(why))
        winners.append(how["proposal"])
        results.append(finalize(chain, q, private=[p], eps=eps, method=label, upper_bound=bound,
                                solver="frontier-dp" if bound == fa.upper_bound else "lemma2",
                                info=dict(how, grid=fa.grid, windows=list(fa.windows)), tol=0.0,
                                class_bound=cls))
    left, right = (fa.left, fa.right) if winners[0] == 0 else fa.edge_split
    return FrontierSplit(results[0], left, right, results[1], fa.diagonal_eps_left)
