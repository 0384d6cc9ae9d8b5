r"""The one fit of a first-order Markov chain: binary columns are its two-category case.

With :math:`n_{ij}` the number of transitions :math:`i\to j` pooled over all sequences (never
across two sequences), the likelihood of a first-order chain factorises over the rows of ``P``,
each a multinomial, and the maximum-likelihood estimate is

.. math:: \hat P_{ij}=\frac{n_{ij}}{n_{i\cdot}},\qquad\text{for two states}\quad
          \hat\alpha = \frac{n_{01}}{n_{00}+n_{01}},\ \hat\beta = \frac{n_{10}}{n_{10}+n_{11}}

(Anderson & Goodman 1957).  Given the visits to state ``i``, :math:`n_{ij}` is binomial
:math:`(n_{i\cdot}, P_{ij})`, which gives the Wilson score, likelihood-ratio or Wald interval of
every entry (marginal; ``simultaneous=True`` uses the Bonferroni level :math:`1-(1-c)/k` within
each row, so that all entries of a row hold together with probability at least ``c``).  The
first-order model is tested against the second-order one (:math:`\Pr(X_t\mid X_{t-1},X_{t-2})`)
by the likelihood-ratio statistic

.. math::
    G^2 = 2\sum_{ijl} n_{ijl}\log\frac{n_{ijl}/n_{ij\cdot}}{n_{\cdot jl}/n_{\cdot j\cdot}}
    \;\sim\; \chi^2_{k(k-1)^2}

on the triples :math:`(X_{t-2}, X_{t-1}, X_t)` (Anderson & Goodman 1957, §3.3; fewer degrees of
freedom when contexts are never seen; 2 for a binary chain).  A small p-value says the chain
misses dependence that the privacy guarantee of a design based on it would then not cover.

**Never-seen transitions.**  A zero count gives :math:`\hat P_{ij}=0`, which claims the
transition is impossible (a zero in ``P`` can let a published neighbour rule a private value
out).  By default (``smoothing="kt"``) every row with a zero is replaced by the
Krichevsky–Trofimov estimate :math:`(n_{ij}+\tfrac12)/(n_{i\cdot}+\tfrac k2)` — for two states
:math:`(n_{ij}+\tfrac12)/(n_{i\cdot}+1)`, which keeps :class:`MarkovChain`'s parameters inside
(0, 1) — and a warning names it; ``smoothing="none"`` keeps the zeros.

:func:`fit_counts` is the estimator; :func:`fit_chain` counts 0/1 sequences (states 0 and 1, the
result read as :math:`(\alpha, \beta)`), :func:`fit_sequences` categorical ones (states labelled
by their values as text, in order of first appearance), and :func:`fit` chooses between them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any, Literal

import numpy as np

from redactopt.model.chain import Chain, MarkovChain

__all__ = [
    "ChainFit",
    "LRTest",
    "TransitionCounts",
    "fit",
    "fit_chain",
    "fit_counts",
    "fit_sequences",
    "encode_labels",
    "transition_counts",
    "binary_array",
    "chi2_sf",
]

Interval = Literal["wilson", "lr", "wald"]
Smoothing = Literal["kt", "none"]

#: Fewer transitions than this out of a state trigger a warning.
MIN_TRANSITIONS = 30

#: The states of a binary fit (the labels of :class:`MarkovChain`).
BINARY_LABELS = (0, 1)


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
    """Pooled transition counts on ``k`` states: ``pairs[i, j]`` = #(i -> j), ``triples[i, j, l]`` =
    #(i -> j -> l); ``triples`` is ``None`` when only pairs were counted (then no order test)."""

    pairs: np.ndarray
    triples: np.ndarray | None
    records: int
    sequences: int

    def __add__(self, other: "TransitionCounts") -> "TransitionCounts":
        triples = None if self.triples is None or other.triples is None else self.triples + other.triples
        return TransitionCounts(self.pairs + other.pairs, triples,
                                self.records + other.records, self.sequences + other.sequences)

    @staticmethod
    def zero(k: int = 2) -> "TransitionCounts":
        return TransitionCounts(np.zeros((k, k), dtype=np.int64), np.zeros((k, k, k), dtype=np.int64), 0, 0)


