"""Which columns a release writes, how numeric columns become categories, and how a column's type is read.

**What a release writes** (:func:`output_columns`).  By default the protected column(s), the
``--by`` column and the ``--order-by`` column, and nothing else: any other column is written
only when named (``keep=[...]``, ``--keep``) or with ``keep="all"`` (``--keep-all``), and the
private-flag column only when named in ``keep`` — ``"all"`` leaves it out.  Every written
column other than the protected ones is *not covered* by the guarantee (the report measures
what each reveals: :mod:`redactopt.release.disclosure`).

**Bins** (:class:`Bins`): ``Light:100,400`` turns a numeric column into the categories
``<100``, ``100-400`` and ``>=400`` (edges strictly increasing; a value equal to an edge goes
to the bin above it).  A binned protected column is written as its category, never as the
number.

**Types** (:func:`read_kind`).  CSV columns are read as text; a column is a *number* when
every non-empty value parses as one, a *datetime* when every non-empty value parses as a
date or time, and *text* otherwise — the order of ``--order-by`` and the rules of the
disclosure figures follow it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

__all__ = ["Bins", "parse_bins", "parse_columns", "output_columns", "read_kind", "KEEP_ALL"]

#: ``keep=KEEP_ALL``: write every column (but the private-flag column, unless named too).
KEEP_ALL = "all"


def parse_columns(text: str | Sequence[str] | None, option: str) -> list[str]:
    """``"a,b"`` or ``["a", "b"]`` as a list of distinct, non-empty column names."""
    if text is None:
        return []
    names = [s.strip() for s in text.split(",")] if isinstance(text, str) else [str(s) for s in text]
    if any(not s for s in names):
        raise ValueError(f"{option}: an empty column name in {text!r}")
    dup = sorted({s for s in names if names.count(s) > 1})
    if dup:
        raise ValueError(f"{option}: column {dup[0]!r} named twice")
    return names


@dataclass(frozen=True)
class Bins:
    """Bin edges of a numeric column (strictly increasing): ``len(edges) + 1`` categories."""

    column: str
    edges: tuple[float, ...]

    @property
    def labels(self) -> list[str]:
        e = [_num(x) for x in self.edges]
        return [f"<{e[0]}"] + [f"{a}-{b}" for a, b in zip(e[:-1], e[1:])] + [f">={e[-1]}"]

    def codes(self, values: Any, where: str = "table", *, first_row: int = 1) -> np.ndarray:
        """The bin of every value (``int64``); a missing or non-numeric value is an error naming the row
        (``first_row``: the number of the first value's row)."""
        x = _as_numbers(values, self.column, where, first_row)
        return np.searchsorted(np.asarray(self.edges), x, side="right").astype(np.int64)

    def apply(self, values: Any, where: str = "table") -> np.ndarray:
        """The category label of every value (an object array of text)."""
        return np.asarray(self.labels, dtype=object)[self.codes(values, where)]

    def to_dict(self) -> dict[str, Any]:
        return {"column": self.column, "edges": list(self.edges), "labels": self.labels}


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(float(x))


def _as_numbers(values: Any, column: str, where: str, first_row: int = 1) -> np.ndarray:
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = values.to_pandas()
    s = pd.Series(np.asarray(values, dtype=object)) if not isinstance(values, pd.Series) else values
    x = pd.to_numeric(s.replace("", np.nan), errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    bad = np.flatnonzero(~np.isfinite(x))
    if bad.size:
        i = int(bad[0])
        v = s.iloc[i]
        what = "a missing value" if v is None or (isinstance(v, float) and math.isnan(v)) or str(v).strip() == "" \
            else f"value {str(v)!r}, not a finite number"
        raise ValueError(f"{where}: row {i + first_row}, column {column!r}: {what} (--bin needs numbers)")
    return x


def parse_bins(specs: Sequence[str] | str | None) -> dict[str, Bins]:
    """``["Light:100,400", ...]`` (or one string) as ``{column: Bins}``; edges must be finite and increasing."""
    if specs is None:
        return {}
    specs = [specs] if isinstance(specs, str) else list(specs)
    out: dict[str, Bins] = {}
    for spec in specs:
        if isinstance(spec, Bins):
            out[spec.column] = spec
            continue
        col, sep, rest = str(spec).rpartition(":")
        if not sep or not col or not rest:
            raise ValueError(f"--bin {spec!r}: expected COLUMN:EDGE[,EDGE...], e.g. Light:100,400")
        try:
            edges = tuple(float(e) for e in rest.split(","))
        except ValueError:
            raise ValueError(f"--bin {spec!r}: edges must be numbers, got {rest!r}") from None
        if not all(math.isfinite(e) for e in edges):
            raise ValueError(f"--bin {spec!r}: edges must be finite")
        if any(b <= a for a, b in zip(edges[:-1], edges[1:])):
            raise ValueError(f"--bin {spec!r}: edges must be strictly increasing")
        if col in out:
            raise ValueError(f"--bin: column {col!r} binned twice")
        out[col] = Bins(col, edges)
    return out


def output_columns(columns: Sequence[str], *, protected: Sequence[str], by: str | None, order_by: str | None,
                   private_column: str | None, keep: Sequence[str] | str | None) -> tuple[list[str], list[str]]:
    """The columns a release writes (in the input's order) and the *kept* ones among them (neither
    protected, nor ``by``, nor ``order_by``).  A name in ``keep`` that is not a column is an error;
    ``"all"`` (alone, or in the list: ``["all", "optout"]``) stands for every column but ``private_column``."""
    cols = [str(c) for c in columns]
    named = parse_columns([KEEP_ALL] if keep == KEEP_ALL else keep, "--keep")
    missing = [c for c in named if c not in cols and c != KEEP_ALL]
    if missing:
        raise ValueError(f"--keep: no column {missing[0]!r} (columns: {', '.join(cols)})")
    if KEEP_ALL in named and KEEP_ALL not in cols:
        named = [c for c in cols if c != private_column] + named
    structural = set(protected) | {c for c in (by, order_by) if c is not None}
    wanted = structural | set(named)
    written = [c for c in cols if c in wanted]
    return written, [c for c in written if c not in structural]


def read_kind(values: Any) -> tuple[str, np.ndarray | None]:
    """``("number", float64)``, ``("datetime", int64 nanoseconds)`` or ``("text", None)`` for a column's values.

    Numbers, booleans and datetimes are taken as they are; text is a number when every non-empty value
    parses as one, a datetime when every non-empty value parses as a date or time.  Missing values
    are NaN (numbers) or the smallest int64 (datetimes).
    """
    s = values if isinstance(values, pd.Series) else pd.Series(values)
    if pd.api.types.is_bool_dtype(s.dtype) or pd.api.types.is_numeric_dtype(s.dtype):
        return "number", pd.to_numeric(s, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    if pd.api.types.is_datetime64_any_dtype(s.dtype):
        return "datetime", _ns(s)
    text = s.astype(object).where(s.notna(), None)
    blank = text.map(lambda v: v is None or str(v).strip() == "").to_numpy(dtype=bool)
    if blank.all():
        return "text", None
    filled = text[~blank].astype(str)
    num = pd.to_numeric(filled, errors="coerce")
    if num.notna().all():
        out = np.full(len(s), np.nan)
        out[~blank] = num.to_numpy(dtype=float)
        return "number", out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pandas warns when it infers a format element by element
        if pd.to_datetime(filled.iloc[:100], errors="coerce", format="mixed").isna().any():
            return "text", None  # not even its first values are dates
        try:  # one format for the column (inferred from its first value): vectorised
            dt = pd.to_datetime(filled, errors="raise")
        except (ValueError, TypeError, OverflowError):
            dt = pd.to_datetime(filled, errors="coerce", format="mixed")
    if dt.notna().all():
        out = np.full(len(s), np.iinfo(np.int64).min, dtype=np.int64)
        out[~blank] = _ns(dt)
        return "datetime", out
    return "text", None


def _ns(s: pd.Series) -> np.ndarray:
    if getattr(s.dt, "tz", None) is not None:
        s = s.dt.tz_convert("UTC").dt.tz_localize(None)
    return s.astype("datetime64[ns]").to_numpy().astype(np.int64)
