"""Audits: the exact leakage of a mechanism, its witness, its utility and a verdict."""

from __future__ import annotations

from typing import Any

import numpy as np

from redactopt._validate import check_eps
from redactopt.judge.certify import verify
from redactopt.model.chain import MarkovChain
from redactopt.judge.leakage import check_mechanism, leakage, utility

__all__ = ["audit"]


def audit(
    chain: MarkovChain,
    redact_prob: object,
    *,
    private: object,
    eps: float,
    method: str = "unknown",
    info: dict | None = None,
) -> dict[str, Any]:
    """Exact audit of a mechanism against a budget, as a JSON-ready dict.

    ``private`` is 0-based here; the report shows 1-based positions.  ``passed`` is
    true iff the exact leakage (Definition 1), the worst over the private records, is
    at most ``eps`` (up to a relative 1e-12 for floating rounding).  ``witness`` lists
    the worst output, record 1 first, with ``None`` for ⊥.
    """
    eps = check_eps(eps)
    q, priv = check_mechanism(redact_prob, private)
    per = [leakage(chain, q, p) for p in priv]
    worst = max(per, key=lambda r: r.leakage)
    _, ok = verify(chain, q, priv, eps, worst)
    report: dict[str, Any] = {
        "method": method,
        "n": int(q.shape[0]),
        "private": [p + 1 for p in priv],
        "chain": {"alpha": chain.alpha, "beta": chain.beta},
        "eps": eps,
        "leakage": worst.leakage,
        "passed": bool(ok),
        "utility": utility(chain, q),
        "witness": worst.witness_output(),
        "witness_private": worst.p + 1,
        "favoured": worst.favoured,
        "per_private": [
            {"private": r.p + 1, "leakage": r.leakage, "favoured": r.favoured} for r in per
        ],
    }
    if info:
        report["info"] = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in info.items()}
    return report
