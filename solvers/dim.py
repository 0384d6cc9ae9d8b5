r"""Exact optimum over data-independent local redaction mechanisms (Section V, Lemma 1, Theorem 2).

A data-independent mechanism has :math:`\Pr(Y_t=\perp\mid X_t=x)` not depending on ``x``;
an optimal one uses probabilities in :math:`\{0,1\}` (Section V), i.e. it publishes a
set of records.  By Lemma 1 its leakage is the max-influence of the nearest published
record on each side of ``p``, and given :math:`X_p` the two sides are independent, so
for nearest published distances :math:`a` (left) and :math:`b` (right)

.. math::
    \mathcal L(a, b) = \max_{x\in\{0,1\}} \big[\ell_x(a) + \ell_x(b)\big],\qquad
    \ell_x(d) = \max_v \log\frac{(P^d)_{xv}}{(P^d)_{\bar x v}},

with :math:`\ell_x(\text{none}) = 0` for a side with nothing published.  Everything beyond
the nearest published record can then be published too, so the optimum is a window
:math:`[p-\Delta_\ell, p+\Delta_r]` of redacted records.  Each :math:`\ell_x` is
non-increasing in :math:`d` (data processing: :math:`X_{p+d+1}` is :math:`X_{p+d}`
passed through :math:`P`, independently of everything else given :math:`X_{p+d}`), so
for each left choice the feasible right choices form a suffix.

Two solvers give the same optimum:

* :func:`dim_enumerate` — for every left choice the nearest feasible right choice by
  binary search, :math:`O(n\log n)`;
* :func:`dim_milp` — the same problem as a MILP in OR-Tools MathOpt with one-hot
  choices on each side and the two linear leakage constraints, certified by the MILP's
  dual bound.

Theorem 2 of the paper is **not** an upper bound everywhere: the exact optimum found
here beats it (``tests/test_dim.py::test_theorem2_bound_is_beaten``).  Indices are
0-based.
"""

from __future__ import annotations

import math
import time

import numpy as np

from redactopt._validate import check_problem, check_real
from redactopt.errors import PrivacyCheckError
from redactopt.judge.certify import DesignResult, finalize
from redactopt.model.chain import MarkovChain
from redactopt.model.influence import side_log_ratio_maxima as side_terms

__all__ = ["side_log_ratio_maxima", "dim_enumerate", "dim_milp"]

SCOPE = "data-independent"


def side_log_ratio_maxima(chain: MarkovChain, m: int) -> np.ndarray:
    r"""One-sided log-ratio maxima :math:`\ell_x(d)` for every choice of nearest published record.

    Parameters
    ----------
    chain : MarkovChain
    m : int
        Number of records on the side (``m >= 0``).

    Returns
    -------
    numpy.ndarray, shape (m + 1, 2)
        Row ``d - 1`` (``d = 1..m``) holds :math:`(\ell_0(d), \ell_1(d))` with
        :math:`\ell_x(d)=\max_v\log (P^d)_{xv}/(P^d)_{\bar xv}` for the nearest published
        record at distance ``d``; the last row (nothing published on the side) is 0.
        :math:`\max_x \ell_x(d)` is the max-influence :math:`\hat i(d)` (Def. 3), and
        :math:`\ell_0(a)+\ell_0(b)`, :math:`\ell_1(a)+\ell_1(b)` are the two terms of
        :func:`redactopt.model.influence.set_max_influence`.
    """
    table = side_terms(chain, m)
    return np.vstack([table, np.zeros((1, 2))])


def _counts(m: int) -> np.ndarray:
    """Records published on a side of ``m`` records for each choice (distance 1..m, none)."""
    return np.concatenate([np.arange(m, 0, -1), [0]]).astype(int)


def _window_q(n: int, p: int, a: int, b: int, m_left: int, m_right: int) -> np.ndarray:
    """Redaction array for the choice index ``a`` (left) and ``b`` (right).

    Choice ``k`` on a side means the nearest published record is at distance ``k + 1``;
    ``k = m`` means nothing is published on that side.
    """
    dl = a if a < m_left else m_left
    dr = b if b < m_right else m_right
    q = np.zeros((n, 2))
    q[p - dl : p + dr + 1] = 1.0
    return q


def _window_info(a: int, b: int, m_left: int, m_right: int) -> dict:
    dl = a if a < m_left else m_left
    dr = b if b < m_right else m_right
    return {
        "delta_left": int(dl),
        "delta_right": int(dr),
        "published_left": int(m_left - dl),
        "published_right": int(m_right - dr),
    }