@dataclass(frozen=True)
class ChainFit:
    """Maximum-likelihood fit of a chain, with intervals, a model check and warnings.

    One result for every number of states; a binary fit (states ``(0, 1)``, :func:`fit_chain`)
    also reads as :math:`(\\alpha, \\beta)` (:attr:`alpha`, :attr:`alpha_ci`, ...) and prints and
    serialises in those terms.

    Attributes
    ----------
    labels : tuple
        The states: ``(0, 1)`` for a binary fit, else the values as text in order of first
        appearance (or as given).
    counts : numpy.ndarray
        ``counts[i, j]``: transitions ``labels[i] -> labels[j]``, pooled over sequences.
    mle : numpy.ndarray
        Row-normalised counts (may hold zeros).
    transition : numpy.ndarray
        The matrix used (``mle``, or Krichevsky–Trofimov rows where a transition was never seen).
    lower, upper : numpy.ndarray
        The interval of every entry at level ``confidence`` (method ``interval``; Bonferroni
        within each row if ``simultaneous``).
    lr_test : LRTest
        First- against second-order test (``df == 0``, no p-value, when no triples were counted).
    warnings : tuple of str
        Short data, never-seen transitions, a rejected first-order model.
    """

    labels: tuple
    counts: np.ndarray
    mle: np.ndarray
    transition: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    confidence: float
    interval: str
    simultaneous: bool
    smoothing: str
    records: int
    sequences: int
    lr_test: LRTest
    warnings: tuple[str, ...] = field(default_factory=tuple)

    @property
    def k(self) -> int:
        return len(self.labels)

    @property
    def binary(self) -> bool:
        """Whether this is the two-state fit of a 0/1 column (states ``(0, 1)``)."""
        return self.labels == BINARY_LABELS

    @property
    def chain(self) -> Chain:
        """The fitted chain: a :class:`MarkovChain` for a binary fit, else a :class:`Chain` with the
        labels (a ``ValueError`` if it is reducible or periodic)."""
        if self.binary:
            return MarkovChain(self.alpha, self.beta)
        return Chain(self.transition, labels=self.labels)

    @property
    def transitions(self) -> int:
        return int(self.counts.sum())

    def _entry(self, table: np.ndarray, i: int) -> float:
        if self.k != 2:
            raise AttributeError(f"alpha and beta belong to two-state fits; this fit has {self.k} states")
        return float(table[i, 1 - i])

    @property
    def alpha(self) -> float:
        """:math:`\\hat\\Pr(0\\to1)` as used (strictly inside (0, 1) after smoothing); two states only."""
        return self._entry(self.transition, 0)

    @property
    def beta(self) -> float:
        """:math:`\\hat\\Pr(1\\to0)` as used; two states only."""
        return self._entry(self.transition, 1)

    @property
    def alpha_mle(self) -> float:
        return self._entry(self.mle, 0)

    @property
    def beta_mle(self) -> float:
        return self._entry(self.mle, 1)

    @property
    def alpha_ci(self) -> tuple[float, float]:
        return self._entry(self.lower, 0), self._entry(self.upper, 0)

    @property
    def beta_ci(self) -> tuple[float, float]:
        return self._entry(self.lower, 1), self._entry(self.upper, 1)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form.  Binary: ``alpha``, ``beta``, their intervals, ``counts`` as ``{"00": n00, ...}``;
        otherwise ``"format": "redactopt.kfit/1"`` with ``labels`` and ``transition`` (a ``--transition``
        file) and the intervals of every entry."""
        test = self.lr_test.to_dict()
        if not self.binary:
            return {
                "format": "redactopt.kfit/1", "labels": list(self.labels), "transition": self.transition.tolist(),
                "counts": self.counts.tolist(), "mle": self.mle.tolist(),
                "interval": {"method": self.interval, "confidence": self.confidence,
                             "simultaneous_per_row": self.simultaneous,
                             "lower": self.lower.tolist(), "upper": self.upper.tolist()},
                "smoothing": self.smoothing, "stationary": self._stationary(), "records": self.records,
                "sequences": self.sequences, "transitions": self.transitions, "lr_test_second_order": test,
                "warnings": list(self.warnings),
            }
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
            "simultaneous": self.simultaneous,
            "smoothing": self.smoothing,
            "counts": {"00": int(c[0, 0]), "01": int(c[0, 1]), "10": int(c[1, 0]), "11": int(c[1, 1])},
            "records": self.records,
            "sequences": self.sequences,
            "transitions": self.transitions,
            "stationary": self.chain.stationary.tolist(),
            "lr_test_second_order": test,
            "warnings": list(self.warnings),
        }

    def _stationary(self) -> list[float] | None:
        try:
            return self.chain.stationary.tolist()
        except ValueError:
            return None

    def order_summary(self) -> str | None:
        """The order test in a few words for a release's summary (``None`` when it was not run)."""
        t = self.lr_test
        if t.p_value is None:
            return None
        if t.p_value < 0.01:
            return f"order test: a second-order chain fits better, p = {t.p_value:.3g}"
        return f"order test: first order not rejected, p = {t.p_value:.3g}"

    def _order_line(self) -> str:
        t = self.lr_test
        pv = "n/a" if t.p_value is None else f"{t.p_value:.4g}"
        return f"order test: G2={t.statistic:.4g} df={t.df} p={pv}  (first vs second order, {t.triples} triples)"

    def text(self) -> str:
        """Human-readable summary (binary: alpha and beta; otherwise the matrix row by row)."""
        if not self.binary:
            return self._matrix_text()
        pct = f"{100 * self.confidence:g}%"
        if self.simultaneous:
            pct += " simultaneous per row"
        c = self.counts
        lines = [
            f"records   : {self.records} in {self.sequences} sequence(s), {self.transitions} transitions",
            f"counts    : 0->0 {c[0, 0]}  0->1 {c[0, 1]}  1->0 {c[1, 0]}  1->1 {c[1, 1]}",
            f"alpha     : {self.alpha:.6g}  ({pct} {self.interval} CI {self.alpha_ci[0]:.6g} .. {self.alpha_ci[1]:.6g})",
            f"beta      : {self.beta:.6g}  ({pct} {self.interval} CI {self.beta_ci[0]:.6g} .. {self.beta_ci[1]:.6g})",
            f"stationary: Pr(X=0)={self.chain.stationary[0]:.6g}  Pr(X=1)={self.chain.stationary[1]:.6g}",
            self._order_line(),
        ]
        lines += [f"warning   : {w}" for w in self.warnings]
        return "\n".join(lines)

    def _matrix_text(self) -> str:
        k, labels = self.k, [str(s) for s in self.labels]
        w = max(8, max(len(s) for s in labels) + 1)
        lines = [f"records   : {self.records} in {self.sequences} sequence(s), {self.transitions} transitions",
                 f"states    : {k}  ({', '.join(labels)}; in order of first appearance)",
                 "counts    : " + "from \\ to".ljust(w + 2) + "".join(s.rjust(w + 2) for s in labels)]
        for i, s in enumerate(labels):
            lines.append("            " + s.ljust(w + 2) + "".join(str(int(c)).rjust(w + 2) for c in self.counts[i]))
        lvl = f"{100 * self.confidence:g}% {self.interval} CI" + (", simultaneous per row" if self.simultaneous else "")
        lines.append(f"transition: P(to | from), {lvl}")
        for i, s in enumerate(labels):
            cells = [f"{labels[j]} {self.transition[i, j]:.6g} [{self.lower[i, j]:.4g}, {self.upper[i, j]:.4g}]"
                     for j in range(k)]
            lines.append(f"  {s}: " + "  ".join(cells))
        try:
            pi = self.chain.stationary
            lines.append("stationary: " + "  ".join(f"Pr({s})={v:.6g}" for s, v in zip(labels, pi)))
        except ValueError as exc:
            lines.append(f"stationary: none ({exc})")
        if self.lr_test.triples:
            lines.append(self._order_line())
        lines += [f"warning   : {m}" for m in self.warnings]
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
    return state_counts(x, 2)


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


