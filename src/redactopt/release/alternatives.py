"""Model alternatives: the release's exact leakage under a model its data may follow instead.

A release is verified exactly for its chain — a first-order, time-homogeneous Markov chain.  When a
test of that model rejects it, the guarantee may not hold for the data.  This module judges the
release under each *alternative* such a test points to: one :class:`ModelAlternative` per
alternative, each with its test's p-value and the release's leakage under it (the worst private
record's), so that :func:`redactopt.release.refusals.refuse_broken_model` can refuse a release
whose model is clearly wrong (p below :data:`~redactopt.release.refusals.REFUSE_P`) *and* under
whose better-fitting alternative it would leak more than ε.

**The structure** is a list of functions, :data:`ALTERNATIVES`: each takes the
:class:`Evidence` (the budget, the transition counts of the rows the chain was fitted on, and
the release's mechanisms) and returns a :class:`ModelAlternative` or ``None`` (not applicable).
An alternative computes its leakage only when its test rejects at ``REFUSE_P`` (it costs a
judge run); otherwise it reports the p-value alone.  Today's alternative:

* :func:`second_order_alternative` — the second-order chain fitted on the same rows (the order
  test, ``docs/mathematics.md`` §10), judged exactly by :mod:`redactopt.judge.second_order`
  (two-state chains).

The chains that vary with the hour and the weekday of a datetime ``--order-by`` column (issue 33,
:mod:`redactopt.release.model_check`, which needs its own pass over the levels) enter as
:func:`varying_alternatives` of that check's rows: their homogeneity test's p-value and the
release's leakage under them.  Another alternative is one more function of :data:`ALTERNATIVES`
(it reads what it needs from :class:`Evidence`), or, when it needs a pass of its own, its rows
turned into :class:`ModelAlternative` s the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from redactopt.judge.second_order import SecondOrderChain, second_order_leakage

__all__ = ["ModelAlternative", "Evidence", "ALTERNATIVES", "second_order_alternative", "judge_alternatives",
           "release_evidence", "varying_alternatives", "REFUSE_P"]

#: A test p-value below this means the model is clearly wrong (issue 36).
REFUSE_P = 1e-6


@dataclass(frozen=True)
class ModelAlternative:
    """One alternative model: its test, p-value, and the release's leakage under it.

    ``leakage`` is the worst over the judged records (``None``: not computed, because the test did
    not reject at :data:`REFUSE_P` or the alternative cannot be judged for this chain); ``exceeds``
    whether it is proven above ε (``None``: not computed or not decided); ``where`` names the
    worst record (1-based) and its sequence.
    """

    name: str
    test: str
    p_value: float | None
    leakage: float | None = None
    exceeds: bool | None = None
    where: dict | None = None
    note: str = ""

    @property
    def rejects(self) -> bool:
        """Whether the test rejects the release's model at :data:`REFUSE_P`."""
        return self.p_value is not None and self.p_value < REFUSE_P

    @property
    def refuses(self) -> bool:
        """Whether the release should be refused: the test rejects and the leakage is proven above ε."""
        return self.rejects and self.exceeds is True

    def to_dict(self) -> dict[str, Any]:
        leak = self.leakage if self.leakage is None or math.isfinite(self.leakage) else "inf"
        return {"name": self.name, "test": self.test, "p_value": self.p_value, "leakage": leak,
                "exceeds_eps": self.exceeds, "where": self.where, "note": self.note}


@dataclass(frozen=True)
class Evidence:
    """What an alternative is judged from.

    ``counts``: the :class:`~redactopt.release.fit.TransitionCounts` of the rows the chain was fitted
    on (``None`` for a given chain: no test); ``p_value``: the order test's; ``mechanisms()``: the
    release's distinct mechanisms as ``(sequence id, redact_prob rows, 0-based private records)``
    around the judged records (dense arrays of a few hundred rows each).
    """

    eps: float
    binary: bool
    counts: Any
    p_value: float | None
    mechanisms: Callable[[], Iterator[tuple[Any, np.ndarray, list[int], int]]]


