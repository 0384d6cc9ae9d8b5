"""The segment of a private record (judge/segments.py): one helper behind every judge."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from redactopt.judge.audit import as_sparse, segments
from redactopt.judge.segments import (
    block_segments,
    extended_block,
    first_published,
    longest_segment,
    private_segments,
    published_rows,
    segment,
    segment_groups,
)


def _random_rows(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    """An (n, k) table with whole zero rows (published) and zero entries mixed in."""
    q = rng.random((n, k))
    q[rng.random((n, k)) < 0.2] = 0.0
    q[rng.random(n) < 0.25] = 0.0
    return q


def _by_scan(q: np.ndarray, p: int) -> tuple[int, int]:
    """The segment by walking outward from p until a row of zeros (or an end)."""
    lo = p - 1
    while lo > 0 and any(q[lo]):
        lo -= 1
    hi = p + 1
    while hi < q.shape[0] - 1 and any(q[hi]):
        hi += 1
    return max(lo, 0), min(hi, q.shape[0] - 1)


@pytest.mark.parametrize("k", [2, 3, 5])
def test_segment_against_a_walk(rng, k):
    for _ in range(200):
        n = int(rng.integers(1, 30))
        q = _random_rows(rng, n, k)
        private = sorted(set(rng.integers(0, n, size=int(rng.integers(1, 4))).tolist()))
        q[private] = 1.0
        expect = [_by_scan(q, p) for p in private]
        assert private_segments(q, private) == expect
        assert [segment(q, p) for p in private] == expect
        assert longest_segment(q, private) == max(hi - lo + 1 for lo, hi in expect)
        assert published_rows(q).tolist() == [t for t in range(n) if not any(q[t])]


def test_groups_collect_records_of_one_segment(rng):
    for _ in range(200):
        n = int(rng.integers(2, 40))
        q = _random_rows(rng, n, 2)
        private = sorted(set(rng.integers(0, n, size=int(rng.integers(1, 6))).tolist()))
        q[private] = 1.0
        groups = segment_groups(q, private)
        by_hand: dict[tuple[int, int], list[int]] = {}
        for p in private:
            by_hand.setdefault(_by_scan(q, p), []).append(p)
        assert groups == [(lo, hi, m) for (lo, hi), m in sorted(by_hand.items())]


def test_first_published_of_a_side():
    side = np.array([[0.5, 1.0], [0.2, 0.0], [0.0, 0.0], [1.0, 1.0]])
    assert first_published(side) == 2
    assert first_published(side[:2]) == 2  # none: the side's length
    assert first_published(np.zeros((0, 3))) == 0
    assert first_published(np.zeros((4, 3))) == 0


def test_extended_block_any_width():
    block = np.full((3, 4), 0.5)
    lo, ext, mine = extended_block(10, 4, block, [1, 5, 6, 9])
    assert lo == 3 and ext.shape == (5, 4)
    assert not ext[0].any() and not ext[-1].any() and np.all(ext[1:4] == 0.5)
    assert mine == [5, 6]
    lo, ext, mine = extended_block(3, 0, block, [0])  # the whole sequence: no neighbour on either side
    assert lo == 0 and ext.shape == (3, 4) and mine == [0]


def _maximal_runs(q: np.ndarray) -> SimpleNamespace:
    """The sparse form of a dense table: its maximal runs of rows with a positive entry."""
    edges = np.flatnonzero(np.diff(np.r_[0, q.any(axis=1).astype(np.int8), 0]))
    return SimpleNamespace(n=q.shape[0], starts=tuple(int(s) for s in edges[0::2]),
                           blocks=tuple(q[s:e] for s, e in zip(edges[0::2], edges[1::2])))


@pytest.mark.parametrize("k", [2, 3])
def test_block_segments_hold_each_records_segment(rng, k):
    for _ in range(100):
        n = int(rng.integers(3, 40))
        q = _random_rows(rng, n, k)
        private = sorted(set(rng.integers(0, n, size=int(rng.integers(1, 4))).tolist()))
        q[private] = 1.0
        found = list(block_segments(_maximal_runs(q), tuple(private)))
        assert sorted(p for s in found for p in s.private) == private
        for s in found:
            for p in s.private:  # a maximal run plus its neighbours is exactly the segment
                lo, hi = _by_scan(q, p)
                assert (s.lo, s.lo + s.rows.shape[0] - 1) == (lo, hi)
                assert np.array_equal(s.rows, q[lo : hi + 1])
        if k == 2:  # the audit's reader: dense and SparseRows alike
            dense, sparse = list(segments(q, private)), list(segments(as_sparse(q), private))
            assert [(s.lo, s.rows.tolist(), s.private) for s in dense] == \
                [(s.lo, s.rows.tolist(), s.private) for s in found] == \
                [(s.lo, s.rows.tolist(), s.private) for s in sparse]


def test_a_private_record_outside_every_block_is_refused():
    q = np.zeros((6, 2))
    q[2] = 1.0
    with pytest.raises(ValueError, match="private record 5 lies outside"):
        list(segments(q, [2, 4]))
