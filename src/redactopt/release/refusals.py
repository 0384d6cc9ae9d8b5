"""Releases that should not happen: refused in one line (exit 2), before anything is written (issue 36).

A release can exit with a guarantee that means nothing, or one computed for a model the data
plainly contradict.  Each case below is refused with :class:`~redactopt.errors.ReleaseRefused`
(a ``ValueError``: one line, exit status 2, nothing written), naming the option that overrides
it where an override makes sense; an override is stated in the report's first line.

* **The private flag is the protected column** (:func:`refuse_flag_protected`; no override):
  every private row would be a 1 and redacted, every other row published, so the release *is*
  the private column.
* **Rows out of time order** (:class:`TimeWatch`): a datetime column, or a numeric column named
  like a time (:func:`is_time_name`), that goes back in time within a sequence while no
  ``--order-by`` is given — the chain would be fitted and the release designed on rows out of
  order.  Override: ``--order-by COLUMN`` (order them), or ``--accept-model`` (the file's order
  is the time order).
* **A broken model** (:func:`refuse_broken_model`): a test rejecting the release's model at
  p < :data:`~redactopt.release.alternatives.REFUSE_P` *and* an alternative model under which the
  release would leak more than ε (:mod:`redactopt.release.alternatives`).  Override:
  ``--accept-model``.
* **States never observed in the fit** (:func:`refuse_unseen_states`): a fitted k-state chain
  whose row for a state comes from no transition at all (the estimate makes it uniform, the least
  conservative guess).  Overrides: give the chain (``--transition``), fit it on a public table
  that shows the state (``--fit-on``), or ``--accept-model`` (the uniform rows, stated).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from redactopt.errors import ReleaseRefused
from redactopt.release.alternatives import REFUSE_P, ModelAlternative
from redactopt.release.columns import read_kind
from redactopt.release.data import factorize, id_key

__all__ = ["refuse_flag_protected", "is_time_name", "TimeWatch", "time_watch", "refuse_broken_model",
           "refuse_unseen_states", "TIME_NAMES", "REFUSE_P"]

#: Column names read as a time (case-insensitive), also as a suffix after ``_`` or a prefix before it.
TIME_NAMES = ("t", "ts", "time", "timestamp", "datetime", "date", "epoch", "minute", "minutes", "second",
              "seconds", "hour", "hours", "step")

#: Values read from the start of a table to find its time columns.
SNIFF_ROWS = 1000


def refuse_flag_protected(protected: list[str], private_column: str | None) -> None:
    """The private-flag column may not be a protected column (module docstring)."""
    if private_column is not None and private_column in protected:
        raise ReleaseRefused(
            f"--private-column {private_column} is the protected column: every private row would be redacted and "
            "every other row published, so the release would be the private column itself (a void guarantee); "
            "flag the private rows with a column of their own")


def is_time_name(name: str) -> bool:
    """Whether a column's name reads as a time (:data:`TIME_NAMES`)."""
    low = str(name).strip().lower()
    parts = low.replace("-", "_").split("_")
    return low in TIME_NAMES or parts[-1] in TIME_NAMES[1:] or parts[0] in TIME_NAMES[1:]


def _times(values: Any, kind: str) -> np.ndarray | None:
    """A chunk of a time column as float64 (NaN: missing), or ``None`` if it does not read as ``kind``."""
    arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if not isinstance(arr, pa.Array):
        arr = pa.Array.from_pandas(pd.Series(arr))
    t = arr.type
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        return pc.cast(pc.cast(arr, pa.timestamp("ns")) if pa.types.is_date(t) else arr, pa.int64()).to_numpy(
            zero_copy_only=False).astype(float)
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t):
        return arr.cast(pa.float64()).to_numpy(zero_copy_only=False) if kind == "number" else None
    if kind == "number" and (pa.types.is_string(t) or pa.types.is_large_string(t)):
        try:  # text of numbers (CSV): Arrow parses it without Python
            blank = pc.equal(pc.utf8_trim_whitespace(arr), "")
            return pc.cast(pc.if_else(blank, pa.scalar(None, arr.type), arr), pa.float64()).to_numpy(
                zero_copy_only=False)
        except pa.ArrowException:  # not parseable by Arrow (invalid or unsupported): the slow path below
            pass
    if kind == "datetime" and (pa.types.is_string(t) or pa.types.is_large_string(t)):
        try:  # ISO 8601 text: Arrow parses it without Python
            blank = pc.equal(pc.utf8_trim_whitespace(arr), "")
            ts = pc.cast(pc.if_else(blank, pa.scalar(None, arr.type), arr), pa.timestamp("ns"))
            return pc.cast(ts, pa.int64()).to_numpy(zero_copy_only=False).astype(float)
        except pa.ArrowException:  # not parseable by Arrow (invalid or unsupported): the slow path below
            pass
    k, num = read_kind(pd.Series(arr.to_pandas()))
    if k != kind:
        return None
    x = np.asarray(num, dtype=float)
    if kind == "datetime":
        x[np.asarray(num) == np.iinfo(np.int64).min] = np.nan
    return x


