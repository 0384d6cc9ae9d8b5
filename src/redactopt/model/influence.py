"""Influence of the private record on the others (Definition 3, Proposition 1, Appendix A).

All functions take distances ``delta = |p - t|`` (the influence of X_p on X_t depends
only on the distance, and is the same to the left and to the right because a
stationary chain is reversible) or 0-based record indices where they say so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from collections.abc import Iterable

import numpy as np

from redactopt._validate import check_delta, check_eps, check_index, check_n, check_real
from redactopt.model.chain import MarkovChain

__all__ = [
    "pointwise_influence",
    "max_influence",
    "set_max_influence",
    "delta_star",
    "Regions",
    "regions",
    "low_value",
    "side_log_ratio_maxima",
]


def low_value(chain: MarkovChain) -> int:
    """The record value with the smaller pointwise influence at every distance.

    It is 0 when alpha <= beta (the paper's footnote 2) and 1 when alpha > beta.
    When alpha == beta both values have equal influence and 0 is returned.
    """
    return 0 if chain.alpha <= chain.beta else 1


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


def _influence_c(chain: MarkovChain, deltas: np.ndarray, c: float) -> np.ndarray:
    r""":math:`i_c(\Delta)=|\log\frac{1+c\lambda^\Delta}{1-\lambda^\Delta}|` (Eq. 10), stably."""
    lam = chain.lam
    if lam == 0.0:
        return np.zeros_like(deltas)
    log_abs = chain.log_abs_lam
    mag = np.exp(deltas * log_abs)
    if lam > 0.0:
        lp = mag
        one_minus = -np.expm1(deltas * log_abs)
    else:
        odd = np.mod(deltas, 2.0) == 1.0
        lp = np.where(odd, -mag, mag)
        one_minus = np.where(odd, 1.0 + mag, -np.expm1(deltas * log_abs))
    with np.errstate(divide="ignore"):
        return np.abs(np.log1p(c * lp) - np.log(one_minus))


def pointwise_influence(chain: MarkovChain, delta: int | Iterable[int], x: int) -> float | np.ndarray:
    r"""Pointwise influence :math:`i(X_p \rightsquigarrow X_t = x)` at distance ``delta`` (Def. 3).

    Closed form of Proposition 1 (Eqs. 4, 5, 8, 9):

    .. math::
        i(X_p \rightsquigarrow X_t=1) = \Big|\log\frac{1+\frac{\beta}{\alpha}\lambda^\Delta}{1-\lambda^\Delta}\Big|,\qquad
        i(X_p \rightsquigarrow X_t=0) = \Big|\log\frac{1+\frac{\alpha}{\beta}\lambda^\Delta}{1-\lambda^\Delta}\Big|,

    with :math:`\lambda = 1-\alpha-\beta`.  (Proposition 1 as printed labels both
    bullets ``X_t = 1``; Eq. 8 shows the first is ``X_t = 0``.)  It equals
    :math:`|\log (P^\Delta)_{0x}/(P^\Delta)_{1x}|`; ``tests/test_influence.py`` checks this
    against matrix powers.

    Parameters
    ----------
    chain : MarkovChain
    delta : int or array of int
        Distance(s) ``|p - t| >= 1``.
    x : {0, 1}
        Value of the other record.

    Returns
    -------
    float or numpy.ndarray
        Natural-log influence, ``>= 0``.
    """
    if isinstance(x, bool) or x not in (0, 1):
        raise ValueError(f"x must be 0 or 1, got {x!r}")
    deltas, scalar = _as_deltas(delta)
    c = chain.beta / chain.alpha if x == 1 else chain.alpha / chain.beta
    out = _influence_c(chain, deltas, c)
    return float(out[0]) if scalar else out


def max_influence(chain: MarkovChain, delta: int | Iterable[int]) -> float | np.ndarray:
    r"""Max-influence :math:`\mathcal{I}(X_p \rightsquigarrow X_t) = \hat i(\Delta)` (Def. 3, Prop. 1).

    The maximum of the two pointwise influences; it is non-increasing in the
    distance for every chain (data processing), even when the pointwise
    influences oscillate (alpha + beta > 1).
    """
    deltas, scalar = _as_deltas(delta)
    c = max(chain.alpha / chain.beta, chain.beta / chain.alpha)
    out = _influence_c(chain, deltas, c)
    return float(out[0]) if scalar else out


def _side_log_ratios(chain: MarkovChain, delta: int) -> np.ndarray:
    """log P^delta[0, v] / P^delta[1, v] for v = 0, 1."""
    m = chain.n_step_matrix(delta)
    return np.log(m[0]) - np.log(m[1])


def side_log_ratio_maxima(chain: MarkovChain, m: int) -> np.ndarray:
    r"""One-sided terms of Lemma 1 for the nearest published record at distance ``d = 1..m``.

    Row ``d - 1`` holds :math:`(\ell_0(d), \ell_1(d))` with
    :math:`\ell_x(d)=\max_v\log (P^d)_{xv}/(P^d)_{\bar x v}`: the largest log-ratio in favour
    of :math:`X_p=x` that publishing a record at distance ``d`` (and nothing nearer) allows.
    Given :math:`X_p` the two sides are independent, so a window's leakage is
    :math:`\max_x[\ell_x(d_\ell)+\ell_x(d_r)]` (cf. :func:`set_max_influence`), and
    :math:`\max_x\ell_x(d)=\hat i(d)`.  Vectorised closed form (Appendix A).
    """
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)):
        raise TypeError(f"m must be an integer, got {m!r} ({type(m).__name__})")
    if m < 0:
        raise ValueError(f"m must be >= 0, got {m}")
    Pd = chain.n_step_matrices(np.arange(1, int(m) + 1))
    r = np.log(Pd[:, 0, :]) - np.log(Pd[:, 1, :])  # [d, v]: log P^d[0,v] / P^d[1,v]
    return np.column_stack([r.max(axis=1), (-r).max(axis=1)]) if m else np.zeros((0, 2))


def set_max_influence(chain: MarkovChain, p: int, records: Iterable[int], n: int | None = None) -> float:
    r"""Max-influence :math:`\mathcal{I}(X_p \rightsquigarrow \mathbf{X}_S)` of a set of records (Def. 3).

    By the Markov property only the nearest record of ``S`` on each side of ``p``
    matters, and given ``X_p`` the two sides are independent, so

    .. math::
        \mathcal{I} = \max_{x} \Big[\max_{v}\log\tfrac{P^{d_\ell}_{xv}}{P^{d_\ell}_{\bar x v}}
        + \max_{u}\log\tfrac{P^{d_r}_{xu}}{P^{d_r}_{\bar x u}}\Big].

    Parameters
    ----------
    chain : MarkovChain
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
    total = np.zeros(2)  # log ratio favouring X_p = 0 and favouring X_p = 1
    for side in (left, right):
        if not side:
            continue
        d = p - side[-1] if side is left else side[0] - p
        lr = _side_log_ratios(chain, d)
        total += np.array([lr.max(), (-lr).max()])
    return float(total.max())


def delta_star(chain: MarkovChain, eps: float) -> int:
    r""":math:`\Delta^\star(\epsilon)`: the smallest distance :math:`\Delta \ge 1` with
    :math:`\hat i(\Delta) \le \epsilon` (Theorem 2, Appendix A).

    Solving :math:`\hat i(\Delta)\le\epsilon` with :math:`c=\max(\alpha/\beta,\beta/\alpha)`
    gives :math:`|\lambda|^\Delta \le (e^\epsilon-1)/(e^\epsilon+c)` for lazy chains and
    even distances, and :math:`|\lambda|^\Delta \le (e^\epsilon-1)/(c e^\epsilon+1)` for odd
    distances of oscillating chains (Appendix A).  The lazy closed form printed at the
    end of Appendix A uses the odd-distance threshold; the candidate from the correct
    threshold is confirmed against :func:`max_influence`, which is monotone, so the
    answer is exact.  Independent chains (alpha + beta = 1) give 1.
    """
    eps = check_eps(eps)
    if chain.lam == 0.0:
        return 1
    if max_influence(chain, 1) <= eps:
        return 1
    c = max(chain.alpha / chain.beta, chain.beta / chain.alpha)
    log_abs_lam = chain.log_abs_lam
    em1 = math.expm1(eps)
    thresholds = [em1 / (em1 + 1.0 + c)]
    if chain.lam < 0.0:
        thresholds.append(em1 / (c * (em1 + 1.0) + 1.0))
    guess = max(1, math.floor(min(math.log(t) / log_abs_lam for t in thresholds)))
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
        if not side_mask.any():
            continue
        d = np.abs(t[side_mask] - p)
        i0 = pointwise_influence(chain, d, 0)
        i1 = pointwise_influence(chain, d, 1)
        lo, hi = np.minimum(i0, i1), np.maximum(i0, i1)
        labels[side_mask] = np.where(hi <= budget, "S", np.where(lo <= budget, "M", "L"))
    return Regions(labels=labels, low_value=low_value(chain), p=p)
