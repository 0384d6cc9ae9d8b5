"""The two-state stationary Markov chain that correlates the records.

The paper (Section II) models the records X_1..X_n as a stationary chain with
P(0 -> 1) = alpha and P(1 -> 0) = beta.  Everything else in redactopt takes a
:class:`MarkovChain` and never re-derives these quantities.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from redactopt._validate import check_delta, check_eps, check_index, check_n, check_probability_open

__all__ = ["MarkovChain", "check_problem"]

ChainKind = Literal["lazy", "independent", "oscillating"]


@dataclass(frozen=True)
class MarkovChain:
    r"""Stationary binary Markov chain with transition matrix

    .. math::
        P = \begin{pmatrix} 1-\alpha & \alpha \\ \beta & 1-\beta \end{pmatrix}

    Parameters
    ----------
    alpha : float
        :math:`\Pr(X_{t+1}=1 \mid X_t=0)`, strictly between 0 and 1.
    beta : float
        :math:`\Pr(X_{t+1}=0 \mid X_t=1)`, strictly between 0 and 1.

    Notes
    -----
    The paper assumes :math:`\alpha \le \beta`; here any pair in (0, 1) works
    (for :math:`\alpha > \beta` the roles of 0 and 1 swap).  The chain is
    *lazy* when :math:`\alpha+\beta<1`, *independent* when
    :math:`\alpha+\beta=1` and *oscillating* when :math:`\alpha+\beta>1`.
    A stationary chain is reversible, so backward and forward transitions
    coincide (Section II), which lets left and right of the private record be
    treated alike.
    """

    alpha: float
    beta: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "alpha", check_probability_open(self.alpha, "alpha"))
        object.__setattr__(self, "beta", check_probability_open(self.beta, "beta"))

    # --- basic quantities -------------------------------------------------
    @property
    def lam(self) -> float:
        r"""Second eigenvalue :math:`\lambda = 1-\alpha-\beta` of :math:`P`, correctly rounded (``fsum``)."""
        return math.fsum((1.0, -self.alpha, -self.beta))

    @property
    def log_abs_lam(self) -> float:
        r""":math:`\log|\lambda|` to full relative accuracy (``-inf`` when :math:`\lambda=0`)."""
        lam = self.lam
        if lam == 0.0:
            return -math.inf
        s = self.alpha + self.beta
        if s < 0.5:
            return math.log1p(-s)
        if s > 1.5:
            return math.log1p(-math.fsum((2.0, -self.alpha, -self.beta)))
        return math.log(abs(lam))

    @property
    def kind(self) -> ChainKind:
        """``"lazy"`` (alpha+beta < 1), ``"independent"`` (= 1) or ``"oscillating"`` (> 1), by the sign of :attr:`lam`."""
        lam = self.lam
        if lam > 0.0:
            return "lazy"
        if lam < 0.0:
            return "oscillating"
        return "independent"

    @property
    def stationary(self) -> np.ndarray:
        r"""Stationary law :math:`(\Pr(X=0), \Pr(X=1)) = (\beta, \alpha)/(\alpha+\beta)`."""
        s = self.alpha + self.beta
        return np.array([self.beta / s, self.alpha / s])

    @property
    def transition_matrix(self) -> np.ndarray:
        """The one-step matrix P (rows: current state, columns: next state)."""
        a, b = self.alpha, self.beta
        return np.array([[1.0 - a, a], [b, 1.0 - b]])

    # --- n-step transitions (Appendix A) ----------------------------------
    def lam_powers(self, deltas: object) -> tuple[np.ndarray, np.ndarray]:
        r""":math:`(\lambda^\Delta, 1-\lambda^\Delta)` for an array of distances, both accurate.

        The one place where powers of :math:`\lambda` are formed.  Through logarithms
        (:attr:`log_abs_lam`), so they stay accurate for distances in the millions;
        :math:`1-\lambda^\Delta` by ``expm1`` when :math:`\lambda^\Delta>0`, so it keeps full
        relative accuracy when :math:`\lambda^\Delta\approx 1`.  Relative error of
        :math:`\lambda^\Delta` about :math:`|\Delta\log|\lambda||` ulps (at most ~750 ulps
        while it is not 0).

        Parameters
        ----------
        deltas : int or array of int
            Distances :math:`\Delta\ge 0`.
        """
        d = np.asarray(deltas, dtype=float)
        if d.size and (np.min(d) < 0 or not np.all(d == np.round(d))):
            raise ValueError("deltas must be integers >= 0")
        lam = self.lam
        if lam == 0.0:
            lp = np.where(d == 0, 1.0, 0.0)
            return lp, 1.0 - lp
        log_mag = d * self.log_abs_lam
        mag = np.exp(log_mag)
        one_minus = -np.expm1(log_mag)
        if lam > 0.0:
            return mag, one_minus
        odd = np.mod(d, 2.0) == 1.0
        return np.where(odd, -mag, mag), np.where(odd, 1.0 + mag, one_minus)

    def lam_power(self, delta: int) -> float:
        r""":math:`\lambda^\Delta` (:meth:`lam_powers` for one distance)."""
        return float(self.lam_powers(check_delta(delta, "delta", allow_zero=True))[0])

    def one_minus_lam_power(self, delta: int) -> float:
        r""":math:`1-\lambda^\Delta` without cancellation (:meth:`lam_powers` for one distance)."""
        return float(self.lam_powers(check_delta(delta, "delta", allow_zero=True))[1])

    def n_step_matrices(self, deltas: object) -> np.ndarray:
        r""":math:`P^\Delta` for an array of distances at once, shape ``(len, 2, 2)`` (Appendix A).

        .. math::
            P^\Delta = \begin{pmatrix}\pi_0+\pi_1\lambda^\Delta & \pi_1(1-\lambda^\Delta)\\
            \pi_0(1-\lambda^\Delta) & \pi_1+\pi_0\lambda^\Delta\end{pmatrix},

        the diagonal formed as :math:`\pi_x + \pi_{\bar x}\lambda^\Delta` so that tiny
        entries keep full relative accuracy.
        """
        d = np.asarray(deltas, dtype=float)
        if d.ndim != 1:
            raise ValueError("deltas must be a 1-D array of integers >= 0")
        lp, om = self.lam_powers(d)
        pi0, pi1 = self.stationary
        out = np.empty((d.size, 2, 2))
        out[:, 0, 0] = pi0 + pi1 * lp
        out[:, 0, 1] = pi1 * om
        out[:, 1, 0] = pi0 * om
        out[:, 1, 1] = pi1 + pi0 * lp
        return out

    def n_step_matrix(self, delta: int) -> np.ndarray:
        r""":math:`P^\Delta` from the closed form of Appendix A (one distance of :meth:`n_step_matrices`)."""
        return self.n_step_matrices([check_delta(delta, "delta", allow_zero=True)])[0]

    def n_step(self, delta: int) -> tuple[float, float]:
        r"""Closed-form :math:`(\alpha_\Delta, \beta_\Delta)` of Appendix A.

        .. math::
            \alpha_\Delta = \tfrac{\alpha}{\alpha+\beta}(1-\lambda^\Delta),\quad
            \beta_\Delta = \tfrac{\beta}{\alpha+\beta}(1-\lambda^\Delta),

        the off-diagonal entries of :math:`P^\Delta` (:meth:`n_step_matrices`).
        """
        m = self.n_step_matrix(delta)
        return float(m[0, 1]), float(m[1, 0])


def check_problem(chain: object, n: object, eps: object, p: object) -> tuple[int, float, int]:
    """Validate a design problem: a :class:`MarkovChain`, ``n`` records, budget ``eps``, 0-based ``p``."""
    if not isinstance(chain, MarkovChain):
        raise TypeError(f"chain must be a MarkovChain, got {type(chain).__name__}")
    n = check_n(n)
    return n, check_eps(eps), check_index(p, n, "p")
