r"""The two-state kernel of the exact leakage: 2x2 prefix products in closed form (binary chains).

For a binary chain (:attr:`~redactopt.model.chain.Chain.binary`: two states, every transition
probability in (0, 1)) the likelihood ratio of a side's pattern is a ratio of two entries of
a 2x2 product, and the extremes over all patterns of a side come from composed Möbius maps of
block starts (:func:`side_extremes`).  Given ``X_p`` the sides are independent, so the leakage
is :math:`\max(\log M_\ell+\log M_r, -\log m_\ell-\log m_r)` with :math:`M_s, m_s` the sides'
largest and smallest ratios (:func:`two_state_leakage`).  A side stops at its first record
published with certainty (``reach``): beyond it nothing changes a ratio.

Every transition probability is positive, so a pattern is in the support iff every record
before it can be redacted and its published value can be published.  The prefix products are
computed in blocks (all blocks advance together in numpy) and renormalised so nothing
underflows.  :mod:`redactopt.judge.leakage` selects this kernel for binary chains; chains on
more states go through :mod:`redactopt.judge.kernelk`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from redactopt.judge.segments import side_reach
from redactopt.model.chain import Chain
from redactopt.model.varying import VaryingChain

__all__ = ["SideExtremes", "side_extremes", "side_pattern_products", "two_state_leakage"]

# --------------------------------------------------------------------------
# prefix products of 2x2 matrices
# --------------------------------------------------------------------------
_BLOCK = 256

Mat = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # entries 00, 01, 10, 11


def _renorm_interval(chain: Chain) -> int:
    """How many steps may pass between renormalisations without underflow.

    One step shrinks the largest entry by at most the smallest entry of ``P`` (the
    rows of ``diag(s) P`` are pre-scaled so that the largest factor is 1).
    """
    return _renorm_every(min(chain.alpha, chain.beta, 1.0 - chain.alpha, 1.0 - chain.beta))


def _renorm_every(smallest: float) -> int:
    """:func:`_renorm_interval` for steps whose smallest entry is ``smallest``."""
    per_step = -math.log10(smallest)
    return int(max(1, min(32, 200.0 / max(per_step, 1e-12))))


def _blocked_steps(steps: np.ndarray, k_max: int, size: int, n_blocks: int) -> Mat:
    """Entries of the steps ``2 .. k_max + 1`` laid out ``[j, b]`` as the side's records ``bB + j + 1``.

    Record ``d`` (distance, 1-based) is followed by step ``d + 1`` (``steps[d]``); the padding
    beyond ``k_max`` repeats the last step (its patterns are closed: any positive numbers do).
    """
    pad = np.empty((n_blocks * size, 4))
    flat = steps[1 : k_max + 1].reshape(-1, 4)
    pad[: flat.shape[0]] = flat
    pad[flat.shape[0]:] = steps[min(k_max, steps.shape[0] - 1)].reshape(4)
    lay = pad.reshape(n_blocks, size, 4).transpose(2, 1, 0)
    return (lay[0], lay[1], lay[2], lay[3])


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


def side_extremes(chain: Chain, q_side: np.ndarray, steps: np.ndarray | None = None) -> SideExtremes:
    r"""The one-sided recursion: extreme pattern ratios of one side of ``p`` (module docstring).

    ``q_side`` holds the side's rows ordered by distance from ``p`` (nearest first; the
    left side reversed — the stationary chain is reversible, so the same ``P`` serves).
    Given :math:`X_p` the two sides are independent, so the leakage is
    :math:`\max(\log M_\ell+\log M_r, -\log m_\ell-\log m_r)` with :math:`M_s, m_s` the
    ``top`` and ``bottom`` ratios of the sides.  Blocked prefix products, O(m).

    ``steps`` (a chain that varies with the step, :mod:`redactopt.model.varying`): the side's
    ``(m, 2, 2)`` step matrices nearest first — ``steps[d - 1]`` leads from the record at distance
    ``d - 1`` (``X_p`` at 0) to the one at ``d``; every entry positive.  The recursion is the same
    with :math:`N_d=\operatorname{diag}(s_d)P_{d+1}` in place of :math:`\operatorname{diag}(s_d)P`
    (docs/mathematics.md, "Chains that vary with the step").  ``None``: every step is ``chain``'s.
    """
    m = q_side.shape[0]
    if m == 0:
        return SideExtremes((1.0, None, None), (1.0, None, None), q_side)
    top = np.maximum(q_side[:, 0], q_side[:, 1])
    blocked = np.flatnonzero(top <= 0.0)
    reach = int(blocked[0]) if blocked.size else m  # distances 1..reach can all be ⊥
    n_patterns = min(reach, m - 1) + 1
    P = chain.transition_matrix if steps is None else steps[0]
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
        if steps is None:
            N = (s0 * P[0, 0], np.multiply(s0, P[0, 1], out=s0), s1 * P[1, 0], np.multiply(s1, P[1, 1], out=s1))
            every = _renorm_interval(chain)
        else:  # record d's scaling times the step to record d + 1, laid out as qb
            Sb = _blocked_steps(steps, k_max, size, n_blocks)
            N = (s0 * Sb[0], s0 * Sb[1], s1 * Sb[2], s1 * Sb[3])
            every = _renorm_every(float(steps[: k_max + 1].min()))
        local = _local_scan(N, every)
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


def side_pattern_products(chain: Chain, q_side: np.ndarray, k_max: int) -> tuple[np.ndarray, np.ndarray]:
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


def two_state_leakage(chain: Chain | VaryingChain, q: np.ndarray, p: int) -> tuple[float, tuple[int, int], float, float, np.ndarray]:
    r"""The exact leakage about ``p`` of a validated ``(n, 2)`` mechanism on a binary chain.

    Returns ``(leakage, pair, left, right, witness)``: the leakage in nats, the ordered pair
    ``(favoured, other)`` of the worst ratio, the left and right factors of its log (signed, in
    the direction favouring ``favoured``), and an output of positive probability attaining it
    (``int8``: a value or -1 for ⊥; records beyond a side's first published one are ⊥ where they
    can be, else 0).  Ties go to ``favoured = 0``.  A :class:`~redactopt.model.varying.VaryingChain`
    (every step entry positive) reads each side through its own steps (:func:`side_extremes`).
    """
    n = q.shape[0]
    if chain.varying:  # per-step matrices, each side only as far as its first row published with certainty
        ql, qr = q[:p][::-1], q[p + 1 :]
        left = side_extremes(chain, ql, chain.side_steps(p, "left", side_reach(ql)))
        right = side_extremes(chain, qr, chain.side_steps(p, "right", side_reach(qr)))
    else:
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
    return max(0.0, float(total)), (favoured, 1 - favoured), float(lv), float(rv), witness
