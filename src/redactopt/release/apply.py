"""Applying a designed mechanism to a table: the release driver.

:func:`apply_table` releases a file at the speed of its format:

1. **Scan** (:func:`scan_table`): one pass over the columns it needs only — the binary
   column, ``--by`` and ``--private-column`` — checks every value, counts the records of
   each sequence, the transitions (for the fit) and the private flags.  With ``alpha``,
   ``beta`` and ``private`` given the design needs only the number of rows: a Parquet
   file needs no scan at all (its metadata give it; the values are checked while
   writing), and a CSV file is designed while it is scanned (its rows counted from its
   bytes first).
2. **Plan** (:func:`redactopt.release.plan.plan_release`): fit, one sparse verified design
   per sequence with private records.
3. **Write**: a CSV release copies the input's bytes and empties the redacted fields
   (:mod:`redactopt.release.splice`; the layout is the input's, byte for byte); every other
   release streams Arrow record batches, with the binary column replaced by an Arrow array
   with nulls for ⊥ and every other column passed through untouched
   (:func:`write_redacted`).  Draws are exact Bernoulli draws
   (:mod:`redactopt.release.redactor`, :mod:`redactopt.release.bits`) of the rows in the
   designs' blocks; no other row needs one.

The data are never held in memory, and neither is an ``(n, 2)`` table: memory grows with
the chunk size, the number of sequences and the blocks of the designs, not with the
length of a sequence.  The report (:mod:`redactopt.release.report`) is written last.

Positions are 0-based in the Python API and 1-based on the command line and in files.
"""

from __future__ import annotations

import concurrent.futures
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from redactopt import _progress
from redactopt.engine.cache import DesignCache
from redactopt.io import STDIO, check_input_path, check_output_path, stdin_as_file
from redactopt.release.bits import (
    BitSource,
    SecureBits,
    SeededBits,
    bernoulli_exact,
    bit_source,
    exact_thresholds,
)
from redactopt.release.codec import BinaryCodec, binary_values
from redactopt.release.columns import output_columns
from redactopt.release.disclosure import Disclosure, plain_summary
from redactopt.release.fitplan import plan_fitted
from redactopt.release.alternatives import varying_alternatives
from redactopt.release.guard import ReleaseGuard, count_real, decoy_records
from redactopt.release.refusals import refuse_flag_protected
from redactopt.release.order import Ordered, sequence_order
from redactopt.release.model_check import release_model_check
from redactopt.release.data import MAX_TRIPLE_STATES, ScanState, SequenceIndex, TextStates, group_ranks, ids_of
from redactopt.release.plan import ReleasePlan, SequencePlan, plan_release, within_time_limit
from redactopt.release.pool import warm_pool
from redactopt.release.redactor import Redactor
from redactopt.release.report import NOT_FOR_RELEASE, SEQUENCE_FORMATS, build_report, sequences_path, write_report
from redactopt.release.splice import Irregular, Targets, count_rows, splice_csv
from redactopt.release.zones import PrivateIndex, ZoneTally
from redactopt.release.tables import (DEFAULT_CHUNK_ROWS, Chunk, TableReader, TableWriter, TextValues, open_binary,
                                      prefetched, table_format)

#: Chunks read ahead of the one being redacted and written (:func:`~redactopt.release.tables.prefetched`).
READ_AHEAD = 2

#: ``progress(stage, done, total)``: called as a release goes (``total`` is ``None`` when unknown).
Progress = Callable[[str, int, "int | None"], None]

__all__ = [
    "Progress",
    "scan_table",
    "scan",
    "scan_states",
    "Span",
    "write_redacted",
    "write_csv",
    "splices",
    "check_release_options",
    "check_release_paths",
    "apply_table",
    "is_categorical",
    # the 0.1 names of this module, now in bits, plan, redactor and report
    "BitSource",
    "SecureBits",
    "SeededBits",
    "bit_source",
    "exact_thresholds",
    "bernoulli_exact",
    "SequencePlan",
    "Redactor",
    "ReleasePlan",
    "plan_release",
    "write_report",
    "NOT_FOR_RELEASE",
]


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


def _to_file(report: object) -> bool:
    return report is not None and str(report) != STDIO


