"""The old path of the k-state Lemma 2: :mod:`redactopt.judge.lemma2` serves every chain (issue 25)."""

from redactopt.judge.lemma2 import lemma2_upper_bound as klemma2_upper_bound
from redactopt.judge.lemma2 import publishable, reach_pattern

__all__ = ["kpublishable", "klemma2_upper_bound", "reach_pattern"]


def kpublishable(chain, m, *, eps, side="right"):
    """:func:`~redactopt.judge.lemma2.publishable` with one budget (the old signature)."""
    return publishable(chain, m, eps=eps, side=side)
