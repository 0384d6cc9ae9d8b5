"""Exact composition of independent local redactions of the same records (docs/mathematics.md, §14).

Releases ``i = 1..m`` of the same records, each a local redaction ``q_i[t][x] = Pr(Y^i_t = ⊥ | X_t = x)``
drawn independently of the others, reveal together exactly what the one local redaction

.. math:: q[t][x] = \\prod_i q_i[t][x]

reveals (post-processing both ways), so the cumulative leakage about every private record is the exact
leakage (Definition 1) of that *product mechanism*, judged by the one segment audit
(:func:`redactopt.judge.audit.audit_segments`).  The product of doubles is rounded; the rounding is
bounded per record and carried as an allowance that every verdict subtracts from ``eps`` (it errs
outward).  Nothing here is a bound: the composed leakage is exact for each chain it is judged under.
"""

from __future__ import annotations

import math
from fractions import Fraction
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from redactopt.judge.audit import as_sparse, audit_segments, segments
from redactopt.judge.certify import SparseRows
from redactopt.model.chain import Chain
from redactopt.model.classes import ChainClass
from redactopt.model.varying import VaryingChain, judged_chain

__all__ = ["product_rows", "rounding_allowance", "ComposedAudit", "compose_audit"]

def product_rows(tables: Sequence[object], k: int = 2) -> SparseRows:
    """The product mechanism of local redactions of the same ``n`` records: ``q[t][x] = Π_i q_i[t][x]``.

    Each table is a dense ``(n, k)`` array or a :class:`~redactopt.judge.certify.SparseRows`.  A record
    outside every block of one release is published with certainty by it, so the product's blocks are
    the intersections of the releases' blocks, split at rows the product publishes with certainty.  A
    product that falls below the smallest normal double while its factors are positive cannot be
    judged (its relative rounding is unbounded): ``ValueError``.
    """
    rows = [as_sparse(t, k=k) for t in tables]
    if not rows:
        raise ValueError("product_rows needs at least one mechanism")
    n = rows[0].n
    if any(r.n != n for r in rows):
        raise ValueError(f"the mechanisms cover different numbers of records: {[r.n for r in rows]}")
    cur = [(s, np.asarray(b, dtype=float)) for s, b in zip(rows[0].starts, rows[0].blocks)]
    for r in rows[1:]:
        cur = _intersect(cur, list(zip(r.starts, r.blocks)))
    starts, blocks = [], []
    for s, b in cur:
        live = b.any(axis=1)
        edges = np.flatnonzero(np.diff(np.r_[0, live.astype(np.int8), 0]))
        for a, e in zip(edges[0::2].tolist(), edges[1::2].tolist()):
            blk = np.ascontiguousarray(b[a:e])
            blk.setflags(write=False)
            starts.append(s + a)
            blocks.append(blk)
    return SparseRows(n, tuple(starts), tuple(blocks), k=rows[0].shape[1])


def _intersect(a: list, b: list) -> list:
    """The elementwise product of two block lists, on the intersections of their blocks (two pointers)."""
    out = []
    i = j = 0
    while i < len(a) and j < len(b):
        (sa, ba), (sb, bb) = a[i], b[j]
        ea, eb = sa + ba.shape[0], sb + bb.shape[0]
        lo, hi = max(sa, sb), min(ea, eb)
        if lo < hi:
            x, y = ba[lo - sa:hi - sa], np.asarray(bb[lo - sb:hi - sb], dtype=float)
            prod = x * y
            if np.any((prod < np.finfo(float).tiny) & (x > 0) & (y > 0)):
                t = lo + int(np.flatnonzero(((prod < np.finfo(float).tiny) & (x > 0) & (y > 0)).any(axis=1))[0])
                raise ValueError(f"the product of the redaction probabilities of record {t + 1} underflows "
                                 "(below the smallest normal double): it cannot be judged exactly")
            out.append((lo, prod))
        if ea <= eb:
            i += 1
        else:
            j += 1
    return out


