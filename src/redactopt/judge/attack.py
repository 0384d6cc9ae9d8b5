r"""The attacker's view: a statistically valid *lower* bound on the leakage from samples.

The Bayes-optimal adversary knows the chain and the mechanism and computes, for an output
``y``, the log-likelihood ratio :math:`\Lambda(y)=\log\Pr(y\mid X_p=0)/\Pr(y\mid X_p=1)` by a
forward pass (the posterior log-odds of :math:`X_p` minus the prior log-odds).  For any
event :math:`E` of outputs, :math:`\epsilon`-privacy implies
:math:`\Pr(Y\in E\mid X_p=x)\le e^\epsilon\Pr(Y\in E\mid X_p=\bar x)`, hence

.. math:: \mathcal L \ge \log\frac{\Pr(Y\in E\mid X_p=x)}{\Pr(Y\in E\mid X_p=\bar x)} .

The attack draws chains conditioned on :math:`X_p=0` and on :math:`X_p=1`, applies the
mechanism, picks the event :math:`E=\{\pm\Lambda(y)\ge\tau\}` on a *selection* half of the
samples, and bounds both probabilities on the other half with Clopper–Pearson intervals
(Bonferroni over the two directions), so that the reported bound holds with the stated
confidence whatever the selection did.

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
from redactopt.model.chain import MarkovChain

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


def _walk(x: np.ndarray, P: np.ndarray, ts: range, step: int, rng: np.random.Generator) -> None:
    """Continue the chains of ``x`` over records ``ts`` (each from its neighbour ``t - step``)."""
    samples = x.shape[0]
    for t in ts:  # the stationary chain is reversible: backward steps use P too
        x[:, t] = rng.random(samples) < P[x[:, t - step], 1]


def _redacted(x: np.ndarray, q: np.ndarray, a: int, b: int, rng: np.random.Generator) -> np.ndarray:
    """Which of records ``a..b-1`` of the chains ``x`` are redacted (one uniform per cell)."""
    return rng.random((x.shape[0], b - a)) < q[np.arange(a, b)[None, :], x[:, a:b]]


def _segment_chains(P: np.ndarray, q: np.ndarray, p: int, xp: int, samples: int, rng: np.random.Generator,
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Chains on the records of ``q`` given ``X_p = xp`` (right side, then left side), then which are redacted."""
    x = np.empty((samples, q.shape[0]), dtype=np.int8)
    x[:, p] = xp
    _walk(x, P, range(p + 1, q.shape[0]), 1, rng)
    _walk(x, P, range(p - 1, -1, -1), -1, rng)
    return x, _redacted(x, q, 0, q.shape[0], rng)


def _extend(P: np.ndarray, q: np.ndarray, lo: int, x_seg: np.ndarray, mask_seg: np.ndarray,
            rng: np.random.Generator) -> np.ndarray:
    """Outputs of every record: the segment's (starting at row ``lo``) and the others', drawn from ``rng``."""
    n, hi = q.shape[0], lo + x_seg.shape[1] - 1
    x = np.empty((x_seg.shape[0], n), dtype=np.int8)
    x[:, lo : hi + 1] = x_seg
    _walk(x, P, range(hi + 1, n), 1, rng)
    _walk(x, P, range(lo - 1, -1, -1), -1, rng)
    mask = np.zeros(x.shape, dtype=bool)
    mask[:, lo : hi + 1] = mask_seg
    mask[:, hi + 1 :] = _redacted(x, q, hi + 1, n, rng)
    mask[:, :lo] = _redacted(x, q, 0, lo, rng)
    x[mask] = -1
    return x