def _missing(v: object) -> bool:
    """Whether a single value is missing in pandas' sense (None, NaN of any float type, NA, NaT)."""
    if v is None:
        return True
    if isinstance(v, (float, np.floating)):
        return bool(np.isnan(v))
    import pandas as pd  # NA and NaT (pandas is loaded by whoever holds them)

    try:
        m = pd.isna(v)
    except (TypeError, ValueError):
        return False
    return isinstance(m, (bool, np.bool_)) and bool(m)


def encode_labels(values: Iterable[object], labels: list[str] | None = None) -> tuple[np.ndarray, list[str]]:
    """State indices of a sequence of values (as text), extending ``labels`` in order of first appearance.

    ``None``, NaN (of any float type), ``pd.NA`` and ``NaT`` are missing values: a ``ValueError``
    naming the (1-based) position.
    """
    labels = [] if labels is None else labels
    index = {s: i for i, s in enumerate(labels)}
    out = []
    for pos, v in enumerate(values, start=1):
        if _missing(v):
            raise ValueError(f"missing value at position {pos}")
        s = str(v)
        if s not in index:
            index[s] = len(labels)
            labels.append(s)
        out.append(index[s])
    return np.asarray(out, dtype=np.int64), labels


def state_counts(x: np.ndarray, k: int) -> TransitionCounts:
    """Pair and triple counts of one sequence of state indices ``0..k-1`` (for ``k = 2`` those of
    :func:`transition_counts`)."""
    x = np.asarray(x, dtype=np.int64)
    pairs = np.bincount(k * x[:-1] + x[1:], minlength=k * k) if x.size > 1 else np.zeros(k * k, np.int64)
    if x.size > 2:
        triples = np.bincount((k * x[:-2] + x[1:-1]) * k + x[2:], minlength=k ** 3)
    else:
        triples = np.zeros(k ** 3, dtype=np.int64)
    return TransitionCounts(pairs.reshape(k, k).astype(np.int64), triples.reshape(k, k, k).astype(np.int64),
                            int(x.size), 1)


