r"""Releasing a sequence with a scan, owner or holder mechanism: exact, secure draws (issue 26).

A scan walks each side outward from ``p`` and at distance ``d`` stops with probability
``S[d-1][c][x_t]`` -- a double, drawn *exactly* by :func:`redactopt.release.bits.bernoulli_exact`
from the operating system's secure source (or, for tests, a seeded one); at the stop it publishes
that record and every farther one.  An owner/holder table's row is a vector of doubles whose
exact sum is the normaliser: the doubles are scaled by a common power of two to integers and a
uniform integer below their sum picks the mask (``secrets.randbelow``; seeded: ``random.Random``),
so every mask is drawn with exactly its kernel probability.  Records outside a block are published.

Several private records: a scan publishes everything beyond its first release on each side, so it
protects one private record per sequence.  Block mechanisms protect several when their blocks are
disjoint (each block's published boundary cuts it off from the others, docs/mathematics.md §8).
"""

from __future__ import annotations

import random
import secrets
from dataclasses import dataclass
from typing import Any

import numpy as np

from redactopt.classes_io import mechanism_to_dict
from redactopt.judge.scan import verify_mechanism
from redactopt.model.mechanism_classes import BlockMechanism, OwnerMechanism, RunScanMechanism, ScanMechanism, as_kchain
from redactopt.release.bits import BitSource, SecureBits, SeededBits, bernoulli_exact, bit_source

__all__ = ["draw", "ClassRelease", "release_sequence", "release_sequences", "MultiplePrivateError"]


class MultiplePrivateError(ValueError):
    """The class cannot protect these private records together (the message says why, in one line)."""


def _scan_side(mech: ScanMechanism, values: np.ndarray, name: str, out: np.ndarray, source: BitSource,
               key: int) -> None:
    S = mech.side(name)
    if S is None:
        return
    step = -1 if name == "left" else 1
    pos = list(range(mech.p + step, -1 if step < 0 else mech.n, step))
    c = int(values[mech.p]) if mech.holder else int(values[pos[0]])
    for d, t in enumerate(pos):
        if d >= S.shape[0]:
            break
        if bernoulli_exact([S[d][c][int(values[t])]], source, key=key, positions=np.array([t]))[0]:
            for u in pos[d:]:
                out[u] = values[u]
            return


def _run_scan_side(mech: RunScanMechanism, values: np.ndarray, name: str, out: np.ndarray, source: BitSource,
                   key: int) -> None:
    """One side of a run's scan: read outward from the run, stop once, publish from there on."""
    S = mech.side(name)
    if S is None:
        return
    pos = list(range(mech.first - 1, -1, -1)) if name == "left" else list(range(mech.last + 1, mech.n))
    c = int(values[pos[0]])
    for d, t in enumerate(pos):
        if d >= S.shape[0]:
            break
        if bernoulli_exact([S[d][c][int(values[t])]], source, key=key, positions=np.array([t]))[0]:
            for u in pos[d:]:
                out[u] = values[u]
            return


def _pick(weights: np.ndarray, source: BitSource, key: int, position: int) -> int:
    """An index drawn with probability exactly ``weights[i] / sum(weights)`` (doubles as exact rationals)."""
    m, e = np.frexp(np.asarray(weights, dtype=float))
    low = int(e[weights > 0].min()) - 53
    ints = [int(np.ldexp(mi, 53)) << (int(ei) - 53 - low) if w > 0 else 0 for mi, ei, w in zip(m, e, weights)]
    total = sum(ints)
    if isinstance(source, SeededBits):
        u = random.Random(f"{source.seed}:{key}:{position}").randrange(total)
    else:
        u = secrets.randbelow(total)
    acc = 0
    for i, w in enumerate(ints):
        acc += w
        if u < acc:
            return i
    raise AssertionError("unreachable: u < total")


def _table_draw(inner: OwnerMechanism, values: np.ndarray, source: BitSource, key: int, offset: int) -> np.ndarray:
    k, n, p = inner.k, inner.n, inner.p
    others = [t for t in range(n) if t != p]
    row = (sum(int(values[t]) * k**t for t in range(n)) if inner.holder
           else sum(int(values[t]) * k**j for j, t in enumerate(others)))
    mask = _pick(inner.table[row], source, key, offset + p)
    out = -np.ones(n, dtype=np.int64)
    for j, t in enumerate(others):
        if (mask >> j) & 1:
            out[t] = values[t]
    return out


