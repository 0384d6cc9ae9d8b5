r"""Lemma 2 (Appendix D): which values a private mechanism may publish at all, decided soundly, for every chain.

If ``v`` is published with positive probability at distance ``d`` on side ``s`` of ``p``, the event
:math:`\{Y_t=v\}` has :math:`\Pr(\cdot\mid X_p=x)=(P_s^d)_{xv}(1-q_t[v])`, so its likelihood ratio
for the pair :math:`(x,x')` is :math:`e^{\rho_v(d)[x,x']}` (the factor :math:`1-q_t[v]` cancels);
it is a union of outputs, hence a mediant of their ratios, and some output is at least as
extreme.  Both sides of ``p`` have log-ratio maxima :math:`\ge 0` for every pair (their patterns'
probabilities sum to 1 under each value), so a side can spend at most the whole
:math:`\epsilon` on any pair, and ``v`` may be published at distance ``d`` only if the pointwise
influence :math:`i_s(d,v)\le\epsilon` (:func:`publishable`), which gives the cheap bound
:func:`lemma2_upper_bound`.  For a binary chain a side whose log-ratios all lie in
``[-lower, upper]`` can publish ``v`` at ``d`` only if :math:`-\text{lower}\le\rho_v(d)\le\text{upper}`
(the two budgets of a split).

**Sound exclusions.**  A value is excluded only if that is proved.  Binary chains: the
closed-form :math:`\rho` is accurate to :data:`~redactopt.model.influence.INFLUENCE_RTOL`; within
that relative distance of a budget the verdict is taken in rational arithmetic
(:func:`redactopt.judge.exact.exact_n_step`, :func:`~redactopt.judge.exact.ratio_at_most_exp`) for
distances up to 64.  Other chains: the float influence must exceed ``eps`` beyond its error
bound (:func:`~redactopt.model.influence.provably_above` with the product error), or — within the
band — the rational :math:`P^d` decides it; an infinite influence (a zero in :math:`P^d`) is
confirmed on the exact zero pattern (boolean matrix powers, :func:`reach_pattern`).  A value is
kept (outward) where it cannot be decided or the distance is larger, so every bound built on
this is a bound.

**Cost.**  Beyond :math:`\Delta^\star_s(\epsilon)` every value is publishable (the max-influence is
non-increasing), so :func:`lemma2_counts` evaluates only stretches of :math:`\pm\Delta^\star` around
groups of private records: time independent of ``n`` for every chain.
"""

from __future__ import annotations

from collections.abc import Sequence

import math

import numpy as np

from redactopt._validate import check_eps, check_n, check_private, check_real
from redactopt.judge.exact import MAX_EXACT_N, exact_n_step, ratio_at_most_exp
from redactopt.judge.tolerances import round_up
from redactopt.judge.tolerances import marginal_allowance
from redactopt.model.chain import Chain, check_chain
from redactopt.model.varying import VaryingChain
from redactopt.model.influence import (
    INFLUENCE_RTOL,
    delta_star,
    max_influence,
    pair_log_ratios,
    provably_above,
    side_log_ratios,
    side_matrix,
    window_terms,
)

__all__ = ["publishable", "lemma2_upper_bound", "lemma2_counts", "leakage_ceiling", "reach_pattern",
           "varying_publishable"]

#: Positive entries of a computed P^d below this are not trusted to carry their relative accuracy.
_SAFE_MIN = 1e-290


def publishable(chain: Chain, m: int, *, eps: float | None = None, upper: float | None = None,
                lower: float | None = None, side: str = "right") -> np.ndarray:
    r"""Lemma 2 on one side: may value ``v`` be published at distance ``d = 1..m``? (``(m, k)`` bool).

    True unless it is proved that :math:`i_s(d, v) > \epsilon` (module docstring).  Give ``eps``,
    or for a binary chain the budgets ``upper`` and ``lower`` of the two directions
    (:math:`\rho_v(d) > \text{upper}` or :math:`\rho_v(d) < -\text{lower}` excludes; ``eps`` is
    ``upper = lower = eps``).  ``side`` is the side of ``p`` (``"left"`` reads the reversed chain).
    """
    check_chain(chain)
    side_matrix(chain, side)  # validates side
    if eps is not None:
        upper = lower = check_eps(eps)
    if upper is None or lower is None:
        raise TypeError("publishable needs eps, or both upper and lower")
    upper, lower = check_real(upper, "upper"), check_real(lower, "lower")
    if not chain.binary and upper != lower:
        raise ValueError("one budget per direction (upper != lower) is defined for binary chains only")
    if m <= 0:
        return np.zeros((0, chain.k), dtype=bool)
    return _table(chain, int(m), upper, lower, side)[: int(m)].copy()


