r"""Exact rational leakage and certificates, for every chain (no floating point anywhere).

Every number is taken exactly: a float is the rational value of that double (``0.1`` is
3602879701896397/36028797018963968), a decimal string or ``Decimal`` its exact decimal value.
Audits pass the doubles a release draws with, so the float and the exact audit judge the
same mechanism (README, "How we know it is private").  The chain is the exact stochastic matrix
a :class:`~redactopt.model.chain.Chain` stands for (:attr:`~redactopt.model.chain.Chain.exact`;
for a :class:`~redactopt.model.chain.MarkovChain` the rationals of ``alpha`` and ``beta``), its
stationary law is computed exactly and the left side runs on the exactly time-reversed chain
:math:`\tilde P_{xy}=\pi_yP_{yx}/\pi_x` (the chain itself for two states).

Definition 1: :math:`\mathcal L=\log R`,

.. math:: R=\max_{x\ne x'}\ \max_{\mathbf y:\ \Pr(\mathbf y\mid x)+\Pr(\mathbf y\mid x')>0}
          \frac{\Pr(\mathbf y\mid X_p=x)}{\Pr(\mathbf y\mid X_p=x')}\quad(\text{infinite when the denominator is }0),

by the same reduction as the float evaluator, written independently of it (plain lists of
:class:`fractions.Fraction`, one record at a time, no blocks, no scaling): per side and ordered
pair the largest ratio over the patterns "``j`` nearest ⊥, then ``v``" and "all ⊥", each side
ending at its first record published with certainty, and :math:`R=\max_{x\ne x'}A_\ell(x,x')A_r(x,x')`.
A binary chain (every transition positive) has two values only, so its sides' ratios for the
pair ``(1, 0)`` are the inverses of those for ``(0, 1)``: the 2x2 kernel keeps one list per side.

The verdict :math:`\mathcal L\le\epsilon` is decided by comparing ``R`` with rational bounds on
:math:`e^\epsilon`:

* lower bound: the Taylor partial sum :math:`\sum_{k\le K}\epsilon^k/k!` (all terms positive);
* upper bound: the partial sum plus the remainder bound
  :math:`\frac{\epsilon^{K+1}}{(K+1)!}\cdot\frac{1}{1-\epsilon/(K+2)}` (valid once :math:`K+2>\epsilon`).

``R ≤ lower`` certifies privacy, ``R > upper`` certifies a violation; ``K`` grows until one holds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Literal

from redactopt._validate import check_index, check_private
from redactopt.model.chain import Chain
from redactopt.model.varying import VaryingChain

__all__ = ["ExactResult", "ExactCertificate", "to_fraction", "exact_leakage", "exact_leakage_ratio", "certify_exact",
           "exact_leakage_bruteforce", "exact_n_step", "exact_marginals", "exact_backward_steps", "exact_side_steps",
           "n_step_ratio", "ratio_at_most_exp", "exp_bounds",
           "MAX_EXACT_N"]

Matrix = list[list[Fraction]]

#: Rational arithmetic grows with n; audits refuse longer mechanisms (the issue asks for n <= 12).
MAX_EXACT_N = 64


def to_fraction(x: object, name: str) -> Fraction:
    """``x`` as an exact fraction (the double itself for floats); numbers only, finite."""
    if isinstance(x, bool):
        raise TypeError(f"{name} must be a number, got {x!r}")
    if isinstance(x, Fraction):
        return x
    if isinstance(x, int):
        return Fraction(x)
    if isinstance(x, float):
        if not math.isfinite(x):
            raise ValueError(f"{name} must be finite, got {x!r}")
        return Fraction(x)
    if isinstance(x, (str, Decimal)):
        try:
            f = Fraction(str(x))
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"{name} must be a finite number, got {x!r}") from None
        return f
    if hasattr(x, "item"):  # numpy scalar
        return to_fraction(x.item(), name)
    raise TypeError(f"{name} must be a number, got {x!r}")


def _rows(redact_prob: object, k: int) -> Matrix:
    """``n`` rows of ``k`` exact probabilities in [0, 1] (:func:`to_fraction` of each entry)."""
    rows = []
    for t, row in enumerate(redact_prob):  # type: ignore[attr-defined]
        if isinstance(row, (str, bytes)) or not hasattr(row, "__iter__"):
            raise ValueError(f"redact_prob must be n rows of {k} numbers; row {t} is {row!r}")
        row = list(row)
        if len(row) != k:
            raise ValueError(f"redact_prob row {t} must have {k} entries, got {len(row)}")
        r = [to_fraction(v, f"redact_prob[{t}][{x}]") for x, v in enumerate(row)]
        if not all(0 <= v <= 1 for v in r):
            raise ValueError(f"redact_prob row {t} entries must lie in [0, 1], got {[str(v) for v in r]}")
        rows.append(r)
    if not rows:
        raise ValueError("redact_prob must have at least one row")
    if len(rows) > MAX_EXACT_N:
        raise ValueError(f"exact rational audits are limited to n <= {MAX_EXACT_N} records, got {len(rows)}")
    return rows


def _check_private_row(rows: Matrix, p: object) -> int:
    """The 0-based private index, whose row must be all ones."""
    p = check_index(p, len(rows), "p")
    if any(v != 1 for v in rows[p]):
        ones = "[1, 1]" if len(rows[p]) == 2 else "all ones"
        raise ValueError(f"redact_prob row {p} (0-based) is the private record and must be {ones}")
    return p


# --------------------------------------------------------------------------
# the two-state kernel: one list of ratios per side
# --------------------------------------------------------------------------
def _side_ratios(P: Matrix, rows: Matrix) -> list[Fraction]:
    """All likelihood ratios Pr(.|X_p=0)/Pr(.|X_p=1) of one side's output patterns, exactly (positive P)."""
    if not rows:
        return [Fraction(1)]
    out: list[Fraction] = []
    U = [[Fraction(1), Fraction(0)], [Fraction(0), Fraction(1)]]
    for q0, q1 in rows:
        A = [[U[x][0] * P[0][v] + U[x][1] * P[1][v] for v in (0, 1)] for x in (0, 1)]
        for v, qv in ((0, q0), (1, q1)):
            if qv < 1:
                out.append(A[0][v] / A[1][v])
        if q0 == 0 and q1 == 0:
            return out  # record k cannot be ⊥: nothing farther is reachable
        U = [[A[x][0] * q0, A[x][1] * q1] for x in (0, 1)]
    total = [U[x][0] + U[x][1] for x in (0, 1)]
    out.append(total[0] / total[1])
    return out