def draw(mech: ScanMechanism | RunScanMechanism | OwnerMechanism | BlockMechanism, values: object, *, seed: int | None = None,
         key: int = 0) -> np.ndarray:
    """One release of ``values`` (state indices, length ``n``): the output with -1 for ⊥ (module docstring)."""
    v = np.asarray(values, dtype=np.int64)
    if v.shape != (mech.n,):
        raise ValueError(f"values must hold the {mech.n} records of the sequence, got shape {v.shape}")
    source = bit_source(seed)
    if isinstance(mech, ScanMechanism):
        out = -np.ones(mech.n, dtype=np.int64)
        for name in ("left", "right"):
            _scan_side(mech, v, name, out, source, key)
        return out
    if isinstance(mech, RunScanMechanism):
        out = -np.ones(mech.n, dtype=np.int64)
        for name in ("left", "right"):
            _run_scan_side(mech, v, name, out, source, key)
        return out
    if isinstance(mech, BlockMechanism):
        out = v.copy()
        a = mech.start
        out[a:a + mech.inner.n] = _table_draw(mech.inner, v[a:a + mech.inner.n], source, key, a)
        return out
    return _table_draw(mech, v, source, key, 0)


@dataclass(frozen=True)
class ClassRelease:
    """A released sequence (labels, ``None`` for ⊥) and its report (mechanism files, verdicts, draws)."""

    released: list
    report: dict


def _design(chain: Any, n: int, eps: float, p: int | list[int], cls: str, time_limit: float) -> Any:
    from redactopt.engine.classes_design import design_class

    return design_class(chain, n, eps=eps, p=p, cls=cls, time_limit=time_limit)


def _blocks(chain: Any, n: int, eps: float, private: list[int], holder: bool) -> list[BlockMechanism]:
    """Disjoint block designs around several private records, or :class:`MultiplePrivateError`."""
    from redactopt.engine.class_judge import block_design
    from redactopt.solvers.owner_lp import BlockInfeasible, max_exact_n

    kc = as_kchain(chain)
    gaps = [b - a for a, b in zip(private, private[1:])]
    total = min(max_exact_n(kc.k, holder), min(gaps) if gaps else n)
    while total >= 3:
        try:
            mechs = [block_design(kc, n, eps=eps, p=p, holder=holder, total=total, bound_total=total).mechanism
                     for p in private]
        except BlockInfeasible:
            break
        spans = [(m.start, m.start + m.inner.n) if isinstance(m, BlockMechanism) else (0, n) for m in mechs]
        if all(b0 <= a1 for (_, b0), (a1, _) in zip(spans, spans[1:])):
            return mechs  # type: ignore[return-value]
        total -= 1
    raise MultiplePrivateError(f"private records {[p + 1 for p in private]} are too close for disjoint blocks "
                               "that publish their boundaries within eps; use --class local")


