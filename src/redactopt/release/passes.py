"""The passes of a streamed release that every driver shares: scan, tally, write (docs/architecture.md §6).

A release reads its table in chunks (:mod:`redactopt.release.tables`) and makes these passes over it:

* **scan** (:func:`scan`, :func:`scan_table`, :func:`scan_states`, :func:`ordered_scan`,
  :func:`plan_scan`): every value checked, the records of each sequence, the transitions and the
  private flags counted into a :class:`~redactopt.release.data.ScanState`;
* **tally** (:func:`tally_zones`): the transitions outside the zones around the private records,
  for a fit on the rows a release publishes with certainty (:mod:`redactopt.release.zones`);
* **write** (:func:`write_redacted`, :func:`write_csv`, :func:`splices`, :func:`redacted_rows`):
  the exact draws of the designs' blocks (:class:`~redactopt.release.redactor.Redactor`) written as
  Arrow batches, or spliced into a copy of a CSV file's bytes.

The drivers (:func:`redactopt.release.apply.apply_table` for a 0/1 column,
:func:`redactopt.release.states.apply_states_table` for states, the Dask and varying releases) plan
between the passes; the argument checks every driver makes are here too
(:func:`check_release_options`, :func:`check_release_paths`).  Positions are 0-based.
"""

from __future__ import annotations

__all__ = ["Progress", "scan", "scan_table", "scan_states", "ordered_scan", "plan_scan", "fit_on_counts", "Span",
           "tally_zones", "redacted_rows", "Output", "write_redacted", "write_csv", "splices", "plan_output",
           "reader_columns", "check_release_options", "check_release_paths",
           "scan_protected", "protected_columns", "fit_states_on"]

import concurrent.futures
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from redactopt import _progress
from redactopt.io import STDIO, check_input_path, check_output_path
from redactopt.release.columns import Bins, parse_bins, parse_columns
from redactopt.release.fit import ChainFit, fit_counts
from redactopt.release.codec import StatesCodec
from redactopt.release.codec import BinaryCodec, binary_values
from redactopt.release.columns import output_columns
from redactopt.release.disclosure import Disclosure
from redactopt.release.fitplan import plan_fitted
from redactopt.release.guard import ReleaseGuard
from redactopt.release.order import Ordered, sequence_order
from redactopt.release.data import MAX_TRIPLE_STATES, ScanState, SequenceIndex, TextStates, group_ranks, ids_of
from redactopt.release.plan import ReleasePlan, plan_release
from redactopt.release.redactor import Redactor
from redactopt.release.report import SEQUENCE_FORMATS, sequences_path
from redactopt.release.splice import Irregular, Targets, count_rows, splice_csv
from redactopt.release.zones import PrivateIndex, ZoneTally
from redactopt.release.tables import (DEFAULT_CHUNK_ROWS, Chunk, TableReader, TableWriter, TextValues, open_binary,
                                      prefetched, table_format)

#: Chunks read ahead of the one being redacted and written (:func:`~redactopt.release.tables.prefetched`).
READ_AHEAD = 2

#: ``progress(stage, done, total)``: called as a release goes (``total`` is ``None`` when unknown).
Progress = Callable[[str, int, "int | None"], None]


def _columns_needed(column: str | list[str], by: str | None, private_column: str | None) -> list[str]:
    cols = [column] if isinstance(column, str) else list(column)
    for c in (by, private_column):
        if c is not None and c not in cols:
            cols.append(c)
    return cols


def _scan(reader: Any, *, column: str, by: str | None, private_column: str | None,
          progress: Progress | None, binary: tuple[str, ...], codec: Any,
          private: PrivateIndex | None = None, private_rows: list | None = None, watch: Any = None,
          ) -> tuple[ScanState, ZoneTally | None]:
    state = ScanState()
    tally = None if private is None else ZoneTally(2, 1)
    where = reader.label
    needed = _columns_needed(codec.columns, by, private_column)
    watched = [] if watch is None else [c for c in watch.columns if c not in needed]
    for chunk in reader.chunks(needed + watched, binary=binary):
        values = codec.values(chunk, where, binary)
        ids = ids_of(chunk, by, where) if by else None
        if watch is not None:  # the time columns (:class:`~redactopt.release.refusals.TimeWatch`)
            watch.add(chunk, ids)
        flags = None
        if private_column:
            flags = binary_values(chunk, private_column, where, read_as_int=private_column in binary)
            if private_rows is not None:
                private_rows.append(chunk.first_row + np.flatnonzero(flags))
        if tally is not None and private is not None:  # one sequence, its private positions known: count here
            pos = state.rows + np.arange(len(chunk), dtype=np.int64)
            codes = np.zeros(len(chunk), dtype=np.int64)
            tally = tally.merge(ZoneTally.of_chunk(values, codes, private.distances(codes, pos), k=2, sequences=1,
                                                   first_row=state.rows))
        state = state.merge(ScanState.of_chunk(values, ids, flags, k=codec.k))
        if progress is not None:
            progress("scan", state.rows, None)
        if by and _progress.active():
            _progress.report("sequences", len(state.ids), None)
    return state, tally


