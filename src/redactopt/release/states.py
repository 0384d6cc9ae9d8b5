"""The release of a categorical column of a file, streamed like a 0/1 column.

:func:`apply_states_table` is the categorical case of :func:`redactopt.release.apply.apply_table`:
the same passes over the file, chunk by chunk, with the protected column read through a
:class:`~redactopt.release.codec.StatesCodec` (its values as text are the states) instead of as
0/1 values:

1. **Scan** (:func:`redactopt.release.apply.scan`): the values of every row are checked and
   labelled in order of first appearance; sequence lengths, transitions and private positions
   are counted.  ``--order-by`` sorts the needed columns in memory first, as for a 0/1 column.
2. **Fit**: a given chain; a separate public table (``fit_on``, scanned the same way); or, by
   default, the rows the release publishes with certainty
   (:func:`redactopt.release.zones.choose_zone` on one more pass,
   :func:`redactopt.release.apply.tally_zones`), with the fitted chain's states those rows show
   (:func:`redactopt.release.fitplan.fit_outside`).
3. **Plan** (:func:`redactopt.release.states_plan.kplan_of`): the one planner's groups, placements and
   design cache, each distinct mechanism verified again exactly on the caller's chain.
4. **Write**: a CSV release of every column copies the input's bytes and empties the redacted
   fields (:mod:`redactopt.release.splice`); every other release streams Arrow batches with the
   column's redacted entries null (:func:`redactopt.release.apply.write_redacted`).  Draws are the
   exact Bernoulli draws of the one :class:`~redactopt.release.redactor.Redactor`.

Memory grows with the chunk size, the number of sequences and the designs' mechanisms, not with
the file.  The report is the categorical release report (``redactopt.release.kapply-report/1``,
:func:`redactopt.release.states_plan.sequence_entries`), read by ``audit`` and the HTML page; for the
same rows, chain and seed it is the in-memory release's, value for value.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from redactopt import _progress
from redactopt._validate import check_eps
from redactopt.io import STDIO, stdin_as_file, write_text_atomic
from redactopt.model.chain import Chain
from redactopt.release.passes import (Output, Progress, Span, reader_columns, check_release_options, fit_states_on,
                                      protected_columns, scan_protected,
                                      check_release_paths, plan_output, redacted_rows, splices,
                                      tally_zones, write_csv, write_redacted)
from redactopt.release.bits import bit_source
from redactopt.release.codec import StatesCodec
from redactopt.release.data import ScanState, SequenceIndex, check_private_positions
from redactopt.release.fit import ChainFit
from redactopt.release.fitplan import fit_outside, free_sequences, private_index
from redactopt.release.states_plan import (KAPPLY_METHODS, kreach, kreport, ksummary, KPlan, kplan_of,
                                      sequence_entries)
from redactopt.release.guard import ReleaseGuard, count_real, decoy_records
from redactopt.release.redactor import Redactor
from redactopt.release.refusals import refuse_flag_protected
from redactopt.release.report import report_text, shape_entries
from redactopt.release.tables import DEFAULT_CHUNK_ROWS, MemoryReader, TableReader, TableWriter
from redactopt.release.zones import choose_zone
from redactopt.release.plan import within_time_limit

__all__ = ["apply_states_table", "apply_states_frame", "plan_states", "plan_states_release",
           "states_report", "released_column"]


def _private_rows(private: list[int] | None, flagged: list, ordered: Any) -> list[int]:
    """The 1-based rows of the file that hold the private records."""
    if private is None:
        return sorted(int(r) for part in flagged for r in np.asarray(part).tolist())
    pos = sorted(set(private))
    if ordered is None:
        return [p + 1 for p in pos]
    return (np.flatnonzero(np.isin(ordered.rank, pos)) + 1).tolist()


@dataclass
class Planned:
    """A categorical release planned on a reader (:func:`plan_states_release`): what its writing pass needs."""

    reader: Any
    codec: StatesCodec
    state: ScanState
    ordered: Any
    kplan: KPlan
    fit_source: dict[str, Any]
    private_rows: list[int]
    output: Output
    dropped: list[str]
    redactor: Redactor
    guard: ReleaseGuard

    def report(self, redacted: np.ndarray, *, seed: int | None, by: str | None, order_by: str | None,
               ) -> dict[str, Any]:
        return states_report(self.kplan, self.state, redacted, self.private_rows, seed=seed, codec=self.codec, by=by,
                             output=self.output, dropped=self.dropped, fit_source=self.fit_source,
                             order_by=order_by, written=self.output.columns or reader_columns(self.reader),
                             guard=self.guard)


def plan_states_release(reader: Any, *, column: str | None, protect: Any, bins: Any, eps: float,
                        private: list[int] | None, private_column: str | None, by: str | None, chain: Chain | None,
                        method: str, seed: int | None, time_limit: float, workers: int | None, keep: Any,
                        order_by: str | None, fit_on: Any, fit_kw: dict, progress: Progress | None,
                        guard: ReleaseGuard | None = None) -> Planned:
    """Check, scan, fit and plan a categorical release of ``reader`` (a file's or a table's in memory);
    ``fit_on``: a reader of a separate public table, or ``None``; ``guard``: the release's issue-36 checks
    and cover (:class:`~redactopt.release.guard.ReleaseGuard`)."""
    guard = ReleaseGuard() if guard is None else guard
    if method not in KAPPLY_METHODS:
        raise ValueError(f"method must be one of {', '.join(KAPPLY_METHODS)}, got {method!r}")
    eps = check_eps(eps)
    if chain is not None and not isinstance(chain, Chain):
        raise TypeError(f"chain must be a Chain, got {type(chain).__name__}")
    check_release_options(private=private, private_column=private_column, by=by)
    cols, bins_ = protected_columns(reader, column, protect, bins)
    refuse_flag_protected(cols, private_column)
    reader.require(by, private_column, order_by)
    plan_output(reader, column=cols, by=by, order_by=order_by, private_column=private_column, keep=keep,
                rows=0)  # bad --keep before anything is read
    guard.watch_columns(reader, exclude=[*cols, by, private_column], order_by=order_by)
    fitted = None if fit_on is None or chain is not None else fit_states_on(
        fit_on, columns=cols, bins=bins_, by=by, order_by=order_by, **fit_kw)
    codec = StatesCodec(cols, None if chain is None else [str(s) for s in chain.labels], bins=bins_)
    flagged: list = []
    state, ordered = scan_protected(reader, codec, by=by, private_column=private_column, order_by=order_by,
                                  progress=progress, private_rows=flagged, watch=guard.watch)
    guard.watched = True
    if state.rows == 0:
        raise ValueError(f"{reader.label}: the input has no data rows")
    check_private_positions(state, private)
    real_private = private
    guard.judge_time()
    state, private = guard.draw_cover(state, private)
    source = reader if ordered is None else ordered.reader

    def tally(index: Any) -> Any:  # one more pass, in sequence order
        return tally_zones(source, SequenceIndex(state.ids), index, Span.whole(state), column=codec.column, by=by,
                           codec=codec)

    kplan, fit_source = plan_states(state, codec, tally=tally, chain=chain, fitted=fitted, private=private,
                                    fit_kw=fit_kw, design=dict(eps=eps, method=method, time_limit=time_limit,
                                                               workers=workers))
    if fitted is not None:
        fit_source["table"] = fit_on.label
    guard.judge_model(kplan.release, fit=kplan.fit, counts=None, binary=False)
    design = dict(eps=eps, method=method, time_limit=time_limit, workers=workers)
    guard.price_cover(float(kplan.release.mass.sum()), lambda st, pv: float(
        kplan_of(kplan.chain, None, st, private=pv, **design).release.mass.sum()))
    designed = np.zeros(len(state.ids), dtype=bool)
    designed[kplan.release.designed()] = True
    codec.use_chain(kplan.chain, designed)
    output, dropped = plan_output(reader, column=cols, by=by, order_by=order_by, private_column=private_column,
                                  keep=keep, rows=state.rows, rank=None if ordered is None else ordered.rank,
                                  labels=[str(s) for s in kplan.chain.labels])
    return Planned(reader, codec, state, ordered, kplan, fit_source, _private_rows(real_private, flagged, ordered),
                   output, dropped, Redactor(kplan.release, bit_source(seed)), guard)


@within_time_limit
def apply_states_table(
    source: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    *,
    column: str | None = None,
    eps: float,
    private: list[int] | None = None,
    private_column: str | None = None,
    by: str | None = None,
    chain: Chain | None = None,
    method: str = "auto",
    seed: int | None = None,
    report: str | os.PathLike[str] | None = None,
    force: bool = False,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    time_limit: float = 60.0,
    confidence: float = 0.95,
    smoothing: str = "kt",
    simultaneous: bool = False,
    workers: int | None = None,
    keep: list[str] | str | None = None,
    order_by: str | None = None,
    fit_on: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
    protect: list[str] | str | None = None,
    bins: Any = None,
    cover: int | None = None,
    public_report: str | os.PathLike[str] | None = None,
    accept_model: bool = False,
) -> dict[str, Any]:
    """Release the categorical ``column`` of a CSV or Parquet file, or the columns ``protect`` together,
    streamed (module docstring); returns the report.  ``cover``, ``public_report``, ``accept_model``: as
    for :func:`redactopt.release.apply.apply_table` (issue 36).

    ``protect``: several columns protected together instead of ``column`` (a row's state is the
    tuple of their values, text joined by ``"|"``; a redaction empties all of them); ``bins``: numeric
    columns turned into categories first (``{column: Bins}`` or ``"COLUMN:EDGE,..."`` strings,
    :class:`~redactopt.release.columns.Bins`), written as their category.

    The options are :func:`redactopt.release.apply.apply_table`'s (``private`` 0-based); ``chain``
    (a :class:`~redactopt.model.chain.Chain`) is the chain, else it is fitted (``confidence``,
    ``smoothing``, ``simultaneous``: :func:`redactopt.release.fit.fit_counts`); ``method`` is one of
    :data:`redactopt.release.states_plan.KAPPLY_METHODS`.  A value the chain does not have, in a sequence
    with private records, is an error naming its row (nothing is written).
    """
    src, dst, rep_path = check_release_paths(source, dest, report, private=private, private_column=private_column,
                                             by=by, force=force)
    fit_kw = dict(confidence=confidence, simultaneous=simultaneous, smoothing=smoothing)
    guard = ReleaseGuard(cover=cover, accept_model=accept_model, seed=seed, public_report=public_report, force=force)
    guard.check_paths(source, dest, report)
    with stdin_as_file(source) as path:
        reader = TableReader(path, chunk_rows=chunk_rows, label="<stdin>" if str(source) == STDIO else None)
        public = None if fit_on is None else TableReader(fit_on, chunk_rows=chunk_rows)
        p = plan_states_release(reader, column=column, protect=protect, bins=bins, eps=eps, private=private,
                                private_column=private_column, by=by, chain=chain, method=method, seed=seed,
                                time_limit=time_limit, workers=workers, keep=keep, order_by=order_by, fit_on=public,
                                fit_kw=fit_kw, progress=progress, guard=guard)
        binary = (private_column,) if private_column and reader.format == "csv" else ()
        with TableWriter(dest, force=force) as writer:
            redacted = (write_csv if splices(reader, writer, p.output, p.codec) else write_redacted)(
                reader, writer, p.redactor, p.state.index(), Span.whole(p.state), column=p.codec.column, by=by,
                binary=binary, progress=progress, output=p.output, codec=p.codec)
            rep = p.report(redacted, seed=seed, by=by, order_by=order_by)
            rep = {"notice": rep["notice"], "input": str(source), "output": str(dest), "input_format": reader.format,
                   **rep}
            if rep_path is not None:  # before the output appears: a report that cannot be written leaves nothing
                write_text_atomic(report, report_text(rep), force=force)  # type: ignore[arg-type]
            guard.write_public(rep)
            writer.commit()
    return rep


@within_time_limit
def apply_states_frame(table: pd.DataFrame, *, column: str | None = None, eps: float, private: Any = None,
                       private_column: str | None = None, by: str | None = None, chain: Chain | None = None,
                       method: str = "auto", seed: int | None = None, time_limit: float = 60.0,
                       confidence: float = 0.95, smoothing: str = "kt", simultaneous: bool = False,
                       workers: int | None = None, protect: list[str] | str | None = None, bins: Any = None,
                       keep: list[str] | str | None = None, order_by: str | None = None,
                       fit_on: pd.DataFrame | None = None, chunk_rows: int = DEFAULT_CHUNK_ROWS,
                       cover: int | None = None, accept_model: bool = False,
                       ) -> tuple[pd.DataFrame, dict[str, Any]]:
    """:func:`apply_states_table` on a pandas DataFrame in memory (the same passes, chunk by chunk, through a
    :class:`~redactopt.release.tables.MemoryReader`); returns the released table and the report.

    The released table holds the written columns in the input's order, the same rows; a protected
    column gets missing values for ⊥ (integers and booleans as pandas' nullable types, text as
    ``None``, a categorical column keeps its categories) and a binned one its categories as text.
    ``private`` may be one position or a list (0-based); ``fit_on`` a DataFrame.
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table must be a pandas DataFrame, got {type(table).__name__}")
    if len(table) == 0:
        raise ValueError("no data rows")
    if isinstance(private, (int, np.integer)) and not isinstance(private, bool):
        private = [int(private)]
    # a DataFrame's own checks first (as for a class release): named columns exist, no value is missing,
    # ids of one type (1 and "1" are one sequence's text), the private flags mark a row
    from redactopt.release.table_release import complete_column, private_flags, table_protected_columns, table_sequences

    cols, _ = table_protected_columns(table, column, protect, bins)
    for c in (by, order_by, private_column):
        if c is not None and c not in table.columns:
            raise ValueError(f"column {c!r} not found; the columns are {list(map(str, table.columns))}")
    for c in cols:
        complete_column(table, c)
    table_sequences(table, by)
    private_flags(table, private, private_column, by)
    reader = MemoryReader(table, chunk_rows=chunk_rows, label="table")
    public = None if fit_on is None else MemoryReader(fit_on, label="<table>")
    p = plan_states_release(reader, column=column, protect=protect, bins=bins, eps=eps, private=private,
                            private_column=private_column, by=by, chain=chain, method=method, seed=seed,
                            time_limit=time_limit, workers=workers, keep=keep, order_by=order_by, fit_on=public,
                            fit_kw=dict(confidence=confidence, simultaneous=simultaneous, smoothing=smoothing),
                            progress=None, guard=ReleaseGuard(cover=cover, accept_model=accept_model, seed=seed))
    k = len(p.state.ids)
    counter = np.zeros(k, dtype=np.int64)
    redacted = np.zeros(k, dtype=np.int64)
    mask = np.zeros(len(table), dtype=bool)
    read = list(dict.fromkeys(p.codec.columns + (p.output.columns or list(map(str, table.columns)))))
    for chunk, states, codes, m in redacted_rows(reader, p.redactor, p.state.index(), column=p.codec.column, by=by,
                                                 counter=counter, columns=read, rank=p.output.rank, codec=p.codec):
        mask[chunk.first_row - 1 : chunk.first_row - 1 + len(chunk)] = m
        redacted += np.bincount(codes[m], minlength=k) if codes is not None else [int(m.sum())]
        p.output.observe(chunk, states, m)
    written = p.output.columns or list(table.columns)
    out = table[written].copy()
    for c in p.codec.columns:
        col = table[c]
        if c in p.codec.bins:
            col = pd.Series(p.codec.bins[c].apply(col, where="table"), index=table.index, dtype=object)
        out[c] = released_column(col, mask)
    return out, p.report(redacted, seed=seed, by=by, order_by=order_by)


