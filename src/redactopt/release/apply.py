r"""Applying a designed mechanism to real data: exact Bernoulli draws, streaming, reports.

**Exact Bernoulli draws.**  A record is redacted with probability exactly
:math:`q` = ``redact_prob[t, x_t]`` (a double).  Write :math:`q = M\,2^{e-53}` with an
integer mantissa :math:`M < 2^{53}` (``math.frexp`` / ``numpy.frexp``), so that
:math:`q\,2^{53} = Q + T/2^{k}` with :math:`Q=\lfloor q 2^{53}\rfloor = M \gg k`,
:math:`k=\max(0,-e)` and :math:`T = M \bmod 2^k` — integer arithmetic, no rounding, also
for :math:`q < 2^{-53}` and subnormal :math:`q`.  Draw a uniform 53-bit integer
:math:`U` (the top bits of a 64-bit word): the uniform :math:`V = (U + \text{rest})/2^{53}`
satisfies :math:`V < q` iff :math:`U < Q`, or :math:`U = Q` and the next :math:`k` bits
:math:`W` satisfy :math:`W < T` (the bits after those cannot change the comparison
because :math:`T/2^k` has only :math:`k` fraction bits).  So: :math:`U<Q` redact,
:math:`U>Q` keep, :math:`U=Q` draw :math:`k` more bits (probability :math:`2^{-53}`).
:math:`q=0` never redacts (:math:`Q=T=0`) and :math:`q=1` always does
(:math:`Q=2^{53}>U`); no floating comparison is involved.

**Randomness.**  By default the bits come from the operating system's secure source
(``os.urandom``).  It delivers only some hundred MB/s, so a secure draw first compares
one random byte ``B`` with ``floor(256 q)`` and only when they are equal (probability
1/256) draws the fractional part ``256 q - floor(256 q)`` (an exact double) with the
53-bit comparison above: still exact, at about one byte a draw.  With a seed
(``--seed``, for tests and reproducible examples only — labelled "not for real
releases" in the report), record ``t`` (0-based position in its sequence) of the
sequence with id ``s`` uses word ``t`` of a PCG64 stream seeded by
``SeedSequence(seed, spawn_key=(key(s),))`` (``key`` is a hash of the id, see
:func:`redactopt.release.data.sequence_key`), reached with ``PCG64.advance``; tie bits use
``spawn_key=(key(s), t + 1)``.  Seeded draws therefore do not depend on how the data are
cut into chunks or partitions, which makes the in-memory and Dask back-ends agree
record for record.

**Streaming.**  :func:`apply_table` reads the input twice in chunks (Parquet one row
group at a time): the first pass checks every value, counts the records of each
sequence, the transitions (for the fit) and the private flags; every sequence that has
private records is designed (:func:`redactopt.engine.joint.design_joint_sparse`: each private
record protected at ``eps``); the second pass redacts and writes.  The data are never
held in memory, and neither is an ``(n, 2)`` table: a design is a
:class:`~redactopt.judge.certify.SparseDesign`, blocks of rows around the private records with
every other record published with certainty, verified exactly on each block extended by
its always-published neighbours (exact for the whole sequence, see
:func:`~redactopt.judge.certify.finalize_sparse`).  Memory grows with the chunk size, the
number of sequences and the blocks, not with the length of a sequence; the report's
``redact_prob`` for every record is written in pieces.

Positions are 0-based in the Python API and 1-based on the command line and in files.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from redactopt._validate import check_eps, check_probability_open
from redactopt.io import atomic_open, design_to_dict
from redactopt.judge.certify import DesignResult, SparseDesign, SparseRows
from redactopt.model.chain import MarkovChain
from redactopt.release.data import DEFAULT_CHUNK_ROWS, ScanState, TableReader, TableWriter, parse_binary, sequence_key
from redactopt.judge.leakage import leakage

__all__ = [
    "BitSource",
    "SecureBits",
    "SeededBits",
    "bit_source",
    "exact_thresholds",
    "bernoulli_exact",
    "SequencePlan",
    "Redactor",
    "ReleasePlan",
    "plan_release",
    "parse_positions",
    "apply_table",
    "write_report",
    "NOT_FOR_RELEASE",
]

TWO53 = 1 << 53
NOT_FOR_RELEASE = "NOT FOR REAL RELEASES: seeded pseudo-random draws (--seed) are reproducible by anyone who knows the seed"


# --------------------------------------------------------------------------
# bit sources
# --------------------------------------------------------------------------
class BitSource(Protocol):
    """Where the random bits come from.

    ``words(key, positions)`` returns one uniform 64-bit word per position (positions are
    0-based record positions in the sequence with the given key); ``tie_bits(key,
    position, nbits)`` returns ``nbits`` further uniform bits as an integer.
    """

    secure: bool
    description: str

    def words(self, key: int, positions: np.ndarray) -> np.ndarray: ...

    def tie_bits(self, key: int, position: int, nbits: int) -> int: ...


class SecureBits:
    """The operating system's secure source (``os.urandom``): the default for real releases.

    :meth:`bernoulli` spends one byte per draw in the common case (see the module
    docstring), because ``os.urandom`` delivers only some hundred MB/s.
    """

    secure = True
    description = "os.urandom (operating-system secure source)"

    def random_bytes(self, m: int) -> bytes:
        return os.urandom(m)

    def words(self, key: int, positions: np.ndarray) -> np.ndarray:
        m = int(np.asarray(positions).shape[0])
        return np.frombuffer(self.random_bytes(8 * m), dtype=np.uint64) if m else np.zeros(0, dtype=np.uint64)

    def tie_bits(self, key: int, position: int, nbits: int) -> int:
        nbytes = (nbits + 7) // 8
        return int.from_bytes(self.random_bytes(nbytes), "little") >> (8 * nbytes - nbits)

    def bernoulli(self, prob: np.ndarray) -> np.ndarray:
        """Exact draws for probabilities strictly inside (0, 1), one random byte each first.

        With ``V = (B + V')/256`` (``B`` a uniform byte, ``V'`` uniform and independent),
        ``V < q`` iff ``B < floor(256 q)``, or ``B = floor(256 q)`` and
        ``V' < frac(256 q)``.  Both ``256 q`` and its fractional part are exact doubles,
        so the tie (probability 1/256) is an exact draw of its own, done with 53-bit words.
        """
        q = np.asarray(prob, dtype=float)
        scaled = q * 256.0  # exact: a power-of-two scaling
        top = np.floor(scaled)
        b = np.frombuffer(self.random_bytes(q.shape[0]), dtype=np.uint8).astype(np.float64)
        out = b < top
        tie = np.flatnonzero(b == top)
        if tie.size:
            out[tie] = bernoulli_exact(scaled[tie] - top[tie], _WordsOnly(self))
        return out


class _WordsOnly:
    """A view of a source without its ``bernoulli`` shortcut (for the tie stage)."""

    def __init__(self, source: Any) -> None:
        self.source = source
        self.secure = source.secure
        self.description = source.description

    def words(self, key: int, positions: np.ndarray) -> np.ndarray:
        return self.source.words(key, positions)

    def tie_bits(self, key: int, position: int, nbits: int) -> int:
        return self.source.tie_bits(key, position, nbits)


class SeededBits:
    """Reproducible PCG64 words indexed by (sequence key, position); see the module docstring."""

    secure = False

    def __init__(self, seed: int) -> None:
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        self.seed = int(seed)
        self.description = f"numpy PCG64, SeedSequence({self.seed}) spawned per sequence id"

    def _stream(self, *spawn_key: int) -> np.random.PCG64:
        return np.random.PCG64(np.random.SeedSequence(self.seed, spawn_key=spawn_key))

    def words(self, key: int, positions: np.ndarray) -> np.ndarray:
        pos = np.asarray(positions, dtype=np.int64)
        if not pos.size:
            return np.empty(0, dtype=np.uint64)
        first, last = int(pos[0]), int(pos[-1])
        if last - first + 1 == pos.size and (pos.size == 1 or bool(np.all(np.diff(pos) == 1))):
            bg = self._stream(key)  # the common case: a contiguous run of positions
            if first:
                bg.advance(first)
            return bg.random_raw(pos.size)
        out = np.empty(pos.shape[0], dtype=np.uint64)
        order = np.argsort(pos, kind="stable")
        sp = pos[order]
        # runs of nearby positions (gaps up to 4096 words are read through rather than jumped)
        cut = np.flatnonzero(np.diff(sp) > 4096) + 1
        starts = np.r_[0, cut]
        ends = np.r_[cut, sp.size]
        for a, b in zip(starts.tolist(), ends.tolist()):
            bg = self._stream(key)
            lo = int(sp[a])
            if lo:
                bg.advance(lo)
            raw = bg.random_raw(int(sp[b - 1]) - lo + 1)
            out[order[a:b]] = raw[sp[a:b] - lo]
        return out

    def tie_bits(self, key: int, position: int, nbits: int) -> int:
        n_words = (nbits + 63) // 64
        raw = self._stream(key, int(position) + 1).random_raw(n_words)
        value = 0
        for w in raw.tolist():
            value = (value << 64) | int(w)
        return value >> (64 * n_words - nbits)


def bit_source(seed: int | None) -> BitSource:
    """:class:`SecureBits` without a seed, :class:`SeededBits` with one."""
    return SecureBits() if seed is None else SeededBits(seed)


# --------------------------------------------------------------------------
# exact Bernoulli
# --------------------------------------------------------------------------
def exact_thresholds(prob: object) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(Q, k, T)`` with ``q * 2**53 == Q + T / 2**k`` exactly, elementwise (see the module docstring).

    ``Q`` is ``uint64`` (``2**53`` for ``q = 1``), ``k`` the number of tie bits
    (``int32``), ``T < 2**min(k, 53)`` (``int64``).  Entries must lie in [0, 1].
    """
    q = np.asarray(prob, dtype=float)
    if q.size and (not np.all(np.isfinite(q)) or q.min() < 0.0 or q.max() > 1.0):
        raise ValueError("probabilities must lie in [0, 1]")
    m, e = np.frexp(q)
    M = np.ldexp(m, 53).astype(np.int64)  # exact: the significand has at most 53 bits
    e = e.astype(np.int64)
    k = np.maximum(-e, 0)
    Q = np.where(e >= 0, M << np.maximum(e, 0), M >> np.minimum(k, 63)).astype(np.uint64)
    small = k < 53
    T = np.where(small, M & ((np.int64(1) << np.minimum(k, 62)) - 1), M)
    T = np.where(k == 0, 0, T).astype(np.int64)
    return Q, k.astype(np.int32), T