@_progress.timed("read")
def scan(reader: Any, *, column: str, by: str | None = None, private_column: str | None = None,
         progress: Progress | None = None, private: PrivateIndex | None = None, codec: Any = None,
         private_rows: list | None = None, watch: Any = None) -> tuple[ScanState, tuple[str, ...]]:
    """:func:`scan_table`, and the binary columns a CSV file spells as integers (read them with ``binary``).

    ``private`` (one sequence, positions known, a 0/1 column): the scan also counts the
    transitions by their distance to the private records (:class:`~redactopt.release.zones.ZoneTally`),
    stored as the scan state's ``tally``, so that fitting needs no second pass.  ``codec``
    reads the protected column (:mod:`redactopt.release.codec`; default: a 0/1 column); a
    :class:`~redactopt.release.codec.StatesCodec` learns its labels here (the caller freezes it).
    ``private_rows`` (a list): receives the 1-based rows flagged by ``private_column``, per chunk.
    ``watch`` (a :class:`~redactopt.release.refusals.TimeWatch`): sees the time columns of every chunk.
    """
    codec = BinaryCodec(column) if codec is None else codec
    reader.require(*codec.columns, by, private_column)
    binary = tuple(c for c in (column if codec.binary else None, private_column) if c) \
        if reader.format == "csv" else ()
    kw = dict(column=column, by=by, private_column=private_column, progress=progress,
              private=private if codec.binary else None, codec=codec, watch=watch)
    rows: list = []
    try:
        state, tally = _scan(reader, binary=binary, private_rows=rows, **kw)
    except TextValues:  # "true", "1.0", " 1 ", a value to report as written: read the column as text
        binary = ()
        if not codec.binary:  # its labels start again (the scan stopped part-way)
            codec.reset()
        if watch is not None:
            watch.reset()
        rows.clear()
        state, tally = _scan(reader, binary=binary, private_rows=rows, **kw)
    if private_rows is not None:
        private_rows.extend(rows)
    state.tally = tally
    return state, binary


def scan_table(reader: Any, *, column: str, by: str | None = None, private_column: str | None = None,
               progress: Progress | None = None) -> ScanState:
    """First pass: validate every value and collect the :class:`~redactopt.release.data.ScanState`.

    Reads only ``column``, ``by`` and ``private_column``.  ``progress("scan", rows so far,
    None)`` is called after every chunk.
    """
    return scan(reader, column=column, by=by, private_column=private_column, progress=progress)[0]


def scan_states(reader: Any, *, column: str, by: str | None = None, labels: list[str] | None = None,
                progress: Progress | None = None) -> tuple[ScanState, list[str]]:
    """The scan of a categorical column, chunk by chunk: its values as text are the states, labelled in
    order of first appearance (or ``labels``, fixed); the :class:`~redactopt.release.data.ScanState`
    counts their transitions per sequence of ``by`` (:func:`scan_table` for a 0/1 column)."""
    reader.require(column, by)
    coder = TextStates(labels, fixed=labels is not None, empty_is_missing=reader.format == "csv")
    state = ScanState()
    where = reader.label
    for chunk in reader.chunks(_columns_needed(column, by, None)):
        codes = coder.codes(chunk.column(column), column=column, first_row=chunk.first_row, where=where)
        ids = ids_of(chunk, by, where) if by else None
        state = state.merge(ScanState.of_chunk(codes, ids, k=max(2, len(coder.labels))))
        if progress is not None:
            progress("scan", state.rows, None)
    return state, coder.labels


@dataclass(frozen=True)
class Span:
    """Where some rows lie in their sequences: the records of each sequence before them and after them.

    A whole table spans ``zeros`` to the scan's counts; a partition of a dataset the counts
    before and after it (:mod:`redactopt.release.dask_backend`).
    """

    start: np.ndarray
    end: np.ndarray

    @staticmethod
    def whole(state: ScanState) -> "Span":
        return Span(np.zeros(len(state.ids), dtype=np.int64), state.n.copy())

    @property
    def rows(self) -> int:
        return int((self.end - self.start).sum())


