"""The old path of the k-state certificates: :mod:`redactopt.judge.certify` serves every chain (issue 25)."""

from redactopt.judge.certify import DesignResult as KDesignResult
from redactopt.judge.certify import finalize as kfinalize
from redactopt.judge.certify import verify as kverify
from redactopt.judge.tolerances import boundary_zone, safe_budget

__all__ = ["KDesignResult", "kboundary_zone", "ksafe_budget", "kverify", "kfinalize"]


def kboundary_zone(eps, n, k):
    """:func:`~redactopt.judge.tolerances.boundary_zone` of the matrix kernel on ``k`` states (the old signature)."""
    return boundary_zone(eps, n, k)


def ksafe_budget(eps, n, k):
    """:func:`~redactopt.judge.tolerances.safe_budget` of the matrix kernel on ``k`` states (the old signature)."""
    return safe_budget(eps, n, k)
