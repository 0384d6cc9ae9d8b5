r"""Exact rational certificates of leakage (no floating point anywhere).

Every number is taken exactly: a float is the rational value of that double (``0.1`` is
3602879701896397/36028797018963968), a decimal string or ``Decimal`` its exact decimal value.
Audits pass the doubles a release draws with, so the float and the exact audit judge the
same mechanism (README, "How we know it is private").  The leakage ratio is computed in rational arithmetic with
the same O(n) pattern reduction as :mod:`redactopt.judge.leakage`, and the verdict
:math:`\mathcal L\le\epsilon` is decided by comparing the rational worst ratio ``R`` with
rational bounds on :math:`e^\epsilon`:

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

__all__ = ["ExactCertificate", "to_fraction", "exact_leakage_ratio", "certify_exact", "n_step_ratio", "ratio_at_most_exp", "exp_bounds", "MAX_EXACT_N"]

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


def _side_ratios(P: list[list[Fraction]], rows: list[tuple[Fraction, Fraction]]) -> list[Fraction]:
    """All likelihood ratios Pr(.|X_p=0)/Pr(.|X_p=1) of one side's output patterns, exactly."""
    if not rows:
        return [Fraction(1)]
    out: list[Fraction] = []
    U = [[Fraction(1), Fraction(0)], [Fraction(0), Fraction(1)]]
    for k, (q0, q1) in enumerate(rows):
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


def exact_leakage_ratio(alpha: object, beta: object, redact_prob: list, p: int) -> Fraction:
    r"""The exact worst ratio :math:`R=e^{\mathcal L}` (Definition 1) as a fraction.

    ``alpha``, ``beta`` and the entries of ``redact_prob`` may be ints, Fractions, Decimals,
    decimal strings or floats (a float is taken as its exact binary value).  ``p`` is 0-based.
    """
    a, b = to_fraction(alpha, "alpha"), to_fraction(beta, "beta")
    for name, v in (("alpha", a), ("beta", b)):
        if not 0 < v < 1:
            raise ValueError(f"{name} must lie strictly between 0 and 1, got {v}")
    rows = []
    for t, row in enumerate(redact_prob):
        if len(row) != 2:
            raise ValueError(f"redact_prob row {t} must have 2 entries, got {len(row)}")
        r = (to_fraction(row[0], f"redact_prob[{t}][0]"), to_fraction(row[1], f"redact_prob[{t}][1]"))
        if not all(0 <= v <= 1 for v in r):
            raise ValueError(f"redact_prob row {t} entries must lie in [0, 1], got {[str(v) for v in r]}")
        rows.append(r)
    n = len(rows)
    if n < 1:
        raise ValueError("redact_prob must have at least one row")
    if n > MAX_EXACT_N:
        raise ValueError(f"exact rational audits are limited to n <= {MAX_EXACT_N} records, got {n}")
    if not 0 <= p < n:
        raise ValueError(f"p must be a 0-based index in 0..{n - 1}, got {p}")
    if rows[p] != (1, 1):
        raise ValueError(f"redact_prob row {p} (0-based) is the private record and must be [1, 1]")
    P = [[1 - a, a], [b, 1 - b]]
    left = _side_ratios(P, rows[:p][::-1])
    right = _side_ratios(P, rows[p + 1 :])
    return max(max(left) * max(right), 1 / (min(left) * min(right)))


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
    ``ratio`` is R = exp(L) exactly; ``leakage`` its logarithm rounded to a float.
    """

    status: Literal["certified", "violated", "undecided"]
    ratio: Fraction
    leakage: float
    eps: Fraction
    terms: int
    private: tuple[int, ...]


def certify_exact(alpha: object, beta: object, redact_prob: list, private: list[int], eps: object,
                  *, max_terms: int = 400) -> ExactCertificate:
    """Decide exactly whether the mechanism is ``eps``-private about every private record (0-based)."""
    e = to_fraction(eps, "eps")
    if e <= 0:
        raise ValueError(f"eps must be > 0, got {eps}")
    if not private:
        raise ValueError("private must name at least one record")
    R = max(exact_leakage_ratio(alpha, beta, redact_prob, p) for p in private)
    leak = math.log(R.numerator) - math.log(R.denominator)
    terms = max(8, int(2 * float(e)) + 8)
    while True:
        lo, hi = exp_bounds(e, terms)
        if R <= lo:
            status = "certified"
            break
        if R > hi:
            status = "violated"
            break
        if terms >= max_terms:
            status = "undecided"
            break
        terms = min(max_terms, terms * 2)
    return ExactCertificate(status, R, leak, e, terms, tuple(private))  # type: ignore[arg-type]



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


def ratio_at_most_exp(ratio: Fraction, eps: object, *, max_terms: int = 400) -> bool | None:
    r"""Decide :math:`\text{ratio}\le e^{\epsilon}` exactly (``None``: undecided after ``max_terms``)."""
    e = to_fraction(eps, "eps")
    if e < 0:
        raise ValueError(f"eps must be >= 0, got {e}")
    terms = max(8, int(2 * float(e)) + 8)
    while True:
        lo, hi = exp_bounds(e, terms)
        if ratio <= lo:
            return True
        if ratio > hi:
            return False
        if terms >= max_terms:
            return None
        terms = min(max_terms, terms * 2)
