r"""The matrix kernel of the exact leakage: k x k prefix products (chains that are not binary).

On a chain with ``k`` states the leakage about :math:`X_p` is the largest log-likelihood ratio
any output allows between two values of :math:`X_p`; infinite when an output has positive
probability under ``x`` and none under ``x'`` (outputs impossible under both say nothing about
that pair).

**Why it is O(n k³)** (docs/mathematics.md, "k-state chains").  Given :math:`X_p` the two sides
are independent, so :math:`\Pr(\mathbf y\mid x)=L_x(\mathbf y_\ell)R_x(\mathbf y_r)` and, for a
fixed ordered pair :math:`(x,x')`, the log-ratio of an output is a left term plus a right term.
Any left output combines with any right output, so

.. math:: \mathcal L = \max_{x\ne x'}\big[A_\ell(x,x') + A_r(x,x')\big],\qquad
          A_s(x,x')=\max_{\text{patterns of side } s}\log\frac{\Pr(\cdot\mid x)}{\Pr(\cdot\mid x')} .

(The maxima over pairs and sides do *not* separate: the worst pair is chosen once for both
sides.)  A published record reveals its value, so on one side only "the ``j`` nearest are ⊥,
the next shows ``v``" and "all ⊥" matter: their likelihood vectors over :math:`x` are

.. math:: \Pr(j\ \perp\text{, then } v\mid x) \propto (P D_1 P D_2\cdots P D_j P)_{xv},\qquad
          \Pr(\text{all }\perp\mid x) = (P D_1\cdots P D_m\mathbf 1)_x,

with :math:`D_d=\operatorname{diag}(q_d)` for the record at distance ``d`` and, on the left,
:math:`P` replaced by the time-reversed chain :math:`\tilde P`.  A pattern is in the support
iff its vector is non-zero and its published value can be published (:math:`q_{j+1}[v]<1`);
a supported vector with zero and non-zero entries makes the leakage infinite (every value
with a positive entry has some continuation on the other side).  A side stops at its first
record published with certainty (:func:`side_pairs`): no pattern reaches beyond it.

**Numerics.**  The prefix products are computed in blocks (all blocks advance together in
numpy; the block starts are scanned once) with each row of the running product scaled to
its own maximum, so ratios between rows are exact up to rounding even when they exceed the
float range.  The blocked path is used while every positive number it forms is at least
:data:`TINY` relative to its scale (then no product can underflow or lose precision in
subnormals, and a zero is a true zero: the support is decided exactly); otherwise the side is
evaluated by a sequential recursion in log space (:func:`side_pairs_logspace`), slower but
free of underflow.  Both are checked against enumeration of all :math:`(k+1)^n` outputs and
rational arithmetic (:mod:`redactopt.judge.exact`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from redactopt.judge.segments import first_published, side_reach
from redactopt.model.chain import Chain

__all__ = ["TINY", "SidePairs", "side_pairs", "side_pairs_logspace", "side_output", "continuation",
           "matrix_leakage"]

#: Smallest positive number (relative to its row's or block's scale) the blocked evaluator
#: accepts; products of three such numbers stay above the smallest normal double.
TINY = 1e-100


@dataclass(frozen=True)
class SidePairs:
    r"""One side's largest log-ratio for every ordered pair of private values, and its patterns.

    ``best[x, x']`` is :math:`A(x,x')` (module docstring; 0 on the diagonal, ``+inf`` when a
    supported pattern is possible under ``x`` only).  ``arg_j[x, x']``/``arg_v[x, x']`` name the
    pattern attaining it: ``j`` nearest records ⊥, record ``j + 1`` shows ``v``; ``arg_j = -1``
    is "all ⊥" (or an empty side).  ``q`` and ``P`` are the side's rows (by distance) and matrix.
    """

    best: np.ndarray
    arg_j: np.ndarray
    arg_v: np.ndarray
    q: np.ndarray
    P: np.ndarray


# --------------------------------------------------------------------------
# one side: blocked prefix products
# --------------------------------------------------------------------------
def _empty_side(P: np.ndarray, q: np.ndarray) -> SidePairs:
    k = P.shape[-1]
    return SidePairs(np.zeros((k, k)), np.full((k, k), -1), np.zeros((k, k), dtype=int), q, P)


def _has_tiny(a: np.ndarray) -> bool:
    return bool(np.any((a > 0.0) & (a < TINY)))


def _block_size(m: int) -> int:
    """Records per block: about ``sqrt(m) / 2`` (at least 4, at most 512); the blocks advance together."""
    return int(min(m, max(4, min(512, math.isqrt(m) // 2))))


def _renorm(H: np.ndarray) -> bool:
    """Scale each block (last axis) of ``H`` by its largest entry; whether a tiny number appeared."""
    top = H.max(axis=(0, 1))
    H /= np.where(top > 0.0, top, 1.0)
    return _has_tiny(H)


def _side_blocked(P: np.ndarray, Q: np.ndarray) -> SidePairs | None:
    r""":func:`side_pairs` by blocks; ``None`` when a number would leave the safe range (:data:`TINY`).

    The side's ``m`` records are cut into ``nb`` blocks of ``B``; all blocks advance together
    (arrays are laid out ``[x, y, block]`` so numpy's inner loops run over the blocks).

    1. Each block's product :math:`(PD)\cdots(PD)` (scaled by a common factor per block).
    2. The block starts :math:`F_b` (the product of all earlier blocks), each row ``x`` scaled to
       its maximum with its logarithm kept in ``sig[b, x]``.
    3. From :math:`H=F_b`, every record ``i`` of every block gives the pattern vectors
       :math:`G=HP` (columns ``v``, rows ``x``), then :math:`H\leftarrow G D_i`; a running maximum
       of :math:`G_{xv}/G_{x'v}` per block and ordered pair (``fmax`` skips 0/0: a pattern
       impossible under both values says nothing about that pair).  A common factor per block
       cancels in every ratio; the row scales ``sig`` are added back in logs once per block.

    The record of the winning pattern is found by replaying only the winning blocks.
    """
    m, k = Q.shape
    if _has_tiny(P) or _has_tiny(Q):
        return None
    B = _block_size(m)
    nb = -(-m // B)
    padded = np.ones((nb * B, k))  # padding: always ⊥ (P is stochastic: row sums carry through)
    padded[:m] = Q
    qb = np.ascontiguousarray(padded.reshape(nb, B, k).transpose(1, 2, 0))  # qb[i, v, b] = record bB+i
    # mask[i, v, b] = 1 where "records before bB+i are ⊥, record bB+i shows v" can happen
    mask = (qb < 1.0).astype(float)
    mask[(np.arange(nb * B).reshape(nb, B).T >= m)[:, None, :].repeat(k, axis=1)] = 0.0
    step = _stepper(P, B, nb)
    # 1. block products L[x, y, b]
    L = np.ascontiguousarray(np.broadcast_to(np.eye(k)[:, :, None], (k, k, nb)))
    for i in range(B):
        L = step(i, L)  # L[x, v, b] = sum_y P[y, v] L[x, y, b]: L P per block
        L *= qb[i][None]
        if _renorm(L):
            return None
    # 2. block starts, rows scaled separately
    Fb = np.empty((k, k, nb))
    sig = np.empty((k, nb))
    f, s = np.eye(k), np.zeros(k)
    with np.errstate(divide="ignore"):
        for b in range(nb):
            Fb[:, :, b], sig[:, b] = f, s
            g = f @ L[:, :, b]
            top = g.max(axis=1)
            s = s + np.log(top)
            f = g / np.where(top > 0.0, top, 1.0)[:, None]
            if _has_tiny(f):
                return None
    # 3. every pattern: running maximum of the ratios per ordered pair and block
    run = np.zeros((k, k, k, nb))  # [x, x', v, b]; 0 = no pattern yet (log -inf)
    H = Fb.copy()
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for i in range(B):
            G = step(i, H)  # G[x, v, b] = sum_y P[y, v] H[x, y, b] = (H P)[x, v]
            H = G * qb[i][None]
            G *= mask[i][None]
            inv = 1.0 / G
            np.fmax(run, G[:, None] * inv[None, :], out=run)
            if _renorm(H):
                return None
        all_perp = H.sum(axis=1)[:, nb - 1]  # padding rows are ⊥ and P is stochastic
        v_blk = run.argmax(axis=2)  # [x, x', b]
        top = np.take_along_axis(run, v_blk[:, :, None, :], 2)[:, :, 0, :]
        logs = np.log(top) + (sig[:, None, :] - sig[None, :, :])
    logs = np.where(np.isnan(logs), -np.inf, logs)
    b_best = logs.argmax(axis=2)
    best = np.take_along_axis(logs, b_best[:, :, None], 2)[:, :, 0]
    v_best = np.take_along_axis(v_blk, b_best[:, :, None], 2)[:, :, 0]
    arg_j = _replay(P, Fb, qb, mask, b_best, v_best, B)
    return _with_all_perp(best, arg_j, v_best, all_perp, sig[:, nb - 1], Q, P)


def _stepper(P: np.ndarray, B: int, nb: int) -> Callable[[int, np.ndarray], np.ndarray]:
    """``step(i, H)``: ``H[x, ., b]`` times the matrix of record ``bB + i`` of every block ``b``.

    One matrix for every record (``P`` of shape ``(k, k)``), or one per record (``(m, k, k)``, a
    chain that varies with the step): then laid out ``[i, y, v, b]`` once, padded with the
    identity (stochastic: the padding's rows, always ⊥, carry their sums through).
    """
    if P.ndim == 2:
        PT = np.ascontiguousarray(P.T)
        return lambda i, H: np.matmul(PT, H)
    k = P.shape[1]
    pad = np.broadcast_to(np.eye(k), (nb * B, k, k)).copy()
    pad[: P.shape[0]] = P
    lay = np.ascontiguousarray(pad.reshape(nb, B, k, k).transpose(1, 2, 3, 0))  # [i, y, v, b]
    return lambda i, H: np.einsum("xyb,yvb->xvb", H, lay[i])


def _block_steps(P: np.ndarray, i: int, B: int, blocks: np.ndarray) -> np.ndarray:
    """The matrices of record ``bB + i`` for the given blocks, ``(len(blocks), k, k)`` (identity beyond the side)."""
    if P.ndim == 2:
        return P
    k = P.shape[1]
    idx = blocks * B + i
    out = np.broadcast_to(np.eye(k), (idx.size, k, k)).copy()
    inside = idx < P.shape[0]
    out[inside] = P[idx[inside]]
    return out


def _replay(P: np.ndarray, Fb: np.ndarray, qb: np.ndarray, mask: np.ndarray, b_best: np.ndarray,
            v_best: np.ndarray, B: int) -> np.ndarray:
    """The record of the best pattern of every ordered pair, by replaying only the winning blocks."""
    k = P.shape[-1]
    blocks, which = np.unique(b_best, return_inverse=True)
    which = which.reshape(k, k)
    xs, ys = np.meshgrid(np.arange(k), np.arange(k), indexing="ij")
    H = np.ascontiguousarray(Fb[:, :, blocks].transpose(2, 0, 1))  # [block, x, y]
    best = np.full((k, k), -1.0)
    arg = np.zeros((k, k), dtype=np.int64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for i in range(B):
            G = H @ _block_steps(P, i, B, blocks)
            H = G * qb[i][:, blocks].T[:, None, :]
            G *= mask[i][:, blocks].T[:, None, :]
            num = G[which, xs, v_best]
            den = G[which, ys, v_best]
            r = np.where(num > 0.0, num / den, np.nan)
            take = r > best
            best = np.where(take, r, best)
            arg = np.where(take, blocks[which] * B + i, arg)
            top = H.max(axis=(1, 2))
            H /= np.where(top > 0.0, top, 1.0)[:, None, None]
    return arg


def _with_all_perp(best: np.ndarray, arg_j: np.ndarray, arg_v: np.ndarray, vec: np.ndarray,
                   log_scale: np.ndarray, Q: np.ndarray, P: np.ndarray) -> SidePairs:
    """Fold the "all ⊥" pattern (likelihood vector ``vec * exp(log_scale)``) into the side's maxima."""
    if np.any(vec > 0.0):
        with np.errstate(divide="ignore", invalid="ignore"):
            g = np.log(vec) + log_scale
            d = g[:, None] - g[None, :]
            d = np.where(np.isnan(d), -np.inf, d)
        take = d > best
        best = np.where(take, d, best)
        arg_j = np.where(take, -1, arg_j)
    k = P.shape[-1]
    best[np.arange(k), np.arange(k)] = 0.0
    return SidePairs(best, arg_j.astype(int), arg_v.astype(int), Q, P)


def _logsumexp_rows(a: np.ndarray) -> np.ndarray:
    """``log Σ_y exp(a[..., y, v])`` over the second-last axis, with ``-inf`` for empty sums."""
    top = a.max(axis=-2, keepdims=True)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return (np.log(np.exp(a - safe).sum(axis=-2, keepdims=True)) + safe)[..., 0, :]


def side_pairs_logspace(P: np.ndarray, Q: np.ndarray) -> SidePairs:
    r""":func:`side_pairs` by a sequential recursion on logarithms (no underflow, O(m k³)).

    :math:`\log(A_jP)_{xv}=\operatorname{logsumexp}_y(\log (A_j)_{xy}+\log P_{yv})` and
    :math:`\log (A_{j+1})_{xy}=\log(A_jP)_{xy}+\log q_{j+1}[y]`: a plain loop over the records,
    the fallback of the blocked evaluator and an independent check of it.
    """
    m, k = Q.shape
    if m == 0:
        return _empty_side(P, Q)
    with np.errstate(divide="ignore"):
        logP, logQ = np.log(P), np.log(Q)
    la = np.where(np.eye(k, dtype=bool), 0.0, -np.inf)
    best = np.full((k, k), -np.inf)
    arg_j = np.zeros((k, k), dtype=int)
    arg_v = np.zeros((k, k), dtype=int)
    for j in range(m):
        lp = logP if logP.ndim == 2 else logP[j]
        lt = _logsumexp_rows(la[:, :, None] + lp[None, :, :])  # (x, v)
        for v in np.flatnonzero(Q[j] < 1.0):
            g = lt[:, v]
            if not np.any(np.isfinite(g)):
                continue
            with np.errstate(invalid="ignore"):
                d = g[:, None] - g[None, :]
            d = np.where(np.isnan(d), -np.inf, d)
            take = d > best
            best = np.where(take, d, best)
            arg_j = np.where(take, j, arg_j)
            arg_v = np.where(take, int(v), arg_v)
        la = lt + logQ[j][None, :]
        if not np.any(np.isfinite(la)):
            return _with_all_perp(best, arg_j, arg_v, np.zeros(k), np.zeros(k), Q, P)
    top = la.max(axis=1)
    top = np.where(np.isfinite(top), top, 0.0)
    vec = np.exp(la - top[:, None]).sum(axis=1)
    return _with_all_perp(best, arg_j, arg_v, vec, top, Q, P)


def side_pairs(P: np.ndarray, Q: np.ndarray) -> SidePairs:
    r"""Largest log-ratio of one side for every ordered pair of private values (module docstring).

    Parameters
    ----------
    P : numpy.ndarray, shape (k, k) or (m, k, k)
        The side's chain read outward: :math:`P` on the right, :math:`\tilde P` on the left; or,
        for a chain that varies with the step, the side's step matrices nearest first
        (``P[d - 1]`` leads from distance ``d - 1`` to ``d``; at least as many as the records read).
    Q : numpy.ndarray, shape (m, k)
        The side's redaction rows ordered by distance from the private record (nearest first).

    Notes
    -----
    Only the rows up to the side's first row published with certainty are evaluated: every
    pattern ends there (its vector is zero beyond it, so "all ⊥" is impossible), which makes
    a side cost its distance to that row, not its length.  The returned ``q`` is the whole
    side (the witness continues beyond the published row).
    """
    Q = np.asarray(Q, dtype=float)
    if Q.shape[0] == 0:
        return _empty_side(P, Q)
    m = min(first_published(Q) + 1, Q.shape[0])  # the side's patterns end at its first published row
    Pm = P if P.ndim == 2 else P[:m]
    fast = _side_blocked(Pm, Q[:m])
    side = fast if fast is not None else side_pairs_logspace(Pm, Q[:m])
    return side if m == Q.shape[0] and Pm is P else replace(side, q=Q, P=P)


def continuation(P: np.ndarray, qs: np.ndarray, v: int) -> np.ndarray:
    """An output of positive probability for records following a record in state ``v`` (read outward).

    The states follow each state's most likely successor (a path of positive probability,
    eventually periodic: at most ``k`` states before it repeats); each shows its state where it
    can be published, ⊥ where it is always redacted.  ``qs`` holds those records' rows, nearest
    first.
    """
    rest = qs.shape[0]
    if rest <= 0:
        return np.zeros(0, dtype=np.int64)
    if P.ndim == 3:  # one matrix per step: walk the most likely successor of each step
        succ_t = P[:rest].argmax(axis=2)
        out, s = np.empty(rest, dtype=np.int64), v
        for i in range(rest):
            s = int(succ_t[i, s])
            out[i] = s if qs[i, s] < 1.0 else -1
        return out
    succ = P.argmax(axis=1)
    path: list[int] = []
    seen: dict[int, int] = {}
    s = int(succ[v])
    while s not in seen and len(path) < rest:
        seen[s] = len(path)
        path.append(s)
        s = int(succ[s])
    start = seen.get(s, len(path)) if len(path) < rest else len(path)  # the cycle repeats path[start:]
    out = np.empty(rest, dtype=np.int64)
    for i, x in enumerate(path[:start]):
        out[i] = x if qs[i, x] < 1.0 else -1
    cycle = path[start:]
    for r, x in enumerate(cycle):  # record start + r + j * len(cycle) is in state x
        rows = slice(start + r, rest, len(cycle))
        out[rows] = np.where(qs[rows, x] < 1.0, x, -1)
    return out


def side_output(side: SidePairs, j: int, v: int, steps: np.ndarray | None = None) -> np.ndarray:
    """An output of one side (by distance) realising pattern ``(j, v)`` (``j = -1``: all ⊥); -1 is ⊥.

    Records beyond the published one follow :func:`continuation`: an output of positive probability.
    ``steps``: the whole side's step matrices (a chain that varies with the step; ``side.P`` holds only
    those its patterns read).
    """
    m = side.q.shape[0]
    out = np.full(m, -1, dtype=np.int64)
    if j < 0:
        return out
    out[j] = v
    P = side.P if steps is None else steps
    out[j + 1 :] = continuation(P if P.ndim == 2 else P[j + 1 :], side.q[j + 1 :], v)
    return out


def matrix_leakage(chain: Chain, q: np.ndarray, p: int) -> tuple[float, tuple[int, int], float, float, np.ndarray]:
    r"""The exact leakage about ``p`` of a validated ``(n, k)`` mechanism, by k x k prefix products.

    Returns ``(leakage, pair, left, right, witness)`` as
    :func:`redactopt.judge.kernel2.two_state_leakage`: the leakage in nats (``inf`` when an
    output rules a value out; 0 when every record is always redacted), the worst ordered pair,
    the sides' terms of its log-ratio and an output of positive probability attaining it
    (``int64`` state indices, -1 for ⊥).  O(k³) per record up to each side's first published row.
    """
    if chain.varying:
        ql, qr = q[:p][::-1], q[p + 1 :]
        left = side_pairs(chain.side_steps(p, "left", side_reach(ql)), ql)
        right = side_pairs(chain.side_steps(p, "right", side_reach(qr)), qr)
    else:
        left = side_pairs(chain.reversed_matrix(), q[:p][::-1])
        right = side_pairs(chain.transition, q[p + 1 :])
    k = chain.k
    with np.errstate(invalid="ignore"):
        total = left.best + right.best
    total = np.where(np.isnan(total), np.inf, total)
    total[np.arange(k), np.arange(k)] = -np.inf
    if chain.varying:  # a value X_p cannot take says nothing (no conditional law given it)
        impossible = chain.marginal(p) <= 0.0
        total[impossible, :] = -np.inf
        total[:, impossible] = -np.inf
    x, y = (int(v) for v in np.unravel_index(int(np.argmax(total)), total.shape))
    witness = np.empty(q.shape[0], dtype=np.int64)
    (lj, lv), (rj, rv) = (int(left.arg_j[x, y]), int(left.arg_v[x, y])), (int(right.arg_j[x, y]), int(right.arg_v[x, y]))
    whole = chain.varying and ((0 <= lj and left.q.shape[0] > left.P.shape[0]) or
                               (0 <= rj and right.q.shape[0] > right.P.shape[0]))
    wl, wr = (chain.side_steps(p, "left"), chain.side_steps(p, "right")) if whole else (None, None)
    witness[:p] = side_output(left, lj, lv, wl)[::-1]
    witness[p] = -1
    witness[p + 1 :] = side_output(right, rj, rv, wr)
    # everything redacted: the one output (all ⊥) has probability exactly 1 under every value
    exact_zero = bool(q[0].min() == 1.0 and q[-1].min() == 1.0 and np.all(q == 1.0))
    value = 0.0 if exact_zero else max(0.0, float(total[x, y]))
    return value, (x, y), float(left.best[x, y]), float(right.best[x, y]), witness


