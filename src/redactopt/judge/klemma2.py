r"""Lemma 2 on k-state chains: which values a private mechanism may publish at all, decided soundly.

If value ``v`` is published with positive probability at distance ``d`` on side ``s``, the event
:math:`\{Y_t=v\}` has :math:`\Pr(\cdot\mid X_p=x)=(P_s^d)_{xv}(1-q_t[v])`, so its likelihood ratio
for the pair :math:`(x,x')` is :math:`e^{\rho_v(d)[x,x']}`; it is a union of outputs, hence a
mediant of their ratios, and some output is at least as extreme.  Both sides of ``p`` have
log-ratio maxima :math:`\ge 0` for every pair (their patterns' probabilities sum to 1 under each
value), so a side can spend at most the whole :math:`\epsilon` on any pair, and ``v`` may be
published at distance ``d`` only if the pointwise influence :math:`i_s(d,v)\le\epsilon`
(:mod:`redactopt.model.kinfluence`).

**Sound exclusions.**  A value is excluded only if that is proved: the float influence exceeds
``eps`` beyond its error bound (:func:`~redactopt.model.kinfluence.kprovably_above`), or — within
the band — the rational :math:`P^d` (:func:`redactopt.judge.kexact.exact_kn_step`, ``d <= 64``)
decides it; an infinite influence (a zero in :math:`P^d`) is confirmed on the exact zero pattern
(boolean matrix powers).  Undecidable values are kept, so every bound built on this is a bound.
"""

from __future__ import annotations

import math

import numpy as np

from redactopt._validate import check_eps, check_n, check_private
from redactopt.judge.exact import MAX_EXACT_N, ratio_at_most_exp
from redactopt.judge.kexact import exact_kn_step
from redactopt.judge.tolerances import round_up
from redactopt.model.kchain import KChain
from redactopt.model.kinfluence import kdelta_star, kmax_influence, kprovably_above, pair_log_ratios, side_matrix

__all__ = ["kpublishable", "klemma2_upper_bound", "reach_pattern"]

#: Positive entries of a computed P^d below this are not trusted to carry their relative accuracy.
_SAFE_MIN = 1e-290


def reach_pattern(chain: KChain, m: int, side: str = "right") -> np.ndarray:
    """Exact zero pattern of :math:`P_s^d`, ``d = 1..m``: ``out[d-1, x, v]`` true iff some path has length ``d``."""
    A = side_matrix(chain, side) > 0.0
    out = np.zeros((m, chain.k, chain.k), dtype=bool)
    cur = np.eye(chain.k, dtype=bool)
    for d in range(m):
        cur = (cur.astype(np.int64) @ A.astype(np.int64)) > 0
        out[d] = cur
    return out


def kpublishable(chain: KChain, m: int, *, eps: float, side: str = "right") -> np.ndarray:
    r"""May value ``v`` be published at distance ``d = 1..m`` on ``side``?  ``(m, k)`` bool.

    True unless it is proved that :math:`i_s(d,v)>\epsilon` (module docstring).
    """
    eps = check_eps(eps)
    k = chain.k
    if m <= 0:
        return np.zeros((0, k), dtype=bool)
    # beyond Delta* the computed max-influence is <= eps: nothing there is provably above.
    # Delta* is searched only when it is at most m (a chain that mixes too slowly for eps may
    # have none within reach, and then every distance 1..m is examined below)
    if kmax_influence(chain, m, side) <= eps:
        reach_d = kdelta_star(chain, eps, side)
        if m > reach_d:
            out = np.ones((m, k), dtype=bool)
            out[:reach_d] = kpublishable(chain, reach_d, eps=eps, side=side)
            return out
    rho = pair_log_ratios(chain, m, side)  # [d-1, v, x, x']
    off = ~np.eye(k, dtype=bool)
    reach = reach_pattern(chain, m, side)  # [d-1, x, v]
    num = np.swapaxes(reach, 1, 2)[:, :, :, None]  # [d-1, v, x, 1]
    den = np.swapaxes(reach, 1, 2)[:, :, None, :]  # [d-1, v, 1, x']
    structural_inf = num & ~den & off  # exactly: numerator positive, denominator zero
    Pd_ok = np.ones(m, dtype=bool)
    P = side_matrix(chain, side)
    cur = np.eye(k)
    for d in range(m):
        cur = cur @ P
        pos = cur[cur > 0.0]
        Pd_ok[d] = bool(pos.size == 0 or pos.min() >= _SAFE_MIN) and np.array_equal(cur > 0.0, reach[d])
    dist = np.arange(1, m + 1)[:, None, None, None]
    finite = np.isfinite(rho) & off
    above = finite & kprovably_above(np.where(finite, rho, 0.0), eps, dist, k) & Pd_ok[:, None, None, None]
    excluded = (structural_inf | above).any(axis=(2, 3))  # [d-1, v]
    # the band: not provably above, not provably below -> decide exactly (d <= 64), else keep
    band = (finite & (rho > eps * (1.0 - 1e-6) - 1e-12) & ~above).any(axis=(2, 3)) & ~excluded
    band |= (~Pd_ok[:, None]) & ~excluded
    for i, v in zip(*np.nonzero(band)):
        d = int(i) + 1
        if d > MAX_EXACT_N:
            continue  # kept: outward
        ex = exact_kn_step(chain, d, reverse=side == "left")
        for x in range(k):
            for y in range(k):
                if x == y or ex[x][v] == 0:
                    continue
                if ex[y][v] == 0 or ratio_at_most_exp(ex[x][v] / ex[y][v], eps) is False:
                    excluded[i, v] = True
    return ~excluded


def klemma2_upper_bound(chain: KChain, n: int, *, eps: float, private: object) -> float:
    r"""Lemma 2's bound on the utility of every :math:`\epsilon`-private mechanism on a k-state chain.

    .. math:: \nu\le\frac1n\sum_t\sum_v\pi_v\,\mathbb 1\big[\,i_{s(t,p)}(|t-p|, v)\le\epsilon\ \text{for every private } p\big],

    the private records never published; exclusions are proofs (:func:`kpublishable`).
    ``private`` holds 0-based indices.
    """
    n = check_n(n)
    eps = check_eps(eps)
    priv = check_private(private, n)
    allowed = np.ones((n, chain.k), dtype=bool)
    for p in priv:
        allowed[p] = False
        if p > 0:
            allowed[:p] &= kpublishable(chain, p, eps=eps, side="left")[::-1]
        if p < n - 1:
            allowed[p + 1 :] &= kpublishable(chain, n - 1 - p, eps=eps, side="right")
    counts = allowed.sum(axis=0)  # records that may show each value: exact integers
    # a sum of k products and one division, rounded outward (as the binary bound: never below its exact value)
    return round_up(math.fsum(float(pi) * int(c) for pi, c in zip(chain.stationary, counts)) / n, 2 * chain.k)
