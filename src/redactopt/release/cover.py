"""``--cover K``: hide the private runs of a release among decoys of the same shape (issue 36).

The guarantee of a release covers the *values* of its private records.  Their *positions* are
not protected: every private record is redacted with certainty and its design redacts records
around it, so the ⊥ pattern shows which sequences hold private records and where.  A cover adds
*decoy copies* of the private runs, placed uniformly at random, and plans them exactly as if they
were private records: each decoy is the real design placed elsewhere, redacted by the same
mechanism and verified by the same exact evaluator about its own centre records.

**The copies.**  A *run* is a maximal run of consecutive private rows of a sequence; its length is
``L``.  With ``c_L`` the largest number of real runs of length ``L`` in one sequence, every
sequence of at least ``L`` records gets exactly ``c_L + K`` copies of length ``L`` — its own real
runs of that length and decoys for the rest — so that the number and the lengths of the copies are
the same in every sequence, with private records or without.  Each decoy's first row is drawn
uniformly from the ``n - L + 1`` starts of its sequence, independently of everything else (the
data, the other copies, the redaction draws), from the release's source of randomness: the
operating system's secure source, or with a seed a PCG64 stream of its own per sequence
(``SeedSequence(seed, spawn_key=(key(id), L, COVER_STREAM))`` for the copies of length ``L``, never one
the redaction draws use).
Decoys may fall on real runs or on one another: the planner merges whatever overlaps, for real
and decoy copies alike.

**What it buys** (``docs/mathematics.md`` §10d).  If the real runs' starts are independent and
uniform over the same starts (a uniform prior on the opt-out time), the release is independent of
which copies are real: for every copy, and whatever the release shows, the probability that it is
a real run is ``r_L / (c_L + K) <= c_L / (c_L + K)``, for ``r_L`` real runs of length ``L`` in its
sequence — and nothing in the release tells a sequence with private records from one without.
**What it costs**: the decoys' redactions; :func:`cover_cost` gives the expected redacted records
with and without the cover.

Positions are 0-based here, 1-based in reports.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from redactopt.release.bits import BitSource, SeededBits
from redactopt.release.data import ScanState, sequence_key

__all__ = ["Cover", "COVER_STREAM", "private_runs", "uniform_integers", "draw_cover", "check_cover", "covered_scan"]

#: The last spawn key of a seeded cover stream (the redaction draws use ``(key,)`` and ``(key, t + 1)``).
COVER_STREAM = 0x636F766572  # "cover"

_TWO64 = 1 << 64


def check_cover(cover: object) -> int:
    """``cover`` as a number of decoys per real run (``None`` and ``0``: no cover)."""
    if cover is None:
        return 0
    if isinstance(cover, bool) or not isinstance(cover, (int, np.integer)) or cover < 0:
        raise ValueError(f"--cover must be a whole number of decoys per private run (>= 0), got {cover!r}")
    return int(cover)


def private_runs(positions: Any) -> list[tuple[int, int]]:
    """The maximal runs of consecutive positions, ``(first, length)``, sorted (duplicates counted once)."""
    pos = np.unique(np.asarray(positions, dtype=np.int64))
    if not pos.size:
        return []
    cut = np.flatnonzero(np.diff(pos) > 1) + 1
    starts = np.r_[0, cut]
    ends = np.r_[cut, pos.size]
    return [(int(pos[a]), int(b - a)) for a, b in zip(starts.tolist(), ends.tolist())]


def uniform_integers(source: BitSource, key: int, bound: int, count: int, *, tag: int = 0) -> np.ndarray:
    """``count`` independent uniform integers in ``[0, bound)``, exactly (rejection on 64-bit words).

    A word ``w`` is accepted when ``w < floor(2**64 / bound) * bound`` and gives ``w mod bound``; the
    accepted words are uniform on a multiple of ``bound``, so the result is exactly uniform.  Words
    come from the secure source, or with a seed from the cover's own stream of sequence ``key``
    (``SeedSequence(seed, spawn_key=(key, tag, COVER_STREAM))``: three numbers, where the redaction
    draws spawn one or two).
    """
    if bound < 1:
        raise ValueError(f"bound must be >= 1, got {bound}")
    limit = (_TWO64 // bound) * bound
    stream = None
    if isinstance(source, SeededBits):
        stream = np.random.PCG64(np.random.SeedSequence(source.seed, spawn_key=(key, tag, COVER_STREAM)))
    out: list[int] = []
    while len(out) < count:
        need = count - len(out)
        if stream is None:
            words = np.frombuffer(os.urandom(8 * need), dtype=np.uint64)
        else:
            words = stream.random_raw(need)
        out += [w % bound for w in words.tolist() if w < limit]
    return np.asarray(out[:count], dtype=np.int64)


@dataclass(frozen=True)
class Cover:
    """The decoys of a release: ``k`` per real run, and the copies every sequence shows.

    ``copies[L]`` is ``c_L + k`` (:mod:`module docstring <redactopt.release.cover>`); ``real`` and
    ``decoys`` map a sequence code to its real runs and its decoys, ``(first, length)``, 0-based.
    """

    k: int
    copies: dict[int, int]
    real: dict[int, list[tuple[int, int]]]
    decoys: dict[int, list[tuple[int, int]]]
    source: str
    #: expected redacted records without and with the decoys (:func:`cover_cost`)
    cost: dict[str, float] = field(default_factory=dict)

    def decoy_positions(self, code: int) -> list[int]:
        """The records of sequence ``code`` its decoys make private (sorted, distinct)."""
        return sorted({s + i for s, m in self.decoys.get(code, []) for i in range(m)})

    def bound(self, length: int) -> float:
        """The largest probability that a copy of this length is real (``c_L / (c_L + k)``)."""
        return (self.copies[length] - self.k) / self.copies[length]

    def to_dict(self, ids: list, *, positions: bool = True) -> dict[str, Any]:
        """The report's ``cover``: the copies, the bounds, the cost and (``positions``) every decoy, 1-based."""
        d: dict[str, Any] = {
            "k": self.k, "source": self.source,
            "copies": [{"length": L, "per_sequence": c, "real_at_most": c - self.k, "bound": self.bound(L)}
                       for L, c in sorted(self.copies.items())],
            "decoys": int(sum(len(v) for v in self.decoys.values())),
            "expected_redacted": dict(self.cost),
        }
        if positions:
            d["decoy_runs"] = [{"sequence": None if ids[c] is None else str(ids[c]),
                                "runs": [[s + 1, s + m] for s, m in runs]} for c, runs in sorted(self.decoys.items())]
        return d


