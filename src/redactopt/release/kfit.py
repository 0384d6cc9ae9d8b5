r"""Fitting a k-state chain to categorical sequences (labels as they appear).

With :math:`n_{ij}` the number of transitions :math:`i\to j` pooled over all sequences (never
across two sequences), the likelihood of a first-order chain factorises over the rows of ``P``,
each a multinomial, and the maximum-likelihood estimate is

.. math:: \hat P_{ij}=\frac{n_{ij}}{n_{i\cdot}}

(Anderson & Goodman 1957).  Given the visits to state ``i``, :math:`n_{ij}` is binomial
:math:`(n_{i\cdot}, P_{ij})`, which gives a Wilson score interval for each entry of each row
(marginal intervals; with ``simultaneous=True`` each row's ``k`` intervals use the Bonferroni level
:math:`1-(1-c)/k`, so that all entries of a row hold together with probability at least ``c``).

**Never-seen transitions.**  A zero count gives :math:`\hat P_{ij}=0`, which claims the
transition is *impossible*: a zero in ``P`` can make a published neighbour rule a private value
out (infinite leakage) and decides which chain is irreducible at all.  By default (``smoothing="kt"``)
every row with a zero is replaced by the Krichevsky–Trofimov estimate
:math:`(n_{ij}+\tfrac12)/(n_{i\cdot}+\tfrac k2)`, and every never-seen transition is named in a
warning; ``smoothing="none"`` keeps the zeros (the chain must still be irreducible and aperiodic).
States are labelled by their values as text, in order of first appearance.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from redactopt.model.chain import Chain as KChain
from redactopt.release.fit import normal_quantile, wilson_bounds

__all__ = ["KChainFit", "kfit_sequences", "kfit_counts", "encode_labels", "MIN_VISITS"]

#: Fewer transitions than this out of a state trigger a warning.
MIN_VISITS = 30


@dataclass(frozen=True)
class KChainFit:
    """Maximum-likelihood fit of a k-state chain, with intervals and warnings.

    Attributes
    ----------
    labels : tuple of str
        The states, in order of first appearance in the data.
    counts : numpy.ndarray
        ``counts[i, j]``: transitions ``labels[i] -> labels[j]``, pooled over sequences.
    mle : numpy.ndarray
        Row-normalised counts (may hold zeros).
    transition : numpy.ndarray
        The matrix used (``mle``, or Krichevsky–Trofimov rows where a transition was never seen).
    lower, upper : numpy.ndarray
        Wilson score interval of every entry at level ``confidence`` (Bonferroni within each row if
        ``simultaneous``).
    records, sequences : int
    warnings : tuple of str
    """

    labels: tuple[str, ...]
    counts: np.ndarray
    mle: np.ndarray
    transition: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    confidence: float
    simultaneous: bool
    smoothing: str
    records: int
    sequences: int
    warnings: tuple[str, ...]

    @property
    def k(self) -> int:
        return len(self.labels)

    @property
    def chain(self) -> KChain:
        """The fitted :class:`KChain` (labels kept), as :attr:`redactopt.release.fit.ChainFit.chain`; a
        ``ValueError`` if it is reducible or periodic."""
        return KChain(self.transition, labels=self.labels)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (``"format": "redactopt.kfit/1"``); its ``labels`` and ``transition`` are a ``--transition`` file."""
        stat = None
        try:
            stat = self.chain.stationary.tolist()
        except ValueError:
            pass
        return {
            "format": "redactopt.kfit/1", "labels": list(self.labels), "transition": self.transition.tolist(),
            "counts": self.counts.tolist(), "mle": self.mle.tolist(),
            "interval": {"method": "wilson", "confidence": self.confidence, "simultaneous_per_row": self.simultaneous,
                         "lower": self.lower.tolist(), "upper": self.upper.tolist()},
            "smoothing": self.smoothing, "stationary": stat, "records": self.records, "sequences": self.sequences,
            "transitions": int(self.counts.sum()), "warnings": list(self.warnings),
        }

    def text(self) -> str:
        """The human summary: counts, estimates with intervals per row, stationary law, warnings."""
        k = self.k
        w = max(8, max(len(s) for s in self.labels) + 1)
        lines = [f"records   : {self.records} in {self.sequences} sequence(s), {int(self.counts.sum())} transitions",
                 f"states    : {k}  ({', '.join(self.labels)}; in order of first appearance)",
                 "counts    : " + "from \\ to".ljust(w + 2) + "".join(s.rjust(w + 2) for s in self.labels)]
        for i, s in enumerate(self.labels):
            lines.append("            " + s.ljust(w + 2) + "".join(str(int(c)).rjust(w + 2) for c in self.counts[i]))
        lvl = f"{100 * self.confidence:g}% wilson CI" + (", simultaneous per row" if self.simultaneous else "")
        lines.append(f"transition: P(to | from), {lvl}")
        for i, s in enumerate(self.labels):
            cells = [f"{self.labels[j]} {self.transition[i, j]:.6g} [{self.lower[i, j]:.4g}, {self.upper[i, j]:.4g}]"
                     for j in range(k)]
            lines.append(f"  {s}: " + "  ".join(cells))
        try:
            pi = self.chain.stationary
            lines.append("stationary: " + "  ".join(f"Pr({s})={v:.6g}" for s, v in zip(self.labels, pi)))
        except ValueError as exc:
            lines.append(f"stationary: none ({exc})")
        lines += [f"warning   : {m}" for m in self.warnings]
        return "\n".join(lines)


