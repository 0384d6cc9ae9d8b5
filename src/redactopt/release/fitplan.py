"""Fit the chain of a binary release where the release allows it, then plan the release.

The chain comes from exactly one of these sources (``docs/mathematics.md`` §10b):

* given (``alpha``/``beta``, a point or a box): nothing is fitted;
* ``fit_on``: the transition counts of a separate, public table;
* by default, the rows the release publishes with certainty: the rows outside the zone
  around the private records chosen by :func:`redactopt.release.zones.choose_zone`, whose
  counts come from one extra pass over the data (:class:`~redactopt.release.zones.ZoneTally`).

:func:`plan_fitted` returns the plan and a ``fit_source`` dict for the report: which rows the
fit read and how many.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from redactopt import _progress
from redactopt.release.data import ScanState, check_private_positions
from redactopt.release.fit import ChainFit, TransitionCounts, fit_counts
from redactopt.release.plan import ReleasePlan, plan_release
from redactopt.release.zones import Outside, PrivateIndex, ZoneTally, choose_zone

__all__ = ["plan_fitted", "plan_reach", "private_index", "free_sequences", "fit_outside"]

#: ``tally(private_index) -> ZoneTally``: one pass over the data counting transitions by distance class.
Tally = Callable[[PrivateIndex], ZoneTally]


def private_index(state: ScanState, private: list[int] | None) -> PrivateIndex:
    """The private positions of a scan (``private``: 0-based positions of a single sequence, if given)."""
    if private is not None:
        pos = np.asarray(sorted(set(private)), dtype=np.int64)
        return PrivateIndex.of(np.zeros(pos.size, dtype=np.int64), pos, state.n)
    return PrivateIndex.of(state.private_codes, state.private_pos, state.n)


def free_sequences(state: ScanState, private: list[int] | None) -> int:
    """Sequences with no private record (released unchanged)."""
    if private is not None:
        return 0 if private else len(state.ids)
    return int(len(state.ids) - np.unique(state.private_codes).size)


def plan_reach(plan: ReleasePlan) -> int:
    """The farthest redactable row of a plan from the nearest private record of its own group (an upper bound
    on the distance to the nearest private record of its sequence)."""
    far = 0
    seen: dict[tuple[int, tuple[int, ...]], int] = {}
    for g, ch in enumerate(plan.choices):
        priv = plan.g_private[g]
        key = (id(ch), tuple(p - priv[0] for p in priv))
        if key not in seen:
            lo, hi = ch.footprint(priv[0])
            gaps = [(b - a) // 2 for a, b in zip(priv[:-1], priv[1:])]
            seen[key] = max([priv[0] - lo, hi - priv[-1], 0] + gaps)
        far = max(far, seen[key])
    return far


def fit_outside(out: Outside, labels: list[str], labels_all: list[str], sequences: int, **fit_kw: Any) -> ChainFit:
    """The categorical fit of the rows outside a zone on the states ``labels`` (each state the rows show
    there among them, in the scan's codes ``labels_all``), from their pair and triple counts
    (:func:`redactopt.release.fit.fit_counts`; triples when the tally counted them)."""
    seen = out.states  # row states present outside, in order of first appearance there
    at = {s: i for i, s in enumerate(labels)}
    idx = np.array([at[labels_all[i]] for i in seen], dtype=np.int64)
    k = len(labels)
    C = np.zeros((k, k), dtype=np.int64)
    np.add.at(C, (idx[:, None], idx[None, :]), out.pairs[np.ix_(seen, seen)])
    T = None  # the triples, for the order test (counted up to MAX_TRIPLE_STATES states)
    if out.triples.shape[1] == out.pairs.shape[0]:
        T = np.zeros((k, k, k), dtype=np.int64)
        np.add.at(T, (idx[:, None, None], idx[None, :, None], idx[None, None, :]),
                  out.triples[np.ix_(seen, seen, seen)])
    return fit_counts(TransitionCounts(C, T, out.rows, sequences), tuple(labels), **fit_kw)


#: The method whose designs choose the fit's zone when the release asks for a costlier one: the zone needs
#: only each fit's reach, so the pilot and refits are designed cheaply and the chosen fit once with the method
#: asked (kept when it stays inside the zone; otherwise the cheap design, which does, is released).
ZONE_METHODS: dict[str, str] = {"optimal": "auto"}


@_progress.timed("fit")
def plan_fitted(state: ScanState, *, tally: Tally, private: list[int] | None,
                fit_on: TransitionCounts | None = None, fit_on_label: str | None = None,
                **design: Any) -> tuple[ReleasePlan, dict[str, Any]]:
    """The plan of a release and where its chain came from (module docstring).

    ``design`` are :func:`~redactopt.release.plan.plan_release`'s keyword arguments (``alpha``,
    ``beta``, ``robust``, ``eps``, ...); ``tally`` is called only when the chain is fitted from the
    release's own rows.
    """
    if design.get("alpha") is not None:
        return plan_release(state, private=private, **design), {"source": "given"}
    if fit_on is not None:
        plan = plan_release(state, private=private, counts=fit_on, **design)
        plan.info["fit_counts"] = fit_on  # (the model alternatives judge the release on the fit's rows)
        return plan, {"source": "fit-on", "table": fit_on_label, "rows": int(fit_on.records),
                      "transitions": int(fit_on.pairs.sum()), "sequences": int(fit_on.sequences)}
    if state.rows == 0:
        raise ValueError("the input has no data rows")
    check_private_positions(state, private)  # before any fit (the positions decide the zones)
    index = private_index(state, private)
    if not index.keys.size:
        raise ValueError("no record is marked private: nothing to protect (check --private-column)")
    counted = tally(index)

    read: dict[int, TransitionCounts] = {}

    def counts(out: Outside) -> TransitionCounts:
        read[out.radius] = TransitionCounts(out.pairs, out.triples, out.rows, len(state.ids))
        return read[out.radius]

    plans: list[ReleasePlan] = []
    method = design.get("method", "auto")
    zone_method = ZONE_METHODS.get(method, method)

    def plan_for(c: TransitionCounts, how: str = zone_method) -> ReleasePlan:
        plans.append(plan_release(state, private=private, counts=c, **{**design, "method": how}))
        return plans[-1]

    fitted, plan, zone = choose_zone(counted, fit=counts, plan=plan_for, reach_of=plan_reach, total_rows=state.rows,
                                     free_sequences=free_sequences(state, private))
    final_note = None
    if zone_method != method:  # the zone was chosen with the cheap designs; the chosen fit gets the asked one
        final = plan_for(fitted, method)
        # the smallest radius whose outside rows the rule read (a refused refit read closer in)
        limit = zone.radius if zone.refused_radius is None else min(zone.radius, zone.refused_radius)
        if plan_reach(final) <= limit:
            plan = final
        else:  # it would redact rows the rule read: the cheap design, which stays outside them, is kept
            final_note = (f"the {method} design of the chosen fit redacts rows up to {plan_reach(final)} records from "
                          f"a private record, within the {limit} the zone rule read: the {zone_method} design is kept")
    # the design time of the release is that of every design the zone rule made
    plan.design_seconds = sum(p.design_seconds for p in plans)
    plan.info["fit_counts"] = read.get(zone.radius)  # the rows the chosen fit read
    where = zone.to_dict()
    where["designs"] = len(plans)
    if zone_method != method:
        where["zone_method"] = zone_method
        if final_note is not None:
            where["kept"] = final_note
    return plan, where
