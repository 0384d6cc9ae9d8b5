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
from redactopt.judge.lemma2 import lemma2_counts
from redactopt.judge.tolerances import round_up
from redactopt.model.chain import MarkovChain
from redactopt.model.classes import ChainClass

__all__ = ["ClassLeakage", "class_leakage", "verify_class", "nominal_bound"]


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


def nominal_bound(chain_class: ChainClass, n: int, *, eps: float, private: object,
                  point_bounds: list[tuple[MarkovChain, float, str]]) -> tuple[float, str]:
    r"""A bound on the utility *at the nominal chain* of every mechanism private for the whole class.

    Utilities are reported at the class's nominal chain (the estimate), so its bound must be
    measured there too.  Two valid bounds, the smaller is returned with its name:

    * Lemma 2 with the class's exclusions: a value is excluded where it is not publishable
      under a deciding chain or the nominal chain (the mechanism is private at both); the rest
      weighted by the nominal stationary law
      (:func:`~redactopt.judge.lemma2.lemma2_counts`);
    * each deciding chain ``c``'s certified bound ``U_c`` (``point_bounds``: chain, bound and
      its solver's name): with ``f_x`` the
      published fraction of value ``x`` and ``c_x/n`` its Lemma-2 maximum, every class-private
      mechanism has :math:`\sum_x\pi^c_x f_x\le U_c`, so its nominal utility
      :math:`\sum_x\pi^{nom}_x f_x` is at most the fractional knapsack's value (the value with
      the larger :math:`\pi^{nom}_x/\pi^c_x` filled first).

    Both rounded outward (:func:`~redactopt.judge.tolerances.round_up`).
    """
    nom = chain_class.nominal  # a chain of the class (ChainClass checks it)
    judges = tuple(dict.fromkeys(chain_class.deciding() + (nom,)))
    counts = lemma2_counts(judges, n, eps=eps, private=private)
    pn = nom.stationary
    cap = np.array(counts, dtype=float) / n
    best = (round_up(float(pn @ cap), 4), "lemma2 over the class")
    for c, bound, name in point_bounds:
        if c == nom:  # measured at the nominal chain already
            if bound <= best[0]:
                best = (float(bound), name)
            continue
        pc = c.stationary
        budget, value = float(bound), 0.0
        for x in sorted((0, 1), key=lambda v: -pn[v] / pc[v]):
            f = min(cap[x], max(0.0, budget) / pc[x])
            budget -= pc[x] * f
            value += pn[x] * f
        b = round_up(value, 8)
        if b < best[0]:
            best = (b, f"{name} at alpha={c.alpha:g} beta={c.beta:g}, carried to the nominal chain")
    return best
