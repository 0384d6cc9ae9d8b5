"""Audits of k-state mechanisms: exact leakage per private record on its segment, a witness, a verdict.

A record published with certainty (its row all zeros) is observed without noise, so everything
beyond it cancels from every likelihood ratio (docs/mathematics.md §8; the Markov property does
not depend on the number of states).  Each private record is therefore judged on its *segment*:
the rows between the nearest always-published rows on each side, those rows included — exact for
the whole sequence, at the cost of the segment.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from redactopt.judge.exact import MAX_EXACT_N, certify_exact
from redactopt.judge.leakage import check_mechanism, leakage_segment, utility
from redactopt.judge.segments import segment
from redactopt.judge.tolerances import boundary_zone
from redactopt.model.chain import Chain, check_chain

__all__ = ["kaudit", "ksegment"]

#: The segment of a private record (:func:`redactopt.judge.segments.segment`; the old name).
ksegment = segment


def _labels_text(res: Any) -> list:
    """The witness as text labels and ``None`` (⊥), record 1 first (one table lookup per record)."""
    table = np.empty(len(res.labels) + 1, dtype=object)
    table[1:] = [str(s) for s in res.labels]
    return table[np.asarray(res.witness).astype(np.int64) + 1].tolist()


def kaudit(chain: Chain, redact_prob: object, *, private: object, eps: float, method: str = "file",
           exact: bool = False) -> dict[str, Any]:
    """Exact leakage of a k-state mechanism about every private record, the worst witness and a verdict.

    Returns a JSON-ready dict: ``leakage`` (worst, nats), ``eps``, ``passed``, ``utility``,
    ``witness`` (labels or ``None`` for ⊥, record 1 first), ``pair`` (the labels the witness tells apart: it favours the first),
    ``witness_private`` (1-based), ``per_private``, and with ``exact`` the rational verdict.
    """
    q, priv = check_mechanism(redact_prob, private, k=check_chain(chain).k)
    per = []
    worst = None
    for p in priv:
        lo, hi = segment(q, p)
        res = leakage_segment(chain, q, p)
        per.append({"private": p + 1, "leakage": res.leakage, "segment": [lo + 1, hi + 1]})
        if worst is None or res.leakage > worst.leakage:
            worst = res
    res = worst  # type: ignore[assignment]
    # each record's float leakage decides only outside the band of its own segment (the evaluator's rounding
    # grows with the segment): a record below the worst but on a longer segment may still be undecided
    zones = [boundary_zone(eps, e["segment"][1] - e["segment"][0] + 1, chain.k) for e in per]
    below = [e["leakage"] <= eps - z for e, z in zip(per, zones)]
    passed = all(below)
    undecided = not passed and all(e["leakage"] <= eps + z for e, z in zip(per, zones))
    rep: dict[str, Any] = {
        "method": method, "n": int(q.shape[0]), "k": chain.k, "states": [str(s) for s in chain.labels],
        "chain": chain.to_dict(), "private": [p + 1 for p in priv], "eps": float(eps), "leakage": res.leakage,
        "witness_private": res.p + 1,
        "witness": _labels_text(res),
        "pair": [str(s) for s in res.pair_labels], "utility": utility(chain, q), "per_private": per,
    }
    if exact or undecided:
        statuses = []
        for p, decided in zip(priv, below):
            if decided and not exact:
                statuses.append("certified")  # below its band: the float proves it
                continue
            a, b = segment(q, p)
            if b - a + 1 > MAX_EXACT_N:
                statuses.append("too long")
                continue
            statuses.append(certify_exact(chain, q[a : b + 1].tolist(), [p - a], eps).status)
        status = "certified" if all(s == "certified" for s in statuses) else (
            "violated" if any(s == "violated" for s in statuses) else "undecided")
        if exact:
            rep["exact"] = {"status": status, "records": statuses}
        passed = status == "certified" if (exact or undecided) else passed
    rep["passed"] = bool(passed)
    return rep
