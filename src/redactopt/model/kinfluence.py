"""The old path of the k-state influences: :mod:`redactopt.model.influence` serves every chain (issue 25)."""

from redactopt.model.influence import INFLUENCE_RTOL as KINFLUENCE_RTOL
from redactopt.model.influence import SIDES, max_influence, pair_log_ratios, pointwise_influence, side_matrix, window_terms
from redactopt.model.influence import delta_star, influence_atol as kinfluence_atol, provably_above

__all__ = ["SIDES", "side_matrix", "pair_log_ratios", "kpointwise_influence", "kmax_influence", "window_terms",
           "kdelta_star", "kinfluence_atol", "kprovably_above", "KINFLUENCE_RTOL"]


def kpointwise_influence(chain, delta, side="right"):
    """:func:`~redactopt.model.influence.pointwise_influence` of every value (the old signature)."""
    return pointwise_influence(chain, delta, side=side)


def kmax_influence(chain, delta, side="right"):
    """:func:`~redactopt.model.influence.max_influence` (the old signature)."""
    return max_influence(chain, delta, side=side)


def kdelta_star(chain, eps, side="right", *, limit=10**7):
    """:func:`~redactopt.model.influence.delta_star` of one side (the old signature)."""
    return delta_star(chain, eps, side=side, limit=limit)


def kprovably_above(value, budget, delta, k):
    """:func:`~redactopt.model.influence.provably_above` with the matrix-product error (the old signature)."""
    return provably_above(value, budget, delta=delta, k=k)
