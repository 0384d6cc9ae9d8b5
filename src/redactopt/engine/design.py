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
import dataclasses
import time
from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from redactopt import _progress
from redactopt._search import bisect_boundary
from redactopt._validate import check_index, check_n, check_real
from redactopt.engine.tuning import tuned_three_region
from redactopt.engine.ladder import judge_candidate
from redactopt.engine.varying import VARYING_METHODS, design_varying
from redactopt.judge.certify import DesignResult, choose_bound, finalize
from redactopt.judge.classes import nominal_bound
from redactopt.judge.lemma2 import leakage_ceiling, lemma2_upper_bound
from redactopt.judge.leakage import leakage
from redactopt.judge.tolerances import safe_budget
from redactopt.engine.registry import METHODS, SOLVERS, TARGET_GAP, portfolio, solver_for
from redactopt.model.chain import MarkovChain, check_problem
from redactopt.model.classes import ChainClass
from redactopt.model.varying import VaryingChain, judged_chain
from redactopt.paper.mechanisms import default_split, markov_quilt, three_region
from redactopt.solvers.base import Candidate, Problem, Solver, SolverTimeout

__all__ = ["METHODS", "SOLVERS", "design", "resolve_split", "solver_budget"]

Method = Literal["optimal", "frontier", "3r", "3r-calibrated", "mq", "dim", "dim-milp", "global", "sgp", "local"]

#: The paper's mechanisms as printed: judged strictly (refused above eps, never repaired).
_PAPER = {"3r": three_region, "mq": markov_quilt}


#: The optimisers compute with :math:`e^\epsilon`; a budget above this one is handed to them as this
#: one (their designs stay private for the larger budget; their bounds then do not hold for it and are
#: dropped).  Only chains with a transition probability below about 1e-65 get here (see
#: :func:`solver_budget`).
SOLVER_MAX_EPS = 300.0


def solver_budget(chain: MarkovChain, n: int, p: int, eps: float) -> tuple[float, bool]:
    r"""The budget the optimisers are given for ``eps``, and whether their bounds hold for ``eps``.

    No mechanism leaks more than :math:`L_{max}`, the leakage of publishing every record but ``p``
    (:func:`~redactopt.judge.lemma2.leakage_ceiling`).  For :math:`\epsilon\ge L_{max}` every
    mechanism is private, so the problem at :math:`\min(\epsilon, L_{max})` (rounded outward) is
    the same problem: same optimum, same bounds — and :math:`e^\epsilon` never overflows.  Only
    where :math:`L_{max}` itself exceeds :data:`SOLVER_MAX_EPS` is the budget cut further, and
    then the optimisers' bounds are not valid for ``eps`` (``False``).
    """
    cap = max(leakage_ceiling(chain, int(p > 0) + int(p < n - 1)), 1.0)
    if eps <= cap and eps <= SOLVER_MAX_EPS:
        return eps, True
    return min(cap, SOLVER_MAX_EPS), cap <= SOLVER_MAX_EPS


#: The least time a solver is given once the design's time limit is nearly spent (a solver given 0 s may
#: refuse to start; the cheap ones finish in about this).
MIN_SOLVER_SECONDS = 0.05

#: ``progress(stage, done, total)``: the optimisers of a design done so far (the interface draws it).
Progress = Callable[[str, int, int], None]


def resolve_split(split: str | float | None, n: int, p: int, eps: float) -> float | None | str:
    """Turn a ``--split`` value into ``eps_left`` (``None`` = the default half split, ``"auto"`` = tuned)."""
    if split is None or split == "half":
        return None
    if split == "auto":
        return "auto"
    el = check_real(split if not isinstance(split, str) else _parse_float(split), "split")
    if not 0.0 <= el <= eps:
        raise ValueError(f"split (eps_left) must lie in [0, eps] = [0, {eps}], got {el!r}")
    return el