# --------------------------------------------------------------------------
# intervals and the order test
# --------------------------------------------------------------------------
def normal_quantile(confidence: float) -> float:
    """The two-sided normal quantile of ``confidence`` (e.g. 1.959964 at 0.95)."""
    return _z_of_miss(1.0 - confidence)


def _z_of_miss(miss: float) -> float:
    """The normal quantile leaving ``miss`` in the two tails together.

    From the tail (``-Phi^{-1}(miss / 2)``), not from ``Phi^{-1}(1 - miss / 2)``: near
    ``confidence = 1`` the latter rounds ``1 - miss / 2`` to 1 (the standard library's quantile,
    Wichura's AS 241, within an ulp or two of scipy's: scipy.stats takes about a second to import).
    """
    return -NormalDist().inv_cdf(miss / 2.0)


def chi2_sf(x: float, df: int) -> float:
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


def _wilson(k: int, m: int, miss: float) -> tuple[float, float]:
    lo, hi = wilson_bounds(np.asarray(float(k)), np.asarray(float(m)), _z_of_miss(miss))
    return float(lo), float(hi)


def _wald(k: int, m: int, miss: float) -> tuple[float, float]:
    p = k / m
    half = _z_of_miss(miss) * math.sqrt(p * (1.0 - p) / m)
    return max(0.0, p - half), min(1.0, p + half)