def rounding_allowance(tables: Sequence[object], product: SparseRows, lo: int, hi: int) -> float:
    """A bound on |L(exact product) − L(rounded product)| for a segment of rows ``lo..hi-1`` (nats).

    Every output's likelihood given ``X_p`` is a sum of non-negative terms with one factor ``q_t(x_t)`` or
    ``1 − q_t(x_t)`` per row of the segment (rows beyond it cancel, the cut argument).  Where the stored
    product differs from the exact product of the factors (compared in rationals), both factors of that
    entry err relatively by at most ``η_t`` (the row's largest, computed exactly and rounded up), each
    likelihood by a factor in ``[1/(1+η), 1+η]`` per row, so each log-ratio by at most
    ``2 Σ_t log(1 + η_t)``; the maximum over outputs (the support is the same) moves by no more.
    """
    if len(tables) < 2 or hi <= lo:
        return 0.0
    k = product.shape[1]
    factors = np.stack([np.asarray(as_sparse(t, k=k).rows(lo, hi), dtype=float) for t in tables])
    q = product.rows(lo, hi)
    total = 0.0
    for t in np.flatnonzero(((q > 0) & (q < 1)).any(axis=1)).tolist():
        eta = Fraction(0)
        for x in range(k):
            if not 0.0 < q[t, x] < 1.0:
                continue
            exact = math.prod((Fraction(float(f)) for f in factors[:, t, x]), start=Fraction(1))
            err = abs(exact - Fraction(float(q[t, x])))
            if err:
                eta = max(eta, err / exact, err / (1 - exact))
        if eta:
            total += math.log1p(float(eta) * (1 + 1e-15)) * (1 + 1e-15)
    return math.nextafter(2.0 * total * (1 + 1e-12), math.inf) if total else 0.0


@dataclass(frozen=True)
class ComposedAudit:
    """What :func:`compose_audit` found for one sequence (0-based private records).

    ``judges`` are the chains the composed product was judged under (each release's own chain, or the
    deciding chains of its class, without repeats); ``under[j][p]`` the exact leakage of the product about
    ``p`` under ``judges[j]``; ``cumulative[p]`` their largest; ``alone[i][p]`` release ``i`` judged alone
    under its own chain (or class); ``allowance[p]`` the rounding allowance of the product (nats);
    ``passed`` the proven verdict against ``eps`` (``None`` without one).
    """

    private: tuple[int, ...]
    judges: tuple[Chain | VaryingChain, ...]
    under: tuple[dict[int, float], ...]
    cumulative: dict[int, float]
    alone: tuple[dict[int, float], ...]
    allowance: dict[int, float]
    passed: bool | None


def _deciding(judge: object, n: int) -> list:
    if isinstance(judge, ChainClass):
        return list(judge.deciding())
    return [judged_chain(judge, n)]


def _leakages(judge: object, rows: SparseRows, private: tuple[int, ...],
              eps: float | None) -> tuple[dict[int, float], bool]:
    """Each private record's exact leakage under a chain or a class (its deciding chains), and the verdict."""
    out: dict[int, float] = {}
    passed = True
    for chain in _deciding(judge, rows.n):
        sa = audit_segments(chain, rows, private, eps)
        passed &= sa.passed
        for p, (res, _) in sa.per.items():
            out[p] = max(out.get(p, -math.inf), res.leakage)
    return out, bool(passed)


def compose_audit(releases: Sequence[tuple[Chain | VaryingChain | ChainClass, object]], private: object, *,
                  eps: float | None = None, alone: bool = True) -> ComposedAudit:
    """The cumulative exact leakage of independent local redactions of one sequence (§14).

    ``releases`` pairs each release's chain (or class of chains) with its redaction table (dense or
    :class:`~redactopt.judge.certify.SparseRows`) on the same ``n`` records; ``private`` are the 0-based
    private records, redacted by every release.  The product mechanism (:func:`product_rows`) is judged
    exactly under every distinct chain among the releases' (a class: at its deciding chains), each
    release alone under its own (``alone=False``: not computed, ``alone`` is then empty).  With ``eps`` the
    verdict is a proof that the product's leakage is at most ``eps`` under every one of those chains, after
    the rounding allowance.
    """
    if not releases:
        raise ValueError("compose_audit needs at least one release")
    k = releases[0][0].nominal.k if isinstance(releases[0][0], ChainClass) else releases[0][0].k
    tables = [as_sparse(t, k=k) for _, t in releases]
    product = product_rows(tables, k=k)
    priv = tuple(sorted({int(p) for p in np.atleast_1d(np.asarray(private, dtype=np.int64)).tolist()}))
    judges: list = []
    for judge, _ in releases:
        for c in _deciding(judge, product.n):
            if all(c != j for j in judges):
                judges.append(c)
    allowance: dict[int, float] = {}
    for seg in segments(product, priv):
        a = rounding_allowance(tables, product, seg.lo, seg.lo + seg.rows.shape[0])
        allowance.update((p, a) for p in seg.private)
    margin = max(allowance.values(), default=0.0)
    under, passed = [], True
    for chain in judges:
        if eps is not None and eps - margin < 0:
            leak, ok = _leakages(chain, product, priv, None)[0], False
        else:
            leak, ok = _leakages(chain, product, priv, None if eps is None else eps - margin)
        under.append(leak)
        passed &= ok
    cumulative = {p: max(u[p] for u in under) for p in priv}
    each = tuple(_leakages(judge, t, priv, None)[0] for (judge, _), t in zip(releases, tables)) if alone else ()
    return ComposedAudit(priv, tuple(judges), tuple(under), cumulative, each, allowance,
                         None if eps is None else bool(passed))
