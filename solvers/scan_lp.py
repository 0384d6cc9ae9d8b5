r"""The optimal scan mechanism for any n and k, one- and two-sided, with a certified bound.

**One side is a linear program** (docs/beyond_local.md, §3).  For every start row ``c`` (the side's
first record; for a holder scan the private value) the stopping rule's *occupation measure*
:math:`\mu^c_d(v)=\Pr(\text{stop at }d,\ Z_d=v\mid c)`, :math:`\nu^c_d(v)=\Pr(\text{no stop before }d,\ Z_d=v\mid c)`
satisfies the flow equations

.. math:: \nu^c_1=\sigma_c,\qquad 0\le\mu^c_d\le\nu^c_d,\qquad \nu^c_{d+1}=(\nu^c_d-\mu^c_d)Q,\qquad
          \rho^c=\mathbf 1^\top(\nu^c_W-\mu^c_W),

and every solution is the law of the Markov stopping rule :math:`S_d(c,v)=\mu^c_d(v)/\nu^c_d(v)`
(Proposition 3 of the notes).  The likelihood of "first release at ``d`` on ``v``" under
:math:`X_p=x` is :math:`\sum_cT(x,c)\mu^c_d(v)` (``T = Q``; holder: ``T = I``), so the side's privacy
constraints for a pair with budget :math:`E=e^a` are linear:
:math:`\sum_c(T(x,c)-E\,T(x',c))\mu^c_d(v)\le0`, and the same for :math:`\rho`.  The objective is
the expected number published, :math:`\sum_c\pi_c[\sum_{d,v}(m-d+1)\mu^c_d(v)+\kappa\rho^c]`.

**Long sides** are truncated at ``W`` distances.  ``relax``: :math:`\rho` is "not stopped by ``W``",
a union of events, so its ratio obeys the budget (a mediant) and it is worth at most ``m - W``: a
relaxation, its bound is valid for ``m`` records.  ``force``: stop for sure at ``W`` -- a scan of
``m`` records, feasible.  ``exact``: ``W = m``.

**Two sides.**  Given :math:`X_p` the sides are independent, so the leakage is
:math:`\max_{x\ne x'}[A_\ell(x,x')+A_r(x,x')]` and the optimum is
:math:`\max_a F_\ell(a)+F_r(\epsilon-a)` over one budget per ordered pair.  Each :math:`F_s` is
non-decreasing, so a box :math:`[a^-,a^+]` of splits is bounded by
:math:`F_\ell^{UB}(a^+)+F_r^{UB}(\epsilon-a^-)` (branch and bound; boxes are cut at the budgets where a
side's first record becomes publishable, :math:`\log T(x,c)/T(x',c)`, where :math:`F_s` jumps).
On a binary chain with :math:`P(0,1)=P(1,0)` swapping the states maps scans to scans with the same
utility and the pair budgets swapped, so :math:`F_s(u,v)=F_s(v,u)` and only splits with :math:`u\le v` are
searched, in rotated coordinates :math:`s=(u+v)/2`, :math:`d=(v-u)/2\ge0` (:class:`_RotatedBoxes`): a side's
basis changes along lines parallel to the diagonal there, which axis-parallel boxes of ``(u, v)`` cut
only by ever smaller squares.
Every bound is a verified dual point (:mod:`redactopt.solvers.lp_certificate`).  This module only
proposes: :func:`propose_scan` returns the mechanism and the bound, and
:func:`redactopt.engine.class_judge.design_scan` judges it exactly and certifies it.
"""

from __future__ import annotations

import contextlib
import contextvars
import heapq
import itertools
import math
import time
import weakref
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import scipy.sparse as sp

from redactopt import _progress
from redactopt.judge.scan import exp_enclosure, ratio_within, side_within
from redactopt.model.chain import Chain as KChain
from redactopt.model.mechanism_classes import ScanMechanism, as_kchain, occupation, side_chain, side_chain_exact
from redactopt.solvers.lp_certificate import LinearProgram, LPSolution, dual_parts, solve_lp
from redactopt.solvers.split_bound import DualData, interpolated_bound

__all__ = ["SideSpec", "side_program", "ScanProposal", "propose_scan", "side_optimum", "pairs_of"]


#: The time by which every linear program of the current scan design must end (``time.monotonic()``);
#: nested phases only shorten it (:func:`_until`).
_DEADLINE: contextvars.ContextVar[float] = contextvars.ContextVar("scan_lp_deadline", default=math.inf)


@contextlib.contextmanager
def _until(deadline: float) -> Any:
    """Every LP solved inside ends by ``deadline`` (or the enclosing one, whichever is first)."""
    token = _DEADLINE.set(min(_DEADLINE.get(), deadline))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _solve_lp(lp: LinearProgram, **kw: Any) -> LPSolution:
    """:func:`~redactopt.solvers.lp_certificate.solve_lp` within the current deadline: HiGHS gets the time
    left; past the deadline it is not started.  Either way out of time is a ``RuntimeError``, which every
    caller already takes as "no optimum here" (a valid, looser bound; a design without this candidate)."""
    d = _DEADLINE.get()
    if math.isfinite(d):
        left = d - time.monotonic()
        if left <= 0.0:
            raise RuntimeError("time limit: the linear program was not started")
        kw["time_limit"] = left if kw.get("time_limit") is None else min(left, kw["time_limit"])
    return solve_lp(lp, **kw)

U = 2.0**-53
#: Stop probabilities within this of 0 or 1 are snapped before the design is judged.
SNAP = 1e-9
#: Grid cells per dimension of the interpolated bound with one and with two free dimensions (the bound
#: peaks at a grid point, plus a remainder falling like the cell width squared).
GRID1, GRID2 = 16, 4
#: Budget margins (nats) a design LP is solved below the budget, tried in turn until one verifies.
MARGINS = (1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3)
#: Designs solve with budget ratios at most e^27.6 (about 1e12): HiGHS refuses entries above 1e15.
LOG_DESIGN_E_MAX = 27.631021115928547


def pairs_of(k: int) -> list[tuple[int, int]]:
    """The ordered pairs ``(x, x')``, ``x != x'``, in a fixed order (one budget each)."""
    return [(x, y) for x in range(k) for y in range(k) if x != y]


@dataclass(frozen=True, eq=False)
class SideSpec:
    r"""One side of the private record: its matrix ``Q`` (read outward), mixing ``T``, starts ``sigma``, weights."""

    chain: KChain
    side: str
    m: int
    holder: bool
    Q: np.ndarray = field(init=False)
    T: np.ndarray = field(init=False)
    sigma: np.ndarray = field(init=False)
    w: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        Q = side_chain(self.chain, self.side)
        object.__setattr__(self, "Q", Q)
        object.__setattr__(self, "T", np.eye(Q.shape[0]) if self.holder else Q)
        object.__setattr__(self, "sigma", Q.copy() if self.holder else np.eye(Q.shape[0]))
        object.__setattr__(self, "w", np.array([float(v) for v in self.chain.exact_stationary()]))

    def hull(self, x: int, y: int) -> float:
        r"""An upper bound on :math:`\max_c\log T(x,c)/T(x',c)`: from this budget on, the pair's constraints are vacuous."""
        num, den = self.T[x], self.T[y]
        if np.any((num > 0) & (den == 0)):
            return math.inf
        r = max(float(num[c] / den[c]) for c in range(len(num)) if den[c] > 0)
        return math.log(r) * (1 + 1e-12) + 1e-12 if r > 0 else 0.0

    def thresholds(self, x: int, y: int) -> list[float]:
        r"""The budgets :math:`\log T(x,c)/T(x',c)` at which a first-record event of value ``c`` becomes admissible."""
        out = []
        for c in range(self.Q.shape[0]):
            if self.T[x, c] > 0 and self.T[y, c] > 0:
                out.append(math.log(self.T[x, c] / self.T[y, c]))
        return [t for t in out if t > 0]


def _coo(rows: list, cols: list, vals: list, errs: list, shape: tuple) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    r = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    c = np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64)
    v = np.concatenate(vals) if vals else np.zeros(0)
    e = np.concatenate(errs) if errs else np.zeros(0)
    keep = v != 0.0
    A = sp.csr_matrix((v[keep], (r[keep], c[keep])), shape=shape)
    D = sp.csr_matrix((e[keep], (r[keep], c[keep])), shape=shape)
    return A, D


def _flow_rows(spec: SideSpec, W: int, imu: np.ndarray, inu: np.ndarray, irho: np.ndarray) -> tuple:
    """Equality rows of the flow equations (module docstring) as COO pieces, with the data's error bounds."""
    k, Q = spec.Q.shape[0], spec.Q
    rows, cols, vals, errs = [], [], [], []
    r0 = np.arange(k * k)
    rows.append(r0), cols.append(inu[:, 0, :].ravel()), vals.append(np.ones(k * k)), errs.append(np.zeros(k * k))
    b = [spec.sigma.ravel()]
    db = [np.abs(spec.sigma.ravel()) * U if spec.holder else np.zeros(k * k)]
    nrow = k * k
    if W > 1:
        R = nrow + np.arange(k * (W - 1) * k).reshape(k, W - 1, k)
        nrow += R.size
        rows.append(R.ravel()), cols.append(inu[:, 1:, :].ravel()), vals.append(np.ones(R.size))
        errs.append(np.zeros(R.size))
        Rb = np.broadcast_to(R[:, :, :, None], (k, W - 1, k, k)).ravel()
        val = np.broadcast_to(Q.T[None, None, :, :], (k, W - 1, k, k)).ravel()
        for idx, sign in ((inu, -1.0), (imu, 1.0)):
            colv = np.broadcast_to(idx[:, :-1, None, :], (k, W - 1, k, k)).ravel()
            rows.append(Rb), cols.append(colv), vals.append(sign * val), errs.append(val * U)
        b.append(np.zeros(R.size)), db.append(np.zeros(R.size))
    Rc = nrow + np.arange(k)
    nrow += k
    rows.append(Rc), cols.append(irho), vals.append(np.ones(k)), errs.append(np.zeros(k))
    for idx, sign in ((inu, -1.0), (imu, 1.0)):
        rows.append(np.repeat(Rc, k)), cols.append(idx[:, W - 1, :].ravel())
        vals.append(np.full(k * k, sign)), errs.append(np.zeros(k * k))
    b.append(np.zeros(k)), db.append(np.zeros(k))
    return rows, cols, vals, errs, nrow, np.concatenate(b), np.concatenate(db)