def _two_state(P: Matrix, rows: Matrix, p: int) -> tuple[Fraction, tuple[int, int]]:
    """The worst ratio and its pair on a binary chain (the pair (1, 0) has the inverse ratios; ties to (0, 1))."""
    left = _side_ratios(P, rows[:p][::-1])
    right = _side_ratios(P, rows[p + 1 :])
    up, down = max(left) * max(right), 1 / (min(left) * min(right))
    return (up, (0, 1)) if up >= down else (down, (1, 0))


# --------------------------------------------------------------------------
# the matrix kernel: every ordered pair
# --------------------------------------------------------------------------
def _reversed(P: tuple[tuple[Fraction, ...], ...], pi: tuple[Fraction, ...]) -> Matrix:
    k = len(P)
    return [[pi[y] * P[y][x] / pi[x] for y in range(k)] for x in range(k)]


def _better(a: Fraction | None, b: Fraction | None) -> bool:
    """Whether ratio ``a`` exceeds ``b`` (``None`` is infinite; ``b`` may be -1 for 'none yet')."""
    if b is None:
        return False
    if a is None:
        return True
    return a > b


def _consider(best: list[list[Fraction | None]], vec: list[Fraction]) -> None:
    """Fold one pattern's likelihood vector into the largest ratio of every ordered pair."""
    k = len(vec)
    for x in range(k):
        if vec[x] == 0:
            continue  # 0/positive is ratio 0 and 0/0 says nothing: neither can be the max (>= 1 exists)
        for y in range(k):
            if x != y:
                r = None if vec[y] == 0 else vec[x] / vec[y]
                if _better(r, best[x][y]):
                    best[x][y] = r


def _side_best(P: Matrix | tuple, rows: Matrix) -> list[list[Fraction | None]]:
    """Largest ratio of one side's patterns for every ordered pair (``None`` infinite, 1 on the diagonal).

    ``rows`` are the side's records by distance (nearest first).  Pattern vectors are the
    columns of :math:`A_jP` with :math:`A_0=I`, :math:`A_{j+1}=A_jP\\,\\mathrm{diag}(q_{j+1})`; a row
    of zeros ends every pattern (nothing farther is reachable, and "all ⊥" is impossible).
    """
    return _side_best_steps([P] * len(rows), rows, len(P))