def positions(codes: np.ndarray | None, counter: np.ndarray, m: int) -> np.ndarray:
    """0-based positions in their sequences of the next ``m`` rows (``counter``: rows of each sequence so far, updated)."""
    if codes is None:
        pos = counter[0] + np.arange(m, dtype=np.int64)
        counter[0] += m
        return pos
    rank, _ = group_ranks(codes)
    pos = counter[codes] + rank
    counter += np.bincount(codes, minlength=counter.shape[0])
    return pos


def ranked(rank: np.ndarray, chunk: Chunk, codes: np.ndarray | None, counter: np.ndarray) -> np.ndarray:
    """Positions of a chunk's rows from ``rank`` (``--order-by``: row ``r`` of the input is record ``rank[r]``
    of its sequence); ``counter`` is advanced as by :func:`positions`."""
    m = len(chunk)
    if codes is None:
        counter[0] += m
    else:
        counter += np.bincount(codes, minlength=counter.shape[0])
    return rank[chunk.first_row - 1 : chunk.first_row - 1 + m]


def redacted_rows(reader: Any, redactor: Redactor, index: SequenceIndex, *, column: str, by: str | None,
                  counter: np.ndarray, binary: tuple[str, ...] = (), columns: list[str] | None = None,
                  read_ahead: int = 0, rank: np.ndarray | None = None, codec: Any = None,
                  ) -> Iterator[tuple[Chunk, np.ndarray, np.ndarray | None, np.ndarray]]:
    """Second pass: ``(chunk, states, codes, redacted)`` for every chunk of ``columns`` (all when ``None``).

    ``states``: each row's state of the chain (``-1``: a value the chain does not have, in a
    sequence without private records; :meth:`~redactopt.release.codec.StatesCodec.chain_states`).
    ``counter`` holds the rows of each sequence before the data (zeros for a whole table)
    and is advanced as the chunks go; ``codes`` is ``None`` without ``by``.  With
    ``read_ahead`` the chunks are read that many ahead in a thread (:func:`prefetched`).
    ``rank``: the rows' positions in their sequences (``--order-by``) instead of file order.
    """
    codec = BinaryCodec(column) if codec is None else codec
    where = reader.label
    chunks = reader.chunks(columns, binary=binary)
    for chunk in (prefetched(chunks, read_ahead) if read_ahead else chunks):
        codes = None if by is None else index.codes(ids_of(chunk, by, where), where)
        states = codec.chain_states(codec.values(chunk, where, binary), chunk, codes, where)
        pos = positions(codes, counter, len(chunk)) if rank is None else ranked(rank, chunk, codes, counter)
        mask = redactor.redact(codes, pos, states if codec.binary else np.maximum(states, 0))
        yield chunk, states, codes, mask


def tally_zones(reader: Any, index: SequenceIndex, private: PrivateIndex, span: Span, *, column: str,
                by: str | None, binary: tuple[str, ...] = (), codec: Any = None, first_row: int = 0) -> ZoneTally:
    """The transitions of the rows of ``reader`` (in sequence order) by their distance to the private
    records (:class:`~redactopt.release.zones.ZoneTally`; reads ``column`` and ``by`` only), in the
    scan's state codes (``codec``, default a 0/1 column); ``first_row``: the number of the reader's
    first row among all rows (a partition of a dataset starts later), so that "first seen" is the
    dataset's."""
    codec = BinaryCodec(column) if codec is None else codec
    k = span.start.shape[0]
    states = codec.k
    triples = states <= MAX_TRIPLE_STATES
    counter = span.start.copy()
    tally = ZoneTally(states, k, triples)
    where = reader.label
    row = first_row
    for chunk in reader.chunks(_columns_needed(codec.columns, by, None), binary=binary):
        values = codec.values(chunk, where, binary)
        codes = np.zeros(len(chunk), dtype=np.int64) if by is None else index.codes(ids_of(chunk, by, where), where)
        pos = positions(None if by is None else codes, counter, len(chunk))
        tally = tally.merge(ZoneTally.of_chunk(values, codes, private.distances(codes, pos), k=states, sequences=k,
                                               first_row=row, with_triples=triples))
        row += len(chunk)
    return tally


