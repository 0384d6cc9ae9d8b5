"""Design results and their certificates: every number redactopt reports comes with proof.

A :class:`DesignResult` is only ever built by :func:`finalize`, which snaps the
probabilities a solver returned, re-checks the exact leakage (Definition 1) of the
snapped array and refuses anything above the budget.  Its :class:`Certificate`
carries a valid upper bound on the optimal utility, so the gap is known.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from redactopt._validate import check_eps, check_n, check_private
from redactopt.errors import BoundError, PrivacyCheckError
from redactopt.judge.exact import MAX_EXACT_N, certify_exact
from redactopt.judge.segments import extended_block, longest_segment, private_segments
from redactopt.judge.lemma2 import lemma2_upper_bound
from redactopt.judge.tolerances import LEAKAGE_RTOL, SNAP_TOL, UTILITY_ATOL, chain_zone
from redactopt.model.chain import Chain
from redactopt.model.classes import ChainClass
from redactopt.model.varying import VaryingChain, chain_window, row_laws
from redactopt.judge.leakage import LeakageResult, check_mechanism, leakage, max_leakage, utility

__all__ = [
    "Certificate",
    "RegionCertificate",
    "DesignResult",
    "VerifiedDesign",
    "SparseDesign",
    "SparseRows",
    "finalize_sparse",
    "extended_block",
    "longest_segment",
    "private_segments",
    "merge_blocks",
    "finalize",
    "make_certificate",
    "snap",
    "verify",
    "zone_verdict",
]


@dataclass(frozen=True)
class Certificate:
    """A valid upper bound on the best utility any mechanism of the class can reach.

    Attributes
    ----------
    upper_bound : float
        Upper bound on the optimal utility (Definition 2).
    gap : float
        ``upper_bound - utility`` of the design it certifies (>= 0).
    solver : str
        What produced the bound (e.g. ``"lemma2"``, ``"scip"``, ``"enumeration"``).
    scope : str
        Which mechanisms the bound covers: ``"all"`` local redaction mechanisms, or a
        named class such as ``"data-independent"``.
    stopped : bool
        True when a time limit stopped the search before it closed the gap (the bound is
        still valid; the gap says how much is left).
    """

    upper_bound: float
    gap: float
    solver: str
    scope: str = "all"
    stopped: bool = False

    def to_dict(self) -> dict:
        return {"upper_bound": self.upper_bound, "gap": self.gap, "solver": self.solver, "scope": self.scope,
                "stopped": self.stopped}


@dataclass(frozen=True)
class VerifiedDesign:
    """What every verified design holds (:class:`DesignResult`, whatever the chain): the stored
    mechanism, its private records, exact utility and leakage with a witness, and certificates."""

    chain: Any
    redact_prob: np.ndarray
    private: tuple[int, ...]
    eps: float
    method: str
    utility: float
    leakage: float
    witness: Any
    certificate: Certificate
    info: dict = field(default_factory=dict, compare=False)
    class_certificate: Certificate | None = None

    @property
    def n(self) -> int:
        return int(self.redact_prob.shape[0])

    @property
    def passed(self) -> bool:
        return self.leakage <= self.eps * (1.0 + LEAKAGE_RTOL)


@dataclass(frozen=True)
class DesignResult(VerifiedDesign):
    """A verified mechanism with its exact utility, exact leakage and certificate.

    ``redact_prob`` is ``(n, k)`` (column ``x`` is state ``chain.labels[x]``); ``private`` holds
    0-based indices; ``leakage`` is the exact leakage of ``redact_prob`` exactly as stored
    (after snapping), the worst over ``private``.
    ``certificate`` bounds the utility of every local redaction mechanism;
    ``class_certificate``, when a solver derived one, bounds a named class only (e.g. the
    exact optimum over data-independent mechanisms for ``method="dim"``).  With a
    ``chain_class`` (:class:`~redactopt.model.classes.ChainClass`) the design is private for
    every chain of the class: ``leakage`` is the worst over the class (attained at a deciding
    chain), while ``utility`` and the certificate are measured at ``chain``.
    """

    chain: Chain
    witness: LeakageResult
    chain_class: ChainClass | None = None


def snap(redact_prob: np.ndarray, tol: float = SNAP_TOL) -> np.ndarray:
    """Round entries within ``tol`` of 0 or 1 to exactly 0 or 1 (a copy)."""
    q = np.array(redact_prob, dtype=float)
    q[q < tol] = 0.0
    q[q > 1.0 - tol] = 1.0
    return np.clip(q, 0.0, 1.0)


def snap_variants(redact_prob: np.ndarray, tol: float = SNAP_TOL) -> list[np.ndarray]:
    """The snapped array (:func:`snap`), then the array snapped toward privacy only.

    Snapping near-0 entries to 0 can create nothing but can remove redaction — and a value
    redacted with a tiny probability can be what keeps an output possible under every private
    value (at a large ``eps`` the optimum may need ``q`` near ``e^-eps``); snapping near-1
    entries to 1 only redacts more, which never raises the leakage (post-processing:
    Definition 1's leakage is non-increasing in every entry of ``q``).  So the second variant
    passes whenever the raw array would.
    """
    up = np.array(redact_prob, dtype=float)
    up[up > 1.0 - tol] = 1.0
    return [snap(redact_prob, tol), np.clip(up, 0.0, 1.0)]


def choose_bound(bounds: Sequence[tuple[float, str, bool]],
                 utility_: float) -> tuple[tuple[float, str, bool], list[str]]:
    """The smallest of ``bounds`` (``(upper_bound, solver, stopped)``, all mechanisms) a verified
    utility does not refute, and the refuted ones described.

    SCIP's dual bound comes from floating point with tolerances near 1e-9, which can fail on
    extreme chains: a verified design above it refutes it, and it is discarded (reported).  Any
    other bound below a verified utility is a bug: :class:`~redactopt.errors.BoundError`.  Ties go
    to the earlier bound.
    """
    valid, refuted = [], []
    for b in bounds:
        if b[0] >= utility_ - UTILITY_ATOL:
            valid.append(b)
        elif b[1] == "scip":
            refuted.append(f"scip upper bound {b[0]!r} is below the verified utility {utility_!r}")
        else:
            raise BoundError(f"{b[1]} upper bound {b[0]!r} is below the verified utility {utility_!r}: "
                             "the bound is wrong")
    return min(valid, key=lambda b: b[0]), refuted


def make_certificate(upper_bound: float, utility_: float, *, solver: str, scope: str = "all",
                     stopped: bool = False) -> Certificate:
    """A :class:`Certificate` for a verified utility; a bound below it is an error, never clamped.

    Bounds arrive rounded outward (:func:`~redactopt.judge.tolerances.round_up`).  The float
    utility carries a rounding error below :data:`~redactopt.judge.tolerances.UTILITY_ATOL`, so a
    bound within that below it is consistent and is rounded outward once more, up to the utility
    (an upper bound raised is still one); a bound further below raises
    :class:`~redactopt.errors.BoundError` naming both numbers.  The gap is then exactly
    ``upper_bound - utility`` (>= 0), never a clamped difference.
    """
    ub, u = float(upper_bound), float(utility_)
    if not ub >= u - UTILITY_ATOL:
        raise BoundError(f"{solver} upper bound {ub!r} is below the verified utility {u!r} "
                         f"({scope} mechanisms): the bound is wrong")
    ub = max(ub, u)
    return Certificate(upper_bound=ub, gap=ub - u, solver=solver, scope=scope, stopped=stopped)


def finalize(
    chain: Chain,
    redact_prob: object,
    *,
    private: object,
    eps: float,
    method: str,
    upper_bound: float,
    solver: str,
    scope: str = "all",
    info: dict | None = None,
    tol: float = SNAP_TOL,
    stopped: bool = False,
    class_bound: tuple[float, str, str] | None = None,
    chain_class: ChainClass | None = None,
) -> DesignResult:
    """Snap, re-verify exactly and package a design: the only constructor of :class:`DesignResult`.

    ``upper_bound``/``solver``/``scope`` make the certificate (:func:`make_certificate`);
    ``class_bound`` = ``(upper_bound, solver, scope)`` an optional class certificate.  With
    ``chain_class`` the mechanism is verified at every deciding chain of the class (which
    certifies it for the whole class, docs/mathematics.md "Classes of chains").

    Raises
    ------
    PrivacyCheckError
        If the exact leakage of the snapped array exceeds ``eps`` (decided in rational
        arithmetic near the boundary, :func:`verify`), and that of the array snapped toward
        privacy only too (:func:`snap_variants`).  Nothing above the budget is ever returned.
    BoundError
        If a bound lies below the verified utility.
    """
    eps = check_eps(eps)
    for q in snap_variants(np.asarray(redact_prob, dtype=float), tol):
        q, priv = check_mechanism(q, private, k=chain.k)
        res, ok = verify(chain, q, priv, eps)
        for other in (chain_class.deciding() if chain_class is not None else ()):
            r, good = verify(other, q, priv, eps)
            ok &= good
            if r.leakage > res.leakage:
                res = r
        if ok:
            break
    if not ok:
        why = "exceeds" if res.leakage > eps else "is not proven to be at most"  # within rounding of eps
        raise PrivacyCheckError(f"{method}: exact leakage {res.leakage:.12g} {why} eps={eps:.12g} after snapping")
    u = utility(chain, q)
    cert = make_certificate(upper_bound, u, solver=solver, scope=scope, stopped=stopped)
    cls = None if class_bound is None else make_certificate(class_bound[0], u, solver=class_bound[1],
                                                             scope=class_bound[2])
    q.setflags(write=False)
    return DesignResult(
        chain=chain,
        redact_prob=q,
        private=priv,
        eps=eps,
        method=method,
        utility=u,
        # every record redacted: the one output is all-⊥ under every value, leakage exactly 0
        leakage=0.0 if np.all(q == 1.0) else res.leakage,
        witness=res,
        certificate=cert,
        info=dict(info or {}),
        class_certificate=cls,
        chain_class=chain_class,
    )


def verify(chain: Chain, redact_prob: np.ndarray, private: tuple[int, ...], eps: float,
           worst: LeakageResult | None = None) -> tuple[LeakageResult, bool]:
    """Exact leakage (worst over ``private``) and whether it is *provably* at most ``eps``.

    Outside the :func:`~redactopt.judge.tolerances.boundary_zone` around ``eps`` the float
    evaluation decides (its rounding error is smaller than the zone).  Inside it the verdict
    is taken in rational arithmetic on the stored floats
    (:func:`redactopt.judge.exact.certify_exact`), for every private record on its
    *segment*: the records between the nearest rows published with certainty on each side
    (such a row is observed without noise, so by the Markov property everything beyond it
    cancels from every likelihood ratio).  A segment longer than
    :data:`~redactopt.judge.exact.MAX_EXACT_N` cannot be decided there and is refused: a
    pass is always a proof.  ``worst``, when given, is the already computed worst
    :class:`~redactopt.judge.leakage.LeakageResult` over ``private``.
    """
    res = worst if worst is not None else max_leakage(chain, redact_prob, private)
    # the evaluator stops at the first row published with certainty on each side: its rounding grows with
    # the longest segment, not with n (a window design embedded in 10^4 records is judged as on its window)
    q = np.asarray(redact_prob, dtype=float)
    zone = chain_zone(chain, eps, longest_segment(q, private))
    return res, zone_verdict(res.leakage, eps, zone, q, private, lambda seg, p, lo: _certified(chain, seg, p, lo, eps))


def _certified(chain: Chain | VaryingChain, seg: np.ndarray, p: int, lo: int, eps: float) -> bool:
    """The rational verdict on one segment (rows ``lo ..`` of the sequence).  A chain that varies with the
    step is decided so only where its segment's model is the exact one (it starts at the chain's first
    row, whose law was given, not computed): elsewhere the marginals are floats and the band of
    :func:`~redactopt.judge.tolerances.chain_zone` must decide."""
    if isinstance(chain, VaryingChain):
        if lo != 0 or chain.rounding_steps != 0:
            return False
        chain = chain.window(0, seg.shape[0])
    return certify_exact(chain, seg.tolist(), [p], eps).status == "certified"


def zone_verdict(leak: float, eps: float, zone: float, q: np.ndarray, private: Sequence[int],
                 certify_segment: Callable[[np.ndarray, int, int], bool]) -> bool:
    """Whether a float leakage ``leak`` proves the mechanism ``q`` private, for every chain model.

    Outside ``[eps - zone, eps + zone]`` the float decides (its rounding error is smaller than
    the zone).  Inside it, each private record ``p`` is decided exactly on its *segment* (the
    rows between the nearest rows published with certainty, which cut every likelihood
    ratio) by ``certify_segment(rows, offset of p, first row)``; a segment longer than
    :data:`~redactopt.judge.exact.MAX_EXACT_N` is refused, so a pass is always a proof.
    """
    if leak <= eps - zone:
        return True
    if np.all(q == 1.0):  # every record redacted: the one output is all-⊥ under every value (leakage 0)
        return True
    if leak > eps + zone:
        return False
    for p, (lo, hi) in zip(private, private_segments(q, private)):
        if hi - lo + 1 > MAX_EXACT_N or not certify_segment(q[lo : hi + 1], p - lo, lo):
            return False
    return True


# --------------------------------------------------------------------------
# sparse designs: long sequences that redact only near their private records
# --------------------------------------------------------------------------
class SparseRows:
    """A read-only ``(n, k)`` redaction table that is zero outside a few blocks of rows.

    ``starts[i]`` is the 0-based first row of ``blocks[i]`` (an ``(m_i, k)`` array); the
    blocks are sorted and separated by at least one zero row.  ``k`` is the blocks' width
    (``k`` when there are none; 2 by default).  Memory is that of the blocks, whatever ``n``.
    ``numpy.asarray`` gives the dense array; :meth:`chunks` yields it piece by piece (the apply
    report streams it that way).
    """

    def __init__(self, n: int, starts: tuple[int, ...], blocks: tuple[np.ndarray, ...], k: int = 2) -> None:
        self.n, self.starts, self.blocks = int(n), tuple(int(s) for s in starts), tuple(blocks)
        self.shape = (self.n, int(self.blocks[0].shape[1]) if self.blocks else int(k))
        self.ndim = 2

    def __len__(self) -> int:
        return self.n

    def rows(self, a: int, b: int) -> np.ndarray:
        """Dense rows ``a..b-1`` (a new array); finds the overlapping blocks by bisection."""
        a, b = max(0, int(a)), min(self.n, int(b))
        out = np.zeros((max(0, b - a), self.shape[1]))
        i = max(0, bisect_right(self.starts, a) - 1)  # the last block starting at or before a
        while i < len(self.starts) and self.starts[i] < b:
            s, blk = self.starts[i], self.blocks[i]
            lo, hi = max(a, s), min(b, s + blk.shape[0])
            if lo < hi:
                out[lo - a : hi - a] = blk[lo - s : hi - s]
            i += 1
        return out

    def chunks(self, size: int = 65536):
        """Yield the dense table in consecutive pieces of at most ``size`` rows."""
        for a in range(0, self.n, size):
            yield self.rows(a, a + size)

    def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray:
        q = self.rows(0, self.n)
        return q if dtype is None else q.astype(dtype)


@dataclass(frozen=True)
class RegionCertificate:
    """What any eps-private mechanism can publish in rows ``start..stop`` (0-based, inclusive).

    ``upper_bound`` (expected published records there, over *every* mechanism private about
    all the private records) and ``published`` (this design's expected published records
    there); ``solver`` names the bound (``"lemma2"``, ``"frontier-dp"``, ``"scip"``).
    """

    start: int
    stop: int
    published: float
    upper_bound: float
    solver: str

    @property
    def gap(self) -> float:
        return max(0.0, self.upper_bound - self.published)

    def to_dict(self) -> dict:
        return {"rows": [self.start + 1, self.stop + 1], "published": self.published,
                "upper_bound": self.upper_bound, "gap": self.gap, "solver": self.solver}


@dataclass(frozen=True)
class SparseDesign:
    """A verified mechanism on ``n`` records that publishes every record outside its blocks.

    The long-sequence counterpart of :class:`DesignResult`, built only by
    :func:`finalize_sparse`.  ``redact_prob`` is a :class:`SparseRows`; ``private`` holds
    0-based indices; ``per_private[i]`` is the exact leakage (Definition 1) about
    ``private[i]`` and ``leakage`` the worst of them; ``witness`` attains it on the block
    that starts at row ``witness_offset`` (its indices are relative to that row).
    ``regions`` certify the design region by region (every block lies in one): the
    whole-sequence ``certificate`` is at most the sum of their bounds plus one per row
    outside them.
    """

    chain: Chain
    redact_prob: SparseRows
    private: tuple[int, ...]
    eps: float
    method: str
    utility: float
    leakage: float
    per_private: tuple[float, ...]
    witness: LeakageResult
    witness_offset: int
    certificate: Certificate
    info: dict = field(default_factory=dict, compare=False)
    regions: tuple[RegionCertificate, ...] = ()
    chain_class: ChainClass | None = None
    class_certificate: Certificate | None = None

    @property
    def n(self) -> int:
        return self.redact_prob.n

    @property
    def passed(self) -> bool:
        return self.leakage <= self.eps * (1.0 + LEAKAGE_RTOL)

    def to_result(self) -> DesignResult:
        """The dense :class:`DesignResult` (re-verified on all ``n`` records by :func:`finalize`)."""
        c, k = self.certificate, self.class_certificate
        return finalize(self.chain, np.asarray(self.redact_prob), private=self.private, eps=self.eps,
                        method=self.method, upper_bound=c.upper_bound, solver=c.solver, scope=c.scope,
                        info=self.info, chain_class=self.chain_class, stopped=c.stopped,
                        class_bound=None if k is None else (k.upper_bound, k.solver, k.scope))


def merge_blocks(n: int, parts: list[tuple[int, np.ndarray]]) -> tuple[list[int], list[np.ndarray]]:
    """Blocks sorted, overlapping or touching ones merged (elementwise maximum); every block as wide as the first."""
    parts = sorted(((int(s), np.asarray(b, dtype=float)) for s, b in parts), key=lambda x: x[0])
    width = parts[0][1].shape[-1] if parts and parts[0][1].ndim == 2 else 2
    starts: list[int] = []
    ends: list[int] = []
    members: list[list[tuple[int, np.ndarray]]] = []
    for s, b in parts:
        e = s + b.shape[0] - 1
        if s < 0 or e >= n or b.ndim != 2 or b.shape[1] != width:
            raise ValueError(f"block at row {s} with shape {b.shape} does not fit in {n} records")
        if starts and s <= ends[-1] + 1:
            ends[-1] = max(ends[-1], e)
            members[-1].append((s, b))
        else:
            starts.append(s)
            ends.append(e)
            members.append([(s, b)])
    blocks = []
    for s, e, ms in zip(starts, ends, members):
        blk = np.zeros((e - s + 1, width))
        for a, b in ms:
            np.maximum(blk[a - s : a - s + b.shape[0]], b, out=blk[a - s : a - s + b.shape[0]])
        blocks.append(blk)
    return starts, blocks


def _trim_blocks(starts: list[int], blocks: list[np.ndarray], tol: float) -> tuple[list[int], list[np.ndarray]]:
    """Snap every block and drop its all-zero edge rows (and blocks that are all zero).

    Afterwards every block starts and ends with a row that can be redacted, so the blocks
    are exactly the rows that may be redacted (the report's ``blocks``), and the rows
    around them are published with certainty.
    """
    out_s, out_b = [], []
    for s, blk in zip(starts, blocks):
        q = snap(blk, tol)
        nz = np.flatnonzero(q.any(axis=1))
        if nz.size:
            out_s.append(s + int(nz[0]))
            out_b.append(np.ascontiguousarray(q[nz[0] : nz[-1] + 1]))
    return out_s, out_b


def _verify_blocks(chains: list[Chain], n: int, starts: list[int], blocks: list[np.ndarray], priv: tuple[int, ...],
                   eps: float, method: str) -> tuple[dict[int, float], tuple[LeakageResult, int]]:
    """Every private record judged exactly on its block extended by the always-published record on each
    side, at every chain of ``chains``: ``(leakage per private record, (worst result, its offset))``.

    Raises :class:`PrivacyCheckError` when a private record lies outside every block or a leakage
    exceeds ``eps`` (:func:`finalize_sparse`).
    """
    per: dict[int, float] = {}
    worst: tuple[LeakageResult, int] | None = None
    all_ok = True
    for s, blk in zip(starts, blocks):
        lo, ext, mine = extended_block(n, s, blk, priv)
        if not mine:
            continue
        ext, rel = check_mechanism(ext, [p - lo for p in mine], k=chains[0].k)
        for whole in chains:
            judge_chain = chain_window(whole, lo, lo + ext.shape[0])
            results = [leakage(judge_chain, ext, p) for p in rel]
            everything = bool(np.all(ext == 1.0))  # the whole sequence redacted: leakage exactly 0
            for p, r in zip(mine, results):
                per[p] = max(per.get(p, 0.0), 0.0 if everything else r.leakage)
            block_worst = max(results, key=lambda r: r.leakage)
            _, ok = verify(judge_chain, ext, rel, eps, worst=block_worst)
            all_ok &= ok
            if worst is None or block_worst.leakage > worst[0].leakage:
                worst = (block_worst, lo)
    missing = [p + 1 for p in priv if p not in per]
    if missing:
        raise PrivacyCheckError(f"{method}: private record {missing[0]} would be published (infinite leakage)")
    assert worst is not None
    if not all_ok:
        raise PrivacyCheckError(
            f"{method}: exact leakage {worst[0].leakage:.12g} exceeds eps={eps:.12g} after snapping")
    return per, worst


def _region_certificates(chain: Chain, rows: SparseRows, starts: list[int], blocks: list[np.ndarray],
                         priv: tuple[int, ...], eps: float,
                         regions: list[tuple[int, int, float, str]] | None) -> list[RegionCertificate]:
    """The bounds of :func:`finalize_sparse`'s regions (default: Lemma 2 on each block with its two
    neighbours), each checked against what the design publishes there (:class:`BoundError` below it)."""
    n = rows.n
    if regions is None:
        regions = []
        for s, blk in zip(starts, blocks):
            lo, hi = max(0, s - 1), min(n - 1, s + blk.shape[0])
            mine = [p - lo for p in priv if lo <= p <= hi]
            m = hi - lo + 1
            bound = m * lemma2_upper_bound(chain_window(chain, lo, hi + 1), m, eps=eps, private=mine) if mine \
                else float(m)
            regions.append((lo, hi, bound, "lemma2"))
    certs = []
    for lo, hi, bound, name in regions:
        published = float(((1.0 - rows.rows(lo, hi + 1)) * row_laws(chain, lo, hi + 1)).sum())
        if not bound >= published - UTILITY_ATOL * (hi - lo + 1):
            raise BoundError(f"{name} bound {bound!r} on rows {lo + 1}..{hi + 1} is below what the design "
                             f"publishes there ({published!r})")
        certs.append(RegionCertificate(int(lo), int(hi), published, float(bound), name))
    return certs


def finalize_sparse(
    chain: Chain,
    n: int,
    parts: list[tuple[int, np.ndarray]],
    *,
    private: object,
    eps: float,
    method: str,
    upper_bound: float,
    solver: str,
    scope: str = "all",
    info: dict | None = None,
    tol: float = SNAP_TOL,
    regions: list[tuple[int, int, float, str]] | None = None,
    chain_class: ChainClass | None = None,
    stopped: bool = False,
    class_bound: tuple[float, str, str] | None = None,
) -> SparseDesign:
    """:func:`finalize` for a mechanism given as blocks ``(start, rows)`` and zero elsewhere.

    Blocks are merged where they overlap or touch (elementwise maximum), snapped and
    trimmed to their redactable rows, and every private record is verified exactly on its block extended by the always-published
    record on each side.  That check is exact for the whole sequence: a record published
    with certainty is observed without noise, so by the Markov property the records
    beyond it are conditionally independent of :math:`X_p` given the output and cancel
    from every likelihood ratio of Definition 1 (the window starts at a stationary
    record, as the sequence does).  Time and memory depend on the blocks, not on ``n``.

    ``regions`` are ``(start, stop, upper_bound_records, solver)`` bounds on what any
    eps-private mechanism publishes in those rows; by default each block (with its two
    neighbours) gets Lemma 2's bound (:func:`redactopt.judge.lemma2.lemma2_upper_bound` on the
    rows, private records included).  With ``chain_class`` every block is verified at every
    deciding chain too (``per_private`` and ``leakage`` are then the worst over the class).
    ``stopped`` says a time limit stopped the search behind the bound; ``class_bound`` =
    ``(upper_bound, solver, scope)`` an optional certificate over a named class of mechanisms.

    Raises
    ------
    PrivacyCheckError
        If a private record lies outside every block (it would be published: infinite
        leakage) or any exact leakage exceeds ``eps``.
    BoundError
        If a bound lies below what the design publishes.
    """
    n = check_n(n)
    eps = check_eps(eps)
    priv = check_private(private, n)
    starts, blocks = _trim_blocks(*merge_blocks(n, list(parts)), tol)
    chains = list(dict.fromkeys((chain,) + (chain_class.deciding() if chain_class is not None else ())))
    per, worst = _verify_blocks(chains, n, starts, blocks, priv, eps, method)
    u = 1.0 - sum(float((b * row_laws(chain, s, s + b.shape[0])).sum()) for s, b in zip(starts, blocks)) / n
    cert = make_certificate(upper_bound, u, solver=solver, scope=scope, stopped=stopped)
    rows = SparseRows(n, tuple(starts), tuple(blocks), k=chain.k)
    certs = _region_certificates(chain, rows, starts, blocks, priv, eps, regions)
    for b in blocks:
        b.setflags(write=False)
    return SparseDesign(
        chain=chain,
        redact_prob=rows,
        private=priv,
        eps=eps,
        method=method,
        utility=u,
        leakage=max(per.values()),
        per_private=tuple(per[p] for p in priv),
        witness=worst[0],
        witness_offset=worst[1],
        certificate=cert,
        info=dict(info or {}),
        regions=tuple(certs),
        chain_class=chain_class,
        class_certificate=None if class_bound is None else make_certificate(
            class_bound[0], u, solver=class_bound[1], scope=class_bound[2]),
    )
