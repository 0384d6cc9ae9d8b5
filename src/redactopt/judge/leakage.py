r"""Exact leakage (Definition 1) and utility (Definition 2) of local redaction mechanisms.

A local redaction mechanism is an ``(n, 2)`` array ``q`` with
``q[t, x] = Pr(Y_t = ⊥ | X_t = x)``.  Its leakage about the private record ``X_p`` is

.. math::
    \mathcal{L}(X_p \to \mathbf{Y}) = \log \sup_{\mathbf{y}\in\operatorname{supp}(\mathbf{Y}),\,x}
    \frac{\Pr(\mathbf{Y}=\mathbf{y}\mid X_p=x)}{\Pr(\mathbf{Y}=\mathbf{y}\mid X_p=\bar x)} .

**Why O(n) suffices.**  Given ``X_p`` the records left and right of ``p`` are
independent, so the likelihood ratio of an output factorises into a left and a right
ratio, and the supremum (and the infimum) factorise too.  On one side, the first
published record ``Y_{p+k+1} = v`` cuts the dependence on everything farther away
(Markov property), so the ratio of an output depends only on "the k nearest records
are ⊥, the (k+1)-th shows v" or on "all records of the side are ⊥".  With
``M_d = P diag(q_d)`` (records ordered by distance ``d`` from ``p``; the stationary chain
is reversible, so the same ``P`` serves the left side) and ``U_k = M_1 ⋯ M_k``,

.. math::
    r_k(v) = \frac{(U_k P)_{0v}}{(U_k P)_{1v}}, \qquad
    r_{\perp} = \frac{(U_m \mathbf 1)_0}{(U_m \mathbf 1)_1}.

A pattern is in the support iff every record before it can be redacted
(``max_x q_d[x] > 0``) and its published value can be published (``q_{k+1}[v] < 1``):
all transition probabilities are positive, so nothing else can rule an output out.
Probabilities as small as 1e-300 count exactly like large ones (docs/mathematics.md; "support
matters").  The prefix products ``U_k`` are computed in blocks with numpy and
renormalised so nothing underflows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from redactopt._validate import check_private, check_redact_prob
from redactopt.model.chain import MarkovChain

__all__ = [
    "LeakageResult",
    "leakage",
    "max_leakage",
    "leakage_bruteforce",
    "output_log_ratio",
    "log_likelihood_ratios",
    "SideExtremes",
    "side_extremes",
    "side_pattern_products",
    "utility",
    "utility_monte_carlo",
    "MonteCarloUtility",
    "check_mechanism",
]

@dataclass(frozen=True)
class LeakageResult:
    """Exact leakage of a mechanism about one private record.

    Attributes
    ----------
    leakage : float
        :math:`\\mathcal{L}(X_p \\to \\mathbf{Y})` in nats (Definition 1).
    witness : numpy.ndarray of int8
        An output in the support that attains it: 0, 1, or -1 for ⊥; index 0 is
        record 1.  :meth:`witness_output` gives it with ``None`` for ⊥.
    favoured : int
        The value ``x`` of ``X_p`` in the numerator of the worst ratio.
    p : int
        0-based private index.
    left_log_ratio, right_log_ratio : float
        The left and right factors of the worst log-ratio (signed, in the direction
        favouring ``favoured``); they add up to ``leakage``.
    """

    leakage: float
    witness: np.ndarray
    favoured: int
    p: int
    left_log_ratio: float
    right_log_ratio: float

    def witness_output(self) -> list[int | None]:
        """The witness as a list of 0, 1 and ``None`` (⊥), record 1 first."""
        return [None if v < 0 else int(v) for v in self.witness.tolist()]


# --------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------
def check_mechanism(
    redact_prob: object, private: object, name: str = "private"
) -> tuple[np.ndarray, tuple[int, ...]]:
    """Validate an ``(n, 2)`` mechanism and its 0-based private record(s).

    Every private record must be redacted with probability 1 whatever its value:
    publishing it, even rarely, makes the leakage infinite.
    """
    q = check_redact_prob(redact_prob)
    priv = check_private(private, q.shape[0], name)
    for p in priv:
        if not (q[p, 0] == 1.0 and q[p, 1] == 1.0):
            raise ValueError(
                f"redact_prob row {p} (0-based) is the private record and must be [1, 1] "
                f"(always redacted), got {q[p].tolist()}"
            )
    return q, priv


# --------------------------------------------------------------------------
# prefix products of 2x2 matrices
# --------------------------------------------------------------------------
_BLOCK = 256

Mat = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # entries 00, 01, 10, 11


def _renorm_interval(chain: MarkovChain) -> int:
    """How many steps may pass between renormalisations without underflow.

    One step shrinks the largest entry by at most the smallest entry of ``P`` (the
    rows of ``diag(s) P`` are pre-scaled so that the largest factor is 1).
    """
    smallest = min(chain.alpha, chain.beta, 1.0 - chain.alpha, 1.0 - chain.beta)
    per_step = -math.log10(smallest)
    return int(max(1, min(32, 200.0 / max(per_step, 1e-12))))


def _mul(a: Mat, b: Mat) -> Mat:
    return (
        a[0] * b[0] + a[1] * b[2],
        a[0] * b[1] + a[1] * b[3],
        a[2] * b[0] + a[3] * b[2],
        a[2] * b[1] + a[3] * b[3],
    )


def _normalise(a: Mat) -> Mat:
    top = np.maximum(np.maximum(a[0], a[1]), np.maximum(a[2], a[3]))
    return (a[0] / top, a[1] / top, a[2] / top, a[3] / top)


def _blocked(values: np.ndarray, n_blocks: int, fill: float) -> np.ndarray:
    """Lay ``values`` out as a C-contiguous ``(_BLOCK, n_blocks)`` array: column b is block b."""
    padded = np.full(n_blocks * _BLOCK, fill)
    padded[: values.shape[0]] = values
    return np.ascontiguousarray(padded.reshape(n_blocks, _BLOCK).T)


def _local_scan(mats: Mat, every: int) -> np.ndarray:
    """Prefix products inside blocks: ``out[:, j, b] = A_{bB+1} ⋯ A_{bB+j+1}`` (scaled).

    ``mats`` are already laid out by :func:`_blocked`; all blocks advance together,
    so numpy does the arithmetic and Python loops only ``_BLOCK`` times.
    """
    out = np.empty((4,) + mats[0].shape)
    acc: Mat = (mats[0][0], mats[1][0], mats[2][0], mats[3][0])
    out[:, 0] = acc
    for j in range(1, mats[0].shape[0]):
        acc = _mul(acc, (mats[0][j], mats[1][j], mats[2][j], mats[3][j]))
        if j % every == 0:
            acc = _normalise(acc)
        out[:, j] = acc
    return out


def _scan(mats: Mat, every: int, left: Mat) -> Mat:
    """Inclusive prefix products ``left · A_1 ⋯ A_k`` of non-negative 2x2 matrices.

    Each prefix is returned up to a positive factor (renormalised so that nothing
    underflows).  Short sequences are multiplied out in Python; long ones are cut into
    blocks scanned side by side (:func:`_local_scan`), whose totals are scanned
    recursively.
    """
    m = mats[0].shape[0]
    if m <= _BLOCK:
        out = np.empty((4, m))
        acc = tuple(float(v) for v in left)
        rows = np.stack(mats, axis=1).tolist()
        for k in range(m):
            b = rows[k]
            acc = (
                acc[0] * b[0] + acc[1] * b[2],
                acc[0] * b[1] + acc[1] * b[3],
                acc[2] * b[0] + acc[3] * b[2],
                acc[2] * b[1] + acc[3] * b[3],
            )
            top = max(acc)
            acc = (acc[0] / top, acc[1] / top, acc[2] / top, acc[3] / top)
            out[:, k] = acc
        return (out[0], out[1], out[2], out[3])
    n_blocks = -(-m // _BLOCK)
    eye = (1.0, 0.0, 0.0, 1.0)
    local = _local_scan(tuple(_blocked(mats[e], n_blocks, eye[e]) for e in range(4)), every)
    excl = _block_starts(local, left)
    full = _mul(excl, (local[0], local[1], local[2], local[3]))
    return tuple(np.ascontiguousarray(f.T).reshape(-1)[:m] for f in full)  # type: ignore[return-value]


def _block_starts(local: np.ndarray, left: Mat) -> Mat:
    """``left`` times the product of all blocks before block b, as ``(1, n_blocks)`` rows."""
    totals = _normalise((local[0, -1], local[1, -1], local[2, -1], local[3, -1]))
    incl = _scan(totals, 1, left)
    return tuple(  # type: ignore[return-value]
        np.concatenate(([float(left[e])], incl[e][:-1]))[None, :] for e in range(4)
    )


# --------------------------------------------------------------------------
# one side of the private record
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class SideExtremes:
    """Extreme likelihood ratios Pr(.|X_p=0)/Pr(.|X_p=1) of the output patterns of one side.

    A pattern is ``(k, v)``: "the k nearest records are ⊥, the (k+1)-th shows v", or
    ``(None, None)``: "every record of the side is ⊥".  ``top``/``bottom`` hold the
    largest/smallest ratio over the patterns in the support and that pattern; a side with
    no records has ratio 1.  ``q`` is the side's rows, nearest first.
    """

    top: tuple[float, int | None, int | None]
    bottom: tuple[float, int | None, int | None]
    q: np.ndarray


def _mobius(F: Mat, rho: np.ndarray) -> np.ndarray:
    """``(F00 ρ + F01) / (F10 ρ + F11)`` with ``ρ = inf`` mapped to ``F00 / F10``."""
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (F[0] * rho + F[1]) / (F[2] * rho + F[3])
    return np.where(np.isinf(rho), F[0] / F[2], out)


def side_extremes(chain: MarkovChain, q_side: np.ndarray) -> SideExtremes:
    r"""The one-sided recursion: extreme pattern ratios of one side of ``p`` (module docstring).

    ``q_side`` holds the side's rows ordered by distance from ``p`` (nearest first; the
    left side reversed — the stationary chain is reversible, so the same ``P`` serves).
    Given :math:`X_p` the two sides are independent, so the leakage is
    :math:`\max(\log M_\ell+\log M_r, -\log m_\ell-\log m_r)` with :math:`M_s, m_s` the
    ``top`` and ``bottom`` ratios of the sides.  Blocked prefix products, O(m).
    """
    m = q_side.shape[0]
    if m == 0:
        return SideExtremes((1.0, None, None), (1.0, None, None), q_side)
    top = np.maximum(q_side[:, 0], q_side[:, 1])
    blocked = np.flatnonzero(top <= 0.0)
    reach = int(blocked[0]) if blocked.size else m  # distances 1..reach can all be ⊥
    n_patterns = min(reach, m - 1) + 1
    P = chain.transition_matrix
    Pm: Mat = (P[0, 0], P[0, 1], P[1, 0], P[1, 1])
    candidates: list[tuple[float, int | None, int | None]] = []
    # Pattern k = 0: V_0 = P.
    for v in (0, 1):
        if q_side[0, v] < 1.0:
            candidates.append((float(P[0, v] / P[1, v]), 0, v))
    # Patterns k >= 1: V_k = P N_1 ⋯ N_k with N_d = diag(s_d) P, s_d = q_d / max(q_d).
    k_max = n_patterns - 1
    last_V: Mat = Pm
    if k_max:
        # about sqrt(k) blocks of about sqrt(k) records each (at most _BLOCK)
        size = min(_BLOCK, max(1, math.isqrt(k_max)))
        n_blocks = -(-k_max // size)
        # One transposing copy lays records 1..k_max+1 out block by block: qb[v, j, b]
        # is record bB+j (0-based distance index) and qb[v, B, b] the one after the block.
        padded = np.ones((n_blocks * size + 1, 2))
        padded[: k_max + 1] = q_side[: k_max + 1]
        qb = np.empty((2, size + 1, n_blocks))
        qb[:, :size] = padded[:-1].reshape(n_blocks, size, 2).transpose(2, 1, 0)
        qb[:, size] = padded[size::size].T
        # pattern k = bB+j+1 publishes record bB+j+1, the next one in qb
        closed = qb[:, 1:] >= 1.0
        if k_max < n_blocks * size:  # record k_max ends the scan; it may be unredactable
            qb[:, k_max % size, k_max // size] = 1.0
        cur = qb[:, :size]
        scale = np.maximum(cur[0], cur[1])  # > 0: divide (not multiply by 1/scale: subnormals)
        s0 = cur[0] / scale
        s1 = np.divide(cur[1], scale, out=scale)
        N = (s0 * P[0, 0], np.multiply(s0, P[0, 1], out=s0), s1 * P[1, 0], np.multiply(s1, P[1, 1], out=s1))
        local = _local_scan(N, _renorm_interval(chain))
        del N, s0, s1
        F = _block_starts(local, Pm)
        Fb = (F[0][0], F[1][0], F[2][0], F[3][0])
        b_last, j_last = divmod(k_max - 1, size)
        last_V = _mul(
            (Fb[0][b_last], Fb[1][b_last], Fb[2][b_last], Fb[3][b_last]),
            tuple(float(local[e, j_last, b_last]) for e in range(4)),  # type: ignore[arg-type]
        )
        for v in (0, 1):
            # rho = row 0 over row 1 of column v, written over local[v] (no longer needed).  A row
            # scaled by a subnormal q (5e-324) can make the quotient overflow to inf: that is the
            # limit _mobius maps to F00/F10, off by a relative 1e-308 at most, so not a warning.
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                rho = np.divide(local[v], local[2 + v], out=local[v])
            np.copyto(rho, np.nan, where=closed[v])
            hi = np.fmax.reduce(rho, axis=0)
            lo = np.fmin.reduce(rho, axis=0)
            g_hi, g_lo = _mobius(Fb, hi), _mobius(Fb, lo)
            for blk, pick in ((np.fmax(g_hi, g_lo), np.nanargmax), (np.fmin(g_hi, g_lo), np.nanargmin)):
                if np.all(np.isnan(blk)):
                    continue
                b = int(pick(blk))
                exact = _mobius((Fb[0][b], Fb[1][b], Fb[2][b], Fb[3][b]), rho[:, b])
                j = int(pick(exact))
                candidates.append((float(exact[j]), b * size + j + 1, v))
    if reach == m:
        sm = q_side[m - 1] / top[m - 1]
        num = last_V[0] * sm[0] + last_V[1] * sm[1]
        den = last_V[2] * sm[0] + last_V[3] * sm[1]
        candidates.append((float(num / den), None, None))
    hi_c = max(candidates, key=lambda c: c[0])
    lo_c = min(candidates, key=lambda c: c[0])
    return SideExtremes(hi_c, lo_c, q_side)


def side_pattern_products(chain: MarkovChain, q_side: np.ndarray, k_max: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Per-pattern path products of one side, for optimisers that need every pattern's terms.

    Returns ``(F, s)``: ``F[k]`` (``k = 0..k_max``) is
    :math:`P\,\mathrm{diag}(q_1)P\cdots\mathrm{diag}(q_k)P` divided by the scales
    :math:`s_1\cdots s_k` (``s[k-1]`` is the largest entry before step ``k``'s
    normalisation), so the pattern "the ``k`` nearest are ⊥, record ``k+1`` shows ``v``" has
    likelihood ratio ``F[k, 0, v] / F[k, 1, v]`` and the all-⊥ pattern of a side of ``m``
    records ``(F[m-1] q_m)_0 / (F[m-1] q_m)_1``.  Same recursion as :func:`side_extremes`,
    kept per pattern (support is the caller's business); O(k_max).
    """
    P = chain.transition_matrix
    F = np.empty((k_max + 1, 2, 2))
    s = np.empty(k_max)
    p00, p01, p10, p11 = (float(v) for v in P.ravel())
    f = [p00, p01, p10, p11]
    F[0] = P
    rows = np.asarray(q_side[:k_max], dtype=float).tolist()
    for k in range(k_max):
        q0, q1 = rows[k]
        a0, a1, b0, b1 = f[0] * q0, f[1] * q1, f[2] * q0, f[3] * q1
        g = [a0 * p00 + a1 * p10, a0 * p01 + a1 * p11, b0 * p00 + b1 * p10, b0 * p01 + b1 * p11]
        top = max(g)
        f = [g[0] / top, g[1] / top, g[2] / top, g[3] / top]
        s[k] = top
        F[k + 1] = ((f[0], f[1]), (f[2], f[3]))
    return F, s


