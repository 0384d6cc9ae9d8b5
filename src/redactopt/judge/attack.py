r"""The attacker's view: a statistically valid *lower* bound on the leakage from samples.

The Bayes-optimal adversary knows the chain and the mechanism and computes, for an output
``y`` and two values :math:`x\ne x'` of the private record, the log-likelihood ratio
:math:`\Lambda(y)=\log\Pr(y\mid X_p=x)/\Pr(y\mid X_p=x')` by a forward pass
(:func:`~redactopt.judge.leakage.log_likelihood_ratios`).  For any event :math:`E` of outputs,
:math:`\epsilon`-privacy implies :math:`\Pr(Y\in E\mid X_p=x)\le e^\epsilon\Pr(Y\in E\mid X_p=x')`,
hence

.. math:: \mathcal L \ge \log\frac{\Pr(Y\in E\mid X_p=x)}{\Pr(Y\in E\mid X_p=x')} .

The attack draws chains conditioned on each value of :math:`X_p`, applies the mechanism, and
for every pair of values picks the event :math:`E=\{\pm\Lambda(y)\ge\tau\}` on a *selection*
half of the samples, and bounds both probabilities on the other half with Clopper–Pearson
intervals (Bonferroni over the :math:`k(k-1)` ordered pairs — the two directions of a binary
record), so that the reported bound holds with the stated confidence whatever the selection
did.  Chains on any number of states: the records after ``p`` follow the transition matrix, the
records before it the time-reversed one (a two-state chain is reversible, so both are ``P``).

**Only what can leak is sampled.**  Records published with certainty are observed without
noise, so by the Markov property everything beyond the nearest one on each side of
:math:`X_p` cancels from :math:`\Lambda(y)`: the attack samples the private record's
*segment* (its block of rows that can be redacted and the always-published row on each
side, :func:`redactopt.judge.audit.segments`), which gives the same :math:`\Lambda(y)`
— and the same lower bound — as sampling the whole sequence, at the cost of the block.
``restrict=False`` samples every record instead (the reference the restricted attack is
tested against): the segment's draws come first from the same generator, the other
records' from a child generator, so both modes draw the same segment outputs.

Chains are drawn in batches of at most :data:`BATCH_CELLS` (sample, record) cells of the
segment, vectorised over the samples, so memory does not grow with the number of samples.  With ``max_seconds`` the first batch
is timed and a run whose projected time exceeds the limit stops there
(:class:`~redactopt.errors.TooLongError`), seconds into what could have been hours.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from redactopt._validate import check_index
from redactopt.errors import TooLongError
from redactopt.judge.audit import as_sparse, segments
from redactopt.judge.leakage import check_mechanism, log_likelihood_ratios
from redactopt.model.chain import Chain, check_chain
from redactopt.model.varying import VaryingChain, chain_window, judged_chain

__all__ = ["AttackResult", "attack", "sample_outputs", "BATCH_CELLS"]

#: Most (sample, record) cells drawn at once: about 60 MB of working memory.
BATCH_CELLS = 5_000_000


@dataclass(frozen=True)
class AttackResult:
    """Outcome of :func:`attack`.

    ``lower_bound`` holds with probability at least ``confidence`` (over the sampling);
    ``max_observed`` is the largest :math:`|\\Lambda(y)|` seen — every observed output is in
    the support, so it is a deterministic lower bound too (``exact`` leakage >= it).
    """

    lower_bound: float
    confidence: float
    samples: int
    threshold: float
    favoured: int
    event_prob_favoured: float
    event_prob_other: float
    max_observed: float
    other: int = -1  #: the value the event is compared under (binary: ``1 - favoured``)


def _walk(x: np.ndarray, P: np.ndarray, ts: range, step: int, rng: np.random.Generator, offset: int = 0) -> None:
    """Continue the chains of ``x`` over records ``ts`` (each from its neighbour ``t - step``, one uniform
    per sample and record) with the ``(k, k)`` matrix ``P`` of that direction — or, for a chain that varies
    with the step, ``P`` the ``(n - 1, k, k)`` steps of that direction indexed by row (record ``t`` of ``x``
    is row ``t + offset``: forward from row ``t - 1`` through ``P[t - 1]``, backward through ``P[t]``)."""
    samples = x.shape[0]
    fixed = np.cumsum(P, axis=1)[:, :-1] if P.ndim == 2 else None  # the last state takes the rest
    for t in ts:
        M = P if P.ndim == 2 else P[t + offset - 1 if step == 1 else t + offset]
        if M.shape[0] == 2:  # two states: one comparison per cell
            x[:, t] = rng.random(samples) < M[x[:, t - step], 1]
            continue
        cum = fixed if fixed is not None else np.cumsum(M, axis=1)[:, :-1]
        x[:, t] = (rng.random(samples)[:, None] >= cum[x[:, t - step]]).sum(axis=1)


def _redacted(x: np.ndarray, q: np.ndarray, a: int, b: int, rng: np.random.Generator) -> np.ndarray:
    """Which of records ``a..b-1`` of the chains ``x`` are redacted (one uniform per cell)."""
    return rng.random((x.shape[0], b - a)) < q[np.arange(a, b)[None, :], x[:, a:b]]


def _matrices(chain: Chain | VaryingChain) -> tuple[np.ndarray, np.ndarray]:
    """The transition matrices forward (after ``p``) and backward (before it: the time reversal); for a
    chain that varies with the step, its steps and its reversed steps, by row."""
    if isinstance(chain, VaryingChain):
        return chain.steps(), chain.backward_steps()
    P = chain.transition_matrix
    return P, (P if chain.k == 2 else chain.reversed_matrix())


def _segment_chains(PP: tuple[np.ndarray, np.ndarray], q: np.ndarray, p: int, xp: int, samples: int,
                    rng: np.random.Generator, offset: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Chains on the records of ``q`` (rows ``offset ..`` of the chain) given ``X_p = xp`` (right side, then
    left side), then which are redacted."""
    x = np.empty((samples, q.shape[0]), dtype=np.int8)
    x[:, p] = xp
    _walk(x, PP[0], range(p + 1, q.shape[0]), 1, rng, offset)
    _walk(x, PP[1], range(p - 1, -1, -1), -1, rng, offset)
    return x, _redacted(x, q, 0, q.shape[0], rng)