def _table(chain: Chain, m: int, upper: float, lower: float, side: str) -> np.ndarray:
    """:func:`publishable`'s memoised table (validated arguments, ``m >= 1``): at least ``m`` rows, shared, not copied."""
    # each distance is judged on its own, so a longer table's first m rows are this one:
    # memoised by chain, budgets and side, grown by doubling (release plans bound hundreds of regions)
    key = (chain, float(upper), float(lower), side if not chain.binary else "right")
    table = _PUBLISHABLE.get(key)
    if table is None or table.shape[0] < m:
        size = max(m, 2 * (0 if table is None else table.shape[0]))
        table = _publishable(chain, size, upper, lower) if chain.binary else _matrix_publishable(chain, size,
                                                                                                upper, side)
        if len(_PUBLISHABLE) >= 256:
            _PUBLISHABLE.clear()
        _PUBLISHABLE[key] = table
    return table


#: :func:`publishable` tables by (chain, upper, lower, side).
_PUBLISHABLE: dict[tuple[Chain, float, float, str], np.ndarray] = {}


def _publishable(chain: Chain, m: int, upper: float, lower: float) -> np.ndarray:
    """The binary chain's table: closed-form log-ratios, the band around a budget decided in rationals."""
    rho = side_log_ratios(chain, np.arange(1, int(m) + 1))
    out = provably_above(rho, upper) | provably_above(-rho, lower)
    near = ~out & ((rho > upper * (1.0 - INFLUENCE_RTOL)) | (-rho > lower * (1.0 - INFLUENCE_RTOL)))
    for i, v in zip(*np.nonzero(near)):
        d = int(i) + 1
        if d > MAX_EXACT_N:
            continue  # kept: outward
        Pd = exact_n_step(chain, d)
        ratio = Pd[0][int(v)] / Pd[1][int(v)]
        if ratio_at_most_exp(ratio, upper) is False or ratio_at_most_exp(1 / ratio, lower) is False:
            out[i, v] = True
    return ~out


def reach_pattern(chain: Chain, m: int, side: str = "right") -> np.ndarray:
    """Exact zero pattern of :math:`P_s^d`, ``d = 1..m``: ``out[d-1, x, v]`` true iff some path has length ``d``."""
    A = side_matrix(chain, side) > 0.0
    out = np.zeros((m, chain.k, chain.k), dtype=bool)
    cur = np.eye(chain.k, dtype=bool)
    for d in range(m):
        cur = (cur.astype(np.int64) @ A.astype(np.int64)) > 0
        out[d] = cur
    return out


def _matrix_publishable(chain: Chain, m: int, eps: float, side: str) -> np.ndarray:
    """The table of a chain that is not binary: pair log-ratios of computed powers, exact zero patterns."""
    k = chain.k
    if m > 1 and max_influence(chain, m, side=side) <= eps:
        # beyond Delta* the computed max-influence is <= eps: nothing there is provably above (Delta* is
        # searched only when it is at most m: a chain mixing too slowly for eps may have none within reach)
        out = np.ones((m, k), dtype=bool)
        reach = delta_star(chain, eps, side=side)
        if reach < m:
            out[:reach] = _matrix_publishable(chain, reach, eps, side)
            return out
    rho = pair_log_ratios(chain, m, side)  # [d-1, v, x, x']
    off = ~np.eye(k, dtype=bool)
    reach_d = np.swapaxes(reach_pattern(chain, m, side), 1, 2)  # [d-1, v, x]
    structural_inf = reach_d[:, :, :, None] & ~reach_d[:, :, None, :] & off  # numerator > 0, denominator 0
    powers = chain.n_step_matrices(m, reverse=side == "left")
    pos = np.where(powers > 0.0, powers, np.inf).min(axis=(1, 2))
    trusted = (pos >= _SAFE_MIN) & np.all((powers > 0.0) == np.swapaxes(reach_d, 1, 2), axis=(1, 2))
    dist = np.arange(1, m + 1)[:, None, None, None]
    finite = np.isfinite(rho) & off
    above = finite & provably_above(np.where(finite, rho, 0.0), eps, delta=dist, k=k) & trusted[:, None, None, None]
    excluded = (structural_inf | above).any(axis=(2, 3))  # [d-1, v]
    # the band: not provably above, not provably below -> decide exactly (d <= 64), else keep
    band = (finite & (rho > eps * (1.0 - 1e-6) - 1e-12) & ~above).any(axis=(2, 3)) & ~excluded
    band |= (~trusted[:, None]) & ~excluded
    for i, v in zip(*np.nonzero(band)):
        d = int(i) + 1
        if d <= MAX_EXACT_N:  # else kept: outward
            ex = exact_n_step(chain, d, reverse=side == "left")
            excluded[i, v] = any(ex[y][v] == 0 or ratio_at_most_exp(ex[x][v] / ex[y][v], eps) is False
                                 for x in range(k) for y in range(k) if x != y and ex[x][v] != 0)
    return ~excluded


