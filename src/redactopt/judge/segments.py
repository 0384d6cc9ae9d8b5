r"""The cut argument, written once: the *segment* of a private record.

A record published with certainty (its row of the mechanism all zeros) is observed without
noise.  By the Markov property everything beyond it cancels from every likelihood ratio of
Definition 1, whatever the number of states (docs/mathematics.md, §8).  So the leakage of a
private record, its witness and every verdict about it are those of its *segment*: the rows
from the nearest always-published row on its left to the nearest on its right, both included
(or the ends of the sequence).  Every judge works on segments, and so in time and memory that
grow with the blocks of rows that can be redacted, not with ``n``.

Dense mechanisms are ``(n, k)`` arrays; sparse ones (:class:`~redactopt.judge.certify.SparseRows`)
are read here through their ``n``, ``starts`` and ``blocks`` only.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from typing import NamedTuple, Protocol

import numpy as np

__all__ = [
    "published_rows",
    "first_published",
    "side_reach",
    "segment",
    "private_segments",
    "longest_segment",
    "segment_groups",
    "extended_block",
    "Segment",
    "block_segments",
]


def published_rows(q: np.ndarray) -> np.ndarray:
    """0-based indices of the rows published with certainty (every entry 0), sorted.

    Parameters
    ----------
    q : numpy.ndarray, shape (n, k)
        Redaction probabilities ``q[t, x] = Pr(Y_t = ⊥ | X_t = x)``.
    """
    return np.flatnonzero(~np.asarray(q).any(axis=1))


def first_published(rows: np.ndarray) -> int:
    """Index of the first row published with certainty, ``rows.shape[0]`` when there is none.

    ``rows`` are one side of a private record ordered by distance (nearest first): the side's
    patterns end at that row, so an evaluator needs rows ``0..first_published(rows)`` only.
    Searched in doubling chunks, so the cost is that of the distance to the row, not of the side.
    """
    m, lo, size = rows.shape[0], 0, 64
    while lo < m:
        hi = min(m, lo + size)
        cut = published_rows(rows[lo:hi])
        if cut.size:
            return lo + int(cut[0])
        lo, size = hi, 2 * size
    return int(m)


def side_reach(rows: np.ndarray) -> int:
    """The records of one side (nearest first) its output patterns read: up to its first row published
    with certainty, that row included (:func:`first_published`)."""
    return min(first_published(rows) + 1, rows.shape[0])


def _bounds(published: np.ndarray, n: int, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The nearest published rows around each of ``p`` (inclusive ends; the sequence's ends where none)."""
    ends = np.concatenate(([0], published, [n - 1])).astype(np.int64)
    i = np.searchsorted(published, p)
    return ends[i], ends[i + 1]


def segment(q: np.ndarray, p: int) -> tuple[int, int]:
    """0-based inclusive rows ``(lo, hi)`` of private record ``p``'s segment.

    Up to and including the nearest always-published rows on each side, or the ends of the
    sequence.  (The private record itself is never published: its row is all ones.)
    """
    ((lo, hi),) = private_segments(q, [p])
    return lo, hi


def private_segments(q: np.ndarray, private: Sequence[int]) -> list[tuple[int, int]]:
    """The segment ``(lo, hi)`` (0-based, inclusive) of each private record, in the order given."""
    q = np.asarray(q)
    p = np.asarray(list(private), dtype=np.int64)
    lo, hi = _bounds(published_rows(q), q.shape[0], p)
    return list(zip(lo.tolist(), hi.tolist()))


def longest_segment(q: np.ndarray, private: Sequence[int]) -> int:
    """The most records in the segment of a private record; ``q.shape[0]`` when there is none."""
    q = np.asarray(q)
    return max((hi - lo + 1 for lo, hi in private_segments(q, private)), default=q.shape[0])


def segment_groups(q: np.ndarray, private: Sequence[int]) -> list[tuple[int, int, list[int]]]:
    """Groups of private records sharing one segment, sorted: ``(lo, hi, members)``.

    ``lo``/``hi`` are the segment's first and last rows (inclusive), ``members`` its private
    records in the order given (an optimiser improves a segment with all of them at once).
    """
    groups: dict[tuple[int, int], list[int]] = {}
    for p, bounds in zip(private, private_segments(q, private)):
        groups.setdefault(bounds, []).append(int(p))
    return [(lo, hi, members) for (lo, hi), members in sorted(groups.items())]


def extended_block(n: int, start: int, block: np.ndarray,
                   private: Sequence[int]) -> tuple[int, np.ndarray, list[int]]:
    """A block of rows with its always-published neighbour on each side, and the private records in it.

    Parameters
    ----------
    n : int
        Records in the sequence.
    start : int
        0-based first row of ``block`` (an ``(m, k)`` array).
    private : sequence of int
        Sorted 0-based private records of the sequence.

    Returns
    -------
    (int, numpy.ndarray, list of int)
        ``(lo, ext, mine)``: ``ext`` (a new array) holds rows ``lo..`` of the sequence — the
        block plus a zero row on each side where the sequence has one — and ``mine`` the
        private records inside the block.  Checks and improvements on ``ext`` hold for the
        whole sequence when the blocks are separated by published rows.
    """
    end = start + block.shape[0] - 1
    mine = list(private[bisect_left(private, start) : bisect_right(private, end)])
    lo, hi = max(0, start - 1), min(n - 1, end + 1)
    ext = np.zeros((hi - lo + 1, block.shape[1]))
    ext[start - lo : start - lo + block.shape[0]] = block
    return lo, ext, mine


class BlockRows(Protocol):
    """What :func:`block_segments` reads of a sparse mechanism (:class:`~redactopt.judge.certify.SparseRows`)."""

    n: int
    starts: tuple[int, ...]
    blocks: tuple[np.ndarray, ...]


class Segment(NamedTuple):
    """Rows ``lo..`` of a sequence (a block and its always-published neighbours) and the private records in it."""

    lo: int
    rows: np.ndarray
    private: list[int]


def block_segments(rows: BlockRows, private: tuple[int, ...]) -> Iterator[Segment]:
    """The segment of every block of a sparse mechanism that holds private records.

    Yields :class:`Segment` ``(lo, rows, private)`` (:func:`extended_block`) for the sorted
    0-based ``private``.  A private record outside every block would be published (infinite
    leakage): ``ValueError``, once the blocks are exhausted.
    """
    seen = 0
    for start, block in zip(rows.starts, rows.blocks):
        lo, ext, mine = extended_block(rows.n, start, block, private)
        if mine:
            seen += len(mine)
            yield Segment(lo, ext, mine)
    if seen < len(private):
        inside = {p for s, b in zip(rows.starts, rows.blocks) for p in private if s <= p < s + b.shape[0]}
        p = next(p for p in private if p not in inside)
        raise ValueError(f"private record {p + 1} lies outside every block of rows that can be redacted: "
                         "it would be published (infinite leakage)")
