r"""Redaction mechanisms beyond the local class (issue 26): scan, owner and holder mechanisms.

Records :math:`X_1,\dots,X_n` form a stationary k-state chain (:class:`~redactopt.model.kchain.KChain`;
a binary :class:`~redactopt.model.chain.MarkovChain` is taken as its 2-state chain).  The record
:math:`X_p` is private; every other record is published or replaced by ⊥.  The classes, each
contained in the next (docs/beyond_local.md, §1):

* ``local`` -- record ``t`` is redacted with probability ``q[t][X_t]``, independently (the paper's class);
* ``scan`` -- each side of ``p`` is read outward; at distance ``d`` the mechanism may *stop*: publish
  that record and every farther record of the side.  The decision reads only the side's records read
  so far, never :math:`X_p`; by §2 of the notes nothing is lost when it reads only the side's first
  record ``c``, the distance and the current record ``x``: ``S[d-1][c][x]`` is the probability of
  stopping at distance ``d`` given that the side did not stop before (:class:`ScanMechanism`);
  a *holder scan* may read :math:`X_p` too, and then ``c`` is the value of :math:`X_p`;
* ``owner`` -- any mechanism whose randomness may depend on every record but :math:`X_p`
  (:class:`OwnerMechanism`, a table over all records and release masks; :class:`BlockMechanism`
  for long sequences: a table on a block around ``p``, every record outside it published);
* ``holder`` -- may read :math:`X_p` as well (the same two representations with ``holder=True``).

Positions are 0-based here (numpy); files and the command line count from 1.  Left-side records are
read outward on the time-reversed chain (:meth:`KChain.reversed`), the right side on the chain itself.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from redactopt._validate import check_index, check_n
from redactopt.model.chain import MarkovChain
from redactopt.model.chain import Chain as KChain
from redactopt.model.varying import VaryingChain, judged_chain

__all__ = [
    "CLASSES",
    "ScanMechanism",
    "RunScanMechanism",
    "local_as_run_scan",
    "OwnerMechanism",
    "BlockMechanism",
    "as_kchain",
    "side_lengths",
    "side_chain",
    "side_chain_exact",
    "side_steps",
    "class_chain",
    "tuple_probabilities",
    "local_as_scan",
    "scan_as_owner",
    "owner_as_holder",
    "release_masks",
    "record_tuples",
    "MAX_TABLE_ENTRIES",
    "occupation",
    "tuple_probabilities",
    "row_keys",
    "output_index",
]

#: The mechanism classes, each contained in the next (docs/beyond_local.md, §1).
CLASSES = ("local", "scan", "owner", "holder")

#: Largest table (rows x release masks) an :class:`OwnerMechanism` may hold.
MAX_TABLE_ENTRIES = 2**22


def as_kchain(chain: object) -> KChain:
    """The chain as a :class:`KChain`: a binary :class:`MarkovChain` becomes its exact 2-state chain.

    :meth:`KChain.from_binary` keeps ``alpha`` and ``beta`` as the rationals of their doubles, so the
    binary and the k-state judges judge the same chain.
    """
    if isinstance(chain, KChain):
        return chain
    if isinstance(chain, MarkovChain):
        return KChain.from_binary(chain)
    raise TypeError(f"chain must be a KChain or a MarkovChain, got {type(chain).__name__}")


def class_chain(chain: object, n: int) -> KChain | VaryingChain:
    """The chain a mechanism of ``n`` records is judged on: a :class:`KChain` (:func:`as_kchain`), or a
    :class:`~redactopt.model.varying.VaryingChain` of ``n`` rows (its constant case as that chain)."""
    if isinstance(chain, VaryingChain):
        return judged_chain(chain, n)
    return as_kchain(chain)


def side_steps(chain: KChain | VaryingChain, name: str, p: int, m: int) -> np.ndarray:
    r"""The ``m`` matrices side ``name`` of row ``p`` is read through, nearest first, ``(m, k, k)``: the chain's
    :func:`side_chain` at every step, or the varying chain's :meth:`~VaryingChain.side_steps` (forward steps
    :math:`P_p, P_{p+1},\dots` on the right, reversed :math:`\tilde P_{p-1},\dots` on the left)."""
    if isinstance(chain, VaryingChain):
        return chain.side_steps(p, name, m)
    Q = side_chain(chain, name)
    return np.broadcast_to(Q, (m,) + Q.shape)


def row_law(chain: KChain | VaryingChain, t: int) -> np.ndarray:
    """The law of row ``t``: the stationary law, or the varying chain's marginal."""
    if isinstance(chain, VaryingChain):
        return np.asarray(chain.marginal(t), dtype=float)
    return np.array([float(v) for v in chain.exact_stationary()])


