r"""Exact leakage (Definition 1) and utility (Definition 2) of local redaction mechanisms, for every chain.

A local redaction mechanism on a chain with ``k`` states is an ``(n, k)`` array ``q`` with
``q[t, x] = Pr(Y_t = ⊥ | X_t = x)``.  Its leakage about the private record ``X_p`` is the largest
log-likelihood ratio any output allows between two values of ``X_p``:

.. math::
    \mathcal{L}(X_p \to \mathbf{Y}) = \max_{x\ne x'}\ \log \sup_{\mathbf{y}\in\operatorname{supp}(\mathbf{Y})}
    \frac{\Pr(\mathbf{Y}=\mathbf{y}\mid X_p=x)}{\Pr(\mathbf{Y}=\mathbf{y}\mid X_p=x')} ,

infinite when an output has positive probability under ``x`` and none under ``x'``.

**Why O(n) suffices.**  Given ``X_p`` the records left and right of ``p`` are
independent, so the likelihood ratio of an output factorises into a left and a right
ratio, and the supremum factorises too (for a fixed pair of values).  On one side, the first
published record ``Y_{p+j+1} = v`` cuts the dependence on everything farther away
(Markov property), so the ratio of an output depends only on "the j nearest records
are ⊥, the (j+1)-th shows v" or on "all records of the side are ⊥"; and a record published
with certainty ends every pattern of its side (the evaluators stop there).

**Two kernels, chosen by the chain.**  For a binary chain
(:attr:`~redactopt.model.chain.Chain.binary`: two states, every transition probability in
(0, 1) — a :class:`~redactopt.model.chain.MarkovChain` or the same chain given as a ``2 x 2``
matrix) the ratios are those of 2x2 prefix products in closed form
(:mod:`redactopt.judge.kernel2`, ``>= 1e7`` records/s); any other chain goes through the
k x k prefix products of :mod:`redactopt.judge.kernelk`.  Callers never choose: :func:`leakage`
looks at the chain.  Probabilities as small as 1e-300 count exactly like large ones
(docs/mathematics.md, "support matters").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from redactopt._validate import check_private, check_redact_prob
from redactopt.judge.kernel2 import SideExtremes, side_extremes, side_pattern_products, two_state_leakage
from redactopt.judge.kernelk import matrix_leakage
from redactopt.model.chain import Chain, check_chain
from redactopt.model.varying import VaryingChain, judged_chain

__all__ = [
    "LeakageResult",
    "leakage",
    "leakage_segment",
    "max_leakage",
    "leakage_bruteforce",
    "output_log_ratio",
    "log_likelihood_ratios",
    "log_likelihood_ratio",
    "SideExtremes",
    "side_extremes",
    "side_pattern_products",
    "utility",
    "utility_monte_carlo",
    "MonteCarloUtility",
    "sample_chains",
    "check_mechanism",
    "MAX_BRUTEFORCE_OUTPUTS",
]

#: The kernel of :func:`leakage`, by :attr:`~redactopt.model.chain.Chain.binary`.
KERNELS = {True: two_state_leakage, False: matrix_leakage}


@dataclass(frozen=True)
class LeakageResult:
    r"""Exact leakage of a mechanism about one private record, with a witness.

    Attributes
    ----------
    leakage : float
        :math:`\mathcal{L}(X_p \to \mathbf{Y})` in nats (Definition 1; ``inf`` when an output
        rules a value out).
    witness : numpy.ndarray of int
        An output in the support that attains it: a state index, or -1 for ⊥; index 0 is
        record 1.  :meth:`witness_output` gives it with the chain's labels and ``None`` for ⊥.
    pair : tuple of int
        The ordered pair ``(x, x')`` (state indices) of the worst ratio
        :math:`\Pr(\mathbf y\mid X_p=x)/\Pr(\mathbf y\mid X_p=x')`.
    p : int
        0-based private index.
    left_log_ratio, right_log_ratio : float
        The left and right terms of the worst log-ratio (signed, in the direction favouring
        ``pair[0]``); they add up to ``leakage``.
    labels : tuple
        The chain's state labels (``(0, 1)`` for a :class:`~redactopt.model.chain.MarkovChain`).
    """

    leakage: float
    witness: np.ndarray
    pair: tuple[int, int]
    p: int
    left_log_ratio: float
    right_log_ratio: float
    labels: tuple = (0, 1)

    @property
    def favoured(self) -> int:
        """The value ``x`` of ``X_p`` in the numerator of the worst ratio (``pair[0]``)."""
        return self.pair[0]

    @property
    def pair_labels(self) -> tuple:
        """The worst pair as labels: the output favours ``pair_labels[0]`` over ``pair_labels[1]``."""
        return self.labels[self.pair[0]], self.labels[self.pair[1]]

    def witness_output(self) -> list:
        """The witness as a list of state labels and ``None`` (⊥), record 1 first."""
        w = np.asarray(self.witness)
        table = np.empty(len(self.labels) + 1, dtype=object)  # index 0: ⊥ (-1 + 1), then the labels
        table[1:] = list(self.labels)
        return table[w.astype(np.int64) + 1].tolist()


# --------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------
def check_mechanism(redact_prob: object, private: object, name: str = "private", *,
                    k: int = 2) -> tuple[np.ndarray, tuple[int, ...]]:
    """Validate an ``(n, k)`` mechanism and its 0-based private record(s).

    Every private record must be redacted with probability 1 whatever its value (its row all
    ones): publishing it, even rarely, makes the leakage infinite.
    """
    q = check_redact_prob(redact_prob, k=k)
    priv = check_private(private, q.shape[0], name)
    for p in priv:
        if not np.all(q[p] == 1.0):
            raise ValueError(f"redact_prob row {p} (0-based) is the private record and must be "
                             f"{'[1, 1]' if k == 2 else 'all ones'} (always redacted), got {q[p].tolist()}")
    return q, priv


# --------------------------------------------------------------------------
# the exact leakage
# --------------------------------------------------------------------------
def leakage(chain: Chain, redact_prob: object, p: int) -> LeakageResult:
    r"""Exact leakage :math:`\mathcal{L}(X_p\to\mathbf{Y})` (Definition 1) and a witness, in O(n).

    Parameters
    ----------
    chain : Chain
        Any chain (a :class:`~redactopt.model.chain.MarkovChain`, or ``k`` states).
    redact_prob : array_like, shape (n, k)
        ``redact_prob[t, x] = Pr(Y_t = ⊥ | X_t = x)``; row ``p`` must be all ones.
    p : int
        0-based index of the private record.

    Returns
    -------
    LeakageResult
        The leakage in nats and an output of positive probability that attains it.

    Notes
    -----
    See the module docstring for the reduction to the patterns of each side and the two
    kernels.  Each side is evaluated up to its first record published with certainty, so the
    cost is that of the private record's segment.  The result agrees with
    :func:`leakage_bruteforce` (all :math:`(k+1)^n` outputs) to ~1e-12 and with the rational
    evaluator of :mod:`redactopt.judge.exact` (``tests/test_leakage.py``, ``tests/test_kleakage.py``).
    """
    q, (p,) = check_mechanism(redact_prob, p, "p", k=_k_of(chain))
    chain = judged_chain(chain, q.shape[0])
    value, pair, left, right, witness = KERNELS[chain.binary](chain, q, p)
    return LeakageResult(value, witness, pair, p, left, right, chain.labels)


def _k_of(chain: object) -> int:
    """The number of states of a chain a judge takes (a ``TypeError`` for anything else)."""
    if isinstance(chain, (Chain, VaryingChain)):
        return chain.k
    raise TypeError(f"chain must be a Chain (a MarkovChain or a transition matrix) or a VaryingChain, "
                    f"got {type(chain).__name__}")


#: :func:`leakage` already works on the private record's segment (each side stops at its first
#: record published with certainty) and continues the witness beyond it; the old name stays.
leakage_segment = leakage


def max_leakage(chain: Chain, redact_prob: object, private: object) -> LeakageResult:
    """The largest exact leakage over several private records (each checked on its own).

    ``private`` holds 0-based indices; every private row must be all ones.
    """
    q, priv = check_mechanism(redact_prob, private, k=_k_of(chain))
    chain = judged_chain(chain, q.shape[0])
    return max((leakage(chain, q, p) for p in priv), key=lambda r: r.leakage)


# --------------------------------------------------------------------------
# independent references
# --------------------------------------------------------------------------
#: Largest number of outputs :func:`leakage_bruteforce` enumerates (``3^13`` for two states).
MAX_BRUTEFORCE_OUTPUTS = 2_000_000


def leakage_bruteforce(chain: Chain, redact_prob: object, p: int) -> LeakageResult:
    r"""Reference leakage by enumerating all :math:`(k+1)^n` outputs (no patterns, no reversed chain).

    A forward pass from the stationary law over the whole output tree gives
    :math:`\Pr(\mathbf y, X_p=x)` for every output; outputs of positive probability are kept and
    the largest log-ratio over ordered pairs taken (``inf`` where one value rules the other out;
    the first output and pair attaining it).  Shares no code with :func:`leakage`.  At most
    :data:`MAX_BRUTEFORCE_OUTPUTS` outputs.
    """
    q, (p,) = check_mechanism(redact_prob, p, "p", k=_k_of(chain))
    n, k = q.shape
    if (k + 1) ** n > MAX_BRUTEFORCE_OUTPUTS:
        raise ValueError(f"leakage_bruteforce enumerates (k+1)^n = {(k + 1) ** n} outputs; "
                         f"at most {MAX_BRUTEFORCE_OUTPUTS} allowed")
    first, steps = _forward_law(chain, n)

    def emission(row: np.ndarray) -> np.ndarray:  # e[y, x] = Pr(Y_t = y | X_t = x), y = k is ⊥
        return np.vstack([np.diag(1.0 - row), row[None, :]])

    F = (emission(q[0]) * first[None, :])[:, None, :] * np.ones((1, k, 1))  # [output, x_p, x_t]
    if p == 0:
        F = F * np.eye(k)[None]
    for t in range(1, n):
        moved = F @ steps[t - 1]
        F = (moved[:, None, :, :] * emission(q[t])[None, :, None, :]).reshape(-1, k, k)
        if t == p:
            F = F * np.eye(k)[None]
    joint = F.sum(axis=2)
    keep = np.flatnonzero(joint.sum(axis=1) > 0.0)
    pi = _marginal_at(chain, p)
    with np.errstate(divide="ignore", invalid="ignore"):
        lc = np.log(joint[keep] / pi[None, :])
        D = lc[:, :, None] - lc[:, None, :]
    D = np.where(np.isnan(D), -np.inf, D)
    D[:, np.arange(k), np.arange(k)] = -np.inf
    i, x, y = np.unravel_index(int(np.argmax(D)), D.shape)
    code = int(keep[i])
    digits = []
    for _ in range(n):
        digits.append(code % (k + 1))
        code //= k + 1
    witness = np.array([-1 if d == k else d for d in reversed(digits)], dtype=np.int64)
    return LeakageResult(float(D[i, x, y]), witness, (int(x), int(y)), p, math.nan, math.nan, chain.labels)


def _forward_law(chain: object, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The law of the first record and the ``n - 1`` step matrices, for the forward-pass references.

    A :class:`~redactopt.model.chain.Chain` is stationary (its law, the same matrix every step); a
    :class:`~redactopt.model.varying.VaryingChain` of ``n`` rows gives its own (no reversal involved).
    """
    if isinstance(chain, VaryingChain):
        if chain.n != n:
            raise ValueError(f"chain has {chain.n} rows but the mechanism has {n}")
        return np.asarray(chain.initial), chain.steps()
    check_chain(chain)
    return chain.stationary, np.broadcast_to(chain.transition, (max(n - 1, 0),) + chain.transition.shape)


def _marginal_at(chain: Chain | VaryingChain, p: int) -> np.ndarray:
    """The law of row ``p``: the stationary law of a homogeneous chain, the marginal of a varying one."""
    return chain.marginal(p) if isinstance(chain, VaryingChain) else chain.stationary


def log_likelihood_ratios(chain: Chain, redact_prob: object, p: int, outputs: object,
                          pair: tuple[int, int] = (0, 1)) -> np.ndarray:
    r""":math:`\log\Pr(\mathbf Y=\mathbf y\mid X_p=x)/\Pr(\mathbf Y=\mathbf y\mid X_p=x')` for each row of ``outputs``.

    A forward pass over the records for all outputs at once (normalised at every step),
    independent of the pattern reduction of :func:`leakage`, which it re-checks.  ``outputs``
    is an ``(S, n)`` integer array of state indices with -1 for ⊥ (0-based ``p``); ``pair`` is
    ``(x, x')``.  An output of probability 0 under one value gets ``±inf``; under both, ``nan``.
    """
    q, (p,) = check_mechanism(redact_prob, p, "p", k=_k_of(chain))
    y = np.asarray(outputs)
    S, n = y.shape
    if n != q.shape[0]:
        raise ValueError(f"outputs must have {q.shape[0]} columns, got {n}")
    first, steps = _forward_law(chain, n)
    k = chain.k
    keep = np.zeros((2, 1, k))
    keep[0, 0, pair[0]] = keep[1, 0, pair[1]] = 1.0
    logs = np.zeros((2, S))
    vec = np.broadcast_to(first, (2, S, k)).copy()  # [hypothesis, output, state]
    states = np.arange(k)[None, :]
    for t in range(n):
        if t:
            vec = vec @ steps[t - 1]
        yt = y[:, t]
        em = np.where(yt[:, None] == -1, q[t][None, :], (1.0 - q[t][None, :]) * (states == yt[:, None]))
        vec = vec * em[None, :, :]
        if t == p:
            vec = vec * keep
        s = vec.sum(axis=2)
        with np.errstate(divide="ignore"):
            logs += np.log(s)
        vec = vec / np.where(s > 0.0, s, 1.0)[:, :, None]
    pi = _marginal_at(chain, p)
    with np.errstate(invalid="ignore"):
        return logs[0] - logs[1] - math.log(pi[pair[0]]) + math.log(pi[pair[1]])


def output_log_ratio(chain: Chain, redact_prob: object, p: int, output: object) -> float:
    """:func:`log_likelihood_ratios` of one output (pair ``(0, 1)``); ``ValueError`` when it has probability 0.

    ``output`` holds state indices (0, 1 for a binary chain) or ``None`` (⊥) per record, index 0
    first; a numpy array may use -1 for ⊥.
    """
    check_chain(chain)
    q, (p,) = check_mechanism(redact_prob, p, "p", k=chain.k)
    y = []
    for t, v in enumerate(list(output)):  # type: ignore[call-overload]
        if v is None or (not isinstance(v, bool) and v == -1):
            y.append(-1)
        elif not isinstance(v, bool) and v in range(chain.k):
            y.append(int(v))
        else:
            values = "0, 1" if chain.k == 2 else f"0..{chain.k - 1}"
            raise ValueError(f"output entries must be {values} or None, got {v!r} at index {t}")
    if len(y) != q.shape[0]:
        raise ValueError(f"output must have {q.shape[0]} entries, got {len(y)}")
    r = float(log_likelihood_ratios(chain, q, p, np.array([y], dtype=np.int64))[0])
    if not math.isfinite(r):
        raise ValueError("output has probability 0 under the mechanism")
    return r


def log_likelihood_ratio(chain: Chain, redact_prob: object, p: int, output: object,
                         pair: tuple[int, int] = (0, 1)) -> float:
    r""":math:`\log\Pr(\mathbf y\mid X_p=x)-\log\Pr(\mathbf y\mid X_p=x')` of one output by a forward pass.

    ``output`` holds state indices and -1 (⊥), record 1 first; ``pair = (x, x')``.  Independent of
    the pattern reduction (re-checks witnesses).  ``±inf`` when one probability is 0; a
    ``ValueError`` when both are.
    """
    q, (p,) = check_mechanism(redact_prob, p, "p", k=_k_of(chain))
    raw = np.asarray(output)
    if raw.dtype == object or not np.issubdtype(raw.dtype, np.number) or not np.all(raw == np.round(raw)):
        raise ValueError(f"output must hold {q.shape[0]} state indices or -1 (⊥), got {output!r}")
    y = raw.astype(np.int64)
    if y.shape != (q.shape[0],) or np.any(y < -1) or np.any(y >= chain.k):
        raise ValueError(f"output must hold {q.shape[0]} state indices or -1 (⊥)")
    if len(pair) != 2 or not all(isinstance(h, (int, np.integer)) and not isinstance(h, bool)
                                 and 0 <= h < chain.k for h in pair):
        raise ValueError(f"pair must be two state indices in 0..{chain.k - 1}, got {pair!r}")
    first, steps = _forward_law(chain, q.shape[0])
    pi = _marginal_at(chain, p)
    logs = []
    for h in pair:
        vec, total = np.array(first, dtype=float), 0.0
        for t in range(q.shape[0]):
            if t:
                vec = vec @ steps[t - 1]
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


# --------------------------------------------------------------------------
# utility (Definition 2)
# --------------------------------------------------------------------------
def utility(chain: Chain, redact_prob: object) -> float:
    r"""Exact utility :math:`\nu = \frac1n \mathbb{E}\sum_t \mathbb 1(Y_t = X_t)` (Definition 2).

    With stationary marginals :math:`\pi`, :math:`\nu = \frac1n\sum_t\sum_x \pi_x (1-q_t[x])`; on a
    :class:`~redactopt.model.varying.VaryingChain`, with each row's own marginal :math:`\pi_t`.
    """
    q = check_redact_prob(redact_prob, k=_k_of(chain))
    if isinstance(chain, VaryingChain):
        chain = judged_chain(chain, q.shape[0])
    if isinstance(chain, VaryingChain):  # the marginal of each row
        return float(((1.0 - q) * chain.marginals()).sum(axis=1).mean())
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


def sample_chains(chain: Chain, n: int, samples: int, rng: np.random.Generator) -> np.ndarray:
    """Draw ``samples`` stationary sequences of length ``n`` as a ``(samples, n)`` array of state indices.

    One uniform per record.  Two states: ``X_t = 1`` iff ``u < alpha`` after a 0 and iff
    ``u >= beta`` after a 1 (the first record: ``u < pi_1``), as since the first version, so a
    seed gives the same sequences.  More states: the inverse of the row's cumulative law.
    ``uint8`` for up to 256 states.
    """
    check_chain(chain)
    k = chain.k
    x = np.empty((samples, n), dtype=np.uint8 if k <= 256 else np.int64)
    if k == 2:
        x[:, 0] = rng.random(samples) < chain.stationary[1]
        for t in range(1, n):
            u = rng.random(samples)
            prev = x[:, t - 1]
            x[:, t] = np.where(prev == 1, u >= chain.beta, u < chain.alpha)
        return x
    first, cum = np.cumsum(chain.stationary), np.cumsum(chain.transition, axis=1)
    x[:, 0] = np.minimum(np.searchsorted(first, rng.random(samples) * first[-1], side="right"), k - 1)
    for t in range(1, n):
        rows = cum[x[:, t - 1]]
        u = rng.random(samples)[:, None] * rows[:, -1:]
        x[:, t] = np.minimum((rows <= u).sum(axis=1), k - 1)
    return x


def utility_monte_carlo(
    chain: Chain,
    redact_prob: object,
    *,
    samples: int = 10_000,
    rng: np.random.Generator | None = None,
    confidence: float = 0.99,
) -> MonteCarloUtility:
    """Monte-Carlo estimate of the utility (Definition 2) by sampling chains and redactions.

    ``rng`` is injected (a fresh ``numpy.random.default_rng()`` when omitted).
    """
    q = check_redact_prob(redact_prob, k=check_chain(chain).k)
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 2:
        raise ValueError(f"samples must be an integer >= 2, got {samples!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    rng = np.random.default_rng() if rng is None else rng
    n = q.shape[0]
    x = sample_chains(chain, n, samples, rng)
    pr_redact = q[np.arange(n)[None, :], x]
    published = rng.random(x.shape) >= pr_redact
    per_sample = published.mean(axis=1)
    est = float(per_sample.mean())
    se = float(per_sample.std(ddof=1) / math.sqrt(samples))
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    return MonteCarloUtility(est, se, est - z * se, est + z * se, samples, confidence)