def _lr_interval(k: int, m: int, miss: float) -> tuple[float, float]:
    """Binomial likelihood-ratio interval ``{a : 2[l(k/m) - l(a)] <= chi2_1 upper quantile of miss}``.

    The deviance is written as ``k log1p((phat - a)/a) + (m - k) log1p((a - phat)/(1 - a))``, so
    that it keeps its precision near ``phat`` (large counts, low levels); an end beyond the
    doubles of (0, 1) — above the largest double below 1, below the smallest normal — is
    reported as 1 (or 0): outward, the interval only grows.
    """
    from scipy.optimize import brentq
    from scipy.stats import chi2

    crit = float(chi2.isf(miss, 1))
    phat = k / m

    def g(a: float) -> float:
        up = k * math.log1p((phat - a) / a) if k else 0.0
        down = (m - k) * math.log1p((a - phat) / (1.0 - a)) if m - k else 0.0
        return 2.0 * (up + down) - crit

    tiny, top = np.finfo(float).tiny, float(np.nextafter(1.0, 0.0))
    lo = 0.0 if k == 0 or g(tiny) < 0 else brentq(g, tiny, phat, xtol=1e-300, rtol=1e-15)
    hi = 1.0 if k == m or g(top) < 0 else brentq(g, phat, top, xtol=1e-300, rtol=1e-15)
    return float(lo), float(hi)


_INTERVALS = {"wilson": _wilson, "lr": _lr_interval, "wald": _wald}