def _side_extreme(side: SideExtremes, favoured: int) -> tuple[float, int | None, int | None]:
    """Largest log ratio favouring ``X_p = favoured`` and its pattern (k, v); k=None: all ⊥."""
    if favoured == 0:
        ratio, k, v = side.top
        return math.log(ratio), k, v
    ratio, k, v = side.bottom
    return -math.log(ratio), k, v


def _side_output(q_side: np.ndarray, k: int | None, v: int | None) -> np.ndarray:
    """An output of one side (ordered by distance) realising pattern (k, v); -1 is ⊥.

    Records beyond the first published one are filled with any value in their
    support: ⊥ where it can occur, else 0 (such a record is never redacted).
    """
    out = np.where(np.maximum(q_side[:, 0], q_side[:, 1]) > 0.0, -1, 0).astype(np.int8)
    if k is None:
        return out
    out[:k] = -1
    out[k] = v
    return out


def leakage(chain: MarkovChain, redact_prob: object, p: int) -> LeakageResult:
    r"""Exact leakage :math:`\mathcal{L}(X_p\to\mathbf{Y})` (Definition 1) and a witness, in O(n).

    Parameters
    ----------
    chain : MarkovChain
    redact_prob : array_like, shape (n, 2)
        ``redact_prob[t, x] = Pr(Y_t = ⊥ | X_t = x)``; row ``p`` must be ``[1, 1]``.
    p : int
        0-based index of the private record.

    Returns
    -------
    LeakageResult
        The leakage in nats and an output of positive probability that attains it.

    Notes
    -----
    See the module docstring for the reduction to 2(n-1)+2 output patterns.  The
    result agrees with :func:`leakage_bruteforce` (all 3^n outputs) to ~1e-12
    (``tests/test_leakage.py``).
    """
    q, (p,) = check_mechanism(redact_prob, p, "p")
    n = q.shape[0]
    left = side_extremes(chain, q[:p][::-1])
    right = side_extremes(chain, q[p + 1 :])
    best = None
    for favoured in (0, 1):
        lv, lk, lvv = _side_extreme(left, favoured)
        rv, rk, rvv = _side_extreme(right, favoured)
        if best is None or lv + rv > best[0]:
            best = (lv + rv, favoured, (lv, lk, lvv), (rv, rk, rvv))
    assert best is not None
    total, favoured, (lv, lk, lvv), (rv, rk, rvv) = best
    witness = np.empty(n, dtype=np.int8)
    witness[:p] = _side_output(left.q, lk, lvv)[::-1]
    witness[p] = -1
    witness[p + 1 :] = _side_output(right.q, rk, rvv)
    return LeakageResult(
        leakage=max(0.0, float(total)),
        witness=witness,
        favoured=favoured,
        p=p,
        left_log_ratio=float(lv),
        right_log_ratio=float(rv),
    )


