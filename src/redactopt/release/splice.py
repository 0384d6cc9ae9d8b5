r"""Releasing a CSV file by editing its bytes: every byte is copied except the redacted fields.

A sparse design can redact only the rows of its blocks (a few hundred around each private
record), so a CSV release is the input file with a few fields emptied.  :func:`splice_csv`
copies the input block by block (a ``memcpy`` and a count of line ends for most of it) and,
at the rows that may be redacted, cuts the line into fields, reads the value, draws the
redaction (:class:`~redactopt.release.redactor.Redactor`) and writes the line without the
field's bytes.  Every other byte — quoting, number formats, line ends, the header, a row-id
field without a name — is the input's: the layout is preserved exactly, and the content
equals what parsing, redacting and writing every row would give.

Rows are found from the bytes alone, which is exact when every quote in the file belongs
to a quoted field (RFC 4180: a field that starts with ``"`` and ends with ``"``, with ``""``
inside).  Then a line end is a row end iff an even number of quotes precedes it, and
empty lines are not rows (as for pyarrow's reader).  Anything else — a quote inside an
unquoted field, a lone ``\r`` line end, a row count that differs from the scan's, a row
of the wrong width — raises :class:`Irregular`, and the caller writes the release from
parsed rows instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from redactopt.release.data import binary_token
from redactopt.release.tables import CsvLayout

__all__ = ["Irregular", "Targets", "splice_csv", "count_rows"]

_QUOTE, _LF, _CR = 0x22, 0x0A, 0x0D
_BOM = b"\xef\xbb\xbf"
#: Bytes read at a time.
_BLOCK = 8 << 20


class Irregular(Exception):
    """The rows of a CSV file cannot be found from its bytes alone: write the release from parsed rows."""


@dataclass(frozen=True)
class Targets:
    """The rows that may be redacted, sorted by ``rows`` (0-based data rows of the file)."""

    rows: np.ndarray
    codes: np.ndarray
    positions: np.ndarray


#: ``redact(codes, positions, values) -> mask`` for the targets of one block of bytes.
Redact = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def _check_quotes(a: np.ndarray, q: np.ndarray, delim: int, bom: int) -> None:
    """Every quote opens a field, closes it, or is half of ``""`` inside one (else :class:`Irregular`)."""
    if not q.size:
        return
    opening = (np.arange(q.size) & 1) == 0
    adjacent = q[1:] == q[:-1] + 1
    prev = np.where(q > 0, a[np.maximum(q - 1, 0)], _LF)
    nxt = np.where(q + 1 < a.size, a[np.minimum(q + 1, a.size - 1)], _LF)
    after_close = np.r_[False, adjacent & ~opening[:-1]]
    before_open = np.r_[adjacent & opening[1:], False]
    ok_open = (prev == delim) | (prev == _LF) | (q == bom) | after_close
    ok_close = (nxt == delim) | (nxt == _LF) | (nxt == _CR) | before_open
    if not bool(np.all(np.where(opening, ok_open, ok_close))):
        raise Irregular("a quote inside an unquoted field")


def _count_rows(buf: bytes, eof: bool) -> tuple[int, int]:
    """``(cut, rows)`` of a block without quotes: the bytes of its complete lines and how many there are.

    Empty lines are not rows: those at the end of the file are left out here (a run of them
    at the end of a block waits for the next one); one elsewhere is counted, which makes the
    total differ from the scan's (:class:`Irregular`).
    """
    if eof:
        body = len(buf.rstrip(b"\r\n"))
        return len(buf), buf.count(b"\n", 0, body) + (1 if body else 0)
    cut = buf.rfind(b"\n") + 1
    if buf.endswith((b"\n\n", b"\n\r\n")):
        body = len(buf.rstrip(b"\r\n"))
        cut = buf.find(b"\n", body) + 1 if body else 0
    return cut, buf.count(b"\n", 0, cut)


def _lines(buf: bytes, eof: bool, quotes: bool, delim: int, bom: int) -> tuple[int, np.ndarray, np.ndarray]:
    """``(cut, starts, ends)``: the bytes of a block's complete rows, and where each non-empty line starts and ends.

    A line end inside a quoted field is not a row end; ``ends`` leave out the ``\r`` of ``\r\n``.
    """
    a = np.frombuffer(buf, dtype=np.uint8)
    nl = np.flatnonzero(a == _LF)
    q = np.flatnonzero(a == _QUOTE) if quotes else np.zeros(0, dtype=np.int64)
    if q.size:
        nl = nl[(np.searchsorted(q, nl) & 1) == 0]
    if eof:
        cut = len(buf)
        if q.size & 1:
            raise Irregular("an unterminated quoted field at the end")
        term = nl if nl.size and nl[-1] == cut - 1 else np.r_[nl, cut]
    else:
        if not nl.size:
            empty = np.zeros(0, dtype=np.int64)
            return 0, empty, empty
        cut, term = int(nl[-1]) + 1, nl
    _check_quotes(a[:cut], q[q < cut], delim, bom)
    starts = np.r_[0, term[:-1] + 1].astype(np.int64)
    ends = term - ((term > starts) & (a[np.maximum(term - 1, 0)] == _CR))
    keep = ends > starts
    return cut, starts[keep], ends[keep]


#: ``state_of(text)``: the chain's state of a field of a categorical column as the scan read it (``None``: none).
StateOf = Callable[[str], "int | None"]


def _text(buf: bytes, a0: int, a1: int) -> str:
    """The field ``buf[a0:a1]`` as a CSV reader reads it (quotes removed)."""
    raw = buf[a0:a1]
    return (raw[1:-1].replace(b'""', b'"') if raw[:1] == b'"' and raw[-1:] == b'"' else raw).decode(
        "utf-8", errors="replace")


def _state(buf: bytes, a0: int, a1: int, state_of: StateOf) -> int:
    """The state of a categorical field (:class:`Irregular` for a text the scan did not read there)."""
    text = _text(buf, a0, a1)
    v = state_of(text)
    if v is None:
        raise Irregular(f"value {text!r} where the scan read a state of the chain")
    return v


def _value(buf: bytes, a0: int, a1: int) -> int:
    """0 or 1 for the field ``buf[a0:a1]`` (quotes removed), as the scan read it (else :class:`Irregular`)."""
    text = _text(buf, a0, a1)
    v = binary_token(text)
    if v is None:
        raise Irregular(f"value {text!r} where the scan read 0 or 1")
    return v


def _field_spans(buf: bytes, starts: np.ndarray, ends: np.ndarray, field: int, width: int,
                 delim: bytes, state_of: StateOf | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Start, end and 0/1 value of field ``field`` of the lines ``starts..ends`` of a block, in numpy
    (``state_of``: a categorical column, each field's state from its text instead).

    A delimiter separates two fields unless it lies inside a quoted field, i.e. unless an
    odd number of quotes precede it in its line (every quote belongs to a quoted field: the
    block passed :func:`_check_quotes`, and a line starts after an even number of them).
    """
    a = np.frombuffer(buf, dtype=np.uint8, count=int(ends[-1]) if ends.size else 0)
    d = np.flatnonzero(a == delim[0])
    q = np.flatnonzero(a == _QUOTE)
    if q.size:
        d = d[(np.searchsorted(q, d) & 1) == 0]
    i0 = np.searchsorted(d, starts)
    fields = np.searchsorted(d, ends) - i0 + 1
    bad = np.flatnonzero(fields != width)
    if bad.size:
        raise Irregular(f"a row with {int(fields[bad[0]])} fields where the header says {width}")
    f0 = (starts if field == 0 else d[i0 + field - 1] + 1).astype(np.int64)
    f1 = (ends if field == width - 1 else d[i0 + field]).astype(np.int64)
    if state_of is not None:
        return f0, f1, np.array([_state(buf, a0, a1, state_of) for a0, a1 in zip(f0.tolist(), f1.tolist())],
                                dtype=np.int64)
    first = a[np.minimum(f0, max(a.size - 1, 0))]
    one = f1 - f0 == 1
    values = np.where(one & (first == 0x31), 1, np.where(one & (first == 0x30), 0, -1)).astype(np.int8)
    for i in np.flatnonzero(values < 0).tolist():  # quoted, " 1", "1.0", "true": spelled otherwise
        values[i] = _value(buf, int(f0[i]), int(f1[i]))
    return f0, f1, values


