"""Independent references for the class tests (issue 38), sharing no code with the library.

* :func:`enum_ratio`: Definition 1 of any mechanism by enumerating every record tuple and every output,
  in rationals, from a *law* ``tuple -> {output: probability}`` written here for local tables, scans
  (stop distances enumerated side by side) and owner/holder tables (rows divided by their exact sums);
* :func:`leq_exp`: ``ratio <= e^eps`` decided with 60-digit decimals;
* :func:`owner_lp_exact` / :func:`simplex_max`: the LP over every owner (holder) mechanism built from the
  definitions and solved by a dense rational simplex (Bland's rule), for tiny ``n``;
* :func:`owner_lp_dual_enclosure`: the same LP in floats solved by scipy's HiGHS, its dual point
  checked in rationals (weak duality: an exact upper bound whatever the solver's accuracy).
"""

from __future__ import annotations

import itertools
import math
from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np

ZERO = Fraction(0)


def stationary(P: list[list[Fraction]]) -> list[Fraction]:
    """pi P = pi, sum pi = 1, by Gaussian elimination in rationals."""
    k = len(P)
    A = [[P[j][i] - (1 if i == j else 0) for j in range(k)] for i in range(k - 1)] + [[Fraction(1)] * k]
    b = [ZERO] * (k - 1) + [Fraction(1)]
    for c in range(k):
        r = next(i for i in range(c, k) if A[i][c] != 0)
        A[c], A[r], b[c], b[r] = A[r], A[c], b[r], b[c]
        for i in range(k):
            if i != c and A[i][c] != 0:
                f = A[i][c] / A[c][c]
                A[i] = [a - f * bb for a, bb in zip(A[i], A[c])]
                b[i] -= f * b[c]
    return [b[i] / A[i][i] for i in range(k)]


def tuple_prob(P: list[list[Fraction]], pi: list[Fraction], x: tuple) -> Fraction:
    v = pi[x[0]]
    for a, b in zip(x, x[1:]):
        v *= P[a][b]
    return v


def enum_ratio(P: list[list[Fraction]], n: int, p: int, law) -> Fraction | None:
    """The worst ratio Pr(o | X_p = x) / Pr(o | X_p = x') over outputs and ordered pairs (None: infinite)."""
    k = len(P)
    pi = stationary(P)
    lik: dict = {}
    for x in itertools.product(range(k), repeat=n):
        w = tuple_prob(P, pi, x) / pi[x[p]]
        if w == 0:
            continue
        for o, q in law(x).items():
            if q:
                lik.setdefault(o, [ZERO] * k)[x[p]] += w * q
    top: Fraction = Fraction(1)
    for vec in lik.values():
        for a in range(k):
            for b in range(k):
                if a != b and vec[a] != 0:
                    if vec[b] == 0:
                        return None
                    top = max(top, vec[a] / vec[b])
    return top


def enum_utility(P: list[list[Fraction]], n: int, law) -> Fraction:
    """Definition 2: the expected fraction of records published."""
    k = len(P)
    pi = stationary(P)
    total = ZERO
    for x in itertools.product(range(k), repeat=n):
        w = tuple_prob(P, pi, x)
        for o, q in law(x).items():
            total += w * q * sum(v is not None for v in o)
    return total / n


def table_law(table: np.ndarray, n: int, p: int, k: int, holder: bool):
    """Rows divided by their exact sums; row of x: digits least significant first (all n, or the n - 1 others)."""
    others = [t for t in range(n) if t != p]
    rows = [[Fraction(float(v)) for v in r] for r in np.asarray(table)]
    sums = [sum(r, ZERO) for r in rows]

    def law(x: tuple) -> dict:
        r = sum(x[t] * k**t for t in range(n)) if holder else sum(x[t] * k**j for j, t in enumerate(others))
        out: dict = {}
        for mask, wgt in enumerate(rows[r]):
            if wgt:
                o = tuple(x[t] if (mask >> j) & 1 else None for j, t in enumerate(others))
                out[o] = out.get(o, ZERO) + wgt / sums[r]
        return out

    return law