def max_leakage(chain: MarkovChain, redact_prob: object, private: object) -> LeakageResult:
    """The largest exact leakage over several private records (each checked on its own).

    ``private`` holds 0-based indices; every private row must be ``[1, 1]``.
    """
    q, priv = check_mechanism(redact_prob, private)
    results = [leakage(chain, q, p) for p in priv]
    return max(results, key=lambda r: r.leakage)


# --------------------------------------------------------------------------
# independent references
# --------------------------------------------------------------------------
def _emission(q_row: np.ndarray) -> np.ndarray:
    """e[y, x] = Pr(Y_t = y | X_t = x) for y in (0, 1, ⊥)."""
    return np.array(
        [[1.0 - q_row[0], 0.0], [0.0, 1.0 - q_row[1]], [q_row[0], q_row[1]]]
    )


def leakage_bruteforce(chain: MarkovChain, redact_prob: object, p: int) -> LeakageResult:
    """Reference leakage by enumerating all ``3^n`` outputs (n <= 12).

    Computes :math:`\\Pr(\\mathbf{Y}=\\mathbf{y}, X_p=x)` for every output with a forward pass
    over the whole output tree, keeps the outputs of positive probability and takes
    the largest absolute log-ratio.  It shares no code with :func:`leakage`.
    """
    q, (p,) = check_mechanism(redact_prob, p, "p")
    n = q.shape[0]
    if n > 12:
        raise ValueError(f"leakage_bruteforce enumerates 3^n outputs; n must be <= 12, got {n}")
    pi = chain.stationary
    P = chain.transition_matrix
    # F[y_prefix, x_p, x_t]
    e = _emission(q[0])
    F = np.einsum("yx,x->yx", e, pi)[:, None, :] * np.ones((1, 2, 1))
    if p == 0:
        F = F * np.eye(2)[None, :, :]
    for t in range(1, n):
        moved = F @ P  # (Y, xp, x_t)
        e = _emission(q[t])  # (3, x)
        F = (moved[:, None, :, :] * e[None, :, None, :]).reshape(-1, 2, 2)
        if t == p:
            F = F * np.eye(2)[None, :, :]
    joint = F.sum(axis=2)  # Pr(y, X_p = x)
    cond = joint / pi[None, :]
    support = joint.sum(axis=1) > 0.0
    idx = np.flatnonzero(support)
    with np.errstate(divide="ignore"):
        logr = np.log(cond[idx, 0]) - np.log(cond[idx, 1])
    j = int(np.argmax(np.abs(logr)))
    code = int(idx[j])
    digits = []
    for _ in range(n):
        digits.append(code % 3)
        code //= 3
    witness = np.array([-1 if d == 2 else d for d in reversed(digits)], dtype=np.int8)
    return LeakageResult(
        leakage=float(abs(logr[j])),
        witness=witness,
        favoured=0 if logr[j] >= 0 else 1,
        p=p,
        left_log_ratio=math.nan,
        right_log_ratio=math.nan,
    )


