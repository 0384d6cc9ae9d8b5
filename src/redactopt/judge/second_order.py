r"""The leakage of a local redaction mechanism when the records follow a second-order two-state chain.

A release is designed and verified for a first-order chain.  When the data's order test rejects
that model, the better-fitting *second-order* chain is an alternative under which the same
mechanism may leak more than ε; :func:`second_order_leakage` computes how much
(``docs/mathematics.md`` §10e).

**The chain.**  ``kernel[a, b, c]`` :math:`= \Pr(X_{t+1}=c \mid X_{t-1}=a, X_t=b)`; the pairs
:math:`Z_t = (X_{t-1}, X_t)` form a first-order chain on four states (index ``2a + b``) with
stationary law ``pair_law``.  Two consecutive records published with certainty cut it: given
them, what lies beyond is independent of everything on the other side (in both directions, the
reversed chain being second-order too), so the leakage about :math:`X_p` is that of the
*segment* between the nearest such pairs (or the sequence's ends) around :math:`p`, with the
segment's first pair drawn from ``pair_law``.

**The maximum over outputs.**  With :math:`y_p = \bot`, :math:`\Pr(y, X_p = x) = \sum_{z:\,z_2 = x}
\ell_z(y_{<p}) \, r_z(y_{>p})`, where :math:`\ell_z` is the forward probability of the left part
ending in :math:`Z_p = z` and :math:`r_z` the probability of the right part given :math:`Z_p = z`.
The likelihood ratio is a ratio of two bilinear forms in :math:`(\ell, r)`: for fixed :math:`\ell`
it is linear-fractional in :math:`r`, so its maximum over a finite set of vectors is attained at an
extreme ray of their cone (the mediant inequality), and likewise in :math:`\ell`.  Both cones are
built step by step (each output symbol maps the previous cone's generators), keeping only the
extreme rays — the vertices of the convex hull of the normalised vectors, found with Qhull — so the
maximum over all :math:`3^m` outputs is the maximum over pairs of extreme rays.  Each extreme ray
remembers the output it came from: the maximising output (the *witness*) is then evaluated again in
rational arithmetic on the stored doubles, which gives its ratio exactly.  The witness's ratio is
what is reported: a leakage the mechanism attains under the alternative (exact for that output);
the floating-point hulls only choose which output to check.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from redactopt.judge.exact import ratio_at_most_exp

__all__ = ["SecondOrderChain", "SecondOrderResult", "second_order_leakage", "second_order_segment",
           "output_ratio_exact"]

#: The symbols of an output: the values 0 and 1, and ⊥.
_SYMBOLS = (0, 1, 2)
_BOT = 2


@dataclass(frozen=True)
class SecondOrderChain:
    """A stationary second-order two-state chain: ``kernel[a, b, c]`` and the stationary law of the pairs."""

    kernel: np.ndarray
    pair_law: np.ndarray

    @staticmethod
    def fit(triples: Any) -> "SecondOrderChain":
        r"""The second-order chain of triple counts ``n[a, b, c]`` (Krichevsky–Trofimov:
        :math:`(n_{abc} + 1/2) / (n_{ab\cdot} + 1)`, so that every transition is possible)."""
        n = np.asarray(triples, dtype=float).reshape(2, 2, 2)
        kernel = (n + 0.5) / (n.sum(axis=2, keepdims=True) + 1.0)
        return SecondOrderChain(kernel, _pair_law(kernel))

    @property
    def pair_matrix(self) -> np.ndarray:
        """The 4x4 transition matrix of the pairs: ``Q[(a, b), (b, c)] = kernel[a, b, c]``."""
        Q = np.zeros((4, 4))
        for a in range(2):
            for b in range(2):
                for c in range(2):
                    Q[2 * a + b, 2 * b + c] = self.kernel[a, b, c]
        return Q

    def reversed(self) -> "SecondOrderChain":
        r"""The chain read backwards: :math:`\tilde T[c, b, a] = \mu(a, b) T[a, b, c] / \mu(b, c)`."""
        mu = self.pair_law
        rev = np.zeros((2, 2, 2))
        for a in range(2):
            for b in range(2):
                for c in range(2):
                    rev[c, b, a] = mu[a, b] * self.kernel[a, b, c] / mu[b, c]
        return SecondOrderChain(rev, mu.T.copy())


def _pair_law(kernel: np.ndarray) -> np.ndarray:
    """The stationary law of the pairs (the left eigenvector of the pair matrix for eigenvalue 1)."""
    Q = SecondOrderChain(kernel, np.full((2, 2), 0.25)).pair_matrix
    A = np.vstack([Q.T - np.eye(4), np.ones(4)])
    mu = np.linalg.lstsq(A, np.r_[np.zeros(4), 1.0], rcond=None)[0]
    mu = np.clip(mu, 0.0, None)
    return (mu / mu.sum()).reshape(2, 2)


@dataclass(frozen=True)
class SecondOrderResult:
    """The leakage about one private record under a second-order chain.

    ``leakage`` is the log of ``ratio`` (``math.inf`` when an output is possible under one value of
    :math:`X_p` only), the exact ratio of the witness output (``witness``: the segment's outputs,
    ``2`` for ⊥, from ``start``); ``exceeds`` whether it is proven above ``eps`` (``None``: not
    decided exactly).
    """

    leakage: float
    ratio: Fraction | None
    pair: tuple[int, int]
    start: int
    witness: tuple[int, ...]
    eps: float
    exceeds: bool | None

    def to_dict(self) -> dict[str, Any]:
        return {"leakage": self.leakage if math.isfinite(self.leakage) else None, "pair": list(self.pair),
                "exceeds_eps": self.exceeds, "witness_start": self.start + 1, "witness_length": len(self.witness)}


def second_order_segment(q: np.ndarray, p: int) -> tuple[int, int]:
    """The rows ``[s, e]`` around ``p`` between the nearest pairs of rows published with certainty (kept as
    the segment's ends) or the sequence's ends."""
    pub = ~(np.asarray(q) > 0.0).any(axis=1)
    both = pub[:-1] & pub[1:]  # rows t, t + 1 both published
    left = np.flatnonzero(both[: max(0, p - 1)])
    right = np.flatnonzero(both[p + 1:])
    s = int(left[-1]) if left.size else 0
    e = int(p + 1 + right[0] + 1) if right.size else q.shape[0] - 1
    return s, e


def _emission(q_row: np.ndarray, symbol: int) -> np.ndarray:
    """Pr(y_t = symbol | Z_t = z) for the four pairs z = (a, b): it depends on b = X_t only."""
    b = np.array([0, 1, 0, 1])
    if symbol == _BOT:
        return q_row[b]
    return np.where(b == symbol, 1.0 - q_row[b], 0.0)


def _extreme(points: np.ndarray) -> np.ndarray:
    """Indices of the extreme rays among nonnegative 4-vectors (rows, each summing to 1): the vertices of
    their convex hull, computed in the affine span of the points (Qhull), duplicates dropped."""
    from scipy.spatial import ConvexHull, QhullError

    _, first = np.unique(np.round(points, 14), axis=0, return_index=True)
    first = np.sort(first)
    if first.size <= 4:
        return first
    P = points[first]
    centred = P - P.mean(axis=0)
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    dim = int((s > 1e-12 * max(1.0, float(s[0]))).sum())
    if dim == 0:
        return first[:1]
    X = centred @ vt[:dim].T
    if dim == 1:
        return first[[int(X[:, 0].argmin()), int(X[:, 0].argmax())]]
    try:
        return first[np.sort(ConvexHull(X).vertices)]
    except QhullError:  # a degenerate set Qhull cannot split: keep every point (a superset is exact)
        return first


def _rays(cand: np.ndarray, labels: list) -> tuple[np.ndarray, list]:
    """The extreme rays among candidate vectors (zero vectors, outputs of probability 0, dropped), normalised,
    with their labels (what each came from)."""
    keep = np.flatnonzero(cand.sum(axis=1) > 0)
    cand = cand[keep]
    cand = cand / cand.sum(axis=1, keepdims=True)
    idx = _extreme(cand)
    return cand[idx], [labels[keep[i]] for i in idx]


def _left_cones(Q: np.ndarray, mu: np.ndarray, q: np.ndarray, stops: set[int]) -> dict[int, tuple]:
    """Forward: at each row ``t`` of ``stops`` (>= 1), the extreme rays ``l(y_0..y_t)[z]`` (normalised), and
    the back-pointers to rebuild their outputs: ``(vectors, [(parent, symbol) per step])``."""
    vecs = []
    pairs = [(u, v) for u in _SYMBOLS for v in _SYMBOLS]
    z_a = np.array([0, 0, 1, 1])
    for u, v in pairs:  # rows 0 and 1: Z_1 = (X_0, X_1) from the pair law
        vecs.append(mu.reshape(-1) * _emission(q[0], u)[z_a] * _emission(q[1], v))
    L, first = _rays(np.array(vecs), pairs)
    history = [first]
    out: dict[int, tuple] = {}
    if 1 in stops:
        out[1] = (L, list(history))
    for t in range(2, max(stops) + 1 if stops else 2):
        L, step = _rays(np.vstack([(L @ Q) * _emission(q[t], y) for y in _SYMBOLS]),
                        [(i, y) for y in _SYMBOLS for i in range(L.shape[0])])
        history.append(step)
        if t in stops:
            out[t] = (L, list(history))
    return out


def _right_cones(Q: np.ndarray, q: np.ndarray, stops: set[int]) -> dict[int, tuple]:
    """Backward: at each row ``t`` of ``stops``, the extreme rays ``r(y_{t+1}..y_end)[z]`` given ``Z_t = z``."""
    m = q.shape[0]
    R = np.ones((1, 4)) / 4.0
    history: list[list[tuple[int, int]]] = []
    out: dict[int, tuple] = {}
    if m - 1 in stops:
        out[m - 1] = (R, [])
    for t in range(m - 2, min(stops) - 1 if stops else m - 1, -1):
        R, step = _rays(np.vstack([(R * _emission(q[t + 1], y)) @ Q.T for y in _SYMBOLS]),
                        [(i, y) for y in _SYMBOLS for i in range(R.shape[0])])
        history.append(step)
        if t in stops:
            out[t] = (R, list(history))
    return out


def _rebuild_left(history: list, i: int) -> list[int]:
    out: list[int] = []
    for step in reversed(history[1:]):
        i, y = step[i]
        out.append(y)
    u, v = history[0][i]
    return [u, v] + out[::-1]


def _rebuild_right(history: list, i: int) -> list[int]:
    out: list[int] = []
    for step in reversed(history):
        i, y = step[i]
        out.append(y)
    return out


def _best_pair(L: np.ndarray, R: np.ndarray, pi: np.ndarray) -> tuple[float, int, int, int]:
    """The largest ratio over pairs of extreme rays and directions: ``(ratio, i, j, x)`` (favouring ``X_p = x``)."""
    best = (-1.0, 0, 0, 1)
    for x in (0, 1):
        sx = [z for z in range(4) if z % 2 == x]
        so = [z for z in range(4) if z % 2 != x]
        num = (L[:, sx] @ R[:, sx].T) / pi[x]
        den = (L[:, so] @ R[:, so].T) / pi[1 - x]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.where(num > 0, np.inf, -1.0))
        i, j = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
        if ratio[i, j] > best[0]:
            best = (float(ratio[i, j]), int(i), int(j), x)
    return best


def _stationary_exact(T: list) -> list[list[Fraction]]:
    """The stationary law of the pairs of the rational kernel ``T``, exactly (Gaussian elimination)."""
    Q = [[Fraction(0)] * 4 for _ in range(4)]
    for a in range(2):
        for b in range(2):
            for c in range(2):
                Q[2 * a + b][2 * b + c] = T[a][b][c]
    # mu (Q - I) = 0 with sum(mu) = 1: the transposed system, its last equation replaced by the sum
    A = [[Q[j][i] - (1 if i == j else 0) for j in range(4)] + [Fraction(0)] for i in range(3)]
    A.append([Fraction(1)] * 4 + [Fraction(1)])
    for col in range(4):
        piv = next(r for r in range(col, 4) if A[r][col] != 0)
        A[col], A[piv] = A[piv], A[col]
        A[col] = [v / A[col][col] for v in A[col]]
        for r in range(4):
            if r != col and A[r][col] != 0:
                f = A[r][col]
                A[r] = [v - f * w for v, w in zip(A[r], A[col])]
    mu = [A[i][4] for i in range(4)]
    return [[mu[0], mu[1]], [mu[2], mu[3]]]


def _dyadic(values: list[float]) -> tuple[list[int], int]:
    """Doubles as integers over one power of two: ``values[i] == ints[i] / 2**shift`` exactly."""
    parts = [float(v).as_integer_ratio() for v in values]
    shift = max(d.bit_length() - 1 for _, d in parts)
    return [n << (shift - (d.bit_length() - 1)) for n, d in parts], shift


def output_ratio_exact(chain: SecondOrderChain, q: np.ndarray, p: int, y: list[int], x: int) -> Fraction | None:
    r""":math:`\Pr(y \mid X_p = x) / \Pr(y \mid X_p = 1 - x)` of one output ``y`` of the segment ``q`` (rows
    0..m-1) under the stationary chain of the stored kernel, in exact arithmetic: the kernel's and the
    mechanism's doubles taken exactly (integers over powers of two, which cancel from the ratio), the first
    pair from the kernel's stationary law solved exactly (``None``: the denominator is 0 and the numerator
    is not)."""
    T = [[[Fraction(float(chain.kernel[a, b, c])) for c in range(2)] for b in range(2)] for a in range(2)]
    mu = _stationary_exact(T)
    scale = math.lcm(*(mu[a][b].denominator for a in range(2) for b in range(2)))
    mu_int = [[int(mu[a][b] * scale) for b in range(2)] for a in range(2)]
    t_int, _ = _dyadic([chain.kernel[a, b, c] for a in range(2) for b in range(2) for c in range(2)])

    def emit(t: int) -> list[int]:  # Pr(y_t | X_t = v) for v = 0, 1, over a power of two common to both
        qt = [float(q[t][v]) for v in (0, 1)]
        vals = qt if y[t] == _BOT else [(1.0 - qt[v]) if y[t] == v else 0.0 for v in (0, 1)]
        return _dyadic(vals)[0]

    joint = []
    for val in (0, 1):
        def allowed(t: int, v: int, val: int = val) -> int:
            return int(t != p or v == val)

        e0, e1 = emit(0), emit(1)
        f = {(a, b): mu_int[a][b] * e0[a] * e1[b] * allowed(0, a) * allowed(1, b) for a in range(2) for b in range(2)}
        for t in range(2, len(y)):
            e = emit(t)
            f = {(b, c): sum(f[(a, b)] * t_int[4 * a + 2 * b + c] for a in range(2)) * e[c] * allowed(t, c)
                 for b in range(2) for c in range(2)}
        joint.append(sum(f.values()))
    # every step scaled both values alike (the same powers of two): they cancel from the ratio
    pi = [mu[0][v] + mu[1][v] for v in (0, 1)]
    num, den = joint[x] * pi[1 - x], joint[1 - x] * pi[x]
    if den == 0:
        return None if num > 0 else Fraction(1)
    return Fraction(num) / Fraction(den)


def second_order_leakage(chain: SecondOrderChain, redact_prob: Any, private: list[int], eps: float,
                         ) -> list[SecondOrderResult]:
    """The leakage about each private record (0-based, in ``private``) of the local mechanism
    ``redact_prob`` (``(n, 2)``) under ``chain`` (module docstring); one segment's cones serve every
    private record inside it."""
    q = np.asarray(redact_prob, dtype=float)
    out: dict[int, SecondOrderResult] = {}
    segments: dict[tuple[int, int], list[int]] = {}
    for p in private:
        segments.setdefault(second_order_segment(q, p), []).append(p)
    for (s, e), ps in segments.items():
        seg = q[s:e + 1]
        if seg.shape[0] < 2:
            for p in ps:
                out[p] = SecondOrderResult(0.0, Fraction(1), (1, 0), s, tuple(), eps, False)
            continue
        m = seg.shape[0]
        found = {p: wit for p, wit in zip([p for p in ps if p > s],
                                          _witnesses(chain, seg, [p - s for p in ps if p > s]))}
        first = [p for p in ps if p == s]  # the segment's first row: read the segment backwards
        if first:
            (y, x), = _witnesses(chain.reversed(), seg[::-1], [m - 1])
            found[s] = (y[::-1], x)
        for p in ps:
            y, x = found[p]
            out[p] = _judged(chain, seg, p - s, y, x, eps, s)
    return [out[p] for p in private]


def _judged(chain: SecondOrderChain, seg: np.ndarray, p: int, y: list[int], x: int, eps: float,
            start: int) -> SecondOrderResult:
    """The witness ``y`` (favouring ``X_p = x``) of a segment evaluated exactly, and its verdict against ``eps``."""
    ratio = output_ratio_exact(chain, seg, p, y, x)
    if ratio is None:
        return SecondOrderResult(math.inf, None, (x, 1 - x), start, tuple(y), eps, True)
    leak = math.log(ratio.numerator) - math.log(ratio.denominator) if ratio > 0 else -math.inf
    verdict = ratio_at_most_exp(ratio, eps)
    return SecondOrderResult(leak, ratio, (x, 1 - x), start, tuple(y), eps, None if verdict is None else not verdict)


def _witnesses(chain: SecondOrderChain, q: np.ndarray, ps: list[int]) -> list[tuple[list[int], int]]:
    """The maximising output of a segment (rows 0..m-1) for each private row of ``ps`` (each >= 1), and the
    value it favours."""
    if not ps:
        return []
    Q = chain.pair_matrix
    pi = chain.pair_law.sum(axis=0)
    lefts = _left_cones(Q, chain.pair_law, q, set(ps))
    rights = _right_cones(Q, q, set(ps))
    out = []
    for p in ps:
        (L, lh), (R, rh) = lefts[p], rights[p]
        _, i, j, x = _best_pair(L, R, pi)
        out.append((_rebuild_left(lh, i)[: p + 1] + _rebuild_right(rh, j), x))
    return out
