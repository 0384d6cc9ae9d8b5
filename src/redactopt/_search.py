"""One bisection helper for every search "as far as the exact check allows"."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["bisect_boundary"]


def bisect_boundary(ok: Callable[[float], bool], good: float, bad: float, *, steps: int = 60) -> float:
    """Move from a feasible point toward an infeasible one as far as ``ok`` allows.

    ``ok(good)`` must hold and ``ok(bad)`` must not (neither is re-checked).  The interval
    between them is halved ``steps`` times (or until its midpoint equals an end in floating
    point); the returned point is always one for which ``ok`` held, so the answer is
    feasible whatever the shape of the feasible set.  When the feasible set is an interval
    (a monotone check) it is within ``|bad - good| / 2**steps`` of its end.
    """
    for _ in range(steps):
        mid = 0.5 * (good + bad)
        if mid in (good, bad):
            break
        if ok(mid):
            good = mid
        else:
            bad = mid
    return good