def log_likelihood_ratios(chain: MarkovChain, redact_prob: object, p: int, outputs: object) -> np.ndarray:
    r""":math:`\log\Pr(\mathbf Y=\mathbf y\mid X_p=0)/\Pr(\mathbf Y=\mathbf y\mid X_p=1)` for each row of ``outputs``.

    A forward pass over the records for all outputs at once (normalised at every step),
    independent of the pattern reduction of :func:`leakage`, which it re-checks.  ``outputs``
    is an ``(S, n)`` integer array with -1 for ⊥ (0-based ``p``).  An output of probability
    0 under one value of :math:`X_p` gets ``±inf``; under both, ``nan``.
    """
    q, (p,) = check_mechanism(redact_prob, p, "p")
    y = np.asarray(outputs)
    S, n = y.shape
    if n != q.shape[0]:
        raise ValueError(f"outputs must have {q.shape[0]} columns, got {n}")
    P = chain.transition_matrix
    logs = np.zeros((2, S))
    vec = np.broadcast_to(chain.stationary, (2, S, 2)).copy()  # [hypothesis, output, state]
    states = np.arange(2)[None, :]
    for t in range(n):
        if t:
            vec = vec @ P
        yt = y[:, t]
        em = np.where(yt[:, None] == -1, q[t][None, :], (1.0 - q[t][None, :]) * (states == yt[:, None]))
        vec = vec * em[None, :, :]
        if t == p:
            vec[0, :, 1] = 0.0
            vec[1, :, 0] = 0.0
        s = vec.sum(axis=2)
        with np.errstate(divide="ignore"):
            logs += np.log(s)
        vec = vec / np.where(s > 0.0, s, 1.0)[:, :, None]
    pi = chain.stationary
    with np.errstate(invalid="ignore"):
        return logs[0] - logs[1] - math.log(pi[0]) + math.log(pi[1])


