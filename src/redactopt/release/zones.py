r"""Where the chain of a release may be fitted: only rows the release publishes with certainty.

A release redacts rows inside the *blocks* of its design (around the private records) and
publishes every other row with certainty.  If the chain were fitted on every row, the fitted
model — printed in the report and used for the design — would be a function of the values
the release hides.  This module chooses the fitted rows so that it is not
(``docs/mathematics.md``, §10b, proves it):

* the *zone* of radius ``R`` is every row at most ``R`` records from a private record of its
  own sequence (a sequence without private records has no zone); ``R = ∞`` stands for the
  whole of every sequence that holds a private record;
* a fit "outside ``Z(R)``" counts only the transitions (and, for the order test, triples) whose
  rows all lie outside ``Z(R)``;
* the radii are tried from the largest down (:data:`LADDER`): the **pilot** is the first
  radius ``R0`` whose outside rows show enough changes of state (:func:`sufficient`); its
  design's *reach* ``r0`` (the farthest redactable row from its nearest private record) must
  be at most ``R0``; then, while a smaller radius is possible, the next is the smallest ladder
  radius ``R' >= 1.25 r + 16`` (``r``: the last accepted design's reach); the chain is fitted
  again outside ``Z(R')`` and its design accepted when its own reach is at most ``R'`` —
  otherwise the last accepted design is kept and the refits stop.  A refit that would add
  fewer than 1 % of the rows to the fit is not made (the count of rows outside a zone depends
  on the positions alone).

Every decision reads only rows outside the final zone (the radii only decrease, and each
decision reads the rows outside the zone it tests), and every row outside the final zone is
published with certainty, so the chain, the counts and the design are functions of what the
release publishes (and of the private positions, which its blocks show anyway).

:class:`ZoneTally` counts, in one pass that can be cut into chunks (or Dask partitions) and
merged in order, the transitions of every distance class at once, so the whole ladder costs
one pass over the data.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["LADDER", "INF_RADIUS", "MIN_CHANGES", "MARGIN", "PrivateIndex", "ZoneTally", "Outside", "FitZone",
           "sufficient", "choose_zone", "reach", "ZoneError"]

#: Stands for "every row of a sequence with a private record" (and beyond any real distance).
INF_RADIUS = 1 << 62

#: The radii tried, ascending: 0, 1, ..., 16, then steps of about 2^(1/4) (19, 23, 27, 32, 39, ...), then ∞.
LADDER = np.array(sorted(set(range(17)) | {int(math.ceil(16 * 2 ** (i / 4))) for i in range(1, 229)}
                         | {INF_RADIUS}), dtype=np.int64)
assert LADDER[-2] < INF_RADIUS

#: A row of a sequence without private records: farther than every radius.
_NO_PRIVATE = INF_RADIUS + 1

#: The pilot needs this many transitions out of every state to another (binary); k states: this many times k
#: in all, and at least one out of every state seen.
MIN_CHANGES = 5

#: Each refit's zone has a radius at least ``MARGIN_FACTOR * r + MARGIN`` (``r``: the last design's reach).
MARGIN = 16
MARGIN_FACTOR = 1.25

#: A refit must add at least this share of all rows to the fit.
MIN_GAIN = 0.01


class ZoneError(ValueError):
    """The chain cannot be fitted from rows the release publishes with certainty."""


@dataclass(frozen=True)
class PrivateIndex:
    """The private positions of every sequence, for distances: ``keys`` = ``code * stride + position``, sorted."""

    keys: np.ndarray
    stride: int

    @staticmethod
    def of(codes: np.ndarray, positions: np.ndarray, lengths: np.ndarray) -> "PrivateIndex":
        """From the private rows' sequence codes and 0-based positions (any order), and every sequence's length."""
        stride = int(lengths.max()) + 1 if lengths.size else 1
        if lengths.size and (lengths.size + 1) * stride >= INF_RADIUS:
            raise ValueError("too many or too long sequences for the fit's distance index")
        keys = np.unique(np.asarray(codes, dtype=np.int64) * stride + np.asarray(positions, dtype=np.int64))
        return PrivateIndex(keys, stride)

    @staticmethod
    def single(positions: Sequence[int]) -> "PrivateIndex":
        """The private positions of one sequence (of any length below 2**40), before its length is known."""
        return PrivateIndex(np.unique(np.asarray(positions, dtype=np.int64)), 1 << 40)

    def distances(self, codes: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """Records from each row (sequence code, 0-based position) to the nearest private record of its
        sequence (``> INF_RADIUS`` when the sequence has none)."""
        x = np.asarray(codes, dtype=np.int64) * self.stride + np.asarray(positions, dtype=np.int64)
        d = np.full(x.shape, _NO_PRIVATE, dtype=np.int64)
        if not self.keys.size or not x.size:
            return d
        i = np.searchsorted(self.keys, x)
        code = x // self.stride
        for j in (i - 1, i):  # the nearest private key below and above, if of the same sequence
            ok = (j >= 0) & (j < self.keys.size)
            k = self.keys[np.clip(j, 0, self.keys.size - 1)]
            ok &= k // self.stride == code
            d = np.where(ok, np.minimum(d, np.abs(x - k)), d)
        return d


def _bucket(d: np.ndarray) -> np.ndarray:
    """The distance class of a distance: the number of ladder radii below it (a row or transition of class
    ``b`` lies outside ``Z(LADDER[j])`` exactly when ``b > j``)."""
    return np.searchsorted(LADDER, d, side="left")


@dataclass(frozen=True)
class Outside:
    """What the rows outside one zone show: transition ``pairs`` (k x k), ``triples`` (k x k x k), rows and
    the first row (in sequence order) of each state, ``-1`` for a state not seen there."""

    radius: int
    pairs: np.ndarray
    triples: np.ndarray
    rows: int
    rows_by_state: np.ndarray
    first_seen: np.ndarray

    @property
    def states(self) -> np.ndarray:
        """The states seen outside the zone, in order of first appearance."""
        seen = np.flatnonzero(self.rows_by_state > 0)
        return seen[np.argsort(self.first_seen[seen], kind="stable")]

    @property
    def transitions(self) -> int:
        return int(self.pairs.sum())


@dataclass
class ZoneTally:
    """Transition counts by distance class, mergeable in data order (like :class:`~redactopt.release.data.ScanState`).

    ``pairs[b, i, j]``: transitions ``i -> j`` whose nearer row is of distance class ``b``
    (:func:`_bucket`); ``triples`` the same for ``i -> j -> l``; ``rows[b, i]`` rows of class ``b``
    holding state ``i``; ``first[b, i]`` the first such row (a global row number in sequence
    order, ``INF`` if none).  Per sequence code: the rows so far and the states and distances of
    the first two and last two rows (``-1``: none), for the transitions across a boundary.
    """

    k: int
    sequences: int
    #: count triples too (the order test of a two-state fit; ``k**3`` numbers per distance class)
    with_triples: bool = True
    pairs: np.ndarray = field(init=False)
    triples: np.ndarray = field(init=False)
    rows: np.ndarray = field(init=False)
    first: np.ndarray = field(init=False)
    n: np.ndarray = field(init=False)
    head: np.ndarray = field(init=False)  # (K, 2, 2): [v, d] of the first two rows
    tail: np.ndarray = field(init=False)  # (K, 2, 2): [v, d] of the last two rows (second last, last)

    def __post_init__(self) -> None:
        B, k, K = LADDER.size + 1, self.k, self.sequences
        self.pairs = np.zeros((B, k, k), dtype=np.int64)
        self.triples = np.zeros((B, k, k, k) if self.with_triples else (B, 1, 1, 1), dtype=np.int64)
        self.rows = np.zeros((B, k), dtype=np.int64)
        self.first = np.full((B, k), np.iinfo(np.int64).max, dtype=np.int64)
        self.n = np.zeros(K, dtype=np.int64)
        self.head = np.full((K, 2, 2), -1, dtype=np.int64)
        self.tail = np.full((K, 2, 2), -1, dtype=np.int64)

    @staticmethod
    def of_chunk(values: np.ndarray, codes: np.ndarray, d: np.ndarray, *, k: int, sequences: int,
                 first_row: int = 0, with_triples: bool = True) -> "ZoneTally":
        """The tally of one piece of data: ``values`` (state codes), ``codes`` (sequence codes), ``d``
        (:meth:`PrivateIndex.distances`), rows in data order; ``first_row``: the global number of its first row."""
        t = ZoneTally(k, sequences, with_triples)
        v = np.asarray(values, dtype=np.int64)
        m = v.shape[0]
        if m == 0:
            return t
        c = np.asarray(codes, dtype=np.int64)
        order = np.argsort(c, kind="stable")
        sc, sv, sd = c[order], v[order], np.asarray(d, dtype=np.int64)[order]
        rb = _bucket(sd)
        np.add.at(t.rows, (rb, sv), 1)
        np.minimum.at(t.first, (rb, sv), first_row + order)
        same = sc[1:] == sc[:-1]
        if m > 1:
            b2 = _bucket(np.minimum(sd[1:], sd[:-1]))[same]
            np.add.at(t.pairs, (b2, sv[:-1][same], sv[1:][same]), 1)
        if m > 2 and t.with_triples:
            same3 = same[1:] & same[:-1]
            b3 = _bucket(np.minimum(np.minimum(sd[2:], sd[1:-1]), sd[:-2]))[same3]
            np.add.at(t.triples, (b3, sv[:-2][same3], sv[1:-1][same3], sv[2:][same3]), 1)
        starts = np.flatnonzero(np.r_[True, ~same])
        ends = np.r_[starts[1:], m] - 1
        g = sc[starts]
        t.n[g] = ends - starts + 1
        two = ends > starts
        t.head[g, 0] = np.stack([sv[starts], sd[starts]], axis=1)
        t.head[g[two], 1] = np.stack([sv[starts[two] + 1], sd[starts[two] + 1]], axis=1)
        t.tail[g, 1] = np.stack([sv[ends], sd[ends]], axis=1)
        t.tail[g[two], 0] = np.stack([sv[ends[two] - 1], sd[ends[two] - 1]], axis=1)
        return t

    def merge(self, later: "ZoneTally") -> "ZoneTally":
        """This tally followed by ``later`` (the tally of the data that comes next; the same codes)."""
        out = ZoneTally(self.k, self.sequences, self.with_triples)
        out.pairs = self.pairs + later.pairs
        out.triples = self.triples + later.triples
        out.rows = self.rows + later.rows
        out.first = np.minimum(self.first, later.first)
        a1, a2, b1, b2 = self.tail[:, 1], self.tail[:, 0], later.head[:, 0], later.head[:, 1]
        ok = (a1[:, 0] >= 0) & (b1[:, 0] >= 0)
        np.add.at(out.pairs, (_bucket(np.minimum(a1[ok, 1], b1[ok, 1])), a1[ok, 0], b1[ok, 0]), 1)
        for x, y, z, ok3 in ((a2, a1, b1, ok & (a2[:, 0] >= 0)), (a1, b1, b2, ok & (b2[:, 0] >= 0))):
            if not self.with_triples:
                break
            dd = np.minimum(np.minimum(x[ok3, 1], y[ok3, 1]), z[ok3, 1])
            np.add.at(out.triples, (_bucket(dd), x[ok3, 0], y[ok3, 0], z[ok3, 0]), 1)
        out.n = self.n + later.n
        out.head = self.head.copy()
        empty, single = self.n == 0, self.n == 1
        out.head[empty] = later.head[empty]
        out.head[single, 1] = later.head[single, 0]
        out.tail = later.tail.copy()
        none, one = later.n == 0, later.n == 1
        out.tail[none] = self.tail[none]
        out.tail[one, 0] = self.tail[one, 1]
        return out

    def rows_outside(self, radius: int) -> int:
        """Rows outside ``Z(radius)``: a function of the positions alone (no value is read)."""
        return int(self.rows[int(np.searchsorted(LADDER, radius)) + 1:].sum())

    def outside(self, radius: int) -> Outside:
        """The counts of the rows outside ``Z(radius)`` (``radius`` a :data:`LADDER` value)."""
        j = int(np.searchsorted(LADDER, radius))
        if j >= LADDER.size or LADDER[j] != radius:
            raise ValueError(f"{radius} is not a radius of the ladder")
        sl = slice(j + 1, None)
        first = self.first[sl].min(axis=0)
        return Outside(int(radius), self.pairs[sl].sum(axis=0), self.triples[sl].sum(axis=0),
                       int(self.rows[sl].sum()), self.rows[sl].sum(axis=0),
                       np.where(first == np.iinfo(np.int64).max, -1, first))


def sufficient(out: Outside, k: int, min_changes: int = MIN_CHANGES) -> bool:
    """Whether the rows outside a zone are enough for a pilot fit (see :data:`MIN_CHANGES`)."""
    seen = out.states
    if seen.size < 2:
        return False
    off = out.pairs.sum(axis=1) - np.diag(out.pairs)
    if k == 2:
        return bool((off >= min_changes).all())
    return bool((off[seen] >= 1).all() and off.sum() >= min_changes * seen.size)


def reach(blocks: list[tuple[list[tuple[int, int]], list[int]]]) -> int:
    """The farthest redactable row from its nearest private record, over ``(block ranges, private positions)``
    of every designed sequence (0-based, inclusive ranges; ``0`` when nothing but private rows is redacted)."""
    far = 0
    for ranges, priv in blocks:
        p = np.unique(np.asarray(priv, dtype=np.int64))
        for a, b in ranges:
            inside = p[(p >= a) & (p <= b)]
            cands = [a, b]
            if inside.size > 1:  # the middle between two private records of the block
                gaps = np.diff(inside)
                i = int(np.argmax(gaps))
                cands.append(int(inside[i] + gaps[i] // 2))
            for t in cands:
                j = np.searchsorted(p, t)
                near = min(abs(t - p[jj]) for jj in (j - 1, j) if 0 <= jj < p.size)
                far = max(far, int(near))
    return far


@dataclass(frozen=True)
class FitZone:
    """Which rows a release's chain was fitted on, for the report (:func:`choose_zone`).

    ``radius``: the zone outside which the fit read (``INF_RADIUS``: only sequences without
    private records); ``reach``: how far from a private record its design redacts; ``stage``:
    ``"pilot"`` (the first fit) or ``"refit"``; ``refused_radius``: a smaller zone tried whose
    fit's design reached beyond it (so this one was kept).
    """

    radius: int
    rows: int
    transitions: int
    stage: str
    reach: int
    pilot_radius: int
    pilot_rows: int
    pilot_reach: int
    total_rows: int
    sequences_without_private: int
    refused_radius: int | None = None

    def to_dict(self) -> dict[str, Any]:
        def r(x: int | None) -> int | None:
            return None if x is None or x >= INF_RADIUS else int(x)

        return {"source": "published rows", "radius": r(self.radius), "rows": self.rows,
                "transitions": self.transitions, "of_rows": self.total_rows, "reach": self.reach,
                "stage": self.stage, "sequences_without_private": self.sequences_without_private,
                "pilot": {"radius": r(self.pilot_radius), "rows": self.pilot_rows, "reach": self.pilot_reach},
                "refused_radius": r(self.refused_radius)}


def choose_zone(tally: ZoneTally, *, fit: Callable[[Outside], Any], plan: Callable[[Any], Any],
                reach_of: Callable[[Any], int], total_rows: int, free_sequences: int = 0,
                min_changes: int = MIN_CHANGES) -> tuple[Any, Any, FitZone]:
    """The pilot and final fits of the module docstring; returns ``(fit, plan, FitZone)`` of the one used.

    ``fit(outside)`` fits a chain from the counts outside a zone, ``plan(fit)`` designs the release
    for it and ``reach_of(plan)`` is its design's reach.  A :class:`ZoneError` when no radius gives a
    pilot, or when the pilot's design reaches beyond the pilot's own zone.
    """
    k = tally.k
    pilot_out = None
    for radius in LADDER[::-1]:
        out = tally.outside(int(radius))
        if sufficient(out, k, min_changes):
            pilot_out = out
            break
    if pilot_out is None:
        raise ZoneError(
            f"too few changes of state in the rows the release publishes with certainty to fit the chain (every "
            f"state needs {min_changes} transitions to another outside the private records' neighbourhoods); give "
            "the chain (--alpha/--beta or --transition) or fit it on a public table (--fit-on FILE)")
    fit0 = fit(pilot_out)
    plan0 = plan(fit0)
    r0 = int(reach_of(plan0))
    R0 = pilot_out.radius
    if r0 > R0:
        raise ZoneError(
            f"the design for the chain fitted on the {pilot_out.rows} rows more than {R0} records from every private "
            f"record redacts rows up to {r0} records away, inside what the fit read; give the chain "
            "(--alpha/--beta or --transition) or fit it on a public table (--fit-on FILE)")
    zone = dict(pilot_radius=R0, pilot_rows=pilot_out.rows, pilot_reach=r0, total_rows=int(total_rows),
                sequences_without_private=int(free_sequences))
    # refine: a smaller zone (more rows to fit) as long as the design fitted outside it stays inside it
    best = (fit0, plan0, pilot_out, r0, "pilot")
    for _ in range(len(LADDER)):
        _, _, out, r, _ = best
        R = _next_radius(r, out.radius)
        # a refit costs a design: not worth it for a handful more rows (a decision on positions alone)
        if R >= out.radius or tally.rows_outside(R) - out.rows < MIN_GAIN * total_rows:
            break
        nxt = tally.outside(R)
        fit1 = fit(nxt)
        plan1 = plan(fit1)
        r1 = int(reach_of(plan1))
        if r1 > R:  # the refit's design reaches beyond its zone: keep the last design that did not
            zone["refused_radius"] = R
            break
        best = (fit1, plan1, nxt, r1, "refit")
    fitted, planned, out, r, stage = best
    return fitted, planned, FitZone(out.radius, out.rows, out.transitions, stage, r, **zone)


def _next_radius(reach_: int, radius: int) -> int:
    """The next zone's radius: the smallest ladder radius at least ``MARGIN_FACTOR * reach + MARGIN``."""
    want = min(int(math.ceil(MARGIN_FACTOR * reach_)) + MARGIN, radius)
    return int(LADDER[np.searchsorted(LADDER, want)])
