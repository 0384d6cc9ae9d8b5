r"""Linear programs whose optimum bound is a proof: solve in floats, verify a dual point outward.

For :math:`\max c^\top x` s.t. :math:`A_{ub}x\le b_{ub}`, :math:`A_{eq}x=b_{eq}`, :math:`0\le x\le u`,
*any* :math:`y_{ub}\ge0` and :math:`y_{eq}` give (weak duality with the box, Neumaier and Shcherbina
2004, "Safe bounds in linear and mixed-integer programming")

.. math:: c^\top x\le b_{ub}^\top y_{ub}+b_{eq}^\top y_{eq}
          +\sum_j u_j\,\max\bigl(0,\;c_j-(A_{ub}^\top y_{ub}+A_{eq}^\top y_{eq})_j\bigr)

for every feasible ``x``, whatever the quality of ``y``: a solver's inexact duals only make the
bound weaker, never wrong.  :func:`dual_bound` evaluates the right-hand side *above* its exact value
for the exact data: the float data are given with entrywise absolute error bounds (``dA_*``, ``dc``,
``db_*``) on how far the exact numbers may be, every float sum's rounding is bounded by
:math:`\gamma_N` (Higham, *Accuracy and Stability of Numerical Algorithms*, §3.1) and the final
sum is taken with :func:`math.fsum` and rounded up.  :func:`dual_bound_exact` does the same in
rationals for small programs (tests, and a second opinion).
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import scipy.sparse as sp
from scipy.optimize import OptimizeWarning, linprog

__all__ = ["LinearProgram", "LPSolution", "solve_lp", "solve_robust", "rows_scaled", "dual_bound", "dual_parts",
           "dual_bound_exact"]

U = 2.0**-53


@dataclass
class LinearProgram:
    r"""``max c x`` s.t. ``A_ub x <= b_ub``, ``A_eq x = b_eq``, ``0 <= x <= upper``, with data error bounds.

    ``dA_ub``/``dA_eq`` (same shape, non-negative), ``dc``, ``db_ub``, ``db_eq`` bound how far each
    exact datum may lie from its double (zero where the double is exact).  ``upper`` must hold for
    every feasible point of the exact program (it enters the bound).
    """

    c: np.ndarray
    A_ub: sp.csr_matrix
    b_ub: np.ndarray
    A_eq: sp.csr_matrix
    b_eq: np.ndarray
    upper: np.ndarray
    dA_ub: sp.csr_matrix | None = None
    dA_eq: sp.csr_matrix | None = None
    dc: np.ndarray | None = None
    db_ub: np.ndarray | None = None
    db_eq: np.ndarray | None = None
    info: dict = field(default_factory=dict)
    #: optional: the stacked matrix ``[A_ub; A_eq]`` by compressed columns, ``(data, indices, indptr, errors, rows)``,
    #: the same entries as ``A_ub``, ``A_eq`` and ``dA_*`` (for the solver and :func:`dual_parts` without conversions)
    csc: tuple | None = None


@dataclass(frozen=True)
class LPSolution:
    """A float primal point, the solver's duals (``y_ub >= 0`` for the maximisation) and the verified bound."""

    x: np.ndarray
    value: float
    y_ub: np.ndarray
    y_eq: np.ndarray
    bound: float
    status: str


def solve_lp(lp: LinearProgram, *, time_limit: float | None = None, bound: bool = True,
             presolve: bool = True, warm: dict | None = None) -> LPSolution:
    """Solve with HiGHS, then bound the optimum with :func:`dual_bound`.

    Uses the ``highspy`` bindings when they are installed (a third of scipy's overhead on small
    programs), scipy's HiGHS interface otherwise; the bound does not depend on which (any dual point
    is verified the same way).  ``warm``: a dict kept by the caller across programs of one shape;
    the last optimal basis of that shape starts the simplex (programs that differ only in their
    coefficients then take a few iterations instead of hundreds).  It changes the speed, never what
    is proven.  Raises ``RuntimeError`` when HiGHS reports no optimum.
    """
    opts: dict = {"presolve": "on" if presolve else "off", "primal_feasibility_tolerance": 1e-10,
                  "dual_feasibility_tolerance": 1e-10, "small_matrix_value": 1e-12}
    if time_limit is not None:
        opts["time_limit"] = float(time_limit)
    x, value, y_ub, y_eq, status = _highspy(lp, opts, warm) if _HIGHSPY is not None else _scipy(lp, opts)
    bnd = dual_bound(lp, y_ub, y_eq) if bound else math.nan
    return LPSolution(x, value, y_ub, y_eq, bnd, status)