def _decide(words: np.ndarray, Q: np.ndarray, k: np.ndarray, T: np.ndarray, tie: Any) -> np.ndarray:
    """Redact (True) iff the uniform behind ``words`` is below ``Q + T/2^k`` (over 2^53).

    ``k`` and ``T`` may be callables ``f(indices)`` returning the entries at ``indices``
    (they are needed only at ties, which have probability ``2^-53`` each).
    """
    U = words >> np.uint64(11)
    out = U < Q
    eq = np.flatnonzero(U == Q)
    if eq.size:
        k_eq = k(eq) if callable(k) else k[eq]
        T_eq = T(eq) if callable(T) else T[eq]
        for j, kj, tj in zip(eq.tolist(), k_eq.tolist(), T_eq.tolist()):
            if tj:
                out[j] = tie(j, int(kj)) < int(tj)
    return out


def bernoulli_exact(prob: object, source: BitSource | None = None, *, key: int = 0,
                    positions: np.ndarray | None = None) -> np.ndarray:
    """Independent draws ``B_i ~ Bernoulli(prob[i])`` with exactly the given probabilities.

    ``source`` defaults to the secure source; ``positions`` (default ``0..m-1``) index the
    words of a seeded source.  ``q = 0`` never draws ``True`` and ``q = 1`` always does.
    """
    q = np.asarray(prob, dtype=float).reshape(-1)
    src = SecureBits() if source is None else source
    pos = np.arange(q.shape[0], dtype=np.int64) if positions is None else np.asarray(positions, dtype=np.int64)
    Q, k, T = exact_thresholds(q)
    out = Q >= np.uint64(TWO53)
    need = np.flatnonzero(((Q > 0) | (T != 0)) & ~out)
    if need.size:
        if hasattr(src, "bernoulli"):
            out[need] = src.bernoulli(q[need])
        else:
            w = src.words(key, pos[need])
            out[need] = _decide(w, Q[need], k[need], T[need],
                                lambda j, nb: src.tie_bits(key, int(pos[need[j]]), nb))
    return out