def sample_outputs(chain: MarkovChain, q: np.ndarray, p: int, xp: int, samples: int,
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
    P = chain.transition_matrix
    x, mask = _segment_chains(P, q[lo : hi + 1], p - lo, xp, samples, rng)
    if segment is None:
        x[mask] = -1
        return x
    return _extend(P, q, lo, x, mask, rng if rest_rng is None else rest_rng)


def _batch_sizes(samples: int, n: int) -> list[int]:
    size = max(1, BATCH_CELLS // n)
    return [min(size, samples - a) for a in range(0, samples, size)]


def _sampled_ratios(chain: MarkovChain, q: np.ndarray, p: int, xp: int, samples: int, lo: int, cells: int,
                    rng: np.random.Generator, tick: Callable[[int], None], *,
                    rest_rng: np.random.Generator | None = None) -> np.ndarray:
    """:math:`\\Lambda(y)` of ``samples`` outputs drawn given ``X_p = xp``.

    The segment (``cells`` records from row ``lo``) is drawn in batches of at most
    :data:`BATCH_CELLS` cells; with ``rest_rng`` the other records of ``q`` are drawn from
    it, in smaller batches when the whole sequence would exceed :data:`BATCH_CELLS`.
    """
    P = chain.transition_matrix
    out = np.empty(samples)
    a = 0
    for m in _batch_sizes(samples, cells):
        x, mask = _segment_chains(P, q[lo : lo + cells], p - lo, xp, m, rng)
        if rest_rng is None:
            x[mask] = -1
            out[a : a + m] = log_likelihood_ratios(chain, q, p, x)
        else:
            b = 0
            for k in _batch_sizes(m, q.shape[0]):
                y = _extend(P, q, lo, x[b : b + k], mask[b : b + k], rest_rng)
                out[a + b : a + b + k] = log_likelihood_ratios(chain, q, p, y)
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


def attack(chain: MarkovChain, redact_prob: object, *, p: int, samples: int = 100_000,
           confidence: float = 0.95, rng: np.random.Generator | None = None,
           progress: Callable[[int, int], None] | None = None, max_seconds: float | None = None,
           restrict: bool = True) -> AttackResult:
    """Run the Bayes-optimal adversary and return a lower bound on the leakage (nats).

    Parameters
    ----------
    redact_prob : array_like or SparseRows
        The mechanism, ``(n, 2)`` (a :class:`~redactopt.judge.certify.SparseRows` is never
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
    rows = as_sparse(redact_prob)
    p = check_index(p, rows.n, "p")
    if rows.rows(p, p + 1)[0].tolist() != [1.0, 1.0]:
        raise ValueError(f"redact_prob row {p} (0-based) is the private record and must be [1, 1] "
                         f"(always redacted), got {rows.rows(p, p + 1)[0].tolist()}")
    seg = next(segments(rows, [p]))
    cells = seg.rows.shape[0]  # records per chain that can matter; batches are sized by them
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 100:
        raise ValueError(f"samples must be an integer >= 100, got {samples!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    rng = np.random.default_rng() if rng is None else rng
    if restrict:
        q, (p_q,) = check_mechanism(seg.rows, p - seg.lo, "p")
        lo, rest_rng = 0, None
    else:  # the segment from rng, as when restricted; the rest from a child (spawning draws nothing)
        q, (p_q,) = check_mechanism(np.asarray(rows), p, "p")
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

    lam = {xp: _sampled_ratios(chain, q, p_q, xp, samples, lo, cells, rng, tick, rest_rng=rest_rng)
           for xp in (0, 1)}
    max_obs = float(max(np.abs(lam[0]).max(), np.abs(lam[1]).max()))
    alpha_each = (1.0 - confidence) / 4.0  # two directions x two one-sided intervals
    best = (0.0, 0.0, 0, 0.0, 0.0)
    for favoured, sign in ((0, 1.0), (1, -1.0)):
        sel_f, sel_o = sign * lam[favoured][:half], sign * lam[1 - favoured][:half]
        est_f, est_o = sign * lam[favoured][half:], sign * lam[1 - favoured][half:]
        taus = np.unique(np.round(sel_f, 12))
        if taus.size == 0:
            continue
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
        val = math.log(lo / hi) if lo > 0 else 0.0
        if val > best[0]:
            best = (val, float(chosen), favoured, kf / m, ko / m)
    return AttackResult(
        lower_bound=max(0.0, best[0]), confidence=confidence, samples=samples, threshold=best[1],
        favoured=best[2], event_prob_favoured=best[3], event_prob_other=best[4], max_observed=max_obs,
    )
