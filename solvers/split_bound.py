r"""A second-order bound on a box of budget splits: interpolated dual points (docs/beyond_local.md, §3).

Branch and bound over the split :math:`a` of the two sides (:mod:`redactopt.solvers.scan_lp`) bounds a
box by monotonicity, :math:`F_\ell(a^+)+F_r(\epsilon-a^-)`, which overestimates by the *sum* of the
two sides' slopes times the width -- also where the sum itself is flat (a ridge), so the search
stalls.  This module bounds the box with *interpolated* dual points instead.

Parametrise the box by :math:`\theta\in[0,1]^F` (its free dimensions) through a map that is affine
along every axis of :math:`\theta` (the box itself, or a box of rotated coordinates).  Only the privacy
rows depend on the budgets, each linearly in one :math:`E_p`, and :math:`E_p(\theta)` is a convex function
of an affine one along every axis (:math:`e^{a}` on the left, :math:`e^{\epsilon-a}` on the right, possibly
raised to a floor), so the multilinear interpolation :math:`\bar E_p(\theta)` of the corners' (upward) values
is a valid larger budget: the LP at :math:`\bar E(\theta)` is a relaxation at every :math:`\theta`.  Take
:math:`y(\theta)=\sum_c w_c(\theta)y_c`, the multilinear interpolation of the corners' dual points.  It is a
dual point of the relaxed LP, so weak duality bounds its value by

.. math:: \sum_c w_c(\theta)\,b^\top y_c+\sup_{x\in X}\sum_j x_j\,q_j(\theta),\qquad
          q_j(\theta)=\sum_c w_c(\theta)\Bigl[r_{c,j}+\sum_p s_{p,c,j}\bigl(\bar E_p(\theta)-E_{c,p}\bigr)\Bigr],

with the corners' reduced costs :math:`r_c`, the privacy rows' sensitivities
:math:`s_{p,c,j}=\sum_{i\in p}y_{c,i}T(x'_p,c_j)\ge0` (exact identity: the reduced cost is affine in
:math:`y` and in each :math:`E_p`) and :math:`X` any set holding the exact program's feasible points: the box
:math:`0\le x\le u`, and for a scan side also "each start's stop events and never-stopped mass sum to 1"
(a probability law), so a start's variables cost the largest of their :math:`q^+_j`, not the sum.  Where
the optimal basis does not change across the box the interpolated point stays nearly feasible: the
bound exceeds the corners' values by :math:`O(\text{width}^2)` -- second order, and the ridge closes.
The supremum over :math:`\theta` is bounded on a grid: on a cell :math:`q_j` exceeds its multilinear
interpolant by at most :math:`\sum_f M_{f,j}h_f^2/8` with :math:`M_{f,j}\ge|\partial^2q_j/\partial\theta_f^2|`
(:math:`\partial_f^2q_j=2\sum_p\partial_fA_{p,j}\,\partial_f\bar E_p`, :math:`A_{p,j}=\sum_cw_cs_{p,c,j}`), and the bound
with each :math:`q_j` replaced by that interpolant plus the remainder is convex along every axis (a
non-decreasing convex function of multilinear ones), so on each cell it peaks at a grid point.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

__all__ = ["DualData", "interpolated_bound"]

#: Relative inflation of float sums here (each is a sum of a few dozen terms at most).
REL = 1e-12


@dataclass(frozen=True)
class DualData:
    r"""What one verified LP solve leaves for interpolation.

    ``base``: upper bound on :math:`b^\top y`; ``r_hi``: upper bounds on the exact reduced costs;
    ``s``: ``(K, N)`` float sensitivities :math:`s_{p,j}` (non-negative, exact to a relative ``REL``);
    ``E``: the ``K`` budgets :math:`E_p` the LP was built with (upward values); ``upper``: variable bounds;
    ``c_abs``: :math:`|c|` (the interpolation weights sum to 1 only up to rounding, which leaves a multiple of ``c``);
    ``groups``: disjoint index arrays ``g`` with :math:`\sum_{j\in g}x_j\le1` at every feasible point of the
    exact program (a scan side: one start's stop events and its never-stopped mass, a probability law).
    """

    base: float
    r_hi: np.ndarray
    s: np.ndarray
    E: np.ndarray
    upper: np.ndarray
    c_abs: np.ndarray
    groups: tuple = ()


def _weights(theta: np.ndarray, corners: list[tuple[int, ...]]) -> np.ndarray:
    """Multilinear weights ``w_c(theta)`` for grid points ``theta`` (``(P, F)``), one column per corner."""
    out = np.ones((theta.shape[0], len(corners)))
    for ci, c in enumerate(corners):
        for f, bit in enumerate(c):
            out[:, ci] *= theta[:, f] if bit else 1.0 - theta[:, f]
    return out


U = 2.0**-53


def _side_terms(data: dict, theta: np.ndarray, corners: list) -> tuple[np.ndarray, np.ndarray]:
    r"""``(base(theta), q(theta))`` on the grid for one side, every choice rounded outward.

    The float weights :math:`\tilde w_c` (within ``3u`` of the exact ones, relatively) are the dual point's
    weights, :math:`y=\sum_c\tilde w_cy_c`; the relaxed budget is :math:`\bar E_p=(1+8u)\,\mathrm{fl}(\sum_c\tilde w_cE_{c,p})`,
    at least the exact chord (so at least :math:`E_p(\theta)`).  Then, exactly,
    :math:`q_j=\sum_c\tilde w_cr_{c,j}+\sum_p(A_{p,j}\bar E_p-B_{p,j})+(1-\sum_c\tilde w_c)c_j` with
    :math:`A_{p,j}=\sum_c\tilde w_cs_{p,c,j}`, :math:`B_{p,j}=\sum_c\tilde w_cs_{p,c,j}E_{c,p}`.  Each of these sums of at most
    four products is within ``6u`` of its float value (relatively), a product and a difference add ``2u``; the
    sensitivities' own error (relative ``REL``) moves :math:`A\bar E-B=\sum_c\tilde w_cs_{p,c}(\bar E_p-E_{c,p})` by at most
    ``REL`` :math:`A_p\max_c|\bar E_p-E_{c,p}|`; the few additions of the total are covered by doubling the ``8u`` and
    by ``REL`` on :math:`|r|` (``REL`` is ``1e-12``).
    """
    w = _weights(theta, corners)
    bc = np.array([data[c].base for c in corners])
    base = w @ bc + REL * (w @ np.abs(bc))
    Ec = np.array([data[c].E for c in corners])                       # (C, K)
    vary = [p for p in range(Ec.shape[1]) if np.any(Ec[:, p] != Ec[0, p])]
    R = np.array([data[c].r_hi for c in corners])                     # (C, N)
    q = w @ R + REL * (w @ np.abs(R))
    if vary:
        Ebar = (w @ Ec) * (1.0 + 8.0 * U)
        for p in vary:
            Sp = np.array([data[c].s[p] for c in corners])            # (C, N), non-negative
            cols = np.flatnonzero(Sp.any(axis=0))                     # elsewhere A = B = 0 exactly
            Sp = Sp[:, cols]
            A = w @ Sp
            B = w @ (Sp * Ec[:, p:p + 1])
            AE = A * Ebar[:, p:p + 1]
            span = float(np.max(Ec[:, p]) * (1.0 + 8.0 * U) * (1.0 + 4.0 * U) - np.min(Ec[:, p])) * (1.0 + 2.0 * U)
            err = 16.0 * U * (AE + B) + REL * (1.0 + REL) * span * A
            q[:, cols] += (AE - B) + err * (1.0 + 4.0 * U)
    q += np.abs(1.0 - w.sum(axis=1))[:, None] * data[corners[0]].c_abs + 1e-15 * data[corners[0]].c_abs
    return base, q


def _curvature(data: dict, F: int, corners: list) -> np.ndarray:
    r"""``M[f, j]``: a bound on :math:`|\partial^2q_j/\partial\theta_f^2|` over the box (module docstring).

    :math:`q_j=\sum_cw_cr_{c,j}+\sum_p[A_{p,j}\bar E_p-B_{p,j}]` with :math:`A_{p,j}=\sum_cw_cs_{p,c,j}`,
    :math:`B_{p,j}=\sum_cw_cs_{p,c,j}E_{c,p}` and :math:`\bar E_p` multilinear, so
    :math:`\partial_f^2q_j=2\sum_p\partial_fA_{p,j}\,\partial_f\bar E_p`, and each partial derivative is a
    convex combination of the differences along the corners' edges in direction ``f``.
    """
    K = data[corners[0]].E.shape[0]
    M = np.zeros((F, data[corners[0]].r_hi.shape[0]))
    for f in range(F):
        for p in range(K):
            dE, ds = 0.0, None
            for c in corners:
                if c[f]:
                    continue
                c1 = tuple(1 if g == f else b for g, b in enumerate(c))
                dE = max(dE, abs(data[c1].E[p] - data[c].E[p]) * (1 + REL))
                diff = np.abs(data[c1].s[p] - data[c].s[p]) + REL * (data[c1].s[p] + data[c].s[p])
                ds = diff if ds is None else np.maximum(ds, diff)
            if dE > 0.0:
                M[f] += 2.0 * dE * (1 + REL) * ds
    return M * (1 + 4 * REL)


def interpolated_bound(left: dict, right: dict, free: list[int], grid: int) -> float:
    r"""A proven bound on :math:`\sup_{\theta}[F_\ell+F_r]` over a box from its corners' dual data.

    ``left[c]``/``right[c]`` hold :class:`DualData` of each side at corner ``c`` (a 0/1 tuple over the
    ``F = len(free)`` dimensions of :math:`\theta`: 0 the box's lower end, 1 its upper one), each with the budgets
    its LP was built with; the corners' budgets must bound, by multilinear interpolation, the exact
    budgets of every point of the box (module docstring).  ``grid`` cells per dimension.
    """
    F = len(free)
    corners = list(itertools.product((0, 1), repeat=F))
    if not all(np.all(np.isfinite(d.E)) for data in (left, right) for d in data.values()):
        return math.inf  # a budget beyond the doubles (eps >= 710): no interpolation, the monotone bound holds
    axis = np.linspace(0.0, 1.0, grid + 1)
    theta = np.array(list(itertools.product(axis, repeat=F)))
    total = np.zeros(theta.shape[0])
    for data in (left, right):
        base, q = _side_terms(data, theta, corners)
        M = _curvature(data, F, corners)
        rem = (M * (1.0 / grid) ** 2 / 8.0).sum(axis=0)
        # on a cell, q_j <= (its multilinear interpolant) + rem_j; base + sum_j u_j max(0, interpolant + rem_j)
        # is convex along every axis, so it peaks at one of the cell's corners: the grid points suffice
        pen = _penalty(np.maximum(q + rem[None, :], 0.0), data[corners[0]])
        total += base + pen
    return float(np.max(total) * (1 + REL) + 1e-300)


def _penalty(qp: np.ndarray, d: DualData) -> np.ndarray:
    r"""Per grid point, an upper bound on :math:`\sup_x\sum_jx_jq_j` over the exact program's feasible points, for
    ``qp`` :math:`=\max(0,q)`: :math:`0\le x\le u` and, on each group (:class:`DualData`), :math:`\sum_{j\in g}x_j\le1`, so a
    group costs at most :math:`\min(\sum_{j\in g}u_jq^+_j,\ \max_{j\in g}q^+_j)` (a convex, non-decreasing function of
    :math:`q`: the cell argument of :func:`interpolated_bound` stands)."""
    box = qp * d.upper[None, :]                      # products of two doubles: relative error <= u
    rest = np.ones(box.shape[1], dtype=bool)
    pen = np.zeros(box.shape[0])
    for g in d.groups:
        rest[g] = False
        pen += np.minimum(box[:, g].sum(axis=1), qp[:, g].max(axis=1))
    pen += box[:, rest].sum(axis=1)
    # every quantity is a sum of at most N non-negative terms: relative error <= (N + 2) u each
    return pen * (1 + REL + 4 * (box.shape[1] + 2) * U)


def _cell_max(values: np.ndarray, F: int) -> np.ndarray:
    """Per grid cell, the maximum of ``values`` over the cell's corner points (leading ``F`` axes)."""
    out = values
    for f in range(F):
        a = np.take(out, range(out.shape[f] - 1), axis=f)
        b = np.take(out, range(1, out.shape[f]), axis=f)
        out = np.maximum(a, b)
    return out