# --------------------------------------------------------------------------
# per-sequence plans and the redaction step
# --------------------------------------------------------------------------
@dataclass
class SequencePlan:
    """The design for one sequence (``result`` is ``None`` when it has no private record).

    ``result`` is normally a :class:`~redactopt.judge.certify.SparseDesign` (blocks around the
    private records); a dense :class:`~redactopt.judge.certify.DesignResult` is accepted too.
    """

    seq_id: Any
    n: int
    private: tuple[int, ...]
    result: SparseDesign | DesignResult | None

    @property
    def key(self) -> int:
        return sequence_key(self.seq_id)

    def blocks(self) -> list[tuple[int, np.ndarray]]:
        """``(first row, rows)`` of every block that may be redacted, sorted, 0-based."""
        if self.result is None:
            return []
        q = self.result.redact_prob
        if isinstance(q, SparseRows):
            return list(zip(q.starts, q.blocks))
        q = np.asarray(q)
        nz = np.flatnonzero(q.any(axis=1))
        return [(int(nz[0]), q[nz[0] : nz[-1] + 1])] if nz.size else []

    def span(self) -> tuple[int, int]:
        """0-based first and last rows that may be redacted (``(0, -1)`` when none)."""
        b = self.blocks()
        return (b[0][0], b[-1][0] + b[-1][1].shape[0] - 1) if b else (0, -1)


