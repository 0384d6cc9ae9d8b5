"""How a release reads the protected column: its values as the states of the chain.

Every pass of a release (scan, zone tally, draws, CSV splice, disclosure figures) reads the
protected column of a chunk through one *codec*:

* :class:`BinaryCodec` — a 0/1 column (the default): the values are the states 0 and 1
  (:func:`redactopt.release.data.parse_binary`; a CSV column may be read as ``int8``).
* :class:`StatesCodec` — a categorical column: its values as text are the states, labelled in
  order of first appearance in the file (:class:`redactopt.release.data.TextStates`).  The scan
  learns the labels; every later pass reads with them fixed, so a file that changed in between
  is an error, not a silent relabelling.  Once the chain is known (fitted or given),
  :meth:`StatesCodec.use_chain` maps the file's labels to the chain's states: a value the chain
  does not have is an error naming its row where it matters (a sequence with private records).

The binary release is the two-state case: both codecs give the Redactor the chain's state index
of every row (:meth:`chain_states`).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from redactopt.release.data import TextStates, binary_token, parse_binary
from redactopt.release.tables import Chunk, TextValues

__all__ = ["BinaryCodec", "StatesCodec", "binary_values", "MAX_STATES", "TUPLE_SEP"]

#: More states than this (distinct values, or tuples of protected columns) are refused.
MAX_STATES = 64

#: A tuple of protected values is one state; its text joins the values' texts with this.
TUPLE_SEP = "|"


def binary_values(chunk: Chunk, name: str, where: str, *, read_as_int: bool = False) -> np.ndarray:
    """The 0/1 values of column ``name`` of a chunk (``int8``), checked.

    ``read_as_int``: the column was read from text as integers
    (:meth:`~redactopt.release.tables.TableReader.chunks` with ``binary``); a value other
    than 0 and 1 raises :class:`~redactopt.release.tables.TextValues`, so that it is
    reported as written, from a read as text.
    """
    col = chunk.column(name)
    if read_as_int and col.null_count == 0:
        v = col.to_numpy(zero_copy_only=False)
        if bool(((v != 0) & (v != 1)).any()):
            raise TextValues(f"column '{name}' holds integers other than 0 and 1")
        return v.astype(np.int8, copy=False)
    return parse_binary(col, column=name, first_row=chunk.first_row, where=where)


class BinaryCodec:
    """The states of a 0/1 column: its values (0 and 1), as the chain's states 0 and 1."""

    binary = True
    splices = True

    def __init__(self, column: str) -> None:
        self.column = column
        self.columns = [column]
        self.labels = ["0", "1"]

    @property
    def k(self) -> int:
        return 2

    def values(self, chunk: Chunk, where: str, binary: tuple[str, ...] = ()) -> np.ndarray:
        """The scan's codes of a chunk's values (here the values themselves)."""
        return binary_values(chunk, self.column, where, read_as_int=self.column in binary)

    def chain_states(self, values: np.ndarray, chunk: Chunk | None = None, codes: np.ndarray | None = None,
                     where: str = "") -> np.ndarray:
        """The chain's state of each row (a 0/1 value is its state)."""
        return values

    def state_of_text(self, text: str) -> int | None:
        """The chain's state of a field as written in a CSV file (``None``: not one of its states)."""
        return binary_token(text)

    def released(self, chunk: Chunk, values: np.ndarray, mask: np.ndarray, *, as_int8: bool = False) -> Any:
        """The chunk with the column redacted: nulls where ``mask``; every other column as it is.

        ``as_int8``: the column becomes ``int8`` values (text read from CSV, written to
        Parquet); otherwise it keeps its type.  The column is nullable in the schema.
        """
        batch = chunk.frame
        i = batch.schema.get_field_index(self.column)
        col = batch.column(i)
        if as_int8:
            new = pa.array(values, type=pa.int8(), mask=mask)
        elif mask.any():
            new = pc.if_else(pa.array(mask), pa.scalar(None, type=col.type), col)
        else:
            new = col
        schema = batch.schema.set(i, pa.field(self.column, new.type, nullable=True))
        arrays = list(batch.columns)
        arrays[i] = new
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