def _reader_columns(reader: Any) -> list[str]:
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
    every = _reader_columns(reader)
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


def is_categorical(*, chain: Any, categorical: bool, protect: Any, bins: Any) -> bool:
    """Whether a release is categorical: asked for, a chain that is not the 0/1 two-state chain, or
    columns protected together or binned.  A 0/1 column is the default (the binary path)."""
    if chain is not None:
        from redactopt.model.chain import check_chain

        if not check_chain(chain).binary or tuple(str(v) for v in chain.labels) != ("0", "1"):
            return True  # (a 2x2 matrix without labels has the states "0", "1": the binary release)
    return bool(categorical) or protect is not None or bool(bins)


def refuse_binary_options(**given: Any) -> None:
    """A categorical release refuses the options of the binary path, one line each (before any work)."""
    defaults = dict(alpha=None, beta=None, robust=None, cache=None, progress=None, chunk_rows=DEFAULT_CHUNK_ROWS,
                    report_sequences="auto")
    why = dict(alpha="a categorical release takes its chain as chain= (or fits it)", beta="see alpha",
               robust="a categorical release covers the fitted or given chain, not a box of chains",
               cache="categorical designs are shared within a release only",
               report_sequences="a categorical report lists every sequence",
               progress="a categorical release of a table in memory is made at once", chunk_rows="see progress")
    for name, value in given.items():
        if value is not None and value != defaults[name]:
            raise ValueError(f"{name}= applies to 0/1 columns only: {why[name]}")


def binary_chain(chain: Any, alpha: Any, beta: Any, *, smoothing: str = "kt",
                 simultaneous: bool = False) -> tuple[Any, Any]:
    """``alpha`` and ``beta`` of a binary release: those of ``chain`` when one is given (not both).
    The categorical fit's options are refused here (a binary release smooths as its fit does)."""
    if smoothing != "kt" or simultaneous:
        raise ValueError("smoothing= and simultaneous= apply to categorical releases; a 0/1 column's fit keeps "
                         "alpha and beta in (0, 1) by the Krichevsky-Trofimov estimate")
    if chain is None:
        return alpha, beta
    if alpha is not None or beta is not None:
        raise ValueError("give the chain once: chain= or alpha=/beta=, not both")
    return chain.alpha, chain.beta


