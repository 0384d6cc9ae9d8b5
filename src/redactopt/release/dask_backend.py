"""Optional Dask back-end of ``apply``: the same release, computed across the partitions of a Parquet dataset.

Install with ``pip install redactopt[dask]``.  The work splits exactly as in the
in-memory path (:mod:`redactopt.release.apply`):

1. every partition is scanned on the workers (:meth:`redactopt.release.data.ScanState.of_chunk`);
   the scans are merged on the client *in partition order*, which gives the same
   sequence lengths, transition counts (including transitions across partition
   boundaries) and private positions as one pass over the whole dataset;
2. the chain is fitted and every sequence with private records is designed on the
   client (:func:`redactopt.release.plan.plan_release`);
3. every partition is redacted on the workers, with each row's position in its
   sequence computed from the per-partition offsets of step 1, and written as
   ``part.NNNNN.parquet`` of a temporary folder beside the destination, which is
   renamed into place only when all partitions succeeded.

Because a seeded draw for record ``t`` of sequence ``s`` is word ``t`` of the stream of
``s`` (:class:`redactopt.release.bits.SeededBits`), the output is identical, row for row, to
:func:`redactopt.release.apply.apply_table` on the same rows with the same seed, however the
rows are partitioned.  Sequences may span partitions; the rows of a sequence are taken
in dataset order.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from redactopt._optional import require
from redactopt.io import STDIO, new_file_mode
from redactopt.release.apply import check_release_paths
from redactopt.release.bits import bit_source
from redactopt.release.data import ScanState, group_ranks, id_key, parse_binary
from redactopt.release.plan import plan_release
from redactopt.release.redactor import Redactor
from redactopt.release.report import build_report, write_report

__all__ = ["apply_parquet_dask"]


def _where(i: int) -> str:
    return f"partition {i}"


def _arrow_column(frame: Any, name: str) -> Any:
    return pa.Array.from_pandas(frame[name])


def _ids(frame: Any, by: str, i: int) -> np.ndarray:
    col = frame[by]
    if col.isna().any():
        r = int(np.flatnonzero(col.isna().to_numpy())[0])
        raise ValueError(f"{_where(i)}: row {r + 1}, column '{by}': missing value")
    return col.to_numpy(dtype=object)


def _scan_partition(frame: Any, i: int, column: str, by: str | None, private_column: str | None) -> ScanState:
    for name in (column, by, private_column):
        if name is not None and name not in frame.columns:
            raise ValueError(f"no column '{name}' (columns: {', '.join(map(str, frame.columns))})")
    values = parse_binary(_arrow_column(frame, column), column=column, first_row=1, where=_where(i))
    ids = _ids(frame, by, i) if by else None
    flags = None
    if private_column:
        flags = parse_binary(_arrow_column(frame, private_column), column=private_column, first_row=1,
                             where=_where(i))
    return ScanState.of_chunk(values, ids, flags)


def _redact_partition(frame: Any, i: int, column: str, by: str | None, redactor: Redactor,
                      index: dict, offsets: np.ndarray, folder: str) -> np.ndarray:
    values = parse_binary(_arrow_column(frame, column), column=column, first_row=1, where=_where(i))
    m = values.shape[0]
    if by is None:
        codes = None
        pos = offsets[0] + np.arange(m, dtype=np.int64)
    else:
        ids = _ids(frame, by, i)
        codes = np.fromiter((index[id_key(v)] for v in ids), dtype=np.int64, count=m)
        rank, _ = group_ranks(codes)
        pos = offsets[codes] + rank
    mask = redactor.redact(codes, pos, values)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    j = table.schema.get_field_index(column)
    col = table.column(j)
    new = pc.if_else(pa.array(mask), pa.scalar(None, type=col.type), col)
    table = table.set_column(j, pa.field(column, col.type, nullable=True), new)
    pq.write_table(table, os.path.join(folder, f"part.{i:05d}.parquet"))
    k = offsets.shape[0]
    if codes is None:
        return np.array([int(mask.sum())], dtype=np.int64)
    return np.bincount(codes[mask], minlength=k).astype(np.int64)


def apply_parquet_dask(
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
    time_limit: float = 60.0,
) -> dict[str, Any]:
    """:func:`redactopt.release.apply.apply_table` for a Parquet file or dataset folder, computed with Dask.

    ``dest`` becomes a folder of Parquet files (``part.00000.parquet``, ...), in the
    order of the input partitions.  Uses the active ``dask.distributed`` client if
    there is one, else Dask's default scheduler.  Arguments as in
    :func:`~redactopt.release.apply.apply_table`; ``private`` holds 0-based positions.
    """
    dask = require("dask", purpose="the Dask back-end")
    dd = require("dask.dataframe", purpose="the Dask back-end")
    if STDIO in (str(source), str(dest)):
        raise ValueError("the Dask back-end reads and writes Parquet datasets, not standard input or output")
    src, dst, rep_path = check_release_paths(source, dest, report, private=private,
                                             private_column=private_column, by=by, force=force,
                                             dest_is_directory=True)
    try:
        ddf = dd.read_parquet(str(src))
    except Exception as exc:  # dask/pyarrow raise several types for unreadable data
        raise ValueError(f"{src}: cannot read as Parquet: {exc}") from None
    parts = ddf.to_delayed()
    scans = dask.compute(*[dask.delayed(_scan_partition)(p, i, column, by, private_column)
                           for i, p in enumerate(parts)])
    state = ScanState()
    offsets_by_part: list[np.ndarray] = []
    for s in scans:
        state = state.merge(s)
        offsets_by_part.append(state.n.copy())  # records of each id up to the end of this partition
    k = len(state.ids)
    # offsets at the *start* of each partition, over the final id set
    starts = []
    prev = np.zeros(k, dtype=np.int64)
    for after in offsets_by_part:
        starts.append(prev.copy())
        cur = np.zeros(k, dtype=np.int64)
        cur[: after.shape[0]] = after
        prev = cur
    plan = plan_release(state, eps=eps, private=private, alpha=alpha, beta=beta, method=method,
                        time_limit=time_limit)
    bits = bit_source(seed)
    redactor = Redactor(plan.plans, bits)
    index = state.index()
    tmp = Path(tempfile.mkdtemp(prefix=f".{dst.name}.", suffix=".tmp", dir=dst.parent))
    os.chmod(tmp, new_file_mode(directory=True))  # mkdtemp's 0700 would outlive the rename
    t0 = time.perf_counter()
    try:
        counts = dask.compute(*[dask.delayed(_redact_partition)(p, i, column, by, redactor, index,
                                                                starts[i], str(tmp))
                                for i, p in enumerate(parts)])
        redacted = np.sum(np.vstack(counts), axis=0) if counts else np.zeros(k, dtype=np.int64)
        rep = build_report(plan, redacted=redacted, source=bits, seed=seed, extra={
            "input": str(src), "output": str(dst), "column": column, "by": by,
            "private_column": private_column, "backend": "dask", "partitions": len(parts)})
        rep["apply_seconds"] = time.perf_counter() - t0
        if dst.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{dst.name}.old.", dir=dst.parent))
            os.rmdir(old)
            os.replace(dst, old)
            os.replace(tmp, dst)
            if old.is_dir():
                shutil.rmtree(old)
            else:
                old.unlink()
        else:
            os.replace(tmp, dst)
    except BaseException:
        if tmp.exists():
            shutil.rmtree(tmp)
        raise
    if rep_path is not None:
        write_report(report, rep, force=True)  # type: ignore[arg-type]
    return rep
