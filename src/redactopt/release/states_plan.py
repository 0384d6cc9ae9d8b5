"""The categorical release's plan and report: its designs, verified on the caller's chain, and its report.

A categorical column, or several protected together, is released through the passes of every
release (:mod:`redactopt.release.passes`: scan, zone fit, draws and writers; the driver is
:mod:`redactopt.release.states`, the column read by a :class:`~redactopt.release.codec.StatesCodec`).
This module holds what is particular to such a release: :func:`kplan_of` (the plan and one
verified mechanism per distinct design, a :class:`KPlan`), :func:`kreach`, :func:`sequence_entries`
and the report ``redactopt.release.kapply-report/1`` (:func:`kreport`, :func:`ksummary`).

**Design.**  The planner of every release, :func:`redactopt.release.plan.plan_release`, splits each
sequence's private records into groups, designs each group's sub-problem once per distinct
request (the design cache: sequences of any length share a design far from their ends; mirror
images only for reversible chains) and places it exactly (the cut argument).  A group's design
(``method``, :func:`redactopt.engine.joint.design_states_release`): ``dim`` gives every cluster of
private records (records whose windows overlap) the exact data-independent window that keeps every
member within the budget (:func:`redactopt.solvers.dim.dim_windows`); ``optimal`` also gives each
private record :func:`redactopt.engine.design.design`'s best verified design on its window and
takes their elementwise maximum — private for every one of them, because redacting more never
raises the leakage (post-processing) — and keeps the more useful of the two.  ``auto`` is fast
first: the joint window, and per-record local designs (a count of steps, not of seconds) only
where they are cheap and the window's certificate leaves a gap.  Each sequence's mechanism is verified
exactly about every private record (:func:`redactopt.judge.certify.verify`) before anything is
drawn.

**Draws** are exact Bernoulli draws of ``q[t, x_t]`` by the one :class:`~redactopt.release.redactor.Redactor`:
the operating system's secure source by default, or PCG64 with ``seed`` (reproducible, labelled
*not for real releases*), word ``t`` for record ``t``.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from redactopt import _progress
from redactopt.engine.joint import STATES_AUTO_OPTIMAL_MAX, design_states_release
from redactopt.errors import PrivacyCheckError
from redactopt.judge.certify import verify
from redactopt.judge.certify import SparseRows
from redactopt.judge.leakage import leakage_segment
from redactopt.kio import KREPORT_FORMAT, kmechanism_to_dict
from redactopt.model.chain import Chain as KChain
from redactopt.release.data import MAX_TRIPLE_STATES, ScanState
from redactopt.release.disclosure import plain_summary
from redactopt.release.fit import ChainFit
from redactopt.release.zones import reach
from redactopt.release.plan import plan_release
from redactopt.release.report import fit_rows_text

__all__ = ["KPlan", "kdesign_release", "kplan_of", "kreach", "kreport", "ksummary", "sequence_entries",
           "AUTO_OPTIMAL_MAX", "KAPPLY_METHODS", "ORDER_TEST_MAX_STATES"]

AUTO_OPTIMAL_MAX = STATES_AUTO_OPTIMAL_MAX
KAPPLY_METHODS = ("auto", "dim", "optimal")
_LABEL = "NOT FOR REAL RELEASES: seeded pseudo-random draws (--seed) are reproducible by anyone who knows the seed"


#: The order test of a fitted release counts triples by distance class (``k**3`` numbers each): up to
#: this many states (8 MB); beyond, the fit reports no order test.
ORDER_TEST_MAX_STATES = MAX_TRIPLE_STATES


def kdesign_release(chain: KChain, n: int, *, eps: float, private: tuple[int, ...], method: str = "auto",
                    time_limit: float = 60.0) -> tuple[np.ndarray, dict[str, Any]]:
    """The release mechanism of one sequence of ``n`` records (dense) and what was done: the design of
    :func:`redactopt.engine.joint.design_states_release` (the rule every categorical release's groups use)."""
    if method not in KAPPLY_METHODS:
        raise ValueError(f"method must be one of {', '.join(KAPPLY_METHODS)}, got {method!r}")
    d = design_states_release(chain, n, eps=eps, private=list(private), method=method, time_limit=time_limit)
    q = np.asarray(d.redact_prob.rows(0, n))
    return q, {"method": _how(method, [d.method]), "leakage": d.leakage}


def _how(method: str, names: list[str]) -> str:
    """What a categorical release's designs did, in words (``names``: the methods of their groups)."""
    kinds = dict.fromkeys("the exact data-independent window per cluster of private records" if m == "dim"
                          else "optimal per private record, elementwise maximum" for m in names)
    what = "; ".join(kinds)
    return f"{method}: {what}" if method == "auto" else what


@dataclass
class KPlan:
    """A k-state release's chain and its distinct designs (one per sequence length and private positions)."""

    chain: KChain
    fit: ChainFit | None
    state_of: np.ndarray  # the chain's index of each distinct row state (-1: not a state of the chain)
    keys: list[tuple[int, tuple[int, ...]]]
    mechs: list[dict[str, Any]]
    release: Any = None  # the planner's ReleasePlan (its sequences are the table's, in order)

    def design_of(self, m: int, priv: tuple[int, ...]) -> dict[str, Any]:
        return self.mechs[self.keys.index((m, priv))]


@_progress.timed("design")
def kplan_of(chain: KChain, fit: ChainFit | None, state: ScanState, *, private: list[int] | None = None,
             state_of: np.ndarray | None = None, eps: float, method: str, time_limit: float,
             workers: int | None = None, map_designs: Any = None) -> KPlan:
    """The plan of a categorical release of the sequences of ``state`` (their lengths and private positions;
    ``private``: positions of a single sequence instead) under ``chain``: the one planner's groups,
    placements and cache, then one mechanism per distinct (length, private positions), verified exactly
    again here on the caller's chain.  Shared by the in-memory and the streaming release."""
    if method not in KAPPLY_METHODS:
        raise ValueError(f"method must be one of {', '.join(KAPPLY_METHODS)}, got {method!r}")
    # the designs run on the chain as plain data (KChain.to_dict: lists and text, the exact chain), so worker
    # processes rebuild it whatever class or label objects the caller used; judged below on the caller's
    plain = chain.to_dict()
    planned = KChain(plain["transition"], labels=tuple(plain["labels"]))
    plan = plan_release(state, eps=eps, chain=planned, method=method, time_limit=time_limit, workers=workers,
                        private=private, map_designs=map_designs)
    first: dict[tuple[int, tuple[int, ...]], int] = {}
    for c in range(len(state.ids)):
        priv = tuple(sorted(plan.private_of(c)))
        if priv:
            first.setdefault((int(state.n[c]), priv), c)
    keys = list(first)
    mechs: list[dict[str, Any]] = []
    for (m, priv), c in first.items():
        rows = plan.sparse_rows(c)
        how = {"method": _how(method, [plan.choices[g].shape.design.method for g in plan.groups_of(c)])}
        per_private = [_judged(chain, rows, p, eps) for p in priv]  # judged here too, on this process's chain
        w = max(per_private, key=lambda r: r.leakage)
        pi = np.asarray(chain.stationary, dtype=float)
        u = 1.0 - sum(float((b @ pi).sum()) for b in rows.blocks) / m  # Definition 2 (zero rows publish)
        mech = kmechanism_to_dict(chain, rows, private=priv, eps=eps, method=how["method"], utility=u,
                                  leakage=w.leakage)
        mechs.append({"rows": rows, "how": how, "per_private": per_private, "worst": w, "utility": u, "mech": mech})
    return KPlan(chain, fit, np.zeros(0, dtype=np.int64) if state_of is None else state_of, keys, mechs, plan)


def _judged(chain: KChain, rows: SparseRows, p: int, eps: float) -> Any:
    """The exact leakage about private record ``p`` of a sparse mechanism, verified within ``eps``.

    Judged on the block holding ``p`` and one row on each side: the blocks are separated by rows
    published with certainty, and such a row cuts the dependence on everything beyond it (the
    segment argument of :func:`redactopt.judge.certify.verify`; the chain is stationary, so the
    window's first row has the stationary law), so the window's leakage is the sequence's.  The
    result keeps no witness (a long sequence's would be as long as the sequence)."""
    i = bisect_right(rows.starts, p) - 1
    inside = i >= 0 and p < rows.starts[i] + rows.blocks[i].shape[0]
    lo = max(0, (rows.starts[i] if inside else p) - 1)
    hi = min(rows.n, (rows.starts[i] + rows.blocks[i].shape[0] if inside else p + 1) + 1)
    q = rows.rows(lo, hi)
    r = leakage_segment(chain, q, p - lo)
    _, ok = verify(chain, q, (p - lo,), eps, worst=r)
    if not ok:
        raise PrivacyCheckError(f"the design for {rows.n} records leaks {r.leakage:.12g} > eps={eps:.12g} about "
                                f"record {p + 1}")
    return replace(r, p=p, witness=np.zeros(0, dtype=np.int64))


def kreach(plan: KPlan) -> int:
    """How far from its nearest private record a design of the plan may redact (:func:`~redactopt.release.zones.reach`)."""
    blocks = []
    for (m, priv), d in zip(plan.keys, plan.mechs):
        sparse = d["rows"]
        rows = np.concatenate([s + np.flatnonzero(b.max(axis=1) > 0.0) for s, b in zip(sparse.starts, sparse.blocks)]
                              or [np.zeros(0, dtype=np.int64)])
        runs = np.split(rows, np.flatnonzero(np.diff(rows) > 1) + 1) if rows.size else []
        blocks.append(([(int(r[0]), int(r[-1])) for r in runs], list(priv)))
    return reach(blocks)


def sequence_entries(plan: KPlan, ids: list, lengths: list[int], privs: list[tuple[int, ...]],
                     redacted: np.ndarray) -> tuple[list[dict[str, Any]], tuple[Any, Any], float]:
    """The report's row of every sequence (id, rows, private positions, design, leakage, redacted), the
    worst (segment result, sequence id) and the expected number of published records."""
    rows_of: list[dict[str, Any]] = []
    worst: tuple[Any, Any] | None = None
    expected = 0.0
    for c, (seq_id, m, priv) in enumerate(zip(ids, lengths, privs)):
        entry: dict[str, Any] = {"id": None if seq_id is None else str(seq_id), "rows": m,
                                 "private": [p + 1 for p in priv]}
        if not priv:  # nothing to protect: released unchanged
            expected += m
            entry.update(design=None, leakage=0.0, redacted=0)
        else:
            j = plan.keys.index((m, priv))
            d = plan.mechs[j]
            expected += d["utility"] * m
            entry.update(design=j, leakage=d["worst"].leakage, redacted=int(redacted[c]))
            if worst is None or d["worst"].leakage > worst[0].leakage:
                worst = (d["worst"], seq_id)
        rows_of.append(entry)
    assert worst is not None  # a release without a private row is refused before it is planned
    return rows_of, worst, expected


def kreport(plan: KPlan, rows_of: list[dict[str, Any]], worst: Any, private_rows: list[int], n: int,
             redacted: int, expected: float, *, seed: int | None, column: str, by: str | None) -> dict[str, Any]:
    """The k-state report (``redactopt.release.kapply-report/1``): chain, designs, leakage, utility, randomness;
    ``private_rows``: the private records' rows in the table (1-based)."""
    chain, fit = plan.chain, plan.fit
    w, w_id = worst
    labels_txt = [str(s) for s in chain.labels]
    rep: dict[str, Any] = {
        "format": KREPORT_FORMAT, "column": column, "rows": n, "states": labels_txt,
        "chain": {"labels": labels_txt, "transition": chain.transition.tolist(),
                  "source": "fitted" if fit is not None else "given",
                  "fit": fit.to_dict() if fit is not None else None},
        "eps": plan.mechs[0]["mech"]["eps"], "method": "; ".join(dict.fromkeys(d["how"]["method"] for d in plan.mechs)),
        "private": private_rows,
        "leakage": {"max": w.leakage, "witness_private": w.p + 1, "pair": [str(s) for s in w.pair_labels]},
        "utility": {"expected": expected / n, "realised": 1.0 - float(redacted) / n, "redacted": int(redacted)},
        "randomness": {"source": "numpy PCG64, seeded (word t for record t)" if seed is not None
                       else "operating system secure source (os.urandom)", "seed": seed},
        "label": _LABEL if seed is not None else None,
        "warnings": list(fit.warnings) if fit is not None else [],
    }
    if by is None:  # one sequence: its mechanism, blocks and per-private leakage (format unchanged)
        d = plan.mechs[0]
        rep["leakage"]["per_private"] = [{"private": r.p + 1, "leakage": r.leakage} for r in d["per_private"]]
        rep["blocks"] = [[b["start"], b["start"] + len(b["redact_prob"]) - 1] for b in d["mech"]["blocks"]]
        rep["mechanism"] = d["mech"]
    else:  # several: one mechanism per distinct design, each sequence names its design
        rep["by"] = by
        rep["leakage"]["witness_sequence"] = None if w_id is None else str(w_id)
        rep["sequences"] = rows_of
        rep["designs"] = [d["mech"] for d in plan.mechs]
    return rep


def ksummary(rep: dict[str, Any], plan: KPlan, cols: list[str], fit_source: dict[str, Any], *,
              sequences: int | None = None, positions: str | None = None) -> str:
    k = plan.chain.k
    model = f"{k}-state Markov chain of the report" + (" (given)" if fit_source.get("source") == "given" else "")
    holding = sum(1 for s in rep.get("sequences", [rep]) if s["private"]) if sequences is None else sequences
    return plain_summary(eps=rep["eps"], protected=cols, private_records=len(rep["private"]),
                         sequences=holding, model=model, positions=positions,
                         fit_rows=fit_rows_text(fit_source),
                         order_test=None if plan.fit is None else plan.fit.order_summary(),
                         figures=rep["columns"]["not_covered"], rows=rep["rows"],
                         redacted=rep["utility"]["redacted"], expected_utility=rep["utility"]["expected"])


