r"""The side frontier on a chain whose steps vary (issue 33): a certified bound and a design, two states.

The one-record problem of :mod:`redactopt.solvers.frontier` with each side read through its own steps
:math:`S_1, S_2, \dots` (:meth:`~redactopt.model.varying.VaryingChain.side_steps`; every entry
positive).  Notation: :math:`\varphi_S(r)=(S_{00}r+S_{01})/(S_{10}r+S_{11})` is the ratio of
:math:`Sc` when ``c`` has ratio ``r``, the *hull* of step ``d`` is
:math:`\varphi_{S_d}([0,\infty])=[\mathrm{lo}_d,\mathrm{hi}_d]\ni 1` (its ends are the columns'
ratios :math:`R_d(v)=S_d[0,v]/S_d[1,v]`), and a side whose log-ratios must lie in :math:`[-b, a]`
starts from the requirement interval :math:`I_0=[e^{-b},e^{a}]`, with
:math:`I_d=\varphi_{S_d}^{-1}(I_{d-1})/\rho_d`, :math:`\rho_d=q_d[0]/q_d[1]`.  Publishing ``v`` at
record ``d`` is allowed iff :math:`R_d(v)\in I_{d-1}`; the all-⊥ pattern needs :math:`1\in I_m`
(docs/mathematics.md §13, "The side frontier under varying steps").

**Phases.**  While both hull ends lie outside :math:`I`, nothing can be published: ``q = (1, 1)`` and
both ends drift by :math:`\psi_d=\log\circ\varphi_{S_d}^{-1}\circ\exp`.  When one end lies in
:math:`I` its value may be published; afterwards :math:`I` is unbounded on that side (the end's
preimage is 0 or ∞) and feasibility keeps it so: the state is the *mode* (pinned above or below)
and the free end alone.  In the *room* coordinate ``r`` (the free end's distance in log-ratio from
1, ``r >= 0`` required) a record either cuts (``r >= c_d``, the distance to the other hull end:
everything from it on is published) or publishes its pinned value with probability ``1 - s``
(gain :math:`\pi_d(v)(1-s)`) and moves the room to :math:`r'=D_d(r)+\log s`, :math:`D_d` the drift
of the free end (the mode flips on a step with negative determinant).  So

.. math:: V_d(r)=\max_{0<s\le 1}\ \pi_d(v)(1-s)+V_{d+1}(D_d(r)+\log s),\qquad V_d(r)=m-d+1\ \text{if}\ r\ge c_d,

with ``V = -inf`` below zero room and :math:`V_{W+1}=m-W` after a window of ``W`` records (every
mechanism's first ``W`` records are feasible for the ``W``-record problem and each further record
adds at most 1).

**Certified bound.**  :math:`V` is non-decreasing in the room.  The tables are computed on a grid
of rooms per mode; a next room between grid points is rounded *up* (more room), and the gain of a
cell is its supremum (at the cell's lower end), so each table is an upper bound on :math:`V`
(:func:`redactopt.solvers.frontier.dc_max` computes every row's maximum, the objective having
increasing differences).  The drift is evaluated to a few ulps (``expm1``/``log1p``) and rounded
outward by a relative :data:`REL`.  A side's bound :math:`F_s(a,b)` walks phase one from
:math:`[-b,a]` (ends rounded outward) and reads the table where it pins; the two-sided bound is a
branch and bound over boxes of :math:`(a,b)\in[0,\epsilon]^2`, each bounded by
:math:`F_\ell(a_1,b_1)+F_r(\epsilon-a_0,\epsilon-b_0)` (both sides monotone).  The design follows the
tables' policy on exact states; :func:`redactopt.engine.varying.design_varying` judges it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from redactopt.solvers.frontier import dc_max

__all__ = ["SideProblem", "side_problem", "StepTables", "step_tables", "side_bound_at", "side_policy_at",
           "two_sided", "REL"]

#: Outward rounding of drifted states (relative), as in :mod:`redactopt.solvers.frontier`.
REL = 1e-10

_NEG = -1e300  # an infeasible value (kept finite: dc_max subtracts)


@dataclass(frozen=True)
class SideProblem:
    """One side of a private record: its ``W`` steps nearest first, the marginals of its records, and ``m``
    (its whole length: records beyond the window count 1 each in the bound)."""

    steps: np.ndarray  # (W, 2, 2)
    laws: np.ndarray  # (W, 2)
    m: int

    @property
    def W(self) -> int:
        return int(self.steps.shape[0])

    @property
    def det(self) -> np.ndarray:
        return self.steps[:, 1, 1] - self.steps[:, 0, 1]

    @property
    def log_lo(self) -> np.ndarray:
        """Log of the hull's lower end of every step (< 0)."""
        S = self.steps
        r0, r1 = np.log(S[:, 0, 0] / S[:, 1, 0]), np.log(S[:, 0, 1] / S[:, 1, 1])
        return np.minimum(r0, r1)

    @property
    def log_hi(self) -> np.ndarray:
        S = self.steps
        r0, r1 = np.log(S[:, 0, 0] / S[:, 1, 0]), np.log(S[:, 0, 1] / S[:, 1, 1])
        return np.maximum(r0, r1)