def rows_scaled(lp: LinearProgram) -> LinearProgram:
    r"""The same program with each inequality row multiplied by a power of two bringing its largest entry into
    :math:`[\tfrac12,1)` (exact in floating point: the data's error bounds scale with it, the right-hand sides
    are zero or scale too).  Rows whose entries span more than :math:`2^{1020}` are shifted less, so that no
    entry becomes subnormal.  Same feasible set, same optimum: any of its dual points bounds the original.
    """
    A = lp.A_ub.tocsr()
    A.eliminate_zeros()
    shift = np.zeros(A.shape[0], dtype=np.int64)
    live = np.flatnonzero(np.diff(A.indptr) > 0)
    if live.size:
        ex = np.frexp(np.abs(A.data))[1].astype(np.int64)
        hi = np.maximum.reduceat(ex, A.indptr[live])
        lo = np.minimum.reduceat(ex, A.indptr[live])
        shift[live] = np.minimum(hi, lo + 1020)
    f = np.ldexp(1.0, -shift)
    D = sp.diags(f)
    dA = None if lp.dA_ub is None else (D @ lp.dA_ub).tocsr()
    db = None if lp.db_ub is None else lp.db_ub * f
    return LinearProgram(lp.c, (D @ A).tocsr(), lp.b_ub * f, lp.A_eq, lp.b_eq, lp.upper, dA, lp.dA_eq, lp.dc, db,
                         lp.db_eq, info=lp.info)


def solve_robust(lp: LinearProgram, *, time_limit: float | None = None, bound: bool = True,
                 notes: list | None = None) -> LPSolution | None:
    """:func:`solve_lp`, and where HiGHS reports no optimum (infeasible within its tolerance, unknown, numerical
    trouble) once more on :func:`rows_scaled` without presolve; ``None`` if neither gives one (or the time
    ran out).  What happened is appended to ``notes``.  A bound from the rescaled program is as much a proof."""
    start = time.monotonic()
    try:
        return solve_lp(lp, time_limit=time_limit, bound=bound)
    except RuntimeError as exc:
        if notes is not None:
            notes.append(str(exc))
        if "time limit" in str(exc).lower():
            return None
    left = None if time_limit is None else time_limit - (time.monotonic() - start)
    if left is not None and left <= 0.05:
        return None
    try:
        return solve_lp(rows_scaled(lp), time_limit=left, bound=bound, presolve=False)
    except RuntimeError as exc:
        if notes is not None:
            notes.append(f"rescaled: {exc}")
        return None


try:  # optional: the same solver without scipy's per-call overhead
    import highspy as _HIGHSPY
except ImportError:  # pragma: no cover - scipy ships HiGHS too
    _HIGHSPY = None


_BANNER_SHOWN = False


def _new_highs() -> object:
    """A ``highspy.Highs``; the first one of the process prints a banner on file descriptor 1 before any
    option can silence it, so that one is made with descriptor 1 pointed at the null device."""
    global _BANNER_SHOWN
    if _BANNER_SHOWN:
        return _HIGHSPY.Highs()
    import os
    import sys

    sys.stdout.flush()
    saved = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        h = _HIGHSPY.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)
    _BANNER_SHOWN = True
    return h