def _extend(PP: tuple[np.ndarray, np.ndarray], q: np.ndarray, lo: int, x_seg: np.ndarray, mask_seg: np.ndarray,
            rng: np.random.Generator) -> np.ndarray:
    """Outputs of every record: the segment's (starting at row ``lo``) and the others', drawn from ``rng``."""
    n, hi = q.shape[0], lo + x_seg.shape[1] - 1
    x = np.empty((x_seg.shape[0], n), dtype=np.int8)
    x[:, lo : hi + 1] = x_seg
    _walk(x, PP[0], range(hi + 1, n), 1, rng)
    _walk(x, PP[1], range(lo - 1, -1, -1), -1, rng)
    mask = np.zeros(x.shape, dtype=bool)
    mask[:, lo : hi + 1] = mask_seg
    mask[:, hi + 1 :] = _redacted(x, q, hi + 1, n, rng)
    mask[:, :lo] = _redacted(x, q, 0, lo, rng)
    x[mask] = -1
    return x


def sample_outputs(chain: Chain, q: np.ndarray, p: int, xp: int, samples: int,
                   rng: np.random.Generator, *, segment: tuple[int, int] | None = None,
                   rest_rng: np.random.Generator | None = None) -> np.ndarray:
    """Outputs of the mechanism on chains conditioned on ``X_p = xp``; -1 is ⊥ (``(samples, n)`` int8).

    The chain is drawn outwards from ``p`` (right side, then left side, one uniform per
    sample and record), then the redactions.  With ``segment = (lo, hi)`` (inclusive,
    around ``p``) the records ``lo..hi`` are drawn that way first, and the others after
    them from ``rest_rng`` (default ``rng``): the segment's outputs are then exactly those
    of ``sample_outputs(chain, q[lo:hi + 1], p - lo, xp, samples, rng)``.
    """
    lo, hi = (0, q.shape[0] - 1) if segment is None else segment
    PP = _matrices(chain)
    x, mask = _segment_chains(PP, q[lo : hi + 1], p - lo, xp, samples, rng, lo)
    if segment is None:
        x[mask] = -1
        return x
    return _extend(PP, q, lo, x, mask, rng if rest_rng is None else rest_rng)