class TimeWatch:
    """Watches a table's time columns, chunk by chunk in file order, for a step back in time within a sequence.

    ``columns`` are ``(name, kind)`` (``"datetime"`` or ``"number"``); :meth:`add` takes each chunk
    (with its ``by`` ids, or ``None``); :attr:`violation` describes the first step back found, per
    column.  A column whose values stop reading as its kind is dropped (it is no time column).
    """

    def __init__(self, columns: list[tuple[str, str]]) -> None:
        self.kinds = dict(columns)
        self.last: dict[str, dict] = {c: {} for c in self.kinds}
        self.violation: dict[str, str] = {}

    @property
    def columns(self) -> list[str]:
        return [c for c in self.kinds if c not in self.violation]

    def reset(self) -> None:
        """Forget what was seen (the scan starts again)."""
        self.last = {c: {} for c in self.kinds}
        self.violation = {}

    def add(self, chunk: Any, ids: Any) -> None:
        codes, uniq = factorize(ids) if ids is not None else (np.zeros(len(chunk), dtype=np.int64), [None])
        for name in list(self.columns):
            x = _times(chunk.column(name), self.kinds[name])
            if x is None:
                del self.kinds[name]
                continue
            self._check(name, x, codes, uniq, chunk.first_row)

    def _check_one(self, name: str, x: np.ndarray, key: Any, first_row: int) -> None:
        """:meth:`_check` of a chunk of one sequence (its rows in their order: no sort)."""
        rows = np.flatnonzero(~np.isnan(x))
        if not rows.size:
            return
        v = x[rows]
        last_v, last_row = self.last[name].get(key, (np.nan, 0))
        back = np.flatnonzero(v[1:] < v[:-1])
        if v[0] < last_v:  # (NaN compares False: a sequence's first row)
            self._violate(name, key, first_row + int(rows[0]), last_row)
        elif back.size:
            self._violate(name, key, first_row + int(rows[back[0] + 1]), first_row + int(rows[back[0]]))
        self.last[name][key] = (float(v[-1]), first_row + int(rows[-1]))

    def _violate(self, name: str, seq: Any, row: int, before: int) -> None:
        if name not in self.violation:
            what = "" if seq is None else f" in sequence {seq!r}"
            self.violation[name] = (f"column '{name}' goes back in time{what}: row {row} holds an earlier "
                                    f"{'time' if self.kinds[name] == 'datetime' else 'value'} than row {before} "
                                    "before it")

    def _check(self, name: str, x: np.ndarray, codes: np.ndarray, uniq: list, first_row: int) -> None:
        if len(uniq) == 1:  # one sequence (the common case): its rows are already in their order
            self._check_one(name, x, id_key(uniq[0]), first_row)
            return
        order = np.argsort(codes, kind="stable")
        order = order[~np.isnan(x[order])]  # a missing time is no step
        sc, sx, rows = codes[order], x[order], order + first_row
        if not sc.size:
            return
        starts = np.flatnonzero(np.r_[True, sc[1:] != sc[:-1]])
        last = self.last[name]
        carried = [last.get(id_key(uniq[c]), (np.nan, 0)) for c in sc[starts].tolist()]
        before, before_row = np.r_[np.nan, sx[:-1]], np.r_[0, rows[:-1]]
        before[starts] = [v for v, _ in carried]  # a sequence's first row here follows its last row before
        before_row[starts] = [r for _, r in carried]
        back = np.flatnonzero(sx < before)
        if back.size:
            i = int(back[0])
            self._violate(name, uniq[int(sc[i])], int(rows[i]), int(before_row[i]))
        ends = np.r_[starts[1:], sc.size] - 1
        for e, c in zip(ends.tolist(), sc[ends].tolist()):
            last[id_key(uniq[c])] = (float(sx[e]), int(rows[e]))

    def refuse(self, *, accept: bool) -> list[str]:
        """Raise for the first column out of order (``accept``: return what was accepted instead)."""
        if not self.violation:
            return []
        name, why = next(iter(self.violation.items()))
        if accept:
            return [f"rows out of time order ({why})"]
        raise ReleaseRefused(f"rows out of time order: {why}; the chain would be fitted and the release designed on "
                             f"rows out of order — give --order-by {name} (or --accept-model if the file's order is the "
                             "time order)")