def _side_best_steps(steps: list, rows: Matrix, k: int) -> list[list[Fraction | None]]:
    """:func:`_side_best` with the matrix of each record's step: ``steps[j]`` leads to the record ``rows[j]``."""
    best: list[list[Fraction | None]] = [[Fraction(-1)] * k for _ in range(k)]
    A = [[Fraction(int(x == y)) for y in range(k)] for x in range(k)]
    for q, P in zip(rows, steps):
        AP = [[sum((A[x][z] * P[z][v] for z in range(k)), Fraction(0)) for v in range(k)] for x in range(k)]
        for v in range(k):
            if q[v] < 1:
                _consider(best, [AP[x][v] for x in range(k)])
        if all(v == 0 for v in q):
            break  # a record published with certainty: the side's patterns end here
        A = [[AP[x][v] * q[v] for v in range(k)] for x in range(k)]
    else:
        _consider(best, [sum(A[x], Fraction(0)) for x in range(k)] if rows else [Fraction(1)] * k)
    for x in range(k):
        best[x][x] = Fraction(1)
    return best


def _matrix(chain: Chain, rows: Matrix, p: int) -> tuple[Fraction | None, tuple[int, int]]:
    """The worst ratio (``None``: infinite) and its pair, with the exactly reversed chain on the left."""
    P = chain.exact
    left = _side_best(_reversed(P, chain.exact_stationary()), rows[:p][::-1])
    right = _side_best(P, rows[p + 1 :])
    top: Fraction | None = Fraction(-1)
    pair = (0, 1)
    for x in range(chain.k):
        for y in range(chain.k):
            if x != y:
                a, b = left[x][y], right[x][y]
                r = None if a is None or b is None else a * b
                if _better(r, top):
                    top, pair = r, (x, y)
    return top, pair


def exact_marginals(chain: VaryingChain) -> list[list[Fraction]]:
    r"""The law of every row of a varying chain in rationals: :math:`\pi_{t+1}=\pi_tP_t` from the exact initial law."""
    k = chain.k
    out = [list(chain.exact_initial)]
    for t in range(chain.n - 1):
        P = chain.exact_matrices[int(chain.row_level[t])]
        out.append([sum((out[-1][x] * P[x][y] for x in range(k)), Fraction(0)) for y in range(k)])
    return out


def exact_backward_steps(chain: VaryingChain, pi: list[list[Fraction]] | None = None) -> list[list[list[Fraction]]]:
    r"""The exactly reversed steps :math:`\tilde P_t(y\to x)=\pi_t(x)P_t(x,y)/\pi_{t+1}(y)`, ``t = 0 .. n - 2``
    (the row of a state of probability 0 is uniform: it is never reached)."""
    k = chain.k
    pi = exact_marginals(chain) if pi is None else pi
    back = []
    for t in range(chain.n - 1):
        P = chain.exact_matrices[int(chain.row_level[t])]
        back.append([[pi[t][x] * P[x][y] / pi[t + 1][y] if pi[t + 1][y] else Fraction(1, k) for x in range(k)]
                     for y in range(k)])
    return back


def exact_side_steps(chain: VaryingChain, p: int, side: str) -> list:
    r"""The exact steps one side of row ``p`` is read through, nearest first: :math:`P_p, P_{p+1},\dots`
    (``"right"``) or :math:`\tilde P_{p-1},\tilde P_{p-2},\dots` (``"left"``)."""
    if side == "right":
        return [chain.exact_matrices[int(chain.row_level[t])] for t in range(p, chain.n - 1)]
    if side != "left":
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    return exact_backward_steps(chain)[:p][::-1]


def _varying(chain: VaryingChain, rows: Matrix, p: int) -> tuple[Fraction | None, tuple[int, int]]:
    r"""The worst ratio and pair of a varying chain: each side through its exact steps, the left side
    through the exactly reversed steps :math:`\pi_t(x)P_t(x,y)/\pi_{t+1}(y)` (rows of states of
    probability 0 are never reached; pairs with a value of probability 0 at ``p`` are skipped)."""
    k = chain.k
    pi = exact_marginals(chain)
    fwd = [chain.exact_matrices[int(chain.row_level[t])] for t in range(chain.n - 1)]
    back = exact_backward_steps(chain, pi)
    left = _side_best_steps(back[:p][::-1], rows[:p][::-1], k)
    right = _side_best_steps(fwd[p:], rows[p + 1 :], k)
    top: Fraction | None = Fraction(-1)
    pair = (0, 1)
    for x in range(k):
        for y in range(k):
            if x != y and pi[p][x] > 0 and pi[p][y] > 0:
                a, b = left[x][y], right[x][y]
                r = None if a is None or b is None else a * b
                if _better(r, top):
                    top, pair = r, (x, y)
    return (Fraction(1) if top == -1 else top), pair