def _missing(v: object) -> bool:
    """Whether a single value is missing in pandas' sense (None, NaN of any float type, NA, NaT)."""
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


def kfit_counts(counts: np.ndarray, labels: Sequence[str], *, records: int, sequences: int,
                confidence: float = 0.95, simultaneous: bool = False,
                smoothing: Literal["kt", "none"] = "kt") -> KChainFit:
    """Fit from pooled transition counts (module docstring)."""
    raw = np.asarray(counts)
    if raw.dtype == object or not np.issubdtype(raw.dtype, np.number) or not np.all(np.isfinite(raw)) \
            or np.any(raw < 0) or np.any(raw != np.floor(raw)):
        raise ValueError("counts must be non-negative whole numbers (transitions seen)")
    C = raw.astype(np.int64)
    k = len(labels)
    if C.shape != (k, k):
        raise ValueError(f"counts must be a ({k}, {k}) matrix, got shape {C.shape}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    if smoothing not in ("kt", "none"):
        raise ValueError(f"smoothing must be 'kt' or 'none', got {smoothing!r}")
    if k < 2:
        raise ValueError(f"the data show {k} state(s) ({', '.join(labels) or 'none'}): a chain needs at least 2")
    rows = C.sum(axis=1)
    warnings: list[str] = []
    empty = np.flatnonzero(rows == 0)
    if empty.size and smoothing == "none":
        raise ValueError(f"state {labels[int(empty[0])]!r} is never followed by another record: its row cannot be "
                         "estimated (smoothing 'kt' makes it uniform)")
    with np.errstate(invalid="ignore", divide="ignore"):
        mle = np.where(rows[:, None] > 0, C / np.maximum(rows, 1)[:, None], 0.0)
    P = mle.copy()
    never = [(labels[i], labels[j]) for i in range(k) for j in range(k) if C[i, j] == 0]
    if never:
        shown = ", ".join(f"{a}->{b}" for a, b in never[:12]) + (" ..." if len(never) > 12 else "")
        if smoothing == "kt":
            bad_rows = sorted({i for i in range(k) for j in range(k) if C[i, j] == 0})
            for i in bad_rows:
                P[i] = (C[i] + 0.5) / (rows[i] + 0.5 * k)
            warnings.append(f"{len(never)} transition(s) never seen ({shown}): their rows use the "
                            "Krichevsky-Trofimov estimate (n_ij + 1/2) / (n_i + k/2) instead of 0")
            for i in empty:
                warnings.append(f"state {labels[int(i)]!r} is never followed by another record: its row is uniform")
        else:
            warnings.append(f"{len(never)} transition(s) never seen ({shown}): estimated as impossible (0); "
                            "a zero in P lets a published neighbour rule a private value out")
    for i in np.flatnonzero(rows < MIN_VISITS):
        warnings.append(f"only {int(rows[i])} transition(s) out of state {labels[i]!r}: its row is uncertain")
    level = 1.0 - (1.0 - confidence) / (k if simultaneous else 1)
    trials = np.broadcast_to(rows[:, None], C.shape).astype(float)
    lo, hi = wilson_bounds(C.astype(float), trials, normal_quantile(level))
    return KChainFit(tuple(labels), C, mle, P, lo, hi, float(confidence), bool(simultaneous), smoothing,
                     int(records), int(sequences), tuple(warnings))


def kfit_sequences(sequences: Iterable[Iterable[object]], *, confidence: float = 0.95, simultaneous: bool = False,
                   smoothing: Literal["kt", "none"] = "kt", labels: Sequence[str] | None = None) -> KChainFit:
    """Fit a k-state chain to one or several categorical sequences (pooled, never joined).

    ``labels`` fixes the states and their order (every value must be one of them, as text);
    by default the states are the values seen, in order of first appearance.
    """
    known = None if labels is None else [str(s) for s in labels]
    fixed = known is not None
    labs: list[str] = [] if known is None else list(known)
    coded = []
    for si, seq in enumerate(sequences):
        x, labs = encode_labels(seq, labs)
        if fixed and len(labs) > len(known):  # type: ignore[arg-type]
            raise ValueError(f"sequence {si + 1}: value {labs[len(known)]!r} is not one of the states "  # type: ignore[arg-type]
                             f"{known}")
        coded.append(x)
    if not coded:
        raise ValueError("no sequences to fit")
    k = len(labs)
    C = np.zeros((k, k), dtype=np.int64)
    for x in coded:
        if x.size > 1:
            np.add.at(C, (x[:-1], x[1:]), 1)
    return kfit_counts(C, labs, records=sum(x.size for x in coded), sequences=len(coded),
                       confidence=confidence, simultaneous=simultaneous, smoothing=smoothing)