def _order_test(triples: np.ndarray | None) -> LRTest:
    if triples is None:
        return LRTest(statistic=0.0, df=0, p_value=None, triples=0)
    n_ijk = np.asarray(triples).astype(float)
    n_ij = n_ijk.sum(axis=2, keepdims=True)  # context (i, j)
    n_jk = n_ijk.sum(axis=0, keepdims=True)  # first-order transitions j -> k on the same triples
    n_j = n_ijk.sum(axis=(0, 2), keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(n_ijk > 0, n_ijk * np.log(n_ijk * n_j / (n_ij * n_jk)), 0.0)
    g2 = max(0.0, 2.0 * float(terms.sum()))
    df = 0
    for j in range(n_ijk.shape[1]):  # one contingency table (context i x next l) per middle state j
        rows = int((n_ij[:, j, 0] > 0).sum())
        cols = int((n_jk[0, j, :] > 0).sum())
        df += max(0, rows - 1) * max(0, cols - 1)
    p_value = chi2_sf(g2, df) if df > 0 else None
    return LRTest(statistic=g2, df=df, p_value=p_value, triples=int(n_ijk.sum()))


def _intervals(C: np.ndarray, rows: np.ndarray, miss: float, interval: str) -> tuple[np.ndarray, np.ndarray]:
    """The interval of every entry ``C[i, j]`` out of ``rows[i]`` trials, each missing with probability
    ``miss`` (``[0, 1]`` for an empty row)."""
    if interval == "wilson":
        trials = np.broadcast_to(rows[:, None], C.shape).astype(float)
        return wilson_bounds(C.astype(float), trials, _z_of_miss(miss))
    lo, hi = np.zeros(C.shape), np.ones(C.shape)
    for (i, j), c in np.ndenumerate(C):
        if rows[i] > 0:
            lo[i, j], hi[i, j] = _INTERVALS[interval](int(c), int(rows[i]), miss)
    return lo, hi


def _check_counts(counts: object, k: int) -> np.ndarray:
    raw = np.asarray(counts)
    if raw.dtype == object or not np.issubdtype(raw.dtype, np.number) or not np.all(np.isfinite(raw)) \
            or np.any(raw < 0) or np.any(raw != np.floor(raw)):
        raise ValueError("counts must be non-negative whole numbers (transitions seen)")
    if raw.shape != (k, k):
        raise ValueError(f"counts must be a ({k}, {k}) matrix, got shape {raw.shape}")
    if raw.size and float(raw.astype(float).sum(axis=1).max()) >= 2.0 ** 62:
        raise ValueError("counts must sum to less than 2**62 per row (transitions seen)")
    return raw.astype(np.int64)


def _binary_empty_row(C: np.ndarray, i: int) -> ValueError:
    """Why a binary fit cannot go on without transitions out of state ``i``."""
    name = ("alpha", "beta")[i]
    if C.sum() == 0:
        return ValueError("cannot fit the chain: no transition observed (every sequence has a single record); "
                          "give alpha and beta explicitly (--alpha, --beta)")
    if C[:, i].sum() == 0:  # state i never occurs in a transition: only the other value is seen
        return ValueError(f"cannot fit the chain: the column is constant (every value is {1 - i}, no {i} in a "
                          "transition); give alpha and beta explicitly (--alpha, --beta)")
    return ValueError(f"cannot fit {name}: no transition out of state {i} was observed "
                      f"(every {i} is the last record of its sequence); give alpha and beta explicitly "
                      "(--alpha, --beta)")


def _estimate_warnings(C: np.ndarray, rows: np.ndarray, P: np.ndarray, labels: Sequence[object], *,
                       smoothing: str, binary: bool, min_transitions: int) -> list[str]:
    """What the estimate did about never-seen transitions, empty and short rows (binary: in alpha and beta)."""
    if binary:
        out = []
        for i, name in ((0, "alpha"), (1, "beta")):
            c, m = int(C[i, 1 - i]), int(rows[i])
            if c == 0 or c == m:
                out.append(f"{name} MLE is {c / m:g} ({c} of {m} transitions out of state {i}); "
                           f"MarkovChain needs (0, 1): using (k+1/2)/(m+1) = {P[i, 1 - i]:.6g}")
            if m < min_transitions:
                out.append(f"only {m} transitions out of state {i} (< {min_transitions}): {name} is poorly determined")
        return out
    k = len(labels)
    out = []
    never = [(labels[i], labels[j]) for i in range(k) for j in range(k) if C[i, j] == 0]
    shown = ", ".join(f"{a}->{b}" for a, b in never[:12]) + (" ..." if len(never) > 12 else "")
    if never and smoothing == "none":
        out.append(f"{len(never)} transition(s) never seen ({shown}): estimated as impossible (0); "
                   "a zero in P lets a published neighbour rule a private value out")
    elif never:
        out.append(f"{len(never)} transition(s) never seen ({shown}): their rows use the "
                   "Krichevsky-Trofimov estimate (n_ij + 1/2) / (n_i + k/2) instead of 0")
        out += [f"state {labels[int(i)]!r} is never followed by another record: its row is uniform"
                for i in np.flatnonzero(rows == 0)]
    out += [f"only {int(rows[i])} transition(s) out of state {labels[i]!r}: its row is uncertain"
            for i in np.flatnonzero(rows < min_transitions)]
    return out


# --------------------------------------------------------------------------
# the estimator
# --------------------------------------------------------------------------
def fit_counts(
    counts: TransitionCounts | object,
    labels: Sequence[object] = BINARY_LABELS,
    *,
    records: int | None = None,
    sequences: int | None = None,
    confidence: float = 0.95,
    interval: Interval = "wilson",
    simultaneous: bool = False,
    smoothing: Smoothing = "kt",
    min_transitions: int = MIN_TRANSITIONS,
    order_level: float = 0.01,
) -> ChainFit:
    """The estimator: fit a chain on ``labels`` from pooled counts (module docstring).

    ``counts`` is a :class:`TransitionCounts` (pairs and triples: with the order test) or a
    ``(k, k)`` matrix of pair counts with ``records`` and ``sequences`` given.  The default
    ``labels`` ``(0, 1)`` make it the binary fit: a state without transitions out of it is an
    error there (alpha or beta cannot be guessed), while on other labels its row is uniform under
    ``smoothing="kt"`` (the states are the values seen, one may end every sequence).
    """
    if not isinstance(counts, TransitionCounts):
        if records is None or sequences is None:
            raise TypeError("fit_counts: a matrix of counts needs records= and sequences=")
        counts = TransitionCounts(np.asarray(counts), None, int(records), int(sequences))
    labels = tuple(labels)
    k = len(labels)
    C = _check_counts(counts.pairs, k)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    if interval not in _INTERVALS:
        raise ValueError(f"interval must be one of {', '.join(_INTERVALS)}, got {interval!r}")
    if smoothing not in ("kt", "none"):
        raise ValueError(f"smoothing must be 'kt' or 'none', got {smoothing!r}")
    if k < 2:
        names = ", ".join(map(str, labels)) or "none"
        raise ValueError(f"the data show {k} state(s) ({names}): a chain needs at least 2")
    binary = labels == BINARY_LABELS
    rows = C.sum(axis=1)
    empty = np.flatnonzero(rows == 0)
    if empty.size and binary:
        raise _binary_empty_row(C, int(empty[0]))
    if binary and smoothing == "none" and (C == 0).any():
        i = int(np.flatnonzero((C == 0).any(axis=1))[0])
        raise ValueError(f"{('alpha', 'beta')[i]} MLE is {C[i, 1 - i] / rows[i]:g} ({C[i, 1 - i]} of {rows[i]} "
                         f"transitions out of state {i}): a two-state chain needs alpha and beta in (0, 1); "
                         "smoothing='kt' estimates it as (k+1/2)/(m+1)")
    if empty.size and smoothing == "none":
        raise ValueError(f"state {labels[int(empty[0])]!r} is never followed by another record: its row cannot be "
                         "estimated (smoothing 'kt' makes it uniform)")
    with np.errstate(invalid="ignore", divide="ignore"):
        mle = np.where(rows[:, None] > 0, C / np.maximum(rows, 1)[:, None], 0.0)
    P = mle.copy()
    if smoothing == "kt":
        for i in sorted({i for i in range(k) if (C[i] == 0).any()}):
            P[i] = (C[i] + 0.5) / (rows[i] + 0.5 * k)
    warnings = _estimate_warnings(C, rows, P, labels, smoothing=smoothing, binary=binary,
                                  min_transitions=min_transitions)
    test = _order_test(counts.triples)
    if test.p_value is not None and test.p_value < order_level:
        warnings.append(
            f"a second-order chain fits significantly better (G2={test.statistic:.4g}, df={test.df}, "
            f"p={test.p_value:.3g}): the first-order model may understate the dependence; likely causes: rows "
            "out of time order within a sequence (order them with --order-by COLUMN) or dependence reaching "
            "back more than one record (a second-order chain)"
        )
    lo, hi = _intervals(C, rows, (1.0 - confidence) / (k if simultaneous else 1), interval)
    return ChainFit(labels=labels, counts=C, mle=mle, transition=P, lower=lo, upper=hi, confidence=float(confidence),
                    interval=interval, simultaneous=bool(simultaneous), smoothing=smoothing,
                    records=int(counts.records), sequences=int(counts.sequences), lr_test=test,
                    warnings=tuple(warnings))


def fit_chain(
    sequences: object,
    *,
    confidence: float = 0.95,
    interval: Interval = "wilson",
    min_transitions: int = MIN_TRANSITIONS,
    order_level: float = 0.01,
    simultaneous: bool = False,
    smoothing: Smoothing = "kt",
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
    simultaneous, smoothing
        As for :func:`fit_counts` (``smoothing="none"`` is refused where it would leave alpha or
        beta at 0 or 1).

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
    return fit_counts(total, confidence=confidence, interval=interval, simultaneous=simultaneous,
                      smoothing=smoothing, min_transitions=min_transitions, order_level=order_level)


def fit_sequences(sequences: Iterable[Iterable[object]], *, labels: Sequence[str] | None = None,
                  confidence: float = 0.95, interval: Interval = "wilson", simultaneous: bool = False,
                  smoothing: Smoothing = "kt", min_transitions: int = MIN_TRANSITIONS,
                  order_level: float = 0.01) -> ChainFit:
    """Fit a chain to one or several categorical sequences (pooled, never joined), with the order test.

    The states are the values as text; ``labels`` fixes them and their order (every value must be
    one of them), by default they are the values seen, in order of first appearance.
    """
    known = None if labels is None else [str(s) for s in labels]
    labs: list[str] = [] if known is None else list(known)
    coded = []
    for si, seq in enumerate(sequences):
        try:
            x, labs = encode_labels(seq, labs)
        except ValueError as exc:
            raise ValueError(f"sequence {si + 1}: {exc}") from None
        if known is not None and len(labs) > len(known):
            raise ValueError(f"sequence {si + 1}: value {labs[len(known)]!r} is not one of the states {known}")
        coded.append(x)
    if not coded:
        raise ValueError("no sequences to fit")
    k = len(labs)
    total = TransitionCounts.zero(k)
    for x in coded:
        total = total + state_counts(x, k)
    return fit_counts(total, tuple(labs), confidence=confidence, interval=interval, simultaneous=simultaneous,
                      smoothing=smoothing, min_transitions=min_transitions, order_level=order_level)


def fit(sequences: object, *, states: Sequence[object] | None = None, confidence: float = 0.95,
        **options: Any) -> ChainFit:
    r"""The one fit of a first-order chain to one or several sequences, binary or categorical.

    Sequences of 0/1 values (numbers or booleans) and no ``states``: :func:`fit_chain`, states 0
    and 1, read as :math:`(\alpha, \beta)`.  Any other values, or ``states`` (the labels, in
    order): :func:`fit_sequences`, states labelled by the values as text.  Both are
    :func:`fit_counts` on the counted transitions (``options``: ``interval``, ``simultaneous``,
    ``smoothing``, ``min_transitions``, ``order_level``); ``.chain`` of the result is the fitted
    chain, ready for :func:`redactopt.design`.
    """
    if states is None:
        seqs = _as_sequences_or_none(sequences)
        if seqs is not None:
            return fit_chain(seqs, confidence=confidence, **options)
    items = list(sequences)  # type: ignore[call-overload]
    one = all(np.ndim(v) == 0 for v in items)  # one sequence of values, as in _as_sequences
    seqs = [items] if one else items
    if states is not None:
        seqs = [_as_states(seq, states) for seq in seqs]
    return fit_sequences(seqs, confidence=confidence,
                         labels=None if states is None else [str(v) for v in states], **options)


def _as_states(values: Iterable[object], states: Sequence[object]) -> list[object]:
    """The values as the given states' texts where they equal a state written otherwise (the number 1.0 is
    the state ``1``); any other value is left as it is (and refused by the fit if it is no state)."""
    texts = {str(s) for s in states}
    numbers: dict[float, str] = {}
    for s in states:
        if isinstance(s, (int, float, np.integer, np.floating)) and not isinstance(s, (bool, np.bool_)):
            numbers.setdefault(float(s), str(s))
    out: list[object] = []
    for v in values:
        if str(v) in texts or not numbers or isinstance(v, (bool, np.bool_)) \
                or not isinstance(v, (int, float, np.integer, np.floating)):
            out.append(v)
        else:
            out.append(numbers.get(float(v), v))
    return out


def _as_sequences_or_none(sequences: object) -> list[np.ndarray] | None:
    """The sequences as 0/1 arrays when every value is 0 or 1 (numbers or booleans), else ``None``."""
    try:
        seqs = _as_sequences(sequences)
    except (TypeError, ValueError):
        return None
    return seqs