def side_lengths(n: int, p: int) -> tuple[int, int]:
    """Numbers of records left and right of the 0-based private record ``p``."""
    return p, n - 1 - p


def side_chain_exact(chain: KChain, side: str) -> list[list[Fraction]]:
    r"""The exact matrix a side is read with: :math:`\tilde P` (left, outward) or :math:`P` (right)."""
    if side == "right":
        return [list(r) for r in chain.exact_transition()]
    if side == "left":
        P, pi = chain.exact_transition(), chain.exact_stationary()
        k = chain.k
        return [[pi[y] * P[y][x] / pi[x] for y in range(k)] for x in range(k)]
    raise ValueError(f"side must be 'left' or 'right', got {side!r}")


def side_chain(chain: KChain, side: str) -> np.ndarray:
    """The side's matrix as doubles, each entry its exact value correctly rounded (relative error <= 2**-53)."""
    return np.array([[float(v) for v in r] for r in side_chain_exact(chain, side)], dtype=float)


def _check_stop(value: object, m: int, k: int, name: str) -> np.ndarray | None:
    """A side's stop table ``S[d-1][c][x]``: shape ``(L, k, k)``, ``1 <= L <= m``, entries in [0, 1].

    A table shorter than its side must end in a row of ones (the side stops by distance ``L`` for
    sure, so the farther rows would never be read).
    """
    if m == 0:
        if value is not None:
            raise ValueError(f"{name}: the side has no records, its stop table must be None")
        return None
    if value is None:
        raise ValueError(f"{name}: the side has {m} records and needs a stop table")
    S = np.array(value, dtype=float)
    if S.ndim != 3 or S.shape[1:] != (k, k) or not 1 <= S.shape[0] <= m:
        raise ValueError(f"{name} must have shape (L, {k}, {k}) with 1 <= L <= {m}, got {S.shape}")
    if not np.all(np.isfinite(S)) or S.min() < 0.0 or S.max() > 1.0:
        raise ValueError(f"{name} entries must be probabilities in [0, 1]")
    if S.shape[0] < m and not np.all(S[-1] == 1.0):
        raise ValueError(f"{name} has {S.shape[0]} rows for a side of {m} records: a shorter table must "
                         "end in a row of ones (stop for sure)")
    S.setflags(write=False)
    return S


