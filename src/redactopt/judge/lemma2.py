r"""Lemma 2 (Appendix D): which values a private mechanism may publish at all, decided exactly.

If ``v`` is published with positive probability at distance ``d`` from ``p``, the event
:math:`\{Y_d=v\}` has likelihood ratio :math:`(P^d)_{0v}/(P^d)_{1v}` (the factor
:math:`1-q_d[v]` cancels), and it is a union of outputs, so its ratio is a mediant of
theirs: some output is at least as far from 1.  A side whose log-ratios all lie in
``[-lower, upper]`` can therefore publish ``v`` at ``d`` only if
:math:`-\text{lower}\le\rho_v(d)\le\text{upper}` (:func:`publishable`); with both budgets
``eps`` this is :math:`i(X_p\rightsquigarrow X_t=v)\le\epsilon`, which gives the cheap
bound :func:`lemma2_upper_bound`.

**Boundary decisions.**  The closed-form :math:`\rho` is accurate to
:data:`~redactopt.model.influence.INFLUENCE_RTOL`; within that relative distance of a
budget the verdict is taken in rational arithmetic
(:func:`redactopt.judge.exact.n_step_ratio`, :func:`~redactopt.judge.exact.ratio_at_most_exp`)
for distances up to 64, and a value is kept (outward) where it cannot be decided or the
distance is larger.  So an exclusion is always a proof, and every bound built on it a bound.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from redactopt._validate import check_eps, check_n, check_private
from redactopt.judge.exact import MAX_EXACT_N, n_step_ratio, ratio_at_most_exp
from redactopt.judge.tolerances import round_up
from redactopt.model.chain import MarkovChain
from redactopt.model.influence import (
    INFLUENCE_RTOL,
    delta_star,
    provably_above,
    side_log_ratio_maxima,
    side_log_ratios,
)

__all__ = ["publishable", "lemma2_upper_bound", "lemma2_counts", "leakage_ceiling"]


def publishable(chain: MarkovChain, m: int, *, upper: float, lower: float) -> np.ndarray:
    r"""Lemma 2 on one side: may value ``v`` be published at distance ``d = 1..m``? (``(m, 2)`` bool).

    True unless it is proved that :math:`\rho_v(d) > \text{upper}` or
    :math:`\rho_v(d) < -\text{lower}` (module docstring); ``upper, lower >= 0``.
    """
    if m <= 0:
        return np.zeros((0, 2), dtype=bool)
    # each distance is judged on its own, so a longer table's first m rows are this one:
    # memoised by chain and budgets, grown by doubling (release plans bound hundreds of regions)
    key = (chain, float(upper), float(lower))
    table = _PUBLISHABLE.get(key)
    if table is None or table.shape[0] < m:
        table = _publishable(chain, max(int(m), 2 * (0 if table is None else table.shape[0])), upper, lower)
        if len(_PUBLISHABLE) >= 256:
            _PUBLISHABLE.clear()
        _PUBLISHABLE[key] = table
    return table[: int(m)].copy()


#: :func:`publishable` tables by (chain, upper, lower).
_PUBLISHABLE: dict[tuple[MarkovChain, float, float], np.ndarray] = {}


def _publishable(chain: MarkovChain, m: int, upper: float, lower: float) -> np.ndarray:
    rho = side_log_ratios(chain, np.arange(1, int(m) + 1))
    out = provably_above(rho, upper) | provably_above(-rho, lower)
    near = ~out & ((rho > upper * (1.0 - INFLUENCE_RTOL)) | (-rho > lower * (1.0 - INFLUENCE_RTOL)))
    for i, v in zip(*np.nonzero(near)):
        d = int(i) + 1
        if d > MAX_EXACT_N:
            continue  # kept: outward
        ratio = n_step_ratio(chain.alpha, chain.beta, d, int(v))
        if ratio_at_most_exp(ratio, upper) is False or ratio_at_most_exp(1 / ratio, lower) is False:
            out[i, v] = True
    return ~out


def lemma2_upper_bound(chain: MarkovChain, n: int, *, eps: float, private: object) -> float:
    r"""Cheap valid upper bound on the utility of every :math:`\epsilon`-private mechanism (Lemma 2).

    By Lemma 2 (Appendix D) with :math:`\mathcal Q=\{t\}`, value ``x`` can be published at
    ``t`` with positive probability only if :math:`i(X_p\rightsquigarrow X_t=x)\le\epsilon`
    for every private ``p``; the private records are never published.  Hence

    .. math:: \nu \le \frac1n\sum_{t}\sum_x \pi_x\,\mathbb 1\big[\max_p i(X_p\rightsquigarrow X_t=x)\le\epsilon\big]
              = \sum_x \pi_x\,c_x/n

    with :math:`c_x` the records where ``x`` is publishable (:func:`lemma2_counts`), rounded
    outward (a float sum of excluded masses once gave -1.2e-16 for a bound of exactly 0).
    ``private`` holds 0-based indices.
    """
    counts = lemma2_counts((chain,), n, eps=eps, private=private)
    pi = chain.stationary
    return round_up((float(pi[0]) * counts[0] + float(pi[1]) * counts[1]) / check_n(n), 4)


def lemma2_counts(judges: Sequence[MarkovChain], n: int, *, eps: float, private: object) -> tuple[int, int]:
    r"""Per value ``x``: at how many records Lemma 2 lets a private mechanism publish ``x`` at all.

    A value is excluded at a record where it is provably not publishable (:func:`publishable`:
    exactly near the boundary, outward beyond 64 records) under *any* chain of ``judges`` —
    each a chain the mechanisms are private for (a class of chains: its deciding chains).  The
    private records are never published.  Records farther than :math:`\Delta^\star(\epsilon)`
    from every private record have both influences at most ``eps`` (the max-influence is
    non-increasing), so only stretches around groups of private records are evaluated: time
    independent of ``n``.  Exact integers.
    """
    n = check_n(n)
    eps = check_eps(eps)
    priv = check_private(private, n)
    reach = max(delta_star(c, eps) for c in judges)
    groups: list[list[int]] = []
    for p in priv:
        if groups and p - groups[-1][-1] <= 2 * reach + 1:
            groups[-1].append(p)
        else:
            groups.append([p])
    counts = np.full(2, n, dtype=np.int64)
    for g in groups:
        lo, hi = max(0, g[0] - reach), min(n - 1, g[-1] + reach)
        t = np.arange(lo, hi + 1)
        allowed = np.ones((t.size, 2), dtype=bool)
        allowed[np.asarray(g) - lo] = False
        for p in g:
            d = np.abs(t - p)
            far = d > 0
            for c in judges:
                allowed[far] &= publishable(c, int(d.max()), upper=eps, lower=eps)[d[far] - 1]
        counts -= (~allowed).sum(axis=0)
    return int(counts[0]), int(counts[1])


def leakage_ceiling(chain: MarkovChain, sides: int) -> float:
    r"""A budget above the leakage of every mechanism about a record with ``sides`` (0, 1, 2) sides.

    Redacting more is post-processing, so no mechanism leaks more than the one publishing every
    record but the private one, and that one's leakage is that of the nearest records (distance
    1): :math:`\max_x \text{sides}\cdot\ell_x(1)`; one side's log-ratios lie in
    :math:`[-\ell_1(1), \ell_0(1)]`.  Rounded outward beyond the closed form's error
    (:data:`~redactopt.model.influence.INFLUENCE_RTOL`).  For :math:`\epsilon` at or above it the
    privacy constraint excludes nothing: designs and bounds at the ceiling are those at
    :math:`\epsilon`.
    """
    return int(sides) * float(side_log_ratio_maxima(chain, 1)[0].max()) * (1.0 + 1e-6) + 1e-12
