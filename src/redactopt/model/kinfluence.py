r"""Pointwise influence on k-state chains (Definition 3 generalised) and the window terms of Lemma 1.

On a k-state chain the private record :math:`X_p` takes ``k`` values, so observing
:math:`X_t=v` alone at distance :math:`\Delta` moves the odds of *every ordered pair*
:math:`(x,x')` of private values by

.. math:: \rho_v(\Delta)[x,x'] = \log\frac{(P_s^\Delta)_{xv}}{(P_s^\Delta)_{x'v}},

with :math:`P_s=P` on the right of ``p`` and the time-reversed :math:`P_s=\tilde P` on the left
(:meth:`~redactopt.model.kchain.KChain.reversed_matrix`; for a binary chain both are ``P`` and
:math:`\rho_v[0,1]` is the binary :math:`\rho_v`).  ``+inf`` when the denominator is 0 and the
numerator is not; a 0/0 pair says nothing (``nan``, skipped by every maximum).

* The **pointwise influence** of :math:`X_p` on :math:`X_t=v` is
  :math:`i_s(\Delta, v)=\max_{x\ne x'}\rho_v(\Delta)[x,x']` (for k = 2 the absolute value of the
  binary log-ratio, Proposition 1).
* The **window term** of a side whose nearest published record is at distance :math:`\Delta`
  and everything nearer is ⊥ is :math:`\ell_s(\Delta)[x,x']=\max_v\rho_v(\Delta)[x,x']` (Lemma 1),
  and the leakage of a data-independent window is :math:`\max_{x\ne x'}\ell_\ell(a)[x,x']+\ell_r(b)[x,x']`.
  Each :math:`\ell_s(\Delta)[x,x']` is non-increasing in :math:`\Delta`: row ``x`` of
  :math:`P^{\Delta+1}` is row ``x`` of :math:`P^\Delta` times ``P``, so each of its ratios is a
  mediant of the previous ones (data processing).  Hence the max-influence
  :math:`\max_v i_s(\Delta, v)` is non-increasing too, and :math:`\Delta^\star_s(\epsilon)` (the
  first distance with max-influence at most :math:`\epsilon`) is well defined.

**Accuracy.**  :math:`P^\Delta` is formed by products of the non-negative matrix (no
cancellation), so each entry has relative error at most about :math:`\Delta k` ulps and each
:math:`\rho` an absolute error at most :func:`kinfluence_atol`; exclusions use
:func:`kprovably_above`, which errs outward, and the judges decide the band exactly in rationals
(:mod:`redactopt.judge.klemma2`).
"""

from __future__ import annotations

import numpy as np

from redactopt._validate import check_delta, check_eps
from redactopt.model.kchain import KChain

__all__ = [
    "SIDES",
    "side_matrix",
    "pair_log_ratios",
    "kpointwise_influence",
    "kmax_influence",
    "window_terms",
    "kdelta_star",
    "kinfluence_atol",
    "kprovably_above",
    "KINFLUENCE_RTOL",
]

SIDES = ("left", "right")

#: Relative margin of every outward exclusion (as :data:`redactopt.model.influence.INFLUENCE_RTOL`).
KINFLUENCE_RTOL = 1e-9

_ULP = 2.0**-52


def kinfluence_atol(delta: object, k: int) -> np.ndarray:
    r"""Absolute error bound of a computed :math:`\rho` at distance ``delta``: :math:`4(\Delta+1)k` ulps + 1e-15."""
    return 4.0 * (np.asarray(delta, dtype=float) + 1.0) * k * _ULP + 1e-15


def kprovably_above(value: object, budget: float, delta: object, k: int) -> np.ndarray:
    """Whether computed log-ratios (or sums of them, ``delta`` the sum of their distances) exceed ``budget``
    beyond their rounding error: ``value > budget * (1 + KINFLUENCE_RTOL) + kinfluence_atol(delta, k)``."""
    return np.asarray(value) > budget * (1.0 + KINFLUENCE_RTOL) + kinfluence_atol(delta, k)


