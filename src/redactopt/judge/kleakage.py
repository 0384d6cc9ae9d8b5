r"""Exact leakage (Definition 1, generalised) and utility of local redaction on k-state chains.

A mechanism on a :class:`~redactopt.model.kchain.KChain` with ``k`` states is an ``(n, k)``
array ``q[t, x] = Pr(Y_t = ⊥ | X_t = x)``; the private record's row is all ones.  Its leakage
about :math:`X_p` is the largest log-likelihood ratio any output allows between two values
of :math:`X_p`:

.. math::
    \mathcal L = \max_{x\ne x'}\ \max_{\mathbf y:\Pr(\mathbf y)>0}\
    \log\frac{\Pr(\mathbf Y=\mathbf y\mid X_p=x)}{\Pr(\mathbf Y=\mathbf y\mid X_p=x')},

infinite when an output has positive probability under ``x`` and none under ``x'`` (outputs
impossible under both values of a pair say nothing about that pair).

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
with a positive entry has some continuation on the other side).  A side of ``m`` records has
``k m + 1`` patterns, so the leakage costs :math:`O(n k^3)`.

**Numerics.**  The prefix products are computed in blocks (all blocks advance together in
numpy; the block starts are scanned once) with each row of the running product scaled to
its own maximum, so ratios between rows are exact up to rounding even when they exceed the
float range.  The blocked path is used while every positive number it forms is at least
:data:`TINY` relative to its scale (then no product can underflow or lose precision in
subnormals, and a zero is a true zero: the support is decided exactly); otherwise the side is
evaluated by a sequential recursion in log space (:func:`side_pairs_logspace`), slower but
free of underflow.  Both are checked against enumeration of all :math:`(k+1)^n` outputs
(:func:`kleakage_bruteforce`) and rational arithmetic (:mod:`redactopt.judge.kexact`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from redactopt._validate import check_private, check_redact_prob
from redactopt.judge.segments import segment
from redactopt.model.kchain import KChain

__all__ = [
    "KLeakageResult",
    "SidePairs",
    "TINY",
    "check_kmechanism",
    "check_kredact_prob",
    "side_pairs",
    "side_pairs_logspace",
    "kleakage",
    "kmax_leakage",
    "kleakage_bruteforce",
    "klog_likelihood_ratio",
    "kutility",
    "side_output",
    "segment",
    "kleakage_segment",
]

#: Smallest positive number (relative to its row's or block's scale) the blocked evaluator
#: accepts; products of three such numbers stay above the smallest normal double.
TINY = 1e-100


@dataclass(frozen=True)
class KLeakageResult:
    r"""Exact leakage about one private record of a k-state chain, with a witness.

    Attributes
    ----------
    leakage : float
        :math:`\mathcal L(X_p\to\mathbf Y)` in nats (``inf`` when an output rules a value out).
    witness : numpy.ndarray of int
        An output of positive probability attaining it: a state index, or -1 for ⊥; index 0 is
        record 1.  :meth:`witness_output` gives it with labels and ``None`` for ⊥.
    pair : tuple of int
        The ordered pair ``(x, x')`` (state indices) of the worst ratio
        :math:`\Pr(\mathbf y\mid X_p=x)/\Pr(\mathbf y\mid X_p=x')`.
    p : int
        0-based private index.
    left_log_ratio, right_log_ratio : float
        The two sides' terms of the worst log-ratio; they add up to ``leakage``.
    labels : tuple
        The chain's state labels.
    """

    leakage: float
    witness: np.ndarray
    pair: tuple[int, int]
    p: int
    left_log_ratio: float
    right_log_ratio: float
    labels: tuple

    def witness_output(self) -> list:
        """The witness as a list of state labels and ``None`` (⊥), record 1 first."""
        return [None if v < 0 else self.labels[int(v)] for v in self.witness.tolist()]

    @property
    def pair_labels(self) -> tuple:
        """The worst pair as labels: the output favours ``pair_labels[0]`` over ``pair_labels[1]``."""
        return self.labels[self.pair[0]], self.labels[self.pair[1]]


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
# validation
# --------------------------------------------------------------------------
def check_kredact_prob(value: object, k: int, name: str = "redact_prob") -> np.ndarray:
    """An ``(n, k)`` array of probabilities ``Pr(Y_t = ⊥ | X_t = x)`` with entries in [0, 1]
    (:func:`redactopt._validate.check_redact_prob` with ``k`` columns)."""
    return check_redact_prob(value, name, k=k)


def check_kmechanism(chain: KChain, redact_prob: object, private: object,
                     name: str = "private") -> tuple[np.ndarray, tuple[int, ...]]:
    """Validate an ``(n, k)`` mechanism for ``chain`` and its 0-based private record(s) (rows all ones)."""
    if not isinstance(chain, KChain):
        raise TypeError(f"chain must be a KChain, got {type(chain).__name__}")
    q = check_kredact_prob(redact_prob, chain.k)
    priv = check_private(private, q.shape[0], name)
    for p in priv:
        if not np.all(q[p] == 1.0):
            raise ValueError(f"redact_prob row {p} (0-based) is the private record and must be all ones "
                             f"(always redacted), got {q[p].tolist()}")
    return q, priv


# --------------------------------------------------------------------------
# one side: blocked prefix products
# --------------------------------------------------------------------------
def _empty_side(P: np.ndarray, q: np.ndarray) -> SidePairs:
    k = P.shape[0]
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
    PT = np.ascontiguousarray(P.T)
    # 1. block products L[x, y, b]
    L = np.ascontiguousarray(np.broadcast_to(np.eye(k)[:, :, None], (k, k, nb)))
    for i in range(B):
        L = np.matmul(PT, L)  # L[x, v, b] = sum_y P[y, v] L[x, y, b]: L P per block
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
            G = np.matmul(PT, H)  # G[x, v, b] = sum_y P[y, v] H[x, y, b] = (H P)[x, v]
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


def _replay(P: np.ndarray, Fb: np.ndarray, qb: np.ndarray, mask: np.ndarray, b_best: np.ndarray,
            v_best: np.ndarray, B: int) -> np.ndarray:
    """The record of the best pattern of every ordered pair, by replaying only the winning blocks."""
    k = P.shape[0]
    blocks, which = np.unique(b_best, return_inverse=True)
    which = which.reshape(k, k)
    xs, ys = np.meshgrid(np.arange(k), np.arange(k), indexing="ij")
    H = np.ascontiguousarray(Fb[:, :, blocks].transpose(2, 0, 1))  # [block, x, y]
    best = np.full((k, k), -1.0)
    arg = np.zeros((k, k), dtype=np.int64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for i in range(B):
            G = H @ P
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
    k = P.shape[0]
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
        lt = _logsumexp_rows(la[:, :, None] + logP[None, :, :])  # (x, v)
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
    P : numpy.ndarray, shape (k, k)
        The side's chain read outward: :math:`P` on the right, :math:`\tilde P` on the left.
    Q : numpy.ndarray, shape (m, k)
        The side's redaction rows ordered by distance from the private record (nearest first).
    """
    Q = np.asarray(Q, dtype=float)
    if Q.shape[0] == 0:
        return _empty_side(P, Q)
    fast = _side_blocked(P, Q)
    return fast if fast is not None else side_pairs_logspace(P, Q)


def _continuation(P: np.ndarray, qs: np.ndarray, v: int) -> np.ndarray:
    """An output of positive probability for records following a record in state ``v`` (read outward).

    The states follow each state's most likely successor (a path of positive probability,
    eventually periodic); each shows its state where it can be published, ⊥ where it is always
    redacted.  ``qs`` holds those records' rows, nearest first.
    """
    rest = qs.shape[0]
    if rest <= 0:
        return np.zeros(0, dtype=np.int64)
    succ = P.argmax(axis=1)
    path = [int(succ[v])]
    seen = {path[0]: 0}
    while len(path) < rest:
        nxt = int(succ[path[-1]])
        if nxt in seen:  # cycle found: repeat it
            start = seen[nxt]
            cyc = np.array(path[start:], dtype=np.int64)
            head = np.array(path[:start], dtype=np.int64)
            reps = -(-(rest - head.size) // cyc.size)
            path = np.concatenate([head, np.tile(cyc, reps)])[:rest].tolist()
            break
        seen[nxt] = len(path)
        path.append(nxt)
    states = np.asarray(path[:rest], dtype=np.int64)
    return np.where(qs[np.arange(rest), states] < 1.0, states, -1)


def side_output(side: SidePairs, j: int, v: int) -> np.ndarray:
    """An output of one side (by distance) realising pattern ``(j, v)`` (``j = -1``: all ⊥); -1 is ⊥.

    Records beyond the published one follow :func:`_continuation`: an output of positive probability.
    """
    m = side.q.shape[0]
    out = np.full(m, -1, dtype=np.int64)
    if j < 0:
        return out
    out[j] = v
    out[j + 1 :] = _continuation(side.P, side.q[j + 1 :], v)
    return out


# --------------------------------------------------------------------------
# leakage
# --------------------------------------------------------------------------
def kleakage(chain: KChain, redact_prob: object, p: int) -> KLeakageResult:
    r"""Exact leakage :math:`\mathcal L(X_p\to\mathbf Y)` on a k-state chain and a witness, O(n k³).

    Parameters
    ----------
    chain : KChain
    redact_prob : array_like, shape (n, k)
        ``redact_prob[t, x] = Pr(Y_t = ⊥ | X_t = x)``; row ``p`` must be all ones.
    p : int
        0-based index of the private record.

    Returns
    -------
    KLeakageResult
        The leakage in nats, the worst ordered pair and an output of positive probability
        attaining it (module docstring for the reduction).  Agrees with
        :func:`kleakage_bruteforce` and :func:`redactopt.judge.kexact.exact_kleakage_ratio`
        (``tests/test_kleakage.py``).
    """
    q, (p,) = check_kmechanism(chain, redact_prob, p, "p")
    left = side_pairs(chain.reversed_matrix(), q[:p][::-1])
    right = side_pairs(chain.transition, q[p + 1 :])
    return _combine(chain, q, p, left, right)


def _combine(chain: KChain, q: np.ndarray, p: int, left: SidePairs, right: SidePairs) -> KLeakageResult:
    k = chain.k
    with np.errstate(invalid="ignore"):
        total = left.best + right.best
    total = np.where(np.isnan(total), np.inf, total)
    total[np.arange(k), np.arange(k)] = -np.inf
    x, y = (int(v) for v in np.unravel_index(int(np.argmax(total)), total.shape))
    witness = np.empty(q.shape[0], dtype=np.int64)
    witness[:p] = side_output(left, int(left.arg_j[x, y]), int(left.arg_v[x, y]))[::-1]
    witness[p] = -1
    witness[p + 1 :] = side_output(right, int(right.arg_j[x, y]), int(right.arg_v[x, y]))
    # everything redacted: the one output (all ⊥) has probability exactly 1 under every value
    exact_zero = bool(np.all(q == 1.0))
    return KLeakageResult(
        leakage=0.0 if exact_zero else max(0.0, float(total[x, y])),
        witness=witness,
        pair=(x, y),
        p=p,
        left_log_ratio=float(left.best[x, y]),
        right_log_ratio=float(right.best[x, y]),
        labels=chain.labels,
    )


def kleakage_segment(chain: KChain, redact_prob: object, p: int) -> KLeakageResult:
    r""":func:`kleakage` evaluated on private record ``p``'s segment (:func:`segment`), exact for the whole sequence.

    A record published with certainty is observed without noise, so by the Markov property
    everything beyond it cancels from every likelihood ratio (docs/mathematics.md §8).  The
    witness is extended to the whole sequence beyond the segment's published ends by
    :func:`_continuation` (forward chain on the right, reversed chain on the left).
    """
    q, (p,) = check_kmechanism(chain, redact_prob, p, "p")
    lo, hi = segment(q, p)
    if lo == 0 and hi == q.shape[0] - 1:
        return kleakage(chain, q, p)
    res = kleakage(chain, q[lo : hi + 1], p - lo)
    w = np.empty(q.shape[0], dtype=np.int64)
    w[lo : hi + 1] = res.witness
    if hi < q.shape[0] - 1:
        w[hi + 1 :] = _continuation(chain.transition, q[hi + 1 :], int(w[hi]))
    if lo > 0:
        w[:lo] = _continuation(chain.reversed_matrix(), q[:lo][::-1], int(w[lo]))[::-1]
    return KLeakageResult(res.leakage, w, res.pair, p, res.left_log_ratio, res.right_log_ratio, res.labels)


def kmax_leakage(chain: KChain, redact_prob: object, private: object) -> KLeakageResult:
    """The largest exact leakage over several private records (0-based), each judged on its segment."""
    q, priv = check_kmechanism(chain, redact_prob, private)
    return max((kleakage_segment(chain, q, p) for p in priv), key=lambda r: r.leakage)


def kutility(chain: KChain, redact_prob: object) -> float:
    r"""Exact utility :math:`\nu=\frac1n\sum_t\sum_x\pi_x(1-q_t[x])` (Definition 2; stationary marginals)."""
    if not isinstance(chain, KChain):
        raise TypeError(f"chain must be a KChain, got {type(chain).__name__}")
    q = check_kredact_prob(redact_prob, chain.k)
    return float(((1.0 - q) @ chain.stationary).mean())


# --------------------------------------------------------------------------
# independent references
# --------------------------------------------------------------------------
#: Largest number of outputs :func:`kleakage_bruteforce` enumerates.
MAX_BRUTEFORCE_OUTPUTS = 2_000_000


def kleakage_bruteforce(chain: KChain, redact_prob: object, p: int) -> KLeakageResult:
    r"""Reference leakage by enumerating all :math:`(k+1)^n` outputs (no patterns, no reversed chain).

    A forward pass from the stationary law over the whole output tree gives
    :math:`\Pr(\mathbf y, X_p=x)` for every output; outputs of positive probability are kept and
    the largest log-ratio over ordered pairs taken (``inf`` where one value rules the other out).
    Shares no code with :func:`kleakage`.
    """
    q, (p,) = check_kmechanism(chain, redact_prob, p, "p")
    n, k = q.shape
    if (k + 1) ** n > MAX_BRUTEFORCE_OUTPUTS:
        raise ValueError(f"kleakage_bruteforce enumerates (k+1)^n = {(k + 1) ** n} outputs; "
                         f"at most {MAX_BRUTEFORCE_OUTPUTS} allowed")
    pi, P = chain.stationary, chain.transition

    def emission(row: np.ndarray) -> np.ndarray:  # e[y, x] = Pr(Y_t = y | X_t = x), y = k is ⊥
        return np.vstack([np.diag(1.0 - row), row[None, :]])

    F = (emission(q[0]) * pi[None, :])[:, None, :] * np.ones((1, k, 1))  # [output, x_p, x_t]
    if p == 0:
        F = F * np.eye(k)[None]
    for t in range(1, n):
        moved = F @ P
        F = (moved[:, None, :, :] * emission(q[t])[None, :, None, :]).reshape(-1, k, k)
        if t == p:
            F = F * np.eye(k)[None]
    joint = F.sum(axis=2)
    cond = joint / pi[None, :]
    keep = np.flatnonzero(joint.sum(axis=1) > 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        lc = np.log(cond[keep])
        D = lc[:, :, None] - lc[:, None, :]
    D = np.where(np.isnan(D), -np.inf, D)
    D[:, np.arange(k), np.arange(k)] = -np.inf
    flat = int(np.argmax(D))
    i, x, y = np.unravel_index(flat, D.shape)
    code = int(keep[i])
    digits = []
    for _ in range(n):
        digits.append(code % (k + 1))
        code //= k + 1
    witness = np.array([-1 if d == k else d for d in reversed(digits)], dtype=np.int64)
    return KLeakageResult(float(D[i, x, y]), witness, (int(x), int(y)), p, math.nan, math.nan, chain.labels)


def klog_likelihood_ratio(chain: KChain, redact_prob: object, p: int, output: object,
                          pair: tuple[int, int]) -> float:
    r""":math:`\log\Pr(\mathbf y\mid X_p=x)-\log\Pr(\mathbf y\mid X_p=x')` of one output by a forward pass.

    ``output`` holds state indices and -1 (⊥), record 1 first; ``pair = (x, x')``.  Independent of
    the pattern reduction (re-checks witnesses).  ``±inf`` when one probability is 0; a
    ``ValueError`` when both are.
    """
    q, (p,) = check_kmechanism(chain, redact_prob, p, "p")
    raw = np.asarray(output)
    if raw.dtype == object or not np.issubdtype(raw.dtype, np.number) or not np.all(raw == np.round(raw)):
        raise ValueError(f"output must hold {q.shape[0]} state indices or -1 (⊥), got {output!r}")
    y = raw.astype(np.int64)
    if y.shape != (q.shape[0],) or np.any(y < -1) or np.any(y >= chain.k):
        raise ValueError(f"output must hold {q.shape[0]} state indices or -1 (⊥)")
    if len(pair) != 2 or not all(isinstance(h, (int, np.integer)) and not isinstance(h, bool)
                                 and 0 <= h < chain.k for h in pair):
        raise ValueError(f"pair must be two state indices in 0..{chain.k - 1}, got {pair!r}")
    P, pi = chain.transition, chain.stationary
    logs = []
    for h in pair:
        vec, total = pi.copy(), 0.0
        for t in range(q.shape[0]):
            if t:
                vec = vec @ P
            if y[t] < 0:
                vec = vec * q[t]
            else:
                e = np.zeros(chain.k)
                e[y[t]] = 1.0 - q[t, y[t]]
                vec = vec * e
            if t == p:
                keep = np.zeros(chain.k)
                keep[h] = vec[h]
                vec = keep
            s = vec.sum()
            if s == 0.0:
                total = -math.inf
                break
            total += math.log(s)
            vec = vec / s
        logs.append(total - math.log(pi[h]))
    if logs[0] == -math.inf and logs[1] == -math.inf:
        raise ValueError("output has probability 0 under both values of the pair")
    return logs[0] - logs[1]