def time_watch(reader: Any, *, exclude: list[str | None]) -> TimeWatch | None:
    """The :class:`TimeWatch` of a table's time columns (``None``: none): datetime columns, and numeric
    columns with a time's name (:func:`is_time_name`), read from the first :data:`SNIFF_ROWS` rows;
    ``exclude``: the protected, ``by`` and private-flag columns."""
    skip = {c for c in exclude if c is not None}
    names = [c for c in reader.columns if c not in skip]
    if not names:
        return None
    head = next(iter(_sniffer(reader).chunks(names)), None)
    if head is None:
        return None
    found = []
    for c in names:
        col = head.column(c)
        t = col.type
        if pa.types.is_timestamp(t) or pa.types.is_date(t):
            found.append((c, "datetime"))
            continue
        kind, _ = read_kind(pd.Series(col.to_pandas()))
        if kind == "datetime" or (kind == "number" and is_time_name(c)):
            found.append((c, kind))
    return TimeWatch(found) if found else None


def _sniffer(reader: Any) -> Any:
    """A reader of the same table that reads :data:`SNIFF_ROWS` rows at a time."""
    from redactopt.release.tables import MemoryReader, TableReader

    if isinstance(reader, MemoryReader):
        return MemoryReader(reader.table, chunk_rows=SNIFF_ROWS, label=reader.label)
    return TableReader(reader.path, chunk_rows=SNIFF_ROWS, label=reader.label,
                       row_groups=getattr(reader, "row_groups", None))


def watch_table(reader: Any, watch: TimeWatch, *, by: str | None) -> None:
    """One pass over the time columns (and ``by``) of a table that is not scanned otherwise."""
    for chunk in reader.chunks(watch.columns + ([by] if by else [])):
        watch.add(chunk, chunk.column(by) if by else None)


def refuse_broken_model(alternatives: list[ModelAlternative], eps: float, *, accept: bool) -> list[str]:
    """Raise for the first alternative that :attr:`~ModelAlternative.refuses` (``accept``: return the notes)."""
    broken = [a for a in alternatives if a.refuses]
    if not broken:
        return []
    notes = []
    for a in broken:
        where = a.where or {}
        seq = "" if where.get("sequence") is None else f" of sequence {where['sequence']}"
        leak = "an unbounded amount" if a.leakage is None or not np.isfinite(a.leakage) else f"{a.leakage:.6g}"
        why = (f"the {a.test} rejects the release's chain (p = {a.p_value:.3g} < {REFUSE_P:g}) and under the "
               f"{a.name} it fits the release would leak {leak} > eps = {eps:g} about record {where.get('record')}"
               f"{seq} (exact, a witness output)")
        if not accept:
            raise ReleaseRefused(f"broken model: {why}; order the rows (--order-by COLUMN), give a chain you trust "
                                 "(--alpha/--beta, --transition, --fit-on), or --accept-model to release for the "
                                 "first-order chain anyway")
        notes.append(why)
    return notes


def refuse_unseen_states(fit: Any, *, accept: bool) -> list[str]:
    """Raise when a fitted chain has a state with no transition out of it in the fit (its row a guess)."""
    if fit is None:
        return []
    rows = np.asarray(fit.counts).sum(axis=1)
    unseen = [str(fit.labels[i]) for i in np.flatnonzero(rows == 0)]
    if not unseen:
        return []
    shown = ", ".join(repr(s) for s in unseen[:8]) + (" ..." if len(unseen) > 8 else "")
    why = (f"{len(unseen)} state(s) of the chain never observed in the fit ({shown}: no transition out of them on "
           f"the {fit.records} rows it read), whose rows are a uniform guess, the least conservative one")
    if accept:
        return [why]
    raise ReleaseRefused(f"{why}; give the chain (--transition), fit it on a public table that shows these states "
                         "(--fit-on), or --accept-model to release with the uniform rows")