def released_column(col: pd.Series, mask: np.ndarray) -> pd.Series:
    """A pandas column with the redacted entries missing (integers and booleans become nullable, text stays
    text, a categorical column keeps its categories)."""
    if isinstance(col.dtype, pd.CategoricalDtype) or pd.api.types.is_float_dtype(col.dtype):
        out = col.copy()
        out[mask] = np.nan
        return out
    if pd.api.types.is_bool_dtype(col.dtype):
        out = col.astype("boolean")
    elif pd.api.types.is_integer_dtype(col.dtype):
        out = col.astype("Int64")
    else:
        out = col.astype(object)
        out[mask] = None
        return out
    out[mask] = pd.NA
    return out


@_progress.timed("fit")
def plan_states(state: ScanState, codec: StatesCodec, *, tally: Any, chain: Chain | None, fitted: ChainFit | None,
                private: list[int] | None, fit_kw: dict, design: dict) -> tuple[KPlan, dict[str, Any]]:
    """The plan at the chain given, fitted on a public table, or fitted on the rows the release publishes with
    certainty (``tally(private_index)``: the zone tally, one more pass in sequence order); and where the
    chain came from.  ``design``: :func:`~redactopt.release.states_plan.kplan_of`'s options."""

    def plan_for(fit: ChainFit | Chain) -> KPlan:
        ch = fit if isinstance(fit, Chain) else fit.chain
        return kplan_of(ch, None if isinstance(fit, Chain) else fit, state, private=private, **design)

    if chain is not None:
        return plan_for(chain), {"source": "given"}
    if fitted is not None:
        return plan_for(fitted), {"source": "fit-on", "table": "<table>", "rows": fitted.records,
                                  "transitions": int(fitted.counts.sum()), "sequences": fitted.sequences}
    index = private_index(state, private)
    if not index.keys.size:
        raise ValueError("no record is marked private: nothing to protect (check --private-column)")
    counted = tally(index)

    def fit_zone(out: Any) -> ChainFit:
        return fit_outside(out, codec.fit_labels(out.states), codec.labels, len(state.ids), **fit_kw)

    _, kplan, zone = choose_zone(counted, fit=fit_zone, plan=plan_for, reach_of=kreach, total_rows=state.rows,
                                 free_sequences=free_sequences(state, private))
    return kplan, zone.to_dict()


