r"""Influence of the private record on the others (Definition 3, Proposition 1, Appendix A), for every chain.

Observing :math:`X_t=v` alone at distance :math:`\Delta` from the private record moves the odds
of every ordered pair :math:`(x,x')` of its values by

.. math:: \rho_v(\Delta)[x,x'] = \log\frac{(P_s^\Delta)_{xv}}{(P_s^\Delta)_{x'v}},

with :math:`P_s=P` on the right of ``p`` and the time-reversed :math:`P_s=\tilde P` on the left
(:meth:`~redactopt.model.chain.Chain.reversed_matrix`).  ``+inf`` when the denominator is 0 and
the numerator is not; a 0/0 pair says nothing (``nan``, skipped by every maximum).

* The **pointwise influence** of :math:`X_p` on :math:`X_t=v` is
  :math:`i_s(\Delta, v)=\max_{x\ne x'}\rho_v(\Delta)[x,x']` (:func:`pointwise_influence`).
* The **window term** of a side whose nearest published record is at distance :math:`\Delta`
  and everything nearer is ⊥ is :math:`\ell_s(\Delta)[x,x']=\max_v\rho_v(\Delta)[x,x']` (Lemma 1,
  :func:`window_terms`), non-increasing in :math:`\Delta` (row ``x`` of :math:`P^{\Delta+1}` is row
  ``x`` of :math:`P^\Delta` times ``P``: each ratio is a mediant of the previous ones), so the
  max-influence is non-increasing and :math:`\Delta^\star(\epsilon)` is well defined
  (:func:`delta_star`).

**Two kernels, chosen by the chain.**  A binary chain (:attr:`~redactopt.model.chain.Chain.binary`:
two states with every transition probability in (0, 1), a
:class:`~redactopt.model.chain.MarkovChain` or a ``2 x 2`` matrix alike) is reversible and its
influences have the closed forms of Proposition 1 (:func:`side_log_ratios`, accurate for
distances in the millions; :func:`delta_star` from the threshold of Appendix A).  A chain on
more states (or on two with an impossible transition) forms :math:`P^\Delta` by products of
the non-negative matrix (no cancellation, so each :math:`\rho` has an absolute error at most
:func:`influence_atol`) and finds
:math:`\Delta^\star` by bisection.  Callers never choose: every function takes any chain.
Exclusions err outward (:func:`provably_above`).

The 3R regions (:func:`regions`, :func:`low_value`) are built on the two values of a binary
record (one of "small", the other of "large" influence), so they exist for two-state chains only.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from collections.abc import Iterable

import numpy as np

from redactopt._validate import check_delta, check_eps, check_index, check_n, check_real
from redactopt.model.chain import Chain, MarkovChain

__all__ = [
    "SIDES",
    "side_matrix",
    "pointwise_influence",
    "max_influence",
    "set_max_influence",
    "delta_star",
    "pair_log_ratios",
    "window_terms",
    "influence_atol",
    "Regions",
    "regions",
    "region_letters",
    "low_value",
    "side_log_ratios",
    "side_log_ratio_maxima",
    "side_log_ratio_envelope",
    "provably_above",
    "INFLUENCE_RTOL",
]

#: The two sides of the private record: ``"left"`` reads the time-reversed chain outward.
SIDES = ("left", "right")


def _two_state(chain: Chain, what: str) -> None:
    """Refuse a chain that is not binary (:attr:`~redactopt.model.chain.Chain.binary`) for a construction built on its closed forms."""
    if not chain.binary:
        raise ValueError(f"{what} are defined through the two values of a binary record (two states, every "
                         f"transition probability in (0, 1)); this chain has {chain.k} states: {chain!r}")


def low_value(chain: MarkovChain) -> int:
    """The record value with the smaller pointwise influence at every distance.

    It is 0 when alpha <= beta (the paper's footnote 2) and 1 when alpha > beta.
    When alpha == beta both values have equal influence and 0 is returned.  Two-state chains only.
    """
    _two_state(chain, "the low-influence value and the 3R regions")
    return 0 if chain.alpha <= chain.beta else 1


#: Relative accuracy claimed for :func:`side_log_ratios` (hence every influence): measured
#: errors are below 1e-12 (``tests/test_influence.py`` against exact rational matrix powers).
#: A decision that *excludes* something because an influence exceeds a budget is taken only
#: when it exceeds the budget by this relative margin (:func:`provably_above`), so rounding
#: never excludes what exact arithmetic allows and every bound built on it stays a bound.
INFLUENCE_RTOL = 1e-9

#: Distances up to this many steps form P^d by products of the non-negative matrix P, whose
#: entries then keep full relative accuracy (no cancellation in pi_x + pi_x' lambda^d).
_PRODUCT_STEPS = 64


_ULP = 2.0**-52


def influence_atol(delta: object, k: int) -> np.ndarray:
    r"""Absolute error bound of a :math:`\rho` computed from matrix products at distance ``delta``.

    :math:`4(\Delta+1)k` ulps + 1e-15: each entry of :math:`P^\Delta` formed by products of a
    non-negative matrix has a relative error of about :math:`\Delta k` ulps.
    """
    return 4.0 * (np.asarray(delta, dtype=float) + 1.0) * k * _ULP + 1e-15


def provably_above(value: object, budget: float, *, delta: object = None, k: int = 2) -> np.ndarray | bool:
    """Whether a computed influence (or sum of them) exceeds ``budget`` beyond its rounding error.

    The outward test of the bounds (Lemma 2, data-independent windows, fixed supports):
    true only if ``value > budget * (1 + INFLUENCE_RTOL)`` — plus :func:`influence_atol` when
    ``delta`` (the distance, or the sum of the distances, behind ``value``) is given for values
    formed from matrix products on ``k`` states.
    """
    limit = budget * (1.0 + INFLUENCE_RTOL)
    if delta is not None:
        limit = limit + influence_atol(delta, k)
    return np.asarray(value) > limit


def _as_deltas(delta: object) -> tuple[np.ndarray, bool]:
    if np.ndim(delta) == 0:
        return np.array([check_delta(delta)], dtype=float), True
    arr = np.asarray(delta)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        if not np.all(np.isfinite(arr)) or not np.all(np.asarray(arr, float) == np.round(arr)):
            raise TypeError(f"delta must hold integers, got {arr!r}")
    if arr.size and np.min(arr) < 1:
        raise ValueError(f"delta must be >= 1, got minimum {np.min(arr)}")
    return arr.astype(float), False


def side_log_ratios(chain: MarkovChain, delta: int | Iterable[int]) -> np.ndarray:
    r"""Signed log-ratios :math:`\rho_v(\Delta)=\log (P^\Delta)_{0v}/(P^\Delta)_{1v}`, shape ``(len, 2)``.

    Publishing ``X_t = v`` at distance :math:`\Delta` from ``p`` (and nothing nearer) moves
    the odds of :math:`X_p = 0` by :math:`\rho_v(\Delta)`; its absolute value is the
    pointwise influence :math:`i(X_p\rightsquigarrow X_t=v)` of Definition 3.  The one
    place the influences are computed (Proposition 1, Appendix A):

    .. math::
        \rho_0 = \log\frac{1+\frac{\alpha}{\beta}\lambda^\Delta}{1-\lambda^\Delta},\qquad
        \rho_1 = -\log\frac{1+\frac{\beta}{\alpha}\lambda^\Delta}{1-\lambda^\Delta},

    with ``log1p`` where :math:`|\lambda^\Delta|<1/2` (full relative accuracy for tiny
    influences) and, where :math:`|\lambda^\Delta|\ge 1/2`, the logarithms of the entries of
    :math:`P^\Delta` formed by products of ``P`` (up to 64 steps; the closed form beyond,
    where no cancellation is possible).  Relative error below :data:`INFLUENCE_RTOL`.

    Parameters
    ----------
    chain : MarkovChain
    delta : int or array of int
        Distances :math:`\Delta \ge 1`.
    """
    d, _ = _as_deltas(delta)
    _two_state(chain, "the binary log-ratios")
    lp, om = chain.lam_powers(d)
    with np.errstate(divide="ignore"):
        log_om = np.where(np.abs(lp) < 0.5, np.log1p(-np.where(np.abs(lp) < 0.5, lp, 0.0)), np.log(om))
    a_b = chain.alpha / chain.beta
    out = np.empty((d.size, 2))
    out[:, 0] = np.log1p(a_b * lp) - log_om
    out[:, 1] = log_om - np.log1p(lp / a_b)
    strong = np.flatnonzero((np.abs(lp) >= 0.5) & (d <= _PRODUCT_STEPS))
    if strong.size:
        powers = chain.n_step_matrices(int(d[strong].max()))
        Pd = powers[d[strong].astype(int) - 1]
        out[strong] = np.log(Pd[:, 0, :]) - np.log(Pd[:, 1, :])
    return out


def side_matrix(chain: Chain, side: str) -> np.ndarray:
    """``P`` for the right side of ``p``, the time-reversed ``P~`` for the left side (the same for two states)."""
    if side == "right":
        return chain.transition
    if side == "left":
        return chain.reversed_matrix()
    raise ValueError(f"side must be 'left' or 'right', got {side!r}")


def _ratios(Pd: np.ndarray) -> np.ndarray:
    """``out[..., v, x, x'] = log Pd[..., x, v] - log Pd[..., x', v]`` (nan for 0/0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lg = np.log(np.swapaxes(Pd, -1, -2))  # [..., v, x]
        return lg[..., :, :, None] - lg[..., :, None, :]


def _pair_max(r: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """Maximum over ``axes`` of pair ratios ``[..., x, x']``, skipping 0/0 and the diagonal."""
    k = r.shape[-1]
    r = np.where(np.isnan(r) | np.eye(k, dtype=bool), -np.inf, r)
    return r.max(axis=axes)


def _matrix_pointwise(chain: Chain, d: np.ndarray, side: str) -> np.ndarray:
    """:math:`i_s(\\Delta, v)` for each distance of ``d`` and every ``v`` from :math:`P^\\Delta`, shape ``(len, k)``."""
    side_matrix(chain, side)  # validates side
    out = np.empty((d.size, chain.k))
    for i, delta in enumerate(d.astype(np.int64).tolist()):
        out[i] = _pair_max(_ratios(chain.n_step_matrix(delta, reverse=side == "left")), (-2, -1))
    return out


def pointwise_influence(chain: Chain, delta: int | Iterable[int], x: int | None = None, *,
                        side: str = "right") -> float | np.ndarray:
    r"""Pointwise influence :math:`i(X_p \rightsquigarrow X_t = x)` at distance ``delta`` (Def. 3).

    :math:`i_s(\Delta,x)=\max_{y\ne y'}\rho_x(\Delta)[y,y']` (module docstring).  For two states
    the closed form of Proposition 1 (Eqs. 4, 5, 8, 9):

    .. math::
        i(X_p \rightsquigarrow X_t=1) = \Big|\log\frac{1+\frac{\beta}{\alpha}\lambda^\Delta}{1-\lambda^\Delta}\Big|,\qquad
        i(X_p \rightsquigarrow X_t=0) = \Big|\log\frac{1+\frac{\alpha}{\beta}\lambda^\Delta}{1-\lambda^\Delta}\Big|,

    with :math:`\lambda = 1-\alpha-\beta`, i.e. :math:`|\rho_x(\Delta)|` of
    :func:`side_log_ratios`.  (Proposition 1 as printed labels both bullets ``X_t = 1``;
    Eq. 8 shows the first is ``X_t = 0``.)  ``tests/test_influence.py`` checks it against
    matrix powers.

    Parameters
    ----------
    chain : Chain
    delta : int or array of int
        Distance(s) ``|p - t| >= 1``.
    x : int, optional
        State index of the other record's value; ``None``: every value.
    side : {"right", "left"}
        The side of ``p`` (the same for two-state chains, which are reversible).

    Returns
    -------
    float or numpy.ndarray
        Natural-log influence, ``>= 0`` (``inf``: observing ``x`` rules a private value out); with
        ``x=None`` one entry per value (last axis).
    """
    if x is not None and (isinstance(x, bool) or not isinstance(x, (int, np.integer)) or not 0 <= x < chain.k):
        raise ValueError(f"x must be a state index in 0..{chain.k - 1}, got {x!r}")
    d, scalar = _as_deltas(delta)
    if chain.binary:
        side_matrix(chain, side)
        table = np.abs(side_log_ratios(chain, d))
    else:
        table = _matrix_pointwise(chain, d, side)
    out = table if x is None else table[:, x]
    return (out[0] if x is None else float(out[0])) if scalar else out


def max_influence(chain: Chain, delta: int | Iterable[int], *, side: str = "right") -> float | np.ndarray:
    r"""Max-influence :math:`\mathcal{I}(X_p \rightsquigarrow X_t) = \hat i(\Delta)` (Def. 3, Prop. 1).

    The maximum of the pointwise influences over the values of :math:`X_t`; it is
    non-increasing in the distance for every chain (data processing), even when the pointwise
    influences oscillate (alpha + beta > 1).
    """
    d, scalar = _as_deltas(delta)
    out = np.max(pointwise_influence(chain, d, side=side), axis=-1)
    return float(out[0]) if scalar else out


def pair_log_ratios(chain: Chain, m: int, side: str = "right") -> np.ndarray:
    r""":math:`\rho_v(\Delta)[x,x']` for :math:`\Delta=1..m`, shape ``(m, k, k, k)`` indexed ``[Δ-1, v, x, x']``.

    ``nan`` where both entries are 0 (the pair is not told apart), ``±inf`` where one is.  Two
    states: from the closed form (:func:`side_log_ratios`).
    """
    m = check_delta(m, "m", allow_zero=True)
    side_matrix(chain, side)
    if chain.binary:
        r = side_log_ratios(chain, np.arange(1, m + 1)) if m else np.zeros((0, 2))
        out = np.zeros((m, 2, 2, 2))
        out[:, :, 0, 1] = r
        out[:, :, 1, 0] = -r
        return out
    return _ratios(chain.n_step_matrices(m, reverse=side == "left"))


def window_terms(chain: Chain, m: int, side: str = "right") -> np.ndarray:
    r"""Lemma 1's terms :math:`\ell_s(\Delta)[x,x']=\max_v\rho_v(\Delta)[x,x']`, ``Δ = 1..m``, then "nothing published".

    Shape ``(m + 1, k, k)``; the last row (no record of the side published) is 0; the diagonal
    is 0.  Non-increasing in :math:`\Delta` for every pair (module docstring).  Two states:
    ``[0, 1]`` and ``[1, 0]`` are :func:`side_log_ratio_maxima`'s :math:`\ell_0, \ell_1`.
    """
    m = check_delta(m, "m", allow_zero=True)
    k = chain.k
    out = np.zeros((m + 1, k, k))
    if chain.binary:
        side_matrix(chain, side)
        ell = side_log_ratio_maxima(chain, m)
        out[:m, 0, 1], out[:m, 1, 0] = ell[:, 0], ell[:, 1]
        return out
    r = pair_log_ratios(chain, m, side)
    out[:m] = np.where(np.isnan(r), -np.inf, r).max(axis=1)  # [Δ-1, x, x']
    idx = np.arange(k)
    out[:, idx, idx] = 0.0
    return out


def _side_terms(chain: Chain, d: int, side: str) -> np.ndarray:
    """``window_terms`` at one distance ``d >= 1``: the ``(k, k)`` matrix :math:`\\ell_s(d)` (0 diagonal)."""
    if chain.binary:
        lr = side_log_ratios(chain, d)[0]
        return np.array([[0.0, lr.max()], [(-lr).max(), 0.0]])
    r = _ratios(chain.n_step_matrix(d, reverse=side == "left"))
    out = np.where(np.isnan(r), -np.inf, r).max(axis=0)
    np.fill_diagonal(out, 0.0)
    return out


def side_log_ratio_maxima(chain: MarkovChain, m: int) -> np.ndarray:
    r"""One-sided terms of Lemma 1 for the nearest published record at distance ``d = 1..m``.

    Row ``d - 1`` holds :math:`(\ell_0(d), \ell_1(d))` with
    :math:`\ell_x(d)=\max_v\log (P^d)_{xv}/(P^d)_{\bar x v}`: the largest log-ratio in favour
    of :math:`X_p=x` that publishing a record at distance ``d`` (and nothing nearer) allows.
    Given :math:`X_p` the two sides are independent, so a window's leakage is
    :math:`\max_x[\ell_x(d_\ell)+\ell_x(d_r)]` (cf. :func:`set_max_influence`), and
    :math:`\max_x\ell_x(d)=\hat i(d)`.  The one table of these terms; from
    :func:`side_log_ratios`.
    """
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)):
        raise TypeError(f"m must be an integer, got {m!r} ({type(m).__name__})")
    if m < 0:
        raise ValueError(f"m must be >= 0, got {m}")
    if m == 0:
        return np.zeros((0, 2))
    r = side_log_ratios(chain, np.arange(1, int(m) + 1))
    return np.column_stack([r.max(axis=1), (-r).max(axis=1)])


def side_log_ratio_envelope(chain: MarkovChain, m: int) -> np.ndarray:
    r"""Non-increasing envelope of :func:`side_log_ratio_maxima` for binary search, shape ``(m, 2)``.

    Row ``d - 1`` holds :math:`\max_{d'\ge d}\ell_x(d')`.  The exact :math:`\ell_x` are
    non-increasing in ``d`` (data processing: :math:`X_{p+d+1}` is :math:`X_{p+d}` passed
    through ``P``), so the envelope equals them up to rounding and never lies below them:
    a search on it never accepts a distance the exact terms would refuse.
    """
    ell = side_log_ratio_maxima(chain, m)
    return np.maximum.accumulate(ell[::-1], axis=0)[::-1] if m else ell


def set_max_influence(chain: Chain, p: int, records: Iterable[int], n: int | None = None) -> float:
    r"""Max-influence :math:`\mathcal{I}(X_p \rightsquigarrow \mathbf{X}_S)` of a set of records (Def. 3).

    By the Markov property only the nearest record of ``S`` on each side of ``p``
    matters, and given ``X_p`` the two sides are independent, so

    .. math::
        \mathcal{I} = \max_{x\ne x'} \big[\ell_\ell(d_\ell)[x,x'] + \ell_r(d_r)[x,x']\big],
        \qquad \ell_s(d)[x,x'] = \max_{v}\log\tfrac{(P_s^{d})_{xv}}{(P_s^{d})_{x'v}}

    (:func:`window_terms`; for two states :math:`\max_x[\max_v\log\frac{P^{d_\ell}_{xv}}{P^{d_\ell}_{\bar xv}}
    + \max_u\log\frac{P^{d_r}_{xu}}{P^{d_r}_{\bar xu}}]`).

    Parameters
    ----------
    chain : Chain
    p : int
        0-based index of the private record.
    records : iterable of int
        0-based indices of ``S``.  The empty set has influence 0; a set that
        contains ``p`` has influence ``inf`` (Def. 3).
    n : int, optional
        Number of records, to range-check the indices.
    """
    idx = sorted({int(r) for r in records})
    if n is not None:
        n = check_n(n)
        check_index(p, n, "p")
        for r in idx:
            check_index(r, n, "records")
    if not idx:
        return 0.0
    if p in idx:
        return math.inf
    left = [r for r in idx if r < p]
    right = [r for r in idx if r > p]
    total = np.zeros((chain.k, chain.k))
    for rows, side in ((left, "left"), (right, "right")):
        if rows:
            total = total + _side_terms(chain, p - rows[-1] if side == "left" else rows[0] - p, side)
    np.fill_diagonal(total, -np.inf)
    return float(total.max())


def delta_star(chain: Chain, eps: float, *, side: str | None = None, limit: int = 10**7) -> int:
    r""":math:`\Delta^\star(\epsilon)`: the smallest distance :math:`\Delta \ge 1` with
    :math:`\hat i(\Delta) \le \epsilon` (Theorem 2, Appendix A).

    ``side`` ``"left"``/``"right"``: that side's first distance; ``None``: the larger of the two
    (both sides are private from there on).  A two-state chain is reversible, so the sides agree.

    Two states: solving :math:`\hat i(\Delta)\le\epsilon` with :math:`c=\max(\alpha/\beta,\beta/\alpha)`
    gives :math:`|\lambda|^\Delta \le (e^\epsilon-1)/(e^\epsilon+c)` for lazy chains and
    even distances, and :math:`|\lambda|^\Delta \le (e^\epsilon-1)/(c e^\epsilon+1)` for odd
    distances of oscillating chains (Appendix A).  The lazy closed form printed at the
    end of Appendix A uses the odd-distance threshold; the candidate from the correct
    threshold is confirmed against :func:`max_influence`, which is monotone, so the
    answer is exact.  Independent chains (alpha + beta = 1) give 1.

    More states: bisection on the non-increasing max-influence (:math:`P^\Delta` by repeated
    squaring); ``limit`` caps the search (a ``ValueError`` beyond it: the chain mixes too slowly
    for ``eps``).
    """
    eps = check_eps(eps)
    if side is not None:
        side_matrix(chain, side)
    if chain.binary:
        return _delta_star(chain, eps)
    if side is None:
        return max(_delta_star_matrix(chain, eps, "left", limit), _delta_star_matrix(chain, eps, "right", limit))
    return _delta_star_matrix(chain, eps, side, limit)


@functools.lru_cache(maxsize=1024)
def _delta_star_matrix(chain: Chain, eps: float, side: str, limit: int) -> int:
    """:func:`delta_star` of one side of a chain on more than two states: doubling, then bisection."""

    def ok(d: int) -> bool:
        return max_influence(chain, d, side=side) <= eps

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


def _first_within(chain: MarkovChain, eps: float, lo: int, hi: int) -> int:
    """The first distance in ``lo + 1 .. hi`` whose max-influence is within ``eps`` (``hi``'s is; ``lo``'s is not)."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if max_influence(chain, mid) <= eps else (mid, hi)
    return max(1, hi)


@functools.lru_cache(maxsize=1024)
def _delta_star(chain: MarkovChain, eps: float) -> int:
    """:func:`delta_star` of checked arguments, memoised (release plans ask for it once per region)."""
    if chain.lam == 0.0:
        return 1
    if max_influence(chain, 1) <= eps:
        return 1
    c = max(chain.alpha / chain.beta, chain.beta / chain.alpha)
    log_abs_lam = chain.log_abs_lam
    # 1/(e^eps - 1), also where e^eps overflows (eps >= 710)
    r = 1.0 / math.expm1(eps) if eps <= 700.0 else math.exp(-eps) / -math.expm1(-eps)
    logs = [-math.log1p((1.0 + c) * r)]  # log of (e^eps - 1) / (e^eps + c)
    if chain.lam < 0.0:
        logs.append(-math.log(c + (c + 1.0) * r))  # log of (e^eps - 1) / (c e^eps + 1)
    # at a subnormal eps 1/expm1 overflows and the guess is infinite: walk up from 1 by doubling instead
    guess = min(lt / log_abs_lam for lt in logs)
    if not math.isfinite(guess):
        d = 1
        while max_influence(chain, d) > eps:
            d *= 2
        return _first_within(chain, eps, d // 2, d)
    guess = max(1, math.floor(guess))
    # Walk from the analytic guess to the exact first distance (a few steps at most).
    d = guess
    while d > 1 and max_influence(chain, d - 1) <= eps:
        d -= 1
    while max_influence(chain, d) > eps:
        d += 1
    return d


@dataclass(frozen=True)
class Regions:
    """The three regions of Section II / Eq. 1 for one private record.

    Attributes
    ----------
    labels : numpy.ndarray
        ``n`` one-letter labels: ``"P"`` (the private record), ``"S"`` (small
        leakage, always released), ``"M"`` (medium: the low-influence value may be
        released), ``"L"`` (large: always redacted).
    low_value : int
        The value that may be released in ``R_M`` (0 when alpha <= beta, else 1).
    p : int
        0-based private index.
    """

    labels: np.ndarray
    low_value: int
    p: int

    def indices(self, label: str) -> np.ndarray:
        """0-based indices with the given label."""
        return np.flatnonzero(self.labels == label)

    def medium_left(self) -> np.ndarray:
        """0-based indices of :math:`R_M^{(\\ell)} = R_M \\cap [1, p)`."""
        idx = self.indices("M")
        return idx[idx < self.p]

    def medium_right(self) -> np.ndarray:
        """0-based indices of :math:`R_M^{(r)} = R_M \\cap (p, n]`."""
        idx = self.indices("M")
        return idx[idx > self.p]


def regions(chain: MarkovChain, n: int, p: int, eps_left: float, eps_right: float) -> Regions:
    r"""Split the records into :math:`R_S, R_M, R_L` for side budgets (Section II, Section IV).

    A record left of ``p`` is compared with ``eps_left``, one right of ``p`` with
    ``eps_right``:

    * :math:`R_L`: :math:`\epsilon_s < \min_x i(X_p\rightsquigarrow X_t=x)`,
    * :math:`R_M`: :math:`\min_x i \le \epsilon_s < \max_x i`,
    * :math:`R_S`: :math:`\max_x i \le \epsilon_s`.

    (Section II prints :math:`R_S` with ``X_t = 1`` twice; the intended condition is
    the max-influence.)  A side budget of 0 puts every record of that side in
    :math:`R_L`.

    Parameters
    ----------
    n : int
        Number of records.
    p : int
        0-based private index.
    eps_left, eps_right : float
        Non-negative side budgets.
    """
    _two_state(chain, "the 3R regions")
    n = check_n(n)
    p = check_index(p, n, "p")
    budgets = []
    for name, value in (("eps_left", eps_left), ("eps_right", eps_right)):
        v = check_real(value, name)
        if v < 0.0:
            raise ValueError(f"{name} must be >= 0, got {v!r}")
        budgets.append(v)
    labels = np.full(n, "P", dtype="<U1")
    t = np.arange(n)
    for side_mask, budget in ((t < p, budgets[0]), (t > p, budgets[1])):
        if side_mask.any():
            labels[side_mask] = region_letters(chain, np.abs(t[side_mask] - p), budget)
    return Regions(labels=labels, low_value=low_value(chain), p=p)


def region_letters(chain: MarkovChain, delta: np.ndarray, budget: float) -> np.ndarray:
    """The regions of :func:`regions` (``"S"``, ``"M"``, ``"L"``) of records at distances ``delta >= 1``
    from ``p`` on a side with this budget: each distance on its own, so any stretch of a side."""
    _two_state(chain, "the 3R regions")
    d = np.asarray(delta)
    i0, i1 = pointwise_influence(chain, d, 0), pointwise_influence(chain, d, 1)
    lo, hi = np.minimum(i0, i1), np.maximum(i0, i1)
    return np.where(hi <= budget, "S", np.where(lo <= budget, "M", "L"))
