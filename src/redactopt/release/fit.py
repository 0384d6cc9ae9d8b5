r"""Fitting the two-state Markov chain (alpha, beta) to observed binary sequences.

The likelihood of a binary sequence under the chain of Section II factorises over its
transitions, so with :math:`n_{ij}` the number of transitions :math:`i\to j` pooled over
all sequences (never across two sequences) the maximum-likelihood estimates are

.. math::
    \hat\alpha = \frac{n_{01}}{n_{00}+n_{01}}, \qquad \hat\beta = \frac{n_{10}}{n_{10}+n_{11}}

(Anderson & Goodman 1957).  Conditionally on the number of visits to state ``i``, the
transitions out of it are binomial, which gives the Wilson score, likelihood-ratio or
Wald intervals below.  The first-order model is tested against the second-order one
(:math:`\Pr(X_t\mid X_{t-1},X_{t-2})`, four parameters) by the likelihood-ratio statistic

.. math::
    G^2 = 2\sum_{ijk} n_{ijk}\log\frac{n_{ijk}/n_{ij\cdot}}{n_{\cdot jk}/n_{\cdot j\cdot}}
    \;\sim\; \chi^2_2 ,

computed on the triples :math:`(X_{t-2}, X_{t-1}, X_t)` (Anderson & Goodman 1957, §3.3).
A small p-value says the chain misses dependence that the privacy guarantee of a
design based on it would then not cover.

:class:`MarkovChain` needs both parameters strictly inside (0, 1).  An estimate on the
boundary (no transition of a kind observed) is replaced by the Krichevsky–Trofimov
estimate :math:`(n_{ij}+\tfrac12)/(n_{i\cdot}+1)` and a warning is recorded.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any, Literal

import numpy as np

from redactopt.model.chain import MarkovChain

__all__ = [
    "ChainFit",
    "LRTest",
    "TransitionCounts",
    "fit",
    "fit_chain",
    "fit_counts",
    "transition_counts",
    "binary_array",
]

Interval = Literal["wilson", "lr", "wald"]

#: Fewer transitions than this out of a state trigger a warning.
MIN_TRANSITIONS = 30


@dataclass(frozen=True)
class LRTest:
    """Likelihood-ratio test of a first-order against a second-order chain.

    Attributes
    ----------
    statistic : float
        :math:`G^2` (see the module docstring).
    df : int
        Degrees of freedom: 2 when every context was observed, fewer when some
        second-order contexts never occur (then the test has less to compare).
    p_value : float or None
        :math:`\\Pr(\\chi^2_{df} \\ge G^2)`; ``None`` when ``df == 0``.
    triples : int
        Number of triples :math:`(X_{t-2}, X_{t-1}, X_t)` the test used.
    """

    statistic: float
    df: int
    p_value: float | None
    triples: int

    def to_dict(self) -> dict[str, Any]:
        return {"statistic": self.statistic, "df": self.df, "p_value": self.p_value, "triples": self.triples}


@dataclass(frozen=True)
class TransitionCounts:
    """Pooled transition counts: ``pairs[i, j]`` = #(i -> j), ``triples[i, j, k]`` = #(i -> j -> k)."""

    pairs: np.ndarray
    triples: np.ndarray
    records: int
    sequences: int

    def __add__(self, other: "TransitionCounts") -> "TransitionCounts":
        return TransitionCounts(self.pairs + other.pairs, self.triples + other.triples,
                                self.records + other.records, self.sequences + other.sequences)

    @staticmethod
    def zero() -> "TransitionCounts":
        return TransitionCounts(np.zeros((2, 2), dtype=np.int64), np.zeros((2, 2, 2), dtype=np.int64), 0, 0)