def states_report(kplan: KPlan, state: ScanState, redacted: np.ndarray, private_rows: list[int], *,
                  seed: int | None, codec: StatesCodec, by: str | None, output: Any, dropped: list[str],
                  fit_source: dict[str, Any], order_by: str | None, written: list[str],
                  guard: ReleaseGuard | None = None) -> dict[str, Any]:
    """The categorical release report of a streamed release (``redacted``: per sequence; ``private_rows``:
    1-based rows of the table), with its columns, where the chain came from, its distinct designs
    (``shapes``, each on its own sub-problem), what it reveals and the plain summary."""
    guard = ReleaseGuard() if guard is None else guard
    plan = kplan.release
    privs = [tuple(sorted(plan.private_of(c))) for c in range(len(state.ids))]
    rows_of, worst, expected = sequence_entries(kplan, list(state.ids), [int(m) for m in state.n], privs, redacted)
    rep = kreport(kplan, rows_of, worst, private_rows, state.rows, int(redacted.sum()), expected, seed=seed,
                   column=codec.column, by=by)
    rep["columns"] = {"protected": list(codec.columns), "written": list(written),
                      "not_covered": output.disclosure.figures() if output.disclosure is not None else [],
                      "dropped": dropped, "bins": [b.to_dict() for b in codec.bins.values()]}
    rep["chain"]["fit_rows"] = fit_source
    if order_by is not None:
        rep["order"] = {"by": order_by}
    # every distinct design on its own sub-problem (for the public report; without its timings, so that the
    # same rows give the same report)
    rep["shapes"] = [{k: v for k, v in e.items() if k != "design_info"} for e in shape_entries(plan)]
    _, holding = count_real(guard) if guard.real is not None else (0, sum(1 for s in rows_of if s["private"]))
    if guard.cover is not None:
        rep["leakage"]["decoy_records"] = decoy_records(guard)
    rep = guard.finish(rep, sequences=len(state.ids), with_private=holding)
    rep["summary"] = ksummary(rep, kplan, list(codec.columns), fit_source, sequences=holding,
                               positions=rep["reveals"]["short"])
    return rep