def _parse_float(s: str) -> float:
    try:
        return float(s)
    except ValueError:
        raise ValueError(f"split must be 'auto', 'half' or a number (eps_left), got {s!r}") from None


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
    n, eps, p = check_problem(chain, n, eps, p, two_state=False)
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if not whole:
        from redactopt.engine.window import covers, design_sparse  # builds on this module

        if not covers(chain, n, eps, p):
            return design_sparse(chain, n, eps=eps, p=p, method=method, split=split, time_limit=time_limit,
                                 rng=rng, certify_time=certify_time, options=options, progress=progress,
                                 verbose=verbose).to_result()
    tl = check_real(time_limit, "time_limit")
    if tl <= 0:
        raise ValueError(f"time_limit must be > 0, got {tl!r}")
    ct = check_real(certify_time, "certify_time")
    if ct < 0:
        raise ValueError(f"certify_time must be >= 0, got {ct!r}")
    if options and method == "optimal":
        raise ValueError("options apply to one forced method, not to method='optimal'")
    eps_left = resolve_split(split, n, p, eps)
    lemma2 = lemma2_upper_bound(chain, n, eps=eps, private=[p])

    if method in _PAPER:
        if not chain.binary:
            raise ValueError(f"method {method!r} is the paper's mechanism for a binary chain (its regions and "
                             f"quilts are built on the two values of a record, Eqs. 1-2); this chain has {chain.k} "
                             "states: use 'optimal' or 'dim'")
        el = None if eps_left == "auto" else eps_left
        if method == "3r" and eps_left == "auto":  # the paper's choice: Theorem 1's best split, judged below
            el = tuned_three_region(chain, n, eps=eps, p=p, private=False).eps_left
        mech = _PAPER[method](chain, n, eps=eps, p=p, **({"eps_left": el} if method == "3r" else {}))
        return finalize(chain, mech.redact_prob, private=[p], eps=eps, method=method, upper_bound=lemma2,
                        solver="lemma2", info=dict(mech.info))

    eps_solve, bounds_hold = solver_budget(chain, n, p, eps)
    if eps_left not in (None, "auto") and eps_solve < eps:
        eps_left *= eps_solve / eps  # type: ignore[operator]  # the same split of the budget solved for
    if eps_left is None:  # "half": the paper's default split
        eps_left = default_split(n, p, eps_solve)[0]
    calibrated = {} if eps_left == "auto" else {"eps_left": eps_left}
    problem = Problem(chain, n, eps_solve, p, time_limit=tl, certify_time=ct)
    if method != "optimal":
        s = solver_for(method, problem)
        runs = [(s, dict(calibrated if method == "3r-calibrated" else {}, **(options or {})))]
    else:
        runs = [(s, dict(opts, **(calibrated if s.method == "3r-calibrated" else {}))) for s, opts in portfolio(problem)]
    return _judge_runs(problem, eps, method, runs, lemma2, rng, progress, verbose, bounds_hold=bounds_hold)


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