#: Sequence code and position packed in one int64 key (positions stay below 2**31 > MAX_N).
_POS_BITS = 31


class Redactor:
    """The redaction step: (sequence code, position, value) -> redact or not, in numpy.

    Only records inside a designed sequence's blocks can be redacted; everything else is
    published without drawing.  Memory is that of the blocks, not of the sequences.
    Thresholds are the exact integers of :func:`exact_thresholds`.
    """

    def __init__(self, plans: list[SequencePlan], source: BitSource) -> None:
        self.source = source
        k = len(plans)
        self.keys = [p.key for p in plans]
        # per sequence: the span of its blocks (a quick filter); per block: code, first/last row, offset
        self.lo = np.zeros(k, dtype=np.int64)
        self.hi = np.full(k, -1, dtype=np.int64)
        b_code, b_lo, b_hi, b_base, tables = [], [], [], [], []
        offset = 0
        for c, p in enumerate(plans):
            blocks = p.blocks()
            if not blocks:
                continue
            self.lo[c], self.hi[c] = p.span()
            for start, rows in blocks:
                b_code.append(c)
                b_lo.append(start)
                b_hi.append(start + rows.shape[0] - 1)
                b_base.append(offset)
                tables.append(np.asarray(rows, dtype=float))
                offset += rows.shape[0]
        self.b_code = np.asarray(b_code, dtype=np.int64)
        self.b_lo = np.asarray(b_lo, dtype=np.int64)
        self.b_hi = np.asarray(b_hi, dtype=np.int64)
        self.b_base = np.asarray(b_base, dtype=np.int64)
        self.b_key = (self.b_code << _POS_BITS) + self.b_lo
        qt = np.concatenate(tables) if tables else np.zeros((0, 2))
        Q, kk, T = exact_thresholds(qt)
        # flat tables indexed by 2 * row + value: one gather per record
        self.qf = np.ascontiguousarray(qt).reshape(-1)
        self.Q, self.k, self.T = Q.reshape(-1), kk.reshape(-1), T.reshape(-1)

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
            flats = [2 * (self.b_base[j] - self.b_lo[j] + positions[a:b]) + values[a:b] for a, b, j in spans]
            if len(spans) == 1:  # the usual case: a slice, no index array
                rows = slice(spans[0][0], spans[0][1])
                flat = flats[0]
            else:
                rows = np.concatenate([np.arange(a, b, dtype=np.int64) for a, b, _ in spans])
                flat = np.concatenate(flats)
            seg_codes = None
        else:
            rows = np.flatnonzero((positions >= self.lo[codes]) & (positions <= self.hi[codes]))
            if not rows.size:
                return out
            c, pos = codes[rows], positions[rows]
            j = np.searchsorted(self.b_key, (c << _POS_BITS) + pos, side="right") - 1
            inside = (j >= 0) & (self.b_code[j] == c) & (pos <= self.b_hi[j])
            rows, j, c = rows[inside], j[inside], c[inside]
            if not rows.size:
                return out
            flat = 2 * (self.b_base[j] + positions[rows] - self.b_lo[j]) + values[rows]
            seg_codes = c
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
                res[need] = _decide(w, Qn, k_at, T_at,
                                    lambda j, nb: self.source.tie_bits(key, int(pos[j]), nb))
            else:
                nc = seg_codes[need]
                for c in np.unique(nc).tolist():
                    sel = np.flatnonzero(nc == c)
                    key = self.keys[c]
                    p_sel = pos[sel]
                    w = self.source.words(key, p_sel)
                    fs = fn[sel]
                    res[need[sel]] = _decide(
                        w, Qn[sel], lambda idx, fs=fs: self.k[fs[idx]], lambda idx, fs=fs: self.T[fs[idx]],
                        lambda j, nb, key=key, p_sel=p_sel: self.source.tie_bits(key, int(p_sel[j]), nb))
        out[rows] = res
        return out