@dataclass(frozen=True)
class ChainFit:
    """Maximum-likelihood fit of the chain, with intervals, a model check and warnings.

    Attributes
    ----------
    alpha, beta : float
        Estimates of :math:`\\Pr(0\\to1)` and :math:`\\Pr(1\\to0)`, strictly inside (0, 1)
        (clamped estimates are flagged in ``warnings``).
    alpha_mle, beta_mle : float
        The raw maximum-likelihood estimates (may be 0 or 1).
    alpha_ci, beta_ci : tuple of float
        Confidence intervals at level ``confidence`` (method ``interval``).
    counts : numpy.ndarray
        ``counts[i, j]``: transitions ``i -> j``, pooled over sequences.
    lr_test : LRTest
        First- against second-order test.
    warnings : tuple of str
        Short data, boundary estimates, a rejected first-order model.
    """

    alpha: float
    beta: float
    alpha_mle: float
    beta_mle: float
    alpha_ci: tuple[float, float]
    beta_ci: tuple[float, float]
    confidence: float
    interval: str
    counts: np.ndarray
    records: int
    sequences: int
    lr_test: LRTest
    warnings: tuple[str, ...] = field(default_factory=tuple)

    @property
    def chain(self) -> MarkovChain:
        """The fitted :class:`MarkovChain` (with the clamped estimates)."""
        return MarkovChain(self.alpha, self.beta)

    @property
    def transitions(self) -> int:
        return int(self.counts.sum())

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``counts`` as ``{"00": n00, "01": n01, "10": n10, "11": n11}``)."""
        c = self.counts
        return {
            "alpha": self.alpha,
            "beta": self.beta,
            "alpha_mle": self.alpha_mle,
            "beta_mle": self.beta_mle,
            "alpha_ci": list(self.alpha_ci),
            "beta_ci": list(self.beta_ci),
            "confidence": self.confidence,
            "interval": self.interval,
            "counts": {"00": int(c[0, 0]), "01": int(c[0, 1]), "10": int(c[1, 0]), "11": int(c[1, 1])},
            "records": self.records,
            "sequences": self.sequences,
            "transitions": self.transitions,
            "stationary": self.chain.stationary.tolist(),
            "lr_test_second_order": self.lr_test.to_dict(),
            "warnings": list(self.warnings),
        }

    def text(self) -> str:
        """Human-readable summary."""
        pct = f"{100 * self.confidence:g}%"
        c = self.counts
        t = self.lr_test
        pv = "n/a" if t.p_value is None else f"{t.p_value:.4g}"
        lines = [
            f"records   : {self.records} in {self.sequences} sequence(s), {self.transitions} transitions",
            f"counts    : 0->0 {c[0, 0]}  0->1 {c[0, 1]}  1->0 {c[1, 0]}  1->1 {c[1, 1]}",
            f"alpha     : {self.alpha:.6g}  ({pct} {self.interval} CI {self.alpha_ci[0]:.6g} .. {self.alpha_ci[1]:.6g})",
            f"beta      : {self.beta:.6g}  ({pct} {self.interval} CI {self.beta_ci[0]:.6g} .. {self.beta_ci[1]:.6g})",
            f"stationary: Pr(X=0)={self.chain.stationary[0]:.6g}  Pr(X=1)={self.chain.stationary[1]:.6g}",
            f"order test: G2={t.statistic:.4g} df={t.df} p={pv}  (first vs second order, {t.triples} triples)",
        ]
        lines += [f"warning   : {w}" for w in self.warnings]
        return "\n".join(lines)


# --------------------------------------------------------------------------
# counting
# --------------------------------------------------------------------------
def binary_array(values: object, name: str = "sequence") -> np.ndarray:
    """Validate one binary sequence and return it as ``int8`` (0/1); errors name the index."""
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of 0/1 values, got a string")
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a sequence of 0/1 values: {exc}") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.dtype == bool:
        return arr.astype(np.int8)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold numbers 0/1, got dtype {arr.dtype}")
    bad = np.flatnonzero((arr != 0) & (arr != 1))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"{name}[{i}] must be 0 or 1, got {arr[i]!r}")
    return arr.astype(np.int8)


def transition_counts(x: np.ndarray) -> TransitionCounts:
    """Pair and triple counts of one validated 0/1 sequence (``int8``)."""
    x = np.asarray(x, dtype=np.int64)
    pairs = np.bincount(2 * x[:-1] + x[1:], minlength=4).reshape(2, 2) if x.size > 1 else np.zeros((2, 2), np.int64)
    if x.size > 2:
        triples = np.bincount(4 * x[:-2] + 2 * x[1:-1] + x[2:], minlength=8).reshape(2, 2, 2)
    else:
        triples = np.zeros((2, 2, 2), dtype=np.int64)
    return TransitionCounts(pairs.astype(np.int64), triples.astype(np.int64), int(x.size), 1)


def _as_sequences(sequences: object) -> list[np.ndarray]:
    if isinstance(sequences, np.ndarray):
        if sequences.ndim == 1:
            return [binary_array(sequences)]
        if sequences.ndim == 2:
            return [binary_array(row, f"sequences[{i}]") for i, row in enumerate(sequences)]
        raise ValueError(f"sequences must be one sequence or a list of sequences, got shape {sequences.shape}")
    if isinstance(sequences, (str, bytes)) or not isinstance(sequences, Iterable):
        raise TypeError(f"sequences must be a 0/1 sequence or a list of them, got {type(sequences).__name__}")
    items = list(sequences)  # type: ignore[arg-type]
    if not items:
        raise ValueError("sequences must hold at least one record")
    if all(np.ndim(v) == 0 for v in items):
        return [binary_array(items)]
    return [binary_array(v, f"sequences[{i}]") for i, v in enumerate(items)]


# --------------------------------------------------------------------------
# intervals and the order test
# --------------------------------------------------------------------------
def normal_quantile(confidence: float) -> float:
    """The two-sided normal quantile of ``confidence`` (e.g. 1.959964 at 0.95)."""
    # the standard library's normal quantile (Wichura's AS 241, within an ulp or two of
    # scipy's): scipy.stats takes about a second to import, longer than a fitted release of
    # millions of rows spends on everything but its design
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def _chi2_sf(x: float, df: int) -> float:
    """Upper tail of the chi-square law; closed forms for the order test's 1 and 2 degrees of freedom."""
    if df == 1:
        return math.erfc(math.sqrt(x / 2.0))
    if df == 2:
        return math.exp(-x / 2.0)
    from scipy.special import chdtrc

    return float(chdtrc(df, x))


