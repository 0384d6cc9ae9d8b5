"""What every optimiser returns: a :class:`Candidate`, a proposal that nobody has judged yet.

Solvers propose; :func:`redactopt.engine.design.design` judges (snaps, verifies exactly,
repairs or falls back, and certifies), as cvxpy's solver layer hands raw solutions back to
the pipeline.  Every optimiser has the signature

``propose(chain, n, *, eps, p, time_limit, verbose=False, rng=None, **options) -> Candidate``

with ``p`` 0-based; ``options`` are solver-specific (documented with each solver).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

__all__ = ["Candidate", "Problem", "Solver", "Status", "SolverTimeout"]


class SolverTimeout(Exception):
    """A solver ran out of its time limit before it had anything to propose (the engine goes on without it)."""

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


@dataclass(frozen=True)
class Problem:
    """What a solver is asked: design for ``chain`` on ``n`` records, budget ``eps``, private ``p`` (0-based).

    ``eps`` is the budget the solvers are given (the engine caps it at the leakage ceiling, where the
    problem is the same); ``time_limit`` and ``certify_time`` are the caller's, for the portfolio.
    """

    chain: Any
    n: int
    eps: float
    p: int
    time_limit: float = 60.0
    certify_time: float = 0.0

    @property
    def k(self) -> int:
        """Number of states of the chain."""
        return int(self.chain.k)

    @property
    def binary(self) -> bool:
        """A two-state chain with every transition probability in (0, 1) (the closed forms hold)."""
        return bool(self.chain.binary)

    @property
    def one_sided(self) -> bool:
        """The private record is the first or the last."""
        return self.p in (0, self.n - 1)


#: ``portfolio(problem) -> options`` for ``method="optimal"``: keyword arguments for the run, or
#: ``None`` when the portfolio leaves the solver out on this problem.
Portfolio = Callable[[Problem], "dict[str, Any] | None"]


def _never(problem: Problem) -> None:
    return None


def _no_options(problem: Problem) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class Solver:
    """An optimiser that proposes for one ``method``, and says which problems it accepts.

    In the manner of cvxpy's ``Solver.accepts``: :meth:`refusal` is ``None`` where the solver
    applies and otherwise one line saying why not; the engine asks every solver registered for a
    method and runs the first that accepts.  The function is imported on first use (CVXPY,
    OR-Tools and SCIP are heavy) and has the signature of this module's docstring.

    Attributes
    ----------
    method : str
        The method name users give (several solvers may serve one method, for different chains).
    module, function : str
        Where the proposing function lives.
    two_state : bool
        Built on the closed forms of a binary chain (refuses other chains).
    max_eps : float
        Largest budget the formulation can take (``e^eps`` is a model coefficient).
    portfolio : callable
        Whether and how ``method="optimal"`` runs it (:data:`Portfolio`).
    defaults : callable
        ``defaults(problem)``: keyword arguments every run of it gets (e.g. the budget with margin
        of the successive-LP design).
    takes_starts : bool
        It accepts ``starts=`` (the designs verified so far, as warm starts and fallbacks).
    certifier : bool
        An expensive search run for its bound (SCIP): ``method="optimal"`` runs it only while the
        certificate of the designs verified before it is open (gap above the target), fast first.
    cheap : bool
        Time linear in ``n`` (a closed form): still run when the time limit has passed, so that every
        design has a verified candidate of its own.
    why : str
        What the solver is, for its refusal messages.
    """

    method: str
    module: str
    function: str
    two_state: bool = False
    max_eps: float = math.inf
    portfolio: Portfolio = _never
    defaults: Callable[[Problem], dict[str, Any]] = _no_options
    takes_starts: bool = False
    certifier: bool = False
    cheap: bool = False
    why: str = ""

    def refusal(self, problem: Problem) -> str | None:
        """``None`` if this solver accepts ``problem``, else why not (one line)."""
        if self.two_state and not problem.binary:
            return (f"method {self.method!r} is built on the closed forms of a two-state chain ({self.why}); "
                    f"this chain has {problem.k} states")
        if problem.eps > self.max_eps:
            return (f"eps={problem.eps:g} is beyond the global model's range (eps <= {self.max_eps:g}: e^eps is a "
                    "coefficient of the SCIP model); use method 'optimal', 'local' or 'dim'")
        return None

    def accepts(self, problem: Problem) -> bool:
        """Whether this solver applies to ``problem`` (:meth:`refusal` is ``None``)."""
        return self.refusal(problem) is None

    def propose(self, problem: Problem, **options: Any) -> Candidate:
        """Run the optimiser on ``problem`` (``options``: its keyword arguments)."""
        fn = getattr(importlib.import_module(self.module), self.function)
        return fn(problem.chain, problem.n, eps=problem.eps, p=problem.p, **dict(self.defaults(problem), **options))
