"""One entry point for mechanism design: :func:`design` — the one place that judges.

Solvers *propose* (:class:`redactopt.solvers.base.Candidate`); :func:`design` snaps every
proposal, verifies it exactly (:func:`redactopt.judge.certify.finalize`), repairs or falls
back (one ladder, :func:`judge_candidate`), picks the best verified design and certifies it
with the smallest valid upper bound it has: Lemma 2's closed form and every bound a solver
derived over all mechanisms.  A bound below a verified utility is an error
(:class:`redactopt.errors.BoundError`), never clamped.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from redactopt._search import bisect_boundary
from redactopt._validate import check_real
from redactopt.engine.tuning import tuned_three_region
from redactopt.errors import BoundError
from redactopt.judge.certify import DesignResult, finalize, snap, verify
from redactopt.judge.lemma2 import lemma2_upper_bound, publishable
from redactopt.judge.leakage import check_mechanism, utility
from redactopt.judge.tolerances import SNAP_TOL, UTILITY_ATOL
from redactopt.model.chain import MarkovChain, check_problem
from redactopt.paper.mechanisms import markov_quilt, three_region
from redactopt.solvers.base import Candidate

__all__ = ["METHODS", "SOLVERS", "design", "judge_candidate", "global_solver_applies", "resolve_split"]

Method = Literal["optimal", "frontier", "3r", "3r-calibrated", "mq", "dim", "dim-milp", "global", "sgp"]

#: method -> (module, function) of the optimiser that proposes for it (imported on first use:
#: CVXPY, OR-Tools and SCIP are heavy).  Every one has the signature of
#: :mod:`redactopt.solvers.base`.
SOLVERS: dict[str, tuple[str, str]] = {
    "frontier": ("redactopt.solvers.frontier", "propose_frontier"),
    "3r-calibrated": ("redactopt.engine.tuning", "calibrated_three_region"),
    "dim": ("redactopt.solvers.dim", "dim_enumerate"),
    "dim-milp": ("redactopt.solvers.dim", "dim_milp"),
    "global": ("redactopt.solvers.scip_global", "propose_global"),
    "sgp": ("redactopt.solvers.sgp", "propose_sgp"),
}

#: The paper's mechanisms as printed: judged strictly (refused above eps, never repaired).
_PAPER = {"3r": three_region, "mq": markov_quilt}

METHODS: tuple[str, ...] = ("optimal", "frontier", "3r", "3r-calibrated", "mq", "dim", "dim-milp", "global", "sgp")

#: What ``method="optimal"`` runs: the certified side-frontier optimum and two cheap
#: structured designs as independent candidates (the best verified one wins).
OPTIMAL_RUNS = ("frontier", "dim", "3r-calibrated")

#: ``method="optimal"`` also runs the global solver (SCIP) where it closes its gap within
#: seconds, for at most this long: one-sided n <= 12, two-sided n <= 6.  Its dual bound is
#: then tighter than the frontier's grid bound (1e-7 against about 1e-5).
GLOBAL_MAX_ONE_SIDED = 12
GLOBAL_MAX_TWO_SIDED = 6
GLOBAL_SECONDS = 5.0


def global_solver_applies(n: int, p: int) -> bool:
    """Whether ``method="optimal"`` also runs the global solver (small problems)."""
    return n <= (GLOBAL_MAX_ONE_SIDED if p in (0, n - 1) else GLOBAL_MAX_TWO_SIDED)

Progress = Callable[[str], None]


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


def _solver(method: str) -> Callable[..., Candidate]:
    module, name = SOLVERS[method]
    return getattr(importlib.import_module(module), name)


# --------------------------------------------------------------------------
# the judge
# --------------------------------------------------------------------------
def _variants(q: np.ndarray) -> list[np.ndarray]:
    """The snapped proposal, then the proposal snapped toward privacy only.

    Snapping near-0 entries to 0 can create nothing but can remove redaction; snapping
    near-1 entries to 1 only redacts more, which never raises the leakage (post-processing:
    Definition 1's leakage is non-increasing in every entry of ``q``).  So the second
    variant passes whenever the raw proposal would.
    """
    up = np.array(q, dtype=float)
    up[up > 1.0 - SNAP_TOL] = 1.0
    return [snap(q), np.clip(up, 0.0, 1.0)]


def _pushed(chain: MarkovChain, q: np.ndarray, p: tuple[int, ...], eps: float) -> np.ndarray | None:
    """Repair: push the partly published entries toward 1 just far enough to verify exactly.

    ``q + θ(1 - q)`` on the entries strictly between 0 and 1; leakage is non-increasing in
    θ (post-processing), so bisection finds the smallest verified θ.  ``None`` if even
    θ = 1 fails (then the always-published records themselves leak too much).
    """
    partial = (q > 0.0) & (q < 1.0)
    if not partial.any():
        return None

    def at(theta: float) -> np.ndarray:
        return np.where(partial, q + theta * (1.0 - q), q)

    def ok(theta: float) -> bool:
        return verify(chain, at(theta), p, eps)[1]

    if not ok(1.0):
        return None
    return at(bisect_boundary(ok, 1.0, 0.0, steps=40))


def _lemma2_closed(chain: MarkovChain, q: np.ndarray, p: int, eps: float) -> np.ndarray:
    """Repair without loss: redact always every value Lemma 2 forbids (decided exactly).

    A value published with positive probability whose pointwise influence exceeds ``eps``
    makes a mechanism leak more than ``eps`` (Lemma 2), so every eps-private mechanism
    redacts it always: closing it costs nothing a private mechanism could have.
    """
    q = q.copy()
    for side, sign in ((slice(None, p), -1), (slice(p + 1, None), 1)):
        rows = np.arange(q.shape[0])[side]
        if not rows.size:
            continue
        d = np.abs(rows - p)
        allowed = publishable(chain, int(d.max()), upper=eps, lower=eps)[d - 1]
        q[rows] = np.where(allowed, q[rows], 1.0)
    return q


def _closed(chain: MarkovChain, q: np.ndarray, p: tuple[int, ...], eps: float) -> np.ndarray:
    """Repair: close the published values the witness output shows, until it verifies exactly.

    A partly published value whose own pattern leaks (say, ``v`` at distance 1 with
    influence just above ``eps``) keeps leaking however close to 1 its redaction
    probability is pushed; only redacting it always removes the pattern.  Each round closes
    (sets to 1) the partly published entries that the worst output publishes nearest to
    ``p`` on each side; leakage never rises (post-processing).  Stops when it verifies or
    the worst output publishes nothing that can be closed (then the caller pushes the rest).
    """
    q = q.copy()
    for _ in range(q.size):
        res, ok = verify(chain, q, p, eps)
        if ok:
            return q
        w, pp = res.witness, res.p
        left = np.flatnonzero(w[:pp] >= 0)
        right = np.flatnonzero(w[pp + 1 :] >= 0)
        shown = ([int(left[-1])] if left.size else []) + ([pp + 1 + int(right[0])] if right.size else [])
        changed = False
        for t in shown:
            v = int(w[t])
            if 0.0 < q[t, v] < 1.0:
                q[t, v] = 1.0
                changed = True
        if not changed:
            break
    return q


def judge_candidate(chain: MarkovChain, cand: Candidate, *, eps: float,
                    p: int) -> tuple[np.ndarray | None, float, dict, list[str]]:
    """The single repair and fallback ladder: the best exactly verified proposal of a candidate.

    Every proposal (the candidate's, then its fallbacks) is tried snapped, then snapped
    toward privacy only (:func:`_variants`), then repaired by pushing its partly published
    values toward redaction (:func:`_pushed`); the verified proposal of largest utility
    wins.  Returns it (``None`` if nothing verified), its utility, what was done to it, and
    the reasons proposals were refused.  :func:`design` packages the winner through
    :func:`~redactopt.judge.certify.finalize`, which verifies it once more.
    """
    best: tuple[np.ndarray | None, float, dict] = (None, -1.0, {})
    refused: list[str] = []
    for k, raw in enumerate((cand.redact_prob, *cand.fallbacks)):
        variants = [check_mechanism(v, (p,))[0] for v in _variants(np.asarray(raw, dtype=float))]
        accepted, how = None, {}
        for label, q in zip(("snapped", "snapped toward redaction"), variants):
            res, ok = verify(chain, q, (p,), eps)
            if ok:
                accepted, how = q, dict(cand.proposal_info(k), proposal=k,
                                        repair=None if label == "snapped" else label)
                break
            refused.append(f"{cand.solver} proposal {k} ({label}): exact leakage {res.leakage:.12g} > eps={eps:.12g}")
        if accepted is not None:
            repaired = [(accepted, how)]
        else:
            repaired = []
            base = _lemma2_closed(chain, variants[1], p, eps)
            if verify(chain, base, (p,), eps)[1]:
                repaired.append((base, dict(cand.proposal_info(k), proposal=k, repair="Lemma 2 values closed")))
            pushed = _pushed(chain, base, (p,), eps)
            if pushed is not None:
                repaired.append((pushed, dict(cand.proposal_info(k), proposal=k, repair="pushed toward redaction")))
            closed: np.ndarray | None = _closed(chain, base, (p,), eps)
            if not verify(chain, closed, (p,), eps)[1]:
                closed = _pushed(chain, closed, (p,), eps)
            if closed is not None:
                repaired.append((closed, dict(cand.proposal_info(k), proposal=k,
                                              repair="witness values closed")))
        for q, why in repaired:
            u = utility(chain, q)
            if u > best[1]:
                best = (q, u, why)
    return best[0], best[1], best[2], refused


# --------------------------------------------------------------------------
# the entry point
# --------------------------------------------------------------------------
def design(
    chain: MarkovChain,
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
) -> DesignResult:
    r"""Design a local redaction mechanism with exact leakage at most ``eps``.

    Parameters
    ----------
    chain : MarkovChain
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
        Budget split for the 3R-based methods: tuned (``"auto"``), ``eps/2`` per side
        (``"half"``), or the left budget ``eps_left``.
    time_limit : float
        Seconds allowed to each optimiser.
    rng : numpy.random.Generator, optional
        Random starts of the local optimiser.
    certify_time : float
        ``method="optimal"``: also run the global solver (SCIP) for this many seconds
        (0 = not at all); its dual bound is used when tighter and its proposal joins the
        candidates.
    options : dict, optional
        Solver-specific keyword arguments for a forced method (e.g. ``{"starts": 5}`` for
        ``"sgp"``, ``{"gap_limit": 1e-8}`` for ``"global"``, ``{"solver": "HIGHS"}`` for
        ``"dim-milp"``).
    progress : callable, optional
        Called with a short status line as each optimiser starts.
    verbose : bool
        Let the solvers print their logs.

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
        If a solver's bound lies below a verified utility (a bug, never clamped).
    """
    n, eps, p = check_problem(chain, n, eps, p)
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
        el = None if eps_left == "auto" else eps_left
        if method == "3r" and eps_left == "auto":
            el = tuned_three_region(chain, n, eps=eps, p=p).eps_left
        mech = _PAPER[method](chain, n, eps=eps, p=p, **({"eps_left": el} if method == "3r" else {}))
        return finalize(chain, mech.redact_prob, private=[p], eps=eps, method=method, upper_bound=lemma2,
                        solver="lemma2", info=dict(mech.info))

    runs: list[tuple[str, dict[str, Any]]] = []
    calibrated_opts = {} if eps_left in (None, "auto") else {"eps_left": eps_left}
    if method != "optimal":
        runs.append((method, dict(calibrated_opts if method == "3r-calibrated" else {}, **(options or {}))))
    else:
        runs += [(name, calibrated_opts if name == "3r-calibrated" else {}) for name in OPTIMAL_RUNS]
        if ct > 0 or global_solver_applies(n, p):
            runs.append(("global", {"time_limit": max(ct, min(tl, GLOBAL_SECONDS))}))
    return _judge_runs(chain, n, eps, p, method, runs, lemma2, tl, rng, progress, verbose)


def _judge_runs(chain: MarkovChain, n: int, eps: float, p: int, method: str, runs: list[tuple[str, dict]],
                lemma2: float, time_limit: float, rng: np.random.Generator | None, progress: Progress | None,
                verbose: bool) -> DesignResult:
    """Run the optimisers, judge every proposal, certify the best with the smallest valid bound."""
    judged: list[tuple[Candidate, np.ndarray, float, dict]] = []
    refused: list[str] = []
    for name, opts in runs:
        if progress is not None:
            progress(f"{name}: proposing")
        kw = dict(time_limit=time_limit, verbose=verbose, rng=rng)
        kw.update(opts)
        cand = _solver(name)(chain, n, eps=eps, p=p, **kw)
        q, u, how, why = judge_candidate(chain, cand, eps=eps, p=p)
        refused += why
        if q is not None:
            judged.append((cand, q, u, how))
    if not judged:
        # every proposal failed: full redaction leaks nothing and is always a valid answer
        q = np.ones((n, 2))
        return finalize(chain, q, private=[p], eps=eps, method=method, upper_bound=lemma2, solver="lemma2",
                        info={"fallback": "all records redacted", "refused": refused})
    cand, q, top, how = max(judged, key=lambda j: j[2])
    bound, solver, stopped = lemma2, "lemma2", False
    for c, *_ in judged:
        if c.upper_bound is None or c.bound_scope != "all":
            continue
        if c.upper_bound < top - UTILITY_ATOL:
            raise BoundError(f"{c.solver} upper bound {c.upper_bound!r} is below the verified utility {top!r}")
        if c.upper_bound < bound:
            bound, solver, stopped = c.upper_bound, c.bound_solver or c.solver, c.status == "time_limit"
    class_bound = None
    if cand.upper_bound is not None and cand.bound_scope != "all":
        class_bound = (cand.upper_bound, cand.bound_solver or cand.solver, cand.bound_scope)
    info = dict(how, solver_status=cand.status)
    info["source"] = cand.solver
    info["candidates"] = {c.solver: u for c, _, u, _ in judged}
    if refused:
        info["refused"] = refused
    return finalize(chain, q, private=[p], eps=eps, method=method, upper_bound=bound,
                    solver=solver, info=info, tol=0.0, stopped=stopped, class_bound=class_bound)
