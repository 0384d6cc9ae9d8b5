r"""Certified optimum of a *run* of adjacent private records: the side frontiers seen through the run.

A run :math:`p_1 < \dots < p_r` (:math:`p_{j+1}=p_j+1`) is redacted whatever the mechanism.  Given
:math:`X_{p_j}` the records left of the run depend on it only through the boundary record
:math:`X_{p_1}`, those right of it only through :math:`X_{p_r}` (Markov property), and the
mechanism is local, so for every output :math:`y=(y_\ell,\bot^r,y_r)`

.. math:: \Pr(y\mid X_{p_j}=x)=\Big(\sum_u K^\ell_j[x,u]\,g_\ell(y_\ell)_u\Big)\Big(\sum_w K^r_j[x,w]\,g_r(y_r)_w\Big),

with :math:`K^\ell_j[x,u]=\Pr(X_{p_1}=u\mid X_{p_j}=x)` and :math:`K^r_j[x,w]=\Pr(X_{p_r}=w\mid X_{p_j}=x)`
the *contractions* through the redacted records between (products of the steps' matrices,
:func:`contractions`) and :math:`g_s` the side's likelihoods about its boundary record.  With
:math:`\rho_s=g_s[0]/g_s[1]` the likelihood ratio about :math:`X_{p_j}` is
:math:`\Phi_{K^\ell_j}(\rho_\ell)\,\Phi_{K^r_j}(\rho_r)`, :math:`\Phi_K(\rho)=(K_{00}\rho+K_{01})/(K_{10}\rho+K_{11})`,
a Möbius map that is monotone (its sign is that of :math:`\det K`).  The two sides' outputs
combine freely, so each side enters only through its pair of directional leakages
:math:`(A_s, B_s)` about its boundary record (the largest log-ratio in favour of 0 and of 1 —
the quantities of the one-record frontier, :mod:`redactopt.solvers.frontier`), and record
:math:`p_j` is private iff, for both directions,

.. math:: h^\ell_j(\cdot)+h^r_j(\cdot)\le\epsilon,\qquad h(x)=|\log\Phi_K(e^{\pm x})|,

where each side contributes one of its two coordinates to each direction.  Which one is fixed
by the sign of :math:`\det K`; the product of the two sides' signs is the sign of the
determinant of the whole run (the product of the steps' determinants), the same for every
record: so each constraint pairs the left ``a`` with one right coordinate and the left ``b``
with the other (:class:`RunMaps`).  Hence the run's optimum is

.. math:: \max_{a,b}\;F_\ell(a,b)+F_r(\tau_0(a),\tau_1(b))\quad\text{(coordinates swapped on the right when the run's determinant is negative),}

:math:`\tau_i` the largest partner budget every record allows (:class:`PairMap`, non-increasing),
and the one-record problem is the special case :math:`r=1`, :math:`\tau(x)=\epsilon-x`.  The search
is the frontier's (:func:`redactopt.solvers.frontier.solve_two_sided`) with :math:`\epsilon-x`
replaced by the maps: the combinations whose pinned threads lie in different pairs in closed form
over pin steps, the others by a one-dimensional branch and bound (:func:`solve_run`), with the
maps rounded outward for the bound.  Proofs: docs/mathematics.md §7c.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from redactopt.model.chain import MarkovChain, check_problem
from redactopt.model.influence import delta_star
from redactopt.solvers.base import Candidate
from redactopt.solvers.frontier import (
    ETA,
    G_LB,
    G_UB0,
    G_UB_MAX,
    REL,
    Geo,
    Tables,
    TwoSided,
    best_side_policy,
    cell_bound,
    pinned_value,
    side_design,
    side_tables,
    side_value,
    solve_two_sided,
)

__all__ = ["Contraction", "contractions", "chain_contractions", "stack", "log_phi", "coordinate_leak", "budget_for_leak",
           "PairMap", "RunMaps", "run_maps", "solve_run", "RunAnalysis", "run_analysis", "propose_run",
           "run_leakages", "run_bound"]

#: Relative error allowed for the entries and determinants of a contraction (products of at most a few
#: thousand 2x2 stochastic matrices of non-negative entries lose about 2 ulps per factor).
CONTRACTION_RTOL = 1e-12


# ----------------------------------------------------------------------------
# the contraction through the run
# ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Contraction:
    r""":math:`K[x,u]=\Pr(X_b=u\mid X_p=x)` from a private record ``p`` of a run to a boundary record ``b``.

    ``det`` is :math:`\det K`, kept as the product of the steps' determinants (accurate where
    :math:`K_{00}-K_{10}` would cancel).
    """

    K: np.ndarray
    det: float


def step_det(M: np.ndarray) -> float:
    r"""Determinant of a 2x2 stochastic matrix, :math:`M_{00}-M_{10}` (rows summing to 1), correctly rounded."""
    return math.fsum((float(M[0, 0]), -float(M[1, 0])))


def contractions(forward: Sequence[np.ndarray], backward: Sequence[np.ndarray],
                 forward_dets: Sequence[float] | None = None,
                 backward_dets: Sequence[float] | None = None) -> tuple[list[Contraction], list[Contraction]]:
    r"""Every record's contractions to the run's two boundary records, from the steps' matrices.

    For a run of ``r = len(forward) + 1`` records, ``forward[i]`` is :math:`\Pr(X_{i+1}\mid X_i)`
    and ``backward[i]`` is :math:`\Pr(X_i\mid X_{i+1})` (run offsets; rows the conditioning value).
    Returns ``(left, right)``: ``left[j]`` to the first record,
    :math:`K^\ell_j=B_{j-1}B_{j-2}\cdots B_0`, and ``right[j]`` to the last,
    :math:`K^r_j=F_jF_{j+1}\cdots F_{r-2}` (Chapman–Kolmogorov; the identity for the boundary
    record itself).  A chain whose matrix varies per step passes its own steps; the
    determinants default to :func:`step_det` of each step.
    """
    r = len(forward) + 1
    if len(backward) != r - 1:
        raise ValueError(f"forward and backward must both hold r - 1 steps, got {len(forward)} and {len(backward)}")
    fd = [step_det(M) for M in forward] if forward_dets is None else list(forward_dets)
    bd = [step_det(M) for M in backward] if backward_dets is None else list(backward_dets)
    left = [Contraction(np.eye(2), 1.0)]
    for j in range(1, r):
        prev = left[-1]
        left.append(Contraction(np.asarray(backward[j - 1], dtype=float) @ prev.K, bd[j - 1] * prev.det))
    right = [Contraction(np.eye(2), 1.0)]
    for j in range(r - 2, -1, -1):
        nxt = right[0]
        right.insert(0, Contraction(np.asarray(forward[j], dtype=float) @ nxt.K, fd[j] * nxt.det))
    return left, right


def chain_contractions(chain: MarkovChain, r: int) -> tuple[list[Contraction], list[Contraction]]:
    r""":func:`contractions` of a run of ``r`` records of a stationary two-state chain.

    Forward steps are :math:`P`, backward ones the time reversal :math:`\tilde P` (which is
    :math:`P` for two states), each determinant :math:`\lambda=1-\alpha-\beta` correctly rounded.
    """
    P = np.asarray(chain.transition_matrix, dtype=float)
    B = np.asarray(chain.reversed_matrix(), dtype=float)
    lam = float(chain.lam)
    return contractions([P] * (r - 1), [B] * (r - 1), [lam] * (r - 1), [lam] * (r - 1))


def stack(cs: Sequence[Contraction]) -> Contraction:
    """Contractions stacked into one (``K`` of shape ``(J, 2, 2)``, ``det`` of shape ``(J,)``): the functions below
    then evaluate every one of them at once (results of shape ``(J, N)`` for ``N`` arguments)."""
    return Contraction(np.stack([c.K for c in cs]), np.array([c.det for c in cs], dtype=float))


def _entries(c: Contraction) -> tuple[np.ndarray, ...]:
    """``K00, K01, K10, K11, det`` shaped to broadcast against a 1-d argument (a column per stacked contraction)."""
    K, det = np.asarray(c.K, dtype=float), np.asarray(c.det, dtype=float)
    if K.ndim == 2:
        return K[0, 0], K[0, 1], K[1, 0], K[1, 1], det
    return tuple(K[:, i, j][:, None] for i, j in ((0, 0), (0, 1), (1, 0), (1, 1))) + (det[:, None],)


def log_phi(c: Contraction, t: np.ndarray) -> np.ndarray:
    r""":math:`\log\Phi_K(e^t)`: the log-ratio about :math:`X_p` of a boundary log-ratio ``t``.

    :math:`\Phi_K(e^t)-1=\det K\,(e^t-1)/(K_{10}e^t+K_{11})` (rows of ``K`` sum to 1), evaluated
    through ``expm1``/``log1p`` (no cancellation near ``t = 0``), and from the log-sums of the
    numerator and denominator where :math:`\Phi_K` is far below 1.
    """
    t = np.asarray(t, dtype=float)
    k00, k01, k10, k11, det = _entries(c)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        pos = t > 0
        et = np.exp(np.where(pos, -t, t))  # e^{-|t|}: never overflows
        # det (e^t - 1) / (K10 e^t + K11), multiplied through by e^{-t} where t > 0
        arg = np.where(pos, det * -np.expm1(-t) / (k10 + k11 * et), det * np.expm1(t) / (k10 * et + k11))
        near = np.log1p(arg)
        far = np.logaddexp(np.log(k00) + t, np.log(k01)) - np.logaddexp(np.log(k10) + t, np.log(k11))
    return np.where(arg > -0.5, near, far)


def coordinate_leak(c: Contraction, s: int, x: np.ndarray) -> np.ndarray:
    r""":math:`|\log\Phi_K(e^{s x})|`: what a side budget ``x >= 0`` of coordinate ``s`` adds to a record's leakage.

    ``s = +1`` is the side's largest log-ratio in favour of 0 (``a``), ``s = -1`` the one in
    favour of 1 (``b``); the direction it adds to is :math:`\operatorname{sign}(\det K)\,s`.
    """
    return np.abs(log_phi(c, s * np.asarray(x, dtype=float)))


def budget_for_leak(c: Contraction, s: int, z: np.ndarray, *, outward: bool) -> np.ndarray:
    r"""The budget ``x >= 0`` of coordinate ``s`` with :math:`|\log\Phi_K(e^{sx})|=z` (inverse of :func:`coordinate_leak`).

    :math:`e^{sx}-1=N/(\det K-N K_{10})`, :math:`N=\operatorname{expm1}(\sigma z)`,
    :math:`\sigma=\operatorname{sign}(\det K)\,s`.  ``inf`` where no budget reaches ``z`` (the
    coordinate saturates below it).  ``outward``: an upper bound of the exact inverse — the
    denominator is shrunk by its rounding error (relative :data:`CONTRACTION_RTOL` of its
    terms; ``inf`` where that reaches 0) and the result raised by :data:`REL`.
    """
    z = np.maximum(np.asarray(z, dtype=float), 0.0)
    _, _, k10, _, det = _entries(c)
    sig = np.where(det > 0, 1.0, -1.0) * s
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        N = np.expm1(sig * z)
        den = det - N * k10
        if outward:
            err = CONTRACTION_RTOL * (np.abs(det) + np.abs(N) * k10) + 1e-300
            den = np.where(np.abs(den) > err, den - np.sign(den) * err, 0.0)
        ratio = N / den  # e^{s x} - 1
        ok = (z == 0.0) | ((np.sign(ratio) == s) & (ratio > -1.0) & np.isfinite(ratio))
        x = np.where(ok, np.abs(np.log1p(np.where(ok, ratio, 0.0))), np.inf)
    return x * (1.0 + REL) if outward else x


# ----------------------------------------------------------------------------
# the budget maps of the run's two pairs of coordinates
# ----------------------------------------------------------------------------
@dataclass(frozen=True)
class PairMap:
    r"""One pair of coordinates and the run's constraints on it: left budget ``x`` of coordinate ``sl``, right
    budget ``y`` of coordinate ``sr``, and for every record ``j`` of the run
    :math:`h^\ell_j(x)+h^r_j(y)\le\epsilon` (:func:`coordinate_leak`; ``left``/``right`` stacked, one
    row per record).

    ``caps``: the largest budget that matters on each side (a side's log-ratios about its boundary
    record lie in the hull of the one-step ratios, so a larger budget is this one).
    """

    left: Contraction
    right: Contraction
    sl: int
    sr: int
    caps: tuple[float, float]

    def fwd(self, x: np.ndarray, eps: float, *, outward: bool) -> np.ndarray:
        """The largest right budget every record allows with left budget ``x`` (non-increasing in ``x``)."""
        return _partner(self.left, self.sl, self.right, self.sr, x, eps, self.caps, outward)

    def bwd(self, y: np.ndarray, eps: float, *, outward: bool) -> np.ndarray:
        """The largest left budget every record allows with right budget ``y``."""
        return _partner(self.right, self.sr, self.left, self.sl, y, eps, self.caps[::-1], outward)

    def binding(self, eps: float, points: int = 513) -> PairMap:
        """The map with only the records whose constraint comes within 1e-6 (relative) of the frontier on a grid
        of each coordinate (where the frontier is below the cap), the run's two end records always among them.

        Fewer constraints: a relaxation, so every bound computed with it still holds (the
        search's designs take their final budgets from the full map)."""
        J = self.left.det.size
        keep = np.zeros(J, bool)
        keep[[0, J - 1]] = True
        for src, s_src, dst, s_dst, caps in ((self.left, self.sl, self.right, self.sr, self.caps),
                                             (self.right, self.sr, self.left, self.sl, self.caps[::-1])):
            v = np.linspace(0.0, caps[0], points)
            g = _each_partner(src, s_src, dst, s_dst, v, eps, caps, False)
            gmin = g.min(axis=0)
            on = (gmin >= 0.0) & (gmin < caps[1])  # the frontier is constrained there, by a feasible record
            keep |= np.any((g <= gmin + 1e-6 * gmin + 1e-12) & on, axis=1)
        idx = np.flatnonzero(keep)
        sub = (lambda c: Contraction(c.K[idx], c.det[idx]))
        return PairMap(sub(self.left), sub(self.right), self.sl, self.sr, self.caps)


def _each_partner(src: Contraction, s_src: int, dst: Contraction, s_dst: int, v: np.ndarray, eps: float,
                  caps: tuple[float, float], outward: bool) -> np.ndarray:
    r"""Per record (rows) and argument (columns): :math:`(h^{dst}_j)^{-1}(\epsilon-h^{src}_j(v))`, ``-1`` where ``v``
    alone breaks record ``j``'s budget."""
    v = np.minimum(np.atleast_1d(np.asarray(v, dtype=float)), caps[0])
    h = coordinate_leak(src, s_src, v)
    z = (eps * (1.0 + REL) - h * (1.0 - REL)) if outward else eps - h
    return np.where(z >= 0.0, budget_for_leak(dst, s_dst, z, outward=outward), -1.0)


def _partner(src: Contraction, s_src: int, dst: Contraction, s_dst: int, v: np.ndarray, eps: float,
             caps: tuple[float, float], outward: bool) -> np.ndarray:
    r""":math:`\min_j (h^{dst}_j)^{-1}(\epsilon-h^{src}_j(v))` capped, for :class:`PairMap` (0 where ``v`` is infeasible)."""
    cap = caps[1] * (1.0 + REL) if outward else caps[1]
    g = _each_partner(src, s_src, dst, s_dst, v, eps, caps, outward).min(axis=0)
    return np.clip(g, 0.0, cap)


@dataclass(frozen=True)
class RunMaps:
    r"""The run's two pairs: ``pairs[0]`` holds the left ``a`` (:math:`A_\ell`), ``pairs[1]`` the left ``b``.

    ``sigma`` is the sign of the run's determinant: ``+1`` pairs ``a`` with ``a`` and ``b`` with ``b``,
    ``-1`` pairs ``a`` with the right ``b`` and ``b`` with the right ``a``.
    """

    pairs: tuple[PairMap, PairMap]
    sigma: int

    def right_pair(self, thread: str) -> int:
        """The pair holding the right side's coordinate of ``thread`` (``"A"``: ``a``, ``"B"``: ``b``)."""
        return (0 if thread == "A" else 1) if self.sigma > 0 else (1 if thread == "A" else 0)

    def right_budgets(self, a: np.ndarray, b: np.ndarray, eps: float, *,
                      outward: bool) -> tuple[np.ndarray, np.ndarray]:
        """The right side's ``(a, b)`` budgets that left budgets ``(a, b)`` leave (each the largest allowed)."""
        y0 = self.pairs[0].fwd(a, eps, outward=outward)
        y1 = self.pairs[1].fwd(b, eps, outward=outward)
        return (y0, y1) if self.sigma > 0 else (y1, y0)

    def left_max(self, eps: float, *, outward: bool) -> tuple[float, float]:
        """The largest left ``a`` and ``b`` any mechanism can have (the right partner at 0)."""
        return (float(self.pairs[0].bwd(0.0, eps, outward=outward)[0]),
                float(self.pairs[1].bwd(0.0, eps, outward=outward)[0]))

    def binding(self, eps: float) -> RunMaps:
        """Both pairs restricted to their binding records (:meth:`PairMap.binding`): a relaxation."""
        return RunMaps((self.pairs[0].binding(eps), self.pairs[1].binding(eps)), self.sigma)


def run_maps(geo: Geo, left: Sequence[Contraction], right: Sequence[Contraction]) -> RunMaps:
    """:class:`RunMaps` of a run's contractions on a chain whose side geometry is ``geo`` (caps ``geo.D``)."""
    sigma = 1 if left[0].det * right[0].det > 0 else -1
    cap_a, cap_b = geo.D[1], geo.D[0]  # a side's largest log-ratio for 0 / for 1 (the hull's ends)
    cap_r = (cap_a, cap_b) if sigma > 0 else (cap_b, cap_a)
    L, R = stack(left), stack(right)
    return RunMaps((PairMap(L, R, +1, sigma, (cap_a, cap_r[0])), PairMap(L, R, -1, -sigma, (cap_b, cap_r[1]))), sigma)


def run_leakages(left: Sequence[Contraction], right: Sequence[Contraction], side_l: tuple[float, float],
                 side_r: tuple[float, float]) -> np.ndarray:
    r"""The leakage about every record of the run from its sides' directional leakages (the decomposition).

    ``side_s = (A_s, B_s)``: the side's largest log-ratio about its boundary record in favour of 0 and
    of 1 (0 for an empty side).  Record ``j`` leaks
    :math:`\max(\log\max\Phi_\ell+\log\max\Phi_r,\;-\log\min\Phi_\ell-\log\min\Phi_r)`, each extreme of
    :math:`\Phi_{K_j}` over :math:`[e^{-B_s},e^{A_s}]` taken at an end (monotone map).
    """
    out = np.empty(len(left))
    for j, (cl, cr) in enumerate(zip(left, right)):
        terms = []
        for c, (A, B) in ((cl, side_l), (cr, side_r)):
            hi, lo = float(log_phi(c, np.array(A))), float(log_phi(c, np.array(-B)))
            terms.append((max(hi, lo), -min(hi, lo)))
        out[j] = max(terms[0][0] + terms[1][0], terms[0][1] + terms[1][1])
    return out


# ----------------------------------------------------------------------------
# the search over the two sides' budgets
# ----------------------------------------------------------------------------
#: Budgets offered to the designs sit this (relative) factor above a pin threshold.
UP = 1.0 + 1e-12

def pin_thresholds(geo: Geo, m: int, thread: str) -> tuple[np.ndarray, np.ndarray]:
    """A side's pin thresholds of ``thread`` (``c_0..c_m``, and ``0`` for "never", index ``m + 1``), plain and deflated."""
    c = np.concatenate((geo.thresholds(m, +1 if thread == "A" else -1), [0.0])) if m else np.array([0.0])
    return c, np.maximum(0.0, c * (1.0 - REL))


class RunSplit:
    """The best left budgets ``(a, b)`` found so far, valued by the policy tables (records)."""

    def __init__(self, tab_lb: Tables, mL: int, mR: int, maps: RunMaps, epsl: float) -> None:
        self.tab, self.mL, self.mR, self.maps, self.epsl = tab_lb, mL, mR, maps, epsl
        self.amax, self.bmax = maps.left_max(epsl, outward=False)
        self.value, self.a, self.b = -np.inf, 0.0, 0.0

    def values(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Policy-table values of left budgets ``(a, b)`` (clipped to what the run allows), and the budgets."""
        a = np.clip(np.asarray(a, dtype=float), 0.0, self.amax)
        b = np.clip(np.asarray(b, dtype=float), 0.0, self.bmax)
        ar, br = self.maps.right_budgets(a, b, self.epsl, outward=False)
        return side_value(self.tab, self.mL, a, b, "lb") + side_value(self.tab, self.mR, ar, br, "lb"), a, b

    def offer(self, a: np.ndarray, b: np.ndarray) -> None:
        vals, a, b = self.values(a, b)
        if vals.size:
            i = int(np.argmax(vals))
            if vals[i] > self.value:
                self.value, self.a, self.b = float(vals[i]), float(a[i]), float(b[i])


def _left_pair(thread: str) -> int:
    return 0 if thread == "A" else 1


def _opposite_pairs(tab_ub: Tables, best: RunSplit, th: dict, eps: float, xmax: tuple[float, float],
                    combos: list[tuple[str, str]]) -> float:
    """Bound of the combinations whose pinned threads lie in different pairs, in closed form over pin steps.

    Left thread ``wl`` pinned at step ``t1`` needs its budget at least the threshold, which leaves the
    right side's free coordinate (its partner) at most ``fwd`` of it; likewise on the right.
    """
    maps, out = best.maps, -np.inf
    for wl, wr in combos:
        pl, pr = _left_pair(wl), maps.right_pair(wr)
        (cl, cl_dn), (cr, cr_dn) = th["l", wl], th["r", wr]
        ymax = float(maps.pairs[pr].fwd(0.0, eps, outward=True)[0])
        T1 = np.flatnonzero(cl_dn <= xmax[pl])
        T2 = np.flatnonzero(cr_dn <= ymax)
        if not T1.size or not T2.size:
            continue
        r_free = maps.pairs[pl].fwd(cl_dn[T1], eps, outward=True)
        l_free = maps.pairs[pr].bwd(cr_dn[T2], eps, outward=True)
        A1, A2 = np.meshgrid(np.arange(T1.size), np.arange(T2.size), indexing="ij")
        A1, A2 = A1.ravel(), A2.ravel()
        ubv = pinned_value(tab_ub, best.mL, wl, T1[A1], l_free[A2], "ub") + \
            pinned_value(tab_ub, best.mR, wr, T2[A2], r_free[A1], "ub")
        out = max(out, float(ubv.max()))
        pinned = cl[T1[A1]] * UP
        free = maps.pairs[pr].bwd(cr[T2[A2]] * UP, best.epsl, outward=False)
        best.offer(*((pinned, free) if wl == "A" else (free, pinned)))
    return out


@dataclass(frozen=True)
class SamePairs:
    """The combinations whose pinned threads lie in one pair: one problem per left pin step.

    Problem ``i``: left thread ``wl[i]`` pinned at ``t1[i]``, right thread ``wr[i]`` at ``t2[i]`` (the
    earliest the left threshold leaves it: a side's value does not increase with its pin step), the free
    left coordinate in ``[0, xmax[i]]`` of pair ``free[i]``; ``lo``/``hi`` the pinned left budgets offered.
    """

    tab_ub: Tables
    maps: RunMaps
    mL: int
    mR: int
    eps: float
    wl: np.ndarray
    wr: np.ndarray
    t1: np.ndarray
    t2: np.ndarray
    free: np.ndarray
    xmax: np.ndarray
    lo: np.ndarray
    hi: np.ndarray

    @classmethod
    def of(cls, tab_ub: Tables, maps: RunMaps, mL: int, mR: int, th: dict, eps: float, epsl: float,
           xmax: tuple[float, float], combos: list[tuple[str, str]]) -> SamePairs:
        cols: dict[str, list] = {k: [] for k in ("wl", "wr", "t1", "t2", "free", "xmax", "lo", "hi")}
        for wl, wr in combos:
            p = _left_pair(wl)
            (cl, cl_dn), (cr, cr_dn) = th["l", wl], th["r", wr]
            T1 = np.flatnonzero(cl_dn <= xmax[p])
            if not T1.size:
                continue
            ymax = maps.pairs[p].fwd(cl_dn[T1], eps, outward=True)
            T2 = np.array([int(np.flatnonzero(cr_dn <= y)[0]) for y in ymax])  # cr_dn ends in 0
            n = T1.size
            for k, v in (("wl", [wl] * n), ("wr", [wr] * n), ("t1", T1), ("t2", T2), ("free", [1 - p] * n),
                         ("xmax", [xmax[1 - p]] * n), ("lo", cl[T1] * UP),
                         ("hi", maps.pairs[p].bwd(cr[T2] * UP, epsl, outward=False))):
                cols[k].extend(list(v))
        txt = {k: np.array(cols[k], dtype="<U1") for k in ("wl", "wr")}
        ints = {k: np.array(cols[k], dtype=np.int64) for k in ("t1", "t2", "free")}
        flts = {k: np.array(cols[k], dtype=float) for k in ("xmax", "lo", "hi")}
        return cls(tab_ub, maps, mL, mR, eps, **txt, **ints, **flts)

    @property
    def size(self) -> int:
        return int(self.t1.size)

    def bound(self, pid: np.ndarray, x0: np.ndarray, x1: np.ndarray) -> np.ndarray:
        r"""Bound of each cell ``[x0, x1]`` of the free left budget: :math:`\bar f_\ell(x_1)+\bar f_r(\tau(x_0))`."""
        out = np.empty(pid.size)
        for wl in ("A", "B"):
            f = 1 - _left_pair(wl)
            for wr in ("A", "B"):
                s = (self.wl[pid] == wl) & (self.wr[pid] == wr)
                if not np.any(s):
                    continue
                y = self.maps.pairs[f].fwd(x0[s], self.eps, outward=True)
                out[s] = pinned_value(self.tab_ub, self.mL, wl, self.t1[pid[s]], x1[s], "ub") + \
                    pinned_value(self.tab_ub, self.mR, wr, self.t2[pid[s]], y, "ub")
        return out

    def offer(self, best: RunSplit, pid: np.ndarray, x: np.ndarray) -> None:
        """Offer the free left budget ``x`` with the pinned one at ``lo`` or ``hi``."""
        pinned_a = self.wl[pid] == "A"
        for fixed in (self.lo[pid], np.maximum(self.hi[pid], self.lo[pid])):
            best.offer(np.where(pinned_a, fixed, x), np.where(pinned_a, x, fixed))


def same_pairs_bound(pins: SamePairs, best: RunSplit, tol: float, max_rounds: int) -> tuple[float, int]:
    """Bound of the same-pair combinations by a one-dimensional branch and bound over each problem's free left
    budget in ``[0, xmax]`` (:func:`redactopt.solvers.frontier.cell_bound`); also the cells visited."""
    if pins.size == 0:
        return -np.inf, 0
    return cell_bound(pins, best, pins.xmax, tol, max_rounds)


def solve_run(tab_ub: Tables, tab_lb: Tables, mL: int, mR: int, maps: RunMaps, eps: float, epsl: float,
              *, max_rounds: int = 80) -> TwoSided:
    r"""Certified bound (records) on what the two sides of a run publish, and the best left budgets.

    :math:`\max_{a,b}F_\ell(a,b)+F_r(\text{the right budgets the maps leave})` over the four
    combinations of which thread pins first on each side (:func:`redactopt.solvers.frontier.solve_two_sided`
    with :math:`\epsilon-x` replaced by the run's maps): combinations whose pinned threads lie in
    different pairs in closed form (:func:`_opposite_pairs`), the others by a branch and bound over
    the free coordinate (:func:`same_pairs_bound`).  ``eps`` is the budget bounded (maps rounded
    outward), ``epsl`` the one designs use.  ``split`` of the result is the left side's ``(a, b)``.
    """
    t0 = time.perf_counter()
    geo = tab_ub.geo
    n = mL + mR + 1
    maps = maps.binding(eps)  # a relaxation: the bound holds, and the search runs on the records that bind
    best = RunSplit(tab_lb, mL, mR, maps, epsl)
    best.offer(np.array([0.0, best.amax, 0.0, best.amax]), np.array([0.0, 0.0, best.bmax, best.bmax]))
    th = {(side, w): pin_thresholds(geo, m, w) for side, m in (("l", mL), ("r", mR)) for w in "AB"}
    xmax = maps.left_max(eps, outward=True)
    combos = [(wl, wr) for wl in "AB" for wr in "AB"]
    same = [c for c in combos if _left_pair(c[0]) == maps.right_pair(c[1])]
    other = [c for c in combos if c not in same]
    parts = {"opposite pairs": _opposite_pairs(tab_ub, best, th, eps, xmax, other)}
    pins = SamePairs.of(tab_ub, maps, mL, mR, th, eps, epsl, xmax, same)
    parts["same pair"], cells = same_pairs_bound(pins, best, 1e-6 * n, max_rounds)
    ub = max(parts.values()) + 1e-12 * n * max(mL, mR, 1)  # floating-point allowance, as the frontier's
    return TwoSided(min(ub, float(mL + mR)), best.value, (best.a, best.b), parts, cells, time.perf_counter() - t0)


def polish_budgets(best: RunSplit, tab_lb: Tables, a: float, b: float, *, min_step: float = 1e-8,
                   max_evals: int = 60) -> tuple[float, float]:
    """Pattern search on the left budgets ``(a, b)`` by the exact realised gain of the greedy side policies."""
    maps, epsl = best.maps, best.epsl

    def realised(a: float, b: float) -> float:
        a, b = min(max(a, 0.0), best.amax), min(max(b, 0.0), best.bmax)
        ar, br = maps.right_budgets(np.array([a]), np.array([b]), epsl, outward=False)
        return best_side_policy(tab_lb, best.mL, a, b)[1] + best_side_policy(tab_lb, best.mR, float(ar[0]),
                                                                             float(br[0]))[1]

    value = realised(a, b)
    step, evals = max(best.amax, best.bmax, 1e-6) / 128, 0
    while step >= min_step and evals < max_evals:
        moved = False
        for da, db in ((step, 0), (-step, 0), (0, step), (0, -step)):
            na, nb = min(max(a + da, 0.0), best.amax), min(max(b + db, 0.0), best.bmax)
            v = realised(na, nb)
            evals += 1
            if v > value + 1e-15:
                value, a, b, moved = v, na, nb, True
                break
        if not moved:
            step /= 2
    return a, b


def _run_window(chain: MarkovChain, m: int, eps: float) -> int:
    """Initial model window of a side of a run: the one-record frontier's (beyond it the optimum has almost always cut)."""
    return min(m, 2 * delta_star(chain, max(eps / 4.0, math.ulp(0.0))) + 16)  # a subnormal eps halves to 0


def _cuts(qs: np.ndarray) -> bool:
    return qs.shape[0] == 0 or not qs[-1].any()


@dataclass(frozen=True)
class RunAnalysis:
    """What :func:`run_analysis` finds (designs are proposals: judge them).

    ``upper_bound`` bounds the utility (per record of all ``n``) of every mechanism private about
    every record of the run; ``redact_prob`` is the design at the best budgets, ``edge`` the same
    budgets spent to ``eps`` exactly; ``left``/``right`` the sides' budgets ``(a, b)`` about their
    boundary records; ``single_bounds`` the one-record bounds computed on the same tables (each a
    relaxation, ``{offset in the run: bound per record}``), ``bound_record`` the record (0-based
    position) whose one-record bound won, ``None`` where the run's own did; ``table_gap`` the gap to the design's own
    value; ``grid``, ``windows``, ``seconds`` how it was computed.
    """

    upper_bound: float
    redact_prob: np.ndarray
    edge: np.ndarray
    left: tuple[float, float]
    right: tuple[float, float]
    run_bound: float
    single_bounds: dict[int, float]
    bound_record: int | None
    table_gap: float
    grid: int
    windows: tuple[int, int]
    seconds: float


def _assemble(n: int, first: int, last: int, ql: np.ndarray, qr: np.ndarray) -> np.ndarray:
    q = np.zeros((n, 2))
    q[first: last + 1] = 1.0
    q[first - ql.shape[0]: first] = ql[::-1]
    q[last + 1: last + 1 + qr.shape[0]] = qr
    return q


@dataclass
class _Model:
    """The tables, maps and search of one model window of the run's sides."""

    W: list[int]
    R: int
    tab_lb: Tables
    tab_ub: Tables
    G: int
    maps: RunMaps
    res: TwoSided
    a: float
    b: float
    ql: np.ndarray
    qr: np.ndarray


def _model(chain: MarkovChain, left: list[Contraction], right: list[Contraction], W: list[int], eps: float,
           epsl: float, grid: int | None) -> _Model:
    R = max(W[0], W[1], 1)
    G = G_UB0 if grid is None else int(grid)
    tab_lb = side_tables(chain, R, G=G_LB if grid is None else G, upper=False)
    tab_ub = side_tables(chain, R, G=G, upper=True)
    maps = run_maps(tab_ub.geo, left, right)
    res = solve_run(tab_ub, tab_lb, W[0], W[1], maps, eps, epsl)
    # the pattern search gains little (1e-3 records on the walk-through's 388-record sides) and each step
    # runs the greedy policies on both sides: a fixed number of steps per record modelled
    evals = int(min(60, max(8, 3000 // R)))
    a, b = polish_budgets(RunSplit(tab_lb, W[0], W[1], maps, epsl), tab_lb, *res.split, max_evals=evals)
    ar, br = maps.right_budgets(np.array([a]), np.array([b]), epsl, outward=False)
    ql = side_design(tab_lb, W[0], a, b)
    qr = side_design(tab_lb, W[1], float(ar[0]), float(br[0]))
    return _Model(W, R, tab_lb, tab_ub, G, maps, res, a, b, ql, qr)


def _single_bounds(md: _Model, n: int, first: int, offsets: Sequence[int], eps: float, epsl: float,
                   deadline: float = math.inf) -> dict[int, float]:
    """The one-record bound (records) of each run record at ``offsets``, on the model's tables.

    Record ``p = first + j`` alone is a relaxation of the run (a mechanism private about every record
    of the run is private about ``p``); its sides hold the other run records and are modelled on their
    nearest ``R`` records, each further record counted as published.  Each bound is optional (the run's
    own bound stands without it): the records are taken ends first, then inward, and none is started
    after ``deadline`` (``time.perf_counter()``), so a time limit bounds this pass too.
    """
    out = {}
    order = sorted(offsets, key=lambda j: min(j - min(offsets), max(offsets) - j)) if offsets else []
    for j in order:
        if time.perf_counter() >= deadline:
            break
        p = first + j
        ml, mr = p, n - 1 - p
        wl, wr = min(ml, md.R), min(mr, md.R)
        out[j] = solve_two_sided(md.tab_ub, md.tab_lb, wl, wr, eps, epsl).ub + (ml - wl) + (mr - wr)
    return out


def _singles_worth_bounding(md: _Model, n: int, first: int, last: int, epsl: float, ub: float) -> list[int]:
    """The run's records (offsets) whose one-record bound may be below ``ub`` (records of all ``n``).

    A record's one-record bound is at least what the grid policy of its own problem publishes at any
    split of the budget (a private mechanism for that record alone): where one of a 5 x 5 grid of
    splits already publishes more than ``ub`` the relaxation cannot win and is not computed.
    """
    grid = np.linspace(0.0, epsl, 5)
    a, b = (v.ravel() for v in np.meshgrid(grid, grid))
    keep = []
    for j in range(last - first + 1):
        ml, mr = first + j, n - 1 - first - j
        wl, wr = min(ml, md.R), min(mr, md.R)
        low = side_value(md.tab_lb, wl, a, b, "lb") + side_value(md.tab_lb, wr, epsl - a, epsl - b, "lb")
        if float(low.max()) + (ml - wl) + (mr - wr) <= ub:  # a record beyond the window: published
            keep.append(j)
    return keep


def run_analysis(chain: MarkovChain, n: int, *, eps: float, first: int, last: int, time_limit: float = 60.0,
                 target_gap: float = 1e-4, singles: str = "auto", grid: int | None = None) -> RunAnalysis:
    """Certified bound and design of the run ``first..last`` (0-based, inclusive) by the side frontiers through the run.

    The model window of each side doubles until the design cuts inside it; the upper-bound grid
    doubles while the gap exceeds ``target_gap`` (utility per record), the gap keeps halving and the
    next refinement fits in ``time_limit`` seconds.  ``singles``: the run's records whose one-record
    bounds are computed too (relaxations; the smallest bound wins): ``"auto"`` those whose own
    problem's grid policy does not already publish more than the run's bound (no other can win),
    ``"all"``, ``"ends"`` or ``"none"``.  ``grid``: the first upper-bound grid and the policy grid
    (default the frontier's, :data:`~redactopt.solvers.frontier.G_UB0` and
    :data:`~redactopt.solvers.frontier.G_LB`).
    """
    n, eps, first = check_problem(chain, n, eps, first)
    if not first <= int(last) < n:
        raise ValueError(f"last must lie in [first, n - 1] = [{first}, {n - 1}], got {last!r}")
    last, t0 = int(last), time.perf_counter()
    r, mL, mR = last - first + 1, first, n - 1 - last
    epsl = eps - 2.0 * ETA * max(1.0, eps)
    if chain.lam == 0.0 or mL + mR == 0:  # independent records (nothing leaks) or nothing but the run
        q = _assemble(n, first, last, np.zeros((mL, 2)), np.zeros((mR, 2)))
        u = (n - r) / n
        return RunAnalysis(u, q, q, (eps, eps), (eps, eps), u, {}, None, 0.0, 0, (mL, mR), time.perf_counter() - t0)
    left, right = chain_contractions(chain, r)
    W = [_run_window(chain, mL, eps), _run_window(chain, mR, eps)]
    while True:
        md = _model(chain, left, right, W, eps, epsl, grid)
        grow = [W[0] < mL and not _cuts(md.ql), W[1] < mR and not _cuts(md.qr)]
        if not any(grow):
            break
        W = [min(m, 2 * w) if g else w for m, w, g in zip((mL, mR), W, grow)]
    outside = (mL - W[0]) + (mR - W[1])
    pi = chain.stationary
    value = float(((1.0 - md.ql) @ pi).sum() + ((1.0 - md.qr) @ pi).sum()) + outside
    ub = md.res.ub + outside
    _refine(md, ub, value, n, eps, epsl, outside, target_gap, time_limit, t0)
    ub = min(ub, md.res.ub + outside)
    offs = {"all": range(r), "ends": sorted({0, r - 1}), "none": ()}.get(singles)
    if singles == "auto":
        offs = _singles_worth_bounding(md, n, first, last, epsl, ub)
    elif offs is None:
        raise ValueError(f"singles must be 'auto', 'all', 'ends' or 'none', got {singles!r}")
    single = {j: b / n for j, b in _single_bounds(md, n, first, offs, eps, epsl, deadline=t0 + time_limit).items()}
    bound, source = min([(ub / n, -1)] + [(b, first + j) for j, b in single.items()])
    s = eps / epsl
    amax, bmax = md.maps.left_max(eps, outward=False)
    ae, be = min(md.a * s, amax), min(md.b * s, bmax)
    are, bre = md.maps.right_budgets(np.array([ae]), np.array([be]), eps, outward=False)
    edge = _assemble(n, first, last, side_design(md.tab_lb, W[0], ae, be),
                     side_design(md.tab_lb, W[1], float(are[0]), float(bre[0])))
    ar, br = md.maps.right_budgets(np.array([md.a]), np.array([md.b]), epsl, outward=False)
    return RunAnalysis(bound, _assemble(n, first, last, md.ql, md.qr), edge, (md.a, md.b),
                       (float(ar[0]), float(br[0])), ub / n, single, None if source < 0 else source,
                       (ub - value) / n, md.G,
                       (W[0], W[1]), time.perf_counter() - t0)


def _refine(md: _Model, ub: float, value: float, n: int, eps: float, epsl: float, outside: int, target_gap: float,
            time_limit: float, t0: float) -> None:
    """Double the upper-bound grid of ``md`` (in place) while the gap exceeds ``target_gap`` and time allows."""
    last = time.perf_counter() - t0
    while (ub - value) / n > target_gap and md.G < G_UB_MAX:
        if time.perf_counter() - t0 + 2.5 * last > time_limit:
            break
        t1 = time.perf_counter()
        G = 2 * md.G
        tab_ub = side_tables(md.tab_lb.geo.chain, md.R, G=G, upper=True)
        res = solve_run(tab_ub, md.tab_lb, md.W[0], md.W[1], md.maps, eps, epsl)
        refined = res.ub + outside
        closed = ub - refined
        if refined < ub:
            md.tab_ub, md.G, md.res, ub = tab_ub, G, res, refined
        last = time.perf_counter() - t1
        if closed < 0.25 * (ub - value):  # the gap is not the grid's
            break


def propose_run(chain: MarkovChain, n: int, *, eps: float, first: int, last: int, time_limit: float = 60.0,
                target_gap: float = 1e-4, singles: str = "auto", grid: int | None = None) -> Candidate:
    """The run's design as a proposal (:func:`run_analysis`): ``solver="run-frontier"``, its certified bound
    (``bound_solver`` ``"run-frontier"`` or, where a one-record relaxation won, ``"frontier-dp"``), the design
    spent to ``eps`` exactly as a fallback.  ``info["bound_source"]`` is ``"run"`` or ``"record"``
    (``info["bound_record"]``: which one, 0-based)."""
    ra = run_analysis(chain, n, eps=eps, first=first, last=last, time_limit=time_limit, target_gap=target_gap,
                      singles=singles, grid=grid)
    info = {"budgets": {"left": list(ra.left), "right": list(ra.right)}, "grid": ra.grid,
            "windows": list(ra.windows), "table_gap": ra.table_gap, "target_gap": target_gap, "seconds": ra.seconds,
            "bound_source": "run" if ra.bound_record is None else "record", "bound_record": ra.bound_record,
            "run_bound": ra.run_bound, "single_bounds": {str(first + j): b for j, b in ra.single_bounds.items()}}
    return Candidate(ra.redact_prob, "run-frontier", "optimal" if ra.table_gap <= target_gap else "time_limit",
                     upper_bound=ra.upper_bound,
                     bound_solver="run-frontier" if ra.bound_record is None else "frontier-dp",
                     fallbacks=(ra.edge,), info=info, fallback_info=({"budgets": "spent to eps exactly"},))


# ----------------------------------------------------------------------------
# bounds alone (pieces of a region holding several runs)
# ----------------------------------------------------------------------------
#: Grid of the tables behind :func:`run_bound` (a bound, not a design: coarse).
BOUND_GRID = 1000

_TABLES: dict[tuple, Tables] = {}


def _tables(chain: MarkovChain, R: int, G: int, upper: bool) -> Tables:
    """Side tables memoised in this process (the last four): a table for sides of up to ``R`` records bounds every
    shorter side, so ``R`` is rounded up to a power of two and shared by the pieces of a region."""
    key = (chain, R, G, upper)
    if key not in _TABLES:
        while len(_TABLES) >= 4:
            _TABLES.pop(next(iter(_TABLES)))
        _TABLES[key] = side_tables(chain, R, G=G, upper=upper)
    return _TABLES[key]


def run_bound(chain: MarkovChain, n: int, *, eps: float, first: int, last: int, grid: int = BOUND_GRID) -> float:
    """Certified bound (expected records) on what any mechanism private about every record of the run
    ``first..last`` publishes among ``n`` records: :func:`solve_run` on both whole sides, no design.

    ``n`` records form the problem on their own (a window of a sequence starts at a stationary record).
    """
    n, eps, first = check_problem(chain, n, eps, first)
    last = int(last)
    r, mL, mR = last - first + 1, first, n - 1 - last
    if chain.lam == 0.0 or mL + mR == 0:
        return float(mL + mR)
    R = 1 << max(int(max(mL, mR, 1)) - 1, 0).bit_length()
    tab_ub, tab_lb = _tables(chain, R, grid, True), _tables(chain, R, grid, False)
    maps = run_maps(tab_ub.geo, *chain_contractions(chain, r))
    epsl = eps - 2.0 * ETA * max(1.0, eps)
    return solve_run(tab_ub, tab_lb, mL, mR, maps, eps, epsl).ub


#: :func:`_each_partner` under a public name (a run's scan bounds boxes with one record's map: solvers/run_scan.py).
each_partner = _each_partner
