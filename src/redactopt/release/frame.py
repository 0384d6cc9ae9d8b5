"""Releasing a table already in memory: a pandas DataFrame, a pyarrow Table, or a polars DataFrame.

:func:`apply_frame` takes the same options as :func:`redactopt.release.apply.apply_table`
and returns the released table (of the same kind as the input) and the report, without
files.  The draws are those of the file path for the same seed: record ``t`` of sequence
``s`` uses word ``t`` of the stream of ``s`` (:mod:`redactopt.release.bits`), whatever
holds the rows.  The released table holds the protected column, ``by`` and ``order_by``, and
the columns named in ``keep`` (the same buffers, no copy); the protected one gets missing
values for ⊥ (pandas: a nullable dtype — ``Int64``, ``boolean`` — for integer and boolean
columns; Arrow and polars: nulls).
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from redactopt.engine.cache import DesignCache
from redactopt.release.apply import binary_chain, is_categorical, refuse_binary_options
from redactopt.release.driver import Planned, binary_report, binary_request, plan_binary
from redactopt.release.passes import check_release_options, fit_on_counts, ordered_scan, redacted_rows, scan
from redactopt.release.guard import ReleaseGuard
from redactopt.release.bits import bit_source
from redactopt.release.redactor import Redactor
from redactopt.release.tables import DEFAULT_CHUNK_ROWS, MemoryReader, written_metadata
from redactopt.release.plan import within_time_limit

__all__ = ["apply_frame"]


def _nullable(series: pd.Series) -> pd.Series:
    """A pandas column that can hold missing values without changing its values' type."""
    kind = series.dtype.kind
    if kind in "iu" and isinstance(series.dtype, np.dtype):
        return series.astype(("UInt" if kind == "u" else "Int") + str(8 * series.dtype.itemsize))
    if kind == "b" and isinstance(series.dtype, np.dtype):
        return series.astype("boolean")
    return series


@within_time_limit
def apply_frame(
    data: Any,
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
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    time_limit: float = 60.0,
    workers: int | None = None,
    cache: DesignCache | None = None,
    report_sequences: str = "auto",
    robust: float | None = None,
    keep: list[str] | str | None = None,
    order_by: str | None = None,
    fit_on: Any = None,
    chain: Any = None,
    categorical: bool = False,
    protect: list[str] | str | None = None,
    bins: Any = None,
    smoothing: str = "kt",
    simultaneous: bool = False,
    cover: int | None = None,
    accept_model: bool = False,
) -> tuple[Any, dict[str, Any]]:
    """Design, draw and redact a table in memory; returns ``(released, report)``.

    One entry for every chain, as :func:`redactopt.release.apply.apply_table`: a 0/1 ``column`` is
    the default; ``categorical=True``, a ``chain`` on more than two states, or ``protect``/``bins``
    release a pandas DataFrame's categorical column(s) through the same passes
    (:func:`redactopt.release.states.apply_states_frame`; ``fit_on`` then a DataFrame).

    Parameters
    ----------
    data : pandas.DataFrame, pyarrow.Table or polars.DataFrame
        The rows (per ``by`` value, in sequence order unless ``order_by``); never modified.
    column, eps, private, private_column, by, alpha, beta, method, seed, time_limit, workers, cache, keep, order_by
        As for :func:`redactopt.release.apply.apply_table` (``private`` 0-based).  By default
        the released table holds ``column``, ``by`` and ``order_by`` only; ``keep`` names more
        (``"all"``: every column but ``private_column``), each listed in the report as not
        covered by the guarantee, with what it reveals.
    fit_on : table or path, optional
        A separate, public table (in memory, or a file) to fit the chain on.
    cover, accept_model
        As for :func:`redactopt.release.apply.apply_table`: decoys per private run, and releasing although
        the time order, a model test or unseen states would refuse it (stated in the report's first
        line).  :func:`redactopt.release.reveals.public_report` makes the report without private
        positions from the returned one.
    report_sequences : str
        ``"auto"``/``"inline"``: the per-sequence rows in the report (each with its mechanism
        up to 20 designed sequences); ``"none"``: the summary alone.
    chunk_rows : int
        Rows handled at a time (the temporary memory of the draws grows with it).

    Returns
    -------
    released
        A table of the same kind as ``data``, the same rows (in the same order), the written
        columns, with ``column`` missing (null / ``<NA>``) where a record is redacted.
    report : dict
        :func:`redactopt.release.report.build_report` (``input`` and ``output`` are ``None``),
        with ``columns``, the chain's ``fit_rows`` and the plain-language ``summary``.
    """
    if is_categorical(chain=chain, categorical=categorical, protect=protect, bins=bins):
        refuse_binary_options(alpha=alpha, beta=beta, robust=robust, cache=cache, report_sequences=report_sequences)
        from redactopt.release.states import apply_states_frame

        return apply_states_frame(data, column=column, eps=eps, private=private, private_column=private_column,
                                  by=by, chain=chain, method=method, seed=seed, time_limit=time_limit,
                                  smoothing=smoothing, simultaneous=simultaneous, workers=workers, protect=protect,
                                  bins=bins, keep=keep, order_by=order_by, fit_on=fit_on, chunk_rows=chunk_rows,
                                  cover=cover, accept_model=accept_model)
    alpha, beta = binary_chain(chain, alpha, beta, smoothing=smoothing, simultaneous=simultaneous)
    request = binary_request(column=column, eps=eps, private=private, private_column=private_column, by=by,
                             alpha=alpha, beta=beta, method=method, time_limit=time_limit, cache=cache,
                             workers=workers, robust=robust, keep=keep, order_by=order_by)
    check_release_options(private=private, private_column=private_column, by=by)
    guard = ReleaseGuard(cover=cover, accept_model=accept_model, seed=seed)
    if report_sequences not in ("auto", "inline", "none"):
        raise ValueError(f"report_sequences must be 'auto', 'inline' or 'none' without a report file, "
                         f"got {report_sequences!r}")
    polars = type(data).__module__.split(".")[0] == "polars"
    table = data.to_arrow() if polars else data
    reader = MemoryReader(table, chunk_rows=chunk_rows)
    planned = plan_binary(reader, request, guard=guard, fit_table=None if fit_on is None else (
        fit_on if isinstance(fit_on, str) else "<table>"), fit_counts=None if fit_on is None else lambda: _fit_on(
            fit_on, column=request.column, by=by, order_by=order_by))
    bits = bit_source(seed)
    t0 = time.perf_counter()
    mask, redacted = _redact(reader, planned, Redactor(planned.plan, bits), request.column, by)
    released = _released(table, request.column, mask, planned.output.columns)
    if polars:
        import polars as pl

        released = pl.from_arrow(released)
    rep, _ = binary_report(planned, request, redacted=redacted, bits=bits, seed=seed, guard=guard,
                           extra={"input": None, "output": None}, sequences=report_sequences, started=t0)
    return released, rep