def released_batch(chunk: Chunk, values: np.ndarray, mask: np.ndarray, column: str, *, as_int8: bool) -> Any:
    """The chunk with the 0/1 ``column`` redacted (:meth:`redactopt.release.codec.BinaryCodec.released`)."""
    return BinaryCodec(column).released(chunk, values, mask, as_int8=as_int8)


@dataclass
class Output:
    """What a release writes: ``columns`` (``None``: every column, the input's layout exactly) and the
    :class:`~redactopt.release.disclosure.Disclosure` of the written columns the guarantee does not cover."""

    columns: list[str] | None
    disclosure: Disclosure | None = None
    rank: np.ndarray | None = None
    #: the input's number of the first row written (a partition of a dataset starts later)
    first_row: int = 0

    def read(self, reader: Any) -> list[str] | None:
        """The columns to read for writing (the written ones)."""
        return self.columns

    def header(self, reader: Any) -> list[str]:
        if self.columns is None:
            return list(reader.layout.header) if reader.format == "csv" else list(reader.columns)
        # a kept row id without a name (the UCI layout) keeps its header one field shorter than its rows
        index = reader.layout.index_name if reader.format == "csv" and reader.implicit_index else None
        return [c for c in self.columns if c != index]

    def observe(self, chunk: Chunk, values: np.ndarray, mask: np.ndarray) -> None:
        """Measure a written chunk (its rows follow the ones observed before); ``values``: the chain's
        states (``-1``: none of them, not counted as published)."""
        if self.disclosure is not None and self.disclosure.columns:
            rows = self.first_row + np.arange(len(chunk), dtype=np.int64)
            known = values >= 0
            self.disclosure.add({c: chunk.column(c) for c in self.disclosure.columns}, np.where(known, values, 0),
                                known & ~mask, rows)
        self.first_row += len(chunk)


@_progress.timed("write")
def write_redacted(reader: Any, writer: TableWriter, redactor: Redactor, index: SequenceIndex, span: Span, *,
                   column: str, by: str | None, binary: tuple[str, ...] = (),
                   progress: Progress | None = None, output: Output | None = None, codec: Any = None) -> np.ndarray:
    """Second pass through Arrow batches: redact and write every chunk; returns the redacted count per sequence.

    ``span``: where the rows lie in their sequences.  ``output``: the columns written (default:
    all) and the figures of the uncovered ones.  ``progress("release", rows written, all rows)``
    is called after every chunk.
    """
    output = Output(None) if output is None else output
    codec = BinaryCodec(column) if codec is None else codec
    k = span.start.shape[0]
    counter = span.start.copy()
    redacted = np.zeros(k, dtype=np.int64)
    csv_out = writer.format == "csv"
    from_csv = reader.format == "csv"
    if csv_out:
        writer.write_header(output.header(reader), writer.delimiter)
    # CSV to CSV keeps the text as written; CSV to Parquet writes the 0/1 column as int8
    read_binary = () if (from_csv and csv_out) else binary
    for chunk, values, codes, mask in redacted_rows(reader, redactor, index, column=column, by=by,
                                                    counter=counter, binary=read_binary, read_ahead=READ_AHEAD,
                                                    columns=output.read(reader), rank=output.rank, codec=codec):
        redacted += np.bincount(codes[mask], minlength=k) if codes is not None else [int(mask.sum())]
        output.observe(chunk, values, mask)
        as_int8 = from_csv and not csv_out and codec.binary
        writer.write_batch(codec.released(chunk, values, mask, as_int8=as_int8), delimiter=writer.delimiter)
        if progress is not None:
            progress("release", int((counter - span.start).sum()), span.rows)
    if not np.array_equal(counter, span.end):
        raise ValueError(f"{reader.label}: the input changed while it was being read (row counts differ)")
    return redacted


def splice_targets(reader: TableReader, redactor: Redactor, index: SequenceIndex, span: Span, *,
                   by: str | None, rank: np.ndarray | None = None) -> Targets:
    """The rows of the file that lie in a design's block (the only ones a release can redact).

    Without ``by`` (and without ``rank``) they are the blocks' rows; otherwise one pass over
    the ``by`` column finds the rows of each sequence's blocks.
    """
    if by is None and rank is None:
        pos = redactor.positions_in_blocks(0, int(span.start[0]), int(span.end[0])) if span.start.size else \
            np.zeros(0, dtype=np.int64)
        return Targets(pos - span.start[0] if span.start.size else pos, np.zeros(pos.shape[0], dtype=np.int64), pos)
    where = reader.label
    counter = span.start.copy()
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for chunk in reader.chunks([by] if by else [reader.columns[0]]):
        codes = index.codes(ids_of(chunk, by, where), where) if by else np.zeros(len(chunk), dtype=np.int64)
        c = codes if by else None
        pos = positions(c, counter, len(chunk)) if rank is None else ranked(rank, chunk, c, counter)
        hit = np.flatnonzero(redactor.inside(codes, pos))
        if hit.size:
            found.append((chunk.first_row - 1 + hit, codes[hit], pos[hit]))
    if not found:
        z = np.zeros(0, dtype=np.int64)
        return Targets(z, z, z)
    return Targets(*(np.concatenate(parts) for parts in zip(*found)))


