"""The old path of the k-state chain: :class:`KChain` is :class:`redactopt.model.chain.Chain` (issue 25)."""

from redactopt.model.chain import ROW_SUM_TOL, check_transition, parse_transition, stationary_gth
from redactopt.model.chain import Chain as KChain

__all__ = ["KChain", "ROW_SUM_TOL", "check_transition", "stationary_gth", "parse_transition"]