# --------------------------------------------------------------------------
# planning a release
# --------------------------------------------------------------------------
def parse_positions(text: str, n: int | None = None, name: str = "--private") -> list[int]:
    """1-based positions and ranges (``"5000,5010-5020"``) -> sorted 0-based indices.

    With ``n``, every position must lie in ``1..n``; the message names the item.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{name} needs positions such as 5000,5010-5020, got {text!r}")
    out: set[int] = set()
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        try:
            if "-" in item:
                a_s, b_s = item.split("-", 1)
                a, b = int(a_s), int(b_s)
                if b < a:
                    raise ValueError
                rng = range(a, b + 1)
            else:
                a = b = int(item)
                rng = range(a, a + 1)
        except ValueError:
            raise ValueError(f"{name}: {item!r} is not a position or a range a-b (1-based)") from None
        if a < 1 or (n is not None and b > n):
            limit = f"1..{n}" if n is not None else ">= 1"
            raise ValueError(f"{name}: {item!r} is outside the sequence (positions {limit})")
        out.update(p - 1 for p in rng)
    if not out:
        raise ValueError(f"{name} needs at least one position")
    return sorted(out)


@dataclass
class ReleasePlan:
    """Chain, per-sequence designs and everything the report needs."""

    chain: MarkovChain
    fit: Any
    eps: float
    method: str
    plans: list[SequencePlan]
    state: ScanState
    design_seconds: float
    info: dict = field(default_factory=dict)

    def expected_utility(self) -> float:
        total = sum(p.n for p in self.plans)
        pub = sum(p.n * (p.result.utility if p.result is not None else 1.0) for p in self.plans)
        return pub / total if total else 1.0


def _json_id(v: Any) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    return str(v)


def plan_release(
    state: ScanState,
    *,
    eps: float,
    private: list[int] | None = None,
    alpha: float | None = None,
    beta: float | None = None,
    method: str = "auto",
    time_limit: float = 60.0,
    confidence: float = 0.95,
) -> ReleasePlan:
    """Fit (unless alpha and beta are given) and design every sequence that has private records.

    ``private`` (0-based) applies to a single-sequence scan; otherwise the scan's private
    flags are used.
    """
    from redactopt.release.fit import fit_counts
    from redactopt.engine.joint import JOINT_METHODS, design_joint_sparse

    eps = check_eps(eps)
    if method not in JOINT_METHODS:
        raise ValueError(f"method must be one of {', '.join(JOINT_METHODS)}, got {method!r}")
    if (alpha is None) != (beta is None):
        raise ValueError("give both --alpha and --beta, or neither (then they are fitted)")
    if state.rows == 0:
        raise ValueError("the input has no data rows")
    fit = None
    if alpha is None:
        fit = fit_counts(state.counts(), confidence=confidence)
        chain = fit.chain
    else:
        chain = MarkovChain(check_probability_open(alpha, "alpha"), check_probability_open(beta, "beta"))
    priv_by_code: dict[int, list[int]] = {}
    if private is not None:
        if len(state.ids) != 1:
            raise ValueError("--private positions need a single sequence; with --by use --private-column")
        n0 = int(state.n[0])
        bad = [p + 1 for p in private if p >= n0]
        if bad:
            raise ValueError(f"--private: position {bad[0]} is outside the sequence (positions 1..{n0})")
        priv_by_code[0] = sorted(set(private))
    else:
        priv_by_code = {c: sorted(set(v)) for c, v in state.private.items() if v}
    if not priv_by_code:
        raise ValueError("no record is marked private: nothing to protect (check --private-column)")
    t0 = time.perf_counter()
    plans = []
    for c, seq_id in enumerate(state.ids):
        n = int(state.n[c])
        priv = priv_by_code.get(c)
        if not priv:
            plans.append(SequencePlan(seq_id, n, (), None))
            continue
        res = design_joint_sparse(chain, n, eps=eps, private=priv, method=method, time_limit=time_limit)
        plans.append(SequencePlan(seq_id, n, tuple(priv), res))
    return ReleasePlan(chain, fit, eps, method, plans, state, time.perf_counter() - t0)


# --------------------------------------------------------------------------
# the report
# --------------------------------------------------------------------------
def _sequence_report(plan: SequencePlan, chain: MarkovChain, redacted: int) -> dict[str, Any]:
    res = plan.result
    d: dict[str, Any] = {"id": _json_id(plan.seq_id), "n": plan.n,
                         "private": [p + 1 for p in plan.private], "redacted": int(redacted),
                         "realised_utility": 1.0 - redacted / plan.n if plan.n else 1.0}
    if res is None:
        d["expected_utility"] = 1.0
        d["mechanism"] = None
        return d
    d["expected_utility"] = res.utility
    if isinstance(res, SparseDesign):
        per = res.per_private
    else:
        per = tuple(leakage(chain, np.asarray(res.redact_prob), p).leakage for p in res.private)
    d["leakage"] = [{"private": p + 1, "leakage": v} for p, v in zip(res.private, per)]
    lo, hi = plan.span()
    d["window"] = [lo + 1, hi + 1]
    d["blocks"] = [[s + 1, s + rows.shape[0]] for s, rows in plan.blocks()]
    d["design_info"] = _jsonable(res.info)
    d["mechanism"] = design_to_dict(res, stream=True)
    return d


_COMMON_ROWS = {(0.0, 0.0): "[0.0, 0.0]", (1.0, 1.0): "[1.0, 1.0]"}


def _write_json(obj: Any, fh: Any, level: int = 0) -> None:
    pad, inner = "  " * level, "  " * (level + 1)
    if isinstance(obj, SparseRows) or (isinstance(obj, np.ndarray) and obj.ndim == 2):
        n = obj.shape[0]
        if n == 0:
            fh.write("[]")
            return
        fh.write("[\n")
        size = 65536
        pieces = obj.chunks(size) if isinstance(obj, SparseRows) else (obj[a : a + size] for a in range(0, n, size))
        sep = ",\n" + inner
        for a, piece in zip(range(0, n, size), pieces):
            parts = [_COMMON_ROWS.get((r[0], r[1])) or f"[{float(r[0])!r}, {float(r[1])!r}]"
                     for r in piece.tolist()]
            fh.write(inner + sep.join(parts))
            fh.write(",\n" if a + size < n else "\n")
        fh.write(pad + "]")
    elif isinstance(obj, dict):
        if not obj:
            fh.write("{}")
            return
        fh.write("{\n")
        items = list(obj.items())
        for i, (k, v) in enumerate(items):
            fh.write(f"{inner}{json.dumps(str(k))}: ")
            _write_json(v, fh, level + 1)
            fh.write(",\n" if i < len(items) - 1 else "\n")
        fh.write(pad + "}")
    elif isinstance(obj, (list, tuple)):
        if not obj:
            fh.write("[]")
            return
        fh.write("[\n")
        for i, v in enumerate(obj):
            fh.write(inner)
            _write_json(v, fh, level + 1)
            fh.write(",\n" if i < len(obj) - 1 else "\n")
        fh.write(pad + "]")
    else:
        fh.write(json.dumps(_jsonable(obj)))


def write_report(path: str | os.PathLike[str], report: dict[str, Any], *, force: bool = False) -> None:
    """Write a report as JSON through a temporary file and a rename (arrays streamed row by row)."""
    with atomic_open(path, force=force) as fh:
        _write_json(report, fh)
        fh.write("\n")


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def build_report(plan: ReleasePlan, *, redacted: np.ndarray, source: BitSource, seed: int | None,
                 extra: dict[str, Any]) -> dict[str, Any]:
    """The JSON report of a release (format ``redactopt.release.apply-report/1``)."""
    chain_d: dict[str, Any] = {"alpha": plan.chain.alpha, "beta": plan.chain.beta,
                               "source": "fitted" if plan.fit is not None else "given"}
    if plan.fit is not None:
        chain_d["fit"] = plan.fit.to_dict()
    total = int(sum(p.n for p in plan.plans))
    red = int(redacted.sum())
    seqs = [_sequence_report(p, plan.chain, int(redacted[c])) for c, p in enumerate(plan.plans)]
    rep: dict[str, Any] = {"format": "redactopt.release.apply-report/1"}
    rep.update(extra)
    rep.update({
        "rows": total,
        "eps": plan.eps,
        "method": plan.method,
        "chain": chain_d,
        "seed": seed,
        "randomness": {"source": source.description, "secure": bool(source.secure)},
        "utility": {"expected": plan.expected_utility(), "realised": 1.0 - red / total if total else 1.0,
                    "redacted": red},
        "design_seconds": plan.design_seconds,
    })
    if seed is not None:
        rep["label"] = NOT_FOR_RELEASE
        rep["randomness"]["label"] = NOT_FOR_RELEASE
    designed = [s for s in seqs if s["mechanism"] is not None]
    rep["leakage"] = {"max": max(x["leakage"] for s in designed for x in s["leakage"]),
                      "per_private": [dict(x, sequence=s["id"]) for s in designed for x in s["leakage"]]}
    if len(seqs) == 1:
        s = seqs[0]
        rep["mechanism"] = s["mechanism"]
        rep["window"] = s.get("window")
        rep["blocks"] = s.get("blocks")
        rep["design_info"] = s.get("design_info")
    else:
        rep["sequences"] = seqs
    return rep


# --------------------------------------------------------------------------
# the streaming driver
# --------------------------------------------------------------------------
def _columns_needed(column: str, by: str | None, private_column: str | None) -> list[str]:
    cols = [column]
    for c in (by, private_column):
        if c is not None and c not in cols:
            cols.append(c)
    return cols


def _ids_of(chunk: Any, by: str, where: str) -> np.ndarray:
    ids = chunk.column(by)
    if not isinstance(ids, np.ndarray):
        if ids.null_count:
            i = int(np.flatnonzero(ids.is_null().to_numpy(zero_copy_only=False))[0])
            raise ValueError(f"{where}: row {chunk.first_row + i}, column '{by}': missing value")
        ids = ids.to_numpy(zero_copy_only=False)
    else:
        empty = np.flatnonzero(ids == "")
        if empty.size:
            raise ValueError(f"{where}: row {chunk.first_row + int(empty[0])}, column '{by}': missing value")
    return np.asarray(ids, dtype=object)


def scan_table(reader: TableReader, *, column: str, by: str | None = None,
               private_column: str | None = None) -> ScanState:
    """First pass: validate every value and collect the :class:`~redactopt.release.data.ScanState`."""
    reader.require(column, by, private_column)
    state = ScanState()
    where = str(reader.path)
    for chunk in reader.chunks(_columns_needed(column, by, private_column)):
        values = parse_binary(chunk.column(column), column=column, first_row=chunk.first_row, where=where)
        ids = _ids_of(chunk, by, where) if by else None
        flags = None
        if private_column:
            flags = parse_binary(chunk.column(private_column), column=private_column,
                                 first_row=chunk.first_row, where=where)
        state = state.merge(ScanState.of_chunk(values, ids, flags))
    return state


def _positions(codes: np.ndarray | None, counter: np.ndarray, m: int) -> np.ndarray:
    from redactopt.release.data import _group_ranks

    if codes is None:
        pos = counter[0] + np.arange(m, dtype=np.int64)
        counter[0] += m
        return pos
    rank, _ = _group_ranks(codes)
    pos = counter[codes] + rank
    counter += np.bincount(codes, minlength=counter.shape[0])
    return pos


def _codes_of(ids: np.ndarray, index: dict, where: str) -> np.ndarray:
    from redactopt.release.data import _id_key

    try:
        return np.fromiter((index[_id_key(v)] for v in ids), dtype=np.int64, count=ids.shape[0])
    except KeyError as exc:
        raise ValueError(f"{where}: the input changed while it was being read (new id {exc.args[0]!r})") from None


def _redacted_column_csv(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    out = np.asarray(values, dtype=object).copy()
    out[mask] = ""
    return out


def write_redacted(reader: TableReader, writer: TableWriter, redactor: Redactor, plan: ReleasePlan, *,
                   column: str, by: str | None) -> np.ndarray:
    """Second pass: redact and write every chunk; returns the redacted count per sequence."""
    import pyarrow as pa
    import pyarrow.compute as pc

    where = str(reader.path)
    index = plan.state.index()
    k = len(plan.plans)
    counter = np.zeros(k, dtype=np.int64)
    redacted = np.zeros(k, dtype=np.int64)
    single = by is None
    for chunk in reader.chunks(None):
        m = len(chunk)
        values = parse_binary(chunk.column(column), column=column, first_row=chunk.first_row, where=where)
        codes = None if single else _codes_of(_ids_of(chunk, by, where), index, where)  # type: ignore[arg-type]
        pos = _positions(codes, counter, m)
        mask = redactor.redact(codes, pos, values)
        redacted += np.bincount(np.zeros(int(mask.sum()), dtype=np.int64) if single else codes[mask], minlength=k)
        frame = chunk.frame
        if writer.format == "csv":
            if reader.format == "csv":
                out = frame.copy(deep=False)
                out[column] = _redacted_column_csv(frame[column].to_numpy(dtype=object), mask)
                writer.write_csv(out, index=reader.implicit_index, delimiter=reader.delimiter)
            else:
                out = frame.to_pandas()
                col = out[column].astype("Int64" if not pa.types.is_boolean(frame.column(column).type) else "boolean")
                col[mask] = None
                out[column] = col
                writer.write_csv(out, index=False)
        else:
            if reader.format == "parquet":
                table = pa.Table.from_batches([frame])
                col = table.column(column)
            else:
                df = frame.reset_index() if reader.implicit_index else frame
                table = pa.Table.from_pandas(df, preserve_index=False)
                col = pa.array(values, type=pa.int8())
            new_col = pc.if_else(pa.array(mask), pa.scalar(None, type=col.type), col)
            i = table.schema.get_field_index(column)
            table = table.set_column(i, pa.field(column, col.type, nullable=True), new_col)
            writer.write_arrow(table)
    if not np.array_equal(counter, plan.state.n):
        raise ValueError(f"{where}: the input changed while it was being read (row counts differ)")
    return redacted


def check_release_paths(
    source: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    report: str | os.PathLike[str] | None,
    *,
    private: object,
    private_column: str | None,
    by: str | None,
    force: bool,
) -> tuple[Path, Path, Path | None]:
    """Checks shared by every back-end before anything is read or written.

    Exactly one of ``private`` / ``private_column``; positions only for one sequence; the
    input exists and is never the output or the report; an existing output or report is
    refused unless ``force``.  Returns the three paths.
    """
    src, dst = Path(source), Path(dest)
    if (private is None) == (private_column is None):
        raise ValueError("give exactly one of --private and --private-column")
    if private is not None and by is not None:
        raise ValueError("--private positions need a single sequence; with --by use --private-column")
    if not src.exists():
        raise ValueError(f"{src}: no such file or folder")
    def inside_input(path: Path) -> bool:  # the input itself, or a file of an input folder
        p = path.resolve()
        return p == src.resolve() or src.resolve() in p.parents

    if inside_input(dst):
        raise ValueError(f"{dst}: is (inside) the input; the input is never overwritten")
    rep_path = Path(report) if report is not None else None
    if rep_path is not None:
        if inside_input(rep_path) or rep_path.resolve() == dst.resolve():
            raise ValueError(f"{rep_path}: the report must be a different file from the input and the output")
        if rep_path.exists() and not force:
            raise FileExistsError(f"{rep_path}: exists; pass --force to overwrite")
    if dst.exists() and not force:
        raise FileExistsError(f"{dst}: exists; pass --force to overwrite")
    return src, dst, rep_path


def apply_table(
    source: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    *,
    column: str,
    eps: float,
    private: list[int] | None = None,
    private_column: str | None = None,
    by: str | None = None,
    alpha: float | None = None,
    beta: float | None = None,
    method: str = "auto",
    seed: int | None = None,
    report: str | os.PathLike[str] | None = None,
    force: bool = False,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    time_limit: float = 60.0,
) -> dict[str, Any]:
    """Design, draw and write a redacted copy of a table; returns the report (see :func:`build_report`).

    Parameters
    ----------
    source, dest : path
        Input and output tables (CSV or Parquet, by extension; they may differ).  The
        input is never modified; ``dest`` is written to a temporary file in its folder
        and renamed, only if everything succeeded.
    column : str
        The binary column to protect.
    eps : float
        Privacy budget per private record (nats).
    private : list of int, optional
        0-based positions of the private records (single sequence).
    private_column : str, optional
        A 0/1 column flagging private rows (any number of sequences).
    by : str, optional
        Column naming the sequence of each row; each sequence is a chain of its own.
    alpha, beta : float, optional
        The chain; fitted from the data when omitted.
    method : str
        ``"auto"`` or a :func:`redactopt.engine.design.design` method, see
        :func:`redactopt.engine.joint.design_joint`.
    seed : int, optional
        Reproducible PCG64 draws — not for real releases; default: ``os.urandom``.
    report : path, optional
        Where to write the JSON report (refused if it exists, unless ``force``).
    """
    src, dst, rep_path = check_release_paths(source, dest, report, private=private,
                                             private_column=private_column, by=by, force=force)
    reader = TableReader(src, chunk_rows=chunk_rows)
    state = scan_table(reader, column=column, by=by, private_column=private_column)
    plan = plan_release(state, eps=eps, private=private, alpha=alpha, beta=beta, method=method,
                        time_limit=time_limit)
    bits = bit_source(seed)
    redactor = Redactor(plan.plans, bits)
    t0 = time.perf_counter()
    with TableWriter(dst, force=force) as writer:
        redacted = write_redacted(reader, writer, redactor, plan, column=column, by=by)
        rep = build_report(plan, redacted=redacted, source=bits, seed=seed, extra={
            "input": str(src), "output": str(dst), "column": column, "by": by,
            "private_column": private_column})
        rep["apply_seconds"] = time.perf_counter() - t0
        writer.commit()
    if rep_path is not None:
        write_report(rep_path, rep, force=True)
    return rep
