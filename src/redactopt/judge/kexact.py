r"""Exact rational leakage of local redaction on k-state chains (no floating point anywhere).

The k-state counterpart of :mod:`redactopt.judge.exact`, written independently of the float
evaluator :mod:`redactopt.judge.kleakage` (plain lists of :class:`fractions.Fraction`, one
record at a time, no blocks, no scaling).  The chain is the exact stochastic matrix a
:class:`~redactopt.model.kchain.KChain` stands for (:meth:`KChain.exact_transition`), its
stationary law is computed exactly and the left side runs on the exactly time-reversed chain
:math:`\tilde P_{xy}=\pi_yP_{yx}/\pi_x`; a mechanism's doubles are taken as their exact binary
values (``0.1`` is 3602879701896397/36028797018963968), so the float and the exact audit judge
the same mechanism.

Definition 1 generalised: :math:`\mathcal L=\log R`,

.. math:: R=\max_{x\ne x'}\ \max_{\mathbf y:\ \Pr(\mathbf y\mid x)+\Pr(\mathbf y\mid x')>0}
          \frac{\Pr(\mathbf y\mid X_p=x)}{\Pr(\mathbf y\mid X_p=x')}\quad(\text{infinite when the denominator is }0),

by the same reduction as the float evaluator (docs/mathematics.md, "k-state chains"): per side and
ordered pair the largest ratio over the patterns "``j`` nearest ⊥, then ``v``" and "all ⊥", and
:math:`R=\max_{x\ne x'}A_\ell(x,x')A_r(x,x')`.  The verdict :math:`\mathcal L\le\epsilon` compares
``R`` with rational bounds on :math:`e^\epsilon` (:func:`redactopt.judge.exact.ratio_at_most_exp`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from redactopt._validate import check_index, check_private
from redactopt.judge.exact import MAX_EXACT_N, ratio_at_most_exp, to_fraction
from redactopt.model.kchain import KChain

__all__ = ["KExactResult", "KExactCertificate", "exact_kleakage", "certify_kexact", "exact_kleakage_bruteforce",
           "exact_kn_step"]


@dataclass(frozen=True)
class KExactResult:
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


@dataclass(frozen=True)
class KExactCertificate:
    """Verdict of an exact k-state audit: ``certified`` (L <= eps proven), ``violated`` or ``undecided``."""

    status: Literal["certified", "violated", "undecided"]
    ratio: Fraction | None
    leakage: float
    eps: Fraction
    pair: tuple[int, int]
    private: int


def _rows(chain: KChain, redact_prob: object) -> list[list[Fraction]]:
    rows = []
    for t, row in enumerate(redact_prob):  # type: ignore[attr-defined]
        if isinstance(row, (str, bytes)) or not hasattr(row, "__iter__"):
            raise ValueError(f"redact_prob must be n rows of {chain.k} numbers; row {t} is {row!r}")
        row = list(row)
        if len(row) != chain.k:
            raise ValueError(f"redact_prob row {t} must have {chain.k} entries, got {len(row)}")
        r = [to_fraction(v, f"redact_prob[{t}][{x}]") for x, v in enumerate(row)]
        if not all(0 <= v <= 1 for v in r):
            raise ValueError(f"redact_prob row {t} entries must lie in [0, 1], got {[str(v) for v in r]}")
        rows.append(r)
    if not rows:
        raise ValueError("redact_prob must have at least one row")
    return rows


def _reversed(P: tuple[tuple[Fraction, ...], ...], pi: tuple[Fraction, ...]) -> list[list[Fraction]]:
    k = len(P)
    return [[pi[y] * P[y][x] / pi[x] for y in range(k)] for x in range(k)]


def _better(a: Fraction | None, b: Fraction | None) -> bool:
    """Whether ratio ``a`` exceeds ``b`` (``None`` is infinite; ``b`` may be -1 for 'none yet')."""
    if b is None:
        return False
    if a is None:
        return True
    return a > b


def _side_best(P: list[list[Fraction]] | tuple, rows: list[list[Fraction]]) -> list[list[Fraction | None]]:
    """Largest ratio of one side's patterns for every ordered pair (``None`` infinite, 1 on the diagonal).

    ``rows`` are the side's records by distance (nearest first).  Pattern vectors are the
    columns of :math:`A_jP` with :math:`A_0=I`, :math:`A_{j+1}=A_jP\\,\\mathrm{diag}(q_{j+1})`.
    """
    k = len(P)
    best: list[list[Fraction | None]] = [[Fraction(-1)] * k for _ in range(k)]

    def consider(vec: list[Fraction]) -> None:
        for x in range(k):
            for y in range(k):
                if x == y or vec[x] == 0:
                    continue  # 0/positive is ratio 0 and 0/0 says nothing: neither can be the max (>= 1 exists)
                r = None if vec[y] == 0 else vec[x] / vec[y]
                if _better(r, best[x][y]):
                    best[x][y] = r

    A = [[Fraction(int(x == y)) for y in range(k)] for x in range(k)]
    for q in rows:
        AP = [[sum((A[x][z] * P[z][v] for z in range(k)), Fraction(0)) for v in range(k)] for x in range(k)]
        for v in range(k):
            if q[v] < 1:
                consider([AP[x][v] for x in range(k)])
        A = [[AP[x][v] * q[v] for v in range(k)] for x in range(k)]
    if rows:
        consider([sum(A[x], Fraction(0)) for x in range(k)])
    else:
        consider([Fraction(1)] * k)
    for x in range(k):
        best[x][x] = Fraction(1)
    return best


def exact_kleakage(chain: KChain, redact_prob: object, p: int) -> KExactResult:
    r"""The exact worst ratio :math:`R=e^{\mathcal L}` about the 0-based private record ``p``.

    ``redact_prob`` is ``n`` rows of ``k`` numbers (ints, Fractions, Decimals, decimal strings or
    floats taken exactly), row ``p`` all ones, ``n <=`` :data:`~redactopt.judge.exact.MAX_EXACT_N`.
    Returns the ratio (``None``: infinite) and the ordered pair ``(x, x')`` attaining it.
    """
    if not isinstance(chain, KChain):
        raise TypeError(f"chain must be a KChain, got {type(chain).__name__}")
    rows = _rows(chain, redact_prob)
    n = len(rows)
    if n > MAX_EXACT_N:
        raise ValueError(f"exact rational audits are limited to n <= {MAX_EXACT_N} records, got {n}")
    p = check_index(p, n, "p")
    if any(v != 1 for v in rows[p]):
        raise ValueError(f"redact_prob row {p} (0-based) is the private record and must be all ones")
    P = chain.exact_transition()
    pi = chain.exact_stationary()
    left = _side_best(_reversed(P, pi), rows[:p][::-1])
    right = _side_best(P, rows[p + 1 :])
    k = chain.k
    top: Fraction | None = Fraction(-1)
    pair = (0, 1)
    for x in range(k):
        for y in range(k):
            if x == y:
                continue
            a, b = left[x][y], right[x][y]
            r = None if a is None or b is None else a * b
            if _better(r, top):
                top, pair = r, (x, y)
    return KExactResult(top, pair, p)


def certify_kexact(chain: KChain, redact_prob: object, private: object, eps: object, *,
                   max_terms: int = 400) -> KExactCertificate:
    """Decide exactly whether the mechanism is ``eps``-private about every private record (0-based)."""
    e = to_fraction(eps, "eps")
    if e <= 0:
        raise ValueError(f"eps must be > 0, got {eps}")
    priv = check_private(private, len(_rows(chain, redact_prob)))
    results = [exact_kleakage(chain, redact_prob, p) for p in priv]
    worst = max(results, key=lambda r: math.inf if r.ratio is None else r.ratio)
    if worst.ratio is None:
        status = "violated"
    else:
        ok = ratio_at_most_exp(worst.ratio, e, max_terms=max_terms)
        status = "undecided" if ok is None else ("certified" if ok else "violated")
    return KExactCertificate(status, worst.ratio, worst.leakage, e, worst.pair, worst.p)  # type: ignore[arg-type]


def exact_kleakage_bruteforce(chain: KChain, redact_prob: object, p: int) -> KExactResult:
    r"""Reference: enumerate all :math:`(k+1)^n` outputs in rational arithmetic (tiny ``n`` only).

    Forward pass of :math:`\Pr(\mathbf y, X_p=x)` over the output tree from the exact stationary
    law with the forward chain only (no patterns, no reversed chain).
    """
    rows = _rows(chain, redact_prob)
    n, k = len(rows), chain.k
    if (k + 1) ** n > 200_000:
        raise ValueError(f"exact_kleakage_bruteforce enumerates (k+1)^n = {(k + 1) ** n} outputs; at most 200000")
    P, pi = chain.exact_transition(), chain.exact_stationary()
    # states: output tuple -> table[x_p][x_t] of joint probabilities
    zero = Fraction(0)
    frontier: dict[tuple, list[list[Fraction]]] = {(): [[pi[z] for z in range(k)] for _ in range(k)]}
    for t in range(n):
        nxt: dict[tuple, list[list[Fraction]]] = {}
        for out, tab in frontier.items():
            if t:
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
    for tab in frontier.values():
        cond = [sum(tab[h], zero) / pi[h] for h in range(k)]
        for x in range(k):
            for y in range(k):
                if x == y or cond[x] == 0:
                    continue
                r = None if cond[y] == 0 else cond[x] / cond[y]
                if _better(r, top):
                    top, pair = r, (x, y)
    return KExactResult(top, pair, p)


def exact_kn_step(chain: KChain, d: int, *, reverse: bool = False) -> list[list[Fraction]]:
    r""":math:`P^d` (or :math:`\tilde P^d`) of the exact chain, ``1 <= d <= 64``, by repeated squaring."""
    if isinstance(d, bool) or not isinstance(d, int) or not 1 <= d <= MAX_EXACT_N:
        raise ValueError(f"d must be an integer in 1..{MAX_EXACT_N}, got {d!r}")
    P = chain.exact_transition()
    base = _reversed(P, chain.exact_stationary()) if reverse else [list(r) for r in P]
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
