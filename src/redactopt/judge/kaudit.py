"""Audits of k-state mechanisms: exact leakage per private record on its segment, a witness, a verdict.

A record published with certainty (its row all zeros) is observed without noise, so everything
beyond it cancels from every likelihood ratio (docs/mathematics.md §8; the Markov property does
not depend on the number of states).  Each private record is therefore judged on its *segment*:
the rows between the nearest always-published rows on each side, those rows included — exact for
the whole sequence, at the cost of the segment.
"""

from __future__ import annotations

from typing import Any


from redactopt._validate import check_eps
from redactopt.judge.audit import WitnessRuns, audit_segments
from redactopt.judge.exact import MAX_EXACT_N, certify_exact
from redactopt.judge.segments import segment
from redactopt.model.varying import VaryingChain
from redactopt.model.chain import Chain, check_chain

__all__ = ["kaudit", "ksegment"]

#: The segment of a private record (:func:`redactopt.judge.segments.segment`; the old name).
ksegment = segment


def kaudit(chain: Chain, redact_prob: object, *, private: object, eps: float, method: str = "file",
           exact: bool = False) -> dict[str, Any]:
    """The audit of a mechanism on a chain given as a matrix: :func:`redactopt.judge.audit.audit_segments`
    (the one segment audit of every chain; the rows stay sparse), reported with the states' labels.

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
