r"""Designs on k-state chains: :func:`kdesign` — the one place that judges k-state proposals.

Solvers propose (:class:`redactopt.solvers.base.Candidate`): the data-independent window optimum
(:mod:`redactopt.solvers.kdim`), the successive-LP local design (:mod:`redactopt.solvers.klocal`;
on small problems from several starts, :func:`~redactopt.solvers.klocal.propose_kmultistart`)
and the SCIP global optimum (:mod:`redactopt.solvers.kscip`).  :func:`kdesign` snaps every proposal,
verifies it exactly (:func:`redactopt.judge.certify.verify`), repairs what fails — always toward
*more* redaction, which never raises the leakage (post-processing, docs/mathematics.md §4; the
argument holds for any number of states) — picks the best verified design and certifies it with
the smallest valid bound it has: Lemma 2's (:func:`redactopt.judge.lemma2.lemma2_upper_bound`)
and SCIP's dual bound.

The paper's three-region (3R) and Markov-quilt (MQ) mechanisms have no k-state form: 3R's regions
and Algorithm 2 are built on the two values of a binary record (one value "small", the other
"large" influence, Eqs. 1-2) and MQ's quilt on the binary chain's closed-form influence
(Algorithm 1).  For k states the data-independent window optimum (``method="dim"``, the exact
k-state counterpart of what MQ approximates) is the baseline every design is compared with.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Literal

import numpy as np

from redactopt._validate import check_real
from redactopt.engine.ladder import judge_candidate
from redactopt.judge.certify import DesignResult, choose_bound, finalize
from redactopt.judge.leakage import utility
from redactopt.judge.lemma2 import lemma2_upper_bound
from redactopt.judge.tolerances import safe_budget
from redactopt.model.chain import Chain as KChain
from redactopt.solvers.base import Candidate
from redactopt.solvers.kdim import check_kproblem
from redactopt.solvers.kscip import KGLOBAL_MAX_EPS

__all__ = ["KMETHODS", "kdesign", "kjudge_candidate", "kglobal_applies", "binary_equivalent"]

KMethod = Literal["optimal", "dim", "local", "global"]

KSOLVERS: dict[str, tuple[str, str]] = {
    "dim": ("redactopt.solvers.kdim", "kdim_enumerate"),
    "local": ("redactopt.solvers.klocal", "propose_klocal"),
    "multistart": ("redactopt.solvers.klocal", "propose_kmultistart"),
    "global": ("redactopt.solvers.kscip", "propose_kglobal"),
}

KMETHODS: tuple[str, ...] = ("optimal", "dim", "local", "global")

#: ``method="optimal"`` also runs SCIP (for at most ``KGLOBAL_SECONDS``) on problems this small:
#: one-sided ``n <= 8``, two-sided ``n <= 5``.
KGLOBAL_MAX_ONE_SIDED = 8
KGLOBAL_MAX_TWO_SIDED = 5
KGLOBAL_SECONDS = 10.0


def kglobal_applies(n: int, p: int) -> bool:
    """Whether ``method="optimal"`` also runs the global solver (small problems)."""
    return n <= (KGLOBAL_MAX_ONE_SIDED if p in (0, n - 1) else KGLOBAL_MAX_TWO_SIDED)


def _solver(method: str) -> Callable[..., Candidate]:
    if method == "binary":
        return _binary_candidate
    module, name = KSOLVERS[method]
    return getattr(importlib.import_module(module), name)


def binary_equivalent(chain: KChain):
    """The :class:`~redactopt.model.chain.MarkovChain` standing for exactly the same chain, or ``None``.

    A two-state chain is a binary chain when ``0 < P[0,1], P[1,0] < 1`` and its exact matrix is
    :math:`[[1-\alpha,\alpha],[\beta,1-\beta]]` with :math:`\alpha,\beta` the doubles ``P[0,1]``
    and ``P[1,0]`` (then the two paths judge the same rational chain).
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


def _binary_candidate(chain: KChain, n: int, *, eps: float, p: int, time_limit: float,
                      verbose: bool = False, **_: object) -> Candidate:
    """k = 2: the binary path's certified optimum (:func:`redactopt.engine.design.design`) as a proposal.

    Its certificate bounds every mechanism of the same exact chain, so it is carried over.
    """
    from redactopt.engine.design import design

    res = design(binary_equivalent(chain), n, eps=eps, p=p, time_limit=time_limit, verbose=verbose)
    c = res.certificate
    return Candidate(np.array(res.redact_prob), "binary", "time_limit" if c.stopped else "optimal",
                     upper_bound=c.upper_bound, bound_solver=f"binary-{c.solver}", bound_scope=c.scope,
                     info={"binary_method": res.method, "binary_utility": res.utility})


#: The repair ladder of every chain (:func:`redactopt.engine.ladder.judge_candidate`; the old name).
kjudge_candidate = judge_candidate


