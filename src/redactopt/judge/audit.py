"""Audits: the exact leakage of a mechanism, its witness, its utility and a verdict.

Every audit works on *segments*: a private record's block of rows that can be redacted,
extended by the always-published record on each side (:func:`segments`).  A record
published with certainty is observed without noise, so by the Markov property everything
beyond it cancels from every likelihood ratio of Definition 1: the leakage, the witness
and the verdict computed on the segment are those of the whole sequence
(docs/mathematics.md, §8).  A dense ``(n, 2)`` array and a
:class:`~redactopt.judge.certify.SparseRows` (the ``redactopt.mechanism/3`` file format)
are audited the same way, in time and memory that grow with the blocks, not with ``n``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from redactopt._validate import check_eps, check_private, check_redact_prob
from redactopt.judge.certify import SparseRows, verify
from redactopt.judge.exact import MAX_EXACT_N, ExactCertificate, certify_exact
from redactopt.judge.leakage import LeakageResult, check_mechanism, leakage
from redactopt.judge.segments import Segment, block_segments
from redactopt.model.varying import VaryingChain, chain_window, judged_chain, row_laws
from redactopt.model.chain import Chain, MarkovChain, check_chain
from redactopt.model.classes import ChainClass

__all__ = ["audit", "kaudit", "exact_audit", "as_sparse", "segments", "Segment", "WitnessRuns"]


def as_sparse(redact_prob: object, k: int = 2) -> SparseRows:
    """The mechanism as :class:`~redactopt.judge.certify.SparseRows` (validated).

    A dense ``(n, k)`` array becomes its maximal runs of rows that can be redacted (rows
    with a positive entry); every other row is published with certainty.  A
    ``SparseRows`` is returned as it is.
    """
    if isinstance(redact_prob, SparseRows):
        return redact_prob
    q = check_redact_prob(redact_prob, k=k)
    nz = q.any(axis=1)
    edges = np.flatnonzero(np.diff(np.r_[0, nz.astype(np.int8), 0]))
    starts, ends = edges[0::2], edges[1::2]
    return SparseRows(q.shape[0], tuple(int(s) for s in starts),
                      tuple(np.ascontiguousarray(q[s:e]) for s, e in zip(starts.tolist(), ends.tolist())))


def segments(redact_prob: object, private: object) -> Iterator[Segment]:
    """The segment of every block that holds private records (docs/mathematics.md, §8).

    Yields :class:`~redactopt.judge.segments.Segment` ``(lo, rows, private)``: the block
    extended by its always-published neighbour on each side (where the sequence has one,
    :func:`~redactopt.judge.segments.extended_block`), and the 0-based private records in
    it, sorted.  Checks on a segment are exact for the whole sequence.  A private record
    outside every block would be published: ``ValueError``.
    """
    rows = as_sparse(redact_prob)
    return block_segments(rows, check_private(private, rows.n))


class WitnessRuns(Sequence):
    """An output of ``n`` records held as runs ``(first, last, state)`` (0-based, inclusive; -1 is ⊥).

    Behaves as the list of values (``None`` for ⊥, record 1 first) without holding ``n``
    entries: an audit of a long sequence keeps only its runs.  A value is the state's index (0 or
    1 of a binary chain) or, with ``labels``, its label.
    """

    def __init__(self, n: int, runs: list[tuple[int, int, int]], labels: tuple | None = None) -> None:
        self.n = int(n)
        self.runs = runs
        self.labels = labels
        self._lasts = [r[1] for r in runs]

    def __len__(self) -> int:
        return self.n

    def shown(self, v: int) -> Any:
        """What state ``v`` of a run shows: ``None`` for ⊥ (-1), else its index or label."""
        if v < 0:
            return None
        return v if self.labels is None else self.labels[v]

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return self.tolist()[i]
        i = int(i) + (self.n if int(i) < 0 else 0)
        if not 0 <= i < self.n:
            raise IndexError(i)
        return self.shown(self.runs[int(np.searchsorted(self._lasts, i))][2])

    def __iter__(self) -> Iterator[Any]:
        for a, b, v in self.runs:
            yield from itertools.repeat(self.shown(v), b - a + 1)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, WitnessRuns):
            return self.n == other.n and self.runs == other.runs and self.labels == other.labels
        return isinstance(other, (list, tuple)) and len(other) == self.n and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def tolist(self) -> list[Any]:
        return list(self)

    @staticmethod
    def of(rows: SparseRows, lo: int, window: np.ndarray, chain: Chain | None = None) -> "WitnessRuns":
        """The whole-sequence witness of a witness on the segment starting at row ``lo``.

        The records outside the segment lie beyond a record published with certainty, so they
        cancel from the likelihood ratio; they only need an output of positive probability.  On a
        binary chain (every transition possible) any states do: each is filled as
        :func:`redactopt.judge.leakage.leakage` fills the records beyond the first published one,
        ⊥ where it can occur, else 0.  On any other chain (``chain`` given, not binary; labels
        shown) the segment's end values are continued outward along each state's most likely
        successor (:func:`redactopt.judge.kernelk.continuation`; on the left along the
        time-reversed chain), showing the state where it can be published and ⊥ where it is
        always redacted.  With ``chain`` the values are its labels as text.
        """
        window = np.asarray(window, dtype=np.int64)
        if chain is not None and not chain.binary:
            return WitnessRuns._continued(rows, lo, window, chain)
        hi = lo + window.shape[0]
        # blocks are separated by always-published rows: each lies inside the segment or apart from it
        pieces = [(s, np.where(b.max(axis=1) > 0.0, -1, 0).astype(np.int64))
                  for s, b in zip(rows.starts, rows.blocks) if s + b.shape[0] <= lo or s >= hi]
        pieces.append((lo, window))
        pieces.sort(key=lambda x: x[0])
        runs: list[tuple[int, int, int]] = []
        at = 0
        for s, vals in pieces:
            _add_run(runs, at, s - 1, 0)
            _add_runs(runs, s, vals)
            at = s + vals.shape[0]
        _add_run(runs, at, rows.n - 1, 0)
        return WitnessRuns(rows.n, runs, None if chain is None else tuple(str(v) for v in chain.labels))

    @staticmethod
    def _continued(rows: SparseRows, lo: int, window: np.ndarray, chain: Chain) -> "WitnessRuns":
        from redactopt.judge.kernelk import continuation  # the matrix kernel: only for chains that need it

        n, hi = rows.n, lo + window.shape[0]
        varying = getattr(chain, "varying", False)
        back = chain.side_steps(lo, "left") if varying and lo > 0 else None if varying else chain.reversed_matrix()
        ahead = chain.side_steps(hi - 1, "right") if varying and hi < n else None if varying else chain.transition
        left = continuation(back, rows.rows(0, lo)[::-1], int(window[0]))[::-1] if lo > 0 else window[:0]
        right = continuation(ahead, rows.rows(hi, n), int(window[-1])) if hi < n else window[:0]
        runs: list[tuple[int, int, int]] = []
        _add_runs(runs, 0, np.concatenate([left, window, right]))
        return WitnessRuns(n, runs, tuple(str(v) for v in chain.labels))


def _add_run(runs: list[tuple[int, int, int]], a: int, b: int, v: int) -> None:
    """Append the run ``a..b`` of state ``v`` (merged with the last run when they touch)."""
    if b < a:
        return
    if runs and runs[-1][2] == v and runs[-1][1] == a - 1:
        runs[-1] = (runs[-1][0], b, v)
    else:
        runs.append((a, b, v))


def _add_runs(runs: list[tuple[int, int, int]], start: int, vals: np.ndarray) -> None:
    """Append the runs of ``vals``, whose first value is record ``start``."""
    cut = np.flatnonzero(np.diff(vals)) + 1
    for a, b in zip(np.r_[0, cut].tolist(), np.r_[cut, vals.shape[0]].tolist()):
        _add_run(runs, start + a, start + b - 1, int(vals[a]))


@dataclass(frozen=True)
class SegmentAudit:
    """What :func:`audit_segments` found: the rows (sparse), each private record's exact leakage and its
    segment, the worst result and where its segment starts, the verdict (a proof) and the utility."""

    rows: SparseRows
    per: dict[int, tuple[LeakageResult, Segment]]
    worst: LeakageResult
    lo: int
    passed: bool
    utility: float


def audit_segments(chain: Chain, redact_prob: object, private: object, eps: float | None) -> SegmentAudit:
    """The one segment audit of every chain: each private record judged exactly on its segment
    (:func:`segments`, exact for the whole sequence), the verdict proven
    (:func:`redactopt.judge.certify.verify`: rational arithmetic near ``eps``); never ``n`` rows.
    With ``eps=None`` only the leakages are computed (``passed`` is then true and means nothing)."""
    rows = as_sparse(redact_prob, k=chain.k)
    per: dict[int, tuple[LeakageResult, Segment]] = {}
    worst: tuple[LeakageResult, int] | None = None
    passed = True
    for seg in segments(rows, private):
        ext, rel = check_mechanism(seg.rows, [p - seg.lo for p in seg.private], k=chain.k)
        sub = chain_window(chain, seg.lo, seg.lo + ext.shape[0])  # a varying chain: the segment's own steps
        results = [leakage(sub, ext, p) for p in rel]
        block_worst = max(results, key=lambda r: r.leakage)
        if eps is not None:
            passed &= verify(sub, ext, rel, eps, block_worst)[1]
        per.update((p, (r, seg)) for p, r in zip(seg.private, results))
        if worst is None or block_worst.leakage > worst[0].leakage:
            worst = (block_worst, seg.lo)
    assert worst is not None  # segments() refuses a private record outside every block
    util = 1.0 - sum(float((b * row_laws(chain, s, s + b.shape[0])).sum())
                     for s, b in zip(rows.starts, rows.blocks)) / rows.n
    return SegmentAudit(rows, per, worst[0], worst[1], bool(passed), util)


def kaudit(chain: Chain, redact_prob: object, *, private: object, eps: float, method: str = "file",
           exact: bool = False) -> dict[str, Any]:
    """The audit of a mechanism on a chain given as a matrix: :func:`audit_segments` (the one segment
    audit of every chain; the rows stay sparse), reported with the states' labels.

    A record published with certainty (its row all zeros) is observed without noise, so everything
    beyond it cancels from every likelihood ratio (docs/mathematics.md §8; the Markov property does not
    depend on the number of states): each private record is judged on its segment, exact for the whole
    sequence, at the cost of the segment.

    Returns a JSON-ready dict: ``leakage`` (worst, nats), ``eps``, ``passed`` (a proof), ``utility``,
    ``witness`` (labels or ``None`` for ⊥, record 1 first), ``pair`` (the labels the witness tells apart:
    it favours the first), ``witness_private`` (1-based), ``per_private`` (each record's leakage and
    segment), and with ``exact`` every record's verdict in rational arithmetic on its segment.
    """
    if not isinstance(chain, VaryingChain):
        check_chain(chain)
    sa = audit_segments(chain, redact_prob, private, check_eps(eps))
    priv = sorted(sa.per)
    per = [{"private": p + 1, "leakage": r.leakage, "segment": [seg.lo + 1, seg.lo + seg.rows.shape[0]]}
           for p, (r, seg) in ((p, sa.per[p]) for p in priv)]
    res = sa.worst
    rep: dict[str, Any] = {
        "method": method, "n": sa.rows.n, "k": chain.k, "states": [str(v) for v in chain.labels],
        "chain": chain.to_dict(), "private": [p + 1 for p in priv], "eps": float(eps), "leakage": res.leakage,
        "witness_private": res.p + sa.lo + 1,
        "witness": WitnessRuns.of(sa.rows, sa.lo, sa.worst.witness, chain).tolist(),  # JSON-ready
        "pair": [str(chain.labels[v]) for v in res.pair], "utility": sa.utility, "per_private": per,
    }
    passed = sa.passed
    if exact:
        statuses = []
        for p in priv:
            seg = sa.per[p][1]
            if seg.rows.shape[0] > MAX_EXACT_N:
                statuses.append("too long")
                continue
            sub = chain.window(seg.lo, seg.lo + seg.rows.shape[0]) if isinstance(chain, VaryingChain) else chain
            statuses.append(certify_exact(sub, seg.rows.tolist(), [p - seg.lo], eps).status)
        status = "certified" if all(v == "certified" for v in statuses) else (
            "violated" if any(v == "violated" for v in statuses) else "undecided")
        rep["exact"] = {"status": status, "records": statuses}
        passed = passed and status == "certified"
    rep["passed"] = bool(passed)
    return rep


def audit(
    chain: Chain | ChainClass,
    redact_prob: object,
    *,
    private: object,
    eps: float,
    method: str = "unknown",
    info: dict | None = None,
) -> dict[str, Any]:
    """Exact audit of a mechanism against a budget, as a dict (JSON-ready but for ``witness``).

    ``redact_prob`` is a dense ``(n, 2)`` array or a
    :class:`~redactopt.judge.certify.SparseRows`; ``private`` is 0-based here, the report
    shows 1-based positions.  Each private record is judged on its segment
    (:func:`segments`), which is exact for the whole sequence.  ``passed`` is true iff the
    exact leakage (Definition 1), the worst over the private records, is provably at most
    ``eps`` (:func:`redactopt.judge.certify.verify`: rational arithmetic near the
    boundary).  ``witness`` is the worst output as a :class:`WitnessRuns` (a sequence of
    0, 1 and ``None`` for ⊥, record 1 first; ``.tolist()`` for the list).

    A chain of more than two states is audited by :func:`kaudit` (the same
    segments, witnesses as labels, ``pair`` the two values it tells apart).

    With a :class:`~redactopt.model.classes.ChainClass` the mechanism is judged for every
    chain of the class: it is audited at each deciding chain (docs/mathematics.md, "Classes
    of chains": the worst case over a box is attained there), ``leakage`` is the worst
    (the supremum over the class) and ``worst_chain`` the chain attaining it; ``utility``
    is measured at the class's nominal chain; ``deciding`` lists each deciding chain's audit.
    """
    if isinstance(chain, ChainClass):
        return _audit_class(chain, redact_prob, private=private, eps=eps, method=method, info=info)
    if isinstance(chain, VaryingChain):
        chain = judged_chain(chain, as_sparse(redact_prob, k=chain.k).n)
    if not chain.binary or chain.varying:  # more states: the same segments and verdict, the states named by their labels
        rep = kaudit(chain, redact_prob, private=private, eps=check_eps(eps), method=method)
        if info:
            rep["info"] = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in info.items()}
        return rep
    eps = check_eps(eps)
    sa = audit_segments(chain, redact_prob, private, eps)
    rows, per, res, lo, passed, util = sa.rows, sa.per, sa.worst, sa.lo, sa.passed, sa.utility
    priv = sorted(per)
    report: dict[str, Any] = {
        "method": method,
        "n": rows.n,
        "private": [p + 1 for p in priv],
        "chain": {"alpha": chain.alpha, "beta": chain.beta},
        "eps": eps,
        "leakage": res.leakage,
        "passed": bool(passed),
        "utility": util,
        "witness": WitnessRuns.of(rows, lo, res.witness),
        "witness_private": res.p + lo + 1,
        "favoured": res.favoured,
        "per_private": [
            {"private": p + 1, "leakage": per[p][0].leakage, "favoured": per[p][0].favoured} for p in priv
        ],
    }
    if info:
        report["info"] = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in info.items()}
    return report


def _audit_class(chain_class: ChainClass, redact_prob: object, *, private: object, eps: float, method: str,
                 info: dict | None) -> dict[str, Any]:
    reports = [(c, audit(c, redact_prob, private=private, eps=eps, method=method, info=info))
               for c in chain_class.deciding()]
    worst_chain, rep = max(reports, key=lambda cr: cr[1]["leakage"])
    rep = dict(rep)
    per = {}
    for _, r in reports:
        for x in r["per_private"]:
            if x["private"] not in per or x["leakage"] > per[x["private"]]["leakage"]:
                per[x["private"]] = x
    rows = as_sparse(redact_prob)
    pi = chain_class.nominal.stationary
    rep.update(
        chain_class=chain_class.to_dict(),
        chain={"alpha": chain_class.nominal.alpha, "beta": chain_class.nominal.beta},
        worst_chain={"alpha": worst_chain.alpha, "beta": worst_chain.beta},
        passed=all(r["passed"] for _, r in reports),
        utility=1.0 - sum(float((b @ pi).sum()) for b in rows.blocks) / rows.n,
        per_private=[per[k] for k in sorted(per)],
        deciding=[{"alpha": c.alpha, "beta": c.beta, "leakage": r["leakage"], "passed": r["passed"]}
                  for c, r in reports],
    )
    return rep


def exact_audit(chain: MarkovChain | ChainClass, redact_prob: object, *, private: object,
                eps: float) -> ExactCertificate:
    """The verdict of :func:`redactopt.judge.exact.certify_exact` for every private record, segment by segment.

    Rational arithmetic on the stored doubles (the numbers a release draws with), on each
    segment (:func:`segments`), which is exact for the whole sequence.  The result is the
    certificate of the segment with the largest ratio, which decides for all: if it is
    certified every other (smaller) ratio is too, and if any segment violates ``eps`` so
    does it.  A segment longer than
    :data:`~redactopt.judge.exact.MAX_EXACT_N` records is a ``ValueError``.  For a class,
    the worst over its deciding chains.
    """
    if isinstance(chain, ChainClass):
        return max((exact_audit(c, redact_prob, private=private, eps=eps) for c in chain.deciding()),
                   key=lambda c: c.ratio)
    certs = []
    for seg in segments(redact_prob, private):
        m = seg.rows.shape[0]
        if m > MAX_EXACT_N:
            raise ValueError(f"exact rational audits are limited to segments of {MAX_EXACT_N} records; private "
                             f"record {seg.private[0] + 1} lies in one of {m} (its block of rows that can be "
                             "redacted and the always-published row on each side)")
        certs.append(certify_exact(chain, seg.rows.tolist(), [p - seg.lo for p in seg.private],
                                   eps))
    return max(certs, key=lambda c: c.ratio)
