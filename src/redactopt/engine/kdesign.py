r"""The k-state names of design, kept for old callers: :func:`kdesign` is :func:`redactopt.engine.design.design`.

There is one design for every chain (:mod:`redactopt.engine.registry` says which solver serves
which chain): a two-state chain, given as a ``MarkovChain`` or as a 2x2 matrix, gets the binary
closed forms; a chain on more states the k-state formulations.  The paper's three-region (3R)
and Markov-quilt (MQ) mechanisms have no k-state form (3R's regions and Algorithm 2 are built on
the two values of a binary record, Eqs. 1-2; MQ's quilt on the binary chain's closed-form
influence, Algorithm 1), so for k states the data-independent window optimum (``method="dim"``)
is the baseline every design is compared with.
"""

from __future__ import annotations

from typing import Literal

from redactopt.engine.local import design_whole
from redactopt.engine.ladder import judge_candidate
from redactopt.judge.certify import DesignResult
from redactopt.model.chain import Chain as KChain

__all__ = ["KMETHODS", "kdesign", "kjudge_candidate", "binary_equivalent"]

KMethod = Literal["optimal", "dim", "local", "global"]

#: The methods that serve a chain of any number of states.
KMETHODS: tuple[str, ...] = ("optimal", "dim", "local", "global")

#: The repair ladder of every chain (:func:`redactopt.engine.ladder.judge_candidate`; the old name).
kjudge_candidate = judge_candidate


def binary_equivalent(chain: KChain):
    r"""The :class:`~redactopt.model.chain.MarkovChain` standing for exactly the same chain, or ``None``.

    A two-state chain is a binary chain when ``0 < P[0,1], P[1,0] < 1`` and its exact matrix is
    :math:`[[1-\alpha,\alpha],[\beta,1-\beta]]` with :math:`\alpha,\beta` the doubles ``P[0,1]``
    and ``P[1,0]`` (then the two describe the same rational chain).
    """
    from fractions import Fraction

    from redactopt.model.chain import MarkovChain

    if chain.k != 2:
        return None
    a, b = float(chain.transition[0, 1]), float(chain.transition[1, 0])
    if not (0.0 < a < 1.0 and 0.0 < b < 1.0):
        return None
    fa, fb = Fraction(a), Fraction(b)
    if chain.exact_transition() != ((1 - fa, fa), (fb, 1 - fb)):
        return None
    return MarkovChain(a, b)


def kdesign(chain: KChain, n: int, *, eps: float, p: int = 0, method: KMethod = "optimal",
            time_limit: float = 60.0, certify_time: float = 0.0, verbose: bool = False) -> DesignResult:
    r""":func:`redactopt.engine.design.design` with the k-state methods' names (the old entry point).

    ``method``: ``dim`` (the exact data-independent window optimum, Lemma 1), ``local``
    (successive linear programming from a redacted window), ``global`` (SCIP's certified
    optimum, small ``n``) or ``optimal`` (the portfolio of :mod:`redactopt.engine.registry`).
    The result is verified exactly and certified by the smallest valid bound (Lemma 2's, the
    solvers').
    """
    if method not in KMETHODS:
        raise ValueError(f"method must be one of {', '.join(KMETHODS)}, got {method!r}")
    return design_whole(chain, n, eps=eps, p=p, method=method, time_limit=time_limit, certify_time=certify_time,
                        verbose=verbose)
