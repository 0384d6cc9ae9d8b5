"""Side-by-side comparison of the optimum with the paper's mechanisms and bounds.

Every utility here is exact (Definition 2) and every leakage exact (Definition 1);
mechanisms the paper prints are shown as printed, with their violations.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from redactopt.errors import PrivacyCheckError
from redactopt.judge.certify import DesignResult
from redactopt.judge.tolerances import LEAKAGE_RTOL
from redactopt.judge.classes import class_leakage
from redactopt.model.chain import MarkovChain
from redactopt.model.classes import ChainClass
from redactopt.engine.design import design
from redactopt.paper.mechanisms import markov_quilt, theorem2_bound, three_region

__all__ = ["alternatives", "compare_point", "COMPARE_COLUMNS"]

COMPARE_COLUMNS = [
    "n", "p", "alpha", "beta", "eps",
    "optimal", "optimal_upper_bound", "optimal_gap", "optimal_bound_solver", "optimal_leakage", "optimal_source",
    "calibrated_3r", "calibrated_3r_leakage",
    "three_region", "three_region_leakage", "three_region_violates",
    "mq", "mq_leakage", "dim_optimal", "dim_optimal_leakage", "thm2_bound", "thm2_violated",
]


def alternatives(chain: MarkovChain, n: int, *, eps: float, p: int, time_limit: float = 60.0) -> list[dict[str, Any]]:
    """The comparison lines of ``redactopt design``: name, utility, exact leakage, verdict.

    ``p`` is 0-based.  The Theorem-2 line has no leakage; it is marked violated where
    the exact data-independent optimum exceeds it.
    """
    rows: list[dict[str, Any]] = []
    tr = three_region(chain, n, eps=eps, p=p)
    tr_leak = tr.leakage().leakage
    rows.append(_row("3R as printed (Eqs. 1-2, eps/2 per side)", tr.utility(), tr_leak, eps))
    alg = three_region(chain, n, eps=eps, p=p, reading="algorithm2")
    rows.append(_row("3R as printed (Theorem 1 / Algorithm 2)", alg.utility(), alg.leakage().leakage, eps))
    for label, method in (("calibrated 3R", "3r-calibrated"), ("DIM optimum (exact window)", "dim")):
        try:
            r = design(chain, n, eps=eps, p=p, method=method, time_limit=time_limit)  # type: ignore[arg-type]
            rows.append(_row(label, r.utility, r.leakage, eps))
        except PrivacyCheckError as exc:
            rows.append({"name": label, "utility": float("nan"), "leakage": float("nan"),
                         "passed": False, "note": str(exc)})
    mq = markov_quilt(chain, n, eps=eps, p=p)
    rows.append(_row("MQ as printed (Algorithm 1)", mq.utility(), mq.leakage().leakage, eps))
    thm2 = theorem2_bound(chain, n, eps=eps, p=p)
    dim_u = rows[3]["utility"]
    bad = bool(np.isfinite(dim_u) and dim_u > thm2 + 1e-12)
    rows.append({"name": "Theorem 2 bound (as printed)", "utility": thm2, "leakage": None, "passed": not bad,
                 "note": "violated: the exact DIM optimum exceeds it" if bad else "bound on data-independent mechanisms"})
    return rows


def _row(name: str, u: float, leak: float, eps: float) -> dict[str, Any]:
    ok = leak <= eps * (1.0 + LEAKAGE_RTOL)
    return {"name": name, "utility": u, "leakage": leak, "passed": ok,
            "note": "" if ok else f"VIOLATES eps: leakage {leak:.4g} > {eps:g}"}


def compare_point(
    chain: MarkovChain | ChainClass, n: int, *, eps: float, p: int, time_limit: float = 60.0,
    optimal: DesignResult | None = None,
) -> dict[str, Any]:
    """All mechanisms and bounds at one parameter point, as one flat row (``p`` 0-based).

    Columns are :data:`COMPARE_COLUMNS`; ``p`` is reported 1-based.  For a class of chains
    the designs are private for every chain of it, the paper's mechanisms are built for the
    class's nominal chain and judged by their worst-case leakage over the class, and
    ``alpha``/``beta`` read ``lo:hi``.
    """
    is_class = isinstance(chain, ChainClass)
    base = chain.nominal if is_class else chain

    def leak(mech) -> float:
        return class_leakage(chain, mech.redact_prob, [p]).leakage if is_class else mech.leakage().leakage

    opt = optimal if optimal is not None else design(chain, n, eps=eps, p=p, method="optimal", time_limit=time_limit)
    cal = design(chain, n, eps=eps, p=p, method="3r-calibrated", time_limit=time_limit)
    dim = design(chain, n, eps=eps, p=p, method="dim", time_limit=time_limit)
    tr = three_region(base, n, eps=eps, p=p)
    tr_leak = leak(tr)
    mq = markov_quilt(base, n, eps=eps, p=p)
    thm2 = theorem2_bound(base, n, eps=eps, p=p)
    if is_class and chain.alpha is not None:
        alpha, beta = f"{chain.alpha[0]:g}:{chain.alpha[1]:g}", f"{chain.beta[0]:g}:{chain.beta[1]:g}"
    else:
        alpha, beta = base.alpha, base.beta
    return {
        "n": n, "p": p + 1, "alpha": alpha, "beta": beta, "eps": eps,
        "optimal": opt.utility, "optimal_upper_bound": opt.certificate.upper_bound,
        "optimal_gap": opt.certificate.gap, "optimal_bound_solver": opt.certificate.solver,
        "optimal_leakage": opt.leakage,
        "optimal_source": opt.info.get("source", opt.method),
        "calibrated_3r": cal.utility, "calibrated_3r_leakage": cal.leakage,
        "three_region": tr.utility(), "three_region_leakage": tr_leak,
        "three_region_violates": bool(tr_leak > eps * (1.0 + LEAKAGE_RTOL)),
        "mq": mq.utility(), "mq_leakage": leak(mq),
        "dim_optimal": dim.utility, "dim_optimal_leakage": dim.leakage,
        "thm2_bound": thm2, "thm2_violated": bool(dim.utility > thm2 + 1e-12),
    }