def side_program(spec: SideSpec, W: int, mode: str, E: np.ndarray, first: np.ndarray | None = None) -> LinearProgram:
    r"""The side's LP (module docstring) for budgets :math:`E[x,x']` taken as exact data.

    ``mode``: ``"exact"`` (``W = m``), ``"relax"`` (truncated relaxation, :math:`\rho` worth ``m - W``)
    or ``"force"`` (stop for sure at ``W``: :math:`\rho=0`).  Variables: :math:`\mu`, :math:`\nu`
    (index ``(c, d, v)``) and :math:`\rho` (index ``c``), all in ``[0, 1]``.

    ``first`` (owner scans, designs only): whether each first-record event ``(1, c)`` is admissible,
    decided exactly beforehand (:func:`first_admissible`); its ratio :math:`T(x,c)/T(x',c)` is fixed,
    so it is either allowed outright or fixed to 0, and the margined ``E`` applies to the others.

    The program's pattern, everything but the privacy rows' values, is kept per side, window, mode and
    set of non-vacuous pairs (:class:`_Pattern`); the values are the same floating operations as
    :func:`_side_program_direct`'s, so the program is the same to the last bit (tested), and it also
    carries the stacked matrix in compressed columns for the solver and the certificate.
    """
    k, m = spec.Q.shape[0], spec.m
    ok = {"exact": W == m, "relax": 1 <= W < m, "force": 1 <= W <= m}
    if not ok.get(mode, False):
        raise ValueError(f"side_program: W = {W} and mode {mode!r} do not fit a side of {m} records")
    pairs = pairs_of(k)
    # a pair whose budget ratio is beyond the doubles (E = inf) has no rows: a relaxation, valid for a bound
    active = tuple(j for j, (x, y) in enumerate(pairs)
                   if math.isfinite(E[x, y]) and np.any(spec.T[x] - E[x, y] * spec.T[y] > 0))
    key = (W, mode, active, None if first is None else tuple(bool(f) for f in first))
    cache = _PATTERNS.setdefault(spec, {})
    if key not in cache:
        cache[key] = _Pattern(spec, W, mode, active, first)
    pat = cache[key]
    if pat.A_eq is None:  # a pattern the stacked form cannot hold (repeated entries): assemble directly
        return _side_program_direct(spec, W, mode, E, first)
    Ev = np.array([E[x, y] for x, y in pairs], dtype=float)
    pe = pat.pidx >= 0
    vals, errs = pat.v0.copy(), pat.e0.copy()
    Ep = Ev[pat.pidx[pe]]
    vals[pe] = pat.v0[pe] + Ep * pat.v1[pe]                 # T[x, c] - E T[y, c], as the direct assembly
    errs[pe] = pat.e0[pe] + Ep * pat.e1[pe]                 # 4u (|T[x, c]| + E |T[y, c]|), likewise
    if np.any(vals[pe] == 0.0):  # a coefficient vanishing at this budget is dropped by the direct assembly
        return _side_program_direct(spec, W, mode, E, first)
    nub = pat.nub
    ub = pat.ub_order
    A_ub = sp.csr_matrix((vals[ub], pat.ub_indices, pat.ub_indptr), shape=(nub, pat.N))
    dA_ub = sp.csr_matrix((errs[ub], pat.ub_indices, pat.ub_indptr), shape=(nub, pat.N))
    # the dense vectors are copied (a caller may change its program's); the equality matrices are shared, read only
    lp = LinearProgram(pat.c.copy(), A_ub, np.zeros(nub), pat.A_eq, pat.b_eq.copy(), pat.upper.copy(), dA_ub,
                       pat.dA_eq, pat.dc.copy(), None, pat.db_eq.copy(), info=dict(pat.info))
    order = pat.csc_order
    lp.csc = (np.concatenate([vals, pat.eqv])[order], pat.csc_indices, pat.csc_indptr,
              np.concatenate([errs, pat.eqe])[order], nub + pat.neq)
    return lp


#: Patterns of side programs, per side (:class:`_Pattern`); a side's specs are few and long-lived.
_PATTERNS: "weakref.WeakKeyDictionary[SideSpec, dict]" = weakref.WeakKeyDictionary()


class _Pattern:
    """A side program's structure for one window, mode and set of non-vacuous pairs: every entry of the stacked
    matrix ``[A_ub; A_eq]`` with its value ``v0 + E_p v1`` and error ``e0 + E_p e1`` (``p = pidx``, ``-1``: constant),
    in the order of :func:`_side_program_direct`, and the orders of its rows and columns."""

    def __init__(self, spec: SideSpec, W: int, mode: str, active: tuple, first: np.ndarray | None) -> None:
        k = spec.Q.shape[0]
        nmu, imu, inu, irho, N, (A_eq, dA_eq, b_eq, db_eq) = _variables_and_flows(spec, W)
        neq = A_eq.shape[0]
        R, C, V0, V1, E0, E1, P = [np.arange(nmu)] * 2, [imu.ravel(), inu.ravel()], [np.ones(nmu), -np.ones(nmu)], \
            [np.zeros(nmu)] * 2, [np.zeros(nmu)] * 2, [np.zeros(nmu)] * 2, [np.full(nmu, -1)] * 2
        nub = nmu
        d0 = 0 if first is None else 1
        pair_rows = {}
        for j, (x, y) in enumerate(pairs_of(k)):
            if j not in active:
                continue
            a0, a1 = spec.T[x], -spec.T[y]
            b0, b1 = 4 * U * np.abs(spec.T[x]), 4 * U * np.abs(spec.T[y])
            Rw = nub + np.arange(W * k).reshape(W, k)
            sub = imu[:, d0:, :]
            shape = sub.shape
            for rr, cc, cidx in ((np.broadcast_to(Rw[None, d0:], shape).ravel(), sub.ravel(),
                                  np.broadcast_to(np.arange(k)[:, None, None], shape).ravel()),
                                 (np.full(k, nub + W * k), irho, np.arange(k))):
                R.append(rr), C.append(cc), V0.append(a0[cidx]), V1.append(a1[cidx]), E0.append(b0[cidx])
                E1.append(b1[cidx]), P.append(np.full(rr.shape[0], j))
            pair_rows[(x, y)] = np.arange(nub, nub + W * k + 1)
            nub += W * k + 1
        r, cl = np.concatenate(R), np.concatenate(C)
        v0, v1, e0, e1, pidx = (np.concatenate(t) for t in (V0, V1, E0, E1, P))
        keep = (v0 != 0.0) | (v1 != 0.0)  # structural zeros (constant ones, or T[x, c] = T[y, c] = 0)
        r, cl, v0, v1, e0, e1, pidx = r[keep], cl[keep], v0[keep], v1[keep], e0[keep], e1[keep], pidx[keep]
        self.nub, self.neq, self.N = nub, neq, N
        self.v0, self.v1, self.e0, self.e1, self.pidx = v0, v1, e0, e1, pidx
        ub_order = np.lexsort((cl, r))
        self.ub_order = ub_order
        self.ub_indices = cl[ub_order].astype(np.int32)
        self.ub_indptr = np.concatenate([[0], np.cumsum(np.bincount(r, minlength=nub))]).astype(np.int32)
        # the stacked matrix by columns: the inequality rows first, then the equality rows (their values are constant)
        eq = A_eq.tocoo()
        self.eqv = eq.data
        self.eqe = np.asarray(dA_eq.tocsr()[eq.row, eq.col]).ravel() if eq.nnz else np.zeros(0)
        rs = np.concatenate([r, nub + eq.row])
        cs = np.concatenate([cl, eq.col])
        order = np.lexsort((rs, cs))
        dup = np.any((np.diff(rs[order]) == 0) & (np.diff(cs[order]) == 0))
        if dup or np.any((np.diff(r[ub_order]) == 0) & (np.diff(cl[ub_order]) == 0)):
            self.A_eq = None
            return
        self.csc_perm = order
        self.csc_indices = rs[order].astype(np.int32)
        self.csc_indptr = np.concatenate([[0], np.cumsum(np.bincount(cs, minlength=N))]).astype(np.int32)
        self.A_eq, self.dA_eq, self.b_eq, self.db_eq = A_eq, dA_eq, b_eq, db_eq
        c, upper = _objective(spec, W, mode, imu, irho, N, first)
        self.c, self.upper, self.dc = c, upper, 3 * U * np.abs(c)
        self.info = {"imu": imu, "inu": inu, "irho": irho, "W": W, "mode": mode, "pair_rows": pair_rows}
        self.nval = r.shape[0]

    @property
    def csc_order(self) -> np.ndarray:
        """Indices into the values (inequality entries, then the constant equality ones appended) by columns."""
        return self.csc_perm


