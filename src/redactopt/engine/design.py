"""One entry point for mechanism design: :func:`design`.

Every method returns a :class:`~redactopt.judge.certify.DesignResult` built by
:func:`~redactopt.judge.certify.finalize`: snapped, re-verified by the exact leakage evaluator,
never above ``eps``, with a certificate bounding the optimum over *all* local
redaction mechanisms (DESIGN.md, "What optimal means here").
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import numpy as np

from redactopt._validate import check_eps, check_index, check_n, check_real
from redactopt.errors import PrivacyCheckError
from redactopt.judge.certify import Certificate, DesignResult, finalize, lemma2_upper_bound
from redactopt.model.chain import MarkovChain
from redactopt.paper.mechanisms import markov_quilt, three_region

__all__ = ["METHODS", "design", "global_solver_applies", "resolve_split"]

Method = Literal["optimal", "3r", "3r-calibrated", "mq", "dim", "global", "sgp"]
METHODS: tuple[str, ...] = ("optimal", "3r", "3r-calibrated", "mq", "dim", "global", "sgp")

#: Largest problems handed to the global solver by ``method="optimal"``.
GLOBAL_MAX_ONE_SIDED = 12
GLOBAL_MAX_TWO_SIDED = 8


def global_solver_applies(n: int, p: int) -> bool:
    """Whether ``method="optimal"`` runs the certified global solver (small problems)."""
    if p in (0, n - 1):
        return n <= GLOBAL_MAX_ONE_SIDED
    return n <= GLOBAL_MAX_TWO_SIDED


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


def _with_certificate(res: DesignResult, bound: float, solver: str) -> DesignResult:
    ub = max(bound, res.utility)
    cert = Certificate(upper_bound=ub, gap=max(0.0, ub - res.utility), solver=solver, scope="all")
    return dataclasses.replace(res, certificate=cert)


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
        ``"optimal"`` (default): the best verified design among the certified global
        optimum (PySCIPOpt, small problems), successive geometric programming (CVXPY,
        larger windows), calibrated 3R and the data-independent optimum.
        ``"global"``/``"sgp"`` force one of the optimisers; ``"3r-calibrated"``: 3R's
        structure with redaction probabilities set by the exact leakage;
        ``"dim"``: the exact data-independent window optimum (MILP / enumeration);
        ``"mq"``: Algorithm 1 as printed; ``"3r"``: the paper's 3R as printed — raises
        :class:`~redactopt.judge.certify.PrivacyCheckError` where it leaks more than ``eps``.
    split : "auto", "half" or float
        Budget split for the 3R-based methods: tuned (``"auto"``), ``eps/2`` per side
        (``"half"``), or the left budget ``eps_left``.
    time_limit : float
        Seconds allowed to each optimiser.
    rng : numpy.random.Generator, optional
        Random starts of the local optimiser.
    certify_time : float
        ``method="optimal"`` on problems too large for the global solver: also run it for
        this many seconds (0 = not at); its dual bound replaces Lemma 2's when tighter
        and its incumbent joins the candidates.

    Returns
    -------
    DesignResult
        With ``certificate.upper_bound`` a valid bound on the utility of *every*
        ``eps``-private local redaction mechanism: SCIP's dual bound when the global
        solver ran, else Lemma 2's bound (:func:`~redactopt.judge.certify.lemma2_upper_bound`).
    """
    n = check_n(n)
    eps = check_eps(eps)
    p = check_index(p, n, "p")
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    tl = check_real(time_limit, "time_limit")
    if tl <= 0:
        raise ValueError(f"time_limit must be > 0, got {tl!r}")
    ct = check_real(certify_time, "certify_time")
    if ct < 0:
        raise ValueError(f"certify_time must be >= 0, got {ct!r}")
    eps_left = resolve_split(split, n, p, eps)
    bound = lemma2_upper_bound(chain, n, eps=eps, private=[p])

    if method == "3r":
        el = None if eps_left == "auto" else eps_left
        if eps_left == "auto":
            from redactopt.engine.tuning import tuned_three_region

            el = tuned_three_region(chain, n, eps=eps, p=p).eps_left
        mech = three_region(chain, n, eps=eps, p=p, eps_left=el)
        return finalize(chain, mech.redact_prob, private=[p], eps=eps, method="3r", upper_bound=bound,
                        solver="lemma2", info=dict(mech.info))
    if method == "mq":
        mech = markov_quilt(chain, n, eps=eps, p=p)
        return finalize(chain, mech.redact_prob, private=[p], eps=eps, method="mq", upper_bound=bound,
                        solver="lemma2", info=dict(mech.info))
    if method == "dim":
        return _with_certificate(_dim(chain, n, eps, p, tl), bound, "lemma2")
    if method == "3r-calibrated":
        return _with_certificate(_calibrated(chain, n, eps, p, eps_left), bound, "lemma2")
    if method == "global":
        return _global(chain, n, eps, p, tl)
    if method == "sgp":
        return _with_certificate(_sgp(chain, n, eps, p, tl, rng), bound, "lemma2")
    return _optimal(chain, n, eps, p, eps_left, tl, rng, bound, ct)