def scan_law(left, right, n: int, p: int, holder: bool):
    """A scan from its stop tables S[d-1][c][x] (c: the side's first record, holder: X_p; a shorter table ends
    in ones): each side stops once, independently, and publishes from there on."""
    def side_law(x: tuple, S, step: int) -> list:
        pos = list(range(p + step, -1 if step < 0 else n, step))
        if S is None:
            return [((), Fraction(1))]
        c = x[p] if holder else x[pos[0]]
        alive, out = Fraction(1), []
        for d, t in enumerate(pos):
            s = Fraction(float(S[d][c][x[t]])) if d < len(S) else Fraction(1)
            out.append((tuple(pos[d:]), alive * s))
            alive *= 1 - s
        out.append(((), alive))
        return out

    def law(x: tuple) -> dict:
        out: dict = {}
        for (pl, wl), (pr, wr) in itertools.product(side_law(x, left, -1), side_law(x, right, 1)):
            shown = set(pl) | set(pr)
            o = tuple(x[t] if t in shown else None for t in range(n) if t != p)
            out[o] = out.get(o, ZERO) + wl * wr
        return out

    return law


def local_law(q: np.ndarray, n: int, p: int):
    """A local mechanism: record t redacted with probability q[t][x_t], independently; p always redacted."""
    Q = [[Fraction(float(v)) for v in r] for r in np.asarray(q)]

    def law(x: tuple) -> dict:
        out = {(): Fraction(1)}
        for t in range(n):
            if t == p:
                continue
            r = Q[t][x[t]]
            nxt: dict = {}
            for o, w in out.items():
                nxt[o + (None,)] = w * r
                nxt[o + (x[t],)] = w * (1 - r)
            out = nxt
        return out

    return law


def leq_exp(ratio: Fraction | None, eps: float) -> bool:
    """ratio <= e^eps, decided with 60-digit decimals (asserts the two are not within 1e-50 of each other)."""
    if ratio is None:
        return False
    e_exact = Fraction(eps)
    if ratio - 1 <= e_exact:  # log r <= r - 1
        return True
    if (ratio - 1) / ratio > e_exact:  # log r >= (r - 1) / r
        return False
    getcontext().prec = 60
    e = Decimal(Fraction(eps).numerator) / Decimal(Fraction(eps).denominator)
    r = Decimal(ratio.numerator) / Decimal(ratio.denominator)
    bound = e.exp()
    assert abs(r - bound) > bound * Decimal(10) ** -50, "too close to decide"
    return r <= bound


# ---------------------------------------------------------------------------
# the LP over every mechanism, from the definitions
# ---------------------------------------------------------------------------
def owner_lp_data(P: list[list[Fraction]], n: int, p: int, E: Fraction, holder: bool):
    """(c, A_ub rows as {var: coef}, eq rows as lists of vars, nvar): variable (row, mask) of the table;
    one inequality per (ordered pair, output): Pr(o | x) - E Pr(o | x') <= 0; every row sums to 1."""
    k = len(P)
    pi = stationary(P)
    others = [t for t in range(n) if t != p]
    nm = 2 ** (n - 1)
    nrow = k ** (n if holder else n - 1)
    c = [ZERO] * (nrow * nm)
    ub: dict = {}
    for x in itertools.product(range(k), repeat=n):
        w = tuple_prob(P, pi, x)
        r = sum(x[t] * k**t for t in range(n)) if holder else sum(x[t] * k**j for j, t in enumerate(others))
        for mask in range(nm):
            var = r * nm + mask
            c[var] += w * bin(mask).count("1") / n
            o = tuple(x[t] if (mask >> j) & 1 else None for j, t in enumerate(others))
            for a in range(k):
                for b in range(k):
                    if a == b:
                        continue
                    row = ub.setdefault((a, b, o), {})
                    if x[p] == a:
                        row[var] = row.get(var, ZERO) + w / pi[a]
                    if x[p] == b:
                        row[var] = row.get(var, ZERO) - E * w / pi[b]
    rows = [r for r in ub.values() if any(v != 0 for v in r.values())]
    eq = [[r * nm + m for m in range(nm)] for r in range(nrow)]
    return c, rows, eq, nrow * nm


