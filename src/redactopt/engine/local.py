"""The local design of one chain on all its records: every solver proposes, :func:`design_whole` judges.

:func:`redactopt.engine.design.design` is the front door (mechanism classes, varying chains, classes of
chains, and a long sequence's window, :func:`redactopt.engine.window.design_local`); this module is what
they all come down to for one chain and all ``n`` records: the paper's mechanisms as printed, or the
solver table's proposals (:mod:`redactopt.engine.registry`), each snapped, verified exactly and repaired
or refused by the one ladder (:func:`redactopt.engine.ladder.judge_candidate`), the best certified with
the smallest valid upper bound (Lemma 2's and every solver's over all mechanisms; SCIP's dual bound
discarded where a verified design refutes it, ``info["refuted_bounds"]``).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from redactopt import _progress
from redactopt._validate import check_real
from redactopt.engine.ladder import judge_candidate
from redactopt.engine.registry import METHODS, TARGET_GAP, portfolio, solver_for
from redactopt.engine.tuning import tuned_three_region
from redactopt.judge.certify import DesignResult, choose_bound, finalize
from redactopt.judge.lemma2 import leakage_ceiling, lemma2_upper_bound
from redactopt.model.chain import MarkovChain, check_problem
from redactopt.paper.mechanisms import default_split, markov_quilt, three_region
from redactopt.solvers.base import Candidate, Problem, Solver, SolverTimeout

__all__ = ["design_whole", "resolve_split", "solver_budget", "SOLVER_MAX_EPS", "MIN_SOLVER_SECONDS", "Progress",
           "Method"]

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


def design_whole(chain: MarkovChain, n: int, *, eps: float, p: int = 0, method: Method = "optimal",
                 split: str | float | None = "auto", time_limit: float = 60.0,
                 rng: np.random.Generator | None = None, certify_time: float = 0.0,
                 options: dict[str, Any] | None = None, progress: Progress | None = None,
                 verbose: bool = False) -> DesignResult:
    """:func:`redactopt.engine.design.design` of one chain (a :class:`~redactopt.model.chain.Chain`) on all
    ``n`` records (``whole=True``): the arguments as there, the result exactly verified and certified."""
    n, eps, p = check_problem(chain, n, eps, p, two_state=False)
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
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