# --------------------------------------------------------------------------
# the exact leakage
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class ExactResult:
    """Exact worst ratio about one private record: ``ratio`` (``None`` means infinite) and its pair."""

    ratio: Fraction | None
    pair: tuple[int, int]
    p: int

    @property
    def leakage(self) -> float:
        """``log(ratio)`` rounded to a float (``inf`` for an infinite ratio)."""
        if self.ratio is None:
            return math.inf
        return math.log(self.ratio.numerator) - math.log(self.ratio.denominator)


def exact_leakage(chain: Chain, redact_prob: object, p: int) -> ExactResult:
    r"""The exact worst ratio :math:`R=e^{\mathcal L}` about the 0-based private record ``p``.

    ``redact_prob`` is ``n`` rows of ``k`` numbers (ints, Fractions, Decimals, decimal strings or
    floats taken exactly), row ``p`` all ones, ``n <=`` :data:`MAX_EXACT_N`.  Returns the ratio
    (``None``: infinite) and the ordered pair ``(x, x')`` attaining it.  A binary chain goes
    through the two-state kernel, any other through the matrix one (module docstring).
    """
    if isinstance(chain, VaryingChain):
        rows = _rows(redact_prob, chain.k)
        p = _check_private_row(rows, p)
        if chain.n != len(rows):
            raise ValueError(f"chain has {chain.n} rows but the mechanism has {len(rows)}")
        return ExactResult(*_varying(chain, rows, p), p)
    if not isinstance(chain, Chain):
        raise TypeError(f"chain must be a Chain (a MarkovChain or a transition matrix), got {type(chain).__name__}")
    rows = _rows(redact_prob, chain.k)
    p = _check_private_row(rows, p)
    if chain.binary:
        ratio, pair = _two_state([list(r) for r in chain.exact], rows, p)
        return ExactResult(ratio, pair, p)
    ratio, pair = _matrix(chain, rows, p)
    return ExactResult(ratio, pair, p)


def exact_leakage_ratio(alpha: object, beta: object, redact_prob: list, p: int) -> Fraction:
    r"""The exact worst ratio :math:`R=e^{\mathcal L}` (Definition 1) of the binary chain ``(alpha, beta)``.

    ``alpha``, ``beta`` and the entries of ``redact_prob`` may be ints, Fractions, Decimals,
    decimal strings or floats (a float is taken as its exact binary value).  ``p`` is 0-based.
    (:func:`exact_leakage` with the chain :math:`[[1-\alpha,\alpha],[\beta,1-\beta]]` in rationals.)
    """
    P = _binary_matrix(alpha, beta)
    rows = _rows(redact_prob, 2)
    return _two_state(P, rows, _check_private_row(rows, p))[0]


def _binary_matrix(alpha: object, beta: object) -> Matrix:
    a, b = to_fraction(alpha, "alpha"), to_fraction(beta, "beta")
    for name, v in (("alpha", a), ("beta", b)):
        if not 0 < v < 1:
            raise ValueError(f"{name} must lie strictly between 0 and 1, got {v}")
    return [[1 - a, a], [b, 1 - b]]


def exp_bounds(eps: Fraction, terms: int) -> tuple[Fraction, Fraction]:
    """Rational ``(lower, upper)`` with ``lower <= exp(eps) <= upper`` for ``eps >= 0``."""
    if eps < 0:
        raise ValueError(f"eps must be >= 0, got {eps}")
    total, term = Fraction(0), Fraction(1)
    for k in range(terms + 1):
        if k:
            term = term * eps / k
        total += term
    nxt = term * eps / (terms + 1)
    if terms + 2 <= eps:
        return total, Fraction(10) ** 400  # remainder bound not yet valid: no useful upper bound
    return total, total + nxt / (1 - eps / (terms + 2))


