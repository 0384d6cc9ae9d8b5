"""Reading and writing record tables (CSV or Parquet) in chunks, and the per-sequence scan.

Conventions (README, "Command line"): ⊥ is an empty field in CSV and a null in Parquet, never a
sentinel number.  Rows are counted from 1 in messages (the first data row is row 1;
the header is not a row).  A *sequence* is the rows of one value of the ``--by`` column
in file order (the whole file without ``--by``); positions in a sequence count from 1
on the command line and from 0 in the Python API.

Everything here streams: memory depends on the chunk size and on the number of
sequences, never on the number of rows.  Inputs are only ever opened for reading.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from redactopt.io import STDIO, check_input_path, check_output_path, new_file_mode
from redactopt.release.fit import TransitionCounts

__all__ = [
    "DEFAULT_CHUNK_ROWS",
    "TableFormat",
    "table_format",
    "Chunk",
    "TableReader",
    "TableWriter",
    "parse_binary",
    "ScanState",
    "sequence_key",
    "group_ranks",
    "id_key",
]

DEFAULT_CHUNK_ROWS = 1_000_000

TableFormat = Literal["csv", "parquet"]

_CSV_SUFFIXES = (".csv", ".txt", ".tsv", ".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zst", ".txt.gz")
_PARQUET_SUFFIXES = (".parquet", ".pq", ".parq")

#: Accepted spellings of the two values in text files (after stripping blanks).
_TRUE_TOKENS = ("1", "1.0", "true", "True", "TRUE")
_FALSE_TOKENS = ("0", "0.0", "false", "False", "FALSE")


def table_format(path: str | os.PathLike[str]) -> TableFormat:
    """``"csv"`` or ``"parquet"`` from the file name; anything else is a ``ValueError``."""
    name = Path(path).name.lower()
    if name.endswith(_PARQUET_SUFFIXES):
        return "parquet"
    if name.endswith(_CSV_SUFFIXES):
        return "csv"
    raise ValueError(
        f"{path}: unknown table format; use a name ending in .csv/.txt/.tsv (text) or .parquet"
    )


def sequence_key(seq_id: object) -> int:
    """A stable 64-bit key of a sequence id (its ``str`` form), for per-sequence random streams.

    The same id read from CSV (as text) or Parquet (as a number) gets the same key.
    """
    text = "" if seq_id is None else str(seq_id)
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


# --------------------------------------------------------------------------
# parsing the binary column
# --------------------------------------------------------------------------
def parse_binary(values: Any, *, column: str, first_row: int, where: str) -> np.ndarray:
    """0/1 values of one chunk of a column as ``int8``; a missing or other value is an error.

    ``values`` is a numpy array (strings from CSV, or numbers/booleans from Parquet with
    nulls as ``None``/NaN) or a pyarrow array.  ``first_row`` is the 1-based row number
    of its first entry; messages name the row, the column and the value.
    """
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return _parse_arrow(values, column=column, first_row=first_row, where=where)
    arr = np.asarray(values)
    if arr.dtype.kind in "biuf":
        return _parse_numeric(arr, column=column, first_row=first_row, where=where)
    out = np.full(arr.shape[0], -1, dtype=np.int8)
    for tok in _TRUE_TOKENS:
        out[arr == tok] = 1
    for tok in _FALSE_TOKENS:
        out[arr == tok] = 0
    bad = np.flatnonzero(out < 0)
    if bad.size:  # allow surrounding blanks before giving up
        stripped = np.array([str(v).strip() for v in arr[bad]], dtype=object)
        fix = np.full(bad.size, -1, dtype=np.int8)
        fix[np.isin(stripped, _TRUE_TOKENS)] = 1
        fix[np.isin(stripped, _FALSE_TOKENS)] = 0
        out[bad] = fix
        bad = bad[fix < 0]
    if bad.size:
        i = int(bad[0])
        v = arr[i]
        if v is None or (isinstance(v, float) and np.isnan(v)) or str(v).strip() == "":
            raise ValueError(f"{where}: row {first_row + i}, column '{column}': missing value")
        raise ValueError(f"{where}: row {first_row + i}, column '{column}': value {str(v)!r} is not 0 or 1")
    return out


def _parse_numeric(arr: np.ndarray, *, column: str, first_row: int, where: str) -> np.ndarray:
    if arr.dtype.kind == "b":
        return arr.astype(np.int8)
    if arr.dtype.kind == "f":
        nan = np.flatnonzero(np.isnan(arr))
        if nan.size:
            raise ValueError(f"{where}: row {first_row + int(nan[0])}, column '{column}': missing value")
    bad = np.flatnonzero((arr != 0) & (arr != 1))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"{where}: row {first_row + i}, column '{column}': value {arr[i].item()!r} is not 0 or 1")
    return arr.astype(np.int8)


def _parse_arrow(values: Any, *, column: str, first_row: int, where: str) -> np.ndarray:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if values.null_count:
        mask = values.is_null().to_numpy(zero_copy_only=False)
        i = int(np.flatnonzero(mask)[0])
        raise ValueError(f"{where}: row {first_row + i}, column '{column}': missing value")
    t = values.type
    if pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_floating(t):
        return _parse_numeric(values.to_numpy(zero_copy_only=False), column=column, first_row=first_row, where=where)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return parse_binary(np.asarray(values.to_pylist(), dtype=object), column=column,
                            first_row=first_row, where=where)
    raise ValueError(f"{where}: column '{column}' has type {t}, expected integers, booleans or 0/1 text")


# --------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------
@dataclass
class Chunk:
    """One chunk of a table: the rows as read, and where they start (1-based row number)."""

    first_row: int
    frame: Any  # pandas.DataFrame of str (CSV) or pyarrow.RecordBatch (Parquet)

    def __len__(self) -> int:
        return int(self.frame.shape[0]) if hasattr(self.frame, "shape") else int(self.frame.num_rows)

    def column(self, name: str) -> Any:
        """A column as a numpy array (CSV: strings) or a pyarrow array (Parquet)."""
        if isinstance(self.frame, pd.DataFrame):
            return self.frame[name].to_numpy(dtype=object)
        return self.frame.column(name)


def _csv_layout(path: Path, label: str) -> tuple[list[str], bool, str]:
    """Header names, whether rows carry one extra leading field (a row id), and the delimiter."""
    if path.suffix in (".gz", ".bz2", ".xz", ".zst"):
        return _csv_layout_pandas(path)
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            head = fh.read(1 << 16)
    except UnicodeDecodeError:
        raise ValueError(f"{label}: not a UTF-8 text file") from None
    delim = "\t" if path.suffix.lower() == ".tsv" else ","
    rows = list(csv.reader(io.StringIO(head), delimiter=delim))
    if not rows:
        raise ValueError(f"{label}: empty file, expected a header line")
    header = rows[0]
    implicit_index = len(rows) > 1 and len(rows[1]) == len(header) + 1
    return header, implicit_index, delim


def _csv_layout_pandas(path: Path) -> tuple[list[str], bool, str]:
    head = pd.read_csv(path, nrows=1, header=None, dtype=str, keep_default_na=False, na_filter=False)
    header = [str(v) for v in head.iloc[0].tolist()]
    first = pd.read_csv(path, nrows=1, skiprows=1, header=None, dtype=str, keep_default_na=False,
                        na_filter=False)
    return header, first.shape[1] == len(header) + 1, ","


class TableReader:
    """Chunked reader of a CSV or Parquet file.

    CSV values are read as text (``dtype=str``) so that every column is written back
    exactly as it was; a header with one name fewer than the rows have fields (the
    first field is a row id, as in the UCI occupancy files) is recognised and kept.
    """

    def __init__(self, path: str | os.PathLike[str], *, chunk_rows: int = DEFAULT_CHUNK_ROWS,
                 label: str | None = None) -> None:
        self.path = Path(path)
        #: how messages name the input (``<stdin>`` for a copy of standard input)
        self.label = str(self.path) if label is None else label
        self.format = table_format(self.path)
        if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, int) or chunk_rows < 1:
            raise ValueError(f"chunk_rows must be an integer >= 1, got {chunk_rows!r}")
        self.chunk_rows = chunk_rows
        check_input_path(self.path)
        if self.path.is_dir():
            raise ValueError(f"{self.label}: is a directory, expected a {self.format} file")
        self.implicit_index = False
        self.delimiter = ","
        if self.format == "csv":
            self.columns, self.implicit_index, self.delimiter = _csv_layout(self.path, self.label)
        else:
            self.columns = self._parquet_file().schema_arrow.names

    def _parquet_file(self) -> Any:
        try:
            return pq.ParquetFile(self.path)
        except Exception as exc:  # pyarrow raises several types for unreadable files
            raise ValueError(f"{self.label}: cannot read as Parquet: {exc}") from None

    def require(self, *names: str | None) -> None:
        """Raise naming the column when one of ``names`` is not in the table."""
        for name in names:
            if name is not None and name not in self.columns:
                raise ValueError(f"{self.label}: no column '{name}' (columns: {', '.join(map(str, self.columns))})")

    def chunks(self, columns: list[str] | None = None) -> Iterator[Chunk]:
        """Chunks of ``columns`` (all columns when ``None``)."""
        if self.format == "csv":
            yield from self._csv_chunks(columns)
        else:
            yield from self._parquet_chunks(columns)

    def _csv_chunks(self, columns: list[str] | None) -> Iterator[Chunk]:
        kwargs: dict[str, Any] = dict(dtype=str, keep_default_na=False, na_filter=False,
                                      chunksize=self.chunk_rows, sep=self.delimiter, on_bad_lines="error")
        if self.implicit_index:
            kwargs["index_col"] = 0
        # ``usecols`` would make pandas accept rows with too many fields: read every column
        # (as text) so that a malformed row is always reported, then keep the ones asked for.
        row = 1
        try:
            reader = pd.read_csv(self.path, **kwargs)
            with reader:
                for frame in reader:
                    yield Chunk(row, frame if columns is None else frame[columns])
                    row += frame.shape[0]
        except pd.errors.ParserError as exc:
            msg = str(exc).replace("Error tokenizing data. C error: ", "")
            raise ValueError(f"{self.label}: malformed CSV near data row {row}: {msg.strip()}") from None
        except pd.errors.EmptyDataError:
            raise ValueError(f"{self.label}: empty file, expected a header line") from None
        except UnicodeDecodeError:
            raise ValueError(f"{self.label}: not a UTF-8 text file") from None

    def _parquet_chunks(self, columns: list[str] | None) -> Iterator[Chunk]:
        pf = self._parquet_file()
        row = 1
        size = self.chunk_rows
        try:
            # One row group at a time: iter_batches over the whole file reads ahead across row
            # groups, and its memory grew with the file (45 MB at 4e6 rows, 119 MB at 1.6e7).
            # Batches are gathered across row groups into chunks of ``size`` rows, so files
            # with many small row groups are not cut into many small chunks.
            pending: list[Any] = []
            count = 0
            for group in range(pf.metadata.num_row_groups):
                for batch in pf.iter_batches(batch_size=size, columns=columns, row_groups=[group]):
                    pending.append(batch)
                    count += batch.num_rows
                    while count >= size:
                        merged = _concat_batches(pending)
                        head, rest = merged.slice(0, size), merged.slice(size)
                        yield Chunk(row, head)
                        row += size
                        pending, count = ([rest] if rest.num_rows else []), rest.num_rows
            if count:
                yield Chunk(row, _concat_batches(pending))
        except OSError as exc:
            raise ValueError(f"{self.label}: cannot read Parquet data near row {row}: {exc}") from None


def _concat_batches(batches: list[Any]) -> Any:
    """One RecordBatch from several of the same schema (``pyarrow.concat_batches`` where it exists)."""
    if len(batches) == 1:
        return batches[0]
    if hasattr(pa, "concat_batches"):
        return pa.concat_batches(batches)
    return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]  # pragma: no cover (pyarrow < 19)


# --------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------
class TableWriter:
    """Writes a table chunk by chunk to a temporary file beside ``path``; ``commit`` renames it.

    Refuses an existing ``path`` unless ``force`` and a path in a missing directory.  If
    anything fails before :meth:`commit`, :meth:`abort` (or leaving the ``with`` block by
    an exception) removes the temporary file, so no partial output is ever left behind.
    The output gets the permissions the umask gives a new file.  ``-`` writes CSV to
    standard output as it goes (nothing to rename, so nothing to take back on an error).
    """

    def __init__(self, path: str | os.PathLike[str], *, force: bool = False) -> None:
        self.stdout = str(path) == STDIO
        self.path = Path(path)
        self._fh: Any = None
        self._pq: Any = None
        self._header_done = False
        self.rows = 0
        if self.stdout:
            self.format: TableFormat = "csv"
            self.tmp: Path | None = None
            self._fh = sys.stdout
            return
        self.format = table_format(self.path)
        check_output_path(self.path, force=force)
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        os.fchmod(fd, new_file_mode())
        os.close(fd)
        self.tmp = Path(tmp)

    def __enter__(self) -> "TableWriter":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None:
            self.abort()

    def write_csv(self, frame: pd.DataFrame, *, index: bool, delimiter: str = ",") -> None:
        if self._fh is None:
            self._fh = open(self.tmp, "w", newline="", encoding="utf-8")  # type: ignore[arg-type]
        frame.to_csv(self._fh, header=not self._header_done, index=index,
                     index_label=False if index else None, sep=delimiter, lineterminator="\n")
        self._header_done = True
        self.rows += frame.shape[0]

    def write_arrow(self, table: Any) -> None:
        if self._pq is None:
            self._pq = pq.ParquetWriter(self.tmp, table.schema)
        self._pq.write_table(table)
        self.rows += table.num_rows

    def _close(self) -> None:
        if self.stdout:
            self._fh.flush()
            return
        if self._fh is not None:
            self._fh.close()
        if self._pq is not None:
            self._pq.close()

    def commit(self) -> None:
        self._close()
        if self.tmp is not None:
            os.replace(self.tmp, self.path)

    def abort(self) -> None:
        try:
            self._close()
        finally:
            if self.tmp is not None and self.tmp.exists():
                self.tmp.unlink()


# --------------------------------------------------------------------------
# the scan: sequences, their lengths, transitions and private positions
# --------------------------------------------------------------------------
def group_ranks(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rank of each row among the rows of its code (file order), and the stable sort order."""
    order = np.argsort(codes, kind="stable")
    sc = codes[order]
    m = sc.shape[0]
    if m == 0:
        return np.zeros(0, dtype=np.int64), order
    starts = np.flatnonzero(np.r_[True, sc[1:] != sc[:-1]])
    lengths = np.diff(np.r_[starts, m])
    rank_sorted = np.arange(m) - np.repeat(starts, lengths)
    rank = np.empty(m, dtype=np.int64)
    rank[order] = rank_sorted
    return rank, order


