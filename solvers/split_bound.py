r"""A second-order bound on a box of budget splits: interpolated dual points (docs/beyond_local.md, §3).

Branch and bound over the split :math:`a` of the two sides (:mod:`redactopt.solvers.scan_lp`) bounds a
box by monotonicity, :math:`F_\ell(a^+)+F_r(\epsilon-a^-)`, which overestimates by the *sum* of the
two sides' slopes times the width -- also where the sum itself is flat (a ridge), so the search
stalls.  This module bounds the box with *interpolated* dual points instead.

Parametrise the box by :math:`\theta\in[0,1]^F` (its free dimensions).  Only the privacy rows depend on
the budgets, each linearly in one :math:`E_p`, and :math:`E_p(\theta_p)` is convex in :math:`\theta_p`
(:math:`e^{a}` on the left, :math:`e^{\epsilon-a}` on the right), so its chord between the corners'
(upward) values is a valid larger budget: the LP at the chord values is a relaxation at every
:math:`\theta`.  Take :math:`y(\theta)=\sum_c w_c(\theta)y_c`, the multilinear interpolation of the corners'
dual points.  It is a dual point of the relaxed LP, so weak duality bounds its value by

.. math:: \sum_c w_c(\theta)\,b^\top y_c+\sum_j u_j\max\Bigl(0,\ q_j(\theta)\Bigr),\qquad
          q_j(\theta)=\sum_c w_c(\theta)\Bigl[r_{c,j}+\sum_p s_{p,c,j}(\theta_p-c_p)\Delta E_p\Bigr],

with the corners' reduced costs :math:`r_c` and the privacy rows' sensitivities
:math:`s_{p,c,j}=\sum_{i\in p}y_{c,i}T(x'_p,c_j)\ge0` (exact identity: the reduced cost is affine in
:math:`y` and in each :math:`E_p`).  Where the optimal basis does not change across the box the
interpolated point stays nearly feasible: the bound exceeds the corners' values by
:math:`O(\text{width}^2)` -- second order, and the ridge closes.  The supremum over :math:`\theta` is bounded
on a grid: on each cell the multilinear part peaks at a corner, and :math:`q_j` exceeds its tensor
interpolant by at most :math:`\sum_p M_{p,j}h_p^2/8` with :math:`M_{p,j}\ge|\partial^2q_j/\partial\theta_p^2|`.
"""

from __future__ import annotations

import itertools
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
    ``c_abs``: :math:`|c|` (the interpolation weights sum to 1 only up to rounding, which leaves a multiple of ``c``).
    """

    base: float
    r_hi: np.ndarray
    s: np.ndarray
    E: np.ndarray
    upper: np.ndarray
    c_abs: np.ndarray


def _weights(theta: np.ndarray, corners: list[tuple[int, ...]]) -> np.ndarray:
    """Multilinear weights ``w_c(theta)`` for grid points ``theta`` (``(P, F)``), one column per corner."""
    out = np.ones((theta.shape[0], len(corners)))
    for ci, c in enumerate(corners):
        for f, bit in enumerate(c):
            out[:, ci] *= theta[:, f] if bit else 1.0 - theta[:, f]
    return out


def _side_terms(data: dict, free: list[int], theta: np.ndarray, corners: list) -> tuple[np.ndarray, np.ndarray]:
    """``(base(theta), q(theta))`` on the grid for one side, every choice rounded outward, and curvature bounds."""
    w = _weights(theta, corners)
    base = w @ np.array([data[c].base for c in corners])
    dE = np.array([data[tuple(1 if g == f else 0 for g in range(len(free)))].E[p] - data[corners[0]].E[p]
                   for f, p in enumerate(free)])
    q = np.zeros((theta.shape[0], data[corners[0]].r_hi.shape[0]))
    for ci, c in enumerate(corners):
        d = data[c]
        # step_f = (theta_f - c_f) dE_f; with s >= 0 the rounded sensitivity s(1 +- REL) of the sign of the step
        # gives term = r + sum_f s_f step_f + REL sum_f s_f |step_f| and |term| <= |r| + (1 + REL) sum_f s_f |step_f|,
        # so term + REL |term| <= r + REL |r| + S step + 2 (1 + REL) REL S |step| (products of <= 2 terms: exact to u)
        step = (theta - np.array(c, dtype=float)) * dE
        S = d.s[free]
        lin = step @ S
        absl = np.abs(step) @ S
        term = d.r_hi + REL * np.abs(d.r_hi) + lin + (2.0 + 4.0 * REL) * REL * absl
        q += w[:, ci:ci + 1] * term
    q += np.abs(1.0 - w.sum(axis=1))[:, None] * data[corners[0]].c_abs + 1e-15 * data[corners[0]].c_abs
    return base, q, dE


def _curvature(data: dict, free: list[int], corners: list, dE: np.ndarray) -> np.ndarray:
    """``M[f, j]``: a bound on :math:`|\\partial^2q_j/\\partial\\theta_f^2|` over the box (module docstring)."""
    M = np.zeros((len(free), data[corners[0]].r_hi.shape[0]))
    for f, p in enumerate(free):
        for c in corners:
            if c[f]:
                continue
            c1 = tuple(1 if g == f else b for g, b in enumerate(c))
            diff = np.abs(data[c1].s[p] - data[c].s[p]) + REL * (data[c1].s[p] + data[c].s[p])
            M[f] = np.maximum(M[f], 2.0 * abs(dE[f]) * (1 + REL) * diff)
    return M


def interpolated_bound(left: dict, right: dict, free: list[int], grid: int) -> float:
    r"""A proven bound on :math:`\sup_{\theta}[F_\ell+F_r]` over a box from its corners' dual data.

    ``left[c]``/``right[c]`` hold :class:`DualData` of each side at corner ``c`` (a 0/1 tuple over the
    ``free`` dimensions: 0 the box's lower budget of that pair, 1 its upper one; the right side's budget
    is :math:`\epsilon` minus it).  ``grid`` cells per dimension.
    """
    F = len(free)
    corners = list(itertools.product((0, 1), repeat=F))
    axis = np.linspace(0.0, 1.0, grid + 1)
    theta = np.array(list(itertools.product(axis, repeat=F)))
    shape = (grid + 1,) * F
    total_base = np.zeros(theta.shape[0])
    pen_cells = None
    for data in (left, right):
        base, q, dE = _side_terms(data, free, theta, corners)
        M = _curvature(data, free, corners, dE)
        rem = (M * (1.0 / grid) ** 2 / 8.0).sum(axis=0)
        total_base += base
        qg = q.reshape(shape + (q.shape[1],))
        cell_max = _cell_max(qg, F) + rem
        pen = (np.maximum(cell_max, 0.0) * data[corners[0]].upper).sum(axis=-1) * (1 + REL)
        pen_cells = pen if pen_cells is None else pen_cells + pen
    base_cells = _cell_max(total_base.reshape(shape), F)
    top = base_cells + pen_cells
    return float(np.max(top) * (1 + REL) + 1e-300)


def _cell_max(values: np.ndarray, F: int) -> np.ndarray:
    """Per grid cell, the maximum of ``values`` over the cell's corner points (leading ``F`` axes)."""
    out = values
    for f in range(F):
        a = np.take(out, range(out.shape[f] - 1), axis=f)
        b = np.take(out, range(1, out.shape[f]), axis=f)
        out = np.maximum(a, b)
    return out