def release_sequence(values: list, chain: Any, *, eps: float, private: list[int], cls: str = "scan",
                     seed: int | None = None, key: int = 0, time_limit: float = 60.0) -> ClassRelease:
    r"""Design a mechanism of class ``cls`` for this sequence, judge it, and release the sequence once.

    ``values`` are state labels (or indices) of the ``n`` records, ``private`` 0-based positions.  A
    scan protects one private record, or on a two-state chain one run of adjacent private records (the
    run's scan, docs/mathematics.md §7d; anything else: :class:`MultiplePrivateError`, one line); owner and
    holder protect several through disjoint blocks.  The report holds every mechanism file
    (:mod:`redactopt.classes_io`), its exact verdict, utility and certificate, and the draws' source.
    """
    kc = as_kchain(chain)
    idx = np.array([kc.state_index(v) if not isinstance(v, (int, np.integer)) else int(v) for v in values])
    n, priv = len(idx), sorted(set(int(p) for p in private))
    if cls == "local":
        raise ValueError("release_sequence covers scan, owner and holder; local releases use redactopt.release.apply")
    if len(priv) == 1:
        d = _design(kc, n, eps, priv[0], cls, time_limit)
        mechs, designs = [d.mechanism], [d.to_dict()]
    elif cls == "scan" and priv == list(range(priv[0], priv[-1] + 1)) and kc.k == 2:
        d = _design(kc, n, eps, priv, cls, time_limit)
        mechs, designs = [d.mechanism], [d.to_dict()]
    elif cls == "scan":
        raise MultiplePrivateError("a scan publishes every record beyond its first release on each side, so it "
                                   "protects one private record, or one run of adjacent records of a two-state "
                                   "chain, per sequence; use --class local or owner")
    else:
        mechs = _blocks(kc, n, eps, priv, cls == "holder")
        designs = [mechanism_to_dict(m, eps=eps) for m in mechs]
    out = idx.copy()
    verdicts = []
    for m in mechs:
        status, res = verify_mechanism(m, eps)
        if status != "certified":
            where = (f"private record {m.p + 1}" if not isinstance(m, RunScanMechanism)
                     else f"the run of private records {m.first + 1}-{m.last + 1}")
            raise RuntimeError(f"mechanism for {where} is not certified ({status}); nothing released")
        verdicts.append({"private": [t + 1 for t in m.private] if isinstance(m, RunScanMechanism) else m.p + 1,
                         "leakage": res.leakage, "verdict": status})
        drawn = draw(m, idx, seed=seed, key=key)
        out = np.where(drawn < 0, -1, out)
    out[priv] = -1
    source = SecureBits() if seed is None else SeededBits(seed)
    report = {"class": cls, "n": n, "private": [p + 1 for p in priv], "eps": float(eps), "designs": designs,
              "verdicts": verdicts, "published": int((out >= 0).sum()), "draws": source.description,
              "secure": source.secure}
    if not source.secure:
        report["note"] = "seeded draws: reproducible, not for real releases"
    return ClassRelease([None if v < 0 else kc.labels[int(v)] for v in out], report)


def release_sequences(sequences: dict, chain: Any, *, eps: float, cls: str = "scan", seed: int | None = None,
                      time_limit: float = 60.0) -> dict:
    r"""Several sequences (``apply --by``): ``{id: (values, private positions 0-based)}`` -> released and report.

    Sequences of the same length and private positions share one design (designed once, judged
    once); each sequence draws with its own key (its position in ``sequences``), so seeded releases are
    reproducible per sequence.  Returns ``{"released": {id: labels}, "report": {...}}`` with one entry per
    sequence naming its design.
    """
    designs: dict[tuple, ClassRelease] = {}
    released, entries = {}, []
    for key, (sid, (values, private)) in enumerate(sequences.items()):
        shape = (len(values), tuple(sorted(set(int(p) for p in private))))
        if shape not in designs:
            designs[shape] = release_sequence(values, chain, eps=eps, private=list(shape[1]), cls=cls, seed=seed,
                                              key=key, time_limit=time_limit)
            rel = designs[shape]
        else:
            rel = _redraw(designs[shape], values, chain, eps, seed, key)
        released[sid] = rel.released
        entries.append({"id": sid, "design": list(designs).index(shape), "published": rel.report["published"]})
    shapes = list(designs.values())
    return {"released": released,
            "report": {"class": cls, "eps": float(eps), "sequences": entries,
                       "designs": [r.report["designs"] for r in shapes], "verdicts": [r.report["verdicts"] for r in shapes],
                       "draws": shapes[0].report["draws"] if shapes else "", "secure": seed is None}}


def _redraw(first: ClassRelease, values: list, chain: Any, eps: float, seed: int | None, key: int) -> ClassRelease:
    """Another sequence of the same shape: the same (already judged) mechanisms, fresh draws."""
    from redactopt.classes_io import mechanism_from_dict

    kc = as_kchain(chain)
    idx = np.array([kc.state_index(v) if not isinstance(v, (int, np.integer)) else int(v) for v in values])
    out = idx.copy()
    for d in first.report["designs"]:
        mech, _ = mechanism_from_dict(d)
        out = np.where(draw(mech, idx, seed=seed, key=key) < 0, -1, out)
    out[[p - 1 for p in first.report["private"]]] = -1
    report = dict(first.report, published=int((out >= 0).sum()))
    return ClassRelease([None if v < 0 else kc.labels[int(v)] for v in out], report)