def _suffix_max(values: np.ndarray) -> np.ndarray:
    """``out[k] = max(values[k:])`` — equal to ``values`` when it is non-increasing, and an
    upper bound otherwise, so searching it never accepts an infeasible choice."""
    return np.maximum.accumulate(values[::-1])[::-1]


def _first_feasible(right_sm: np.ndarray, budget: np.ndarray) -> np.ndarray:
    """For each budget pair, the first index ``b`` with ``right_sm[b, x] <= budget[x]`` for both x.

    ``right_sm`` columns are non-increasing; the answer is ``len(right_sm)`` if none.
    """
    first = np.zeros(budget.shape[0], dtype=int)
    for x in (0, 1):
        # searchsorted needs ascending order: search -right_sm >= -budget.
        first = np.maximum(first, np.searchsorted(-right_sm[:, x], -budget[:, x], side="left"))
    return first


def dim_enumerate(chain: MarkovChain, n: int, *, eps: float, p: int) -> DesignResult:
    r"""Exact optimum over data-independent mechanisms by enumerating redaction windows.

    For every left choice (nearest published record at distance :math:`1..p`, or none)
    the smallest feasible right window is found by binary search on the non-increasing
    :math:`\ell_x` of :func:`side_log_ratio_maxima` (Lemma 1); the best pair maximises
    the number of published records.  :math:`O(n\log n)`.

    Parameters
    ----------
    chain : MarkovChain
    n : int
        Number of records.
    eps : float
        Privacy budget (nats).
    p : int
        0-based index of the private record.

    Returns
    -------
    DesignResult
        Method ``"dim"``; the certificate's upper bound is the optimum itself (solver
        ``"enumeration"``, scope ``"data-independent"``).  ``info`` holds the window
        radii and the number of windows checked.
    """
    n, eps, p = check_problem(chain, n, eps, p)
    t0 = time.perf_counter()
    m_left, m_right = p, n - 1 - p
    left = side_log_ratio_maxima(chain, m_left)
    right = side_log_ratio_maxima(chain, m_right)
    right_sm = np.column_stack([_suffix_max(right[:, 0]), _suffix_max(right[:, 1])])
    cnt_left, cnt_right = _counts(m_left), _counts(m_right)

    first = _first_feasible(right_sm, eps - left)
    # Candidate right choice per left choice; pairs with no feasible right side drop out.
    cand = {int(a): int(b) for a, b in enumerate(first) if b <= m_right}
    while True:
        # cand always holds (m_left, m_right): nothing published, leakage 0.
        best_a = max(cand, key=lambda a: (cnt_left[a] + cnt_right[cand[a]], -a))
        best_b = cand[best_a]
        count = int(cnt_left[best_a] + cnt_right[best_b])
        q = _window_q(n, p, best_a, best_b, m_left, m_right)
        info = _window_info(best_a, best_b, m_left, m_right)
        info.update(windows_checked=m_left + 1, seconds=time.perf_counter() - t0)
        try:
            return finalize(
                chain,
                q,
                private=(p,),
                eps=eps,
                method="dim",
                upper_bound=count / n,
                solver="enumeration",
                scope=SCOPE,
                info=info,
            )
        except PrivacyCheckError:
            # Only a floating tie between eps and the closed-form influences gets here:
            # the exact evaluator has the last word, so move this left choice one step out.
            if best_b < m_right:
                cand[best_a] = best_b + 1
            else:
                del cand[best_a]


def _mathopt_solver(name: str | None):
    from ortools.math_opt.python import mathopt

    order = ["HIGHS", "GSCIP", "CP_SAT"] if name is None else [str(name).upper()]
    for key in order:
        if not hasattr(mathopt.SolverType, key):
            raise ValueError(f"solver must be one of HIGHS, GSCIP, CP_SAT, got {name!r}")
        st = getattr(mathopt.SolverType, key)
        probe = mathopt.Model()
        v = probe.add_binary_variable()
        probe.maximize(v)
        try:
            mathopt.solve(probe, st)
        except Exception:  # the solver is not compiled into this OR-Tools build
            continue
        return st, key
    raise ValueError(f"no MILP solver among {order} is available in this OR-Tools build")