@within_time_limit
def apply_table(
    source: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    *,
    column: str | None = None,
    eps: float,
    private: list[int] | None = None,
    private_column: str | None = None,
    by: str | None = None,
    alpha: float | tuple[float, float] | None = None,
    beta: float | tuple[float, float] | None = None,
    method: str = "auto",
    seed: int | None = None,
    report: str | os.PathLike[str] | None = None,
    force: bool = False,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    time_limit: float = 60.0,
    progress: Progress | None = None,
    workers: int | None = None,
    cache: DesignCache | None = None,
    report_sequences: str = "auto",
    robust: float | None = None,
    keep: list[str] | str | None = None,
    order_by: str | None = None,
    fit_on: str | os.PathLike[str] | None = None,
    chain: Any = None,
    categorical: bool = False,
    protect: list[str] | str | None = None,
    bins: Any = None,
    smoothing: str = "kt",
    simultaneous: bool = False,
    cover: int | None = None,
    public_report: str | os.PathLike[str] | None = None,
    accept_model: bool = False,
) -> dict[str, Any]:
    """Design, draw and write a redacted copy of a table; returns the report (see
    :func:`redactopt.release.report.build_report`).

    One entry for every chain: a 0/1 ``column`` is the default; ``categorical=True``, a ``chain``
    on more than two states, or ``protect``/``bins`` release a categorical column (or several
    columns protected together) through the same passes, read by another codec
    (:func:`redactopt.release.states.apply_states_table`, :mod:`redactopt.release.codec`), with
    the same ``column``, ``eps``, ``private``, ``private_column``, ``by``, ``method``, ``seed``,
    ``report``, ``force``, ``chunk_rows``, ``progress``, ``time_limit``, ``workers``, ``keep``,
    ``order_by`` and ``fit_on`` (its report is ``redactopt.release.kapply-report/1``).  Options of
    the binary path alone (``alpha``/``beta``, ``robust``, ``cache``, ``report_sequences``) are
    refused there in one line each; ``smoothing`` and ``simultaneous`` go to the categorical fit
    (:func:`redactopt.release.fit.fit_counts`).

    Parameters
    ----------
    source, dest : path
        Input and output tables (CSV or Parquet, by extension; they may differ).  The
        input is never modified; ``dest`` is written to a temporary file in its directory
        and renamed, only if everything succeeded.  ``-`` reads CSV from standard input
        (copied to a temporary file, since the input is read twice) or writes CSV to
        standard output.
    column : str
        The binary column to protect.
    eps : float
        Privacy budget per private record (nats).
    private : list of int, optional
        0-based positions of the private records (single sequence).
    private_column : str, optional
        A 0/1 column flagging private rows (any number of sequences).  It is not written
        unless named in ``keep``.
    by : str, optional
        Column naming the sequence of each row; each sequence is a chain of its own.
    alpha, beta : float or (float, float), optional
        The chain; fitted from the data when omitted — on the rows the release publishes
        with certainty only (:mod:`redactopt.release.zones`), or on ``fit_on``.  Ranges
        ``(lo, hi)`` make the release private for every chain of the box (issue 14,
        :class:`~redactopt.model.classes.ChainClass`).
    method : str
        ``"auto"`` or a :func:`redactopt.engine.design.design` method, see
        :func:`redactopt.engine.joint.design_joint`.
    seed : int, optional
        Reproducible PCG64 draws — not for real releases; default: ``os.urandom``.
    report : path, optional
        Where to write the JSON report (refused if it exists, unless ``force``; ``-``:
        standard output).
    chunk_rows : int
        Rows handled at a time (memory grows with it, not with the input).
    progress : callable, optional
        ``progress(stage, done, total)`` as the release goes: stage ``"scan"`` (rows read,
        total unknown) and ``"release"`` (rows written of all rows).
    workers : int, optional
        Processes designing at once (default: every core; 1: in this process).  The
        release does not depend on it.
    cache : DesignCache, optional
        Designs shared by the groups of private records (:mod:`redactopt.engine.cache`); a
        fresh one by default.  Pass one to share designs across releases (same chain and
        eps, ...), or ``DesignCache(share=False)`` to design every group on its own.
    report_sequences : str
        Where the per-sequence rows of the report go (:data:`redactopt.release.report.SEQUENCE_FORMATS`):
        ``"auto"`` puts them in the report up to 20 designed sequences (each with its
        mechanism) and in a Parquet file beside the report beyond.
    robust : float, optional
        A confidence level (e.g. 0.95): fit the chain and make the release private for
        every chain of the box of its intervals (each at level ``1 - (1 - robust)/2``, so
        the box covers the true chain with probability at least ``robust``); the report
        records the box, the worst-case leakage and what robustness costs
        (:func:`redactopt.release.plan.plan_release`).
    keep : list of str or "all", optional
        Columns written besides ``column``, ``by`` and ``order_by`` (default: none; ``"all"``:
        every column but ``private_column``).  The report lists each as not covered by the
        guarantee, with what it reveals (:mod:`redactopt.release.disclosure`).
    order_by : str, optional
        A column ordering the rows of each sequence (numbers, datetimes or text); the output
        keeps the input's row order (:mod:`redactopt.release.order`).
    fit_on : path, optional
        A separate, public table to fit the chain on (the same ``column``).
    chain : Chain, optional
        The chain instead of ``alpha``/``beta``: a two-state chain on states 0 and 1 (a
        ``MarkovChain``, or the same chain given as a 2x2 matrix) is the binary release with its
        alpha and beta; any other chain makes the release categorical.
    cover : int, optional
        ``K`` decoys per private run in every sequence (:mod:`redactopt.release.cover`): the positions
        of the private records are then hidden among copies of the same shape; the report states
        what it buys and costs.  Default: none (the positions are not protected, and the report
        says so).
    public_report : path, optional
        Also write the report without private positions (:func:`redactopt.release.reveals.public_report`).
    accept_model : bool
        Release although the rows are out of time order, a test rejects the model with an alternative
        under which the release leaks more than ``eps``, or a fitted state was never observed
        (:mod:`redactopt.release.refusals`; each refused otherwise, nothing written); the report's
        first line says what was accepted.
    """
    options = dict(chain=chain, categorical=categorical, protect=protect, bins=bins)
    if is_categorical(**options):  # categorical column(s): streamed through the same passes
        refuse_binary_options(alpha=alpha, beta=beta, robust=robust, cache=cache, report_sequences=report_sequences)
        from redactopt.release.states import apply_states_table  # builds on this module

        return apply_states_table(source, dest, column=column, eps=eps, private=private,
                                  private_column=private_column, by=by, chain=chain, method=method, seed=seed,
                                  report=report, force=force, chunk_rows=chunk_rows, time_limit=time_limit,
                                  smoothing=smoothing, simultaneous=simultaneous, workers=workers, keep=keep,
                                  order_by=order_by, fit_on=fit_on, progress=progress, protect=protect, bins=bins,
                                  cover=cover, public_report=public_report, accept_model=accept_model)
    alpha, beta = binary_chain(chain, alpha, beta, smoothing=smoothing, simultaneous=simultaneous)
    if column is None:
        raise ValueError("column= names the 0/1 column to protect (protect= several categorical columns)")
    refuse_flag_protected([column], private_column)
    guard = ReleaseGuard(cover=cover, accept_model=accept_model, seed=seed, public_report=public_report, force=force)
    src, dst, rep_path = check_release_paths(source, dest, report, private=private,
                                             private_column=private_column, by=by, force=force,
                                             report_sequences=report_sequences)
    guard.check_paths(source, dest, report)
    with stdin_as_file(source) as path:
        reader = TableReader(path, chunk_rows=chunk_rows, label="<stdin>" if str(source) == STDIO else None)
        reader.require(column, by, private_column, order_by)
        guard.watch_columns(reader, exclude=[column, by, private_column], order_by=order_by)
        plan_output(reader, column=column, by=by, order_by=order_by, private_column=private_column, keep=keep,
                    rows=0)  # bad --keep before anything is read
        counts = None if fit_on is None else fit_on_counts(fit_on, column=column, by=by, order_by=order_by,
                                                           chunk_rows=chunk_rows)
        if by is not None:  # many sequences: designs in worker processes, whose start overlaps the scan
            warm_pool(workers)
        design = dict(eps=eps, alpha=alpha, beta=beta, method=method, time_limit=time_limit,
                      cache=cache, workers=workers, robust=robust)
        state, binary, plan, fit_source, ordered = plan_scan(
            reader, column=column, by=by, private_column=private_column, order_by=order_by, private=private,
            fit_on=counts, progress=progress, design=design, guard=guard)
        judge_plan(guard, plan, design)
        if fit_on is not None:
            fit_source["table"] = str(fit_on)
        models = release_model_check(plan=plan, state=state, fit_source=fit_source, column=column, by=by,
                                     reader=reader if ordered is None else ordered.reader, order_by=order_by,
                                     private=private)
        if models is not None:  # the hourly and weekday chains: refused, or accepted, as the order alternative is
            guard.add_alternatives(varying_alternatives(models.to_dict(), float(plan.eps)), float(plan.eps))
        output, dropped = plan_output(reader, column=column, by=by, order_by=order_by, private_column=private_column,
                                      keep=keep, rows=state.rows, rank=None if ordered is None else ordered.rank)
        bits = bit_source(seed)
        redactor = Redactor(plan, bits)
        t0 = time.perf_counter()
        with TableWriter(dest, force=force) as writer:
            write = write_csv if splices(reader, writer, output) else write_redacted
            redacted = write(reader, writer, redactor, state.index(), Span.whole(state), column=column, by=by,
                             binary=binary, progress=progress, output=output)
            rep, rows = build_report(plan, redacted=redacted, source=bits, seed=seed, extra={
                "input": str(src), "output": str(dst), "column": column, "by": by,
                "private_column": private_column}, sequences=report_sequences, to_file=_to_file(report))
            if models is not None:
                rep["model_check"] = models.to_dict()
            rep = describe_release(rep, plan, protected=[column], output=output, dropped=dropped,
                                   fit_source=fit_source, order_by=order_by, ordered=ordered, guard=guard)
            rep["apply_seconds"] = time.perf_counter() - t0
            if rep_path is not None:  # before the output appears: a report that cannot be written leaves nothing
                rep = write_report(report, rep, rows=rows, force=force)  # type: ignore[arg-type]
            guard.write_public(rep)
            writer.commit()
    return rep