@dataclass
class ScanState:
    """What one pass over the data learns, mergeable chunk by chunk (or partition by partition).

    Per sequence id (in order of first appearance): the number of records, the first
    two and last two values (``-1`` = none), and the 0-based positions flagged private.
    Pooled over sequences: transition pairs and triples (never across two sequences).
    ``merge`` appends a later piece of the data, so the scan of a file equals the merge
    of the scans of its chunks in order.
    """

    ids: list = field(default_factory=list)
    n: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    first2: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int8))
    last2: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int8))
    pairs: np.ndarray = field(default_factory=lambda: np.zeros((2, 2), dtype=np.int64))
    triples: np.ndarray = field(default_factory=lambda: np.zeros((2, 2, 2), dtype=np.int64))
    private: dict = field(default_factory=dict)  # code -> list of 0-based positions
    rows: int = 0

    @staticmethod
    def of_chunk(values: np.ndarray, ids: Any = None, private: np.ndarray | None = None) -> "ScanState":
        """The scan of one piece of data (``ids=None``: one sequence)."""
        values = np.asarray(values, dtype=np.int8)
        m = values.shape[0]
        if ids is None:
            codes = np.zeros(m, dtype=np.int64)
            uniques: list = [None] if m else []
        else:
            codes, uniq = pd.factorize(pd.Series(np.asarray(ids, dtype=object) if not isinstance(ids, pd.Series)
                                                 else ids), sort=False, use_na_sentinel=False)
            codes = codes.astype(np.int64)
            uniques = list(uniq)
        k = len(uniques)
        rank, order = group_ranks(codes)
        sc = codes[order]
        sv = values[order].astype(np.int64)
        same = sc[1:] == sc[:-1]
        pairs = np.bincount((2 * sv[:-1] + sv[1:])[same], minlength=4).reshape(2, 2) if m > 1 else np.zeros((2, 2))
        if m > 2:
            same3 = same[1:] & same[:-1]
            triples = np.bincount((4 * sv[:-2] + 2 * sv[1:-1] + sv[2:])[same3], minlength=8).reshape(2, 2, 2)
        else:
            triples = np.zeros((2, 2, 2))
        n = np.bincount(codes, minlength=k).astype(np.int64)
        first2 = np.full((k, 2), -1, dtype=np.int8)
        last2 = np.full((k, 2), -1, dtype=np.int8)
        if m:
            starts = np.flatnonzero(np.r_[True, sc[1:] != sc[:-1]])
            ends = np.r_[starts[1:], m] - 1
            g = sc[starts]
            first2[g, 0] = sv[starts]
            two = ends > starts
            first2[g[two], 1] = sv[starts[two] + 1]
            last2[g, 1] = sv[ends]
            last2[g[two], 0] = sv[ends[two] - 1]
        priv: dict = {}
        if private is not None:
            flagged = np.flatnonzero(np.asarray(private, dtype=bool))
            for c, pos in zip(codes[flagged].tolist(), rank[flagged].tolist()):
                priv.setdefault(c, []).append(pos)
        return ScanState(uniques, n, first2, last2, pairs.astype(np.int64), triples.astype(np.int64), priv, m)

    def merge(self, later: "ScanState") -> "ScanState":
        """This scan followed by ``later`` (a scan of the data that comes next)."""
        index = {id_key(v): i for i, v in enumerate(self.ids)}
        ids = list(self.ids)
        map_b = np.empty(len(later.ids), dtype=np.int64)
        for j, v in enumerate(later.ids):
            key = id_key(v)
            if key not in index:
                index[key] = len(ids)
                ids.append(v)
            map_b[j] = index[key]
        k = len(ids)
        n_a = np.zeros(k, dtype=np.int64)
        n_a[: self.n.shape[0]] = self.n
        f_a = np.full((k, 2), -1, dtype=np.int8)
        f_a[: self.n.shape[0]] = self.first2
        l_a = np.full((k, 2), -1, dtype=np.int8)
        l_a[: self.n.shape[0]] = self.last2
        pairs = self.pairs + later.pairs
        triples = self.triples + later.triples
        # transitions across the boundary: (a_{-2}, a_{-1}) followed by (b_1, b_2)
        a2, a1 = l_a[map_b, 0].astype(np.int64), l_a[map_b, 1].astype(np.int64)
        b1, b2 = later.first2[:, 0].astype(np.int64), later.first2[:, 1].astype(np.int64)
        ok = (a1 >= 0) & (b1 >= 0)
        np.add.at(pairs, (a1[ok], b1[ok]), 1)
        ok3 = ok & (a2 >= 0)
        np.add.at(triples, (a2[ok3], a1[ok3], b1[ok3]), 1)
        ok3b = ok & (b2 >= 0)
        np.add.at(triples, (a1[ok3b], b1[ok3b], b2[ok3b]), 1)
        # new first/last two values
        n_b = later.n
        before = n_a[map_b]
        new_first = f_a.copy()
        fb = f_a[map_b]
        fb = np.where((before == 0)[:, None], later.first2, fb)
        one = before == 1
        fb[one, 1] = later.first2[one, 0]
        new_first[map_b] = fb
        new_last = l_a.copy()
        lb = later.last2.copy()
        single = n_b == 1
        lb[single, 0] = l_a[map_b[single], 1]
        new_last[map_b] = lb
        private = {c: list(v) for c, v in self.private.items()}
        for j, pos in later.private.items():
            c = int(map_b[j])
            private.setdefault(c, []).extend(int(before[j]) + p for p in pos)
        n_new = n_a.copy()
        n_new[map_b] += n_b
        return ScanState(ids, n_new, new_first, new_last, pairs, triples, private, self.rows + later.rows)

    def counts(self) -> TransitionCounts:
        """Pooled :class:`redactopt.release.fit.TransitionCounts`."""
        return TransitionCounts(self.pairs.copy(), self.triples.copy(), int(self.rows), len(self.ids))

    def index(self) -> dict:
        """Map from id key to code."""
        return {id_key(v): i for i, v in enumerate(self.ids)}


def id_key(v: object) -> object:
    """Hashable key of an id: numpy scalars as Python values, NaN/None as None."""
    if v is None:
        return None
    if isinstance(v, float) and np.isnan(v):
        return None
    if isinstance(v, np.generic):
        return v.item()
    return v