def side_matrix(chain: KChain, side: str) -> np.ndarray:
    """``P`` for the right side of ``p``, the time-reversed ``P~`` for the left side."""
    if side == "right":
        return chain.transition
    if side == "left":
        return chain.reversed_matrix()
    raise ValueError(f"side must be 'left' or 'right', got {side!r}")


def _powers(P: np.ndarray, m: int) -> np.ndarray:
    out = np.empty((m, P.shape[0], P.shape[0]))
    if m:
        out[0] = P
    for d in range(1, m):
        out[d] = out[d - 1] @ P
    return out


def _ratios(Pd: np.ndarray) -> np.ndarray:
    """``out[..., v, x, x'] = log Pd[..., x, v] - log Pd[..., x', v]`` (nan for 0/0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lg = np.log(np.swapaxes(Pd, -1, -2))  # [..., v, x]
        return lg[..., :, :, None] - lg[..., :, None, :]


def pair_log_ratios(chain: KChain, m: int, side: str = "right") -> np.ndarray:
    r""":math:`\rho_v(\Delta)[x,x']` for :math:`\Delta=1..m`, shape ``(m, k, k, k)`` indexed ``[Δ-1, v, x, x']``.

    ``nan`` where both entries are 0 (the pair is not told apart), ``±inf`` where one is.
    """
    m = check_delta(m, "m", allow_zero=True)
    return _ratios(_powers(side_matrix(chain, side), m))


def _pair_max(r: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    k = r.shape[-1]
    off = ~np.eye(k, dtype=bool)
    r = np.where(np.isnan(r), -np.inf, r)
    r = np.where(off, r, -np.inf)
    return r.max(axis=axes)


def kpointwise_influence(chain: KChain, delta: int, side: str = "right") -> np.ndarray:
    r"""Pointwise influence :math:`i_s(\Delta, v)=\max_{x\ne x'}\rho_v(\Delta)[x,x']` for every value ``v`` (shape ``(k,)``).

    Definition 3 generalised: how far observing :math:`X_t=v` alone at distance ``delta`` on
    ``side`` moves the odds of some pair of private values (``inf``: it rules a value out).
    """
    d = check_delta(delta)
    side_matrix(chain, side)  # validates side
    Pd = chain.n_step_matrix(d, reverse=side == "left")
    return _pair_max(_ratios(Pd), (-2, -1))


def kmax_influence(chain: KChain, delta: int, side: str = "right") -> float:
    r"""The max-influence :math:`\max_v i_s(\Delta, v)` (non-increasing in :math:`\Delta`)."""
    return float(np.max(kpointwise_influence(chain, delta, side)))


def window_terms(chain: KChain, m: int, side: str = "right") -> np.ndarray:
    r"""Lemma 1's terms :math:`\ell_s(\Delta)[x,x']=\max_v\rho_v(\Delta)[x,x']`, ``Δ = 1..m``, then "nothing published".

    Shape ``(m + 1, k, k)``; the last row (no record of the side published) is 0; the diagonal
    is 0.  Non-increasing in :math:`\Delta` for every pair (module docstring).
    """
    m = check_delta(m, "m", allow_zero=True)
    k = chain.k
    r = pair_log_ratios(chain, m, side)
    r = np.where(np.isnan(r), -np.inf, r).max(axis=1)  # [Δ-1, x, x']
    out = np.zeros((m + 1, k, k))
    out[:m] = r
    idx = np.arange(k)
    out[:, idx, idx] = 0.0
    return out


def kdelta_star(chain: KChain, eps: float, side: str = "right", *, limit: int = 10**7) -> int:
    r""":math:`\Delta^\star_s(\epsilon)`: the first distance whose max-influence is at most ``eps`` (computed).

    By bisection on the non-increasing max-influence with :math:`P^\Delta` by repeated squaring.
    ``limit`` caps the search (a ``ValueError`` beyond it: the chain mixes too slowly for ``eps``).
    """
    eps = check_eps(eps)

    def ok(d: int) -> bool:
        return kmax_influence(chain, d, side) <= eps

    hi = 1
    while not ok(hi):
        hi *= 2
        if hi > limit:
            raise ValueError(f"the max-influence stays above eps={eps:g} beyond {limit} records")
    lo = hi // 2  # not ok (or 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return max(1, hi)

