r"""Leakage over a class of chains, certified (docs/mathematics.md, "Classes of chains").

By the theorem of :mod:`redactopt.model.classes` the supremum of the leakage over a box is
attained at one of its two deciding corners, so it is the exact leakage (Definition 1) there:
:func:`class_leakage` evaluates it at each deciding chain, and :func:`verify_class` decides
:math:`\sup_\Theta\mathcal L\le\epsilon` exactly (rational arithmetic near the boundary, as
:func:`redactopt.judge.certify.verify`).  Sparse designs are judged on their blocks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from redactopt.judge.certify import verify
from redactopt.judge.leakage import LeakageResult, check_mechanism, leakage
from redactopt.model.chain import MarkovChain
from redactopt.model.classes import ChainClass

__all__ = ["ClassLeakage", "class_leakage", "verify_class"]


@dataclass(frozen=True)
class ClassLeakage:
    """The worst-case leakage over a class and where it is attained.

    ``leakage`` is :math:`\\sup_{\\theta\\in\\Theta}\\mathcal L_\\theta` (nats), the worst over the
    private records; ``chain`` the chain attaining it (a deciding corner) and ``witness`` an
    output attaining it there; ``per_chain`` the worst leakage at each deciding chain;
    ``per_private`` the worst over the class for each private record (0-based, in order).
    """

    leakage: float
    chain: MarkovChain
    witness: LeakageResult
    per_chain: tuple[tuple[MarkovChain, float], ...]
    per_private: tuple[float, ...]


def class_leakage(chain_class: ChainClass, redact_prob: object, private: object) -> ClassLeakage:
    """:math:`\\sup_{\\theta\\in\\Theta}\\mathcal L_\\theta(q)` with the chain and output attaining it.

    Exact: the supremum over a box is attained at a deciding corner (the theorem), where
    :func:`redactopt.judge.leakage.leakage` computes it; a finite set is evaluated chain by chain.
    """
    if not isinstance(chain_class, ChainClass):
        raise TypeError(f"chain_class must be a ChainClass, got {type(chain_class).__name__}")
    q, priv = check_mechanism(redact_prob, private)
    best: tuple[float, MarkovChain, LeakageResult] | None = None
    per_chain = []
    per_private = np.zeros(len(priv))
    for chain in chain_class.deciding():
        results = [leakage(chain, q, p) for p in priv]
        per_private = np.maximum(per_private, [r.leakage for r in results])
        worst = max(results, key=lambda r: r.leakage)
        per_chain.append((chain, worst.leakage))
        if best is None or worst.leakage > best[0]:
            best = (worst.leakage, chain, worst)
    assert best is not None
    return ClassLeakage(best[0], best[1], best[2], tuple(per_chain), tuple(float(v) for v in per_private))


def verify_class(chain_class: ChainClass, redact_prob: np.ndarray, private: tuple[int, ...],
                 eps: float) -> tuple[ClassLeakage, bool]:
    """The class leakage and whether it is *provably* at most ``eps`` at every deciding chain."""
    res = class_leakage(chain_class, redact_prob, private)
    ok = all(verify(chain, np.asarray(redact_prob, dtype=float), private, eps)[1] for chain in chain_class.deciding())
    return res, ok