def output_log_ratio(chain: MarkovChain, redact_prob: object, p: int, output: object) -> float:
    """:func:`log_likelihood_ratios` of one output; ``ValueError`` when it has probability 0.

    ``output`` holds 0, 1 or ``None`` (⊥) per record, index 0 first; a numpy array may use
    -1 for ⊥.
    """
    q, (p,) = check_mechanism(redact_prob, p, "p")
    y = []
    for t, v in enumerate(list(output)):  # type: ignore[call-overload]
        if v is None or (not isinstance(v, bool) and v == -1):
            y.append(-1)
        elif not isinstance(v, bool) and v in (0, 1):
            y.append(int(v))
        else:
            raise ValueError(f"output entries must be 0, 1 or None, got {v!r} at index {t}")
    if len(y) != q.shape[0]:
        raise ValueError(f"output must have {q.shape[0]} entries, got {len(y)}")
    r = float(log_likelihood_ratios(chain, q, p, np.array([y], dtype=np.int8))[0])
    if not math.isfinite(r):
        raise ValueError("output has probability 0 under the mechanism")
    return r


# --------------------------------------------------------------------------
# utility (Definition 2)
# --------------------------------------------------------------------------
def utility(chain: MarkovChain, redact_prob: object) -> float:
    r"""Exact utility :math:`\nu = \frac1n \mathbb{E}\sum_t \mathbb 1(Y_t = X_t)` (Definition 2).

    With stationary marginals :math:`\pi`, :math:`\nu = \frac1n\sum_t\sum_x \pi_x (1-q_t[x])`.
    """
    q = check_redact_prob(redact_prob)
    return float(((1.0 - q) @ chain.stationary).mean())


