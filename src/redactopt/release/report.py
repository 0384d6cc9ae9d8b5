"""The report of a release (format ``redactopt.release.apply-report/2``), built and written.

The report holds the chain (fitted or given), the mechanism of every designed sequence in
the sparse mechanism file format (:mod:`redactopt.io`, ``redactopt.mechanism/2``: the
blocks of rows that can be redacted, every other record published), the exact leakage
about every private record, the expected and realised utility, the blocks that can be
redacted and where the randomness came from.  Its size grows with the blocks and the
number of sequences, not with the number of rows.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

import numpy as np

from redactopt.io import REPORT_FORMAT, design_to_dict, write_text_atomic
from redactopt.judge.certify import SparseDesign
from redactopt.judge.leakage import leakage
from redactopt.model.chain import MarkovChain
from redactopt.release.bits import BitSource
from redactopt.release.plan import ReleasePlan, SequencePlan

__all__ = ["REPORT_FORMAT", "NOT_FOR_RELEASE", "build_report", "write_report"]

NOT_FOR_RELEASE = "NOT FOR REAL RELEASES: seeded pseudo-random draws (--seed) are reproducible by anyone who knows the seed"


def _json_id(v: Any) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    return str(v)



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
    if isinstance(res, SparseDesign):
        # each region's own certificate: what any eps-private mechanism can publish there
        d["regions"] = [r.to_dict() for r in res.regions]
    d["design_info"] = _jsonable(res.info)
    d["mechanism"] = design_to_dict(res)
    return d


def write_report(path: str | os.PathLike[str], report: dict[str, Any], *, force: bool = False) -> None:
    """Write a report as JSON through a temporary file and a rename (``-``: standard output)."""
    write_text_atomic(path, json.dumps(_jsonable(report), indent=2) + "\n", force=force)


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
    """The JSON report of a release (format ``redactopt.release.apply-report/2``)."""
    chain_d: dict[str, Any] = {"alpha": plan.chain.alpha, "beta": plan.chain.beta,
                               "source": "fitted" if plan.fit is not None else "given"}
    if plan.fit is not None:
        chain_d["fit"] = plan.fit.to_dict()
    total = int(sum(p.n for p in plan.plans))
    red = int(redacted.sum())
    seqs = [_sequence_report(p, plan.chain, int(redacted[c])) for c, p in enumerate(plan.plans)]
    rep: dict[str, Any] = {"format": REPORT_FORMAT}
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
        if "regions" in s:
            rep["regions"] = s["regions"]
        rep["design_info"] = s.get("design_info")
    else:
        rep["sequences"] = seqs
    return rep