def _dim(chain: MarkovChain, n: int, eps: float, p: int, time_limit: float) -> DesignResult:
    from redactopt.solvers.dim import dim_enumerate

    return dim_enumerate(chain, n, eps=eps, p=p)


def _calibrated(chain: MarkovChain, n: int, eps: float, p: int, eps_left) -> DesignResult:
    from redactopt.engine.tuning import calibrated_three_region

    el = None if eps_left in (None, "auto") else eps_left
    return calibrated_three_region(chain, n, eps=eps, p=p, eps_left=el)


def _global(chain: MarkovChain, n: int, eps: float, p: int, time_limit: float) -> DesignResult:
    from redactopt.solvers.scip_global import design_global

    return design_global(chain, n, eps=eps, p=p, time_limit=time_limit)


def _sgp(chain, n, eps, p, time_limit, rng) -> DesignResult:
    from redactopt.solvers.sgp import design_sgp

    return design_sgp(chain, n, eps=eps, p=p, rng=rng)


def _optimal(chain, n, eps, p, eps_left, time_limit, rng, bound, certify_time=0.0) -> DesignResult:
    candidates: list[DesignResult] = []
    errors: list[str] = []
    certified: DesignResult | None = None
    runners = [("dim", lambda: _dim(chain, n, eps, p, time_limit)),
               ("3r-calibrated", lambda: _calibrated(chain, n, eps, p, eps_left))]
    if global_solver_applies(n, p):
        runners.append(("global", lambda: _global(chain, n, eps, p, time_limit)))
    else:
        runners.append(("sgp", lambda: _sgp(chain, n, eps, p, time_limit, rng)))
        if certify_time > 0:
            runners.append(("global", lambda: _global(chain, n, eps, p, certify_time)))
    for name, run in runners:
        try:
            res = run()
        except PrivacyCheckError as exc:  # a candidate that fails the exact check is dropped
            errors.append(f"{name}: {exc}")
            continue
        candidates.append(res)
        if name == "global" and res.certificate.scope == "all":
            certified = res
    if not candidates:
        raise PrivacyCheckError("no candidate design passed the exact leakage check: " + "; ".join(errors))
    best = max(candidates, key=lambda r: r.utility)
    ub = bound
    solver = "lemma2"
    if certified is not None and certified.certificate.upper_bound < ub:
        ub, solver = certified.certificate.upper_bound, certified.certificate.solver
    res = _with_certificate(best, ub, solver)
    info = dict(res.info)
    info["source"] = best.method
    info["candidates"] = {r.method: r.utility for r in candidates}
    return dataclasses.replace(res, method="optimal", info=info)
