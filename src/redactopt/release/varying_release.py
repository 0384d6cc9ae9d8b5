r"""``apply --varies-with``: a release designed for a chain whose transitions change with a level (issue 33).

The same passes as every binary release (:mod:`redactopt.release.apply`: scan, fit where the release
allows, plan, draw, write), with the chain of the levels:

* **Fit.** Per-level counts by distance to the private records (a
  :class:`~redactopt.release.zones.ZoneTally` over the pairs (level, state)), so the zone rule of
  docs/mathematics.md §10b runs unchanged — the pilot at the largest radius whose outside rows show
  enough changes of state, refits as long as the design stays inside its zone — and the chain of
  the levels is fitted only on rows the release publishes with certainty
  (:func:`redactopt.release.levels.fit_levels`).
* **Plan.** Each sequence with private records gets its own varying chain (its rows' levels,
  :meth:`~redactopt.release.levels.VaryingFit.chain_for`) and its own design
  (:func:`redactopt.engine.varying.design_varying`), verified exactly on each block under that chain;
  sequences whose rows have the same levels (so the same steps and, from them, the same first law)
  and the same private records share one design — the same problem.
* **Report.** ``redactopt.release.kapply-report/1`` (the report of a release whose chain is not one
  0/1 chain), whose mechanisms carry the varying chain; ``redactopt audit`` reads it and judges every
  design again under its sequence's chain, and the report's ``model_check`` states the leakage under
  the one chain fitted on the same rows.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from redactopt.engine.varying import design_varying
from redactopt.io import STDIO, stdin_as_file
from redactopt.judge.segments import block_segments
from redactopt.judge.leakage import leakage
from redactopt.kio import KREPORT_FORMAT
from redactopt.release.passes import (Span, check_release_paths, ordered_scan, plan_output, positions, scan, splices,
                                      write_csv, write_redacted)
from redactopt.release.report import fit_rows_text
from redactopt.release.bits import bit_source
from redactopt.release.codec import BinaryCodec
from redactopt.release.data import SequenceIndex, check_private_positions, ids_of
from redactopt.release.disclosure import plain_summary
from redactopt.release.fitplan import free_sequences, private_index
from redactopt.release.levels import LevelCoder, LevelSpec, VaryingFit, fit_levels, parse_varies_with
from redactopt.release.plan import SequencePlan
from redactopt.release.redactor import Redactor
from redactopt.release.refusals import refuse_flag_protected
from redactopt.release.report import NOT_FOR_RELEASE, write_report
from redactopt.release.reveals import finish_report
from redactopt.release.tables import DEFAULT_CHUNK_ROWS, TableReader, TableWriter
from redactopt.release.zones import Outside, PrivateIndex, ZoneTally, choose_zone
from redactopt.io import design_to_dict
from redactopt.model.chain import MarkovChain

__all__ = ["apply_varying_table", "LevelTally"]


@dataclass(frozen=True)
class LevelOutside(Outside):
    """:class:`~redactopt.release.zones.Outside` of the states, with the per-level counts ``levels[h, i, j]``."""

    levels: np.ndarray | None = None


class LevelTally:
    """A zone tally of the pairs (level, state), read as one of the states for the zone rule and as
    per-level counts for the fit (:func:`~redactopt.release.zones.choose_zone` takes it as a tally)."""

    def __init__(self, tally: ZoneTally, n_levels: int, k: int) -> None:
        self.tally, self.L, self.k = tally, n_levels, k

    def rows_outside(self, radius: int) -> int:
        return self.tally.rows_outside(radius)

    def outside(self, radius: int) -> LevelOutside:
        out = self.tally.outside(radius)
        L, k = self.L, self.k
        per = out.pairs.reshape(L, k, L, k).sum(axis=2)  # the step's level is its first row's
        rows = out.rows_by_state.reshape(L, k).sum(axis=0)
        first = out.first_seen.reshape(L, k)
        seen = np.where(first >= 0, first, np.iinfo(np.int64).max).min(axis=0)
        return LevelOutside(out.radius, per.sum(axis=0), np.zeros((k, k, k), dtype=np.int64), out.rows, rows,
                            np.where(seen == np.iinfo(np.int64).max, -1, seen), levels=per)


def _level_tally(reader: Any, index: SequenceIndex, state: Any, *, column: str, by: str | None, spec: LevelSpec,
                 private: PrivateIndex, designed: set[int]) -> tuple[LevelTally, dict[int, np.ndarray], tuple[str, ...]]:
    """One pass: the tally by distance of the pairs (level, state), and the level of every row of the designed
    sequences (their chains)."""
    coder = LevelCoder(spec)
    if spec.fixed_levels is None:  # the levels must be known before the tally (its states): read them first
        for chunk in reader.chunks([spec.column]):
            coder.codes(chunk.column(spec.column).to_pandas(), where=reader.label, first_row=chunk.first_row)
    L, k = len(coder.names), 2
    codec = BinaryCodec(column)
    counter = np.zeros(len(state.ids), dtype=np.int64)
    tally = ZoneTally(L * k, len(state.ids), with_triples=False)
    row_levels = {c: np.zeros(int(state.n[c]), dtype=np.int32) for c in designed}
    row = 0
    for chunk in reader.chunks(list(dict.fromkeys(c for c in (column, by, spec.column) if c))):
        x = codec.values(chunk, reader.label, ())
        lv = coder.codes(chunk.column(spec.column).to_pandas(), where=reader.label, first_row=chunk.first_row)
        codes = np.zeros(len(chunk), dtype=np.int64) if by is None else index.codes(ids_of(chunk, by, reader.label),
                                                                                      reader.label)
        pos = positions(None if by is None else codes, counter, len(chunk))
        tally = tally.merge(ZoneTally.of_chunk(lv * k + x, codes, private.distances(codes, pos), k=L * k,
                                               sequences=len(state.ids), first_row=row, with_triples=False))
        for c in set(np.unique(codes).tolist()) & designed:
            sel = codes == c
            row_levels[c][pos[sel]] = lv[sel]
        row += len(chunk)
    return LevelTally(tally, L, k), row_levels, tuple(coder.names)


@dataclass
class VaryingPlan:
    """The designs of a release for a varying chain: one per sequence with private records (code -> design)."""

    fit: VaryingFit
    designs: dict[int, Any]
    seconds: float
    computed: int = 0

    def reach(self, private: dict[int, list[int]]) -> int:
        """The farthest redactable row from the nearest private record of its sequence."""
        far = 0
        for c, d in self.designs.items():
            priv = np.asarray(private[c])
            for s, b in zip(d.redact_prob.starts, d.redact_prob.blocks):
                rows = np.arange(s, s + b.shape[0])
                far = max(far, int(np.abs(rows[:, None] - priv[None, :]).min(axis=1).max()))
        return far


def _plan(vfit: VaryingFit, row_levels: dict[int, np.ndarray], names: tuple[str, ...], private: dict[int, list[int]],
          *, eps: float, method: str, time_limit: float) -> VaryingPlan:
    t0 = time.perf_counter()
    table = np.array(names, dtype=object)
    designs = {}
    made: dict[tuple, Any] = {}  # sequences with the same rows' steps, first law and private records: one design
    todo = len({(lv.tobytes(), tuple(private[c])) for c, lv in row_levels.items()})
    deadline = time.monotonic() + float(time_limit)  # the design phase keeps the limit as a whole
    for c, lv in row_levels.items():
        key = (lv.tobytes(), tuple(private[c]))
        if key not in made:
            chain = vfit.chain_for(table[lv].tolist())
            share = max((deadline - time.monotonic()) / max(todo - len(made), 1), 0.05)
            made[key] = design_varying(chain, eps=eps, private=private[c], method=method, time_limit=share)
        designs[c] = made[key]
    return VaryingPlan(vfit, designs, time.perf_counter() - t0, len(made))


def apply_varying_table(source: str | os.PathLike[str], dest: str | os.PathLike[str], *, column: str, eps: float,
                        varies_with: str | LevelSpec, private: list[int] | None = None,
                        private_column: str | None = None, by: str | None = None, order_by: str | None = None,
                        method: str = "auto", seed: int | None = None, report: str | os.PathLike[str] | None = None,
                        force: bool = False, chunk_rows: int = DEFAULT_CHUNK_ROWS, time_limit: float = 60.0,
                        keep: list[str] | str | None = None) -> dict[str, Any]:
    """Release a 0/1 ``column`` private under the chain of the levels ``varies_with`` (module docstring).

    The options are :func:`~redactopt.release.apply.apply_table`'s; the chain is fitted on the rows the
    release publishes with certainty (per level), ``method`` is ``"auto"`` or ``"dim"``
    (:data:`~redactopt.engine.varying.VARYING_METHODS`).  Returns the report.
    """
    spec = parse_varies_with(varies_with) if isinstance(varies_with, str) else varies_with
    refuse_flag_protected([column], private_column)
    src, dst, rep_path = check_release_paths(source, dest, report, private=private, private_column=private_column,
                                             by=by, force=force)
    with stdin_as_file(source) as path:
        reader = TableReader(path, chunk_rows=chunk_rows, label="<stdin>" if str(source) == STDIO else None)
        reader.require(column, by, private_column, order_by, spec.column)
        plan_output(reader, column=column, by=by, order_by=order_by, private_column=private_column, keep=keep, rows=0)
        ordered = None
        if order_by is not None:
            state, ordered = ordered_scan(reader, column=column, by=by, private_column=private_column,
                                          order_by=order_by)
            binary: tuple[str, ...] = (column,) if reader.format == "csv" else ()
        else:
            state, binary = scan(reader, column=column, by=by, private_column=private_column)
        if state.rows == 0:
            raise ValueError("the input has no data rows")
        check_private_positions(state, private)
        pidx = private_index(state, private)
        by_seq = {0: sorted(set(private))} if private is not None else state.private
        if not any(by_seq.values()):
            raise ValueError("no record is marked private: nothing to protect (check --private-column)")
        rows_reader = reader if ordered is None else ordered.reader
        tally, row_levels, names = _level_tally(rows_reader, SequenceIndex(state.ids), state, column=column, by=by,
                                                spec=spec, private=pidx, designed=set(by_seq))

        def fit(out: LevelOutside) -> VaryingFit:
            return fit_levels(out.levels, names, (0, 1), spec, records=out.rows, sequences=len(state.ids))

        vfit, vplan, zone = choose_zone(tally, fit=fit, plan=lambda f: _plan(f, row_levels, names, by_seq, eps=eps,
                                                                            method=method, time_limit=time_limit),
                                        reach_of=lambda p: p.reach(by_seq), total_rows=state.rows,
                                        free_sequences=free_sequences(state, private))
        plans = [SequencePlan(v, int(state.n[c]), tuple(by_seq.get(c, ())), vplan.designs.get(c))
                 for c, v in enumerate(state.ids)]
        output, dropped = plan_output(reader, column=column, by=by, order_by=order_by, private_column=private_column,
                                      keep=keep, rows=state.rows, rank=None if ordered is None else ordered.rank)
        bits = bit_source(seed)
        redactor = Redactor(plans, bits)
        with TableWriter(dest, force=force) as writer:
            write = write_csv if splices(reader, writer, output) else write_redacted
            redacted = write(reader, writer, redactor, state.index(), Span.whole(state), column=column, by=by,
                             binary=binary, progress=None, output=output)
            figures = output.disclosure.figures() if output.disclosure is not None else []
            rep = _report(vplan, state, by_seq, redacted, zone=zone.to_dict(), eps=eps, seed=seed, bits=bits,
                          column=column, by=by, src=src, dst=dst, spec=spec, figures=figures)
            rep["columns"] = {"protected": [column], "written": output.columns if output.columns is not None
                              else "all", "not_covered": figures, "dropped": dropped}
            if order_by is not None:
                rep["order"] = {"by": order_by, "kind": ordered.kind if ordered else None,
                                "rows_moved": ordered.moved if ordered else 0}
            if rep_path is not None:
                rep = write_report(report, rep, force=force)  # type: ignore[arg-type]
            writer.commit()
    return rep


def _report(vplan: VaryingPlan, state: Any, by_seq: dict[int, list[int]], redacted: np.ndarray, *, zone: dict,
            eps: float, seed: int | None, bits: Any, column: str, by: str | None, src: Any, dst: Any,
            spec: LevelSpec, figures: list) -> dict[str, Any]:
    """The report (``redactopt.release.kapply-report/1`` with varying chains; module docstring)."""
    total = int(state.n.sum())
    designs, seqs, per, worst = [], [], [], (0.0, None)
    expected = float(total)
    for c, v in enumerate(state.ids):
        d = vplan.designs.get(c)
        entry: dict[str, Any] = {"id": None if v is None else str(v), "rows": int(state.n[c]),
                                 "private": [p + 1 for p in by_seq.get(c, [])]}
        if d is None:
            entry.update(design=None, leakage=0.0, redacted=0)
        else:
            entry.update(design=len(designs), leakage=float(d.leakage), redacted=int(redacted[c]))
            designs.append(design_to_dict(d))
            expected -= (1.0 - d.utility) * d.n
            per += [{"private": p + 1, "leakage": float(x), "sequence": entry["id"]}
                    for p, x in zip(d.private, d.per_private)]
            if d.leakage >= worst[0]:
                worst = (float(d.leakage), entry["id"])
        seqs.append(entry)
    red = int(redacted.sum())
    one = MarkovChain(vplan.fit.pooled.alpha, vplan.fit.pooled.beta)
    rep: dict[str, Any] = {
        "format": KREPORT_FORMAT, "input": str(src), "output": str(dst), "column": column, "rows": total,
        "states": ["0", "1"], "eps": float(eps), "method": "; ".join(sorted({d["method"] for d in designs})),
        "chain": {"varies_with": spec.text(), "source": "fitted", "fit": vplan.fit.to_dict(), "fit_rows": zone},
        "private": sorted(p + 1 for c in by_seq for p in by_seq[c]) if by is None else [
            p for s in seqs for p in s["private"]],
        "leakage": {"max": worst[0], "witness_sequence": worst[1], "per_private": per},
        "utility": {"expected": expected / total, "realised": 1.0 - red / total, "redacted": red,
                    "upper_bound": sum(d["certificate"]["upper_bound"] * d["n"] for d in designs) / total
                    + sum(s["rows"] for s in seqs if s["design"] is None) / total},
        "design_seconds": vplan.seconds, "designs_computed": vplan.computed, "seed": seed,
        "randomness": {"source": bits.description, "secure": bool(bits.secure)},
        "label": NOT_FOR_RELEASE if seed is not None else None,
        "warnings": list(vplan.fit.warnings),
        "model_check": {"alternatives": [_one_chain_check(vplan, by_seq, one)]},
    }
    if by is None:
        rep["mechanism"] = designs[0]
    else:
        rep["by"] = by
        rep["sequences"] = seqs
        rep["designs"] = designs
    # what the release reveals about the opt-out, the warnings in one list, the CONFIDENTIAL first line (§10d)
    rep = finish_report(rep, sequences=len(state.ids), with_private=sum(1 for c in by_seq if by_seq[c]), cover=None,
                        model=None)
    rep["summary"] = plain_summary(eps=eps, protected=[column], private_records=len(per),
                                   sequences=len(designs), model=f"chain that varies with {spec.text()} (per level)",
                                   fit_rows=fit_rows_text(zone), order_test=None, figures=figures, rows=total,
                                   redacted=red,
                                   expected_utility=expected / total)
    return rep


def _one_chain_check(vplan: VaryingPlan, by_seq: dict[int, list[int]], one: MarkovChain) -> dict[str, Any]:
    """The release's exact leakage under the one chain fitted on the same rows (the model it replaces)."""
    worst = 0.0
    for d in {id(d): d for d in vplan.designs.values()}.values():  # a design shared by sequences: judged once
        for seg in block_segments(d.redact_prob, tuple(d.private)):
            worst = max([worst] + [leakage(one, seg.rows, p - seg.lo).leakage for p in seg.private])
    t = vplan.fit.test
    return {"model": "one chain", "statistic": t.statistic, "df": t.df, "p_value": t.p_value, "leakage": worst}
