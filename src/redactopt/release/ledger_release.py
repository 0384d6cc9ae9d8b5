"""A release recorded in a ledger, designed against what is left of a total budget (issue 39, item 2).

``apply --ledger FILE --total-eps E [--consistent]`` (docs/releases.md, "Releasing again"; the ledger's
format: :mod:`redactopt.release.ledger_file`).  The first ledgered release of a dataset is an ordinary
release at ``--eps`` (at most ``E``); the ledger records its factor.  A later release of the same rows:

* the earlier releases' composition is the local mechanism ``Q = Π q_i`` (docs/mathematics.md §14); the
  new release draws a fresh factor ``q_new``, so that the composed mechanism is ``q_c = Q · q_new`` —
  local, and at most ``Q`` entry by entry;
* ``q_c`` is chosen among verified candidates (:func:`design_sequence`): ``min(Q, F_e)`` and ``Q · F_e``
  for fresh designs ``F_e`` at several ε (the apply plan's own at the release's ε first), and ``Q`` itself
  (nothing new).  Each candidate's *composed* mechanism is judged by the exact evaluator
  (:func:`redactopt.judge.compose.compose_audit`: every earlier factor and ``q_new``, each chain of the
  ledger, the product's rounding allowed for) against ``E`` for every private record; without
  ``--consistent`` the release alone is also judged against its ``--eps``.  The passing candidate with the
  most expected published records of the release wins;
* ``--consistent``: the release republishes every value an earlier release published and redraws only
  the records every earlier release left redacted (redacted again with probability ``q_new``).  Its output
  is then the composed output itself (the union): it reveals exactly what ``q_c`` reveals, together with
  the earlier releases or alone — no extra leakage for the republished values — and its utility is that of
  ``q_c``, more than a fresh draw's ``q_new``;
* the certified upper bound: the new release's own leakage is at most the release's ε, so its expected
  utility is at most what any ε-private local mechanism publishes — the fresh plan's certified bound
  (its region certificates), reported with the gap;
* refused, in one line and before anything is written, when the budget is spent: when the earlier
  releases already leak more than ``E`` about a private record, or when no candidate publishes anything
  beyond what they published.

Only the draws' outcomes needed later are kept (the records each output left redacted, which the
release shows anyway); never seed material.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from redactopt.errors import ReleaseRefused
from redactopt.judge.audit import as_sparse, audit_segments
from redactopt.judge.certify import SparseRows
from redactopt.judge.compose import ComposedAudit, compose_audit, product_rows
from redactopt.model.chain import MarkovChain
from redactopt.release.bits import BitSource
from redactopt.release.ledger_file import Ledger, LedgerEntry, LedgerError, LedgerSequence, json_id, now, ranges
from redactopt.release.plan import ReleasePlan, SequencePlan
from redactopt.release.redactor import Redactor

__all__ = ["LedgeredRelease", "SequenceChoice", "design_sequence", "candidate_factors", "EPS_FRACTIONS", "LedgerRedactor",
           "FactorRows"]

#: The fractions of the release's ε at which further fresh designs are proposed (besides ε itself).
EPS_FRACTIONS = (0.85, 0.7, 0.55, 0.4, 0.25, 0.1)

_POS_BITS = 31


@dataclass
class SequenceChoice:
    """The design of one sequence of a ledgered release (0-based rows).

    ``factor``: the fresh redaction drawn (``q_new``); ``composed``: the product of every factor (``q_c``);
    ``kind``: which candidate (``fresh``: the fresh design itself, ``min``, ``product``, ``nothing-new``,
    ``first``); ``audit``: the composed audit (cumulative exact leakage per private record); ``alone``: the
    release's own exact leakage per private record (``q_new``, or ``q_c`` with ``--consistent``);
    ``mass``: expected redacted records of the release; ``published_bound``: certified upper bound on its
    expected published records (``None`` when not known)."""

    factor: SparseRows
    composed: SparseRows
    kind: str
    audit: ComposedAudit
    alone: dict[int, float]
    mass: float
    published_bound: float | None


def _dense(rows: SparseRows) -> np.ndarray:
    return np.asarray(rows, dtype=float)


def candidate_factors(Q: np.ndarray, fresh: list[np.ndarray]) -> list[tuple[str, np.ndarray]]:
    """The candidate factors ``q_new`` (dense) of a later release, given the earlier composition ``Q``.

    For every fresh design ``F``: ``min`` — ``q_new = min(Q, F)/Q`` (so that ``q_c = min(Q, F)``; where
    ``Q = 0`` the record is already public and ``q_new = 0``), which is ``F`` itself where ``F <= Q``; and
    ``product`` — ``q_new = F`` (``q_c = Q·F``).  Last, ``nothing-new``: ``q_new = 1`` wherever ``Q > 0``."""
    out: list[tuple[str, np.ndarray]] = []
    pos = Q > 0
    for i, F in enumerate(fresh):
        C = np.minimum(Q, F)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(pos, np.minimum(1.0, np.where(C == Q, 1.0, C / np.where(pos, Q, 1.0))), 0.0)
        out.append(("fresh" if i == 0 and np.array_equal(C, F) else "min", ratio))
        out.append(("product", np.array(F, dtype=float)))
    out.append(("nothing-new", np.where(pos, 1.0, 0.0)))
    return out


def design_sequence(earlier: list[tuple[MarkovChain, SparseRows]], chain: MarkovChain, private: tuple[int, ...],
                    fresh: list[SparseRows], *, eps: float, total_eps: float, consistent: bool,
                    published_bound: float | None = None) -> SequenceChoice | None:
    """The best verified candidate of one sequence (module docstring), or ``None`` if none passes.

    ``earlier``: the ledger's factors of the sequence with their chains; ``fresh``: fresh designs of the
    sequence (the first at ``eps``); ``private``: 0-based, redacted with certainty by every factor.  A
    candidate passes when the composed audit proves every private record's cumulative leakage at most
    ``total_eps`` (and at most ``eps`` with ``consistent``, where the release is the composition) under
    every chain of the ledger and ``chain``, and, without ``consistent``, the release alone at most ``eps``.
    """
    n = fresh[0].n
    pi = chain.stationary
    Q = _dense(product_rows([f for _, f in earlier])) if earlier else np.zeros((n, 2))
    limit = min(eps, total_eps) if consistent else total_eps
    best: SequenceChoice | None = None
    seen: set[bytes] = set()
    for kind, q in candidate_factors(Q, [_dense(F) for F in fresh]):
        key = q.tobytes()
        if key in seen:
            continue
        seen.add(key)
        factor = as_sparse(q)
        ca = compose_audit(list(earlier) + [(chain, factor)], private, eps=limit)
        if not ca.passed:
            continue
        composed = product_rows([f for _, f in earlier] + [factor])
        if consistent:
            alone = dict(ca.cumulative)
            mass = float((_dense(composed) @ pi).sum())
        else:
            sa = audit_segments(chain, factor, private, eps)
            if not sa.passed:
                continue
            alone = {p: r.leakage for p, (r, _) in sa.per.items()}
            mass = float((q @ pi).sum())
        if best is None or mass < best.mass - 1e-12:
            best = SequenceChoice(factor, composed, kind, ca, alone, mass, published_bound)
    if best is not None and np.array_equal(_dense(best.composed), Q):
        best.kind = "nothing-new"  # the composition is unchanged: nothing beyond the earlier releases is published
    return best


class LedgerRedactor(Redactor):
    """The plan's redactor that also records which records it left redacted (only the outcomes, never the
    draws), and with ``keep`` (``--consistent``) publishes every record outside ``keep`` (packed keys of the
    records every earlier release left redacted)."""

    def __init__(self, plan: Any, source: BitSource, keep: np.ndarray | None = None) -> None:
        super().__init__(plan, source)
        self.keep = keep
        self._keys: list[np.ndarray] = []
        self._red: list[np.ndarray] = []

    def redact(self, codes: np.ndarray | None, positions: np.ndarray, values: np.ndarray) -> np.ndarray:
        mask = super().redact(codes, positions, values)
        c = np.zeros(positions.shape[0], dtype=np.int64) if codes is None else np.asarray(codes, dtype=np.int64)
        keys = (c << _POS_BITS) + np.asarray(positions, dtype=np.int64)
        if self.keep is not None:
            mask = mask & np.isin(keys, self.keep)
        inside = self.inside(c, np.asarray(positions, dtype=np.int64))
        self._keys.append(keys[inside])
        self._red.append(mask[inside])
        return mask

    def redacted_positions(self) -> dict[int, np.ndarray]:
        """Per sequence code, the 0-based records left redacted (a record drawn twice — a CSV splice retried
        as batches — keeps its last draw)."""
        if not self._keys:
            return {}
        keys, red = np.concatenate(self._keys), np.concatenate(self._red)
        last = keys.size - 1 - np.unique(keys[::-1], return_index=True)[1]
        keys, red = keys[last], red[last]
        keys = keys[red]
        codes = keys >> _POS_BITS
        pos = keys - (codes << _POS_BITS)
        return {int(c): np.sort(pos[codes == c]) for c in np.unique(codes).tolist()}


@dataclass
class FactorRows:
    """A factor as the redactor reads a design (:class:`~redactopt.release.plan.SequencePlan`'s ``result``)."""

    redact_prob: SparseRows


class LedgeredRelease:
    """One ``apply --ledger`` release: the ledger read, the design against the budget left, the draws'
    record and the ledger's new entry (module docstring).  :func:`redactopt.release.apply.apply_table`
    calls :meth:`redactor` after planning and :meth:`annotate` on the report, and :meth:`commit` before the
    output is renamed into place."""

    def __init__(self, ledger: Ledger, *, eps: float, total_eps: float | None, consistent: bool = False,
                 column: str | None = None, by: str | None = None, seeded: bool = False) -> None:
        if total_eps is None:
            total_eps = ledger.total_eps
        if total_eps is None:
            raise LedgerError(f"{ledger.path}: a new ledger needs --total-eps (the budget of all releases together)")
        if ledger.total_eps is not None and float(total_eps) != ledger.total_eps:
            raise LedgerError(f"{ledger.path}: the ledger's total budget is {ledger.total_eps:g}, not "
                              f"--total-eps {float(total_eps):g}")
        if not (math.isfinite(total_eps) and total_eps > 0):
            raise LedgerError(f"--total-eps must be a positive number, got {total_eps!r}")
        if ledger.empty and eps > total_eps:
            raise LedgerError(f"--eps {eps:g} exceeds --total-eps {total_eps:g}: the first release alone would spend "
                              "more than the whole budget")
        if consistent and ledger.empty:
            raise LedgerError("--consistent republishes an earlier release's values: the ledger has no release yet")
        if not ledger.empty and (column != ledger.column or by != ledger.by):
            raise LedgerError(f"{ledger.path}: the ledger's releases protect column {ledger.column!r} by "
                              f"{ledger.by!r}, not {column!r} by {by!r}")
        if seeded and any(e.randomness == "seeded" for e in ledger.releases):
            raise LedgerError(f"{ledger.path}: an earlier release was drawn from a --seed and the ledger keeps no seed "
                              "material, so it cannot show that two seeded releases draw independently: omit --seed")
        self.ledger, self.eps, self.total_eps = ledger, float(eps), float(total_eps)
        self.consistent, self.column, self.by, self.seeded = consistent, column, by, seeded
        self.choices: dict[int, SequenceChoice] = {}
        self.plan: ReleasePlan | None = None
        self.redactor_: LedgerRedactor | None = None
        self.entry: LedgerEntry | None = None

    def chain(self, alpha: Any, beta: Any) -> tuple[Any, Any]:
        """The chain of a later release: the one given, else the latest release's (public in its report,
        fitted on rows that release published with certainty)."""
        if alpha is not None or beta is not None or self.ledger.empty:
            return alpha, beta
        c = self.ledger.releases[-1].chain
        return c.alpha, c.beta

    # -- the design ---------------------------------------------------------------------------------------
    def redactor(self, plan: ReleasePlan, bits: BitSource, replan: Callable[[float], ReleasePlan]) -> Redactor:
        """Design every sequence against the ledger (``replan(eps)``: the fresh plan at another ε) and
        return the redactor that draws the release (and records what it left redacted)."""
        if plan.chain_class is not None:
            raise LedgerError("--ledger composes releases under one chain each: a class of chains (--robust, "
                              "--alpha LO:HI) is not available with it yet")
        self.plan = plan
        ids = [json_id(v) for v in plan.state.ids]
        lengths = [(sid, int(n)) for sid, n in zip(ids, plan.state.n.tolist())]
        led = self.ledger
        if not led.empty:
            self._same_rows(lengths)
        designed = plan.designed().tolist()
        if led.empty:
            for c in designed:
                F = plan.sparse_rows(c)
                priv = plan.private_of(c)
                ca = compose_audit([(plan.chain, F)], priv)
                self.choices[c] = SequenceChoice(F, F, "first", ca, dict(ca.cumulative), float(plan.mass[c]),
                                                 float(plan.upper_bound[c]))
            self.redactor_ = LedgerRedactor(plan, bits)
            return self.redactor_
        self._check_private(plan, ids, designed)
        fresh_plans: list[ReleasePlan] = [plan]
        spent = []
        for c in designed:
            sid, n, priv = ids[c], int(plan.n[c]), plan.private_of(c)
            earlier = led.factors(sid, n)
            ch = design_sequence(earlier, plan.chain, priv, [plan.sparse_rows(c)], eps=self.eps,
                                 total_eps=self.total_eps, consistent=self.consistent,
                                 published_bound=float(plan.upper_bound[c]))
            if ch is None:
                self._refuse_exceeded(earlier, plan.chain, priv, sid)
            # more candidates, unless the composition is the fresh design itself (the best a consistent release
            # can do up to the fresh design's gap; a fresh draw's own utility may still gain from others)
            if ch is None or ch.kind != "fresh" or not self.consistent:
                if len(fresh_plans) == 1:
                    fresh_plans += [replan(self.eps * f) for f in EPS_FRACTIONS]
                ch2 = design_sequence(earlier, plan.chain, priv, [p.sparse_rows(c) for p in fresh_plans],
                                      eps=self.eps, total_eps=self.total_eps, consistent=self.consistent,
                                      published_bound=float(plan.upper_bound[c]))
                if ch2 is not None and (ch is None or ch2.mass < ch.mass):
                    ch = ch2
            assert ch is not None
            self.choices[c] = ch
            if ch.kind == "nothing-new":
                spent.append((sid, max(ch.audit.cumulative.values())))
        if spent and len(spent) == len(designed):
            sid, worst = max(spent, key=lambda t: t[1])
            where = "" if sid is None else f" of sequence {sid!r}"
            raise ReleaseRefused(f"the budget is spent: within --total-eps {self.total_eps:g} nothing beyond what "
                                 f"releases 1-{len(led.releases)} published can be published (their cumulative leakage "
                                 f"is already {worst:.6g}{where}); nothing written")
        seqs = [SequencePlan(plan.state.ids[c], int(plan.n[c]), plan.private_of(c),
                             FactorRows(self.choices[c].factor) if c in self.choices else None)
                for c in range(len(ids))]
        keep = None
        if self.consistent:  # the records of the new blocks that no earlier output showed: the only ones redrawn
            parts = [np.zeros(0, dtype=np.int64)]
            for c, ch in self.choices.items():
                pos = np.concatenate([np.arange(st, st + b.shape[0], dtype=np.int64)
                                      for st, b in zip(ch.factor.starts, ch.factor.blocks)] or [parts[0]])
                parts.append((np.int64(c) << _POS_BITS) + pos[~led.published_by_any(ids[c], pos)])
            keep = np.sort(np.concatenate(parts))
        self.redactor_ = LedgerRedactor(seqs, bits, keep=keep)
        return self.redactor_

    def _same_rows(self, lengths: list[tuple[Any, int]]) -> None:
        led = self.ledger
        if lengths != led.lengths:
            rows = sum(n for _, n in lengths)
            diff = next(((a, b) for a, b in zip(lengths, led.lengths) if a != b), None)
            detail = (f"first difference: {diff[0]!r} against the ledger's {diff[1]!r}" if diff else
                      f"{len(lengths)} sequences against the ledger's {len(led.lengths)}")
            raise LedgerError(f"{led.path}: this release has {rows} rows in {len(lengths)} sequence(s), the ledger's "
                              f"releases {led.rows} in {len(led.lengths)} ({detail}): not the same rows")

    def _check_private(self, plan: ReleasePlan, ids: list, designed: list[int]) -> None:
        led = self.ledger
        now_private = {ids[c]: set(plan.private_of(c)) for c in designed}
        for sid, _ in led.lengths:
            missing = sorted(set(led.private_of(sid)) - now_private.get(sid, set()))
            if missing:
                where = "" if sid is None else f" of sequence {sid!r}"
                raise LedgerError(f"record {missing[0] + 1}{where} was private in an earlier release but is not "
                                  "private now: its budget still applies (flag it private again)")
        for c in designed:
            sid, n = ids[c], int(plan.n[c])
            Q = product_rows([f for _, f in led.factors(sid, n)])
            for p in plan.private_of(c):
                row = Q.rows(p, p + 1)[0]
                if not (row == 1.0).all():
                    where = "" if sid is None else f" of sequence {sid!r}"
                    raise LedgerError(f"record {p + 1}{where} is private now, but the earlier releases may have "
                                      f"published it (Pr(redacted) = {row[0]:.6g}, {row[1]:.6g}): it cannot be "
                                      "protected any more")

    def _refuse_exceeded(self, earlier: list, chain: MarkovChain, priv: tuple[int, ...], sid: Any) -> None:
        """No candidate passes, not even the earlier releases' composition itself: the budget is exceeded."""
        limit = min(self.eps, self.total_eps) if self.consistent else self.total_eps
        Q = _dense(product_rows([f for _, f in earlier]))
        same = as_sparse(np.where(Q > 0, 1.0, 0.0))  # a release adding nothing: judged under this chain too
        ca = compose_audit(earlier + [(chain, same)], priv, alone=False)
        p = max(ca.cumulative, key=lambda q: ca.cumulative[q])
        where = "" if sid is None else f" of sequence {sid!r}"
        chains = "" if len(ca.judges) == 1 else " (the worst under the ledger's chains and this release's)"
        raise ReleaseRefused(f"the budget is spent: releases 1-{len(self.ledger.releases)} already leak "
                             f"{ca.cumulative[p]:.6g} about record {p + 1}{where}{chains}, and the limit is {limit:g} "
                             f"(--total-eps {self.total_eps:g}{' and --eps' if self.consistent else ''}); "
                             "nothing written")

    # -- the report and the ledger ------------------------------------------------------------------------
    def annotate(self, rep: dict[str, Any], *, report: str | None, output: str | None) -> dict[str, Any]:
        """The report of the release with its ``ledger`` section (and, for a later release, the mechanisms
        it drew instead of the fresh plan's); builds the ledger's new entry."""
        plan = self.plan
        assert plan is not None and self.redactor_ is not None
        led = self.ledger
        number = len(led.releases) + 1
        ids = [json_id(v) for v in plan.state.ids]
        red = self.redactor_.redacted_positions()
        seqs: list[LedgerSequence] = []
        for c, ch in self.choices.items():
            priv = plan.private_of(c)
            seqs.append(LedgerSequence(ids[c], int(plan.n[c]), priv, ch.factor, red.get(c, np.zeros(0, np.int64)),
                                       [ch.alone[p] for p in priv], [ch.audit.cumulative[p] for p in priv]))
        total_rows = int(plan.n.sum())
        mass = sum(ch.mass for ch in self.choices.values())
        bound = float(plan.upper_bound.sum())
        alone = max(max(s.alone) for s in seqs)
        cumulative = max(max(s.cumulative) for s in seqs)
        entry = LedgerEntry(number, self.consistent, self.eps, self.total_eps, plan.chain, plan.method,
                            "seeded" if self.seeded else "secure", now(), report, output, alone, cumulative,
                            1.0 - mass / total_rows, bound / total_rows, seqs,
                            {sid: (0, int(n)) for sid, n in zip(ids, plan.state.n.tolist())})
        self.entry = entry
        if not led.empty:
            self._rewrite(rep, ids, number)
        history = [e.summary() for e in led.releases] + [entry.summary()]
        rep["ledger"] = {
            "file": led.path, "id": led.id, "release": number, "releases": history,
            "consistent": self.consistent, "total_eps": self.total_eps,
            "factors": list(range(1, number + 1)) if self.consistent else [number],
            "leakage_alone": alone, "cumulative": cumulative,
            "per_private": [{"sequence": s.id, "private": p + 1, "alone": a, "cumulative": cu}
                            for s in seqs for p, a, cu in zip(s.private, s.alone, s.cumulative)],
            "candidates": {str(ids[c]): ch.kind for c, ch in self.choices.items()},
            "utility": {"expected": 1.0 - mass / total_rows, "upper_bound": bound / total_rows,
                        "gap": max(0.0, (bound - (total_rows - mass)) / total_rows),
                        "bound_is": "the certified bound of any local mechanism whose leakage alone is at most "
                                    f"eps = {self.eps:g} (the release's own leakage never exceeds it)"},
            "note": ("cumulative: the exact leakage of every ledgered release together (the product of their "
                     "factors, docs/mathematics.md §14), judged under every chain of the ledger; "
                     + ("this release republishes the earlier releases' values: it reveals what the composition "
                        "reveals, alone or together with them" if self.consistent else
                        "this release's draws are fresh: alone it reveals its own factor")),
        }
        return rep

    def _rewrite(self, rep: dict[str, Any], ids: list, number: int) -> None:
        """A later release's report: every designed sequence's mechanism is what it drew (``--consistent``: the
        composition, with its factors), not the fresh plan's; the fresh plan's shapes are dropped."""
        from redactopt.io import mechanism_to_dict

        plan = self.plan
        assert plan is not None
        led = self.ledger
        rep["shapes"] = []
        rep["designs"] = dict(rep.get("designs") or {}, ledger="each sequence's design is chosen against the "
                              "ledger (report field 'ledger'); 'shapes' are not used")
        mass_total = 0.0
        rows_by_id = {r.get("id"): r for r in rep.get("sequences") or [] if isinstance(r, dict)}
        worst = (-math.inf, None)
        per_all = []
        for c in range(len(ids)):
            ch = self.choices.get(c)
            n = int(plan.n[c])
            if ch is None:
                continue
            priv = plan.private_of(c)
            shown = ch.composed if self.consistent else ch.factor
            util = 1.0 - ch.mass / n
            mass_total += ch.mass
            leak = max(ch.alone.values())
            mech = mechanism_to_dict(plan.chain, shown, private=priv, eps=self.eps, method=f"ledger:{ch.kind}",
                                     utility=util, leakage=leak,
                                     certificate={"upper_bound": float(plan.upper_bound[c]) / n,
                                                  "gap": max(0.0, float(plan.upper_bound[c]) / n - util),
                                                  "solver": "regions (fresh design at eps)", "scope": "all",
                                                  "stopped": False})
            if self.consistent:
                mech["factors"] = [{"release": i + 1, "chain": {"alpha": e.chain.alpha, "beta": e.chain.beta},
                                    "blocks": _blocks(f)}
                                   for i, (e, (_, f)) in enumerate(zip(led.releases, led.factors(ids[c], n)))]
                mech["factors"].append({"release": number, "chain": {"alpha": plan.chain.alpha,
                                                                     "beta": plan.chain.beta},
                                        "blocks": _blocks(ch.factor)})
            blocks = [[s + 1, s + b.shape[0]] for s, b in zip(shown.starts, shown.blocks)]
            per = [{"private": p + 1, "leakage": ch.alone[p]} for p in priv]
            per_all += [dict(x, sequence=ids[c]) for x in per]
            if leak > worst[0]:
                worst = (leak, ids[c])
            row = rows_by_id.get(ids[c])
            if row is not None:
                row.update(mechanism=mech, leakage=per, leakage_max=leak, blocks=blocks, groups=[], regions=[],
                           design_info={"ledger": ch.kind}, expected_utility=util,
                           window=[blocks[0][0], blocks[-1][1]] if blocks else None)
            if len(ids) == 1:
                rep.update(mechanism=mech, blocks=blocks, regions=[], design_info={"ledger": ch.kind},
                           window=[blocks[0][0], blocks[-1][1]] if blocks else None)
        total = int(plan.n.sum())
        ub = float(plan.upper_bound.sum()) / total
        expected = 1.0 - mass_total / total
        rep["utility"].update(expected=expected, upper_bound=ub, gap=max(0.0, ub - expected))
        rep["leakage"].update(max=worst[0], sequence=worst[1])
        if "per_private" in rep["leakage"] or len(ids) == 1:
            rep["leakage"]["per_private"] = per_all

    def commit(self) -> None:
        """Append the release to the ledger and write it (before the release's output is renamed into place)."""
        assert self.entry is not None and self.plan is not None
        led = self.ledger
        if led.empty:
            led.column, led.by = self.column, self.by
            led.lengths = [(json_id(v), int(n)) for v, n in zip(self.plan.state.ids, self.plan.state.n.tolist())]
            led.rows = int(self.plan.n.sum())
            led.total_eps = self.total_eps
        led.releases.append(self.entry)
        led.write()


def _blocks(rows: SparseRows) -> list[dict[str, Any]]:
    return [{"start": s + 1, "redact_prob": np.asarray(b, dtype=float).tolist()} for s, b in zip(rows.starts, rows.blocks)]
