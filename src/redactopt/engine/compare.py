"""Side-by-side comparison of the optimum with the paper's mechanisms and bounds.

Every utility here is exact (Definition 2) and every leakage exact (Definition 1);
mechanisms the paper prints are shown as printed, with their violations.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from redactopt.engine.design import design
from redactopt.engine.design import design_sparse
from redactopt.engine.window import covers, paper_sparse
from redactopt.errors import PrivacyCheckError
from redactopt.judge.audit import audit
from redactopt.judge.certify import DesignResult, SparseDesign, SparseRows
from redactopt.judge.tolerances import LEAKAGE_RTOL
from redactopt.model.chain import MarkovChain
from redactopt.model.classes import ChainClass
from redactopt.paper.mechanisms import theorem2_bound

__all__ = ["alternatives", "compare_point", "design_point", "COMPARE_COLUMNS"]

COMPARE_COLUMNS = [
    "n", "p", "alpha", "beta", "eps",
    "optimal", "optimal_upper_bound", "optimal_gap", "optimal_bound_solver", "optimal_leakage", "optimal_source",
    "calibrated_3r", "calibrated_3r_leakage",
    "three_region", "three_region_leakage", "three_region_violates",
    "mq", "mq_leakage", "dim_optimal", "dim_optimal_leakage", "thm2_bound", "thm2_violated",
]


def design_point(chain: MarkovChain | ChainClass, n: int, eps: float, p: int, method: str,
                 time_limit: float) -> DesignResult | SparseDesign:
    """``design`` where the window around ``p`` is the whole sequence, else the sparse window design."""
    base = chain.nominal if isinstance(chain, ChainClass) else chain
    if covers(base, n, eps, p):
        return design(chain, n, eps=eps, p=p, method=method, time_limit=time_limit)  # type: ignore[arg-type]
    return design_sparse(chain, n, eps=eps, p=p, method=method, time_limit=time_limit)


def _judged(chain: MarkovChain | ChainClass, rows: SparseRows, p: int, eps: float) -> tuple[float, float]:
    """Exact utility (at the nominal chain for a class) and exact leakage (the worst over a class) of
    a mechanism given as blocks, judged on its segment (exact for the whole sequence)."""
    rep = audit(chain, rows, private=[p], eps=eps)
    return float(rep["utility"]), float(rep["leakage"])


def alternatives(chain: MarkovChain | ChainClass, n: int, *, eps: float, p: int,
                 time_limit: float = 60.0) -> list[dict[str, Any]]:
    """The comparison lines of ``redactopt design``: name, utility, exact leakage, verdict.

    ``p`` is 0-based.  The paper's mechanisms are built for the chain (a class's nominal chain)
    on the records they can redact (:func:`~redactopt.engine.window.paper_sparse`), and judged for
    the chain or the whole class; the designs are private for it.  The Theorem-2 line has no
    leakage; it is marked violated where the exact data-independent optimum exceeds it.  Time
    and memory depend on the windows, not on ``n``.
    """
    base = chain.nominal if isinstance(chain, ChainClass) else chain
    rows: list[dict[str, Any]] = []
    for label, which in (("3R as printed (Eqs. 1-2, eps/2 per side)", "3r"),
                         ("3R as printed (Theorem 1 / Algorithm 2)", "3r-algorithm2")):
        rows.append(_row(label, *_judged(chain, paper_sparse(base, n, eps=eps, p=p, which=which), p, eps), eps))
    for label, method in (("calibrated 3R", "3r-calibrated"), ("DIM optimum (exact window)", "dim")):
        try:
            r = design_point(chain, n, eps, p, method, time_limit)
            rows.append(_row(label, r.utility, r.leakage, eps))
        except PrivacyCheckError as exc:
            rows.append({"name": label, "utility": float("nan"), "leakage": float("nan"),
                         "passed": False, "note": str(exc)})
    rows.append(_row("MQ as printed (Algorithm 1)", *_judged(chain, paper_sparse(base, n, eps=eps, p=p, which="mq"),
                                                              p, eps), eps))
    thm2 = theorem2_bound(base, n, eps=eps, p=p)
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
    optimal: DesignResult | SparseDesign | None = None,
) -> dict[str, Any]:
    """All mechanisms and bounds at one parameter point, as one flat row (``p`` 0-based).

    Columns are :data:`COMPARE_COLUMNS`; ``p`` is reported 1-based.  For a class of chains
    the designs are private for every chain of it, the paper's mechanisms are built for the
    class's nominal chain and judged by their worst-case leakage over the class, utilities are
    at the nominal chain, and ``alpha``/``beta`` read ``lo:hi``.  Any ``n``: long sequences are
    designed on windows (:mod:`redactopt.engine.window`) and the paper's mechanisms built on the
    records they redact, all judged exactly on their segments.
    """
    is_class = isinstance(chain, ChainClass)
    base = chain.nominal if is_class else chain
    opt = optimal if optimal is not None else design_point(chain, n, eps, p, "optimal", time_limit)
    cal = design_point(chain, n, eps, p, "3r-calibrated", time_limit)
    dim = design_point(chain, n, eps, p, "dim", time_limit)
    tr_u, tr_leak = _judged(chain, paper_sparse(base, n, eps=eps, p=p, which="3r"), p, eps)
    mq_u, mq_leak = _judged(chain, paper_sparse(base, n, eps=eps, p=p, which="mq"), p, eps)
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
        "three_region": tr_u, "three_region_leakage": tr_leak,
        "three_region_violates": bool(tr_leak > eps * (1.0 + LEAKAGE_RTOL)),
        "mq": mq_u, "mq_leakage": mq_leak,
        "dim_optimal": dim.utility, "dim_optimal_leakage": dim.leakage,
        "thm2_bound": thm2, "thm2_violated": bool(dim.utility > thm2 + 1e-12),
    }


#: ``compare --transition`` on more than two states: the methods with a k-state form, each a column.
STATES_COMPARE_METHODS = ("dim", "local")


def compare_states_point(chain: Any, n: int, *, eps: float, p: int, time_limit: float = 60.0) -> dict[str, Any]:
    """:func:`compare_point` for a chain of more than two states (``p`` 0-based, reported 1-based).

    The paper's 3R, MQ and Theorem 2 have no k-state form; the row holds the certified ``optimal``
    design (utility, bound, gap, exact leakage, the solver that won) and each of
    :data:`STATES_COMPARE_METHODS` (utility and exact leakage), every one verified exactly.
    """
    opt = design_point(chain, n, eps, p, "optimal", time_limit)
    row: dict[str, Any] = {
        "n": n, "p": p + 1, "k": chain.k, "transition": ";".join(",".join(f"{v:.6g}" for v in r)
                                                              for r in chain.transition), "eps": eps,
        "optimal": opt.utility, "optimal_upper_bound": opt.certificate.upper_bound,
        "optimal_gap": opt.certificate.gap, "optimal_bound_solver": opt.certificate.solver,
        "optimal_leakage": opt.leakage, "optimal_source": opt.info.get("source", opt.method),
        "optimal_stopped": opt.certificate.stopped,
    }
    for method in STATES_COMPARE_METHODS:
        r = design_point(chain, n, eps, p, method, time_limit)
        row[method], row[f"{method}_leakage"] = r.utility, r.leakage
    return row