@_progress.timed("write")
def write_csv(reader: TableReader, writer: TableWriter, redactor: Redactor, index: SequenceIndex, span: Span, *,
              column: str, by: str | None, binary: tuple[str, ...] = (),
              progress: Progress | None = None, output: Output | None = None, codec: Any = None) -> np.ndarray:
    """A CSV release of a CSV file that writes every column: its bytes with the redacted fields emptied
    (:mod:`redactopt.release.splice`), or, for a file whose rows cannot be found from its bytes,
    :func:`write_redacted`."""
    assert reader.layout is not None
    output = Output(None) if output is None else output
    codec = BinaryCodec(column) if codec is None else codec
    targets = splice_targets(reader, redactor, index, span, by=by, rank=output.rank)
    total = span.rows

    def tick(rows: int) -> None:
        if progress is not None:
            progress("release", rows, total)

    try:
        with open_binary(reader.path) as src:
            mask = splice_csv(src, writer.binary(), layout=reader.layout, column=column, targets=targets,
                              redact=redactor.redact, rows=total, progress=tick,
                              state_of=None if codec.binary else codec.state_of_text)
    except Irregular:
        writer.reset()
        return write_redacted(reader, writer, redactor, index, span, column=column, by=by, binary=binary,
                              progress=progress, output=output, codec=codec)
    if output.disclosure is not None and output.disclosure.columns:
        _observe_spliced(reader, output, binary, targets.rows[mask], codec)
    return np.bincount(targets.codes[mask], minlength=span.start.shape[0]).astype(np.int64)


def _observe_spliced(reader: TableReader, output: Output, binary: tuple[str, ...], redacted_rows_: np.ndarray,
                     codec: Any) -> None:
    """The figures of a spliced release: one more pass over the protected and the uncovered columns (a
    spliced column's values are all states of the chain: :attr:`~redactopt.release.codec.StatesCodec.splices`)."""
    assert output.disclosure is not None
    cols = list(dict.fromkeys(codec.columns + output.disclosure.columns))
    row = 0
    where = reader.label
    for chunk in reader.chunks(cols, binary=tuple(c for c in binary if c in codec.columns)):
        states = codec.chain_states(codec.values(chunk, where, binary), chunk, None, where)
        output.observe(chunk, states, np.isin(row + np.arange(len(chunk)), redacted_rows_))
        row += len(chunk)


def splices(reader: Any, writer: TableWriter, output: Output, codec: Any = None) -> bool:
    """Whether a release copies the input's bytes (:func:`write_csv`): CSV to CSV with the same delimiter,
    every column written, one protected column written as read; otherwise it writes record batches
    (:func:`write_redacted`)."""
    return (reader.format == "csv" and writer.format == "csv" and output.columns is None
            and (codec is None or codec.splices)
            and reader.layout is not None and reader.layout.delimiter == writer.delimiter)


def _csv_rows(reader: Any) -> int | None:
    """The data rows of a CSV file counted from its bytes (``None``: not countable that way, or not CSV)."""
    if reader.format != "csv":
        return None
    try:
        with open_binary(reader.path) as src:
            return count_rows(src, reader.layout)
    except Irregular:
        return None


def check_release_options(*, private: object, private_column: str | None, by: str | None) -> None:
    """Exactly one of ``private`` / ``private_column``; positions only for one sequence."""
    if (private is None) == (private_column is None):
        raise ValueError("give exactly one of --private and --private-column")
    if private is not None and by is not None:
        raise ValueError("--private positions need a single sequence; with --by use --private-column")


