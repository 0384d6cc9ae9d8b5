r"""A certified bound on *coupled* scans: the two sides' decisions may read each other (docs/beyond_local.md, §5).

A coupled scan reads records of both sides in any adaptive order; at each record read it may stop
that side (publish it and every farther record of the side), deciding on everything read so far
(never :math:`X_p`).  Given the two first records :math:`(c_\ell,c_r)` the sides are independent
chains that do not depend on :math:`X_p`, and for every fixed right-hand sequence (and internal
randomness) the left stop is a randomized stopping time of the left chain: so the joint law
:math:`H(c_\ell,c_r;e_\ell,e_r)` of the two sides' events has, for each :math:`(c_\ell,c_r)`, a left
marginal that is a stopping occupation measure from :math:`c_\ell` and a right marginal that is one from
:math:`c_r` (the flow equations of :mod:`redactopt.solvers.scan_lp`).  The likelihood of an event pair is

.. math:: \Pr(e_\ell,e_r\mid X_p=x)=\sum_{c_\ell,c_r}\tilde P(x,c_\ell)P(x,c_r)\,H(c_\ell,c_r;e_\ell,e_r),

linear in ``H``, and Definition 1 asks it to be within :math:`e^\epsilon` of the same under
:math:`x'` -- no budget split.  Maximising the expected number published over all such ``H`` is an
LP whose optimum bounds every coupled scan (and every scan with independent sides); events beyond
``W`` records of a side are merged into one, a union whose ratio is a mediant, worth ``m - W``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import scipy.sparse as sp

from redactopt.judge.scan import exp_enclosure
from redactopt.model.mechanism_classes import as_kchain, side_chain
from redactopt.solvers.lp_certificate import LinearProgram, solve_lp

__all__ = ["coupled_scan_bound", "coupled_program"]

U = 2.0**-53


def _events(m: int, W: int, k: int) -> tuple[list[tuple[int, int]], np.ndarray]:
    """A side's events ``(d, v)`` for ``d <= W`` and ``(0, -1)`` (none by ``W``), and their counts."""
    ev = [(d, v) for d in range(1, W + 1) for v in range(k)] + [(0, -1)]
    cnt = np.array([m - d + 1 for d in range(1, W + 1) for _ in range(k)] + [m - W], dtype=float)
    return ev, cnt


def _flow(Q: np.ndarray, W: int, c: int, k: int, base: int, rows: list, r0: int) -> tuple[int, int, list[int]]:
    """Flow rows of one occupation measure from start ``c`` (variables from ``base``): its event columns."""
    mu = lambda d, v: base + d * k + v  # noqa: E731
    nu = lambda d, v: base + W * k + d * k + v  # noqa: E731
    rest = base + 2 * W * k
    r = r0
    b = []
    for v in range(k):
        rows.append((r, nu(0, v), 1.0, 0.0))
        b.append(1.0 if v == c else 0.0)
        r += 1
    for d in range(W - 1):
        for w in range(k):
            rows.append((r, nu(d + 1, w), 1.0, 0.0))
            for v in range(k):
                rows += [(r, nu(d, v), -Q[v, w], Q[v, w] * U), (r, mu(d, v), Q[v, w], Q[v, w] * U)]
            b.append(0.0)
            r += 1
    rows.append((r, rest, 1.0, 0.0))
    for v in range(k):
        rows += [(r, nu(W - 1, v), -1.0, 0.0), (r, mu(W - 1, v), 1.0, 0.0)]
    b.append(0.0)
    return r + 1, 2 * W * k + 1, [mu(d, v) for d in range(W) for v in range(k)] + [rest], b  # type: ignore[return-value]