def _highspy(lp: LinearProgram, opts: dict, warm: dict | None = None) -> tuple:
    """HiGHS through ``highspy``: rows ``[A_ub; A_eq]``, duals with scipy's sign (``y = -row_dual``);
    ``warm`` as in :func:`solve_lp` (keyed by the program's shape)."""
    h = _new_highs()
    h.setOptionValue("output_flag", False)
    for key, val in opts.items():
        h.setOptionValue(key, val)
    nub = lp.A_ub.shape[0]
    if lp.csc is not None:
        data, indices, indptr, _, nrow = lp.csc
        shape = (nrow, lp.c.shape[0])
    else:
        A = sp.vstack([lp.A_ub, lp.A_eq]).tocsc()
        data, indices, indptr, shape = A.data, A.indices, A.indptr, A.shape
    model = _HIGHSPY.HighsLp()
    model.num_col_, model.num_row_ = shape[1], shape[0]
    model.col_cost_ = -lp.c
    model.col_lower_, model.col_upper_ = np.zeros(shape[1]), lp.upper
    model.row_lower_ = np.concatenate([np.full(nub, -np.inf), lp.b_eq])
    model.row_upper_ = np.concatenate([lp.b_ub, lp.b_eq])
    model.a_matrix_.format_ = _HIGHSPY.MatrixFormat.kColwise
    model.a_matrix_.start_, model.a_matrix_.index_, model.a_matrix_.value_ = indptr, indices, data
    if h.passModel(model) == _HIGHSPY.HighsStatus.kError:  # e.g. an entry above HiGHS's large_matrix_value
        raise RuntimeError("HiGHS: the model was refused (an entry outside HiGHS's accepted range)")
    if warm is not None and shape in warm:
        h.setBasis(warm[shape])
    h.run()
    if h.getModelStatus() != _HIGHSPY.HighsModelStatus.kOptimal:
        if warm is not None:
            warm.pop(shape, None)
        raise RuntimeError(f"HiGHS: {h.modelStatusToString(h.getModelStatus())}")
    if warm is not None:
        warm[shape] = h.getBasis()
    sol = h.getSolution()
    dual = -np.asarray(sol.row_dual)
    return (np.asarray(sol.col_value), float(-h.getInfo().objective_function_value), dual[:nub], dual[nub:],
            "optimal")


def _scipy(lp: LinearProgram, opts: dict) -> tuple:
    """scipy's HiGHS interface (``small_matrix_value`` is passed to HiGHS verbatim: keep entries down to 1e-12)."""
    opts = dict(opts, presolve=opts["presolve"] == "on")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Unrecognized options", category=OptimizeWarning)
        res = linprog(-lp.c, A_ub=lp.A_ub if lp.A_ub.shape[0] else None, b_ub=lp.b_ub if lp.A_ub.shape[0] else None,
                      A_eq=lp.A_eq, b_eq=lp.b_eq, bounds=np.column_stack([np.zeros_like(lp.upper), lp.upper]),
                      method="highs", options=opts)
    if res.x is None:
        raise RuntimeError(f"HiGHS: {res.message}")
    y_ub = -np.asarray(res.ineqlin.marginals) if lp.A_ub.shape[0] else np.zeros(0)
    return np.asarray(res.x), float(-res.fun), y_ub, -np.asarray(res.eqlin.marginals), str(res.status)


def _abs_t(A: sp.csr_matrix) -> sp.csr_matrix:
    return abs(A).T.tocsr()


def dual_bound(lp: LinearProgram, y_ub: np.ndarray, y_eq: np.ndarray) -> float:
    r"""A proven upper bound on the exact program's optimum from any dual point (module docstring).

    ``base + sum_j upper_j max(0, r_j)`` with the parts of :func:`dual_parts`, summed with
    :func:`math.fsum` and rounded up.
    """
    base, r_hi = dual_parts(lp, y_ub, y_eq)
    pen = lp.upper * np.maximum(r_hi, 0.0)
    total = base + math.fsum(pen.tolist()) * (1.0 + 4.0 * U)
    if not math.isfinite(total):
        return math.inf
    return math.nextafter(total, math.inf)