def wilson_bounds(x: np.ndarray, m: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score intervals of ``x`` successes in ``m`` trials (arrays), at normal quantile ``z``.

    The ends are exactly 0 at ``x = 0`` and 1 at ``x = m`` (where the formula gives them up to
    rounding); ``m = 0`` gives ``[0, 1]``.  Used by the binary and the k-state fits.
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        mm = np.maximum(m, 1)
        p = np.where(m > 0, x / mm, 0.0)
        den = 1 + z * z / mm
        centre = (p + z * z / (2 * mm)) / den
        half = z * np.sqrt(p * (1 - p) / mm + z * z / (4 * mm ** 2)) / den
    lo = np.where((m > 0) & (x > 0), np.clip(centre - half, 0.0, 1.0), 0.0)
    hi = np.where((m > 0) & (x < m), np.clip(centre + half, 0.0, 1.0), 1.0)
    return lo, hi


def _wilson(k: int, m: int, confidence: float) -> tuple[float, float]:
    lo, hi = wilson_bounds(np.asarray(float(k)), np.asarray(float(m)), normal_quantile(confidence))
    return float(lo), float(hi)


def _wald(k: int, m: int, confidence: float) -> tuple[float, float]:
    p = k / m
    half = normal_quantile(confidence) * math.sqrt(p * (1.0 - p) / m)
    return max(0.0, p - half), min(1.0, p + half)


def _lr_interval(k: int, m: int, confidence: float) -> tuple[float, float]:
    """Binomial likelihood-ratio interval ``{a : 2[l(k/m) - l(a)] <= chi2_1(confidence)}``."""
    from scipy.optimize import brentq
    from scipy.special import xlogy
    from scipy.stats import chi2

    crit = float(chi2.ppf(confidence, 1))
    phat = k / m

    def loglik(a: float) -> float:
        return float(xlogy(k, a) + xlogy(m - k, 1.0 - a))

    top = loglik(phat)

    def g(a: float) -> float:
        return 2.0 * (top - loglik(a)) - crit

    lo = 0.0 if k == 0 else brentq(g, 1e-300, phat, xtol=1e-15, rtol=1e-12)
    hi = 1.0 if k == m else brentq(g, phat, 1.0 - 1e-16, xtol=1e-15, rtol=1e-12)
    return float(lo), float(hi)


_INTERVALS = {"wilson": _wilson, "lr": _lr_interval, "wald": _wald}


def _order_test(triples: np.ndarray) -> LRTest:
    n_ijk = triples.astype(float)
    n_ij = n_ijk.sum(axis=2, keepdims=True)  # context (i, j)
    n_jk = n_ijk.sum(axis=0, keepdims=True)  # first-order transitions j -> k on the same triples
    n_j = n_ijk.sum(axis=(0, 2), keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(n_ijk > 0, n_ijk * np.log(n_ijk * n_j / (n_ij * n_jk)), 0.0)
    g2 = max(0.0, 2.0 * float(terms.sum()))
    df = 0
    for j in (0, 1):
        rows = int((n_ij[:, j, 0] > 0).sum())
        cols = int((n_jk[0, j, :] > 0).sum())
        df += max(0, rows - 1) * max(0, cols - 1)
    p_value = _chi2_sf(g2, df) if df > 0 else None
    return LRTest(statistic=g2, df=df, p_value=p_value, triples=int(triples.sum()))


# --------------------------------------------------------------------------
# the fit
# --------------------------------------------------------------------------
def fit_counts(
    counts: TransitionCounts,
    *,
    confidence: float = 0.95,
    interval: Interval = "wilson",
    min_transitions: int = MIN_TRANSITIONS,
    order_level: float = 0.01,
) -> ChainFit:
    """Fit the chain from pooled counts (see :func:`fit_chain`)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    if interval not in _INTERVALS:
        raise ValueError(f"interval must be one of {', '.join(_INTERVALS)}, got {interval!r}")
    pairs = np.asarray(counts.pairs, dtype=np.int64)
    warnings: list[str] = []
    estimates = []
    cis = []
    mles = []
    for i, name in ((0, "alpha"), (1, "beta")):
        m = int(pairs[i].sum())
        k = int(pairs[i, 1 - i])  # alpha counts 0 -> 1, beta counts 1 -> 0
        if m == 0:
            if pairs[:, i].sum() == 0:  # state i never occurs in a transition: only the other value is seen
                raise ValueError(
                    f"cannot fit the chain: the column is constant (every value is {1 - i}, no {i} in a "
                    "transition); give alpha and beta explicitly (--alpha, --beta)")
            raise ValueError(
                f"cannot fit {name}: no transition out of state {i} was observed "
                f"(every {i} is the last record of its sequence); give alpha and beta explicitly (--alpha, --beta)"
            )
        mle = k / m
        est = mle
        if k == 0 or k == m:
            est = (k + 0.5) / (m + 1.0)
            warnings.append(
                f"{name} MLE is {mle:g} ({k} of {m} transitions out of state {i}); "
                f"MarkovChain needs (0, 1): using (k+1/2)/(m+1) = {est:.6g}"
            )
        if m < min_transitions:
            warnings.append(f"only {m} transitions out of state {i} (< {min_transitions}): {name} is poorly determined")
        mles.append(mle)
        estimates.append(est)
        cis.append(_INTERVALS[interval](k, m, confidence))
    test = _order_test(np.asarray(counts.triples))
    if test.p_value is not None and test.p_value < order_level:
        warnings.append(
            f"a second-order chain fits significantly better (G2={test.statistic:.4g}, df={test.df}, "
            f"p={test.p_value:.3g}): the first-order model may understate the dependence; likely causes: rows "
            "out of time order within a sequence (order them with --order-by COLUMN) or dependence reaching "
            "back more than one record (a second-order chain)"
        )
    return ChainFit(
        alpha=float(estimates[0]),
        beta=float(estimates[1]),
        alpha_mle=float(mles[0]),
        beta_mle=float(mles[1]),
        alpha_ci=cis[0],
        beta_ci=cis[1],
        confidence=float(confidence),
        interval=interval,
        counts=pairs.copy(),
        records=int(counts.records),
        sequences=int(counts.sequences),
        lr_test=test,
        warnings=tuple(warnings),
    )


def fit_chain(
    sequences: object,
    *,
    confidence: float = 0.95,
    interval: Interval = "wilson",
    min_transitions: int = MIN_TRANSITIONS,
    order_level: float = 0.01,
) -> ChainFit:
    r"""Maximum-likelihood fit of :math:`(\alpha, \beta)` to one or several 0/1 sequences.

    Parameters
    ----------
    sequences : array_like or list of array_like
        One sequence of 0/1 values, or a list (or 2-D array) of sequences.  Transitions
        are pooled over sequences; none is counted across two sequences.
    confidence : float
        Level of the intervals (default 0.95).
    interval : {"wilson", "lr", "wald"}
        Wilson score (default), binomial likelihood-ratio, or Wald intervals for the
        transition probabilities out of each state.
    min_transitions : int
        Warn when fewer transitions than this leave a state.
    order_level : float
        Warn when the second-order test rejects at this level.

    Returns
    -------
    ChainFit

    Raises
    ------
    ValueError
        A value other than 0/1 (the message names the sequence and 0-based index), or no
        transition at all out of one of the states.
    """
    total = TransitionCounts.zero()
    for seq in _as_sequences(sequences):
        total = total + transition_counts(seq)
    return fit_counts(total, confidence=confidence, interval=interval,
                      min_transitions=min_transitions, order_level=order_level)


def fit(sequences: object, *, states: Sequence[object] | None = None, confidence: float = 0.95,
        **options: Any) -> Any:
    r"""The one fit of a first-order chain to one or several sequences, binary or categorical.

    Sequences of 0/1 values (numbers or booleans) and no ``states``: :func:`fit_chain`, the two-state
    maximum-likelihood fit of :math:`(\alpha, \beta)` with its intervals and second-order test
    (a :class:`ChainFit`; ``options``: ``interval``, ``min_transitions``, ``order_level``).  Any other
    values, or ``states`` (the labels, in order): :func:`redactopt.release.kfit.kfit_sequences`, the
    k-state fit of the transition matrix row by row (a :class:`~redactopt.release.kfit.KChainFit`;
    ``options``: ``simultaneous``, ``smoothing``).  For 0/1 data both are the same maximum-likelihood
    estimate — the binary fit is the two-category one (``smoothing="none"``) — and ``.chain`` of either
    is the fitted chain, ready for :func:`redactopt.design`.
    """
    if states is None:
        seqs = _as_sequences_or_none(sequences)
        if seqs is not None:
            return fit_chain(seqs, confidence=confidence, **options)
    from redactopt.release.kfit import kfit_sequences  # builds on this module

    items = list(sequences)  # type: ignore[call-overload]
    one = all(np.ndim(v) == 0 for v in items)  # one sequence of values, as in _as_sequences
    return kfit_sequences([items] if one else items, confidence=confidence,
                          labels=None if states is None else [str(v) for v in states], **options)


def _as_sequences_or_none(sequences: object) -> list[np.ndarray] | None:
    """The sequences as 0/1 arrays when every value is 0 or 1 (numbers or booleans), else ``None``."""
    try:
        seqs = _as_sequences(sequences)
    except (TypeError, ValueError):
        return None
    return seqs