def check_release_paths(
    source: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    report: str | os.PathLike[str] | None,
    *,
    private: object,
    private_column: str | None,
    by: str | None,
    force: bool,
    dest_is_directory: bool = False,
    report_sequences: str = "auto",
) -> tuple[Path, Path, Path | None]:
    """Checks shared by every back-end before anything is read or written.

    :func:`check_release_options`; the input exists and is never the output or the report
    (or the report's file of per-sequence rows); an output or report in a missing directory
    is refused, and an existing one unless ``force``; ``-`` (standard input or output) is
    accepted for the input, the output or the report, but standard output only once.
    Returns the three paths.
    """
    check_release_options(private=private, private_column=private_column, by=by)
    if report_sequences not in SEQUENCE_FORMATS:
        raise ValueError(f"--report-sequences must be one of {', '.join(SEQUENCE_FORMATS)}, got {report_sequences!r}")
    if report_sequences in ("parquet", "jsonl") and (report is None or str(report) == STDIO):
        raise ValueError(f"--report-sequences {report_sequences} writes a file beside the report: give --report FILE")
    if str(dest) == STDIO and report is not None and str(report) == STDIO:
        raise ValueError("--out - and --report - both ask for standard output; give one of them a file")
    src, dst = Path(source), Path(dest)
    from_stdin = str(source) == STDIO
    if not from_stdin:
        check_input_path(src)

    def inside_input(path: Path) -> bool:  # the input itself, or a file of an input folder
        if from_stdin or str(path) == STDIO:
            return False
        p = path.resolve()
        return p == src.resolve() or src.resolve() in p.parents

    if inside_input(dst):
        raise ValueError(f"{dst}: is (inside) the input; the input is never overwritten")
    rep_path = Path(report) if report is not None else None
    if rep_path is not None:
        if inside_input(rep_path) or (str(report) != STDIO and rep_path.resolve() == dst.resolve()):
            raise ValueError(f"{rep_path}: the report must be a different file from the input and the output")
        if str(report) != STDIO:
            check_output_path(rep_path, force=force, kind="json")
            # auto writes a Parquet file only for many sequences: its existence is checked then
            side = sequences_path(rep_path, "parquet" if report_sequences == "auto" else report_sequences)
            if inside_input(side) or side.resolve() == dst.resolve():
                raise ValueError(f"{side}: the report's sequences would overwrite the input or the output")
            if report_sequences != "auto":
                check_output_path(side, force=force)
    if str(dest) != STDIO:
        if not dest_is_directory:
            table_format(dst)  # the format by the name, before anything is read
        check_output_path(dst, force=force, directory=dest_is_directory)
    return src, dst, rep_path


def reader_columns(reader: Any) -> list[str]:
    """Every column of a table, a CSV row id without a name included (under its reader's name for it)."""
    return list(reader.layout.names) if getattr(reader, "layout", None) is not None else list(reader.columns)


def plan_output(reader: Any, *, column: str | list[str], by: str | None, order_by: str | None,
                private_column: str | None, keep: Any, rows: int, rank: np.ndarray | None = None,
                labels: list[str] | None = None) -> tuple[Output, list[str]]:
    """The :class:`Output` of a release and the columns it leaves out (``column``: the protected column, or
    several; ``labels``: the chain's states, default ``0``, ``1``).

    Every column written besides ``column`` is measured (:class:`~redactopt.release.disclosure.Disclosure`):
    kept columns, ``by`` and ``order_by``.
    """
    every = reader_columns(reader)
    protected = [column] if isinstance(column, str) else list(column)
    written, kept = output_columns(every, protected=protected, by=by, order_by=order_by,
                                   private_column=private_column, keep=keep)
    roles = {c: ("by" if c == by else "order-by" if c == order_by else "kept") for c in written if c not in protected}
    index = reader.layout.index_name if getattr(reader, "implicit_index", False) else None
    shown = {} if index is None else {index: "(row id)"}
    disclosure = Disclosure(roles, ["0", "1"] if labels is None else labels, rows, names=shown)
    dropped = [shown.get(c, c) for c in every if c not in written]
    return Output(None if written == every else written, disclosure, rank), dropped


def _read_columns(reader: Any, columns: list[str], binary: tuple[str, ...]) -> tuple[pa.Table, tuple[str, ...]]:
    """Whole columns of a table in memory (``--order-by``), the binary ones as ``int8`` where they can be."""
    try:
        batches = [c.frame for c in reader.chunks(columns, binary=binary)]
    except TextValues:
        return _read_columns(reader, columns, ())
    frames = [b if isinstance(b, pa.RecordBatch) else pa.RecordBatch.from_pandas(b, preserve_index=False)
              for b in batches]
    table = pa.Table.from_batches(frames) if frames else pa.table({c: pa.array([], pa.string()) for c in columns})
    return table, binary


