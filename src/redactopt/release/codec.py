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

from typing import Any

import numpy as np
import pyarrow as pa

from redactopt.release.data import TextStates, binary_token, parse_binary
from redactopt.release.tables import Chunk, TextValues

__all__ = ["BinaryCodec", "StatesCodec", "binary_values", "MAX_STATES"]

#: More states than this (distinct values, or tuples of protected columns) are refused.
MAX_STATES = 64


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

    def __init__(self, column: str) -> None:
        self.column = column
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


class StatesCodec:
    """The states of a categorical column (module docstring).

    ``labels``: a given chain's states first (in its order), then any other value in order of
    first appearance; ``alphabet`` (after the scan): the states a fitted chain has whatever the
    rows outside the zone show — ``["0", "1"]`` for a column of 0s and 1s, ``["False", "True"]``
    for a boolean column — or ``None`` (the states the fitted rows show).
    """

    binary = False

    def __init__(self, column: str, labels: list[str] | None = None, *, empty_is_missing: bool = True) -> None:
        self.column = column
        self._given = labels
        self.coder = TextStates(labels, empty_is_missing=empty_is_missing)
        self.boolean = True  # every chunk so far was of a boolean type
        self.state_of: np.ndarray | None = None  # the chain's state of each label (-1: none)
        self.designed: np.ndarray | None = None  # per sequence code: it has private records
        self._text_state: dict[str, int] = {}

    @property
    def labels(self) -> list[str]:
        return self.coder.labels

    @property
    def k(self) -> int:
        return max(2, len(self.coder.labels))

    def values(self, chunk: Chunk, where: str, binary: tuple[str, ...] = ()) -> np.ndarray:
        col = chunk.column(self.column)
        typ = getattr(col, "type", None)
        is_bool = (typ is not None and pa.types.is_boolean(typ)) or getattr(col, "dtype", None) == np.dtype(bool)
        self.boolean = self.boolean and is_bool
        codes = self.coder.codes(col, column=self.column, first_row=chunk.first_row, where=where)
        if len(self.coder.labels) > MAX_STATES:
            i = int(np.flatnonzero(codes >= MAX_STATES)[0])
            raise ValueError(f"{where}: row {chunk.first_row + i}, column '{self.column}': more than {MAX_STATES} "
                             "distinct values; a categorical column has at most that many states (bin numeric "
                             "columns: --bin)")
        return codes

    def reset(self) -> None:
        """Forget the labels learnt (a scan that starts again)."""
        self.coder = TextStates(self._given, empty_is_missing=self.coder.empty_is_missing)
        self.boolean = True

    def freeze(self) -> None:
        """The labels are known (after the scan): a later pass that meets another value is an error."""
        self.coder.fixed = True

    @property
    def alphabet(self) -> list[str] | None:
        """The states of a fitted chain fixed by the column itself (class docstring)."""
        labels = self.coder.labels
        if set(labels) <= {"0", "1"}:
            return ["0", "1"]
        if self.boolean and set(labels) <= {"False", "True"}:
            return ["False", "True"]
        return None

    def use_chain(self, chain: Any, designed: np.ndarray | None) -> None:
        """Map the file's labels to the states of ``chain``; ``designed[c]``: sequence ``c`` has private records."""
        index = {str(s): i for i, s in enumerate(chain.labels)}
        self.state_of = np.array([index.get(s, -1) for s in self.coder.labels], dtype=np.int64)
        self.designed = designed
        self._text_state = {s: i for s, i in index.items()}
        self._chain_labels = [str(s) for s in chain.labels]

    def chain_states(self, values: np.ndarray, chunk: Chunk | None = None, codes: np.ndarray | None = None,
                     where: str = "") -> np.ndarray:
        """The chain's state of each row; a value the chain does not have, in a sequence with private
        records, is an error naming its row (elsewhere it is never drawn: its sequence is published)."""
        assert self.state_of is not None, "use_chain first"
        out = self.state_of[values] if values.size else np.zeros(0, dtype=np.int64)
        bad = out < 0
        if bad.any():
            if self.designed is not None:
                seq = np.zeros(out.shape[0], dtype=np.int64) if codes is None else codes
                bad &= self.designed[seq] if self.designed.size else False
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                row = f"row {chunk.first_row + i}, " if chunk is not None else ""
                raise ValueError(f"{where}: {row}column '{self.column}': value {self.coder.labels[values[i]]!r} is "
                                 f"not a state of the chain ({', '.join(self._chain_labels)}); give the chain "
                                 "(--transition) or fit it on a public table that holds it (--fit-on)")
            out = np.where(out < 0, 0, out)  # never drawn
        return out

    def state_of_text(self, text: str) -> int | None:
        return self._text_state.get(text)