def lemma2_upper_bound(chain: Chain, n: int, *, eps: float, private: object) -> float:
    r"""Cheap valid upper bound on the utility of every :math:`\epsilon`-private mechanism (Lemma 2).

    By Lemma 2 (Appendix D) with :math:`\mathcal Q=\{t\}`, value ``x`` can be published at
    ``t`` with positive probability only if :math:`i(X_p\rightsquigarrow X_t=x)\le\epsilon`
    for every private ``p``; the private records are never published.  Hence

    .. math:: \nu \le \frac1n\sum_{t}\sum_x \pi_x\,\mathbb 1\big[\max_p i(X_p\rightsquigarrow X_t=x)\le\epsilon\big]
              = \sum_x \pi_x\,c_x/n

    with :math:`c_x` the records where ``x`` is publishable (:func:`lemma2_counts`, exact
    integers); one correctly rounded sum, one division, rounded outward (a float sum of excluded
    masses once gave -1.2e-16 for a bound of exactly 0).  ``private`` holds 0-based indices.
    """
    if isinstance(chain, VaryingChain):
        allowed = varying_publishable(chain, eps=eps, private=private)
        total = math.fsum((chain.marginals() * allowed).ravel().tolist())
        return round_up(total / check_n(n), 2 * chain.k * chain.n)
    counts = lemma2_counts((chain,), n, eps=eps, private=private)
    total = math.fsum(float(pi) * c for pi, c in zip(chain.stationary, counts))
    return round_up(total / check_n(n), 2 * chain.k)


def varying_publishable(chain: VaryingChain, *, eps: float, private: object) -> np.ndarray:
    r"""Lemma 2 on a chain that varies with the step: ``allowed[t, v]`` unless provably excluded.

    The same argument as for one matrix (module docstring): publishing ``v`` at row ``t`` on side
    ``s`` of a private record ``p`` moves the odds of ``(x, x')`` by
    :math:`(S_1\cdots S_d)_{xv}/(S_1\cdots S_d)_{x'v}`, with :math:`S_j` the side's steps read
    outward (:meth:`~redactopt.model.varying.VaryingChain.side_steps`), so ``v`` is publishable only
    if that log-ratio is at most ``eps`` for every pair of values ``X_p`` can take.  The products are
    formed in floats, each row scaled to its maximum with its logarithm kept (no underflow); a value
    is excluded only when its log-ratio exceeds ``eps`` by more than the products' rounding
    (:math:`4dk` ulps) and the error of computed marginals
    (:func:`~redactopt.judge.tolerances.marginal_allowance`), or when the exact zero pattern of the
    product (boolean products) shows the denominator is 0.  Beyond the first distance at which every
    value is publishable nothing is excluded: the largest influence does not grow with the distance
    (each step's ratios are mediants of the previous ones).  Private rows are never publishable.
    """
    eps = check_eps(eps)
    n, k = chain.n, chain.k
    priv = check_private(private, n)
    allowed = np.ones((n, k), dtype=bool)
    allowed[list(priv)] = False
    pi = chain.marginals()
    for p in priv:
        possible = pi[p] > 0.0
        for side in ("left", "right"):
            m = p if side == "left" else n - 1 - p
            if m == 0 or possible.sum() < 2:
                continue
            _exclude_side(allowed, chain, p, side, m, eps, possible)
    return allowed


def _exclude_side(allowed: np.ndarray, chain: VaryingChain, p: int, side: str, m: int, eps: float,
                  possible: np.ndarray) -> None:
    """Walk one side of ``p`` outward, clearing ``allowed`` where Lemma 2 provably excludes a value."""
    k = chain.k
    A = np.eye(k)
    logs = np.zeros(k)
    Z = np.eye(k, dtype=bool)
    block = 256
    for start in range(0, m, block):
        steps = chain.side_steps(p, side, min(m, start + block))[start:]
        for i, S in enumerate(steps):
            d = start + i + 1
            A = A @ S
            Z = (Z.astype(np.int64) @ (S > 0.0).astype(np.int64)) > 0
            top = A.max(axis=1)
            logs = logs + np.log(np.where(top > 0.0, top, 1.0))
            A = A / np.where(top > 0.0, top, 1.0)[:, None]
            margin = 4.0 * d * k * 2.0**-52 + marginal_allowance(k, chain.rounding_steps + p + d, d) + 1e-300
            excluded, done = _excluded(A, logs, Z, possible, eps, margin)
            t = p + d if side == "right" else p - d
            allowed[t] &= ~excluded
            if done:
                return


