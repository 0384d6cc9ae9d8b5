"""The paper's mechanisms, faithfully: Three-Region (Eqs. 1–2, Theorem 1, Algorithm 2),
Markov-Quilt (Algorithm 1) and the data-independent bound of Theorem 2.

Where the paper is off, the function implements it *as printed* and says so; the
exact leakage evaluator (:mod:`redactopt.judge.leakage`) is the judge of privacy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from redactopt._validate import check_eps, check_index, check_n, check_real
from redactopt.model.chain import MarkovChain
from redactopt.model.influence import delta_star, max_influence, regions, Regions
from redactopt.judge.leakage import LeakageResult, check_mechanism, max_leakage, utility

__all__ = [
    "Mechanism",
    "ThreeRegionReading",
    "default_split",
    "three_region",
    "three_region_utility",
    "markov_quilt",
    "markov_quilt_window",
    "theorem2_bound",
    "window_mechanism",
]

ThreeRegionReading = Literal["section4", "theorem1", "algorithm2"]


@dataclass(frozen=True)
class Mechanism:
    """A local redaction mechanism with the facts that travel with it.

    Attributes
    ----------
    chain : MarkovChain
    redact_prob : numpy.ndarray
        ``(n, 2)`` array, ``redact_prob[t, x] = Pr(Y_t = ⊥ | X_t = x)``.
    private : tuple of int
        0-based private indices (rows that are always redacted).
    eps : float
        The budget the mechanism was designed for.
    method : str
        Which construction produced it (e.g. ``"3r"``, ``"mq"``).
    info : dict
        Construction details (split, regions, window), for reports.
    """

    chain: MarkovChain
    redact_prob: np.ndarray
    private: tuple[int, ...]
    eps: float
    method: str
    info: dict = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        q, priv = check_mechanism(self.redact_prob, self.private)
        q.setflags(write=False)
        object.__setattr__(self, "redact_prob", q)
        object.__setattr__(self, "private", priv)
        object.__setattr__(self, "eps", check_eps(self.eps))

    @property
    def n(self) -> int:
        return int(self.redact_prob.shape[0])

    def utility(self) -> float:
        """Exact utility (Definition 2)."""
        return utility(self.chain, self.redact_prob)

    def leakage(self) -> LeakageResult:
        """Exact leakage (Definition 1), the worst over the private records."""
        return max_leakage(self.chain, self.redact_prob, self.private)


def _sides(n: int, p: int) -> tuple[bool, bool]:
    return p > 0, p < n - 1


def default_split(n: int, p: int, eps: float) -> tuple[float, float]:
    """The default budget split ``(eps_left, eps_right)`` of the 3R mechanism.

    Half of ``eps`` per side as in Theorem 1 when ``p`` has records on both sides;
    the whole ``eps`` on the only side when ``p`` is at an end, as Appendix E does for
    ``p = 1``.  (The paper is inconsistent here: Theorem 1 and Algorithm 2 spend
    ``eps/2`` on the right even when ``p = 1``; use ``reading="algorithm2"`` for that.)
    ``p`` is 0-based.
    """
    has_left, has_right = _sides(n, p)
    if has_left and has_right:
        return eps / 2.0, eps / 2.0
    if has_left:
        return eps, 0.0
    if has_right:
        return 0.0, eps
    return 0.0, 0.0


def _resolve_split(n: int, p: int, eps: float, eps_left: float | None) -> tuple[float, float]:
    if eps_left is None:
        return default_split(n, p, eps)
    el = check_real(eps_left, "eps_left")
    if not 0.0 <= el <= eps:
        raise ValueError(f"eps_left must lie in [0, eps] = [0, {eps}], got {el!r}")
    return el, eps - el


def three_region(
    chain: MarkovChain,
    n: int,
    *,
    eps: float,
    p: int = 0,
    eps_left: float | None = None,
    reading: ThreeRegionReading = "section4",
) -> Mechanism:
    r"""The Three-Region (3R) mechanism (Section IV, Eqs. 1–2).

    .. math::
        \Pr(Y_t=\perp\mid X_t=x_t) = \begin{cases} 0 & t\in R_S\\ 1 & t\in R_L\\
        p_t & x_t=\text{low value},\ t\in R_M\\ 1 & x_t=\text{high value},\ t\in R_M\end{cases}
        \qquad p_t = \exp(-\epsilon_s/|R_M^{(s)}|)

    Parameters
    ----------
    chain : MarkovChain
    n : int
        Number of records.
    eps : float
        Total budget :math:`\epsilon = \epsilon_\ell + \epsilon_r`.
    p : int
        0-based private index.
    eps_left : float, optional
        Left budget; the right gets ``eps - eps_left``.  Default: :func:`default_split`.
    reading : {"section4", "theorem1", "algorithm2"}
        ``"section4"`` (default) is the general form of Section IV: each side's regions
        *and* its :math:`p_t` use that side's budget.  ``"theorem1"`` and
        ``"algorithm2"`` are the paper's stated mechanism: regions from the whole
        :math:`\epsilon` (Section II) but :math:`p_t=\exp(-\epsilon/(2|R_M^{(s)}|))` on
        each side, also when ``p`` is at an end.  The two stated readings give the same
        mechanism; both names are kept so audits can cite either.

    Notes
    -----
    The paper's privacy argument (Eq. 20) ignores the first published record after a
    run of redactions, so 3R is **not always** :math:`\epsilon`-private under any
    reading; ``tests/test_mechanisms.py::test_three_region_violates_eps`` shows a
    point.  The exact leakage is in ``Mechanism.leakage()``.
    """
    n = check_n(n)
    eps = check_eps(eps)
    p = check_index(p, n, "p")
    if reading not in ("section4", "theorem1", "algorithm2"):
        raise ValueError(f"reading must be 'section4', 'theorem1' or 'algorithm2', got {reading!r}")
    if reading == "section4":
        eps_l, eps_r = _resolve_split(n, p, eps, eps_left)
        reg = regions(chain, n, p, eps_l, eps_r)
        prob_budget = (eps_l, eps_r)
    else:
        if eps_left is not None:
            raise ValueError("eps_left applies to reading='section4' only")
        reg = regions(chain, n, p, eps, eps)
        prob_budget = (eps / 2.0, eps / 2.0)
        eps_l, eps_r = prob_budget
    q = _three_region_probs(reg, prob_budget)
    return Mechanism(
        chain,
        q,
        (p,),
        eps,
        "3r",
        info={
            "reading": reading,
            "eps_left": eps_l,
            "eps_right": eps_r,
            "regions": "".join(reg.labels.tolist()),
            "low_value": reg.low_value,
        },
    )


def _three_region_probs(reg: Regions, budgets: tuple[float, float]) -> np.ndarray:
    n = reg.labels.shape[0]
    q = np.zeros((n, 2))
    q[reg.labels == "L"] = 1.0
    q[reg.labels == "P"] = 1.0
    lo = reg.low_value
    for idx, budget in ((reg.medium_left(), budgets[0]), (reg.medium_right(), budgets[1])):
        if idx.size:
            q[idx, 1 - lo] = 1.0
            q[idx, lo] = math.exp(-budget / idx.size)
    return q


def three_region_utility(
    chain: MarkovChain,
    n: int,
    *,
    eps: float,
    p: int = 0,
    eps_left: float | None = None,
    reading: ThreeRegionReading = "section4",
) -> float:
    r"""Theorem 1's closed-form utility of the 3R mechanism.

    .. math::
        \nu_{3R} = \frac{|R_S|}{n} + \sum_{s\in\{\ell,r\}} \frac{|R_M^{(s)}|}{n}\,
        \pi_{\text{low}}\,\big(1-e^{-\epsilon_s/|R_M^{(s)}|}\big)

    Theorem 1 prints :math:`\pi_{\text{low}}=\beta/(\alpha+\beta)` and
    :math:`\epsilon_s=\epsilon/2`; here the low value's stationary probability and the
    side budgets of the chosen reading are used, so the formula holds for
    :math:`\alpha>\beta` and at the ends too.  It is computed from the regions only,
    independently of the mechanism's array.
    """
    mech = three_region(chain, n, eps=eps, p=p, eps_left=eps_left, reading=reading)
    labels = np.array(list(mech.info["regions"]))
    p0 = mech.private[0]
    pi_low = chain.stationary[mech.info["low_value"]]
    t = np.arange(n)
    total = float(np.sum(labels == "S"))
    if reading == "section4":
        budgets = (mech.info["eps_left"], mech.info["eps_right"])
    else:
        budgets = (eps / 2.0, eps / 2.0)
    for side, budget in (((labels == "M") & (t < p0), budgets[0]), ((labels == "M") & (t > p0), budgets[1])):
        size = int(side.sum())
        if size:
            total += size * pi_low * (-math.expm1(-budget / size))
    return total / n


def window_mechanism(
    chain: MarkovChain, n: int, *, p: int, delta_left: int, delta_right: int, eps: float, method: str
) -> Mechanism:
    """Data-independent mechanism redacting the window ``[p - delta_left, p + delta_right]``.

    Indices are 0-based; the window is clipped to ``0..n-1``.
    """
    q = np.zeros((n, 2))
    lo = max(0, p - delta_left)
    hi = min(n - 1, p + delta_right)
    q[lo : hi + 1] = 1.0
    return Mechanism(
        chain, q, (p,), eps, method, info={"delta_left": p - lo, "delta_right": hi - p}
    )


def _reflect(n: int, p: int) -> tuple[int, bool]:
    """1-based position with p <= n/2 (the paper's w.l.o.g.), and whether it was reflected."""
    p1 = p + 1
    if p1 > n / 2:
        return n + 1 - p1, True
    return p1, False


def _hat_i(chain: MarkovChain, delta: int) -> float:
    """:math:`\\hat i(\\Delta)` with :math:`\\hat i(0) = \\infty` (influence on itself)."""
    return math.inf if delta <= 0 else float(max_influence(chain, delta))


def markov_quilt_window(chain: MarkovChain, n: int, *, eps: float, p: int = 0) -> tuple[int, int]:
    r"""Redaction radii :math:`(\Delta_\ell, \Delta_r)` of Algorithm 1, as printed.

    One-sided release (:math:`\Delta_\ell=p-1`, :math:`\Delta_r=\min\{\Delta^\star(\epsilon), n-p\}`)
    if :math:`p=1`, or :math:`\epsilon<\hat i(n+1-p)+\hat i(p-1)`, or
    :math:`t_p(\epsilon)=p+\Delta^\star(\epsilon)-2\Delta^\star(\epsilon/2)<0`; otherwise the
    symmetric radius :math:`\Delta^\star(\epsilon/2)` on both sides.  Positions are
    1-based inside the algorithm and reflected so that :math:`p\le n/2`, as the paper
    assumes; the returned radii are for the caller's (0-based) ``p`` and are clipped to
    the sequence.

    As printed, Algorithm 1 redacts :math:`\Delta^\star(\epsilon)` records where
    :math:`\Delta^\star(\epsilon)-1` suffice (:math:`\Delta^\star` is the first distance
    that may be published); ``tests/test_mechanisms.py`` shows the loss.
    """
    n = check_n(n)
    eps = check_eps(eps)
    p = check_index(p, n, "p")
    pp, reflected = _reflect(n, p)
    d_eps = delta_star(chain, eps)
    d_half = delta_star(chain, max(eps / 2.0, math.ulp(0.0)))
    t_p = pp + d_eps - 2 * d_half
    if pp == 1 or eps < _hat_i(chain, n + 1 - pp) + _hat_i(chain, pp - 1) or t_p < 0:
        dl, dr = pp - 1, min(d_eps, n - pp)
    else:
        dl = dr = d_half
    dl, dr = min(dl, pp - 1), min(dr, n - pp)
    return (dr, dl) if reflected else (dl, dr)


def markov_quilt(chain: MarkovChain, n: int, *, eps: float, p: int = 0) -> Mechanism:
    """The Markov-Quilt (MQ) baseline of Algorithm 1, as printed (see :func:`markov_quilt_window`)."""
    dl, dr = markov_quilt_window(chain, n, eps=eps, p=p)
    return window_mechanism(chain, n, p=p, delta_left=dl, delta_right=dr, eps=eps, method="mq")


def theorem2_bound(chain: MarkovChain, n: int, *, eps: float, p: int = 0) -> float:
    r"""Theorem 2's upper bound on the utility of data-independent mechanisms, as printed.

    .. math::
        \nu_{DIM} \le \begin{cases} 0 & \epsilon < \mathcal I(X_p\rightsquigarrow X_n)\\
        1-\min\{R_1,R_2\}/n & \epsilon \ge \mathcal I(X_p\rightsquigarrow X_1)+\mathcal I(X_p\rightsquigarrow X_n)\\
        1-R_1/n & \text{otherwise}\end{cases}

    with :math:`R_1=\Delta^\star(\epsilon)+p-1`, :math:`R_2=2\Delta^\star(\epsilon/2)-1`
    (1-based ``p`` reflected to :math:`p\le n/2`).  **Not a valid bound everywhere**: the
    Jensen step of its proof loses a record, and the exact window optimum beats it at
    some points (``tests/test_mechanisms.py::test_theorem2_is_not_a_bound``).
    """
    n = check_n(n)
    eps = check_eps(eps)
    p = check_index(p, n, "p")
    pp, _ = _reflect(n, p)
    if eps < _hat_i(chain, n - pp):
        return 0.0
    r1 = delta_star(chain, eps) + pp - 1
    r2 = 2 * delta_star(chain, max(eps / 2.0, math.ulp(0.0))) - 1
    if eps >= _hat_i(chain, pp - 1) + _hat_i(chain, n - pp):
        return 1.0 - min(r1, r2) / n
    return 1.0 - r1 / n
