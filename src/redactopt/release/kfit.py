"""The old names of the categorical fit: :mod:`redactopt.release.fit` is the one estimator for every chain.

A categorical column is fitted by :func:`~redactopt.release.fit.fit_sequences` (states labelled by
their values as text, in order of first appearance) and a binary one by
:func:`~redactopt.release.fit.fit_chain`; both are :func:`~redactopt.release.fit.fit_counts` on the
counted transitions and return one :class:`~redactopt.release.fit.ChainFit`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from redactopt.release.fit import MIN_TRANSITIONS, ChainFit, Smoothing, encode_labels, fit_counts, fit_sequences

__all__ = ["KChainFit", "kfit_sequences", "kfit_counts", "encode_labels", "MIN_VISITS"]

#: Fewer transitions than this out of a state trigger a warning (:data:`redactopt.release.fit.MIN_TRANSITIONS`).
MIN_VISITS = MIN_TRANSITIONS

#: The fit of a chain on any number of states (the old name of :class:`~redactopt.release.fit.ChainFit`).
KChainFit = ChainFit


def kfit_counts(counts: np.ndarray, labels: Sequence[str], *, records: int, sequences: int,
                confidence: float = 0.95, simultaneous: bool = False, smoothing: Smoothing = "kt",
                **options: Any) -> ChainFit:
    """:func:`~redactopt.release.fit.fit_counts` of a matrix of pair counts on ``labels`` (the old signature)."""
    return fit_counts(counts, tuple(labels), records=records, sequences=sequences, confidence=confidence,
                      simultaneous=simultaneous, smoothing=smoothing, **options)


def kfit_sequences(sequences: Iterable[Iterable[object]], *, confidence: float = 0.95, simultaneous: bool = False,
                   smoothing: Smoothing = "kt", labels: Sequence[str] | None = None, **options: Any) -> ChainFit:
    """:func:`~redactopt.release.fit.fit_sequences` (the old name)."""
    return fit_sequences(sequences, labels=labels, confidence=confidence, simultaneous=simultaneous,
                         smoothing=smoothing, **options)