def _batch_sizes(samples: int, n: int) -> list[int]:
    size = max(1, BATCH_CELLS // n)
    return [min(size, samples - a) for a in range(0, samples, size)]


def _sampled_ratios(chain: Chain, q: np.ndarray, p: int, xp: int, samples: int, lo: int, cells: int,
                    rng: np.random.Generator, tick: Callable[[int], None], *,
                    rest_rng: np.random.Generator | None = None) -> dict[int, np.ndarray]:
    """:math:`\\Lambda_{a,b}(y)` (``a < b``, the pair of ``xp`` and each other value) of ``samples`` outputs
    drawn given ``X_p = xp``: one array per other value.

    The segment (``cells`` records from row ``lo``) is drawn in batches of at most
    :data:`BATCH_CELLS` cells; with ``rest_rng`` the other records of ``q`` are drawn from
    it, in smaller batches when the whole sequence would exceed :data:`BATCH_CELLS`.
    """
    PP = _matrices(chain)
    others = [v for v in range(chain.k) if v != xp]
    out = {v: np.empty(samples) for v in others}

    def ratios(y: np.ndarray, at: int) -> None:
        for v in others:
            out[v][at : at + y.shape[0]] = log_likelihood_ratios(chain, q, p, y, pair=(min(xp, v), max(xp, v)))

    a = 0
    for m in _batch_sizes(samples, cells):
        x, mask = _segment_chains(PP, q[lo : lo + cells], p - lo, xp, m, rng, lo)
        if rest_rng is None:
            x[mask] = -1
            ratios(x, a)
        else:
            b = 0
            for k in _batch_sizes(m, q.shape[0]):
                ratios(_extend(PP, q, lo, x[b : b + k], mask[b : b + k], rest_rng), a + b)
                b += k
        a += m
        tick(m)
    return out


def _cp_lower(k: int, n: int, a: float) -> float:
    from scipy.stats import beta as beta_dist  # a second to import: only an attack needs it

    return 0.0 if k == 0 else float(beta_dist.ppf(a, k, n - k + 1))


def _cp_upper(k: int, n: int, a: float) -> float:
    from scipy.stats import beta as beta_dist

    return 1.0 if k == n else float(beta_dist.ppf(1 - a, k + 1, n - k))


def attack(chain: Chain, redact_prob: object, *, p: int, samples: int = 100_000,
           confidence: float = 0.95, rng: np.random.Generator | None = None,
           progress: Callable[[int, int], None] | None = None, max_seconds: float | None = None,
           restrict: bool = True) -> AttackResult:
    """Run the Bayes-optimal adversary and return a lower bound on the leakage (nats).

    Parameters
    ----------
    chain : Chain
        Any number of states (a ``MarkovChain`` or a matrix chain).
    redact_prob : array_like or SparseRows
        The mechanism, ``(n, k)`` (a :class:`~redactopt.judge.certify.SparseRows` is never
        densified unless ``restrict=False``).
    p : int
        0-based private index.
    samples : int
        Chains drawn per value of ``X_p`` (half select the event, half estimate it).
    confidence : float
        Probability that ``lower_bound`` <= true leakage.
    rng : numpy.random.Generator, optional
        Injected randomness (default: a fresh generator from OS entropy).
    progress : callable, optional
        ``progress(chains drawn, 2 * samples)`` after every batch.
    max_seconds : float, optional
        Time the first batch and raise :class:`~redactopt.errors.TooLongError` if the
        whole run, at that pace, would take longer.
    restrict : bool
        Sample only ``p``'s segment (default; exact by the Markov property, see the module
        docstring).  ``False`` samples every record: the same lower bound for the same
        ``rng``, at the cost of the whole sequence.
    """
    if not isinstance(chain, VaryingChain):
        check_chain(chain)
    rows = as_sparse(redact_prob, k=chain.k)
    chain = judged_chain(chain, rows.n)
    p = check_index(p, rows.n, "p")
    if not bool(np.all(rows.rows(p, p + 1)[0] == 1.0)):
        raise ValueError(f"redact_prob row {p} (0-based) is the private record and must be all ones "
                         f"(always redacted), got {rows.rows(p, p + 1)[0].tolist()}")
    seg = next(segments(rows, [p]))
    cells = seg.rows.shape[0]  # records per chain that can matter; batches are sized by them
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 100:
        raise ValueError(f"samples must be an integer >= 100, got {samples!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    rng = np.random.default_rng() if rng is None else rng
    if restrict:
        q, (p_q,) = check_mechanism(seg.rows, p - seg.lo, "p", k=chain.k)
        lo, rest_rng = 0, None
        chain = chain_window(chain, seg.lo, seg.lo + cells)  # a varying chain: the segment's own steps
    else:  # the segment from rng, as when restricted; the rest from a child (spawning draws nothing)
        q, (p_q,) = check_mechanism(np.asarray(rows), p, "p", k=chain.k)
        lo, rest_rng = seg.lo, rng.spawn(1)[0]
    half = samples // 2
    drawn = 0
    start = time.perf_counter()

    def tick(m: int) -> None:
        nonlocal drawn
        first = drawn == 0
        drawn += m
        if first and max_seconds is not None and drawn < 2 * samples:
            projected = (time.perf_counter() - start) * 2 * samples / drawn
            if projected > max_seconds:
                raise TooLongError(f"the attack would take about {projected:.3g} s ({samples} chains of {cells} "
                                   f"records per value of X_p, at the pace of the first {drawn}), more than "
                                   f"max_seconds={max_seconds:g}", projected)
        if progress is not None:
            progress(drawn, 2 * samples)

    k = chain.k
    lam = {xp: _sampled_ratios(chain, q, p_q, xp, samples, lo, cells, rng, tick, rest_rng=rest_rng)
           for xp in range(k)}
    max_obs = float(max(np.abs(r).max() for per in lam.values() for r in per.values()))
    alpha_each = (1.0 - confidence) / (2.0 * k * (k - 1))  # k(k-1) directions x two one-sided intervals
    best = (0.0, 0.0, 0, 0.0, 0.0, 1)
    for a_, b_ in ((a_, b_) for a_ in range(k) for b_ in range(a_ + 1, k)):
        both = {a_: lam[a_][b_], b_: lam[b_][a_]}  # Lambda_{a,b} on the samples given a, and given b
        for favoured, other, sign in ((a_, b_, 1.0), (b_, a_, -1.0)):
            val, tau, pf, po = _direction(sign * both[favoured], sign * both[other], half, alpha_each)
            if val > best[0]:
                best = (val, tau, favoured, pf, po, other)
    return AttackResult(
        lower_bound=max(0.0, best[0]), confidence=confidence, samples=samples, threshold=best[1],
        favoured=best[2], event_prob_favoured=best[3], event_prob_other=best[4], max_observed=max_obs,
        other=best[5],
    )


def _direction(lam_f: np.ndarray, lam_o: np.ndarray, half: int, alpha_each: float) -> tuple[float, float, float, float]:
    """One direction of one pair: the event ``{Lambda >= tau}`` chosen on the selection halves, its
    Clopper-Pearson log-ratio bound on the estimation halves; ``(bound, tau, p_favoured, p_other)``."""
    sel_f, sel_o = lam_f[:half], lam_o[:half]
    est_f, est_o = lam_f[half:], lam_o[half:]
    taus = np.unique(np.round(sel_f, 12))
    if taus.size == 0:
        return 0.0, 0.0, 0.0, 0.0
    # choose tau on the selection half: maximise the Clopper–Pearson bound there
    chosen, chosen_val = taus[0], -math.inf
    for tau in taus[-200:]:
        kf, ko = int((sel_f >= tau - 1e-12).sum()), int((sel_o >= tau - 1e-12).sum())
        lo, hi = _cp_lower(kf, half, alpha_each), _cp_upper(ko, half, alpha_each)
        if lo > 0 and math.log(lo / hi) > chosen_val:
            chosen, chosen_val = tau, math.log(lo / hi)
    m = est_f.shape[0]
    kf, ko = int((est_f >= chosen - 1e-12).sum()), int((est_o >= chosen - 1e-12).sum())
    lo, hi = _cp_lower(kf, m, alpha_each), _cp_upper(ko, m, alpha_each)
    return (math.log(lo / hi) if lo > 0 else 0.0), float(chosen), kf / m, ko / m
