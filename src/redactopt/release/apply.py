"""Applying a designed mechanism to a table: the release driver.

:func:`apply_table` reads the input twice in chunks (Parquet one row group at a time):
the first pass (:func:`scan_table`) checks every value, counts the records of each
sequence, the transitions (for the fit) and the private flags; the release is planned
(:func:`redactopt.release.plan.plan_release`: fit, one sparse verified design per
sequence with private records); the second pass (:func:`write_redacted`) redacts with
exact Bernoulli draws (:mod:`redactopt.release.redactor`, :mod:`redactopt.release.bits`)
and writes every row and every other column unchanged, redacted entries empty (CSV) or
null (Parquet).  The data are never held in memory, and neither is an ``(n, 2)`` table:
memory grows with the chunk size, the number of sequences and the blocks of the designs,
not with the length of a sequence.  The report (:mod:`redactopt.release.report`) is
written last, streamed.

Positions are 0-based in the Python API and 1-based on the command line and in files.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from redactopt.io import STDIO, check_input_path, check_output_path, stdin_as_file
from redactopt.release.bits import (
    BitSource,
    SecureBits,
    SeededBits,
    bernoulli_exact,
    bit_source,
    exact_thresholds,
)
from redactopt.release.data import (
    DEFAULT_CHUNK_ROWS,
    ScanState,
    TableReader,
    TableWriter,
    group_ranks,
    id_key,
    parse_binary,
)
from redactopt.release.plan import ReleasePlan, SequencePlan, plan_release
from redactopt.release.redactor import Redactor
from redactopt.release.report import NOT_FOR_RELEASE, build_report, write_report

#: ``progress(stage, done, total)``: called as a release goes (``total`` is ``None`` when unknown).
Progress = Callable[[str, int, "int | None"], None]

__all__ = [
    "Progress",
    "scan_table",
    "write_redacted",
    "check_release_paths",
    "apply_table",
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


def _columns_needed(column: str, by: str | None, private_column: str | None) -> list[str]:
    cols = [column]
    for c in (by, private_column):
        if c is not None and c not in cols:
            cols.append(c)
    return cols


def _ids_of(chunk: Any, by: str, where: str) -> np.ndarray:
    ids = chunk.column(by)
    if not isinstance(ids, np.ndarray):
        if ids.null_count:
            i = int(np.flatnonzero(ids.is_null().to_numpy(zero_copy_only=False))[0])
            raise ValueError(f"{where}: row {chunk.first_row + i}, column '{by}': missing value")
        ids = ids.to_numpy(zero_copy_only=False)
    else:
        empty = np.flatnonzero(ids == "")
        if empty.size:
            raise ValueError(f"{where}: row {chunk.first_row + int(empty[0])}, column '{by}': missing value")
    return np.asarray(ids, dtype=object)


def scan_table(reader: TableReader, *, column: str, by: str | None = None,
               private_column: str | None = None, progress: Progress | None = None) -> ScanState:
    """First pass: validate every value and collect the :class:`~redactopt.release.data.ScanState`.

    ``progress("scan", rows so far, None)`` is called after every chunk.
    """
    reader.require(column, by, private_column)
    state = ScanState()
    where = reader.label
    for chunk in reader.chunks(_columns_needed(column, by, private_column)):
        values = parse_binary(chunk.column(column), column=column, first_row=chunk.first_row, where=where)
        ids = _ids_of(chunk, by, where) if by else None
        flags = None
        if private_column:
            flags = parse_binary(chunk.column(private_column), column=private_column,
                                 first_row=chunk.first_row, where=where)
        state = state.merge(ScanState.of_chunk(values, ids, flags))
        if progress is not None:
            progress("scan", state.rows, None)
    return state


def _positions(codes: np.ndarray | None, counter: np.ndarray, m: int) -> np.ndarray:
    if codes is None:
        pos = counter[0] + np.arange(m, dtype=np.int64)
        counter[0] += m
        return pos
    rank, _ = group_ranks(codes)
    pos = counter[codes] + rank
    counter += np.bincount(codes, minlength=counter.shape[0])
    return pos


def _codes_of(ids: np.ndarray, index: dict, where: str) -> np.ndarray:
    try:
        return np.fromiter((index[id_key(v)] for v in ids), dtype=np.int64, count=ids.shape[0])
    except KeyError as exc:
        raise ValueError(f"{where}: the input changed while it was being read (new id {exc.args[0]!r})") from None


def _redacted_column_csv(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    out = np.asarray(values, dtype=object).copy()
    out[mask] = ""
    return out


def write_redacted(reader: TableReader, writer: TableWriter, redactor: Redactor, plan: ReleasePlan, *,
                   column: str, by: str | None, progress: Progress | None = None) -> np.ndarray:
    """Second pass: redact and write every chunk; returns the redacted count per sequence.

    ``progress("release", rows written, all rows)`` is called after every chunk.
    """
    where = reader.label
    index = plan.state.index()
    k = len(plan.plans)
    counter = np.zeros(k, dtype=np.int64)
    redacted = np.zeros(k, dtype=np.int64)
    single = by is None
    for chunk in reader.chunks(None):
        m = len(chunk)
        values = parse_binary(chunk.column(column), column=column, first_row=chunk.first_row, where=where)
        codes = None if single else _codes_of(_ids_of(chunk, by, where), index, where)  # type: ignore[arg-type]
        pos = _positions(codes, counter, m)
        mask = redactor.redact(codes, pos, values)
        redacted += np.bincount(np.zeros(int(mask.sum()), dtype=np.int64) if single else codes[mask], minlength=k)
        frame = chunk.frame
        if writer.format == "csv":
            if reader.format == "csv":
                out = frame.copy(deep=False)
                out[column] = _redacted_column_csv(frame[column].to_numpy(dtype=object), mask)
                writer.write_csv(out, index=reader.implicit_index, delimiter=reader.delimiter)
            else:
                out = frame.to_pandas()
                col = out[column].astype("Int64" if not pa.types.is_boolean(frame.column(column).type) else "boolean")
                col[mask] = None
                out[column] = col
                writer.write_csv(out, index=False)
        else:
            if reader.format == "parquet":
                table = pa.Table.from_batches([frame])
                col = table.column(column)
            else:
                df = frame.reset_index() if reader.implicit_index else frame
                table = pa.Table.from_pandas(df, preserve_index=False)
                col = pa.array(values, type=pa.int8())
            new_col = pc.if_else(pa.array(mask), pa.scalar(None, type=col.type), col)
            i = table.schema.get_field_index(column)
            table = table.set_column(i, pa.field(column, col.type, nullable=True), new_col)
            writer.write_arrow(table)
        if progress is not None:
            progress("release", int(counter.sum()), plan.state.rows)
    if not np.array_equal(counter, plan.state.n):
        raise ValueError(f"{where}: the input changed while it was being read (row counts differ)")
    return redacted


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
) -> tuple[Path, Path, Path | None]:
    """Checks shared by every back-end before anything is read or written.

    Exactly one of ``private`` / ``private_column``; positions only for one sequence; the
    input exists and is never the output or the report; an output or report in a missing
    directory is refused, and an existing one unless ``force``; ``-`` (standard input or
    output) is accepted for the input, the output or the report, but standard output only
    once.  Returns the three paths.
    """
    if (private is None) == (private_column is None):
        raise ValueError("give exactly one of --private and --private-column")
    if private is not None and by is not None:
        raise ValueError("--private positions need a single sequence; with --by use --private-column")
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
            check_output_path(rep_path, force=force)
    if str(dest) != STDIO:
        check_output_path(dst, force=force, directory=dest_is_directory)
    return src, dst, rep_path


def apply_table(
    source: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    *,
    column: str,
    eps: float,
    private: list[int] | None = None,
    private_column: str | None = None,
    by: str | None = None,
    alpha: float | None = None,
    beta: float | None = None,
    method: str = "auto",
    seed: int | None = None,
    report: str | os.PathLike[str] | None = None,
    force: bool = False,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    time_limit: float = 60.0,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Design, draw and write a redacted copy of a table; returns the report (see
    :func:`redactopt.release.report.build_report`).

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
        A 0/1 column flagging private rows (any number of sequences).
    by : str, optional
        Column naming the sequence of each row; each sequence is a chain of its own.
    alpha, beta : float, optional
        The chain; fitted from the data when omitted.
    method : str
        ``"auto"`` or a :func:`redactopt.engine.design.design` method, see
        :func:`redactopt.engine.joint.design_joint`.
    seed : int, optional
        Reproducible PCG64 draws — not for real releases; default: ``os.urandom``.
    report : path, optional
        Where to write the JSON report (refused if it exists, unless ``force``; ``-``:
        standard output).
    progress : callable, optional
        ``progress(stage, done, total)`` after every chunk: stage ``"scan"`` (rows read,
        total unknown) and ``"release"`` (rows written of all rows).
    """
    src, dst, rep_path = check_release_paths(source, dest, report, private=private,
                                             private_column=private_column, by=by, force=force)
    with stdin_as_file(source) as path:
        reader = TableReader(path, chunk_rows=chunk_rows, label="<stdin>" if str(source) == STDIO else None)
        state = scan_table(reader, column=column, by=by, private_column=private_column, progress=progress)
        plan = plan_release(state, eps=eps, private=private, alpha=alpha, beta=beta, method=method,
                            time_limit=time_limit)
        bits = bit_source(seed)
        redactor = Redactor(plan.plans, bits)
        t0 = time.perf_counter()
        with TableWriter(dest, force=force) as writer:
            redacted = write_redacted(reader, writer, redactor, plan, column=column, by=by, progress=progress)
            rep = build_report(plan, redacted=redacted, source=bits, seed=seed, extra={
                "input": str(src), "output": str(dst), "column": column, "by": by,
                "private_column": private_column})
            rep["apply_seconds"] = time.perf_counter() - t0
            writer.commit()
    if rep_path is not None:
        write_report(report, rep, force=True)  # type: ignore[arg-type]
    return rep
