"""One entry point for mechanism design: :func:`design` — the one place that judges.

Solvers *propose* (:class:`redactopt.solvers.base.Candidate`); :func:`design` snaps every
proposal, verifies it exactly (:func:`redactopt.judge.certify.finalize`), repairs or falls
back (the one ladder, :func:`redactopt.engine.ladder.judge_candidate`), picks the best
verified design and certifies it
with the smallest valid upper bound it has: Lemma 2's closed form and every bound a solver
derived over all mechanisms.  A bound below a verified utility is an error
(:class:`redactopt.errors.BoundError`), never clamped — except SCIP's dual bound, whose
floating-point numerics can fail on extreme chains: a verified design that refutes it discards
it (``info["refuted_bounds"]``) and the next valid bound certifies.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from redactopt import _progress
from redactopt._search import bisect_boundary
from redactopt._validate import check_index, check_n
from redactopt.engine.varying import VARYING_METHODS, design_varying
from redactopt.judge.certify import DesignResult, SparseDesign, finalize
from redactopt.judge.classes import nominal_bound
from redactopt.judge.leakage import leakage
from redactopt.judge.tolerances import safe_budget
from redactopt.engine.registry import METHODS, SOLVERS
from redactopt.model.chain import Chain, MarkovChain
from redactopt.model.classes import ChainClass
from redactopt.model.varying import VaryingChain, judged_chain
from redactopt.engine.local import Method, Progress
from redactopt.engine.joint import design_joint_sparse
from redactopt.engine.window import design_local
from redactopt.engine.window import design_sparse as window_sparse

__all__ = ["METHODS", "SOLVERS", "design", "design_sparse"]


# --------------------------------------------------------------------------
# the entry point
# --------------------------------------------------------------------------
def _design_of_class(chain: Any, n: int, *, eps: float, p: int, cls: str, time_limit: float,
                     given: dict[str, bool]) -> Any:
    """``design(..., cls=...)`` beyond ``local``: :func:`redactopt.engine.classes_design.design_class`."""
    from redactopt.model.mechanism_classes import CLASSES

    if cls not in CLASSES:
        raise ValueError(f"cls must be one of {', '.join(CLASSES)}, got {cls!r}")
    named = [k for k, v in given.items() if v]
    if named:
        raise ValueError(f"{named[0]} applies to cls='local' only (cls={cls!r} has its own optimiser)")
    if isinstance(chain, ChainClass):
        raise ValueError(f"a class of chains applies to cls='local' only; cls={cls!r} designs for one chain")
    from redactopt.engine.classes_design import design_class

    return design_class(chain, n, eps=eps, p=p, cls=cls, time_limit=time_limit)


def design(
    chain: MarkovChain | ChainClass,
    n: int,
    *,
    eps: float,
    p: int = 0,
    method: Method = "optimal",
    split: str | float | None = "auto",
    time_limit: float = 60.0,
    rng: np.random.Generator | None = None,
    certify_time: float = 0.0,
    options: dict[str, Any] | None = None,
    progress: Progress | None = None,
    verbose: bool = False,
    whole: bool = False,
    cls: str = "local",
) -> DesignResult:
    r"""Design a local redaction mechanism with exact leakage at most ``eps``.

    Parameters
    ----------
    chain : MarkovChain or ChainClass
        The chain, or a class of chains (:class:`~redactopt.model.classes.ChainClass`): then
        the design is private for *every* chain of the class (:func:`_design_class`).
    n : int
        Number of records.
    eps : float
        Privacy budget (nats).
    p : int
        0-based index of the private record.
    method : str
        ``"optimal"`` (default): the best verified design among the certified side-frontier
        optimum (:mod:`redactopt.solvers.frontier`, any ``p``), calibrated 3R, the
        data-independent optimum and, on small problems, the global solver (SCIP), certified
        by the smallest of their bounds.
        ``"frontier"``, ``"global"`` (PySCIPOpt) and ``"sgp"`` (successive geometric
        programming, CVXPY) force one of the optimisers; ``"3r-calibrated"``: 3R's
        structure with redaction probabilities set by the exact leakage;
        ``"dim"``/``"dim-milp"``: the exact data-independent window optimum (enumeration /
        OR-Tools MILP); ``"mq"``: Algorithm 1 as printed; ``"3r"``: the paper's 3R as
        printed — raises :class:`~redactopt.errors.PrivacyCheckError` where it leaks more
        than ``eps``.
    split : "auto", "half" or float
        Budget split for the 3R-based methods: tuned (``"auto"``; for ``"3r"`` the split
        maximising Theorem 1's utility, as the paper would choose it, then judged; for
        ``"3r-calibrated"`` searched over every split), ``eps/2`` per side (``"half"``), or
        the left budget ``eps_left``.
    time_limit : float
        Seconds for the whole design (every optimiser together; the window doubling of a long
        sequence shares it too): each optimiser gets what is left, none starts once it is spent
        (the closed-form data-independent optimum excepted), and a design stopped so says so
        (``certificate.stopped``) and keeps the certificate of what ran.
    rng : numpy.random.Generator, optional
        Random starts of the local optimiser.
    certify_time : float
        ``method="optimal"``: also run the global solver (SCIP) for this many seconds (within
        ``time_limit``), whatever the problem's size and gap; 0 (default): SCIP runs only on small
        problems and only while the gap of the designs verified before it is above
        :data:`~redactopt.engine.registry.TARGET_GAP` (fast first).  Its dual bound is used when
        tighter and its proposal joins the candidates.
    options : dict, optional
        Solver-specific keyword arguments for a forced method (e.g. ``{"starts": 5}`` for
        ``"sgp"``, ``{"gap_limit": 1e-8}`` for ``"global"``, ``{"solver": "HIGHS"}`` for
        ``"dim-milp"``).
    progress : callable, optional
        ``progress(stage, done, total)`` as optimisers finish (stage ``"design"``: optimisers done
        of all; with ``cls`` beyond local, every stage the class design reports: its classes,
        branch-and-bound boxes, blocks).  The command line watches the same reports through
        :mod:`redactopt._progress` (docs/commands.md, "Progress").
    verbose : bool
        Let the solvers print their logs.
    whole : bool
        Design on all ``n`` records.  By default a sequence longer than the window around ``p``
        (:func:`redactopt.engine.window.design_window`) is designed on that window, everything
        else published with certainty, which is exact (the cut argument) and takes time
        independent of ``n``; the result is re-verified on all ``n`` records.  For very long
        sequences :func:`redactopt.engine.window.design_sparse` returns the sparse design
        without building ``n`` rows.
    cls : {"local", "scan", "owner", "holder"}
        The mechanism class (docs/beyond_local.md).  ``"local"`` (default): everything above.
        Any other class returns :func:`redactopt.engine.classes_design.design_class`'s
        :class:`~redactopt.engine.classes_design.ClassDesign` instead of a ``DesignResult``
        (the best verified mechanism of the class, its exact leakage and a certified bound over
        the class); ``chain`` may then also be a :class:`~redactopt.model.kchain.KChain`, and only
        ``time_limit`` of the options above applies.

    Returns
    -------
    DesignResult
        Exactly verified; ``certificate.upper_bound`` is the smallest valid bound on the
        utility of *every* ``eps``-private local redaction mechanism among Lemma 2's
        (:func:`~redactopt.judge.certify.lemma2_upper_bound`) and those the solvers
        derived; ``certificate.stopped`` says a time limit stopped the search that gave
        it.  ``info["source"]`` names the optimiser whose proposal won and
        ``info["candidates"]`` the verified utility of each one that ran.

    Raises
    ------
    PrivacyCheckError
        ``method="3r"``/``"mq"`` where the paper's mechanism leaks more than ``eps``.
    BoundError
        If a solver's bound other than SCIP's lies below a verified utility (a bug, never
        clamped; a refuted SCIP bound is discarded and listed in ``info["refuted_bounds"]``).
    """
    if cls != "local":
        given = {"method": method != "optimal", "split": split != "auto", "rng": rng is not None,
                 "certify_time": certify_time != 0.0, "options": bool(options), "verbose": verbose, "whole": whole}
        with _progress.watching(progress) if progress is not None else contextlib.nullcontext():
            return _design_of_class(chain, n, eps=eps, p=p, cls=cls, time_limit=time_limit, given=given)
    if isinstance(chain, VaryingChain):
        chain = judged_chain(chain, check_n(n))
    if isinstance(chain, VaryingChain):  # steps that vary: the designs made for them (redactopt.engine.varying)
        return _design_varying(chain, eps=eps, p=p, method=method, time_limit=time_limit,
                               given={"split": split != "auto", "rng": rng is not None, "certify_time": certify_time != 0.0,
                                      "options": bool(options), "whole": whole})
    if isinstance(chain, ChainClass):
        return _design_class(chain, n, eps=eps, p=p, method=method, split=split, time_limit=time_limit, rng=rng,
                             certify_time=certify_time, options=options, progress=progress, verbose=verbose,
                             whole=whole)
    return design_local(chain, n, eps=eps, p=p, method=method, split=split, time_limit=time_limit, rng=rng,
                        certify_time=certify_time, options=options, progress=progress, verbose=verbose, whole=whole)


def _design_varying(chain: VaryingChain, *, eps: float, p: int, method: str, time_limit: float,
                    given: dict[str, bool]) -> DesignResult:
    """:func:`design` on a chain that varies with the step: :func:`redactopt.engine.varying.design_varying`
    (``"optimal"`` is its best method, ``"auto"``), re-verified on all rows."""
    unused = [k for k, v in given.items() if v]
    if unused:
        raise ValueError(f"{', '.join(unused)} do(es) not apply to a chain that varies with the step")
    m = "auto" if method == "optimal" else method
    if m not in VARYING_METHODS:
        raise ValueError(f"method must be 'optimal' or one of {', '.join(VARYING_METHODS)} on a chain that varies "
                         f"with the step, got {method!r}")
    return design_varying(chain, eps=eps, private=[check_index(p, chain.n, "p")], method=m,
                          time_limit=time_limit).to_result()


def _design_class(chain_class: ChainClass, n: int, *, eps: float, p: int, **kw: Any) -> DesignResult:
    r"""A design private for every chain of a class (Pufferfish :math:`\Theta`).

    The class is decided by its deciding chains (the theorem of :mod:`redactopt.model.classes`).
    With one (every box on one side of :math:`\alpha+\beta=1`) the robust optimum *is* the
    point optimum there: the point design.  With several, the elementwise maximum of their
    point designs is private for each (redacting more is post-processing), and its entries are
    lowered one at a time while the exact leakage at every deciding chain allows.  Utility and
    certificate are stated at the class's **nominal** chain (the estimate; ``chain`` of the
    result): the bound is :func:`~redactopt.judge.classes.nominal_bound` (Lemma 2 over the class,
    or a deciding chain's point certificate carried over).  ``info["point_optima"]`` keeps each
    deciding chain's point optimum and bound, measured at that chain.
    """
    deciding = chain_class.deciding()
    points = [design(c, n, eps=eps, p=p, **kw) for c in deciding]
    if len(points) == 1:
        q = np.asarray(points[0].redact_prob)
    else:
        q = _improve_for_chains(deciding, np.max([np.asarray(r.redact_prob) for r in points], axis=0), p, eps)
    bound, solver = nominal_bound(chain_class, n, eps=eps, private=[p],
                                  point_bounds=[(c, r.certificate.upper_bound, r.certificate.solver)
                                                for c, r in zip(deciding, points)])
    info = dict(points[0].info if len(points) == 1 else {"source": "max of point designs, improved"})
    info.update(chain_class=chain_class.to_dict(),
                point_optima=[{"alpha": c.alpha, "beta": c.beta, "utility": r.utility,
                               "upper_bound": r.certificate.upper_bound, "solver": r.certificate.solver}
                              for c, r in zip(deciding, points)])
    return finalize(chain_class.nominal, q, private=[p], eps=eps, method=points[0].method, upper_bound=bound,
                    solver=solver, info=info, tol=0.0, stopped=any(r.certificate.stopped for r in points),
                    chain_class=chain_class)


def _improve_for_chains(chains: tuple[MarkovChain, ...], q: np.ndarray, p: int, eps: float) -> np.ndarray:
    """Lower each entry of ``q`` (largest utility weight first) as far as every chain allows.

    The leakage is non-increasing in every entry (post-processing), so the feasible values of
    one entry form an interval ending at its current value; bisection finds its other end.
    """
    q = np.array(q, dtype=float)
    target = safe_budget(eps, q.shape[0])

    def ok() -> bool:
        return all(leakage(c, q, p).leakage <= target for c in chains)

    weights = np.mean([c.stationary for c in chains], axis=0)
    order = sorted(((t, v) for t in range(q.shape[0]) for v in (0, 1) if t != p and q[t, v] > 0.0),
                   key=lambda tv: (-weights[tv[1]], abs(tv[0] - p)))
    for t, v in order:
        cur = q[t, v]

        def lowered(x: float, t: int = t, v: int = v) -> bool:
            q[t, v] = x
            return ok()

        q[t, v] = bisect_boundary(lowered, cur, 0.0, steps=40) if not lowered(0.0) else 0.0
    return q


def design_sparse(chain: Chain | ChainClass, n: int, *, eps: float, p: int = 0, method: str = "optimal",
                  radius: int | None = None, **kw: Any) -> SparseDesign:
    """:func:`design` of one private record in a sequence of any length, kept sparse (the blocks only).

    One chain: :func:`redactopt.engine.window.design_sparse` (the window around ``p``, the cut argument);
    a class of chains: :func:`redactopt.engine.joint.design_joint_sparse` (one private record, at every
    deciding chain).  ``radius`` and ``kw`` (``split``, ``time_limit``, ``certify_time``, ``options``,
    ``progress``, ``verbose``, ``rng``) as there.
    """
    if isinstance(chain, ChainClass):
        return design_joint_sparse(chain, n, eps=eps, private=[p], method=method,
                                   time_limit=kw.get("time_limit", 60.0))
    return window_sparse(chain, n, eps=eps, p=p, method=method, radius=radius, **kw)