def _variables_and_flows(spec: SideSpec, W: int) -> tuple:
    """The side LP's variable indices (``mu``, ``nu`` by ``(c, d, v)``, ``rho`` by ``c``), their number and
    the flow equalities ``(A_eq, dA_eq, b_eq, db_eq)`` (:func:`_flow_rows`)."""
    k = spec.Q.shape[0]
    nmu = k * W * k
    imu = np.arange(nmu).reshape(k, W, k)
    inu, irho = nmu + imu, 2 * nmu + np.arange(k)
    N = 2 * nmu + k
    rows, cols, vals, errs, neq, b_eq, db_eq = _flow_rows(spec, W, imu, inu, irho)
    A_eq, dA_eq = _coo(rows, cols, vals, errs, (neq, N))
    return nmu, imu, inu, irho, N, (A_eq, dA_eq, b_eq, db_eq)


def _objective(spec: SideSpec, W: int, mode: str, imu: np.ndarray, irho: np.ndarray, N: int,
               first: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The side LP's objective (records published: ``m - d`` for a stop at distance ``d``; ``rho`` worth
    ``m - W`` when relaxed) and the variables' upper bounds (``rho = 0`` when forced, inadmissible first
    events fixed to 0)."""
    k, m = spec.Q.shape[0], spec.m
    counts = (m - np.arange(W)).astype(float)
    c = np.zeros(N)
    c[imu.ravel()] = (spec.w[:, None, None] * counts[None, :, None] * np.ones((1, 1, k))).ravel()
    c[irho] = spec.w * float(m - W if mode == "relax" else 0)
    upper = np.ones(N)
    if mode == "force":
        upper[irho] = 0.0
    if first is not None:
        upper[imu[np.arange(k), 0, np.arange(k)]] = first.astype(float)
    return c, upper


def _side_program_direct(spec: SideSpec, W: int, mode: str, E: np.ndarray,
                         first: np.ndarray | None = None) -> LinearProgram:
    r""":func:`side_program`'s LP (same arguments), assembled directly: the reference its cached pattern is
    tested against, to the last bit."""
    k, m = spec.Q.shape[0], spec.m
    ok = {"exact": W == m, "relax": 1 <= W < m, "force": 1 <= W <= m}
    if not ok.get(mode, False):
        raise ValueError(f"side_program: W = {W} and mode {mode!r} do not fit a side of {m} records")
    nmu, imu, inu, irho, N, (A_eq, dA_eq, b_eq, db_eq) = _variables_and_flows(spec, W)
    urows, ucols, uvals, uerrs = [np.arange(nmu)] * 2, [imu.ravel(), inu.ravel()], [np.ones(nmu), -np.ones(nmu)], \
        [np.zeros(nmu)] * 2
    nub = nmu
    d0 = 0 if first is None else 1
    pair_rows = {}
    for x, y in pairs_of(k):
        if not math.isfinite(E[x, y]):
            continue  # beyond the doubles: no rows (side_program)
        coef = spec.T[x] - E[x, y] * spec.T[y]
        if not np.any(coef > 0):
            continue  # the pair's constraints are vacuous (every event's ratio is a mediant below E)
        dcoef = 4 * U * (np.abs(spec.T[x]) + E[x, y] * np.abs(spec.T[y]))
        ev = np.broadcast_to(coef[:, None, None], (k, W, k))
        R = nub + np.arange(W * k).reshape(W, k)
        sub = imu[:, d0:, :]
        urows.append(np.broadcast_to(R[None, d0:], sub.shape).ravel()), ucols.append(sub.ravel())
        uvals.append(ev[:, d0:, :].ravel())
        uerrs.append(np.broadcast_to(dcoef[:, None, None], sub.shape).ravel())
        urows.append(np.full(k, nub + W * k)), ucols.append(irho), uvals.append(coef), uerrs.append(dcoef)
        pair_rows[(x, y)] = np.arange(nub, nub + W * k + 1)
        nub += W * k + 1
    A_ub, dA_ub = _coo(urows, ucols, uvals, uerrs, (nub, N))
    c, upper = _objective(spec, W, mode, imu, irho, N, first)
    return LinearProgram(c, A_ub, np.zeros(nub), A_eq, b_eq, upper, dA_ub, dA_eq, 3 * U * np.abs(c), None, db_eq,
                         info={"imu": imu, "inu": inu, "irho": irho, "W": W, "mode": mode, "pair_rows": pair_rows})


def _budget_matrix(k: int, budgets: dict, *, upward: bool, margin: float = 0.0) -> np.ndarray:
    """``E[x, x'] = exp(budget)``: a proven upper bound (``upward``; ``inf`` beyond the doubles) or a float below it
    by ``margin``, at least 1 and at most ``exp(LOG_DESIGN_E_MAX)`` (designs: a smaller ratio only tightens them)."""
    E = np.ones((k, k))
    for (x, y), a in budgets.items():
        E[x, y] = exp_enclosure(a)[1] if upward else math.exp(min(max(float(a) - margin, 0.0), LOG_DESIGN_E_MAX))
    return E


def first_admissible(spec: SideSpec, budgets: tuple) -> np.ndarray:
    r"""Per first-record value ``c``: whether :math:`T(x,c)/T(x',c)\le e^{a(x,x')}` for every pair, decided exactly.

    The ratio is a rational of the exact chain; :math:`e^a` is enclosed by rational Taylor bounds; an
    undecided comparison counts as inadmissible (the design stays safe).
    """
    k = spec.Q.shape[0]
    T = side_chain_exact(spec.chain, spec.side)
    ok = np.ones(k, dtype=bool)
    for (x, y), a in zip(pairs_of(k), budgets):
        for c in range(k):
            if T[x][c] == 0:
                continue
            # Taylor terms until decided (a budget may sit 1e-12 above a chain's ratio: the jump)
            ok[c] &= T[y][c] > 0 and ratio_within(T[x][c] / T[y][c], Fraction(a)) is True
    return ok


def stop_table(spec: SideSpec, x: np.ndarray, lp: LinearProgram) -> np.ndarray:
    r"""The Markov rule of an LP point: :math:`S_d(c,v)=\mu^c_d(v)/\hat\nu^c_d(v)`, snapped (Proposition 3).

    :math:`\hat\nu` is the running law the rule itself produces (propagated distance by distance), not
    the LP's :math:`\nu`: an LP meets its flow equations only to an absolute tolerance, which is no
    accuracy at all for a tiny running probability; so the rule reproduces the LP's event
    probabilities :math:`\mu` wherever they are within the running mass.  Unreachable states stop.
    """
    mu = np.clip(x[lp.info["imu"]], 0.0, None)            # (c, d, v)
    W = mu.shape[1]
    S = np.ones((W, mu.shape[0], mu.shape[2]))
    alive = spec.sigma.copy()
    for d in range(W):
        with np.errstate(divide="ignore", invalid="ignore"):
            Sd = np.where(alive > 0, np.clip(mu[:, d, :] / np.where(alive > 0, alive, 1.0), 0.0, 1.0), 1.0)
        Sd = np.where(Sd < SNAP, 0.0, np.where(Sd > 1.0 - SNAP, 1.0, Sd))
        S[d] = Sd
        alive = (alive * (1.0 - Sd)) @ spec.Q
    if lp.info["mode"] == "force":
        S[-1] = 1.0
    return S


@dataclass
class _SideOracle:
    """Cached bounds and designs of one side at budgets (one Fraction per ordered pair)."""

    spec: SideSpec
    W: int
    cache: dict = field(default_factory=dict)
    solves: int = 0
    bases: dict = field(default_factory=dict)  # per LP shape: the budgets solved so far and their optimal bases

    @property
    def bound_mode(self) -> str:
        return "exact" if self.W == self.spec.m else "relax"

    def upper(self, budgets: tuple) -> tuple[float, float]:
        """(proven upper bound, float LP value) of the side's expected count at these budgets."""
        return self._solve(budgets)[:2]  # type: ignore[return-value]

    def slopes(self, budgets: tuple) -> np.ndarray:
        r"""Sensitivity :math:`\partial F/\partial a` per pair at these budgets (envelope theorem:
        :math:`E\sum_i y_i\,g_{x'}(\text{event}_i)`); guides branching only."""
        return self._solve(budgets)[2]

    def _solve(self, budgets: tuple) -> tuple[float, float, np.ndarray]:
        if budgets not in self.cache:
            k = self.spec.Q.shape[0]
            lp, sol = self._bound_solve(budgets)
            if sol is None:  # no dual point: the trivial bound (every record published), no guidance
                self.cache[budgets] = (float(self.spec.m), -math.inf, np.zeros(len(budgets)), None)
                return self.cache[budgets]
            E = _budget_matrix(k, dict(zip(pairs_of(k), lp.info["budgets"])), upward=True)
            slope = np.zeros(len(budgets))
            mu, rho = np.clip(sol.x[lp.info["imu"]], 0, None), np.clip(sol.x[lp.info["irho"]], 0, None)
            for j, (x, y) in enumerate(pairs_of(k)):
                rows = lp.info["pair_rows"].get((x, y))
                if rows is not None:  # row (T[x] - E T[y]) mu <= 0: minus its E-derivative is g_{x'} of the event
                    gy = np.append(np.einsum("c,cdv->dv", self.spec.T[y], mu).ravel(), self.spec.T[y] @ rho)
                    slope[j] = E[x, y] * float(np.maximum(sol.y_ub[rows], 0.0) @ gy)
            data = self._dual_data(lp, sol, E)
            bound = math.nextafter(data.base + math.fsum((data.upper * np.maximum(data.r_hi, 0.0)).tolist())
                                   * (1.0 + 4.0 * U), math.inf)  # as lp_certificate.dual_bound, parts shared
            bound = min(bound, self._first_bound(lp.info["budgets"], E))
            self.cache[budgets] = (bound, sol.value, slope, data)
        return self.cache[budgets]

    def _first_bound(self, budgets: tuple, E: np.ndarray) -> float:
        r"""The bound with each first-record event's admissibility decided exactly, where that differs from ``E``'s.

        A first-record event ``(1, c)`` of an owner scan has the fixed ratio :math:`T(x,c)/T(x',c)`, so every
        scan within the budgets has :math:`\mu^c_1(c)=0` when that ratio exceeds :math:`e^a` exactly, and its rows
        hold by themselves otherwise: the program with them so (``first``) is still a relaxation.  It differs from
        the program at the rounded-up ``E`` only for a budget sitting on a ratio of the chain (ε = ln 3 on a ratio
        of 3 - 3e-16: the bound took the jump the budget does not allow).  ``inf`` where it does not apply.
        """
        if self.spec.holder:
            return math.inf
        first = first_admissible(self.spec, budgets)
        T = self.spec.T
        k = T.shape[0]
        loose = np.array([all(T[x, c] <= E[x, y] * T[y, c] for x, y in pairs_of(k)) for c in range(k)])
        if not np.any(loose & ~first):
            return math.inf
        try:
            return _solve_lp(side_program(self.spec, self.W, self.bound_mode, E, first)).bound
        except RuntimeError:
            return math.inf

    def _bound_solve(self, budgets: tuple) -> tuple[LinearProgram, LPSolution | None]:
        """The bound LP at these budgets; where HiGHS gives up (budgets sitting on a ratio of the chain make
        coefficients vanish), the LP at slightly larger budgets -- still an upper bound, F being monotone."""
        k = self.spec.Q.shape[0]
        for bump in (0, Fraction(1, 10**10), Fraction(1, 10**8)):
            b = tuple(Fraction(v) + bump for v in budgets)
            lp = side_program(self.spec, self.W, self.bound_mode,
                              _budget_matrix(k, dict(zip(pairs_of(k), b)), upward=True))
            lp.info["budgets"] = b
            self.solves += 1
            for presolve in (True, False):
                try:
                    return lp, self._warm_solve(lp, b) if presolve else _solve_lp(lp, presolve=False, bound=False)
                except RuntimeError:
                    continue
        return lp, None

    def _warm_solve(self, lp: LinearProgram, budgets: tuple) -> LPSolution:
        """The LP started from the optimal basis of the nearest budgets solved before (HiGHS warm start:
        a few simplex iterations instead of hundreds; the proof does not depend on it)."""
        here = np.array([float(v) for v in budgets])
        shape = (lp.A_ub.shape[0] + lp.A_eq.shape[0], lp.c.shape[0])
        points, bases = self.bases.setdefault(shape, (np.empty((0, here.shape[0])), []))
        warm = {shape: bases[int(np.abs(points - here).sum(axis=1).argmin())]} if bases else {}
        sol = _solve_lp(lp, bound=False, warm=warm)
        if shape in warm:
            self.bases[shape] = (np.vstack([points, here]), bases + [warm[shape]])
        return sol

    def dual_data(self, budgets: tuple) -> DualData | None:
        """The verified dual point's parts at these budgets (:class:`~redactopt.solvers.split_bound.DualData`)."""
        return self._solve(budgets)[3]

    def _dual_data(self, lp: LinearProgram, sol: LPSolution, E: np.ndarray) -> DualData:
        k = self.spec.Q.shape[0]
        base, r_hi = dual_parts(lp, sol.y_ub, sol.y_eq)
        pairs = pairs_of(k)
        s = np.zeros((len(pairs), lp.c.shape[0]))
        imu, irho = lp.info["imu"], lp.info["irho"]
        for j, (x, y) in enumerate(pairs):
            rows = lp.info["pair_rows"].get((x, y))
            if rows is None:
                continue
            yr = np.maximum(sol.y_ub[rows], 0.0)
            W = imu.shape[1]
            s[j, imu.ravel()] = (self.spec.T[y][:, None, None] * yr[:-1].reshape(1, W, k)).ravel()
            s[j, irho] = self.spec.T[y] * yr[-1]
        # each start's stop events and never-stopped mass are a probability law (the flow equations with the
        # exact, stochastic Q: sum_{d,v} mu^c_d(v) + rho^c = 1 at every feasible point)
        groups = tuple(np.append(imu[c].ravel(), irho[c]) for c in range(k))
        return DualData(base, r_hi, s, np.array([E[x, y] for x, y in pairs]), lp.upper.copy(), np.abs(lp.c), groups)

    def design(self, budgets: tuple, margin: float, horizon: int | None = None) -> np.ndarray:
        """A stop table for these budgets, solved ``margin`` nats below them.

        ``horizon``: stop for sure by that distance (``force`` mode); default the oracle's ``W`` (exact
        when it covers the side).
        """
        k = self.spec.Q.shape[0]
        E = _budget_matrix(k, dict(zip(pairs_of(k), budgets)), upward=False, margin=margin)
        W = self.W if horizon is None else horizon
        first = None if self.spec.holder else first_admissible(self.spec, budgets)
        mode = "exact" if horizon is None and W == self.spec.m else "force"
        lp = side_program(self.spec, W, mode, E, first)
        scale = None
        warm: dict = {}  # the second pass starts from the first's optimal basis (same feasible set: speed only)
        for _ in range(2):  # second pass: each event's rows divided by its probability (relative tolerances)
            try:
                sol = _solve_lp(_scaled_rows(lp, scale), bound=False, warm=warm)
            except RuntimeError:  # HiGHS gave up on the presolved model: once more without presolve
                sol = _solve_lp(_scaled_rows(lp, scale), bound=False, presolve=False)
            self.solves += 1
            scale = 1.0 / np.clip(_event_mass(self.spec, sol.x, lp), 1e-12, 1.0)
        return stop_table(self.spec, sol.x, lp)


def _scaled_rows(lp: LinearProgram, scale: np.ndarray | None) -> LinearProgram:
    """The same program with each event's privacy rows multiplied by ``scale[event]`` (the feasible set is
    unchanged; HiGHS's absolute feasibility tolerance becomes relative to each event's probability)."""
    if scale is None:
        return lp
    r = np.ones(lp.A_ub.shape[0])
    for rows in lp.info["pair_rows"].values():
        r[rows] = scale
    # HiGHS refuses entries above 1e15 (a model of a huge budget over a tiny event would be empty)
    top = np.asarray(abs(lp.A_ub).max(axis=1).todense()).ravel()
    r = np.minimum(r, np.where(top > 0, 1e9 / np.where(top > 0, top, 1.0), r))
    return LinearProgram(lp.c, (sp.diags(r) @ lp.A_ub).tocsr(), lp.b_ub * r, lp.A_eq, lp.b_eq, lp.upper,
                         info=lp.info)


def _event_mass(spec: SideSpec, x: np.ndarray, lp: LinearProgram) -> np.ndarray:
    """Largest likelihood of each event (by distance and value, then "all redacted") at an LP point."""
    mu, rho = np.clip(x[lp.info["imu"]], 0.0, None), np.clip(x[lp.info["irho"]], 0.0, None)
    g = np.einsum("xc,cdv->xdv", spec.T, mu).max(axis=0).ravel()
    return np.append(g, float((spec.T @ rho).max()))


def side_optimum(spec: SideSpec, eps: float, W: int | None = None) -> tuple[float, float, np.ndarray]:
    """One side with the whole budget for every pair: (proven bound, LP value, design stop table); counts."""
    k = spec.Q.shape[0]
    orc = _SideOracle(spec, W or spec.m)
    b = tuple(Fraction(eps) for _ in pairs_of(k))
    bound, value = orc.upper(b)
    return bound, value, side_design(orc, b)


def side_check(spec: SideSpec, S: np.ndarray, budgets: tuple) -> bool:
    """Whether the side alone keeps every pair's ratio within its budget, proven
    (:func:`~redactopt.judge.scan.side_within`: outward rounding, rationals where that cannot decide).

    A first-record event may sit exactly at its budget (the snapped splits put it there): the enclosure
    cannot decide it and rationals do.  A tolerance here would pass a rule the judge then refuses
    (ε = ln 3 on a ratio of 3 - 3e-16: the whole scan fell back to redacting everything).
    """
    k = spec.Q.shape[0]
    if spec.side == "right":
        mech = ScanMechanism(spec.chain, spec.m + 1, 0, None, S, holder=spec.holder)
    else:
        mech = ScanMechanism(spec.chain, spec.m + 1, spec.m, S, None, holder=spec.holder)
    return side_within(mech, spec.side, dict(zip(pairs_of(k), budgets)))


def _running(spec: SideSpec, S: np.ndarray) -> np.ndarray:
    """Largest probability (over start rows) of not having stopped before each distance, under rule ``S``."""
    alive = spec.sigma.copy()
    run = np.empty(S.shape[0])
    for d in range(S.shape[0]):
        run[d] = alive.sum(axis=1).max()
        alive = (alive * (1.0 - S[d])) @ spec.Q
    return run


def side_design(orc: _SideOracle, budgets: tuple, loss: float = math.inf, deadline: float = math.inf,
                margins: tuple[float, ...] = MARGINS) -> np.ndarray:
    """A verified stop table for one side at these budgets (docs/beyond_local.md, §3, "Designs").

    An LP's absolute tolerances do not fix the ratios of events whose probability is tiny, and the
    optimal rule keeps running with geometrically small probability.  So besides the LP's own rule,
    the program is re-solved with a sure stop at the distance where that rule's running probability
    falls below 1e-9, 1e-7, 1e-5 or 1e-3 (a scan of the side, so feasible; every event it leaves has a
    resolved probability).  The first three margins are always tried, larger ones while nothing passes
    :func:`side_check` or the best that passes publishes more than ``loss`` less than that margin's LP rule
    (a larger margin leaves room for the LP's own rule's rounding); the most useful passing rule is kept.
    The last resort redacts the whole side.

    ``loss``: when the kept rule publishes more than this below the relaxation's value at ``W`` (a sure
    stop at ``W`` can cost more at small budgets than at the whole budget that chose ``W``), the side is
    designed again on a window twice as long (up to the whole side) and the better rule kept.
    """
    best = _side_design(orc, budgets, loss, deadline, margins)
    spec = orc.spec
    while orc.W < spec.m and orc.upper(budgets)[1] - side_count(spec, best) > loss and time.monotonic() < deadline:
        orc = _SideOracle(spec, min(spec.m, 2 * orc.W))
        wider = _side_design(orc, budgets, loss, deadline, margins)
        if side_count(spec, wider) > side_count(spec, best):
            best = wider
    return best


def _side_design(orc: _SideOracle, budgets: tuple, loss: float = math.inf, deadline: float = math.inf,
                 margins: tuple[float, ...] = MARGINS) -> np.ndarray:
    spec = orc.spec
    best: np.ndarray | None = None
    for margin in margins:
        if best is not None and time.monotonic() > deadline:  # out of time: the best passing rule so far
            return best
        try:
            S = orc.design(budgets, margin)
        except RuntimeError:
            continue
        cands = [S]
        run = _running(spec, S)
        for thr in (1e-9, 1e-7, 1e-5, 1e-3):
            if np.any(run < thr):
                try:
                    cands.append(orc.design(budgets, margin, horizon=max(int(np.argmax(run < thr)), 1)))
                except RuntimeError:  # a sure stop that early may be infeasible: no candidate
                    continue
        for cand in cands:
            if side_check(spec, cand, budgets) and (best is None or side_count(spec, cand) > side_count(spec, best)):
                best = cand
        if best is not None and margin >= margins[min(2, len(margins) - 1)] and \
                side_count(spec, best) >= side_count(spec, S) - loss:
            return best
    return best if best is not None else np.zeros((spec.m, spec.Q.shape[0], spec.Q.shape[0]))


def side_count(spec: SideSpec, S: np.ndarray) -> float:
    r"""Expected number of the side's records a rule publishes (:math:`X_p\sim\pi`)."""
    start = spec.w[:, None] * spec.sigma
    mu, _ = occupation(spec.Q, S, start)
    return float(np.einsum("cdv,d->", mu, spec.m - np.arange(S.shape[0], dtype=float)))


def choose_window(spec: SideSpec, eps: float, tol_count: float, start: int = 16, half: bool = False,
                  deadline: float = math.inf) -> int:
    """The truncation ``W`` of a side: doubled until the relaxation's bound and a forced stop at ``W`` agree within ``tol_count``.

    Judged for every pair at the whole budget, then at a half, a quarter and an eighth of it (a split
    leaves a side less than the whole budget, where a sure stop at ``W`` costs more) as long as ``W``
    stays at most 32 or the whole budget's ``W`` (longer windows at small budgets would slow every
    bound LP of the split search more than they tighten it); the final certificate is computed
    honestly whatever the choice (a larger ``W`` only tightens it).

    ``half``: a swap-symmetric two-sided problem, whose best split gives each side about half of each
    pair's budget (docs/beyond_local.md, §3): there ``W`` grows past the cap, in steps of 16, until the
    relaxation at ``W`` is within ``tol_count`` of a feasible value, a sure stop at ``2 W`` (the bound then
    loses at most that to the truncation where it matters).
    """
    with _until(deadline):
        return _choose_window(spec, eps, tol_count, start, half, deadline)


def _choose_window(spec: SideSpec, eps: float, tol_count: float, start: int, half: bool, deadline: float) -> int:
    """:func:`choose_window`, every LP ending by ``deadline``.

    The window stops growing when the time runs out, and then the last window whose programs were solved
    is kept, never a larger one nobody solved (a shorter window only loosens the bound; a longer one's
    programs would slow every step of the split search).
    """
    k = spec.Q.shape[0]
    W = min(spec.m, start)
    cap = spec.m
    last_ok = W
    for share in (1, 2, 4, 8):
        b = tuple(Fraction(eps) / share for _ in pairs_of(k))
        E = _budget_matrix(k, dict(zip(pairs_of(k), b)), upward=True)
        if half and share == 2:
            while W < spec.m and time.monotonic() < deadline:
                try:
                    ub = _solve_lp(side_program(spec, W, "relax", E)).bound
                    lb = _solve_lp(side_program(spec, min(spec.m, 2 * W), "force", E), bound=False).value
                except RuntimeError:
                    if time.monotonic() >= deadline:
                        return last_ok
                    ub, lb = math.inf, -math.inf
                last_ok = W
                if ub - lb <= tol_count:
                    break
                W = min(spec.m, 2 * W if W < 64 else W + 16)
            cap = max(W, 32)
            continue
        while W < min(spec.m, cap) and time.monotonic() < deadline:
            try:
                ub = _solve_lp(side_program(spec, W, "relax", E)).bound
                lb = _solve_lp(side_program(spec, W, "force", E), bound=False).value
            except RuntimeError:  # a sure stop at W can be infeasible (too close to p): look further
                if time.monotonic() >= deadline:
                    return last_ok
                ub, lb = math.inf, -math.inf
            last_ok = W
            if ub - lb <= tol_count:
                break
            W = min(spec.m, cap, 2 * W)
        cap = max(W, 32)
    return W


@dataclass(frozen=True)
class ScanProposal:
    r"""A scan mechanism proposed by the LPs, not yet judged, with a proven bound over its class.

    ``bound`` is the proven upper bound on the expected number of records published by every scan
    mechanism whose two sides decide independently (``holder``: every holder scan), rounded outward
    (docs/beyond_local.md, §1); ``fallback`` redacts every record (always private).  ``split`` is the
    left side's budget per ordered pair (the right side has ``eps`` minus it); ``stopped`` says the
    split search ran out of time (the bound still holds).
    """

    mechanism: ScanMechanism
    fallback: ScanMechanism
    bound: float
    split: dict
    stopped: bool
    info: dict


def _box_split(lo: np.ndarray, hi: np.ndarray, cuts: list[list[float]], eta: float,
               weight: np.ndarray | None = None) -> list[tuple]:
    """Children of a box along the dimension of largest ``weight`` (what the dimension adds to the box's
    bound; default its width): a sliver peeled off an edge that sits on a jump budget, three around a
    jump budget inside, else halves."""
    width = hi - lo
    score = width if weight is None else np.maximum(weight, 0.0) + 1e-9 * width
    j = int(np.argmax(np.where(width > 4 * eta, score, -1.0)))  # slivers of a jump are never cut again
    mid = 0.5 * (lo[j] + hi[j])
    inside = [t for t in cuts[j] if lo[j] + 2 * eta < t < hi[j] - 2 * eta]
    near_lo = width[j] > 8 * eta and any(abs(t - lo[j]) <= 2 * eta for t in cuts[j])
    near_hi = width[j] > 8 * eta and any(abs(t - hi[j]) <= 2 * eta for t in cuts[j])
    if near_lo or near_hi:  # a jump at the box's edge: peel it off, the rest of the box no longer sees it
        points = [lo[j], lo[j] + 4 * eta, hi[j]] if near_lo else [lo[j], hi[j] - 4 * eta, hi[j]]
    elif inside:
        t = min(inside, key=lambda v: abs(v - mid))
        points = [lo[j], t - eta, t + eta, hi[j]]
    else:
        points = [lo[j], mid, hi[j]]
    out = []
    for a, b in zip(points[:-1], points[1:]):
        l2, h2 = lo.copy(), hi.copy()
        l2[j], h2[j] = a, b
        out.append((l2, h2))
    return out


def _split_domain(left: SideSpec, right: SideSpec, eps: float) -> tuple[np.ndarray, np.ndarray, list[list[float]]]:
    r"""Per ordered pair, the left budgets worth searching and the budgets where a side's first-record event opens.

    Beyond a side's hull bound its constraints are vacuous (:meth:`SideSpec.hull`), so the left budget
    lies in :math:`[\epsilon-h_r,h_\ell]\cap[0,\epsilon]`; if that is empty both sides can be vacuous at once.
    """
    k = left.Q.shape[0]
    lo, hi, cuts = [], [], []
    for x, y in pairs_of(k):
        a, b = max(0.0, eps - right.hull(x, y)), min(eps, left.hull(x, y))
        if a > b:
            a = b = min(eps, max(0.0, left.hull(x, y)))
        lo.append(a), hi.append(b)
        cuts.append(sorted(set(left.thresholds(x, y)) | {eps - t for t in right.thresholds(x, y)}))
    return np.array(lo), np.array(hi), cuts


def _corners(lo: np.ndarray, hi: np.ndarray, free: list[int]) -> list[tuple[tuple[int, ...], np.ndarray]]:
    """The box's corners over its free dimensions: (0/1 tuple, point)."""
    out = []
    for c in itertools.product((0, 1), repeat=len(free)):
        a = lo.copy()
        for f, j in enumerate(free):
            a[j] = hi[j] if c[f] else lo[j]
        out.append((c, a))
    return out


def _seed(value: object, lo: np.ndarray, hi: np.ndarray, eps: float, deadline: float,
          start: np.ndarray | None = None, floor: float = 1e-9) -> tuple[float, tuple]:
    """A good split to start from: a grid over the free dimensions (11 points each, at most 2 dimensions;
    otherwise a few uniform splits), then a pattern search around the best point (along the axes and,
    in two dimensions, the diagonals; steps
    halved down to ``floor`` nats, until ``deadline``); ``start`` is one more point to try.
    Guides only: the search's bound does not depend on it."""
    free = [int(j) for j in np.flatnonzero(hi > lo)]
    pts = [np.clip(np.full_like(lo, eps / 2), lo, hi), (lo + hi) / 2, hi, lo]
    pts += [np.clip(np.full_like(lo, eps * f), lo, hi) for f in (0.25, 0.75)]
    if start is not None:
        pts.append(np.asarray(start, dtype=float))
    if 1 <= len(free) <= 2:
        for g in itertools.product(np.linspace(0.0, 1.0, 11), repeat=len(free)):
            a = lo.copy()
            a[free] = lo[free] + np.array(g) * (hi[free] - lo[free])
            pts.append(a)
    best_v, best_a = -math.inf, tuple(pts[0])
    for i, a in enumerate(pts):  # the grid stops at the deadline (its first points are the likeliest)
        if i and time.monotonic() > deadline:
            break
        v = value(a)  # type: ignore[operator]
        if v > best_v:
            best_v, best_a = v, tuple(a)
    step = 0.05 * float(np.max(hi - lo, initial=0.0))
    dirs = []
    for j in free:
        e = np.zeros(lo.shape[0])
        e[j] = 1.0
        dirs.append(e)
    if len(free) == 2:  # the diagonals too: a ridge across the axes is climbed along it, not by zigzags
        dirs += [dirs[0] + dirs[1], dirs[0] - dirs[1]]
    while step > floor and time.monotonic() < deadline:
        moved = False
        for e in dirs:
            for sgn in (1.0, -1.0):
                a = np.clip(np.array(best_a) + sgn * step * e, lo, hi)
                v = value(a)  # type: ignore[operator]
                if v > best_v + 1e-15:
                    best_v, best_a, moved = v, tuple(a), True
        if not moved:
            step /= 2
    return best_v, best_a


class _SplitBoxes:
    r"""Bounds and values of boxes of budget splits between the two sides (:func:`_branch_and_bound`).

    A box's monotone bound :math:`F_\ell^{UB}(a^+)+F_r^{UB}(\epsilon-a^-)` is valid because both sides
    are non-decreasing in their budgets; with at most two free dimensions the interpolated dual bound
    (:mod:`redactopt.solvers.split_bound`) is taken too, whichever is lower.
    """

    def __init__(self, left: _SideOracle, right: _SideOracle, eps: float) -> None:
        self.left, self.right, self.F = left, right, Fraction(eps)
        self.lo0, self.hi0, self.cuts = _split_domain(left.spec, right.spec, eps)
        self.eta = 1e-11 * max(1.0, eps)
        self.best = -math.inf  # the best value found so far (set by the search)

    def lb(self, a: np.ndarray) -> tuple:
        return tuple(Fraction(float(v)) for v in a)

    def rb(self, a: np.ndarray) -> tuple:
        return tuple(self.F - Fraction(float(v)) for v in a)

    def value(self, a: np.ndarray) -> float:
        return self.left.upper(self.lb(a))[1] + self.right.upper(self.rb(a))[1]

    def ub(self, lo: np.ndarray, hi: np.ndarray) -> float:
        left, right, lb, rb = self.left, self.right, self.lb, self.rb
        mono = math.nextafter(left.upper(lb(hi))[0] + right.upper(rb(lo))[0], math.inf)
        free, data, best = _corner_interpolation(left, right, lb, rb, lo, hi)
        if data is None:
            return mono
        if len(free) == 2:  # interpolate along one dimension, bound the other by monotonicity (left at its
            for f in (0, 1):  # upper end, right at its lower end): no basis change of the other one to span
                lft = {(b,): data[tuple(b if g == f else 1 for g in (0, 1))][0] for b in (0, 1)}
                rgt = {(b,): data[tuple(b if g == f else 0 for g in (0, 1))][1] for b in (0, 1)}
                best = min(best, interpolated_bound(lft, rgt, [free[f]], GRID1))
        return min(mono, math.nextafter(best, math.inf))

    def slack(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Per free dimension, what the monotone bound loses over the box along it (corner bounds, cached
        for boxes of at most two free dimensions, where the interpolated bound solved every corner)."""
        left, right, lb, rb = self.left, self.right, self.lb, self.rb
        top = left.upper(lb(hi))[0] + right.upper(rb(lo))[0]
        out = np.zeros(lo.shape[0])
        for j in np.flatnonzero(hi > lo):
            h2, l2 = hi.copy(), lo.copy()
            h2[j], l2[j] = lo[j], hi[j]
            out[j] = max(top - left.upper(lb(h2))[0] - right.upper(rb(lo))[0],
                         top - left.upper(lb(hi))[0] - right.upper(rb(l2))[0]) + 1e-12 * (hi[j] - lo[j])
        return out

    def split(self, lo: np.ndarray, hi: np.ndarray, parent: float) -> list[tuple[tuple, float]]:
        """The children of a box whose bound is ``parent``, and their bounds (docs/beyond_local.md, §3).

        With at most two free dimensions every one is tried and the split whose children bound the box
        lowest on average is taken (on a flat budget a split lowers nothing; a greedy choice by the
        worst child alone keeps halving one dimension); when no split lowers the worst child by 1 % of
        the box's excess the relatively widest dimension is cut (a jump the cuts do not list is then
        left to its sliver).  With more dimensions the one whose corners lose most to the monotone
        bound is cut (trying all would cost a solve per dimension and child).
        """
        eta, cuts = self.eta, self.cuts
        dims = [int(j) for j in np.flatnonzero(hi - lo > 4 * eta)]
        if len(dims) > 2:
            return [(box, self.ub(*box)) for box in _box_split(lo, hi, cuts, eta, self.slack(lo, hi))]
        options = []
        for j in dims:
            onehot = np.zeros(lo.shape[0])
            onehot[j] = 1.0
            kids = [(box, self.ub(*box)) for box in _box_split(lo, hi, cuts, eta, onehot)]
            worst = max(u for _, u in kids)
            options.append((sum(u for _, u in kids) / len(kids), -float(hi[j] - lo[j]), j, kids, worst))
        if len(options) > 1 and min(o[4] for o in options) > parent - 0.01 * max(parent - self.best, 1e-300):
            span = self.hi0 - self.lo0
            return max(options, key=lambda o: (hi[o[2]] - lo[o[2]]) / max(span[o[2]], 1e-300))[3]
        return min(options, key=lambda o: o[:3])[3]


def swap_symmetric(chain: KChain) -> bool:
    r"""Whether the chain is binary and invariant under swapping its states, decided exactly
    (:math:`P(0,1)=P(1,0)`; then :math:`\pi=(\tfrac12,\tfrac12)` and the reversed chain is :math:`P` too).

    Then every side's optimum is symmetric in the pair budgets, :math:`F_s(u,v)=F_s(v,u)`, and so is the
    two-sided objective over the split (docs/beyond_local.md, §3, "Symmetric chains").
    """
    if chain.k != 2:
        return False
    P = chain.exact_transition()
    return P[0][1] == P[1][0]


class _RotatedBoxes(_SplitBoxes):
    r"""The split search of a swap-symmetric binary chain (:func:`swap_symmetric`) in rotated coordinates.

    A split :math:`(u,v)=(a(0,1),a(1,0))` is written :math:`(s,d)` with :math:`u=s-d`, :math:`v=s+d`; by the
    symmetry only :math:`d\ge0` needs searching.  Boxes are axis-parallel in :math:`(s,d)`: where a side's
    optimal basis changes along a line parallel to the diagonal (the two pairs' budgets trade places
    there), a box is cut across that line only and stays long along it.  Each corner's budgets are raised
    to at least the domain's lower end (``lo``): :math:`e^{\max(\text{affine},\,\ell)}` is convex along every
    line, so the interpolated bound (:mod:`redactopt.solvers.split_bound`) holds, and the raised budgets
    only enlarge each side's value.  Boxes that miss the domain are dropped.  Used only when no jump budget
    of a side lies inside the domain (jump lines would cross the rotated boxes).
    """

    def __init__(self, left: _SideOracle, right: _SideOracle, eps: float) -> None:
        super().__init__(left, right, eps)
        lo, hi = float(self.lo0[0]), float(self.hi0[0])
        self.ulo, self.uhi = lo, hi
        # d up to half the domain's width (rounded up: the box must cover the domain's far corner)
        half = 0.5 * (hi - lo)
        if 2 * Fraction(half) < Fraction(hi) - Fraction(lo):
            half = math.nextafter(half, math.inf)
        self.lo0, self.hi0 = np.array([lo, 0.0]), np.array([hi, half])
        self.cuts = [[], []]

    @staticmethod
    def applies(left: _SideOracle, right: _SideOracle, eps: float) -> bool:
        if not (swap_symmetric(left.spec.chain) and right.spec.chain is left.spec.chain):
            return False
        lo, hi, cuts = _split_domain(left.spec, right.spec, eps)
        if lo[0] != lo[1] or hi[0] != hi[1] or not hi[0] > lo[0]:
            return False
        return not any(lo[0] < t < hi[0] for c in cuts for t in c)

    @staticmethod
    def uv(z: np.ndarray) -> np.ndarray:
        """The split ``(u, v)`` of a point ``(s, d)`` (floats: for the search's guidance and the design)."""
        return np.array([z[0] - z[1], z[0] + z[1]])

    def _left(self, u: Fraction, v: Fraction) -> tuple:
        lo = Fraction(self.ulo)
        return max(u, lo), max(v, lo)

    def _right(self, u: Fraction, v: Fraction) -> tuple:
        lo = self.F - Fraction(self.uhi)
        return max(self.F - u, lo), max(self.F - v, lo)

    def lb(self, z: np.ndarray) -> tuple:
        s, d = Fraction(float(z[0])), Fraction(float(z[1]))  # the exact image of the point, no rounding
        return self._left(s - d, s + d)

    def rb(self, z: np.ndarray) -> tuple:
        s, d = Fraction(float(z[0])), Fraction(float(z[1]))
        return self._right(s - d, s + d)

    def inside(self, z: np.ndarray) -> bool:
        u = self.uv(z)
        return bool(self.ulo <= u[0] <= self.uhi and self.ulo <= u[1] <= self.uhi and z[1] >= 0)

    def meets(self, lo: np.ndarray, hi: np.ndarray) -> bool:
        r"""Whether the box meets the domain :math:`0\le d\le\min(s-\ell,h-s)` (its best ``s``: nearest the middle)."""
        mid = 0.5 * (self.ulo + self.uhi)
        s = min(max(mid, lo[0]), hi[0])
        return bool(lo[1] <= min(s - self.ulo, self.uhi - s) + 1e-12)

    def value(self, z: np.ndarray) -> float:
        if not self.inside(z):
            return -math.inf
        return self.left.upper(self.lb(z))[1] + self.right.upper(self.rb(z))[1]

    def ub(self, lo: np.ndarray, hi: np.ndarray) -> float:
        left, right, lb, rb = self.left, self.right, self.lb, self.rb
        S0, S1, D0, D1 = (Fraction(float(v)) for v in (lo[0], hi[0], lo[1], hi[1]))
        # monotone: over the box u = s - d <= s+ - d-, v = s + d <= s+ + d+ (the left side's largest budgets)
        # and u >= s- - d+, v >= s- + d- (the right side's largest), exactly
        mono = math.nextafter(left.upper(self._left(S1 - D0, S1 + D1))[0]
                              + right.upper(self._right(S0 - D1, S0 + D0))[0], math.inf)
        free, data, best = _corner_interpolation(left, right, lb, rb, lo, hi)
        if data is None:
            return mono
        return min(mono, math.nextafter(best, math.inf))


def _corner_interpolation(left: _SideOracle, right: _SideOracle, lb: Any, rb: Any, lo: np.ndarray,
                          hi: np.ndarray) -> tuple[list[int], dict | None, float]:
    """The interpolated-dual bound of a box with one or two free dimensions (:func:`interpolated_bound` on
    the sides' dual data at its corners): ``(free, corner data, bound)``; data ``None`` where it does not
    apply (no or more than two free dimensions, or a corner without dual data)."""
    free = [int(j) for j in np.flatnonzero(hi > lo)]
    if not 1 <= len(free) <= 2:
        return free, None, math.inf
    data = {c: (left.dual_data(lb(a)), right.dual_data(rb(a))) for c, a in _corners(lo, hi, free)}
    if any(d is None for pair in data.values() for d in pair):
        return free, None, math.inf
    best = interpolated_bound({c: d[0] for c, d in data.items()}, {c: d[1] for c, d in data.items()},
                              free, GRID1 if len(free) == 1 else GRID2)
    return free, data, best


def _branch_and_bound(left: _SideOracle, right: _SideOracle, eps: float, tol_count: float,
                      deadline: float, max_boxes: int) -> dict:
    r"""Branch and bound over the split (module docstring): the best split found and a proven bound over all splits.

    Boxes are bounded by :class:`_SplitBoxes` and cut :math:`\pm\eta` around the budgets where a side
    jumps (:func:`_split_domain`), so every other box sees continuous sides and closes.

    A swap-symmetric chain (:func:`swap_symmetric`, no jump inside the domain) is searched in rotated
    coordinates (:class:`_RotatedBoxes`) when the seed's best split lies inside the domain, axis-parallel
    when it lies at the domain's edge (the edges ``u = l``, ``v = h`` cut rotated boxes obliquely, and the
    sides' values beyond them keep those boxes open); if the first search has not closed the gap by 90 %
    of the time, the other one runs in the rest.  Both bounds are proofs; the lower one is returned.
    """
    with _until(deadline):
        return _branch_and_bound_within(left, right, eps, tol_count, deadline, max_boxes)


def _branch_and_bound_within(left: _SideOracle, right: _SideOracle, eps: float, tol_count: float,
                             deadline: float, max_boxes: int) -> dict:
    """:func:`_branch_and_bound`, every LP ending by ``deadline``."""
    t0 = time.monotonic()
    sb = _SplitBoxes(left, right, eps)
    lo, hi = sb.lo0.copy(), sb.hi0.copy()
    share = 0.2 if int(np.sum(hi > lo)) <= 2 else 0.5
    seed_end = t0 + share * max(0.0, deadline - t0)
    if not _RotatedBoxes.applies(left, right, eps):
        best_v, best_a = _seed(sb.value, lo, hi, eps, seed_end)
        return dict(_search(sb, best_v, best_a, tol_count, deadline, max_boxes), rotated=[False])
    # fresh oracles for the rotated search: its warm starts then come from its own points (a degenerate LP's
    # dual point depends on the start, and the interpolated bound is only as good as its corners agree)
    rb = _RotatedBoxes(_SideOracle(left.spec, left.W), _SideOracle(right.spec, right.W), eps)
    rz_v, rz = _seed(rb.value, rb.lo0, rb.hi0, eps, seed_end, floor=1e-7)
    ba = np.clip(rb.uv(np.array(rz)), lo, hi)
    margin = 0.01 * float(np.max(hi - lo, initial=0.0))
    interior = bool(np.all(ba - lo > margin) and np.all(hi - ba > margin))
    out, runs = None, []
    for i, box in enumerate((rb, sb) if interior else (sb, rb)):
        end = deadline if i else time.monotonic() + 0.9 * max(0.0, deadline - time.monotonic())
        if box is rb:
            bv, bz = (rz_v, rz) if i == 0 else _seed(rb.value, rb.lo0, rb.hi0, eps, time.monotonic(),
                                                      start=np.array(rz))
        else:
            bv, bz = _seed(sb.value, lo, hi, eps, seed_end if i == 0 else time.monotonic(), start=ba)
        res = _search(box, bv, bz, tol_count, end, max_boxes)
        if box is rb:
            res["split"] = np.clip(rb.uv(res["split"]), rb.ulo, rb.uhi)
        runs.append(box is rb)
        if out is None:
            out = res
        else:
            out = {"split": out["split"] if out["value"] >= res["value"] else res["split"],
                   "value": max(out["value"], res["value"]), "bound": min(out["bound"], res["bound"]),
                   "boxes": out["boxes"] + res["boxes"], "stopped": res["stopped"], "heap": res["heap"]}
        if not res["stopped"]:
            break
    return dict(out, rotated=runs, solves=rb.left.solves + rb.right.solves)


def _search(sb: _SplitBoxes, best_v: float, best_a: tuple, tol_count: float, deadline: float, max_boxes: int) -> dict:
    """The branch and bound loop of :func:`_branch_and_bound` over ``sb``'s domain from an incumbent."""
    lo, hi, eta = sb.lo0.copy(), sb.hi0.copy(), sb.eta
    rotated = isinstance(sb, _RotatedBoxes)
    sb.best = best_v
    heap, finals, count, boxes = [(-sb.ub(lo, hi), 0, lo, hi)], [], 1, 1
    stopped = False
    records = sb.left.spec.m + sb.right.spec.m + 1  # n: the gap per record, as the certificate states it
    while heap:
        ub, _, blo, bhi = heap[0]
        if _progress.active():  # each box costs linear programs: one report per box is nothing
            _progress.report("scan split search", boxes, None, note=f"gap {(-ub - best_v) / records:.2g}")
        if -ub - best_v <= tol_count:
            break
        if time.monotonic() > deadline or boxes >= max_boxes:
            stopped = True
            break
        heapq.heappop(heap)
        if float(np.max(bhi - blo)) <= 4 * eta:
            finals.append(-ub)
            continue
        for (clo, chi), ub_child in sb.split(blo, bhi, -ub):
            ub_child = min(ub_child, -ub)  # the parent's bound holds for its children (a timed-out LP's is looser)
            if rotated and not sb.meets(clo, chi):  # no split of the domain in this box
                continue
            free = [int(j) for j in np.flatnonzero(chi > clo)]
            # the interpolated bound solved both sides at every corner: their values cost nothing more
            points = [a for _, a in _corners(clo, chi, free)] if 1 <= len(free) <= 2 else [(clo + chi) / 2]
            for point in points:
                v = sb.value(point)
                if v > best_v:
                    best_v, best_a = v, tuple(point)
                    sb.best = best_v
            count += 1
            boxes += 1
            heapq.heappush(heap, (-ub_child, count, clo, chi))
    bound = max([-e[0] for e in heap] + finals + [best_v])
    return {"split": np.array(best_a), "value": best_v, "bound": bound, "boxes": boxes, "stopped": stopped,
            "heap": heap}


def _snapped_splits(left: SideSpec, right: SideSpec, a: np.ndarray, eps: float) -> list[np.ndarray]:
    r"""The split and its variants moved onto the near jump budgets, on the side where the jump is taken.

    A side jumps where a first-record event of ratio :math:`\rho=T(x,c)/T(x',c)` becomes admissible
    (budget :math:`\ge\log\rho`, decided exactly); a search point within 1e-9 nats of such a budget,
    on the wrong side of it by rounding, is moved to the nearest double on the right side.
    """
    F = Fraction(eps)
    per_pair = []
    for j, (x, y) in enumerate(pairs_of(left.Q.shape[0])):
        opts = [float(a[j])]
        for spec, is_left in ((left, True), (right, False)):
            T = side_chain_exact(spec.chain, spec.side)
            for c in range(len(T)):
                if T[x][c] == 0 or T[y][c] == 0:
                    continue
                rho = T[x][c] / T[y][c]
                t = math.log(float(rho))
                v = t if is_left else eps - t
                if 0.0 <= v <= eps and abs(v - a[j]) <= 1e-9:
                    for _ in range(64):  # nudge by ulps until the event is admissible exactly
                        bud = Fraction(v) if is_left else F - Fraction(v)
                        if ratio_within(rho, bud) is True:
                            opts.append(v)
                            break
                        v = math.nextafter(v, math.inf if is_left else -math.inf)
        per_pair.append(sorted(set(opts)))
    combos = list(itertools.product(*per_pair))[:16]
    return [np.array(cmb) for cmb in combos]


def _two_sided_design(left: _SideOracle, right: _SideOracle, a: np.ndarray, eps: float,
                      loss: float = math.inf, deadline: float = math.inf) -> tuple[np.ndarray, dict]:
    """Both sides designed at the split (and its snapped variants, :func:`_snapped_splits`): the most useful pair."""
    best: tuple | None = None
    for cand in _snapped_splits(left.spec, right.spec, a, eps):
        if np.any(cand < 0) or np.any(cand > eps):
            continue
        if best is not None and time.monotonic() > deadline:
            break
        tl = side_design(left, tuple(Fraction(float(v)) for v in cand), loss, deadline)
        tr = side_design(right, tuple(Fraction(eps) - Fraction(float(v)) for v in cand), loss, deadline)
        u = side_count(left.spec, tl) + side_count(right.spec, tr)
        if best is None or u > best[0]:
            best = (u, cand, {"left": tl, "right": tr})
    assert best is not None
    return best[1], best[2]


def _other_splits(left: _SideOracle, right: _SideOracle, a: np.ndarray, tables: dict, value: float, eps: float,
                  tol_count: float, deadline: float) -> tuple[np.ndarray, dict]:
    """Where the sides designed at the search's split publish more than ``tol_count`` less than the LPs promised
    there, the same at splits moved into the domain: the most useful pair.

    The LP values guide the search only; at a budget within the LP's tolerance of 0 (a split giving one side
    all of a pair's budget, the other 1e-16) that side's LP is feasible to the tolerance and its design, judged
    strictly, publishes nothing (α = 1e-12, β = 1 - 1e-12, holder scan: 0.33 where 0.83 is possible).
    """
    got = side_count(left.spec, tables["left"]) + side_count(right.spec, tables["right"])
    if got >= value - tol_count:
        return a, tables
    lo, hi, _ = _split_domain(left.spec, right.spec, eps)
    alts = [np.clip(a, lo + d * (hi - lo), hi - d * (hi - lo)) for d in (1e-6, 1e-3, 0.05)]
    alts.append(np.clip(np.full_like(a, eps / 2), lo, hi))
    for alt in alts:
        if time.monotonic() > deadline:
            break
        cand, tb = _two_sided_design(left, right, alt, eps, tol_count / 16, deadline)
        u = side_count(left.spec, tb["left"]) + side_count(right.spec, tb["right"])
        if u > got:
            a, tables, got = cand, tb, u
    return a, tables


def _assemble(kc: KChain, n: int, p: int, holder: bool, tables: dict) -> ScanMechanism:
    return ScanMechanism(kc, n, p, tables.get("left"), tables.get("right"), holder=holder)


def propose_scan(chain: object, n: int, *, eps: float, p: int = 0, holder: bool = False, tol: float = 9e-7,
                time_limit: float = 10.0, max_boxes: int = 20000) -> ScanProposal:
    r"""The optimal scan mechanism (holder scan with ``holder=True``) and a proven bound over all of them,
    proposed for :func:`redactopt.engine.class_judge.design_scan` to judge.

    Parameters
    ----------
    chain : KChain or MarkovChain
    n, p : int
        Records and the 0-based private record.
    eps : float
        Budget (nats).
    tol : float
        Target gap on the utility (the search stops when the bound is within it, or at ``time_limit``).

    Returns
    -------
    ScanProposal
        The LPs' mechanism (its sides' tables), the all-redacting fallback, and the bound on the
        expected count: a verified dual point for each side (branch and bound over the split for two
        sides, also bounded by the coupled-scan LP when the search stops early).
    """
    t0 = time.monotonic()
    with _until(t0 + time_limit):  # no linear program outlives the time limit
        return _propose_scan(chain, n, eps=eps, p=p, holder=holder, tol=tol, time_limit=time_limit,
                             max_boxes=max_boxes, t0=t0)


def _first_window(kc: KChain, eps: float) -> int:
    r"""The window :func:`choose_window` starts from: 16, or on a slowly mixing binary chain the distance
    :math:`\Delta^\star(\epsilon)` beyond which one record's influence is within the whole budget (a scan
    must read about that far before it can stop for sure; starting there skips the doublings below it,
    each of which costs a pair of programs of the time limit's tenth)."""
    if kc.k != 2 or not kc.binary:
        return 16
    from redactopt.model.influence import delta_star

    try:
        d = int(delta_star(kc, eps))
    except (ValueError, OverflowError, ZeroDivisionError):
        return 16
    return max(16, min(d, 4096))


def _propose_scan(chain: object, n: int, *, eps: float, p: int, holder: bool, tol: float, time_limit: float,
                  max_boxes: int, t0: float) -> ScanProposal:
    """:func:`propose_scan` from ``t0`` on."""
    kc = as_kchain(chain)
    if not (isinstance(eps, (int, float)) and math.isfinite(eps) and eps > 0):
        raise ValueError(f"eps must be a finite number > 0, got {eps!r}")
    mech0 = ScanMechanism(kc, n, p, None if p == 0 else np.zeros((p, kc.k, kc.k)),
                          None if p == n - 1 else np.zeros((n - 1 - p, kc.k, kc.k)), holder=holder)
    specs = {s: SideSpec(kc, s, mech0.side_length(s), holder) for s in ("left", "right") if mech0.side_length(s)}
    half = len(specs) == 2 and swap_symmetric(kc)
    # the window grows for at most a tenth of the time per side (a shorter one only loosens the bound)
    start = _first_window(kc, eps)
    with _progress.phase("scan window", sub=True):
        orcs = {s: _SideOracle(sp_, choose_window(sp_, eps, tol * n / 8, start=start, half=half,
                                                  deadline=time.monotonic() + 0.1 * time_limit))
                for s, sp_ in specs.items()}
    K = len(pairs_of(kc.k))
    extra_solves = 0
    if len(orcs) == 1:
        (s, orc), = orcs.items()
        b = tuple(Fraction(eps) for _ in range(K))
        bound, split, boxes, stopped = orc.upper(b)[0], {}, 0, False
        tables = {s: side_design(orc, b, tol * n / 4, t0 + 0.95 * time_limit)}
    elif not orcs:
        bound, split, boxes, stopped, tables = 0.0, {}, 0, False, {}
    else:
        # the split search gets 60 % of the time (the coupled bound to 75 %): the two sides' designs (to 90 %) and the judge follow it
        # the target gap tol * n is shared: 3/4 to the split search, 1/16 to each side's design
        with _progress.phase("scan split search", sub=True):
            bb = _branch_and_bound(orcs["left"], orcs["right"], eps, 0.75 * tol * n, t0 + 0.6 * time_limit,
                                   max_boxes)
        a = bb["split"]
        bound, boxes, stopped = bb["bound"], bb["boxes"], bb["stopped"]
        extra_solves = bb.get("solves", 0)
        left = t0 + 0.75 * time_limit - time.monotonic()
        if stopped and not holder and left > 0:  # every scan is a coupled scan: that LP's bound holds too
            from redactopt.solvers.coupled_lp import coupled_scan_bound

            with _progress.phase("coupled bound", sub=True):
                coupled = coupled_scan_bound(kc, n, eps=eps, p=p, time_limit=left)[0] * n
            bound = min(bound, math.nextafter(coupled, math.inf))
        design = orcs
        if half:  # the half-budget window was judged against a sure stop at 2 W: design on 1.5 W at once (at
            # n = 10^3 a sure stop there loses ~2e-6 where one at W lost 3e-3; side_design widens it if need be)
            design = {s: _SideOracle(o.spec, min(o.spec.m, o.W + o.W // 2)) if o.W < o.spec.m else o
                      for s, o in orcs.items()}
        with _progress.phase("scan sides", sub=True):
            a, tables = _two_sided_design(design["left"], design["right"], a, eps, tol * n / 16,
                                          t0 + 0.9 * time_limit)
            a, tables = _other_splits(design["left"], design["right"], a, tables, bb["value"], eps, tol * n,
                                      t0 + 0.9 * time_limit)
        extra_solves += sum(o.solves for s, o in design.items() if o is not orcs[s])
        split = {pr: float(v) for pr, v in zip(pairs_of(kc.k), a)}
    mech = _assemble(kc, n, p, holder, tables)
    info = {"W": {s: o.W for s, o in orcs.items()}, "lp_solves": sum(o.solves for o in orcs.values()) + extra_solves,
            "boxes": boxes, "seconds": time.monotonic() - t0}
    bound = float(bound) if bound == 0 else math.nextafter(float(bound), math.inf)  # 0 only when no record may be published
    return ScanProposal(mech, mech0, bound, split, bool(stopped), info)


# the split search's machinery under public names, shared with a run's scan (solvers/run_scan.py searches its
# sides' budgets the same way, docs/mathematics.md §7d)
SideOracle = _SideOracle
SplitBoxes = _SplitBoxes
search_boxes = _search
seed_split = _seed
corner_interpolation = _corner_interpolation
first_window = _first_window
until = _until