@dataclass(frozen=True)
class MonteCarloUtility:
    """A Monte-Carlo estimate of the utility with a normal-approximation interval."""

    estimate: float
    std_error: float
    low: float
    high: float
    samples: int
    confidence: float


def sample_chains(chain: MarkovChain, n: int, samples: int, rng: np.random.Generator) -> np.ndarray:
    """Draw ``samples`` stationary sequences of length ``n`` as a ``(samples, n)`` uint8 array."""
    x = np.empty((samples, n), dtype=np.uint8)
    x[:, 0] = rng.random(samples) < chain.stationary[1]
    for t in range(1, n):
        u = rng.random(samples)
        prev = x[:, t - 1]
        x[:, t] = np.where(prev == 1, u >= chain.beta, u < chain.alpha)
    return x


def utility_monte_carlo(
    chain: MarkovChain,
    redact_prob: object,
    *,
    samples: int = 10_000,
    rng: np.random.Generator | None = None,
    confidence: float = 0.99,
) -> MonteCarloUtility:
    """Monte-Carlo estimate of the utility (Definition 2) by sampling chains and redactions.

    ``rng`` is injected (a fresh ``numpy.random.default_rng()`` when omitted).
    """
    q = check_redact_prob(redact_prob)
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 2:
        raise ValueError(f"samples must be an integer >= 2, got {samples!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    rng = np.random.default_rng() if rng is None else rng
    n = q.shape[0]
    x = sample_chains(chain, n, samples, rng)
    pr_redact = np.where(x == 1, q[:, 1][None, :], q[:, 0][None, :])
    published = rng.random(x.shape) >= pr_redact
    per_sample = published.mean(axis=1)
    est = float(per_sample.mean())
    se = float(per_sample.std(ddof=1) / math.sqrt(samples))
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    return MonteCarloUtility(est, se, est - z * se, est + z * se, samples, confidence)
