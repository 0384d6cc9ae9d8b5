"""Optional Dask back-end of ``apply``: the same release, computed across the partitions of a CSV or Parquet dataset.

Install with ``pip install redactopt[dask]``.  A dataset is a folder of files (searched
recursively; names starting with ``.`` or ``_`` are skipped), a glob pattern, or one file,
all CSV or all Parquet, taken in natural order of their paths (``part.2`` before
``part.10``).  Its *partitions* are the CSV files and runs of consecutive row groups of the Parquet files (about
:data:`PARTITION_ROWS` rows each).
Dask is used as a scheduler only: every task reads and writes its partition with pyarrow,
through the same functions as the in-memory path (:mod:`redactopt.release.apply`), and the
work splits as there:

1. every partition is scanned on the workers (:func:`redactopt.release.apply.scan`, the
   needed columns only); the scans are merged on the client *in partition order*, which
   gives the same sequence lengths, transition counts (including transitions across
   partition boundaries) and private positions as one pass over the whole dataset;
2. the chain is fitted on the client and the groups of private records are placed
   (:func:`redactopt.release.plan.plan_release`): each distinct design is one task, computed
   once for the whole dataset however many sequences and partitions use it (the client
   holds the :class:`~redactopt.engine.cache.DesignCache`);
3. every partition is redacted on the workers, with each row's position in its sequence
   counted from where the partition starts in each sequence
   (:class:`~redactopt.release.apply.Span`), and written as ``part.NNNNN.parquet`` (a
   Parquet dataset) or ``part.NNNNN.csv`` (a CSV dataset: the file's bytes with the
   redacted fields emptied) in a temporary folder beside the destination, which is renamed
   into place only when all partitions succeeded.

Because a seeded draw for record ``t`` of sequence ``s`` is word ``t`` of the stream of
``s`` (:class:`redactopt.release.bits.SeededBits`), the output is identical, row for row,
to :func:`redactopt.release.apply.apply_table` on the same rows with the same seed, however
the rows are partitioned.  Sequences may span partitions; the rows of a sequence are taken
in dataset order.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from redactopt._optional import require
from redactopt.engine.cache import DesignCache
from redactopt.io import STDIO, new_file_mode
from redactopt import _tempfiles
from redactopt.io import write_text_atomic
from redactopt.release.apply import binary_chain, is_categorical, refuse_binary_options
from redactopt.release.driver import Planned, binary_report, binary_request
from redactopt.release.passes import (Output, Span, reader_columns, check_release_paths, fit_on_counts, plan_output,
                                      scan, splices, tally_zones, write_csv, write_redacted)
from redactopt.release.codec import StatesCodec
from redactopt.release.bits import bit_source
from redactopt.release.data import MAX_TRIPLE_STATES, ScanState, SequenceIndex, check_private_positions
from redactopt.release.disclosure import Disclosure
from redactopt.release.fitplan import plan_fitted
from redactopt.release.guard import ReleaseGuard
from redactopt.release.refusals import refuse_flag_protected
from redactopt.release.zones import PrivateIndex, ZoneTally
from redactopt.release.redactor import Redactor
from redactopt.release.report import report_text, write_report
from redactopt.release.tables import TableReader, TableWriter, table_format
from redactopt.release.plan import within_time_limit

__all__ = ["apply_dask", "apply_parquet_dask", "dataset_partitions"]

#: One partition: a file, and for Parquet some of its consecutive row groups.
Partition = tuple[str, "list[int] | None"]

#: Consecutive row groups of a Parquet file are gathered into partitions of about this many rows.
PARTITION_ROWS = 1_000_000


def _natural(path: str) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path)]


def _dataset_files(source: str) -> list[str]:
    if any(ch in source for ch in "*?["):
        files = [f for f in glob.glob(source, recursive=True) if os.path.isfile(f)]
        if not files:
            raise ValueError(f"{source}: no file matches")
    elif os.path.isdir(source):
        files = []
        for root, dirs, names in os.walk(source):
            dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
            files += [os.path.join(root, n) for n in names if not n.startswith((".", "_"))]
        if not files:
            raise ValueError(f"{source}: no CSV or Parquet files in this folder")
    elif os.path.exists(source):
        files = [source]
    else:
        raise ValueError(f"{source}: no such file or directory")
    return sorted(files, key=_natural)


def dataset_partitions(source: str | os.PathLike[str]) -> tuple[str, list[Partition]]:
    """The format (``"csv"`` or ``"parquet"``) and the partitions of a dataset, in order."""
    files = _dataset_files(str(source))
    formats = {}
    for f in files:
        try:
            formats[f] = table_format(f)
        except ValueError:
            raise ValueError(f"{f}: not a CSV or Parquet file (a dataset holds one table format)") from None
    kinds = set(formats.values())
    if len(kinds) > 1:
        raise ValueError(f"{source}: the dataset mixes CSV and Parquet files")
    fmt = kinds.pop()
    if fmt == "csv":
        return fmt, [(f, None) for f in files]
    parts: list[Partition] = []
    for f in files:
        try:
            md = pq.ParquetFile(f).metadata
        except Exception as exc:  # pyarrow raises several types for unreadable files
            raise ValueError(f"{f}: cannot read as Parquet: {exc}") from None
        groups: list[int] = []
        rows = 0
        for g in range(md.num_row_groups):
            if groups and rows + md.row_group(g).num_rows > PARTITION_ROWS:
                parts.append((f, groups))
                groups, rows = [], 0
            groups.append(g)
            rows += md.row_group(g).num_rows
        if groups:
            parts.append((f, groups))
    return fmt, parts


def _reader(part: Partition) -> TableReader:
    path, groups = part
    return TableReader(path, row_groups=groups)


def _scan_partition(part: Partition, column: str, by: str | None,
                    private_column: str | None) -> tuple[ScanState, tuple[str, ...]]:
    return scan(_reader(part), column=column, by=by, private_column=private_column)


def _scan_states_partition(part: Partition, columns: list[str], bins: dict, by: str | None,
                           private_column: str | None, labels: list[str] | None,
                           ) -> tuple[ScanState, tuple[str, ...], StatesCodec, np.ndarray, int]:
    """The scan of a partition of the protected column(s), in its own labels (``labels``: a given chain's
    states first), its private rows (0-based within the partition) and the number its reader gives its
    first row."""
    reader = _reader(part)
    codec = StatesCodec(columns, labels, bins=bins)
    flagged: list = []
    state, binary = scan(reader, column=codec.column, by=by, private_column=private_column, codec=codec,
                         private_rows=flagged)
    first = 1 if reader.format == "csv" else 1 + sum(
        pq.ParquetFile(part[0]).metadata.row_group(g).num_rows for g in range(part[1][0] if part[1] else 0))
    rows = np.concatenate(flagged) - first if flagged else np.zeros(0, dtype=np.int64)
    return state, binary, codec, rows, first


def _tally_partition(part: Partition, column: str, by: str | None, index: SequenceIndex, private: PrivateIndex,
                     span: Span, binary: tuple[str, ...], codec: Any = None, first_row: int = 0) -> ZoneTally:
    return tally_zones(_reader(part), index, private, span, column=column, by=by, binary=binary, codec=codec,
                       first_row=first_row)


def _write_partition(part: Partition, i: int, folder: str, column: str, by: str | None, redactor: Redactor,
                     index: SequenceIndex, span: Span, binary: tuple[str, ...],
                     output: Output, codec: Any = None) -> tuple[np.ndarray, Disclosure | None]:
    reader = _reader(part)
    suffix = "csv" if reader.format == "csv" else "parquet"
    with TableWriter(os.path.join(folder, f"part.{i:05d}.{suffix}")) as writer:
        write = write_csv if splices(reader, writer, output, codec) else write_redacted
        redacted = write(reader, writer, redactor, index, span, column=column, by=by, binary=binary, output=output,
                         codec=codec)
        writer.commit()
    return redacted, output.disclosure


@within_time_limit
def apply_dask(
    source: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    *,
    column: str,
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
    time_limit: float = 60.0,
    cache: DesignCache | None = None,
    report_sequences: str = "auto",
    robust: float | None = None,
    keep: list[str] | str | None = None,
    fit_on: str | os.PathLike[str] | None = None,
    order_by: str | None = None,
    chain: Any = None,
    categorical: bool = False,
    smoothing: str = "kt",
    simultaneous: bool = False,
    protect: list[str] | str | None = None,
    bins: Any = None,
) -> dict[str, Any]:
    """:func:`redactopt.release.apply.apply_table` for a CSV or Parquet dataset, computed with Dask.

    A categorical column (``categorical=True`` or a ``chain`` on more states than 0/1) is released
    as :func:`redactopt.release.states.apply_states_table` does (its report
    ``redactopt.release.kapply-report/1``): each partition is scanned in its own labels, which are
    made the dataset's (in order of first appearance, partition by partition) when the scans are
    merged.

    ``source`` is a folder, a glob pattern or a file (see the module docstring); ``dest``
    becomes a folder of ``part.NNNNN`` files of the input's format, one per partition, in
    order.  Uses the active ``dask.distributed`` client if there is one, else Dask's
    default scheduler.  Arguments as in :func:`~redactopt.release.apply.apply_table`;
    ``private`` holds 0-based positions.  The designs run as Dask tasks (``workers`` does
    not apply: the cluster decides).
    """
    dask = require("dask", purpose="the Dask back-end")
    if order_by is not None:
        raise ValueError("--order-by sorts each sequence in memory: use --backend memory (or write the dataset "
                         "in order)")
    fmt, parts, dst, rep_path = _check_dataset(source, dest, report, private=private, private_column=private_column,
                                               by=by, force=force, report_sequences=report_sequences)
    if is_categorical(chain=chain, categorical=categorical, protect=protect, bins=bins):
        refuse_binary_options(alpha=alpha, beta=beta, robust=robust, cache=cache, report_sequences=report_sequences)
        from redactopt.release.states import protected_columns  # builds on apply

        cols, bins_ = protected_columns(_reader(parts[0]), column, protect, bins)
        refuse_flag_protected(cols, private_column)
        return _apply_states_dask(dask, parts, fmt, source, dst, rep_path, columns=cols, bins=bins_, eps=eps,
                                  private=private,
                                  private_column=private_column, by=by, chain=chain, method=method, seed=seed,
                                  report=report, force=force, time_limit=time_limit, keep=keep, fit_on=fit_on,
                                  fit_kw=dict(smoothing=smoothing, simultaneous=simultaneous))
    alpha, beta = binary_chain(chain, alpha, beta, smoothing=smoothing, simultaneous=simultaneous)
    request = binary_request(column=column, eps=eps, private=private, private_column=private_column, by=by,
                             alpha=alpha, beta=beta, method=method, time_limit=time_limit, cache=cache,
                             workers=None, robust=robust, keep=keep, order_by=None)
    scans = dask.compute(*[dask.delayed(_scan_partition)(p, column, by, private_column) for p in parts])
    state, spans = _merged_scans(scans)
    first = _reader(parts[0])
    first.require(column, by, private_column)
    plan_output(first, column=column, by=by, order_by=None, private_column=private_column, keep=keep, rows=0)
    seq_index = SequenceIndex(state.ids)

    def tally(private_index: PrivateIndex) -> ZoneTally:  # one task per partition, merged in order
        pieces = dask.compute(*[dask.delayed(_tally_partition)(p, column, by, seq_index, private_index, spans[i],
                                                               scans[i][1]) for i, p in enumerate(parts)])
        total = ZoneTally(2, len(state.ids))
        for piece in pieces:
            total = total.merge(piece)
        return total

    counts = None if fit_on is None else fit_on_counts(fit_on, column=column, by=by, order_by=None)
    plan, fit_source = plan_fitted(
        state, tally=tally, private=private, fit_on=counts, eps=eps, alpha=alpha, beta=beta, method=method,
        robust=robust, time_limit=time_limit, cache=cache,
        map_designs=lambda fn, args: list(dask.compute(*[dask.delayed(fn)(*a) for a in args])))
    guard = ReleaseGuard()  # the model checks of every release (refused before anything is written)
    guard.judge_model(plan, fit=plan.fit, counts=plan.info.get("fit_counts"))
    if fit_on is not None:
        fit_source["table"] = str(fit_on)
    output, dropped = plan_output(first, column=column, by=by, order_by=None, private_column=private_column,
                                  keep=keep, rows=state.rows)
    planned = Planned(state=state, binary=(), plan=plan, fit_source=fit_source, ordered=None, output=output,
                      dropped=dropped, models=None)
    bits = bit_source(seed)
    t0 = time.perf_counter()

    def write(tmp: Path) -> dict[str, Any]:
        redacted = _write_partitions(dask, parts, scans, spans, tmp, column, by, Redactor(plan, bits), state, output)
        rep, rows = binary_report(planned, request, redacted=redacted, bits=bits, seed=seed, guard=guard, extra={
            "input": str(source), "output": str(dst), "backend": "dask", "dataset_format": fmt,
            "partitions": len(parts)}, sequences=report_sequences, to_file=report is not None and str(report) != STDIO,
            started=t0)
        if rep_path is not None:
            rep = write_report(report, rep, rows=rows, force=force)  # type: ignore[arg-type]
        return rep

    return _into_folder(dst, write)


def _into_folder(dst: Path, write: Any) -> dict[str, Any]:
    """``write(folder)`` into a temporary folder beside ``dst``, renamed into place when it returns (removed if
    it raises); its result."""
    tmp = Path(_tempfiles.temp_dir(prefix=f".{dst.name}.", suffix=".tmp", dir=dst.parent))
    os.chmod(tmp, new_file_mode(directory=True))  # mkdtemp's 0700 would outlive the rename
    try:
        rep = write(tmp)
        _replace_folder(tmp, dst)
    except BaseException:
        if tmp.exists():
            shutil.rmtree(tmp)
        raise
    finally:
        _tempfiles.settled(tmp)
    return rep


def _apply_states_dask(dask: Any, parts: list[Partition], fmt: str, source: Any, dst: Path, rep_path: Path | None, *,
                       columns: list[str], bins: dict, eps: float, private: list[int] | None,
                       private_column: str | None,
                       by: str | None, chain: Any, method: str, seed: int | None, report: Any, force: bool,
                       time_limit: float, keep: Any, fit_on: Any, fit_kw: dict) -> dict[str, Any]:
    """The Dask release of a categorical column (:func:`apply_dask`)."""
    from redactopt.release.states import fit_states_on, plan_states, states_report  # builds on apply

    given = None if chain is None else [str(s) for s in chain.labels]
    scans = dask.compute(*[dask.delayed(_scan_states_partition)(p, columns, bins, by, private_column, given)
                           for p in parts])
    codec = StatesCodec(columns, given, bins=bins)
    column = codec.column
    starts = np.cumsum([0] + [s.rows for s, _, _, _, _ in scans])
    # the dataset's states: in order of first appearance, partition by partition (rows named as the dataset's)
    moved = [codec.absorb(c, offset=int(starts[i]) - (first - 1), where=str(source))
             for i, (_, _, c, _, first) in enumerate(scans)]
    try:
        codec.freeze()
    except ValueError as exc:
        raise ValueError(f"{source}: {exc} (rows counted through the dataset)") from None
    state, spans = _merged_scans([(s.relabel(to, codec.k), b) for (s, b, _, _, _), to in zip(scans, moved)])
    k = codec.k
    if state.rows == 0:
        raise ValueError(f"{source}: the dataset has no data rows")
    check_private_positions(state, private)
    first = _reader(parts[0])
    first.require(column, by, private_column)
    plan_output(first, column=columns, by=by, order_by=None, private_column=private_column, keep=keep, rows=0)
    seq_index = SequenceIndex(state.ids)

    def tally(private_index: PrivateIndex) -> ZoneTally:
        pieces = dask.compute(*[dask.delayed(_tally_partition)(p, column, by, seq_index, private_index, spans[i],
                                                               scans[i][1], codec, int(starts[i]))
                                for i, p in enumerate(parts)])
        total = ZoneTally(k, len(state.ids), k <= MAX_TRIPLE_STATES)
        for piece in pieces:
            total = total.merge(piece)
        return total

    fitted = None if fit_on is None or chain is not None else fit_states_on(fit_on, columns=columns, bins=bins,
                                                                           by=by, order_by=None, **fit_kw)
    kplan, fit_source = plan_states(state, codec, tally=tally, chain=chain, fitted=fitted, private=private,
                                    fit_kw=fit_kw, design=dict(
                                        eps=eps, method=method, time_limit=time_limit,
                                        map_designs=lambda fn, args: list(dask.compute(*[dask.delayed(fn)(*a)
                                                                                         for a in args]))))
    if fitted is not None:
        fit_source["table"] = str(fit_on)
    guard = ReleaseGuard()  # the model checks of every release (refused before anything is written)
    guard.judge_model(kplan.release, fit=kplan.fit, counts=None, binary=False)
    designed = np.zeros(len(state.ids), dtype=bool)
    designed[kplan.release.designed()] = True
    codec.use_chain(kplan.chain, designed)
    output, dropped = plan_output(first, column=columns, by=by, order_by=None, private_column=private_column,
                                  keep=keep, rows=state.rows, labels=[str(s) for s in kplan.chain.labels])
    private_rows = [p + 1 for p in sorted(set(private))] if private is not None else \
        sorted(int(starts[i] + r + 1) for i, (_, _, _, rows, _) in enumerate(scans) for r in rows.tolist())

    def write(tmp: Path) -> dict[str, Any]:
        redacted = _write_partitions(dask, parts, [(s, b) for s, b, _, _, _ in scans], spans, tmp, column, by,
                                     Redactor(kplan.release, bit_source(seed)), state, output, codec)
        rep = states_report(kplan, state, redacted, private_rows, seed=seed, codec=codec, by=by, output=output,
                            dropped=dropped, fit_source=fit_source, order_by=None,
                            written=output.columns or reader_columns(first), guard=guard)
        rep = {"notice": rep["notice"], "input": str(source), "output": str(dst), "input_format": fmt,
               "backend": "dask", "partitions": len(parts), **rep}
        if rep_path is not None:
            write_text_atomic(report, report_text(rep), force=force)
        return rep

    return _into_folder(dst, write)


def _check_dataset(source: Any, dest: Any, report: Any, **checks: Any) -> tuple[str, list[Partition], Path,
                                                                                  Path | None]:
    """The dataset's format and partitions, and the paths checked (:func:`check_release_paths`): no input file
    may be the output or the report."""
    if STDIO in (str(source), str(dest)):
        raise ValueError("the Dask back-end reads and writes datasets, not standard input or output")
    fmt, parts = dataset_partitions(source)
    files = sorted({p for p, _ in parts}, key=_natural)
    anchor = source if os.path.exists(str(source)) else files[0]
    _, dst, rep_path = check_release_paths(anchor, dest, report, dest_is_directory=True, **checks)
    for f in files:  # a glob's files, one by one: none may be the output or the report
        if any(p is not None and str(p) != STDIO and Path(p).resolve() == Path(f).resolve() for p in (dest, report)):
            raise ValueError(f"{f}: is an input file; the input is never overwritten")
    return fmt, parts, dst, rep_path


def _merged_scans(scans: Any) -> tuple[ScanState, list[Span]]:
    """The partitions' scans merged in order, and where each partition lies in every sequence."""
    state = ScanState()
    ends = []
    for s, _ in scans:
        state = state.merge(s)
        ends.append(state.n.copy())  # records of each id up to the end of this partition
    k = len(state.ids)
    ends = [np.pad(e, (0, k - e.shape[0])) for e in ends]
    return state, [Span(ends[i - 1] if i else np.zeros(k, dtype=np.int64), ends[i]) for i in range(len(ends))]