def _redact(reader: MemoryReader, planned: Planned, redactor: Redactor, column: str,
            by: str | None) -> tuple[np.ndarray, np.ndarray]:
    """Draw every row of ``reader``: the mask of redacted rows and the number redacted per sequence
    (the output's disclosure measures the written columns as they go)."""
    output = planned.output
    k = len(planned.plan.state.ids)
    counter = np.zeros(k, dtype=np.int64)
    redacted = np.zeros(k, dtype=np.int64)
    mask = np.zeros(reader.num_rows, dtype=bool)
    read = list(dict.fromkeys([column] + (output.columns or reader.columns)))
    for chunk, values, codes, m in redacted_rows(reader, redactor, planned.plan.state.index(), column=column, by=by,
                                                 counter=counter, columns=read, rank=output.rank):
        mask[chunk.first_row - 1 : chunk.first_row - 1 + len(chunk)] = m
        redacted += np.bincount(codes[m], minlength=k) if codes is not None else [int(m.sum())]
        output.observe(chunk, values, m)
    return mask, redacted


def _fit_on(table: Any, *, column: str, by: str | None, order_by: str | None) -> Any:
    """The transition counts of a public table given in memory or as a file (``fit_on``)."""
    if isinstance(table, (str, os.PathLike)):
        return fit_on_counts(table, column=column, by=by, order_by=order_by)
    if type(table).__module__.split(".")[0] == "polars":
        table = table.to_arrow()
    reader = MemoryReader(table)
    reader.require(column)
    by = by if by in reader.columns else None
    if order_by is not None and order_by in reader.columns:
        state, _ = ordered_scan(reader, column=column, by=by, private_column=None, order_by=order_by)
    else:
        state, _ = scan(reader, column=column, by=by)
    return state.counts()


def _released(table: Any, column: str, mask: np.ndarray, columns: list[str] | None) -> Any:
    """The written columns of ``table`` with ``column`` missing where ``mask``."""
    if isinstance(table, pd.DataFrame):
        released: Any = table.copy(deep=False) if columns is None else table[columns].copy(deep=False)
        released[column] = _nullable(table[column]).mask(mask)
        return released
    sub = table if columns is None else table.select(columns)
    i = sub.schema.get_field_index(column)
    col = sub.column(i)
    new = pc.if_else(pa.array(mask), pa.scalar(None, type=col.type), col) if mask.any() else col
    out = sub.set_column(i, pa.field(column, col.type, nullable=True), new)
    return out.replace_schema_metadata(written_metadata(out.schema.metadata, out.column_names))