def side_problem(steps: np.ndarray, laws: np.ndarray, m: int) -> SideProblem:
    """A :class:`SideProblem` (``steps`` ``(W, 2, 2)`` with every entry positive, ``laws`` ``(W, 2)``)."""
    steps = np.asarray(steps, dtype=float)
    if steps.ndim != 3 or steps.shape[1:] != (2, 2) or not np.all(steps > 0.0):
        raise ValueError("a side's steps must be (W, 2, 2) with every entry positive (two states)")
    return SideProblem(steps, np.asarray(laws, dtype=float), int(m))


def _psi(S: np.ndarray, f: np.ndarray) -> np.ndarray:
    r""":math:`\log\varphi_S^{-1}(e^f)` for one step, accurately: with ``e = expm1(f)`` and
    :math:`\det=S_{11}-S_{01}`, :math:`\varphi^{-1}(e^f)=(\det+S_{11}e)/(\det-S_{10}e)`; ``nan`` outside the hull."""
    det = S[1, 1] - S[0, 1]
    e = np.expm1(f)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log1p(e * (S[1, 1] + S[1, 0]) / (det - S[1, 0] * e))


def _drift(S: np.ndarray, mode: int, r: np.ndarray, outward: int) -> np.ndarray:
    """The free end's room after step ``S`` (before publishing), from room ``r`` in ``mode`` (0: pinned above,
    the free end is the lower one at ``-r``; 1: pinned below, at ``+r``), rounded by ``outward`` (+1 up, -1 down)."""
    f = -r if mode == 0 else r
    g = _psi(S, f)
    lazy = S[1, 1] > S[0, 1]
    nxt = -g if (mode == 0) == lazy else g  # the mode flips on a step with negative determinant
    return nxt * (1.0 + outward * REL * np.sign(nxt)) + outward * 1e-300


def _next_mode(S: np.ndarray, mode: int) -> int:
    return mode if S[1, 1] > S[0, 1] else 1 - mode


def _pinned_value(S: np.ndarray, mode: int) -> int:
    """The value a pinned side may publish: the hull end on the pinned side (above: hi; below: lo)."""
    lazy = S[1, 1] > S[0, 1]  # R(0) > R(1): hi is value 0's
    return (0 if lazy else 1) if mode == 0 else (1 if lazy else 0)


@dataclass(frozen=True)
class StepTables:
    """Upper-bound tables ``V[d, mode, i]`` on the room grids ``grid[mode]`` (``d = 0..W``; row ``W`` terminal),
    and the cut thresholds ``cut[d, mode]``."""

    side: SideProblem
    grid: tuple[np.ndarray, np.ndarray]
    V: np.ndarray
    cut: np.ndarray


def _cut_rooms(side: SideProblem) -> np.ndarray:
    """``c[d, mode]``: the room at which record ``d + 1`` can publish both values (mode 0 above: ``-log lo``)."""
    return np.stack([-side.log_lo, side.log_hi], axis=1)


def step_tables(side: SideProblem, G: int) -> StepTables:
    """The tables of the module docstring on grids of ``G`` rooms per mode (upper bounds)."""
    W, m = side.W, side.m
    cut = _cut_rooms(side)
    grids = tuple(np.linspace(0.0, float(cut[:, md].max()) * (1 + 1e-9), G) for md in (0, 1))
    V = np.full((W + 1, 2, G), float(m - W))  # terminal: every feasible room (r >= 0) counts the rest
    for d in range(W - 1, -1, -1):
        S = side.steps[d]
        for md in (0, 1):
            r = grids[md]
            nm = _next_mode(S, md)
            gn = grids[nm]
            D = _drift(S, md, r, +1)
            X = np.concatenate(([gn[0]], gn))  # cell lower ends (cell 0 is the point 0 itself)
            Wv = np.concatenate((V[d + 1, nm], [float(m - d - 1)]))  # above the grid: a cut at the next record
            ok = np.isfinite(D)
            J = np.searchsorted(X, np.where(ok, D, -np.inf), side="right") - 1
            rows = np.flatnonzero(J >= 0)
            out = np.full(G, _NEG)
            if rows.size:
                g = float(side.laws[d, _pinned_value(S, md)])
                best, _ = dc_max(D[rows], J[rows], X, Wv, g)
                out[rows] = best
            out[r >= cut[d, md]] = float(m - d)  # both values publishable: a cut
            V[d, md] = out
    return StepTables(side, grids, V, cut)


