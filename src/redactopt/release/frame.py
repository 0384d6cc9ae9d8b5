"""Releasing a table already in memory: a pandas DataFrame, a pyarrow Table, or a polars DataFrame.

:func:`apply_frame` takes the same options as :func:`redactopt.release.apply.apply_table`
and returns the released table (of the same kind as the input) and the report, without
files.  The draws are those of the file path for the same seed: record ``t`` of sequence
``s`` uses word ``t`` of the stream of ``s`` (:mod:`redactopt.release.bits`), whatever
holds the rows.  Every column but the protected one is passed through untouched (the
same buffers, no copy); the protected one gets missing values for ⊥ (pandas: a nullable
dtype — ``Int64``, ``boolean`` — for integer and boolean columns; Arrow and polars: nulls).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from redactopt.engine.cache import DesignCache
from redactopt.release.apply import check_release_options, redacted_rows, scan
from redactopt.release.bits import bit_source
from redactopt.release.plan import plan_release
from redactopt.release.redactor import Redactor
from redactopt.release.report import build_report
from redactopt.release.tables import DEFAULT_CHUNK_ROWS, MemoryReader

__all__ = ["apply_frame"]


def _nullable(series: pd.Series) -> pd.Series:
    """A pandas column that can hold missing values without changing its values' type."""
    kind = series.dtype.kind
    if kind in "iu" and isinstance(series.dtype, np.dtype):
        return series.astype(("UInt" if kind == "u" else "Int") + str(8 * series.dtype.itemsize))
    if kind == "b" and isinstance(series.dtype, np.dtype):
        return series.astype("boolean")
    return series


def apply_frame(
    data: Any,
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
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    time_limit: float = 60.0,
    workers: int | None = None,
    cache: DesignCache | None = None,
    report_sequences: str = "auto",
    robust: float | None = None,
) -> tuple[Any, dict[str, Any]]:
    """Design, draw and redact a table in memory; returns ``(released, report)``.

    Parameters
    ----------
    data : pandas.DataFrame, pyarrow.Table or polars.DataFrame
        The rows, in sequence order (per ``by`` value); never modified.
    column, eps, private, private_column, by, alpha, beta, method, seed, time_limit, workers, cache
        As for :func:`redactopt.release.apply.apply_table` (``private`` 0-based).
    report_sequences : str
        ``"auto"``/``"inline"``: the per-sequence rows in the report (each with its mechanism
        up to 20 designed sequences); ``"none"``: the summary alone.
    chunk_rows : int
        Rows handled at a time (the temporary memory of the draws grows with it).

    Returns
    -------
    released
        A table of the same kind as ``data``, the same rows and columns, with ``column``
        missing (null / ``<NA>``) where a record is redacted.
    report : dict
        :func:`redactopt.release.report.build_report` (``input`` and ``output`` are ``None``).
    """
    check_release_options(private=private, private_column=private_column, by=by)
    if report_sequences not in ("auto", "inline", "none"):
        raise ValueError(f"report_sequences must be 'auto', 'inline' or 'none' without a report file, "
                         f"got {report_sequences!r}")
    polars = type(data).__module__.split(".")[0] == "polars"
    table = data.to_arrow() if polars else data
    reader = MemoryReader(table, chunk_rows=chunk_rows)
    state, _ = scan(reader, column=column, by=by, private_column=private_column)
    plan = plan_release(state, eps=eps, private=private, alpha=alpha, beta=beta, method=method, robust=robust,
                        time_limit=time_limit, workers=workers, cache=cache)
    bits = bit_source(seed)
    redactor = Redactor(plan, bits)
    t0 = time.perf_counter()
    k = len(plan.state.ids)
    counter = np.zeros(k, dtype=np.int64)
    redacted = np.zeros(k, dtype=np.int64)
    mask = np.zeros(reader.num_rows, dtype=bool)
    for chunk, _, codes, m in redacted_rows(reader, redactor, plan.state.index(), column=column, by=by,
                                            counter=counter, columns=[c for c in (column, by) if c]):
        mask[chunk.first_row - 1 : chunk.first_row - 1 + len(chunk)] = m
        redacted += np.bincount(codes[m], minlength=k) if codes is not None else [int(m.sum())]
    if isinstance(table, pd.DataFrame):
        released: Any = table.copy(deep=False)  # the other columns are shared, not copied
        released[column] = _nullable(table[column]).mask(mask)
    else:
        i = table.schema.get_field_index(column)
        col = table.column(i)
        new = pc.if_else(pa.array(mask), pa.scalar(None, type=col.type), col) if mask.any() else col
        released = table.set_column(i, pa.field(column, col.type, nullable=True), new)
        if polars:
            import polars as pl

            released = pl.from_arrow(released)
    rep, _ = build_report(plan, redacted=redacted, source=bits, seed=seed, extra={
        "input": None, "output": None, "column": column, "by": by, "private_column": private_column},
        sequences=report_sequences)
    rep["apply_seconds"] = time.perf_counter() - t0
    return released, rep
