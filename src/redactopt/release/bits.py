r"""Exact Bernoulli draws and the random bits behind them.

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
"""

from __future__ import annotations

import os
from typing import Any, Protocol

import numpy as np

__all__ = [
    "BitSource",
    "SecureBits",
    "SeededBits",
    "bit_source",
    "exact_thresholds",
    "decide",
    "bernoulli_exact",
    "TWO53",
]

TWO53 = 1 << 53


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


def decide(words: np.ndarray, Q: np.ndarray, k: np.ndarray, T: np.ndarray, tie: Any) -> np.ndarray:
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
            out[need] = decide(w, Q[need], k[need], T[need],
                                lambda j, nb: src.tie_bits(key, int(pos[need[j]]), nb))
    return out