def coupled_program(chain: object, n: int, p: int, E: float, W: tuple[int, int]) -> LinearProgram:
    """The LP of the module docstring at budget ``E`` (exact data), truncated at ``W = (W_left, W_right)``."""
    kc = as_kchain(chain)
    k = kc.k
    mL, mR = p, n - 1 - p
    if mL < 1 or mR < 1:
        raise ValueError("coupled scans need records on both sides of p")
    QL, QR = side_chain(kc, "left"), side_chain(kc, "right")
    pi = np.array([float(v) for v in kc.exact_stationary()])
    evL, cL = _events(mL, W[0], k)
    evR, cR = _events(mR, W[1], k)
    nL, nR = len(evL), len(evR)
    starts = list(itertools.product(range(k), repeat=2))
    nH = len(starts) * nL * nR
    eq: list = []
    b_eq: list = []
    r, col = 0, nH
    ub_rows: list = []
    for s, (cl, cr) in enumerate(starts):
        for Q, Wd, c0, axis in ((QL, W[0], cl, 0), (QR, W[1], cr, 1)):
            r, width, cols, b = _flow(Q, Wd, c0, k, col, eq, r)
            b_eq += b
            for i, cidx in enumerate(cols):  # the marginal of H over the other side's events
                eq.append((r, cidx, -1.0, 0.0))
                for j in range(nR if axis == 0 else nL):
                    h = s * nL * nR + (i * nR + j if axis == 0 else j * nR + i)
                    eq.append((r, h, 1.0, 0.0))
                b_eq.append(0.0)
                r += 1
            for d in range(Wd):
                for v in range(k):
                    ub_rows.append([(col + d * k + v, 1.0), (col + Wd * k + d * k + v, -1.0)])
            col += width
    N = col
    c = np.zeros(N)
    for s, (cl, cr) in enumerate(starts):
        w = float(sum(pi[x] * QL[x, cl] * QR[x, cr] for x in range(k)))
        c[s * nL * nR:(s + 1) * nL * nR] = w * (cL[:, None] + cR[None, :]).ravel()
    A_ub, dA = _privacy(QL, QR, starts, nL, nR, k, E, ub_rows, N)
    ri, ci, vi, ei = (np.array(v) for v in zip(*eq))
    A_eq = sp.csr_matrix((vi, (ri.astype(int), ci.astype(int))), shape=(r, N))
    dA_eq = sp.csr_matrix((ei, (ri.astype(int), ci.astype(int))), shape=(r, N))
    return LinearProgram(c, A_ub, np.zeros(A_ub.shape[0]), A_eq, np.array(b_eq), np.ones(N), dA, dA_eq,
                         np.abs(c) * (2 * k + 8) * U)


def _privacy(QL: np.ndarray, QR: np.ndarray, starts: list, nL: int, nR: int, k: int, E: float, extra: list,
             N: int) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Rows ``mu <= nu`` and, per event pair and ordered pair, :math:`\\sum(T_x-ET_{x'})H\\le0` with error bounds."""
    rows, cols, vals, errs = [], [], [], []
    r = 0
    for entries in extra:
        for cidx, v in entries:
            rows.append(r), cols.append(cidx), vals.append(v), errs.append(0.0)
        r += 1
    # a ratio beyond the doubles (eps >= 710): no privacy rows at all, a relaxation (still a bound)
    pairs = [(x, y) for x in range(k) for y in range(k) if x != y] if math.isfinite(E) else []
    for x, y in pairs:
        coef = np.array([QL[x, cl] * QR[x, cr] - E * QL[y, cl] * QR[y, cr] for cl, cr in starts])
        err = np.array([(QL[x, cl] * QR[x, cr] + E * QL[y, cl] * QR[y, cr]) * 8 * U for cl, cr in starts])
        if not np.any(coef > 0):
            continue
        for i in range(nL * nR):
            for s in range(len(starts)):
                if coef[s] != 0.0:
                    rows.append(r), cols.append(s * nL * nR + i), vals.append(coef[s]), errs.append(err[s])
            r += 1
    A = sp.csr_matrix((vals, (rows, cols)), shape=(r, N))
    D = sp.csr_matrix((errs, (rows, cols)), shape=(r, N))
    return A, D


def coupled_scan_bound(chain: object, n: int, *, eps: float, p: int, window: int | None = None,
                       time_limit: float | None = None) -> tuple[float, dict]:
    r"""A certified upper bound on the utility of every coupled scan (hence every scan) of ``n`` records.

    ``window``: events of each side beyond this many records are merged (default: 17 records for two
    states, 7 for three, so the joint law has at most ~5,000 entries).  Returns ``(bound, info)``; the bound
    is ``inf`` where the LP gives no dual point within ``time_limit`` seconds.
    """
    kc = as_kchain(chain)
    k = kc.k
    w = window if window is not None else max(1, int((5000**0.5 / k - 1) / k))
    W = (min(p, w), min(n - 1 - p, w))
    lp = coupled_program(kc, n, p, exp_enclosure(eps)[1], W)
    try:
        sol = solve_lp(lp, time_limit=time_limit)
    except RuntimeError:  # no dual point (out of time): no bound from here
        return math.inf, {"W": W, "variables": int(lp.c.shape[0])}
    return math.nextafter(sol.bound / n, math.inf), {"W": W, "variables": int(lp.c.shape[0])}