@_progress.timed("read")
def ordered_scan(reader: Any, *, column: str, by: str | None, private_column: str | None, order_by: str,
                 codec: Any = None, private_rows: list | None = None) -> tuple[ScanState, Ordered]:
    """The scan of a table whose sequences are ordered by ``order_by`` (:mod:`redactopt.release.order`).

    Every value is checked first in file order (messages name the file's rows), then the rows
    are sorted and scanned in sequence order.
    """
    codec = BinaryCodec(column) if codec is None else codec
    cols = list(dict.fromkeys(c for c in (*codec.columns, by, private_column, order_by) if c))
    binary_column = column if codec.binary else None
    binary = tuple(c for c in (binary_column, private_column) if c) if reader.format == "csv" else ()
    table, binary = _read_columns(reader, cols, binary)
    whole = Chunk(1, table.combine_chunks().to_batches()[0] if table.num_rows else table)
    codec.values(whole, reader.label, binary)  # (a categorical column's labels: in file order)
    if private_column:
        flags = binary_values(whole, private_column, reader.label, read_as_int=private_column in binary)
        if private_rows is not None:
            private_rows.append(1 + np.flatnonzero(flags))
    if by:
        ids_of(whole, by, reader.label)
    ordered = sequence_order(table, by=by, order_by=order_by, where=reader.label, chunk_rows=reader.chunk_rows)
    state, _ = scan(ordered.reader, column=column, by=by, private_column=private_column, codec=codec)
    return state, ordered


def fit_on_counts(path: str | os.PathLike[str], *, column: str, by: str | None, order_by: str | None,
                  chunk_rows: int = DEFAULT_CHUNK_ROWS) -> Any:
    """The transition counts of a public table (``--fit-on``): the same column; ``by`` and ``order_by``
    where the table has them."""
    reader = TableReader(path, chunk_rows=chunk_rows)
    reader.require(column)
    by = by if by in reader.columns else None
    if order_by is not None and order_by in reader.columns:
        state, _ = ordered_scan(reader, column=column, by=by, private_column=None, order_by=order_by)
    else:
        state, _ = scan(reader, column=column, by=by)
    if state.rows == 0:
        raise ValueError(f"{path}: --fit-on table has no data rows")
    return state.counts()


def plan_scan(reader: Any, *, column: str, by: str | None, private_column: str | None, order_by: str | None,
          private: list[int] | None, fit_on: Any, progress: Progress | None, design: dict[str, Any],
          guard: ReleaseGuard | None = None,
          ) -> tuple[ScanState, tuple[str, ...], ReleasePlan, dict[str, Any], Ordered | None]:
    """Scan (in sequence order), fit where the release allows (:func:`~redactopt.release.fitplan.plan_fitted`)
    and plan; returns the scan, the CSV columns read as integers, the plan, the fit's source, the order.

    ``guard`` (:class:`~redactopt.release.guard.ReleaseGuard`): the scan watches its time columns, the
    time order is judged after it and the cover's decoys are made private before the fit."""
    guard = ReleaseGuard() if guard is None else guard
    ordered: Ordered | None = None
    binary: tuple[str, ...] = ()
    known = design["alpha"] is not None and private is not None  # the design needs only the number of rows
    if order_by is not None:
        state, ordered = ordered_scan(reader, column=column, by=by, private_column=private_column, order_by=order_by)
        binary = tuple(c for c in (column, private_column) if c) if reader.format == "csv" else ()
    elif known and reader.num_rows is not None:
        guard.judge_time(reader=reader, by=by)  # (reads the time columns, if any: nothing else is read first)
        state, covered = guard.draw_cover(ScanState.of_length(reader.num_rows), private)
        return state, binary, plan_release(state, private=covered, **design), {"source": "given"}, None
    elif known and (n := _csv_rows(reader)) is not None:
        length, covered = guard.draw_cover(ScanState.of_length(n), private)
        # design (Python) while pyarrow checks the values (its own threads)
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            planned = pool.submit(plan_release, length, private=covered, **design)
            state, binary = scan(reader, column=column, by=by, private_column=private_column, progress=progress,
                                 watch=guard.watch)
        guard.watched = True
        guard.judge_time()
        # the bytes and the parser may disagree (an irregular file): then design for what the parser read
        if state.rows != n:
            state, covered = guard.draw_cover(state, private)
        with _progress.phase("design"):  # what is left of the design once the values are checked
            plan = planned.result() if state.rows == n else plan_release(state, private=covered, **design)
        return state, binary, plan, {"source": "given"}, None
    else:
        one_pass = private is not None and by is None and design["alpha"] is None and fit_on is None and not guard.k
        state, binary = scan(reader, column=column, by=by, private_column=private_column, progress=progress,
                             private=PrivateIndex.single(private) if one_pass and private else None,
                             watch=guard.watch)
        guard.watched = True
    guard.judge_time()
    state, private = guard.draw_cover(state, private)
    source = reader if ordered is None else ordered.reader
    tally_binary = binary if ordered is None else ()
    index = SequenceIndex(state.ids)

    def tally(pi: PrivateIndex) -> ZoneTally:  # counted by the scan already, or one more pass
        if state.tally is not None:
            return state.tally
        return tally_zones(source, index, pi, Span.whole(state), column=column, by=by, binary=tally_binary)

    plan, fit_source = plan_fitted(state, private=private, fit_on=fit_on, fit_on_label=None, tally=tally, **design)
    return state, binary, plan, fit_source, ordered