@dataclass(frozen=True)
class ExactCertificate:
    """Verdict of an exact audit.

    ``status`` is ``"certified"`` (L <= eps proven), ``"violated"`` (L > eps proven) or
    ``"undecided"`` (R lies between the rational bounds after the maximum number of terms).
    ``ratio`` is R = exp(L) exactly (``None``: infinite); ``leakage`` its logarithm rounded to a
    float; ``pair`` the ordered pair of values attaining it and ``worst`` its private record.
    """

    status: Literal["certified", "violated", "undecided"]
    ratio: Fraction | None
    leakage: float
    eps: Fraction
    terms: int
    private: tuple[int, ...]
    pair: tuple[int, int] = (0, 1)
    worst: int = 0


def certify_exact(chain: object, *args: object, max_terms: int = 400) -> ExactCertificate:
    """Decide exactly whether the mechanism is ``eps``-private about every private record (0-based).

    ``certify_exact(chain, redact_prob, private, eps)`` for any :class:`~redactopt.model.chain.Chain`,
    or the binary form ``certify_exact(alpha, beta, redact_prob, private, eps)`` with ``alpha`` and
    ``beta`` any exact numbers (the chain :math:`[[1-\\alpha,\\alpha],[\\beta,1-\\beta]]`).
    """
    if isinstance(chain, (Chain, VaryingChain)):
        redact_prob, private, eps = args
        results = _results(chain, redact_prob, private)
    else:
        beta, redact_prob, private, eps = args
        P = _binary_matrix(chain, beta)
        rows = _rows(redact_prob, 2)
        results = [ExactResult(*_two_state(P, rows, p), p) for p in _private_of(rows, private)]
    e = to_fraction(eps, "eps")
    if e <= 0:
        raise ValueError(f"eps must be > 0, got {eps}")
    worst = max(results, key=lambda r: math.inf if r.ratio is None else r.ratio)
    terms = max(8, int(2 * float(e)) + 8)
    if worst.ratio is None:
        status = "violated"
    else:
        ok, terms = _at_most_exp(worst.ratio, e, terms, max_terms)
        status = "undecided" if ok is None else ("certified" if ok else "violated")
    return ExactCertificate(status, worst.ratio, worst.leakage, e, terms,  # type: ignore[arg-type]
                            tuple(r.p for r in results), worst.pair, worst.p)


def _private_of(rows: Matrix, private: object) -> tuple[int, ...]:
    priv = check_private(private, len(rows))
    for p in priv:
        _check_private_row(rows, p)
    return priv


def _results(chain: Chain | VaryingChain, redact_prob: object, private: object) -> list[ExactResult]:
    rows = _rows(redact_prob, chain.k)
    return [exact_leakage(chain, rows, p) for p in _private_of(rows, private)]


def _at_most_exp(ratio: Fraction, e: Fraction, terms: int, max_terms: int) -> tuple[bool | None, int]:
    """:func:`ratio_at_most_exp` from ``terms`` Taylor terms on, and the terms it took."""
    while True:
        lo, hi = exp_bounds(e, terms)
        if ratio <= lo:
            return True, terms
        if ratio > hi:
            return False, terms
        if terms >= max_terms:
            return None, terms
        terms = min(max_terms, terms * 2)


def n_step_ratio(alpha: object, beta: object, d: int, v: int) -> Fraction:
    r""":math:`(P^d)_{0v}/(P^d)_{1v}` exactly (repeated squaring of ``P`` in rationals), ``d <= 64``.

    Publishing ``v`` at distance ``d`` moves the odds of :math:`X_p=0` by this factor; its
    logarithm's absolute value is the pointwise influence (Definition 3).
    """
    a, b = to_fraction(alpha, "alpha"), to_fraction(beta, "beta")
    if isinstance(d, bool) or not isinstance(d, int) or not 1 <= d <= MAX_EXACT_N or v not in (0, 1):
        raise ValueError(f"d must be an integer in 1..{MAX_EXACT_N} and v 0 or 1, got d={d!r}, v={v!r}")
    P = [[1 - a, a], [b, 1 - b]]
    R = [[Fraction(1), Fraction(0)], [Fraction(0), Fraction(1)]]
    base, k = P, d
    while k:
        if k & 1:
            R = [[sum(R[i][m] * base[m][j] for m in (0, 1)) for j in (0, 1)] for i in (0, 1)]
        base = [[sum(base[i][m] * base[m][j] for m in (0, 1)) for j in (0, 1)] for i in (0, 1)]
        k >>= 1
    return R[0][v] / R[1][v]