def _judge_runs(problem: Problem, eps: float, method: str, runs: list[tuple[Solver, dict]],
                lemma2: float, rng: np.random.Generator | None, progress: Progress | None,
                verbose: bool, *, bounds_hold: bool) -> DesignResult:
    """Run the solvers on ``problem`` (its budget is :func:`solver_budget`'s), judge every proposal at
    ``eps``, certify the best with the smallest valid bound (the solvers' only where ``bounds_hold``)."""
    chain, n, p = problem.chain, problem.n, problem.p
    judged: list[tuple[Candidate, np.ndarray, float, dict]] = []
    refused: list[str] = []
    skipped: list[str] = []
    deadline = time.monotonic() + problem.time_limit
    for i, (solver, opts) in enumerate(runs):
        _tell(progress, "design", i, len(runs), note=solver.method)
        left = deadline - time.monotonic()
        if judged and left <= 0.0 and not solver.cheap:  # the time limit is the design's: nothing more starts
            skipped.append(f"{solver.method}: the time limit had passed")
            continue
        if judged and solver.certifier and method == "optimal" and problem.certify_time <= 0.0 \
                and _open_gap(judged, lemma2, bounds_hold) <= TARGET_GAP:
            skipped.append(f"{solver.method}: the certificate had reached the target gap {TARGET_GAP:g}")
            continue  # fast first: a certifier only where the certificate is still open
        kw: dict[str, Any] = dict(time_limit=problem.time_limit, verbose=verbose, rng=rng)
        if solver.takes_starts:
            kw.update(starts=tuple(j[1] for j in judged))
        kw.update(opts)
        if isinstance(kw["time_limit"], (int, float)) and not isinstance(kw["time_limit"], bool):
            # what is left of the design's limit, never below MIN_SOLVER_SECONDS; a smaller limit the
            # caller gave (0 included, which the solver refuses) is passed on as given
            kw["time_limit"] = min(float(kw["time_limit"]), max(left, MIN_SOLVER_SECONDS))
        try:
            with _progress.phase(solver.method, sub=True):
                cand = solver.propose(problem, **kw)
        except SolverTimeout as exc:  # nothing to propose within the time left: the others stand
            skipped.append(f"{solver.method}: the time limit had passed ({exc})")
            continue
        if not bounds_hold:
            cand = dataclasses.replace(cand, upper_bound=None)
        with _progress.phase("judge", sub=True):
            q, u, how, why = judge_candidate(chain, cand, eps=eps, p=p)
        refused += why
        if q is not None:
            judged.append((cand, q, u, how))
    _tell(progress, "design", len(runs), len(runs))
    if not judged:
        # every proposal failed: full redaction leaks nothing and is always a valid answer
        q = np.ones((n, chain.k))
        return finalize(chain, q, private=[p], eps=eps, method=method, upper_bound=lemma2, solver="lemma2",
                        info={"fallback": "all records redacted", "refused": refused})
    cand, q, top, how = max(judged, key=lambda j: j[2])
    out_of_time = any("time limit" in w for w in skipped)
    (bound, solver_name, stopped), refuted = choose_bound(
        [(lemma2, "lemma2", False)] + [(c.upper_bound, c.bound_solver or c.solver, c.status == "time_limit")
                                       for c, *_ in judged if c.upper_bound is not None and c.bound_scope == "all"],
        top)
    class_bound = None
    if cand.upper_bound is not None and cand.bound_scope != "all":
        class_bound = (cand.upper_bound, cand.bound_solver or cand.solver, cand.bound_scope)
    info = dict(how, solver_status=cand.status)
    info["source"] = cand.solver
    info["candidates"] = {c.solver: u for c, _, u, _ in judged}
    if refused:
        info["refused"] = refused
    if refuted:
        info["refuted_bounds"] = refuted
    if skipped:
        info["skipped"] = skipped
    return finalize(chain, q, private=[p], eps=eps, method=method, upper_bound=bound,
                    solver=solver_name, info=info, tol=0.0, stopped=stopped or out_of_time, class_bound=class_bound)


def _tell(progress: Progress | None, stage: str, done: int, total: int, note: str | None = None) -> None:
    """``progress`` (the caller's) and whoever watches the run (:mod:`redactopt._progress`)."""
    if progress is not None and progress is not _progress.report:
        progress(stage, done, total)
    _progress.report(stage, done, total, note=note)


def _open_gap(judged: list[tuple[Candidate, np.ndarray, float, dict]], lemma2: float, bounds_hold: bool) -> float:
    """The gap left by the designs verified so far: the smallest bound over all mechanisms they carry
    (Lemma 2's among them) minus the best verified utility (decides only whether a certifier runs)."""
    top = max(j[2] for j in judged)
    bounds = [lemma2] + [c.upper_bound for c, *_ in judged
                         if bounds_hold and c.upper_bound is not None and c.bound_scope == "all"]
    return min(bounds) - top


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