def second_order_alternative(ev: Evidence) -> ModelAlternative | None:
    """The second-order chain of the fit's triples (module docstring); ``None`` without an order test."""
    if ev.p_value is None:
        return None
    name, test = "second-order chain", "likelihood-ratio test of a first- against a second-order chain"
    if not ev.binary:
        return ModelAlternative(name, test, ev.p_value, note="not judged: the second-order judge is for "
                                "two-state chains")
    if ev.p_value >= REFUSE_P:
        return ModelAlternative(name, test, ev.p_value, note=f"not judged: p >= {REFUSE_P:g}")
    if ev.counts is None or ev.counts.triples is None:
        return ModelAlternative(name, test, ev.p_value, note="not judged: the fit kept no triple counts")
    chain2 = SecondOrderChain.fit(np.asarray(ev.counts.triples)[:2, :2, :2])
    worst: tuple[float, bool | None, dict] | None = None
    for seq_id, q, private, offset in ev.mechanisms():
        for p, r in zip(private, second_order_leakage(chain2, q, private, ev.eps)):
            if worst is None or r.leakage > worst[0]:
                worst = (r.leakage, r.exceeds, {"record": offset + p + 1,
                                                "sequence": None if seq_id is None else str(seq_id)})
    if worst is None:
        return ModelAlternative(name, test, ev.p_value, note="no private record to judge")
    return ModelAlternative(name, test, ev.p_value, leakage=worst[0], exceeds=worst[1], where=worst[2],
                            note="exact: the leakage of a witness output, evaluated in rational arithmetic")


def varying_alternatives(model_check: dict[str, Any], eps: float) -> list[ModelAlternative]:
    """The rows of a release's ``model_check`` (the chains varying with the hour or the weekday,
    :mod:`redactopt.release.model_check`) as alternatives.  Their leakage comes from the exact evaluator
    in floating point: it counts as above ``eps`` beyond a relative 1e-9 (the band of the float
    verdicts, README *How we know it is private*)."""
    out = []
    for r in model_check.get("alternatives") or []:
        leak = r.get("leakage")
        out.append(ModelAlternative(
            f"chain varying with {r.get('model')}", "homogeneity test of the transitions across its levels",
            r.get("p_value"), leakage=leak, exceeds=None if leak is None else bool(leak > eps * (1.0 + 1e-9)),
            where={"record": r.get("record"), "sequence": r.get("sequence")},
            note="model_check: the exact evaluator under each sequence's varying chain (floating point)"))
    return out


#: The alternatives every release is judged under (append one to plug in another model).
ALTERNATIVES: list[Callable[[Evidence], ModelAlternative | None]] = [second_order_alternative]


def judge_alternatives(ev: Evidence,
                       alternatives: list[Callable[[Evidence], ModelAlternative | None]] | None = None,
                       ) -> list[ModelAlternative]:
    """Every applicable alternative of :data:`ALTERNATIVES` (or ``alternatives``) judged on ``ev``."""
    out = []
    for judge in ALTERNATIVES if alternatives is None else alternatives:
        alt = judge(ev)
        if alt is not None:
            out.append(alt)
    return out


def _clusters(starts: tuple[int, ...], blocks: tuple[np.ndarray, ...]) -> list[tuple[int, int]]:
    """First and last rows of runs of blocks separated by fewer than two published rows (a second-order
    chain needs two consecutive published records to be cut)."""
    out: list[list[int]] = []
    for s, b in zip(starts, blocks):
        e = s + b.shape[0] - 1
        if out and s - out[-1][1] - 1 < 2:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(a, b) for a, b in out]


def release_evidence(plan: Any, *, counts: Any, p_value: float | None) -> Evidence:
    """The :class:`Evidence` of a planned release (a :class:`~redactopt.release.plan.ReleasePlan`): each
    distinct cluster of blocks with its private records, as a dense window with two published rows on
    each side (where the sequence has them)."""

    def mechanisms() -> Iterator[tuple[Any, np.ndarray, list[int], int]]:
        seen: set = set()
        for c in plan.designed().tolist():
            rows = plan.sparse_rows(c)
            priv = sorted(plan.private_of(c))
            for a, b in _clusters(rows.starts, rows.blocks):
                lo, hi = max(0, a - 2), min(rows.n - 1, b + 2)
                mine = [p - lo for p in priv if lo <= p <= hi]
                if not mine:
                    continue
                q = np.asarray(rows.rows(lo, hi + 1), dtype=float)
                key = (q.tobytes(), tuple(mine), lo == 0, hi == rows.n - 1)
                if key in seen:
                    continue
                seen.add(key)
                yield plan.state.ids[c], q, mine, lo

    return Evidence(float(plan.eps), bool(plan.chain.binary), counts, p_value, mechanisms)