def exact_leakage_bruteforce(chain: Chain, redact_prob: object, p: int) -> ExactResult:
    r"""Reference: enumerate all :math:`(k+1)^n` outputs in rational arithmetic (tiny ``n`` only).

    Forward pass of :math:`\Pr(\mathbf y, X_p=x)` over the output tree from the exact stationary
    law (a varying chain: its exact initial law and steps) with the forward chain only (no
    patterns, no reversed chain); :math:`\Pr(X_p=x)` is the sum of the same table.
    """
    rows = _rows(redact_prob, chain.k)
    n, k = len(rows), chain.k
    if (k + 1) ** n > 200_000:
        raise ValueError(f"exact_leakage_bruteforce enumerates (k+1)^n = {(k + 1) ** n} outputs; at most 200000")
    if isinstance(chain, VaryingChain):
        if chain.n != n:
            raise ValueError(f"chain has {chain.n} rows but the mechanism has {n}")
        first, steps = list(chain.exact_initial), [chain.exact_matrices[int(v)] for v in chain.row_level[: n - 1]]
    else:
        first, steps = list(chain.exact_stationary()), [chain.exact] * (n - 1)
    # states: output tuple -> table[x_p][x_t] of joint probabilities
    zero = Fraction(0)
    frontier: dict[tuple, list[list[Fraction]]] = {(): [[first[z] for z in range(k)] for _ in range(k)]}
    for t in range(n):
        nxt: dict[tuple, list[list[Fraction]]] = {}
        for out, tab in frontier.items():
            if t:
                P = steps[t - 1]
                tab = [[sum((tab[h][z] * P[z][w] for z in range(k)), zero) for w in range(k)] for h in range(k)]
            if t == p:
                tab = [[tab[h][w] if w == h else zero for w in range(k)] for h in range(k)]
            for y in range(k + 1):
                if y == k:
                    new = [[tab[h][w] * rows[t][w] for w in range(k)] for h in range(k)]
                else:
                    new = [[tab[h][w] * (1 - rows[t][w]) if w == y else zero for w in range(k)] for h in range(k)]
                nxt[out + (y,)] = new
        frontier = nxt
    top: Fraction | None = Fraction(-1)
    pair = (0, 1)
    pi = [sum((sum(tab[h], zero) for tab in frontier.values()), zero) for h in range(k)]  # Pr(X_p = h)
    for tab in frontier.values():
        cond = [sum(tab[h], zero) / pi[h] if pi[h] else zero for h in range(k)]
        for x in range(k):
            for y in range(k):
                if x == y or cond[x] == 0:
                    continue
                r = None if cond[y] == 0 else cond[x] / cond[y]
                if _better(r, top):
                    top, pair = r, (x, y)
    return ExactResult(top, pair, p)


def exact_n_step(chain: Chain, d: int, *, reverse: bool = False) -> Matrix:
    r""":math:`P^d` (or :math:`\tilde P^d`) of the exact chain, ``1 <= d <= 64``, by repeated squaring."""
    if isinstance(d, bool) or not isinstance(d, int) or not 1 <= d <= MAX_EXACT_N:
        raise ValueError(f"d must be an integer in 1..{MAX_EXACT_N}, got {d!r}")
    P = chain.exact
    base = _reversed(P, chain.exact_stationary()) if reverse and chain.k > 2 else [list(r) for r in P]
    k = chain.k

    def mul(a, b):
        return [[sum((a[i][m] * b[m][j] for m in range(k)), Fraction(0)) for j in range(k)] for i in range(k)]

    out = [[Fraction(int(i == j)) for j in range(k)] for i in range(k)]
    while d:
        if d & 1:
            out = mul(out, base)
        base = mul(base, base)
        d >>= 1
    return out


def ratio_at_most_exp(ratio: Fraction, eps: object, *, max_terms: int = 400) -> bool | None:
    r"""Decide :math:`\text{ratio}\le e^{\epsilon}` exactly (``None``: undecided after ``max_terms``)."""
    e = to_fraction(eps, "eps")
    if e < 0:
        raise ValueError(f"eps must be >= 0, got {e}")
    return _at_most_exp(ratio, e, max(8, int(2 * float(e)) + 8), max_terms)[0]