def _write_partitions(dask: Any, parts: list[Partition], scans: Any, spans: list[Span], tmp: Path, column: str,
                      by: str | None, redactor: Redactor, state: ScanState, output: Output,
                      codec: Any = None) -> np.ndarray:
    """Every partition redacted and written on the workers; the redacted count per sequence.  Each partition
    measures its rows for the figures on its own, and the measures are merged here in order."""
    starts = np.cumsum([0] + [s.rows for s, _ in scans])
    shared, index = dask.delayed(redactor), dask.delayed(state.index())  # sent to the workers once
    written = dask.compute(*[dask.delayed(_write_partition)(
        p, i, str(tmp), column, by, shared, index, spans[i], scans[i][1],
        replace(output, first_row=int(starts[i]), disclosure=output.disclosure.fresh() if output.disclosure else None),
        codec) for i, p in enumerate(parts)])
    for _, seen in written:
        if seen is not None and output.disclosure is not None:
            output.disclosure.merge(seen)
    k = len(state.ids)
    return np.sum(np.vstack([w[0] for w in written]), axis=0) if written else np.zeros(k, dtype=np.int64)


def _replace_folder(tmp: Path, dst: Path) -> None:
    """Rename the finished output folder into place (an existing one, allowed by ``force``, is replaced)."""
    if not dst.exists():
        os.replace(tmp, dst)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{dst.name}.old.", dir=dst.parent))
    os.rmdir(old)
    os.replace(dst, old)
    os.replace(tmp, dst)
    if old.is_dir():
        shutil.rmtree(old)
    else:
        old.unlink()


#: The 0.1 name, from when the back-end read Parquet only.
apply_parquet_dask = apply_dask
