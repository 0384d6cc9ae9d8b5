"""What every optimiser returns: a :class:`Candidate`, a proposal that nobody has judged yet.

Solvers propose; :func:`redactopt.engine.design.design` judges (snaps, verifies exactly,
repairs or falls back, and certifies), as cvxpy's solver layer hands raw solutions back to
the pipeline.  Every optimiser has the signature

``propose(chain, n, *, eps, p, time_limit, verbose=False, rng=None, **options) -> Candidate``

with ``p`` 0-based; ``options`` are solver-specific (documented with each solver).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

__all__ = ["Candidate", "Status"]

#: ``optimal``: the solver proved its proposal optimal (within its stated tolerance);
#: ``time_limit``: stopped by the time limit; ``local``: a local method's fixed point;
#: ``heuristic``: a construction with no optimality claim.
Status = Literal["optimal", "time_limit", "local", "heuristic"]


@dataclass(frozen=True)
class Candidate:
    """A proposed mechanism with what its solver claims about it.

    Attributes
    ----------
    redact_prob : numpy.ndarray
        ``(n, 2)`` proposal, ``Pr(⊥ | X_t = x)``; not yet snapped or verified.
    solver : str
        The solver's name (``"global"``, ``"sgp"``, ``"dim"``, ...).
    status : Status
        How the solver stopped.
    upper_bound : float or None
        A bound on the optimal utility over ``bound_scope`` that the solver *derived*
        (a dual bound, an enumeration), or ``None``.  The judge takes the smallest valid
        bound it has and refuses one below a verified utility.
    bound_solver : str or None
        Provenance of ``upper_bound`` (e.g. ``"scip"``, ``"enumeration"``).
    bound_scope : str
        ``"all"`` (every local redaction mechanism) or a class such as ``"data-independent"``.
    fallbacks : tuple of numpy.ndarray
        Further proposals for the judge; the verified one of largest utility wins (e.g. a
        verified starting point behind an optimiser's answer).
    info : dict
        Solver statistics (status details, nodes, seconds, the structure found, ...) of
        the first proposal.
    fallback_info : tuple of dict
        What differs in ``info`` for each fallback (empty: nothing).
    """

    redact_prob: np.ndarray
    solver: str
    status: Status
    upper_bound: float | None = None
    bound_solver: str | None = None
    bound_scope: str = "all"
    fallbacks: tuple[np.ndarray, ...] = ()
    info: dict = field(default_factory=dict)
    fallback_info: tuple[dict, ...] = ()

    def proposal_info(self, k: int) -> dict:
        """``info`` of proposal ``k`` (0: the first, ``k``: fallback ``k - 1``)."""
        if k == 0 or k > len(self.fallback_info):
            return dict(self.info)
        return dict(self.info, **self.fallback_info[k - 1])