def scan_protected(reader: Any, codec: StatesCodec, *, by: str | None, private_column: str | None,
                 order_by: str | None, progress: Progress | None,
                 private_rows: list | None = None, watch: Any = None) -> tuple[ScanState, Any]:
    """The scan of the protected column(s) in sequence order (and the order, with ``order_by``); the codec's
    states are fixed after it.  ``watch``: the time columns seen by the scan (without ``order_by``)."""
    ordered = None
    if order_by is not None:
        state, ordered = ordered_scan(reader, column=codec.column, by=by, private_column=private_column,
                                      order_by=order_by, codec=codec, private_rows=private_rows)
    else:
        state, _ = scan(reader, column=codec.column, by=by, private_column=private_column, progress=progress,
                        codec=codec, private_rows=private_rows, watch=watch)
    codec.freeze()
    return state, ordered


def protected_columns(reader: Any, column: str | None, protect: Any, bins: Any) -> tuple[list[str], dict[str, Bins]]:
    """The protected columns (``column`` or ``protect``, exactly one) and the bins, checked against the table
    (``reader.require(*names)`` raises for a column the table lacks)."""
    if (column is None) == (protect is None):
        raise ValueError("give exactly one of column= and protect= (--column, --protect)")
    cols = [column] if column is not None else parse_columns(protect, "--protect")
    if not cols:
        raise ValueError("--protect: no column named")
    bins_ = bins if isinstance(bins, dict) else parse_bins(bins)
    reader.require(*cols, *bins_)
    for c in bins_:
        if c not in cols:
            raise ValueError(f"--bin {c}: the column is not protected (name it in --protect or --column)")
    return cols, bins_


def fit_states_on(path: Any, *, columns: str | list[str], by: str | None, order_by: str | None,
                  bins: dict[str, Bins] | None = None, chunk_rows: int = DEFAULT_CHUNK_ROWS,
                  **fit_kw: Any) -> ChainFit:
    """The categorical fit of a separate, public table (``fit_on``): the same column(s) and bins, ``by`` and
    ``order_by`` where the table has them; its states are those the table shows
    (:meth:`~redactopt.release.codec.StatesCodec.fit_labels`)."""
    reader = TableReader(path, chunk_rows=chunk_rows) if isinstance(path, (str, os.PathLike)) else path
    codec = StatesCodec(columns, bins=bins)
    reader.require(*codec.columns)
    state, _ = scan_protected(reader, codec, by=by if by in reader.columns else None, private_column=None,
                            order_by=order_by if order_by in reader.columns else None, progress=None)
    if state.rows == 0:
        raise ValueError(f"{reader.label}: --fit-on table has no data rows")
    labels = codec.fit_labels(range(len(codec.labels)))
    counts = state.counts()
    if labels != codec.labels or counts.pairs.shape[0] != len(labels):  # the alphabet's order, or one state only
        at = [labels.index(s) for s in codec.labels]
        k, m = len(labels), len(at)
        pairs = np.zeros((k, k), dtype=np.int64)
        pairs[np.ix_(at, at)] = counts.pairs[:m, :m]
        triples = None
        if counts.triples is not None:
            triples = np.zeros((k, k, k), dtype=np.int64)
            triples[np.ix_(at, at, at)] = counts.triples[:m, :m, :m]
        counts = type(counts)(pairs, triples, counts.records, counts.sequences)
    return fit_counts(counts, tuple(labels), **fit_kw)