def _lookup(tab: StepTables, d: int, mode: int, r: np.ndarray, up: bool = True) -> np.ndarray:
    """``V`` at room ``r`` rounded up to the grid (``up``: an upper bound) or down (a guide to what a design
    reaches: less room); ``-inf``-like below zero room."""
    g = tab.grid[mode]
    if up:
        i = np.searchsorted(g, r, side="left")
        out = np.where(i < g.size, tab.V[d, mode][np.minimum(i, g.size - 1)], float(tab.side.m - d))
    else:
        i = np.searchsorted(g, r, side="right") - 1
        out = np.where(r >= tab.cut[d, mode], float(tab.side.m - d), tab.V[d, mode][np.maximum(i, 0)])
    return np.where(r < 0, _NEG, out)


def side_bound_at(tab: StepTables, a: np.ndarray, b: np.ndarray, up: bool = True) -> np.ndarray:
    """Upper bounds on :math:`F(a, b)` (records published on the side) for arrays of budgets (phase one walked
    with its ends rounded outward, then the tables); ``up=False``: the tables read with less room, a guide
    to the split a design should take (not a bound)."""
    side = tab.side
    a, b = np.array(a, dtype=float), np.array(b, dtype=float)
    out = np.full(a.shape, float(side.m - side.W))  # never pinned within the window: all ⊥, then the rest
    live = np.ones(a.shape, dtype=bool)
    lo, hi = side.log_lo, side.log_hi
    for d in range(side.W):
        if not live.any():
            break
        S = side.steps[d]
        both = live & (lo[d] >= -b) & (hi[d] <= a)
        out[both] = side.m - d
        pin_up = live & ~both & (hi[d] <= a)  # the upper end publishable: pinned above, room b
        down = live & ~both & ~pin_up & (lo[d] >= -b)
        out[pin_up] = _lookup(tab, d, 0, b[pin_up], up)
        out[down] = _lookup(tab, d, 1, a[down], up)
        live &= ~(both | pin_up | down)
        if live.any():
            a[live], b[live] = _phase_one(S, a[live], b[live], outward=up)
    return out


def _phase_one(S: np.ndarray, a: np.ndarray, b: np.ndarray, *, outward: bool) -> tuple[np.ndarray, np.ndarray]:
    r"""Both ends of :math:`I=[e^{-b},e^{a}]` through a step that publishes nothing: :math:`arphi_S^{-1}(I)`.

    Increasing :math:`arphi` (positive determinant) maps the ends to themselves, a decreasing one swaps
    them; ``outward`` widens both (an upper bound's walk)."""
    pa, pb = _psi(S, a), _psi(S, -b)
    na, nb = (pa, -pb) if S[1, 1] > S[0, 1] else (pb, -pa)
    if outward:
        na, nb = na * (1 + REL) + 1e-300, nb * (1 + REL) + 1e-300
    return na, nb


def side_policy_at(tab: StepTables, a: float, b: float) -> np.ndarray:
    """The side's mechanism ``(W, 2)`` following the tables from budgets ``(a, b)`` on exact states.

    Phase one redacts; at the pin and after it, each record publishes its pinned value with the
    probability the tables' best cell gives (landing on that cell's grid room), until a cut (every
    later record published) or the window's end (every later record redacted).
    """
    side = tab.side
    q = np.ones((side.W, 2))
    lo, hi = side.log_lo, side.log_hi
    mode, r, d = None, 0.0, 0
    while d < side.W and mode is None:
        S = side.steps[d]
        if lo[d] >= -b and hi[d] <= a:
            q[d:] = 0.0
            return q
        if hi[d] <= a:
            mode, r = 0, b
            break
        if lo[d] >= -b:
            mode, r = 1, a
            break
        na, nb = _phase_one(S, np.array(a), np.array(b), outward=False)
        a, b = float(na), float(nb)
        d += 1
    while mode is not None and d < side.W:
        S = side.steps[d]
        if r >= tab.cut[d, mode]:
            q[d:] = 0.0
            return q
        nm = _next_mode(S, mode)
        D = float(_drift(S, mode, np.array(r), 0))
        gn = tab.grid[nm]
        cand = gn[gn <= D]
        g = float(side.laws[d, _pinned_value(S, mode)])
        vals = g * -np.expm1(cand - D) + tab.V[d + 1, nm][: cand.size]
        j = int(np.argmax(vals)) if cand.size else -1
        if j < 0 or vals[j] <= _NEG / 2:
            return q  # no feasible room left: everything further redacted
        s = math.exp(float(cand[j]) - D)
        v = _pinned_value(S, mode)
        q[d, v] = min(1.0, s)
        mode, r, d = nm, float(cand[j]), d + 1
    return q