def dim_milp(
    chain: MarkovChain,
    n: int,
    *,
    eps: float,
    p: int,
    time_limit: float = 30.0,
    solver: str | None = None,
) -> DesignResult:
    r"""Exact optimum over data-independent mechanisms as a MILP (OR-Tools MathOpt).

    Binaries :math:`a_k` (left) and :math:`b_k` (right) choose the nearest published
    record on each side (distance :math:`k+1`, or none); exactly one per side.  With
    :math:`\ell_x` from :func:`side_log_ratio_maxima` (Lemma 1; the sides add because
    they are independent given :math:`X_p`):

    .. math::
        \max \sum_k a_k c^\ell_k + \sum_k b_k c^r_k \quad\text{s.t.}\quad
        \sum_k a_k\ell_x(k) + \sum_k b_k \ell_x(k) \le \epsilon\ (x=0,1),\quad
        \sum_k a_k = \sum_k b_k = 1,

    where :math:`c_k` counts the published records of the choice.  The solver's
    feasibility tolerance could accept a pair leaking slightly above ``eps``; every
    incumbent is re-checked exactly and such a pair is cut off (:math:`a_k+b_j\le1`)
    and the MILP re-solved, so the dual bound stays valid for the exact problem.

    Parameters
    ----------
    chain : MarkovChain
    n : int
        Number of records.
    eps : float
        Privacy budget (nats).
    p : int
        0-based index of the private record.
    time_limit : float
        Seconds per MILP solve.
    solver : {"HIGHS", "GSCIP", "CP_SAT"}, optional
        Default: the first of these available.

    Returns
    -------
    DesignResult
        Method ``"dim"``; certificate from the MILP dual bound (solver
        ``"ortools-mathopt-<solver>"``, scope ``"data-independent"``).
    """
    n, eps, p = check_problem(chain, n, eps, p)
    time_limit = check_real(time_limit, "time_limit")
    if time_limit <= 0.0:
        raise ValueError(f"time_limit must be > 0, got {time_limit!r}")
    from datetime import timedelta

    from ortools.math_opt.python import mathopt

    st, solver_name = _mathopt_solver(solver)
    t0 = time.perf_counter()
    m_left, m_right = p, n - 1 - p
    left = side_log_ratio_maxima(chain, m_left)
    right = side_log_ratio_maxima(chain, m_right)
    cnt_left, cnt_right = _counts(m_left), _counts(m_right)

    model = mathopt.Model(name="dim")
    av = [model.add_binary_variable(name=f"a{k}") for k in range(m_left + 1)]
    bv = [model.add_binary_variable(name=f"b{k}") for k in range(m_right + 1)]
    model.add_linear_constraint(mathopt.fast_sum(av) == 1)
    model.add_linear_constraint(mathopt.fast_sum(bv) == 1)
    for x in (0, 1):
        model.add_linear_constraint(
            mathopt.fast_sum(float(left[k, x]) * av[k] for k in range(m_left + 1))
            + mathopt.fast_sum(float(right[k, x]) * bv[k] for k in range(m_right + 1))
            <= eps
        )
    model.maximize(
        mathopt.fast_sum(int(cnt_left[k]) * av[k] for k in range(m_left + 1))
        + mathopt.fast_sum(int(cnt_right[k]) * bv[k] for k in range(m_right + 1))
    )
    params = mathopt.SolveParameters(
        time_limit=timedelta(seconds=float(time_limit)),
        relative_gap_tolerance=0.0,
        absolute_gap_tolerance=0.5,  # the objective is an integer count
    )
    cuts = 0
    while True:
        res = mathopt.solve(model, st, params=params)
        reason = res.termination.reason
        bound = res.termination.objective_bounds.dual_bound
        # The objective is an integer: any dual bound can be rounded down.
        count_bound = min(n - 1, math.floor(bound + 1e-6)) if math.isfinite(bound) else n - 1
        if res.has_primal_feasible_solution():
            vals = res.variable_values()
            a = max(range(m_left + 1), key=lambda k: vals[av[k]])
            b = max(range(m_right + 1), key=lambda k: vals[bv[k]])
        else:
            a, b = m_left, m_right  # publish nothing: always feasible
        q = _window_q(n, p, a, b, m_left, m_right)
        info = _window_info(a, b, m_left, m_right)
        info.update(
            termination=str(reason.name),
            lazy_cuts=cuts,
            dual_bound=float(bound),
            seconds=time.perf_counter() - t0,
        )
        try:
            return finalize(
                chain,
                q,
                private=(p,),
                eps=eps,
                method="dim",
                upper_bound=count_bound / n,
                solver=f"ortools-mathopt-{solver_name.lower()}",
                scope=SCOPE,
                info=info,
            )
        except PrivacyCheckError:
            model.add_linear_constraint(av[a] + bv[b] <= 1)
            cuts += 1
