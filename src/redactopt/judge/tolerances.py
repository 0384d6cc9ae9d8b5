"""The few floating-point tolerances of the judges, in one place, with what each one is for.

None of them loosens a privacy verdict: leakage near ``eps`` is decided in rational
arithmetic (:func:`redactopt.judge.certify.verify`), and bounds are rounded outward
(:data:`redactopt.model.influence.INFLUENCE_RTOL`).
"""

from __future__ import annotations

import math

__all__ = ["reversal_error", "SNAP_TOL", "LEAKAGE_RTOL", "BOUNDARY_RTOL", "LEAKAGE_ATOL_PER_RECORD", "MATRIX_ULPS_PER_STATE",
           "boundary_zone", "chain_zone", "marginal_allowance", "safe_budget", "UTILITY_ATOL", "round_up"]

#: Probabilities within this distance of 0 or 1 are snapped to 0 or 1 before the exact check
#: ("support matters": a 1e-9 that was meant as 0 creates outputs that leak).
SNAP_TOL = 1e-9

#: Relative slack used only by *reports* (comparison tables, audits of the paper's mechanisms)
#: to print "ok" for a float leakage that equals eps up to rounding; no design is judged by it.
LEAKAGE_RTOL = 1e-12

#: Float leakages this close to eps (relative) are re-decided in rational arithmetic.
BOUNDARY_RTOL = 1e-9

#: Absolute rounding error of the float leakage per record of the patterns: the log of a
#: ratio of prefix products loses a few ulps per step, which matters when eps is tiny.
LEAKAGE_ATOL_PER_RECORD = 1e-15


#: Rounding of the matrix kernel (:mod:`redactopt.judge.kernelk`) per record and state: each step of its
#: k x k prefix products loses at most about ``k`` ulps in each of the two likelihoods of a ratio.
MATRIX_ULPS_PER_STATE = 4.0

_ULP = 2.0**-52


def boundary_zone(eps: float, n: int, k: int | None = None) -> float:
    """Half-width of the band around ``eps`` in which a float leakage of ``n`` records decides nothing.

    Within it :func:`redactopt.judge.certify.verify` decides in rational arithmetic (or
    refuses); outside it the float leakage is provably on the right side of ``eps``.  The band
    is that of the kernel that computed the leakage: ``k=None`` for the binary kernel
    (:data:`LEAKAGE_ATOL_PER_RECORD` per record), the number of states for the matrix kernel
    (:data:`MATRIX_ULPS_PER_STATE` ``* k`` ulps per record).  Either way plus
    :data:`BOUNDARY_RTOL` relative.
    """
    per_record = LEAKAGE_ATOL_PER_RECORD if k is None else MATRIX_ULPS_PER_STATE * k * _ULP
    return eps * BOUNDARY_RTOL + per_record * (n + 16)


def chain_zone(chain: object, eps: float, n: int) -> float:
    """:func:`boundary_zone` of the kernel that judges ``chain``: binary chains the 2x2 one, others the matrix one.

    A chain that varies with the step (:class:`~redactopt.model.varying.VaryingChain`) adds
    :func:`marginal_allowance`: its reversed steps are formed from marginals computed in floats.
    """
    zone = boundary_zone(eps, n, None if chain.binary else chain.k)  # type: ignore[attr-defined]
    if getattr(chain, "varying", False):
        zone += marginal_allowance(chain.k, chain.rounding_steps + n, n)  # type: ignore[attr-defined]
    return zone


def marginal_allowance(k: int, steps: int, n: int) -> float:
    r"""A bound on how far the float leakage of ``n`` records can move because the marginals are computed.

    Forward propagation :math:`\pi_{t+1}=\pi_tP_t` uses only sums and products of non-negative
    numbers and one division by a sum: every entry keeps a relative error below
    :math:`\delta=(2k+1)\,T\,u` after ``T`` steps (``u`` the unit roundoff).  A reversed step
    :math:`\pi_t(x)P_t(x,y)/\sum_{x'}\pi_t(x')P_t(x',y)` then errs by at most :math:`2\delta` relatively
    in each entry, a product of ``n`` such factors by :math:`2n\delta`, and the log of a ratio of two
    of them by :math:`4n\delta` (first order; doubled here for the second-order terms).
    """
    delta = (2 * k + 1) * steps * _ULP / 2
    return 8.0 * n * delta


def reversal_error(k: int, steps: int) -> float:
    r"""Relative error of each entry of a reversed step built from computed marginals (:func:`marginal_allowance`).

    After ``steps`` forward steps every marginal entry errs by at most :math:`\delta=(2k+1)\,T\,u`; the
    reversed entry :math:`\pi_t(x)P_t(x,y)/\sum_{x'}\pi_t(x')P_t(x',y)` by :math:`2\delta` and its own
    ``k + 2`` roundings; doubled for the second-order terms.
    """
    delta = (2 * k + 1) * max(int(steps), 1) * _ULP / 2
    return 2.0 * (2.0 * delta + (k + 2) * _ULP / 2)


def safe_budget(eps: float, n: int, k: int | None = None) -> float:
    """What optimisers that search up to the budget (bisection and the like) aim at.

    Twice the boundary zone below ``eps`` (:func:`boundary_zone` of the same kernel), so their
    answers are decided by the float check and rounding can never decide them.
    """
    return eps - 2.0 * boundary_zone(eps, n, k)

#: Rounding error allowed in a float utility (a mean of n terms in [0, 1]) when it is compared
#: with an upper bound: a bound within this of a verified utility is consistent; further below,
#: it is wrong (:class:`redactopt.errors.BoundError`), never clamped.
UTILITY_ATOL = 1e-12


def round_up(value: float, terms: int = 1) -> float:
    """An upper bound computed in floats, rounded outward: above its exact value.

    ``value`` is a float sum of ``terms`` non-negative numbers, divided once (a bound on a
    utility); its relative rounding error is below ``(terms + 1) * 2**-53``, so the result is
    raised by twice that and one more ulp.  A sum that is exactly 0 (every term 0) is exact and
    stays 0.  Never below ``value``; never clamped to anything.
    """
    if value == 0.0 or not math.isfinite(value):
        return value
    return math.nextafter(value + abs(value) * (terms + 2) * 2.0 ** -52, math.inf)
