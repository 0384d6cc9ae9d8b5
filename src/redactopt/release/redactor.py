"""The redaction step: (sequence, position, value) -> redact or not, with exact Bernoulli draws.

Only records inside the blocks of a designed sequence can be redacted; everything else
is published without a draw, so memory is that of the blocks, not of the sequences.
Draws are exact (:mod:`redactopt.release.bits`).
"""

from __future__ import annotations

import numpy as np

from redactopt import _progress
from redactopt.release.bits import BitSource, decide, exact_thresholds
from redactopt.release.data import sequence_key
from redactopt.release.plan import ReleasePlan, SequencePlan

__all__ = ["Redactor"]

#: Sequence code and position packed in one int64 key (positions stay below 2**31 > MAX_N).
_POS_BITS = 31


class Redactor:
    """The redaction step: (sequence code, position, value) -> redact or not, in numpy.

    Only records inside a designed sequence's blocks can be redacted; everything else is
    published without drawing.  Built from a :class:`~redactopt.release.plan.ReleasePlan`
    (the rows of each distinct design are stored once, however many sequences use it, and
    records always redacted share one table of ones: memory grows with the designs, not
    with the sequences) or from a list of :class:`~redactopt.release.plan.SequencePlan`.
    Thresholds are the exact integers of :func:`exact_thresholds`.
    """

    def __init__(self, plan: ReleasePlan | list[SequencePlan], source: BitSource) -> None:
        self.source = source
        if isinstance(plan, ReleasePlan):
            self.keys = [sequence_key(v) for v in plan.state.ids]
            b_code, b_lo, b_len, b_base, tables = _plan_pieces(plan)
        else:
            self.keys = [p.key for p in plan]
            b_code, b_lo, b_len, b_base, tables = _explicit_pieces(plan)
        k = len(self.keys)
        self.b_code = np.asarray(b_code, dtype=np.int64)
        self.b_lo = np.asarray(b_lo, dtype=np.int64)
        self.b_hi = self.b_lo + np.asarray(b_len, dtype=np.int64) - 1
        self.b_base = np.asarray(b_base, dtype=np.int64)
        self.b_key = (self.b_code << _POS_BITS) + self.b_lo
        # per sequence: the span of its blocks (a quick filter)
        self.lo = np.zeros(k, dtype=np.int64)
        self.hi = np.full(k, -1, dtype=np.int64)
        if self.b_code.size:
            first = np.r_[True, self.b_code[1:] != self.b_code[:-1]]
            last = np.r_[self.b_code[1:] != self.b_code[:-1], True]
            self.lo[self.b_code[first]] = self.b_lo[first]
            self.hi[self.b_code[last]] = self.b_hi[last]
        width = tables[0].shape[1] if tables else 2  # the chain's states: 2 for a binary column
        qt = np.concatenate(tables) if tables else np.zeros((0, width))
        Q, kk, T = exact_thresholds(qt)
        self.width = width
        # flat tables indexed by width * row + value: one gather per record
        self.qf = np.ascontiguousarray(qt).reshape(-1)
        self.Q, self.k, self.T = Q.reshape(-1), kk.reshape(-1), T.reshape(-1)

    def _blocks_of(self, codes: np.ndarray, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The indices of the records inside a block, and their blocks."""
        rows = np.flatnonzero((positions >= self.lo[codes]) & (positions <= self.hi[codes]))
        if not rows.size:
            return rows, rows
        c, pos = codes[rows], positions[rows]
        j = np.searchsorted(self.b_key, (c << _POS_BITS) + pos, side="right") - 1
        inside = (j >= 0) & (self.b_code[j] == c) & (pos <= self.b_hi[j])
        return rows[inside], j[inside]

    def positions_in_blocks(self, code: int, lo: int, hi: int) -> np.ndarray:
        """The positions ``lo <= t < hi`` of sequence ``code`` that lie in a block, sorted."""
        sel = np.flatnonzero((self.b_code == code) & (self.b_hi >= lo) & (self.b_lo < hi))
        parts = [np.arange(max(lo, int(self.b_lo[j])), min(hi, int(self.b_hi[j]) + 1), dtype=np.int64)
                 for j in sel.tolist()]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def inside(self, codes: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """Which records (sequence codes, positions) lie in a block: the only ones that can be redacted."""
        out = np.zeros(positions.shape[0], dtype=bool)
        if self.b_lo.size:
            out[self._blocks_of(codes, positions)[0]] = True
        return out

    @_progress.timed("draw")
    def redact(self, codes: np.ndarray | None, positions: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Boolean mask of redacted records for one chunk (``codes=None``: all in sequence 0)."""
        m = positions.shape[0]
        out = np.zeros(m, dtype=bool)
        if m == 0 or not self.b_lo.size:
            return out
        if codes is None:
            # positions are consecutive in the single-sequence case: slice each block that overlaps
            p0 = int(positions[0])
            # sequence 0's blocks come first, sorted and disjoint: bisect for those overlapping the chunk
            n0 = int(np.searchsorted(self.b_code, 1))
            j0 = int(np.searchsorted(self.b_hi[:n0], p0, side="left"))
            j1 = int(np.searchsorted(self.b_lo[:n0], p0 + m - 1, side="right"))
            sel = np.arange(j0, j1)
            if not sel.size:
                return out
            spans = [(max(0, int(self.b_lo[j]) - p0), min(m, int(self.b_hi[j]) - p0 + 1), j) for j in sel.tolist()]
            flats = [self.width * (self.b_base[j] - self.b_lo[j] + positions[a:b]) + values[a:b] for a, b, j in spans]
            if len(spans) == 1:  # the usual case: a slice, no index array
                rows = slice(spans[0][0], spans[0][1])
                flat = flats[0]
            else:
                rows = np.concatenate([np.arange(a, b, dtype=np.int64) for a, b, _ in spans])
                flat = np.concatenate(flats)
            seg_codes = None
        else:
            rows, j = self._blocks_of(codes, positions)
            if not rows.size:
                return out
            flat = self.width * (self.b_base[j] + positions[rows] - self.b_lo[j]) + values[rows]
            seg_codes = codes[rows]
        qv = self.qf[flat]
        res = qv >= 1.0
        need = np.flatnonzero((qv > 0.0) & ~res)
        if need.size:
            fn = flat[need]
            pos = positions[rows][need]
            Qn = self.Q[fn]

            def k_at(idx: np.ndarray, fn: np.ndarray = fn) -> np.ndarray:
                return self.k[fn[idx]]

            def T_at(idx: np.ndarray, fn: np.ndarray = fn) -> np.ndarray:
                return self.T[fn[idx]]

            if hasattr(self.source, "bernoulli"):  # order-free source: no keys, no positions
                res[need] = self.source.bernoulli(qv[need])
            elif seg_codes is None:
                key = self.keys[0]
                w = self.source.words(key, pos)
                res[need] = decide(w, Qn, k_at, T_at,
                                    lambda j, nb: self.source.tie_bits(key, int(pos[j]), nb))
            else:
                nc = seg_codes[need]
                for c in np.unique(nc).tolist():
                    sel = np.flatnonzero(nc == c)
                    key = self.keys[c]
                    p_sel = pos[sel]
                    w = self.source.words(key, p_sel)
                    fs = fn[sel]
                    res[need[sel]] = decide(
                        w, Qn[sel], lambda idx, fs=fs: self.k[fs[idx]], lambda idx, fs=fs: self.T[fs[idx]],
                        lambda j, nb, key=key, p_sel=p_sel: self.source.tie_bits(key, int(p_sel[j]), nb))
        out[rows] = res
        return out


def _explicit_pieces(plans: list[SequencePlan]) -> tuple[list, list, list, list, list]:
    """Every block of every explicit design, each with its own rows."""
    b_code, b_lo, b_len, b_base, tables = [], [], [], [], []
    offset = 0
    for c, p in enumerate(plans):
        for start, rows in p.blocks():
            b_code.append(c)
            b_lo.append(start)
            b_len.append(rows.shape[0])
            b_base.append(offset)
            tables.append(np.asarray(rows, dtype=float))
            offset += rows.shape[0]
    return b_code, b_lo, b_len, b_base, tables


def _plan_pieces(plan: ReleasePlan) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list]:
    """The pieces of every placed group: its shape's blocks (rows stored once per shape) and the
    records always redacted beyond it (rows of one shared table of ones).

    Built in numpy from one template per distinct placed design (groups share them), so the
    memory is a few numbers per piece, whatever the number of sequences.
    """
    tables: list[np.ndarray] = []
    offset = 0
    shape_base: list[list[int]] = []
    for shape in plan.shapes:
        bases = []
        for b in shape.design.redact_prob.blocks:
            bases.append(offset)
            tables.append(np.asarray(b, dtype=float))
            offset += b.shape[0]
        shape_base.append(bases)
    longest = int(plan.g_wipe.max()) if plan.g_wipe.size else 0
    ones = offset
    tables.append(np.ones((longest, plan.chain.k)))
    G = len(plan.choices)
    if not G:
        z = np.zeros(0, dtype=np.int64)
        return z, z, z, z, tables
    # one template per distinct choice: its pieces relative to the shape's row 0, lengths, table rows
    tid_of: dict[int, int] = {}
    t_lo: list[int] = []
    t_len: list[int] = []
    t_base: list[int] = []
    t_start: list[int] = []
    t_count: list[int] = []
    tids = np.empty(G, dtype=np.int64)
    for g, ch in enumerate(plan.choices):
        t = tid_of.get(id(ch))
        if t is None:
            t = tid_of[id(ch)] = len(t_start)
            bases = shape_base[int(plan.g_shape[g])]
            pieces = ch.shape.pieces(0, ch.wipe)
            t_start.append(len(t_lo))
            t_count.append(len(pieces))
            for lo, m, j in pieces:
                t_lo.append(lo)
                t_len.append(m)
                t_base.append(ones if j < 0 else bases[j])
        tids[g] = t
    left = np.fromiter((ch.shape.key.left for ch in plan.choices), dtype=np.int64, count=G)
    origin = plan.g_first - left
    counts = np.asarray(t_count, dtype=np.int64)[tids]
    group = np.repeat(np.arange(G), counts)
    within = np.arange(group.size) - np.repeat(np.cumsum(counts) - counts, counts)
    k = np.asarray(t_start, dtype=np.int64)[tids][group] + within
    b_lo = origin[group] + np.asarray(t_lo, dtype=np.int64)[k]
    return (plan.g_code[group], b_lo, np.asarray(t_len, dtype=np.int64)[k], np.asarray(t_base, dtype=np.int64)[k],
            tables)