@dataclass(frozen=True)
class TwoSided:
    """The two-sided bound and the best split found: ``bound`` (records published, both sides), ``split``
    ``(a, b)`` of the left side (the right side gets ``eps - a``, ``eps - b``), ``boxes`` examined."""

    bound: float
    split: tuple[float, float]
    value: float
    boxes: int
    stopped: bool


def two_sided(left: StepTables, right: StepTables, eps: float, *, tol: float, time_limit: float,
              grid: int = 16, max_boxes: int = 1 << 15) -> TwoSided:
    """Branch and bound over boxes of left budgets ``(a, b)`` (module docstring); ``tol`` in records.

    Stops — with the bound of every box left, a valid bound, and ``stopped`` — when the time is up or more
    than ``max_boxes`` boxes remain open."""
    t0 = time.monotonic()

    def est(a: np.ndarray, b: np.ndarray) -> np.ndarray:  # the tables read with less room: a guide, not a proof
        return side_bound_at(left, a, b, up=False) + side_bound_at(right, eps - a, eps - b, up=False)

    edges = np.linspace(0.0, eps, grid + 1)
    boxes = np.array([(edges[i], edges[i + 1], edges[j], edges[j + 1]) for i in range(grid) for j in range(grid)])
    best_val, best_split = -math.inf, (eps / 2, eps / 2)
    seen, settled = 0, -math.inf  # settled: the largest bound of a box given up (every point lies in some box)
    while boxes.size:
        seen += len(boxes)
        ub = side_bound_at(left, boxes[:, 1], boxes[:, 3]) + side_bound_at(right, eps - boxes[:, 0], eps - boxes[:, 2])
        # candidates: every corner and the centre (a box across a jump of one side's value has a corner on
        # the high side, so its guide is as high as its bound and the box is settled, not split forever)
        ca = np.concatenate([boxes[:, 0], boxes[:, 1], boxes[:, 0], boxes[:, 1], (boxes[:, 0] + boxes[:, 1]) / 2])
        cb = np.concatenate([boxes[:, 2], boxes[:, 2], boxes[:, 3], boxes[:, 3], (boxes[:, 2] + boxes[:, 3]) / 2])
        val = est(ca, cb)
        k = int(np.argmax(val))
        if val[k] > best_val:
            best_val, best_split = float(val[k]), (float(ca[k]), float(cb[k]))
            # the tables' own resolution at the best point (bound read with more room, guide with less):
            # boxes are not split below it, which would only chase the grid's rounding
            at = float(side_bound_at(left, ca[k:k + 1], cb[k:k + 1])[0]
                       + side_bound_at(right, eps - ca[k:k + 1], eps - cb[k:k + 1])[0])
            tol = max(tol, 2.0 * (at - best_val))
        keep = (ub > best_val + tol) & (boxes[:, 1] - boxes[:, 0] > 1e-12 * max(1.0, eps))
        settled = max(settled, float(ub[~keep].max()) if (~keep).any() else -math.inf)
        if (time.monotonic() - t0 > time_limit or keep.sum() > max_boxes) and keep.any():
            return TwoSided(max(settled, float(ub[keep].max())), best_split, best_val, seen, True)
        B = boxes[keep]
        am, bm = (B[:, 0] + B[:, 1]) / 2, (B[:, 2] + B[:, 3]) / 2
        boxes = np.concatenate([np.stack(c, axis=1) for c in (
            (B[:, 0], am, B[:, 2], bm), (am, B[:, 1], B[:, 2], bm), (B[:, 0], am, bm, B[:, 3]), (am, B[:, 1], bm, B[:, 3]))])
    return TwoSided(settled, best_split, best_val, seen, False)