@dataclass(frozen=True, eq=False)
class ScanMechanism:
    r"""A scan mechanism (docs/beyond_local.md, §2): each side stops once and publishes from there on.

    Parameters
    ----------
    chain : KChain or MarkovChain
        The chain (a binary chain is converted by :func:`as_kchain`).
    n, p : int
        Number of records and the 0-based private record.
    left, right : array_like, shape (L, k, k), or None
        ``S[d-1][c][x]``: probability of stopping at distance ``d`` given no stop before on that side,
        the side's first record ``c`` (holder scan: :math:`X_p=c`) and the record at distance ``d``
        equal to ``x``.  ``None`` exactly for a side without records.
    holder : bool
        Whether the decisions may read :math:`X_p` (then ``c`` is its value).

    Notes
    -----
    Given :math:`X_p=x` the side's first record has law :math:`Q(x,\cdot)` and the side is a Markov
    chain, so the law of (stop distance, stopped value) is the occupation measure of Eq. (2.1) of the
    notes; :func:`redactopt.judge.scan.scan_leakage` evaluates Definition 1 from it in
    :math:`O(n k^3)` and :meth:`utility` is Definition 2.
    """

    chain: KChain
    n: int
    p: int
    left: np.ndarray | None
    right: np.ndarray | None
    holder: bool = False

    def __post_init__(self) -> None:
        n = check_n(self.n)
        chain = class_chain(self.chain, n)
        object.__setattr__(self, "chain", chain)
        p = check_index(self.p, n)
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "p", p)
        mL, mR = side_lengths(n, p)
        object.__setattr__(self, "left", _check_stop(self.left, mL, chain.k, "left"))
        object.__setattr__(self, "right", _check_stop(self.right, mR, chain.k, "right"))
        object.__setattr__(self, "holder", bool(self.holder))

    @property
    def k(self) -> int:
        """Number of states."""
        return self.chain.k

    def side(self, name: str) -> np.ndarray | None:
        """The stop table of side ``"left"`` or ``"right"`` (``None``: no records)."""
        if name not in ("left", "right"):
            raise ValueError(f"side must be 'left' or 'right', got {name!r}")
        return self.left if name == "left" else self.right

    def side_length(self, name: str) -> int:
        """Number of records on side ``name``."""
        mL, mR = side_lengths(self.n, self.p)
        return mL if name == "left" else mR

    def utility(self) -> float:
        r"""Expected fraction of records published (Definition 2): :math:`\frac1n\sum_s\sum_d\Pr(\tau_s=d)(m_s-d+1)`.

        :math:`X_p\sim\pi`, so the side's first record has law :math:`\pi` as well (both chains are
        stationary with law :math:`\pi`); on a varying chain the laws are the rows' marginals.
        """
        total = 0.0
        for name, step in (("left", -1), ("right", 1)):
            S = self.side(name)
            if S is None:
                continue
            m = self.side_length(name)
            Q = side_steps(self.chain, name, self.p, m)
            start = (row_law(self.chain, self.p)[:, None] * Q[0]) if self.holder else \
                np.diag(row_law(self.chain, self.p + step))
            mu, _ = occupation(Q, S, start)
            counts = m - np.arange(S.shape[0], dtype=float)
            total += float(np.einsum("cdv,d->", mu, counts))
        return total / self.n


@dataclass(frozen=True, eq=False)
class RunScanMechanism:
    r"""A scan mechanism for a *run* of private records ``first..last`` (docs/mathematics.md §7d).

    Every record of the run is redacted.  Each side of the run is read outward from the run, record by
    record, and stops once: it publishes the record it stops at and every farther record of the side.
    ``left`` / ``right`` are stop tables ``S[d-1][c][x]`` exactly as for :class:`ScanMechanism`, with
    distance ``d`` counted from the run's boundary record (the left side's first record is ``first - 1``,
    the right side's ``last + 1``) and ``c`` the value of the side's first record.  The decisions read
    only the side's records read so far, never a record of the run; the two sides decide independently.

    A side is, about its boundary record (``first`` on the left, ``last`` on the right), exactly the side
    of a one-record scan whose private record is that boundary record (:meth:`boundary_scan`).  A run of
    one record is a :class:`ScanMechanism`.  Two-state homogeneous chains (the decomposition the judge and
    the optimiser use is a two-state result).
    """

    chain: KChain
    n: int
    first: int
    last: int
    left: np.ndarray | None
    right: np.ndarray | None

    def __post_init__(self) -> None:
        n = check_n(self.n)
        if isinstance(self.chain, VaryingChain):
            raise ValueError("a run's scan mechanism on a chain that varies with the step: not supported")
        chain = as_kchain(self.chain)
        if chain.k != 2:
            raise ValueError(f"a run's scan mechanism needs a two-state chain, got {chain.k} states")
        first = check_index(self.first, n, "first")
        last = check_index(self.last, n, "last")
        if not first < last:
            raise ValueError(f"a run has at least two records: first < last, got {first}..{last} (one record: "
                             "ScanMechanism)")
        object.__setattr__(self, "chain", chain)
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "first", first)
        object.__setattr__(self, "last", last)
        object.__setattr__(self, "left", _check_stop(self.left, first, 2, "left"))
        object.__setattr__(self, "right", _check_stop(self.right, n - 1 - last, 2, "right"))

    @property
    def k(self) -> int:
        """Number of states (2)."""
        return self.chain.k

    @property
    def private(self) -> list[int]:
        """The run's records (0-based), all redacted."""
        return list(range(self.first, self.last + 1))

    @property
    def holder(self) -> bool:
        """A run scan never reads the run (there is no holder variant)."""
        return False

    def side(self, name: str) -> np.ndarray | None:
        """The stop table of side ``"left"`` or ``"right"`` (``None``: no records)."""
        if name not in ("left", "right"):
            raise ValueError(f"side must be 'left' or 'right', got {name!r}")
        return self.left if name == "left" else self.right

    def side_length(self, name: str) -> int:
        """Number of records on side ``name`` (outside the run)."""
        return self.first if name == "left" else self.n - 1 - self.last

    def boundary_scan(self, name: str) -> ScanMechanism:
        r"""Side ``name`` as the one-sided scan of its records and its boundary record (the private record there).

        On a stationary chain the side's events have the same likelihoods about the boundary record as this
        scan's about its private record: records ``0..first`` with ``p = first`` on the left, records
        ``last..n-1`` with ``p = 0`` on the right (re-indexed).
        """
        if name == "left":
            return ScanMechanism(self.chain, self.first + 1, self.first, self.left, None)
        return ScanMechanism(self.chain, self.n - self.last, 0, None, self.right)

    def side_count(self, name: str) -> float:
        """Expected number of the side's records published."""
        m = self.side_length(name)
        if m == 0:
            return 0.0
        return self.boundary_scan(name).utility() * (m + 1)

    def utility(self) -> float:
        r"""Expected fraction of the ``n`` records published (Definition 2); the run's records count 0."""
        return (self.side_count("left") + self.side_count("right")) / self.n