def judge_plan(guard: ReleaseGuard, plan: ReleasePlan, design: dict[str, Any]) -> None:
    """After the plan, before anything is written: the model checks of ``guard`` (refused or accepted) and
    the cover's cost (the same design without the decoys)."""
    guard.judge_model(plan, fit=plan.fit, counts=plan.info.get("fit_counts"))

    def without(state: ScanState, private: list[int] | None) -> float:
        box = plan.chain_class
        chain_kw = (dict(alpha=box.alpha, beta=box.beta) if box is not None else
                    dict(alpha=plan.chain.alpha, beta=plan.chain.beta))
        rest = {k: v for k, v in design.items() if k not in ("alpha", "beta", "robust")}
        return float(plan_release(state, private=private, **chain_kw, **rest).mass.sum())

    guard.price_cover(float(plan.mass.sum()), without)


def describe_release(rep: dict[str, Any], plan: ReleasePlan, *, protected: list[str], output: Output,
                     dropped: list[str], fit_source: dict[str, Any], order_by: str | None,
                     ordered: Ordered | None, guard: ReleaseGuard | None = None) -> dict[str, Any]:
    """A binary release's report with what it writes and covers, where the chain came from, what it
    reveals, and the plain-language summary (:func:`redactopt.release.disclosure.plain_summary`);
    ``guard``: the release's issue-36 checks (:meth:`~redactopt.release.guard.ReleaseGuard.finish`)."""
    guard = ReleaseGuard() if guard is None else guard
    real, holding = count_real(guard) if guard.real is not None else (rep["leakage"]["private_records"],
                                                                       int(plan.designed().size))
    if guard.cover is not None:  # the decoys' records are judged like the private ones
        rep["leakage"]["judged_records"] = rep["leakage"]["private_records"]
        rep["leakage"]["decoy_records"] = decoy_records(guard)
        rep["leakage"]["private_records"] = real
    figures = output.disclosure.figures() if output.disclosure is not None else []
    written = output.columns if output.columns is not None else None
    rep["columns"] = {"protected": protected, "written": written if written is not None else "all",
                      "not_covered": figures, "dropped": dropped}
    rep["chain"]["fit_rows"] = fit_source
    if order_by is not None:
        rep["order"] = {"by": order_by, "kind": ordered.kind if ordered else None,
                        "rows_moved": ordered.moved if ordered else 0}
    fit = plan.fit
    test = None if fit is None else fit.order_summary()
    model = (f"two-state Markov chain alpha = {plan.chain.alpha:.6g}, beta = {plan.chain.beta:.6g}"
             if plan.chain_class is None else "class of two-state Markov chains of the report's box")
    rep = guard.finish(rep, sequences=len(plan.state.ids), with_private=holding)
    rep["summary"] = plain_summary(
        eps=plan.eps, protected=protected, private_records=real,
        sequences=holding, model=model + (" (given)" if fit is None and "table" not in fit_source else ""),
        fit_rows=fit_rows_text(fit_source), order_test=test, figures=figures, rows=rep["rows"],
        redacted=rep["utility"]["redacted"], expected_utility=rep["utility"]["expected"],
        positions=rep["reveals"]["short"])
    return rep


def fit_rows_text(source: dict[str, Any]) -> str | None:
    """Which rows a chain was fitted on, in words (``None`` for a given chain)."""
    kind = source.get("source")
    if kind == "fit-on":
        return f"the separate table {source.get('table')} ({source['rows']} rows)"
    if kind != "published rows":
        return None
    where = ("the sequences without private records" if source["radius"] is None else
             f"the rows more than {source['radius']} records from every private record")
    return f"{source['rows']} of {source['of_rows']} rows, {where} (all published with certainty)"