def draw_cover(private: dict[int, list[int]], n: np.ndarray, ids: list, k: int, source: BitSource) -> Cover:
    """The decoys of a release: ``private`` maps each sequence code to its private positions, ``n`` the
    sequences' lengths, ``ids`` their ids (each sequence's stream is keyed by its id)."""
    real = {c: private_runs(p) for c, p in private.items() if len(p)}
    copies: dict[int, int] = {}
    for runs in real.values():
        per = np.bincount([m for _, m in runs])
        for L in np.flatnonzero(per).tolist():
            copies[L] = max(copies.get(L, 0), int(per[L]))
    copies = {L: c + k for L, c in copies.items()}
    decoys: dict[int, list[tuple[int, int]]] = {}
    for c in range(len(ids)):
        mine = real.get(c, [])
        wanted = [(L, total - sum(1 for _, m in mine if m == L)) for L, total in sorted(copies.items())
                  if L <= int(n[c])]
        count = sum(d for _, d in wanted)
        if not count:
            continue
        key = sequence_key(ids[c])
        runs: list[tuple[int, int]] = []
        for L, d in wanted:  # each length from its own bound: uniform on the n - L + 1 starts
            runs += [(int(s), L) for s in uniform_integers(source, key, int(n[c]) - L + 1, d, tag=L).tolist()]
        decoys[c] = sorted(runs)
    return Cover(k, copies, real, decoys, source.description)


def covered_scan(state: ScanState, private: list[int] | None, cover: Cover) -> tuple[ScanState, list[int] | None]:
    """The scan (or the single sequence's ``private`` positions) with every decoy's records made private too."""
    if private is not None:
        return state, sorted(set(private) | set(cover.decoy_positions(0)))
    extra = [(c, cover.decoy_positions(c)) for c in sorted(cover.decoys)]
    codes = np.concatenate([state.private_codes] + [np.full(len(p), c, dtype=np.int64) for c, p in extra])
    pos = np.concatenate([state.private_pos] + [np.asarray(p, dtype=np.int64) for _, p in extra])
    both = np.unique(np.stack([codes, pos]), axis=1) if codes.size else np.zeros((2, 0), dtype=np.int64)
    return replace(state, private_codes=both[0].astype(np.int64), private_pos=both[1].astype(np.int64),
                   tally=None, _index=None), None


def cover_of(state: ScanState, private: list[int] | None, k: int, source: BitSource) -> Cover:
    """:func:`draw_cover` of a scan (``private``: the positions of a single sequence, else the scan's flags)."""
    by_code = {0: list(private)} if private is not None else state.private
    return draw_cover(by_code, state.n, list(state.ids), k, source)