def local_as_run_scan(chain: object, redact_prob: object, first: int, last: int,
                      rounding: str = "nearest") -> RunScanMechanism:
    r"""The scan completion of a local mechanism redacting the run ``first..last`` with certainty.

    Each side stops at distance ``d`` (from the run) on value ``x`` with probability ``1 - q[t][x]``: its first
    released record is the local mechanism's, so every event has the same probability about each record of the
    run (docs/mathematics.md §7d) and it publishes at least as much, up to the rounding of ``1 - q``
    (``rounding`` as in :func:`local_as_scan`).
    """
    q = np.asarray(redact_prob, dtype=float)
    n = q.shape[0]
    if not np.all(q[first:last + 1] == 1.0):
        raise ValueError("the local mechanism must redact every record of the run with certainty")
    left = local_as_scan(chain, q[:first + 1], first, rounding).left
    right = local_as_scan(chain, q[last:], 0, rounding).right
    return RunScanMechanism(as_kchain(chain), n, first, last, left, right)


def occupation(Q: np.ndarray, S: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Stopping law of one side for every start row: Eq. (2.1) of docs/beyond_local.md.

    ``start[c]`` is the law of the side's first record (row ``c``); ``mu[c, d-1, v]`` the probability
    of stopping at distance ``d`` on value ``v`` and ``rest[c]`` of never stopping within the table.
    Plain float recursion :math:`\nu_1=\text{start}`, :math:`\mu_d=\nu_d\odot S_d`,
    :math:`\nu_{d+1}=(\nu_d\odot(1-S_d))Q_d` (the judge uses its own, rescaled and error-bounded copy);
    ``Q`` is one matrix, or one per distance ``(m, k, k)`` (a varying chain's :func:`side_steps`: ``Q[d]``
    leads from distance ``d`` to ``d + 1``).
    """
    Q = np.asarray(Q, dtype=float)
    L, k = S.shape[0], Q.shape[-1]
    mu = np.empty((start.shape[0], L, k))
    alive = np.array(start, dtype=float)
    for d in range(L):
        mu[:, d] = alive * S[d]
        cont = alive * (1.0 - S[d])
        alive = cont @ (Q if Q.ndim == 2 else Q[d + 1]) if d + 1 < L else cont
    return mu, alive.sum(axis=1)


def local_as_scan(chain: object, redact_prob: object, p: int, rounding: str = "nearest") -> ScanMechanism:
    r"""The scan completion of a local mechanism: stop at ``d`` on value ``x`` with probability ``1 - q[t][x]``.

    It has the same first released record on each side as the local mechanism, hence the same
    leakage (docs/beyond_local.md, §2, Proposition 2), and publishes at least as much -- up to the
    rounding of ``1 - q`` to a double: ``rounding`` ``"nearest"``, ``"down"`` or ``"up"`` (the double at or
    below / above the exact ``1 - q``; a local design sitting at its budget keeps its completion within it
    by one of them).
    """
    q = np.asarray(redact_prob, dtype=float)
    n = q.shape[0]
    kc = class_chain(chain, n)
    p = check_index(p, n)
    if rounding not in ("nearest", "down", "up"):
        raise ValueError(f"rounding must be 'nearest', 'down' or 'up', got {rounding!r}")
    sides = {}
    for name, rows in (("left", q[:p][::-1]), ("right", q[p + 1:])):
        if rows.shape[0] == 0:
            sides[name] = None
            continue
        S = 1.0 - rows
        if rounding != "nearest":
            # 1 - q is exact for q >= 1/2 (Sterbenz); elsewhere compare the double with the exact difference
            above = np.vectorize(lambda s, v: Fraction(float(s)) > 1 - Fraction(float(v)), otypes=[bool])(S, rows)
            below = np.vectorize(lambda s, v: Fraction(float(s)) < 1 - Fraction(float(v)), otypes=[bool])(S, rows)
            S = np.where(above, np.nextafter(S, -np.inf), S) if rounding == "down" else \
                np.where(below, np.nextafter(S, np.inf), S)
        sides[name] = np.repeat(S[:, None, :], kc.k, axis=1)
    return ScanMechanism(kc, n, p, sides["left"], sides["right"])


def release_masks(m: int) -> np.ndarray:
    """All ``2**m`` release masks of ``m`` records as a ``(2**m, m)`` 0/1 array; bit ``j`` of mask ``i`` is column ``j``."""
    idx = np.arange(2**m)
    return ((idx[:, None] >> np.arange(m)[None, :]) & 1).astype(np.int8)


def record_tuples(k: int, m: int) -> np.ndarray:
    """All ``k**m`` value tuples of ``m`` records, ``(k**m, m)``; tuple ``i`` has digit ``j`` (base k) in column ``j``."""
    idx = np.arange(k**m)
    return ((idx[:, None] // (k ** np.arange(m))[None, :]) % k).astype(np.int64)


@dataclass(frozen=True, eq=False)
class OwnerMechanism:
    r"""Any redaction mechanism of ``n`` records as a table (docs/beyond_local.md, §4).

    ``table[r, i]`` is proportional to the probability of release mask ``i`` (bit ``j`` set: the
    ``j``-th non-private record, in position order, is published) given the records of row ``r``:
    for ``holder=False`` row ``r`` is the tuple of the ``n - 1`` non-private records (digit ``j`` of
    ``r`` in base k is the ``j``-th non-private record), for ``holder=True`` the tuple of all ``n``
    records (digit ``t`` is record ``t``).  Each row is divided by its *exact* sum (the doubles taken
    as rationals), so any non-negative row with a positive sum is a valid kernel.
    """

    chain: KChain
    n: int
    p: int
    table: np.ndarray
    holder: bool = False

    def __post_init__(self) -> None:
        n = check_n(self.n)
        chain = class_chain(self.chain, n)
        object.__setattr__(self, "chain", chain)
        if n > 24:
            raise ValueError(f"an owner table covers at most 24 records, got n = {n}")
        p = check_index(self.p, n)
        rows = chain.k ** (n if self.holder else n - 1)
        if rows * 2 ** (n - 1) > MAX_TABLE_ENTRIES:
            raise ValueError(f"an owner table of {rows} x {2 ** (n - 1)} entries exceeds {MAX_TABLE_ENTRIES}")
        T = np.array(self.table, dtype=float)
        if T.shape != (rows, 2 ** (n - 1)):
            raise ValueError(f"table must have shape ({rows}, {2 ** (n - 1)}), got {T.shape}")
        if not np.all(np.isfinite(T)) or T.min() < 0.0:
            raise ValueError("table entries must be finite and non-negative")
        empty = ~np.any(T > 0.0, axis=1)
        if np.any(empty):
            raise ValueError(f"table row {int(np.argmax(empty))} (0-based) has no positive entry")
        T.setflags(write=False)
        object.__setattr__(self, "table", T)
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "holder", bool(self.holder))

    @property
    def k(self) -> int:
        """Number of states."""
        return self.chain.k

    def others(self) -> list[int]:
        """The non-private positions, in order (bit ``j`` of a mask is ``others()[j]``)."""
        return [t for t in range(self.n) if t != self.p]

    def kernel(self) -> np.ndarray:
        r"""Each row divided by its sum: the exact kernel up to one rounding per entry and the sum's.

        A row is first scaled by the power of two that brings its largest entry into :math:`[\tfrac12,1)`
        (exact, the kernel is unchanged), so that its sum cannot overflow: a row ``[0, 0, 1.7e308, 1.7e308]``
        is the kernel ``[0, 0, 1/2, 1/2]``, not a row of zeros.  An entry that the scaling makes subnormal
        or zero (below :math:`2^{-1000}` of its row's largest) is left to the exact judge, which reads the
        table itself.
        """
        T = self.table
        e = np.frexp(T.max(axis=1, keepdims=True))[1]
        S = np.ldexp(T, -e)
        return S / S.sum(axis=1, keepdims=True)

    def always_published(self) -> list[int]:
        """Positions published under every row (every mask of positive weight has their bit set)."""
        used = self.table > 0.0
        masks = release_masks(self.n - 1).astype(bool)
        hit = used.any(axis=0)
        others = self.others()
        return [others[j] for j in range(self.n - 1) if np.all(masks[hit, j])]

    def utility(self) -> float:
        """Expected fraction published (Definition 2), summing over every record tuple."""
        pr = tuple_probabilities(self.chain, self.n)
        keys = row_keys(self.k, self.n, self.p, self.holder)
        counts = release_masks(self.n - 1).sum(axis=1).astype(float)
        per_row = self.kernel() @ counts
        return float(pr @ per_row[keys]) / self.n


def tuple_probabilities(chain: KChain | VaryingChain, n: int) -> np.ndarray:
    r""":math:`\Pr(X_{1..n}=x)` for every tuple of :func:`record_tuples` (digit ``t`` = record ``t``): the
    stationary law and the matrix, or a varying chain's initial law and steps (exact values rounded once)."""
    X = record_tuples(chain.k, n)
    if isinstance(chain, VaryingChain):
        pr = np.array([float(v) for v in chain.exact_initial])[X[:, 0]]
        for t in range(n - 1):
            P = np.array([[float(v) for v in r] for r in chain.exact_matrices[int(chain.row_level[t])]])
            pr = pr * P[X[:, t], X[:, t + 1]]
        return pr
    pi = np.array([float(v) for v in chain.exact_stationary()])
    P = np.array([[float(v) for v in r] for r in chain.exact_transition()])
    pr = pi[X[:, 0]].copy()
    for t in range(n - 1):
        pr *= P[X[:, t], X[:, t + 1]]
    return pr


def row_keys(k: int, n: int, p: int, holder: bool) -> np.ndarray:
    """For every full record tuple (:func:`record_tuples`), the row of an owner/holder table it reads."""
    X = record_tuples(k, n)
    if holder:
        return np.arange(k**n)
    others = [t for t in range(n) if t != p]
    return X[:, others] @ (k ** np.arange(n - 1))


@dataclass(frozen=True, eq=False)
class BlockMechanism:
    r"""A structured owner/holder mechanism for long sequences (docs/beyond_local.md, §6).

    ``inner`` is an :class:`OwnerMechanism` on the records ``start .. start + inner.n - 1`` (its
    private record is ``p - start``); every record outside the block is published.  The inner
    mechanism must publish its first (last) record under every row whenever records lie left (right)
    of the block: then the cut argument (docs/mathematics.md §8) makes the leakage of the whole
    sequence the leakage of the block.
    """

    n: int
    p: int
    start: int
    inner: OwnerMechanism

    def __post_init__(self) -> None:
        n = check_n(self.n)
        if not isinstance(self.inner, OwnerMechanism):
            raise TypeError(f"inner must be an OwnerMechanism, got {type(self.inner).__name__}")
        start = check_index(self.start, n, "start")
        if isinstance(self.inner.chain, VaryingChain):
            raise ValueError("a block mechanism on a chain that varies with the step: not supported (its block's "
                             "chain would start from a computed marginal); give the whole table (OwnerMechanism)")
        end = start + self.inner.n
        if end > n or start + self.inner.p != self.p:
            raise ValueError(f"block {start}..{end - 1} with private offset {self.inner.p} does not place p = "
                             f"{self.p} inside n = {n} records")
        pub = set(self.inner.always_published())
        if start > 0 and 0 not in pub:
            raise ValueError("records lie left of the block, so the block's first record must always be published")
        if end < n and self.inner.n - 1 not in pub:
            raise ValueError("records lie right of the block, so the block's last record must always be published")
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "start", start)

    @property
    def chain(self) -> KChain:
        """The chain (the inner mechanism's)."""
        return self.inner.chain

    @property
    def holder(self) -> bool:
        """Whether the block reads the private record."""
        return self.inner.holder

    def utility(self) -> float:
        """Expected fraction published: the block's expected count plus every record outside it, over ``n``."""
        return (self.inner.utility() * self.inner.n + (self.n - self.inner.n)) / self.n


def scan_as_owner(mech: ScanMechanism) -> OwnerMechanism:
    r"""The table of a scan mechanism (small ``n``): mask probabilities as products of the two sides' laws.

    Given the records, a side stops at ``d`` with probability :math:`\prod_{j<d}(1-S_j)\,S_d`; the sides
    draw independently.  Used to cross-check :func:`redactopt.judge.scan.scan_leakage` by enumeration.
    """
    n, p, k = mech.n, mech.p, mech.k
    X = record_tuples(k, n)
    others = [t for t in range(n) if t != p]
    index_of = {t: j for j, t in enumerate(others)}
    rows = k ** (n if mech.holder else n - 1)
    table = np.zeros((rows, 2 ** (n - 1)))
    keys = row_keys(k, n, p, mech.holder)
    for xi, x in enumerate(X):
        laws = []
        for name, step in (("left", -1), ("right", 1)):
            S = mech.side(name)
            if S is None:
                laws.append([(0, 1.0)])
                continue
            pos = list(range(p + step, -1 if step < 0 else n, step))
            c = int(x[p]) if mech.holder else int(x[pos[0]])
            alive, law = 1.0, []
            for d, t in enumerate(pos):
                s = S[d][c][int(x[t])] if d < S.shape[0] else 1.0
                bits = sum(1 << index_of[u] for u in pos[d:])
                law.append((bits, alive * s))
                alive *= 1.0 - s
            law.append((0, alive))
            laws.append(law)
        for (b1, w1), (b2, w2) in itertools.product(*laws):
            table[keys[xi], b1 | b2] = w1 * w2
    return OwnerMechanism(mech.chain, n, p, table, holder=mech.holder)


def output_index(k: int, n: int, p: int) -> tuple[np.ndarray, np.ndarray]:
    """The output of every (record tuple, release mask) of a table over ``n`` records, and the tuples.

    ``out[i, j]`` is the output of tuple ``i`` (:func:`record_tuples`) under mask ``j``: base ``k + 1``
    digits over the non-private records in order (digit ``k`` is ⊥).
    """
    X = record_tuples(k, n)
    others = [t for t in range(n) if t != p]
    w = (k + 1) ** np.arange(n - 1)
    base = int(k * w.sum())
    contrib = (X[:, others] - k) * w[None, :]
    return base + contrib @ release_masks(n - 1).T.astype(np.int64), X


def owner_as_holder(mech: OwnerMechanism) -> OwnerMechanism:
    r"""An owner table as a holder table: the row of every full record tuple is the owner row of its records
    other than :math:`X_p` (the same kernel, so the same leakage and utility; an owner mechanism is a holder one)."""
    if mech.holder:
        return mech
    return OwnerMechanism(mech.chain, mech.n, mech.p, mech.table[row_keys(mech.k, mech.n, mech.p, False)], holder=True)
