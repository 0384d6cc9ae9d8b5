"""Design results and their certificates: every number redactopt reports comes with proof.

A :class:`DesignResult` is only ever built by :func:`finalize`, which snaps the
probabilities a solver returned, re-checks the exact leakage (Definition 1) of the
snapped array and refuses anything above the budget.  Its :class:`Certificate`
carries a valid upper bound on the optimal utility, so the gap is known.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from redactopt._validate import check_eps, check_n, check_private
from redactopt.chain import MarkovChain
from redactopt.influence import pointwise_influence
from redactopt.leakage import LeakageResult, check_mechanism, max_leakage, utility

__all__ = [
    "Certificate",
    "DesignResult",
    "PrivacyCheckError",
    "SNAP_TOL",
    "finalize",
    "snap",
    "lemma2_upper_bound",
    "verify",
    "SAFE_FRACTION",
]

#: Probabilities within this distance of 0 or 1 are snapped to 0 or 1 before the
#: exact check (DESIGN.md, "Support matters": a 1e-9 that was meant as 0 creates outputs).
SNAP_TOL = 1e-9

#: Relative slack allowed between the exact leakage and eps for floating rounding only.
LEAKAGE_RTOL = 1e-12


class PrivacyCheckError(ValueError):
    """A candidate mechanism failed the exact leakage check after snapping."""


@dataclass(frozen=True)
class Certificate:
    """A valid upper bound on the best utility any mechanism of the class can reach.

    Attributes
    ----------
    upper_bound : float
        Upper bound on the optimal utility (Definition 2).
    gap : float
        ``upper_bound - utility`` of the design it certifies (>= 0).
    solver : str
        What produced the bound (e.g. ``"lemma2"``, ``"scip"``, ``"enumeration"``).
    scope : str
        Which mechanisms the bound covers: ``"all"`` local redaction mechanisms, or a
        named class such as ``"data-independent"``.
    """

    upper_bound: float
    gap: float
    solver: str
    scope: str = "all"

    def to_dict(self) -> dict:
        return {"upper_bound": self.upper_bound, "gap": self.gap, "solver": self.solver, "scope": self.scope}


@dataclass(frozen=True)
class DesignResult:
    """A verified mechanism with its exact utility, exact leakage and certificate.

    ``private`` holds 0-based indices; ``leakage`` is the exact leakage of
    ``redact_prob`` exactly as stored (after snapping), the worst over ``private``.
    """

    chain: MarkovChain
    redact_prob: np.ndarray
    private: tuple[int, ...]
    eps: float
    method: str
    utility: float
    leakage: float
    witness: LeakageResult
    certificate: Certificate
    info: dict = field(default_factory=dict, compare=False)

    @property
    def n(self) -> int:
        return int(self.redact_prob.shape[0])

    @property
    def passed(self) -> bool:
        return self.leakage <= self.eps * (1.0 + LEAKAGE_RTOL)

    def to_json_dict(self) -> dict:
        """The mechanism file of DESIGN.md (``redactopt.mechanism/1``) plus ``certificate``."""
        from redactopt.io import mechanism_to_dict

        d = mechanism_to_dict(
            self.chain,
            self.redact_prob,
            private=self.private,
            eps=self.eps,
            method=self.method,
            utility=self.utility,
            leakage=self.leakage,
        )
        d["certificate"] = self.certificate.to_dict()
        return d


def snap(redact_prob: np.ndarray, tol: float = SNAP_TOL) -> np.ndarray:
    """Round entries within ``tol`` of 0 or 1 to exactly 0 or 1 (a copy)."""
    q = np.array(redact_prob, dtype=float)
    q[q < tol] = 0.0
    q[q > 1.0 - tol] = 1.0
    return np.clip(q, 0.0, 1.0)


def finalize(
    chain: MarkovChain,
    redact_prob: object,
    *,
    private: object,
    eps: float,
    method: str,
    upper_bound: float,
    solver: str,
    scope: str = "all",
    info: dict | None = None,
    tol: float = SNAP_TOL,
) -> DesignResult:
    """Snap, re-verify exactly and package a design.

    Raises
    ------
    PrivacyCheckError
        If the exact leakage of the snapped array exceeds ``eps`` (beyond a relative
        1e-12 for floating rounding).  Callers fall back to a verified alternative;
        nothing above the budget is ever returned.
    """
    eps = check_eps(eps)
    q = snap(np.asarray(redact_prob, dtype=float), tol)
    q, priv = check_mechanism(q, private)
    res, ok = verify(chain, q, priv, eps)
    if not ok:
        raise PrivacyCheckError(
            f"{method}: exact leakage {res.leakage:.12g} exceeds eps={eps:.12g} after snapping"
        )
    u = utility(chain, q)
    ub = max(float(upper_bound), u)
    q.setflags(write=False)
    return DesignResult(
        chain=chain,
        redact_prob=q,
        private=priv,
        eps=eps,
        method=method,
        utility=u,
        leakage=res.leakage,
        witness=res,
        certificate=Certificate(upper_bound=ub, gap=max(0.0, ub - u), solver=solver, scope=scope),
        info=dict(info or {}),
    )


#: Float leakages this close to eps (relative) are re-decided in rational arithmetic when n is small.
BOUNDARY_RTOL = 1e-9

#: Optimisers that search up to the budget (bisection and the like) aim at ``eps * SAFE_FRACTION``
#: so that their answers lie outside the boundary zone and rounding can never decide them.
SAFE_FRACTION = 1.0 - 2.0 * BOUNDARY_RTOL


def verify(chain: MarkovChain, redact_prob: np.ndarray, private: tuple[int, ...], eps: float,
           worst: LeakageResult | None = None) -> tuple[LeakageResult, bool]:
    """Exact leakage (worst over ``private``) and whether it is at most ``eps``.

    Far from the boundary the float evaluation decides.  Within a relative
    :data:`BOUNDARY_RTOL` of ``eps`` and for ``n <= 64`` the verdict is taken in rational
    arithmetic on the stored floats (:func:`redactopt.exact.certify_exact`), so rounding
    cannot pass a mechanism whose true leakage is above ``eps``; longer mechanisms
    there pass only up to a relative :data:`LEAKAGE_RTOL`.  ``worst``, when given, is the
    already computed worst :class:`~redactopt.leakage.LeakageResult` over ``private``.
    """
    res = worst if worst is not None else max_leakage(chain, redact_prob, private)
    if res.leakage <= eps * (1.0 - BOUNDARY_RTOL):
        return res, True
    if res.leakage > eps * (1.0 + BOUNDARY_RTOL):
        return res, False
    from redactopt.exact import MAX_EXACT_N, certify_exact

    if redact_prob.shape[0] <= MAX_EXACT_N:
        cert = certify_exact(chain.alpha, chain.beta, redact_prob.tolist(), list(private), eps)
        return res, cert.status == "certified"
    return res, res.leakage <= eps * (1.0 + LEAKAGE_RTOL)


def lemma2_upper_bound(chain: MarkovChain, n: int, *, eps: float, private: object) -> float:
    r"""Cheap valid upper bound on the utility of every :math:`\epsilon`-private mechanism.

    By Lemma 2 (Appendix D) with :math:`\mathcal Q=\{t\}`, value ``x`` can be published at
    ``t`` with positive probability only if :math:`i(X_p\rightsquigarrow X_t=x)\le\epsilon`
    for every private ``p``; the private records are never published.  Hence

    .. math:: \nu \le \frac1n\sum_{t}\sum_x \pi_x\,\mathbb 1\big[\max_p i(X_p\rightsquigarrow X_t=x)\le\epsilon\big].

    ``private`` holds 0-based indices.
    """
    n = check_n(n)
    eps = check_eps(eps)
    priv = check_private(private, n)
    t = np.arange(n)
    allowed = np.ones((n, 2), dtype=bool)
    allowed[list(priv)] = False
    for p in priv:
        d = np.abs(t - p)
        mask = d > 0
        for x in (0, 1):
            infl = np.full(n, math.inf)
            infl[mask] = pointwise_influence(chain, d[mask], x)
            allowed[:, x] &= infl <= eps
    return float((allowed * chain.stationary[None, :]).sum() / n)
