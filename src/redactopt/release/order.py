"""``--order-by``: the records of each sequence in the order of a column, not of the file.

A chain is a sequence in time; a file need not hold its rows in that order (days that sort
as text, "+10" before "+2"; rows appended out of order).  :func:`sequence_order` reads the
order column (with ``--by`` and the columns the release needs) and gives every row its
position in its sequence, in the order of the column's values — numbers as numbers,
datetimes as datetimes, anything else as text (:func:`redactopt.release.columns.read_kind`).
A missing value, or two rows of one sequence with the same value, is an error naming the
rows: the order would be a guess.  The release keeps the input's row order; only the
positions (and so the chain's transitions) follow the column.

This holds the needed columns in memory (a few bytes per row): a file already in order needs
no ``--order-by``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from redactopt.release.columns import read_kind
from redactopt.release.data import factorize
from redactopt.release.tables import MemoryReader

__all__ = ["Ordered", "sequence_order", "order_frame", "order_keys"]


@dataclass(frozen=True)
class Ordered:
    """The rows of a table in sequence order.

    ``reader`` reads them sorted (each sequence's rows by the order column, sequences in order
    of first appearance); ``rank[r]`` is the 0-based position of file row ``r`` in its sequence;
    ``kind`` how the order column was read.
    """

    reader: MemoryReader
    rank: np.ndarray
    kind: str
    moved: int


def order_keys(values: Any, name: str, where: str) -> tuple[np.ndarray, str]:
    s = pd.Series(values.to_pandas() if hasattr(values, "to_pandas") else values)
    missing = s.isna().to_numpy(dtype=bool, copy=True)
    if not (pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_datetime64_any_dtype(s.dtype)):
        missing |= s.astype(object).map(lambda v: v is None or str(v).strip() == "").to_numpy(dtype=bool)
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        raise ValueError(f"{where}: row {i + 1}, column '{name}' (--order-by): missing value")
    kind, num = read_kind(s)
    if kind == "text":
        codes, _ = pd.factorize(s.astype(str), sort=True)
        return codes.astype(np.int64), kind
    return np.asarray(num), kind


def order_frame(seq_codes: np.ndarray, keys: np.ndarray, *, ids: list, name: str, where: str) -> np.ndarray:
    """The permutation sorting rows by (sequence code, key), stable; duplicate keys in a sequence are an error."""
    perm = np.lexsort((keys, seq_codes))
    sc, sk = seq_codes[perm], keys[perm]
    dup = np.flatnonzero((sc[1:] == sc[:-1]) & (sk[1:] == sk[:-1]))
    if dup.size:
        a, b = sorted((int(perm[dup[0]]), int(perm[dup[0] + 1])))
        seq = "" if ids[int(sc[dup[0]])] is None else f" of sequence {ids[int(sc[dup[0]])]!r}"
        raise ValueError(f"{where}: rows {a + 1} and {b + 1}{seq} have the same --order-by value in column "
                         f"'{name}': the order of the sequence is ambiguous")
    return perm


def sequence_order(table: pa.Table, *, by: str | None, order_by: str, where: str,
                   chunk_rows: int) -> Ordered:
    """The rows of ``table`` (the columns a release reads, with ``order_by``) in sequence order (module docstring)."""
    n = table.num_rows
    if by is None:
        codes, ids = np.zeros(n, dtype=np.int64), [None]
    else:
        codes, ids = factorize(table.column(by))
    keys, kind = order_keys(table.column(order_by), order_by, where)
    perm = order_frame(codes, keys, ids=ids, name=order_by, where=where)
    counts = np.bincount(codes, minlength=len(ids))
    starts = np.r_[0, np.cumsum(counts)[:-1]]
    rank = np.empty(n, dtype=np.int64)
    rank[perm] = np.arange(n) - starts[codes[perm]]
    in_file = np.empty(n, dtype=np.int64)  # the position each row has in file order
    order = np.argsort(codes, kind="stable")
    in_file[order] = np.arange(n) - starts[codes[order]]
    moved = int((rank != in_file).sum())
    return Ordered(MemoryReader(table.take(pa.array(perm)), chunk_rows=chunk_rows, label=where), rank, kind, moved)