def dual_parts(lp: LinearProgram, y_ub: np.ndarray, y_eq: np.ndarray) -> tuple[float, np.ndarray]:
    r"""``(base, r_hi)``: an upper bound on :math:`b_{ub}^\top y_{ub}+b_{eq}^\top y_{eq}` for the exact data, and per
    variable an upper bound on the exact reduced cost :math:`c_j-(A^\top y)_j`.

    With ``lp.csc`` the column sums are taken over the stacked columns at once (another order of the same
    terms, under the same bound).  Every float operation's error is bounded: :math:`s=A^\top y` and :math:`a=|A|^\top|y|` carry at
    most :math:`\gamma_N a` with ``N`` the column's entries plus two; the data's own errors add
    :math:`dA^\top|y|`; the residual's three additions add :math:`4u` times their magnitudes.
    """
    y_ub = np.maximum(np.asarray(y_ub, dtype=float), 0.0)
    y_eq = np.asarray(y_eq, dtype=float)
    if lp.csc is not None:  # the same sums over each column's entries, from the stacked columns
        data, indices, indptr, derr, nrow = lp.csc
        n = lp.c.shape[0]
        y, ya = np.concatenate([y_ub, y_eq]), np.concatenate([y_ub, np.abs(y_eq)])
        s = sp.csr_matrix((data, indices, indptr), shape=(n, nrow)) @ y
        a = sp.csr_matrix((np.abs(data), indices, indptr), shape=(n, nrow)) @ ya
        e = sp.csr_matrix((derr, indices, indptr), shape=(n, nrow)) @ ya
        nnz = np.diff(indptr) + 2
    else:
        s = lp.A_ub.T @ y_ub + lp.A_eq.T @ y_eq
        a = _abs_t(lp.A_ub) @ y_ub + _abs_t(lp.A_eq) @ np.abs(y_eq)
        e = np.zeros_like(s)
        if lp.dA_ub is not None:
            e += lp.dA_ub.T @ y_ub
        if lp.dA_eq is not None:
            e += lp.dA_eq.T @ np.abs(y_eq)
        nnz = np.diff(lp.A_ub.tocsc().indptr) + np.diff(lp.A_eq.tocsc().indptr) + 2
    g = nnz * U / (1.0 - nnz * U)
    dc = np.zeros_like(lp.c) if lp.dc is None else lp.dc
    slack = (g * a + e) * (1.0 + 4.0 * g) + (g * e)
    r = (lp.c + dc) - s + slack
    r_hi = r + (np.abs(lp.c) + dc + np.abs(s) + slack) * 4.0 * U + 1e-300
    terms = [lp.b_ub * y_ub, lp.b_eq * y_eq]
    errs = [np.abs(t) * 2.0 * U for t in terms]
    if lp.db_ub is not None:
        errs.append(lp.db_ub * y_ub)
    if lp.db_eq is not None:
        errs.append(lp.db_eq * np.abs(y_eq))
    total = math.fsum(np.concatenate(terms).tolist())
    err = math.fsum(np.concatenate(errs).tolist()) * (1.0 + 8.0 * U)
    base = total + err + abs(total) * 4.0 * U
    return (math.nextafter(base, math.inf) if math.isfinite(base) else math.inf), r_hi


def dual_bound_exact(c: list, A_ub: dict, b_ub: list, A_eq: dict, b_eq: list, upper: list,
                     y_ub: np.ndarray, y_eq: np.ndarray) -> Fraction:
    r"""The same bound in rationals: data as Fractions (``A`` as ``{(i, j): value}``), the duals taken exactly.

    Returns the exact value of the bound of the module docstring for this dual point (negative
    parts of ``y_ub`` are dropped first, as in :func:`dual_bound`).
    """
    yu = [max(Fraction(float(v)), Fraction(0)) for v in y_ub]
    ye = [Fraction(float(v)) for v in y_eq]
    red = [Fraction(v) for v in c]
    for (i, j), v in A_ub.items():
        red[j] -= v * yu[i]
    for (i, j), v in A_eq.items():
        red[j] -= v * ye[i]
    total = sum((Fraction(b) * y for b, y in zip(b_ub, yu)), Fraction(0))
    total += sum((Fraction(b) * y for b, y in zip(b_eq, ye)), Fraction(0))
    total += sum((Fraction(u) * r for u, r in zip(upper, red) if r > 0), Fraction(0))
    return total