def simplex_max(c: list, ub: list[dict], eq: list[list[int]], nvar: int) -> Fraction:
    """max c x, ub rows x <= 0, each eq row's variables summing to 1, x >= 0: a dense rational tableau,
    started from "every row on its first variable" (the mechanism redacting everything, private for every
    E >= 1), Bland's rule."""
    m1, m2 = len(ub), len(eq)
    ncol = nvar + m1
    T = []
    for i, row in enumerate(ub):
        t = [ZERO] * (ncol + 1)
        for j, v in row.items():
            t[j] = v
        t[nvar + i] = Fraction(1)
        T.append(t)
    for vars_ in eq:
        t = [ZERO] * (ncol + 1)
        for j in vars_:
            t[j] = Fraction(1)
        t[-1] = Fraction(1)
        T.append(t)
    z = [-v for v in c] + [ZERO] * (m1 + 1)
    basis = [nvar + i for i in range(m1)] + [None] * m2

    def pivot(r: int, col: int) -> None:
        piv = T[r][col]
        T[r] = [v / piv for v in T[r]]
        for i in range(len(T)):
            if i != r and T[i][col] != 0:
                f = T[i][col]
                T[i] = [a - f * b for a, b in zip(T[i], T[r])]
        if z[col] != 0:
            f = z[col]
            z[:] = [a - f * b for a, b in zip(z, T[r])]
        basis[r] = col

    for i, vars_ in enumerate(eq):
        pivot(m1 + i, vars_[0])
    assert all(T[i][-1] >= 0 for i in range(len(T)))
    while True:
        col = next((j for j in range(ncol) if z[j] < 0), None)
        if col is None:
            return z[-1]
        rows = [i for i in range(len(T)) if T[i][col] > 0]
        assert rows, "unbounded"
        best = min(T[i][-1] / T[i][col] for i in rows)
        r = min((i for i in rows if T[i][-1] / T[i][col] == best), key=lambda i: basis[i])
        pivot(r, col)


def owner_lp_exact(P: list[list[Fraction]], n: int, p: int, E: Fraction, holder: bool) -> Fraction:
    """The exact optimum (utility) over every owner/holder mechanism at the budget ratio E."""
    return simplex_max(*owner_lp_data(P, n, p, E, holder))


def owner_lp_dual_enclosure(P: list[list[Fraction]], n: int, p: int, E: Fraction, holder: bool) -> Fraction:
    """An exact upper bound on the LP optimum at E: the float LP solved by HiGHS, its duals (any y_ub >= 0 and
    y_eq) checked in rationals: c x <= sum y_eq + sum_j max(0, c_j - (A^T y)_j) for 0 <= x <= 1."""
    from scipy.optimize import linprog
    import scipy.sparse as sp

    c, ub, eq, nvar = owner_lp_data(P, n, p, E, holder)
    r, cl, v = [], [], []
    for i, row in enumerate(ub):
        for j, a in row.items():
            r.append(i), cl.append(j), v.append(float(a))
    A = sp.csr_matrix((v, (r, cl)), shape=(len(ub), nvar))
    er, ec = zip(*[(i, j) for i, vars_ in enumerate(eq) for j in vars_])
    Aeq = sp.csr_matrix((np.ones(len(er)), (er, ec)), shape=(len(eq), nvar))
    res = linprog(-np.array([float(x) for x in c]), A_ub=A, b_ub=np.zeros(len(ub)), A_eq=Aeq,
                  b_eq=np.ones(len(eq)), bounds=(0, 1), method="highs",
                  options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    if res.status == 0:
        yu = [max(Fraction(-float(y)), ZERO) for y in res.ineqlin.marginals]
        ye = [Fraction(-float(y)) for y in res.eqlin.marginals]
    else:  # no dual point from HiGHS: y = 0 is one too (the bound "every record published")
        yu, ye = [ZERO] * len(ub), [ZERO] * len(eq)
    red = list(c)
    for i, row in enumerate(ub):
        if yu[i]:
            for j, a in row.items():
                red[j] -= a * yu[i]
    for i, vars_ in enumerate(eq):
        for j in vars_:
            red[j] -= ye[i]
    return sum(ye, ZERO) + sum((x for x in red if x > 0), ZERO)
