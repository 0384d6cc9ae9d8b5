"""The few floating-point tolerances of the judges, in one place, with what each one is for.

None of them loosens a privacy verdict: leakage near ``eps`` is decided in rational
arithmetic (:func:`redactopt.judge.certify.verify`), and bounds are rounded outward
(:data:`redactopt.model.influence.INFLUENCE_RTOL`).
"""

from __future__ import annotations

__all__ = ["SNAP_TOL", "LEAKAGE_RTOL", "BOUNDARY_RTOL", "SAFE_FRACTION", "UTILITY_ATOL"]

#: Probabilities within this distance of 0 or 1 are snapped to 0 or 1 before the exact check
#: ("support matters": a 1e-9 that was meant as 0 creates outputs that leak).
SNAP_TOL = 1e-9

#: Relative slack between a float leakage and eps for long mechanisms (n > 64) whose verdict
#: cannot be taken in rational arithmetic; it only covers the evaluator's rounding.
LEAKAGE_RTOL = 1e-12

#: Float leakages this close to eps (relative) are re-decided in rational arithmetic when n is small.
BOUNDARY_RTOL = 1e-9

#: Optimisers that search up to the budget (bisection and the like) aim at ``eps * SAFE_FRACTION``
#: so that their answers lie outside the boundary zone and rounding can never decide them.
SAFE_FRACTION = 1.0 - 2.0 * BOUNDARY_RTOL

#: Rounding error allowed in a float utility (a mean of n terms in [0, 1]) when it is compared
#: with an upper bound: a bound within this of a verified utility is consistent; further below,
#: it is wrong (:class:`redactopt.errors.BoundError`), never clamped.
UTILITY_ATOL = 1e-12