def _excluded(A: np.ndarray, logs: np.ndarray, Z: np.ndarray, possible: np.ndarray, eps: float,
              margin: float) -> tuple[np.ndarray, bool]:
    """Values provably above ``eps`` at this distance, and whether every value is provably within it."""
    k = A.shape[0]
    rows = np.flatnonzero(possible)
    with np.errstate(divide="ignore"):
        la = np.log(A[rows]) + logs[rows][:, None]  # log Pr(X_t = v | X_p = x), up to a common factor
    excluded = np.zeros(k, dtype=bool)
    within = True
    for v in range(k):
        zx, col = Z[rows, v], la[:, v]
        if not zx.any():
            continue  # v cannot occur here under any value of X_p
        if not zx.all():  # some value of X_p rules v out exactly: the ratio is infinite
            excluded[v] = True
            within = False
            continue
        if not np.all(np.isfinite(col)) or np.any(A[rows, v] < _SAFE_MIN):
            within = False  # underflow: nothing provable either way
            continue
        spread = float(col.max() - col.min())
        if spread > eps + margin:
            excluded[v] = True
        if spread > eps - margin:
            within = False
    return excluded, within


def _side_reach(chain: Chain, eps: float, side: str, n: int) -> int:
    """How far from a private record Lemma 2 can exclude anything on ``side``: :math:`\\Delta^\\star_s`, or ``n``."""
    if chain.binary:
        return delta_star(chain, eps)
    if max_influence(chain, max(1, n - 1), side=side) > eps:
        return n  # no distance within the sequence brings the max-influence under eps
    return delta_star(chain, eps, side=side)


def lemma2_counts(judges: Sequence[Chain], n: int, *, eps: float, private: object) -> tuple[int, ...]:
    r"""Per value ``x``: at how many records Lemma 2 lets a private mechanism publish ``x`` at all.

    A value is excluded at a record where it is provably not publishable (:func:`publishable`:
    exactly near the boundary, outward beyond 64 records) under *any* chain of ``judges`` —
    each a chain the mechanisms are private for (a class of chains: its deciding chains; all
    with the same states).  The private records are never published.  Records farther than
    :math:`\Delta^\star_s(\epsilon)` from every private record on side ``s`` have every influence
    at most ``eps`` (the max-influence is non-increasing), so only stretches around groups of
    private records are evaluated: time independent of ``n``.  Exact integers.
    """
    n = check_n(n)
    eps = check_eps(eps)
    priv = check_private(private, n)
    k = check_chain(judges[0]).k
    for c in judges[1:]:
        check_chain(c)
    # binary chains are reversible: both sides read one table, within one reach (one pass per record)
    symmetric = all(c.binary for c in judges)
    left = max(_side_reach(c, eps, "left", n) for c in judges)
    right = left if symmetric else max(_side_reach(c, eps, "right", n) for c in judges)
    groups: list[list[int]] = []
    for p in priv:
        if groups and p - groups[-1][-1] <= left + right + 1:
            groups[-1].append(p)
        else:
            groups.append([p])
    counts = np.full(k, n, dtype=np.int64)
    for g in groups:
        lo, hi = max(0, g[0] - left), min(n - 1, g[-1] + right)
        t = np.arange(lo, hi + 1)
        allowed = np.ones((t.size, k), dtype=bool)
        allowed[np.asarray(g) - lo] = False
        for p in g:
            dist = np.abs(t - p)
            for side, mask in ((("right", dist > 0),) if symmetric else (("left", t < p), ("right", t > p))):
                d = dist[mask]
                if d.size:
                    for c in judges:
                        allowed[mask] &= _table(c, int(d.max()), eps, eps, side)[d - 1]
        counts -= (~allowed).sum(axis=0)
    return tuple(int(c) for c in counts)


def leakage_ceiling(chain: Chain, sides: int) -> float:
    r"""A budget above the leakage of every mechanism about a record with ``sides`` (0, 1, 2) sides.

    Redacting more is post-processing, so no mechanism leaks more than the one publishing every
    record but the private one, and that one's leakage is that of the nearest records (distance
    1): at most ``sides`` times the largest one-sided term :math:`\max_{x\ne x'}\ell_s(1)[x,x']`
    (:func:`~redactopt.model.influence.window_terms`; for a binary chain :math:`\max_x\ell_x(1)`,
    one side's log-ratios lying in :math:`[-\ell_1(1), \ell_0(1)]`).  Rounded outward beyond the
    closed form's error (:data:`~redactopt.model.influence.INFLUENCE_RTOL`).  For
    :math:`\epsilon` at or above it the privacy constraint excludes nothing: designs and bounds at
    the ceiling are those at :math:`\epsilon`.
    """
    if int(sides) == 0:  # a record with no neighbours: every mechanism leaks 0 (not 0 * inf)
        return 1e-12
    top = max(float(window_terms(chain, 1, side)[0].max()) for side in ("left", "right"))
    return int(sides) * top * (1.0 + 1e-6) + 1e-12