def _write_without(out: BinaryIO, buf: bytes, cut: int, starts: np.ndarray, ends: np.ndarray) -> None:
    """Write ``buf[:cut]`` without the bytes ``starts[i]:ends[i]`` (sorted, disjoint)."""
    if starts.size > 64:  # many edits: one numpy pass instead of a write per edit
        lengths = ends - starts
        keep = np.ones(cut, dtype=bool)
        if bool((lengths == 1).all()):  # the usual case: one-character fields
            keep[starts] = False
        else:  # every byte of every edit: start + 0..length-1
            first = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
            keep[first + np.arange(first.size)] = False
        out.write(np.frombuffer(buf, dtype=np.uint8, count=cut)[keep].tobytes())
        return
    view = memoryview(buf)
    at = 0
    for s, e in zip(starts.tolist(), ends.tolist()):
        out.write(view[at:s])
        at = e
    out.write(view[at:cut])


def splice_csv(src: BinaryIO, out: BinaryIO, *, layout: CsvLayout, column: str, targets: Targets,
               redact: Redact, rows: int | None, progress: Callable[[int], None] | None = None,
               state_of: StateOf | None = None) -> np.ndarray:
    """Copy the CSV ``src`` to ``out``, emptying ``column`` where ``redact`` says so; returns the mask of ``targets``.

    ``rows`` is the number of data rows the scan counted (a different count here raises
    :class:`Irregular`, as does anything the module docstring lists; ``None``: not known).  ``progress(rows)``
    is called after every block of bytes.  ``state_of``: the column is categorical (the states of its
    fields, by their text).
    """
    field = layout.names.index(column)
    width = len(layout.names)
    delim = layout.delimiter.encode()
    mask = np.zeros(targets.rows.shape[0], dtype=bool)
    row = 0  # data rows before the current block
    ti = 0  # the next target
    carry = b""
    header = True  # the first line is the header, never a row
    first = True
    while True:
        data = src.read(_BLOCK)
        eof = not data
        buf = carry + data if carry else data
        if not buf:
            break
        bom = 3 if first and buf.startswith(_BOM) else 0
        first = False
        # a \r at the end of a block may be followed by the \n of the next one
        if b"\r" in buf and buf.count(b"\r") - (not eof and buf.endswith(b"\r")) != buf.count(b"\r\n"):
            raise Irregular("a line ends with a lone \\r")
        quotes = b'"' in buf
        edits: tuple[np.ndarray, np.ndarray] = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
        if not quotes and not header and (ti >= targets.rows.size or targets.rows[ti] > row + buf.count(b"\n")):
            cut, count = _count_rows(buf, eof)  # no quotes and no target: count the line ends and copy
        else:
            cut, starts, ends = _lines(buf, eof, quotes, delim[0], bom)
            if header and starts.size:
                starts, ends, header = starts[1:], ends[1:], False
            count = starts.size
            tj = ti + int(np.searchsorted(targets.rows[ti:], row + count))
            if tj > ti:
                sel = slice(ti, tj)
                li = targets.rows[sel] - row
                spans = _field_spans(buf, starts[li], ends[li], field, width, delim, state_of)
                red = redact(targets.codes[sel], targets.positions[sel], spans[2])
                mask[sel] = red
                edits = spans[0][red], spans[1][red]
                ti = tj
        if cut == 0:  # no complete line yet
            carry = buf
            continue
        _write_without(out, buf, cut, *edits)
        row += count
        carry = buf[cut:]
        if progress is not None:
            progress(row)
        if eof:
            break
    if (rows is not None and row != rows) or ti != targets.rows.size:
        raise Irregular(f"{row} rows found in the bytes where the scan read {rows}")
    return mask


def count_rows(src: BinaryIO, layout: CsvLayout) -> int:
    """The data rows of a CSV file, found from its bytes as :func:`splice_csv` finds them (:class:`Irregular` if it cannot)."""
    counted: list[int] = [0]
    none = np.zeros(0, dtype=np.int64)
    with open(os.devnull, "wb") as sink:
        splice_csv(src, sink, layout=layout, column=layout.names[0], targets=Targets(none, none, none),
                   redact=lambda c, p, v: np.zeros(0, dtype=bool), rows=None,
                   progress=lambda r: counted.__setitem__(0, r))
    return counted[0]