class StatesCodec:
    """The states of a categorical column, or of several columns protected together (module docstring).

    ``columns``: one name, or several (a state is the tuple of their values, its text the values'
    texts joined by :data:`TUPLE_SEP`; a redaction empties all of them); ``bins``: numeric columns
    turned into categories first (:class:`~redactopt.release.columns.Bins`, written as their
    category).  ``labels``: a given chain's states first (in its order), then any other state in
    order of first appearance.  A protected column that is continuous (numbers with a fractional
    part) must be binned: refused, naming a row, when the scan ends.

    :meth:`fit_labels` gives the states of a fitted chain: per column its values known without the
    fitted rows — its bins, ``False``/``True`` for a column of those values (a boolean column),
    ``0``/``1`` for a column of 0s and 1s — or else the values the fitted rows show, in order of first
    appearance there; the states are every tuple of them.  An empty value is a missing one (an
    error naming its row) in every format, and with several columns no value may hold
    :data:`TUPLE_SEP`.
    """

    binary = False

    def __init__(self, columns: str | list[str], labels: list[str] | None = None, *,
                 bins: dict[str, Any] | None = None) -> None:
        self.columns = [columns] if isinstance(columns, str) else list(columns)
        #: how messages and the report name the protected column(s)
        self.column = TUPLE_SEP.join(self.columns)
        self.bins = dict(bins or {})
        self._given = None if labels is None else [str(v) for v in labels]
        self.state_of: np.ndarray | None = None  # the chain's state of each label (-1: none)
        self.designed: np.ndarray | None = None  # per sequence code: it has private records
        self._chain_labels: list[str] = []
        self.reset()

    def reset(self) -> None:
        """Forget what the scan learnt (a scan that starts again)."""
        self.labels: list[str] = list(self._given or [])
        self.index = {v: i for i, v in enumerate(self.labels)}
        one = len(self.columns) == 1
        self.parts: list[tuple[str, ...]] = [(v,) if one else tuple(v.split(TUPLE_SEP)) for v in self.labels]
        self.fixed = False
        # an empty value is missing whatever the format (written to CSV it would be an empty field, which is ⊥)
        self.text = {c: TextStates(empty_is_missing=True) for c in self.columns if c not in self.bins}
        self.first_rows: dict[str, list[int]] = {c: [] for c in self.text}  # the first row of each value
        self.state_rows: list[int] = [0] * len(self.labels)  # the first row of each state (0: a given state)
        self._lut = np.zeros(0, dtype=np.int64)  # one column: the state of each of its value codes (-1: none yet)

    @property
    def k(self) -> int:
        return max(2, len(self.labels))

    @property
    def splices(self) -> bool:
        """Whether a CSV release may copy the input's bytes: one column, written as read, and every value
        of it a state of the chain (a splice reads only the rows it may redact, so a value the chain
        lacks must be looked for by a pass that reads every row)."""
        return (len(self.columns) == 1 and not self.bins
                and (self.state_of is None or bool((self.state_of >= 0).all())))

    def _column_codes(self, chunk: Chunk, c: str, where: str) -> tuple[np.ndarray, list[str]]:
        # a DataFrame's column as it is (a column of mixed Python objects has no Arrow type; its values' texts
        # are the states all the same)
        col = chunk.frame[c] if isinstance(chunk.frame, pd.DataFrame) else chunk.column(c)
        if c in self.bins:
            b = self.bins[c]
            return b.codes(col, where, first_row=chunk.first_row), b.labels
        coder = self.text[c]
        before = len(coder.labels)
        codes = coder.codes(col, column=c, first_row=chunk.first_row, where=where)
        for j in range(before, len(coder.labels)):
            row = chunk.first_row + int(np.argmax(codes == j))
            if len(self.columns) > 1 and TUPLE_SEP in coder.labels[j]:
                raise ValueError(f"{where}: row {row}, column '{c}': value {coder.labels[j]!r} holds {TUPLE_SEP!r}, "
                                 f"which joins the values of columns protected together; with --protect no value "
                                 f"may hold it (two tuples would be one state)")
            self.first_rows[c].append(row)
        return codes, coder.labels

    def values(self, chunk: Chunk, where: str, binary: tuple[str, ...] = ()) -> np.ndarray:
        """The state code of every row of a chunk (labels learnt as they appear, unless frozen)."""
        per = [self._column_codes(chunk, c, where) for c in self.columns]
        m = len(chunk)
        if m == 0:
            return np.zeros(0, dtype=np.int64)
        if len(per) == 1:  # one column: its value codes map to states through a table (no sort per chunk)
            codes, texts = per[0]
            if self._lut.size < len(texts):
                self._lut = np.concatenate([self._lut, np.full(len(texts) - self._lut.size, -1, dtype=np.int64)])
            state = self._lut[codes]
            new = np.flatnonzero(state < 0)
            if new.size:  # values first met in this chunk, in order of first appearance
                uniq, first = np.unique(codes[new], return_index=True)
                for j in np.argsort(first, kind="stable").tolist():
                    c = int(uniq[j])
                    self._lut[c] = self._state(texts[c], (texts[c],), chunk.first_row + int(new[first[j]]), where)
                state = self._lut[codes]
            return state
        tuples, inv = np.unique(np.stack([p[0] for p in per], axis=1), axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        first = np.full(tuples.shape[0], m, dtype=np.int64)
        np.minimum.at(first, inv, np.arange(m, dtype=np.int64))
        state = np.empty(tuples.shape[0], dtype=np.int64)
        for j in np.argsort(first, kind="stable").tolist():  # new states in order of first appearance
            parts = tuple(per[i][1][int(tuples[j, i])] for i in range(len(per)))
            state[j] = self._state(TUPLE_SEP.join(parts), parts, chunk.first_row + int(first[j]), where)
        return state[inv]

    def _state(self, text: str, parts: tuple[str, ...], row: int, where: str) -> int:
        """The code of the state ``text`` (first held by ``row``), a new one unless the scan is over."""
        if text not in self.index:
            if self.fixed:
                raise ValueError(f"{where}: row {row}, column '{self.column}': value {text!r} was not read in "
                                 "the first pass (the input changed while it was being read)")
            if len(self.labels) >= MAX_STATES:
                self._check_continuous()  # the likelier cause: a column of measurements
                self._too_many(where, row)
            self._add(text, parts, row)
        return self.index[text]

    def _add(self, text: str, parts: tuple[str, ...], row: int) -> None:
        self.index[text] = len(self.labels)
        self.labels.append(text)
        self.parts.append(parts)
        self.state_rows.append(row)

    def _too_many(self, where: str, row: int) -> None:
        what = "distinct values" if len(self.columns) == 1 else "distinct tuples of values"
        raise ValueError(f"{where}: row {row}, column '{self.column}': more than {MAX_STATES} {what}; a categorical "
                         "release has at most that many states (bin numeric columns coarser: --bin, or protect "
                         "fewer columns)")

    def absorb(self, other: "StatesCodec", offset: int = 0, where: str = "") -> np.ndarray:
        """Take in the states another scan learnt (a later partition of a dataset, whose row ``r`` is row
        ``r + offset`` here), in its order of first appearance; returns the code here of each of its
        states (:meth:`ScanState.relabel <redactopt.release.data.ScanState.relabel>`)."""
        for text, parts, row in zip(other.labels, other.parts, other.state_rows):
            if text not in self.index:
                if len(self.labels) >= MAX_STATES:
                    self._too_many(where, row + offset)
                self._add(text, parts, row + offset)
        for c, mine in self.text.items():
            for v, r in zip(other.text[c].labels, other.first_rows[c]):
                if v not in mine.index:
                    mine.index[v] = len(mine.labels)
                    mine.labels.append(v)
                    self.first_rows[c].append(r + offset)
        return np.array([self.index[t] for t in other.labels], dtype=np.int64)

    def freeze(self) -> None:
        """The scan is over: its states are fixed (a later pass that meets another is an error), and a
        continuous protected column is refused here."""
        self.fixed = True
        self._check_continuous()

    def _check_continuous(self) -> None:
        """A protected column all of whose values are numbers, some with a fractional part, must be binned."""
        for c, coder in self.text.items():
            nums = _numbers(coder.labels)
            if nums is None:
                continue
            frac = np.flatnonzero(np.floor(nums) != nums)
            if frac.size:
                j = int(frac[np.argmin(np.asarray(self.first_rows[c])[frac])])
                raise ValueError(f"column {c!r} is continuous (row {self.first_rows[c][j]}: {coder.labels[j]!r}); "
                                 f"protect it in categories: --bin {c}:EDGE[,EDGE...]")

    def alphabet(self, c: str) -> list[str] | None:
        """The values of column ``c`` known without the fitted rows (class docstring), or ``None``.

        Decided by the values alone, never by the column's type, so that the same rows give the same
        release from CSV (text), Parquet (typed) or a DataFrame: a boolean column and a text column of
        ``False``/``True`` alike; a categorical column's categories are its values seen (an unused
        category is no state)."""
        if c in self.bins:
            return list(self.bins[c].labels)
        values = set(self.text[c].labels)
        if values <= {"False", "True"}:
            return ["False", "True"]
        if values <= {"0", "1"}:
            return ["0", "1"]
        return None

    def fit_labels(self, seen: Any) -> list[str]:
        """The states of a chain fitted on rows that show the states ``seen`` (codes, in order of first appearance)."""
        alphabets = []
        for i, c in enumerate(self.columns):
            fixed = self.alphabet(c)
            alphabets.append(fixed if fixed is not None else list(dict.fromkeys(self.parts[s][i] for s in seen)))
        size = int(np.prod([len(a) for a in alphabets]))
        if size > MAX_STATES:
            raise ValueError(f"the protected column(s) {', '.join(self.columns)} make {size} states (more than "
                             f"{MAX_STATES}): bin numeric columns coarser (--bin) or protect fewer columns")
        return [TUPLE_SEP.join(t) for t in itertools.product(*alphabets)]

    def use_chain(self, chain: Any, designed: np.ndarray | None) -> None:
        """Map the file's states to those of ``chain``; ``designed[c]``: sequence ``c`` has private records."""
        index = {str(s): i for i, s in enumerate(chain.labels)}
        self.state_of = np.array([index.get(s, -1) for s in self.labels], dtype=np.int64)
        self.designed = designed
        self._chain_labels = [str(s) for s in chain.labels]
        self._text_state = index

    def chain_states(self, values: np.ndarray, chunk: Chunk | None = None, codes: np.ndarray | None = None,
                     where: str = "") -> np.ndarray:
        """The chain's state of each row; a value the chain does not have, in a sequence with private
        records, is an error naming its row (elsewhere ``-1``: never drawn, its sequence is published)."""
        assert self.state_of is not None, "use_chain first"
        out = self.state_of[values] if values.size else np.zeros(0, dtype=np.int64)
        bad = out < 0
        if bad.any() and self.designed is not None:
            seq = np.zeros(out.shape[0], dtype=np.int64) if codes is None else codes
            bad &= self.designed[seq] if self.designed.size else False
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            row = f"row {chunk.first_row + i}, " if chunk is not None else ""
            raise ValueError(f"{where}: {row}column '{self.column}': value {self.labels[values[i]]!r} is not a state "
                             f"of the chain ({', '.join(self._chain_labels)}); give the chain (--transition) or fit "
                             "it on a public table that holds it (--fit-on)")
        return out

    def state_of_text(self, text: str) -> int | None:
        return self._text_state.get(text)

    def released(self, chunk: Chunk, values: np.ndarray, mask: np.ndarray, *, as_int8: bool = False) -> Any:
        """The chunk's record batch with every protected column null where ``mask`` (a binned one written as
        its category)."""
        batch = chunk.frame
        arrays, fields = list(batch.columns), list(batch.schema)
        for c in self.columns:
            i = batch.schema.get_field_index(c)
            col = batch.column(i)
            if c in self.bins:
                b = self.bins[c]
                new = pa.array(np.asarray(b.labels, dtype=object)[b.codes(col, "", first_row=chunk.first_row)],
                               type=pa.string(), mask=mask)
            else:
                new = pc.if_else(pa.array(mask), pa.scalar(None, type=col.type), col) if mask.any() else col
            arrays[i], fields[i] = new, pa.field(c, new.type, nullable=True)
        return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields, metadata=batch.schema.metadata))


def _numbers(texts: list[str]) -> np.ndarray | None:
    """The values as numbers when every one is a number (a continuous column?), else ``None``."""
    if not texts:
        return None
    x = pd.to_numeric(pd.Series(texts, dtype=object), errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    return None if np.isnan(x).any() else x