# --------------------------------------------------------------------------
# the entry point
# --------------------------------------------------------------------------
def kdesign(chain: KChain, n: int, *, eps: float, p: int = 0, method: KMethod = "optimal",
            time_limit: float = 60.0, certify_time: float = 0.0, verbose: bool = False) -> DesignResult:
    r"""Design a local redaction mechanism on a k-state chain with exact leakage at most ``eps``.

    Parameters
    ----------
    chain : KChain
    n : int
        Number of records.
    eps : float
        Privacy budget in nats (Definition 1 generalised: the largest log-ratio between any two
        private values over every output).
    p : int
        0-based index of the private record.
    method : {"optimal", "dim", "local", "global"}
        ``dim``: the exact data-independent window optimum (Lemma 1); ``local``: successive
        linear programming from a redacted window (a local optimum, never worse than the window
        it starts from); ``global``: SCIP's certified optimum (small ``n``); ``optimal``: the best
        verified of ``dim`` and ``local`` — on small problems (:func:`kglobal_applies`) ``local``
        from several starts (:func:`~redactopt.solvers.klocal.propose_kmultistart`) and
        ``global``, and ``global`` whenever ``certify_time > 0``; for a two-state chain that is a
        binary chain (:func:`binary_equivalent`) the binary path's certified optimum instead of
        ``global``, so k = 2 designs match the binary path.
    time_limit : float
        Seconds for each optimiser.
    certify_time : float
        Seconds for SCIP in ``optimal`` beyond its default sizes (0: only small problems).

    Returns
    -------
    DesignResult
        Verified exactly (rational arithmetic near ``eps``), with the smallest valid upper bound
        on the utility of every eps-private local redaction mechanism (Lemma 2's, SCIP's dual
        bound) and, for ``dim``, the exact optimum over data-independent mechanisms as its class
        certificate.  ``info`` holds each optimiser's candidate utility and what the judge did.
    """
    n, eps, p = check_kproblem(chain, n, eps, p)
    time_limit = check_real(time_limit, "time_limit")
    certify_time = check_real(certify_time, "certify_time")
    if not certify_time >= 0.0:
        raise ValueError(f"certify_time must be >= 0, got {certify_time!r}")
    if method not in KMETHODS:
        raise ValueError(f"method must be one of {', '.join(KMETHODS)}, got {method!r}")
    if time_limit <= 0.0:
        raise ValueError(f"time_limit must be > 0, got {time_limit!r}")
    target = safe_budget(eps, n, chain.k)
    runs = [method] if method != "optimal" else ["dim", "local"]
    if method == "optimal" and binary_equivalent(chain) is not None:
        runs.append("binary")  # k = 2: the binary path's optimum and certificate (same exact chain)
    global_time = time_limit if method == "global" else 0.0
    if method == "optimal" and "binary" not in runs and eps <= KGLOBAL_MAX_EPS and \
            (kglobal_applies(n, p) or certify_time > 0.0):
        if kglobal_applies(n, p):
            runs[runs.index("local")] = "multistart"  # small: the local search from several structures
        runs.append("global")
        global_time = certify_time if certify_time > 0.0 else min(KGLOBAL_SECONDS, time_limit)
    bounds: list[tuple[float, str, bool]] = [(lemma2_upper_bound(chain, n, eps=eps, private=p), "lemma2", False)]
    class_bound = None
    best: tuple[np.ndarray | None, float, dict] = (None, -1.0, {})
    summary: dict = {}
    starts: list[np.ndarray] = []
    for run in runs:
        kwargs: dict = {}
        if run in ("local", "multistart"):
            kwargs["budget"] = target
        if run == "global":
            kwargs["starts"] = tuple(starts)
        cand = _solver(run)(chain, n, eps=eps, p=p,
                            time_limit=global_time if run == "global" else time_limit, verbose=verbose, **kwargs)
        q, u, how, refused = kjudge_candidate(chain, cand, eps=eps, p=p)
        summary[run] = {"utility": u if q is not None else None, "status": cand.status, "repair": how.get("repair"),
                        "refused": refused, "solver_info": cand.info}
        if q is not None:
            starts.append(q)
            if u > best[1]:
                best = (q, u, dict(how, solver=run))
        if cand.upper_bound is not None:
            if cand.bound_scope == "all":
                bounds.append((cand.upper_bound, cand.bound_solver or run, cand.status == "time_limit"))
            else:
                class_bound = (cand.upper_bound, cand.bound_solver or run, cand.bound_scope)
    q = best[0]
    if q is None:  # full redaction of the window is always private
        q = np.ones((n, chain.k))
        best = (q, utility(chain, q), {"solver": "full-redaction"})
    (ub, solver, stopped), refuted = choose_bound(bounds, best[1])
    info = dict(best[2], candidates=summary)
    if refuted:
        info["refuted_bounds"] = refuted
    label = method if method != "optimal" else f"optimal (best candidate: {best[2].get('solver')})"
    return finalize(chain, q, private=p, eps=eps, method=label, upper_bound=ub, solver=solver,
                    stopped=stopped, info=info, class_bound=class_bound if method == "dim" else None)
