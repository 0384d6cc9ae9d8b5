"""Reading and writing tables in chunks of Arrow record batches: CSV, Parquet, or a table in memory.

Conventions (README, "Command line"): ⊥ is an empty field in CSV and a null in Parquet, never a
sentinel number.  Rows are counted from 1 in messages (the first data row is row 1; the
header is not a row).

* **CSV** is read by pyarrow's streaming reader (multi-threaded, only the columns asked
  for are converted): the binary columns as ``int8`` when every value is an integer (the
  common case, :class:`TextValues` otherwise, and the caller reads them again as text),
  every other column as text, exactly as written.  A header with one name fewer than the
  rows have fields (the first field is a row id, as in the UCI occupancy files) is
  recognised.  Compressed input (``.gz``, ``.bz2``, ``.xz``, ``.zst``) is decompressed on
  the fly.
* **Parquet** is read one row group at a time (memory does not grow with the file).
* **Tables in memory** (a pyarrow ``Table`` or a pandas ``DataFrame``) are read in slices.

Everything streams: memory depends on the chunk size, never on the number of rows.
Inputs are only ever opened for reading.  Outputs go to a temporary file beside the
destination (:class:`TableWriter`), renamed when complete.
"""

from __future__ import annotations

import bz2
import contextlib
import csv
import gzip
import io
import json
import lzma
import os
import queue
import re
import shutil
import sys
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal, TypeVar

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from redactopt import _tempfiles
from redactopt.io import STDIO, check_input_path, check_output_path, new_file_mode

__all__ = [
    "DEFAULT_CHUNK_ROWS",
    "TableFormat",
    "table_format",
    "Chunk",
    "CsvLayout",
    "TableReader",
    "MemoryReader",
    "TableWriter",
    "TextValues",
    "open_binary",
    "written_metadata",
]

DEFAULT_CHUNK_ROWS = 1_000_000

TableFormat = Literal["csv", "parquet"]

_COMPRESSED = (".gz", ".bz2", ".xz", ".zst")
_CSV_SUFFIXES = (".csv", ".txt", ".tsv") + tuple(s + c for s in (".csv", ".txt", ".tsv") for c in _COMPRESSED)
_PARQUET_SUFFIXES = (".parquet", ".pq", ".parq")
#: An empty line (and its line end) of a CSV output.
_EMPTY_LINE = re.compile(rb"(?m)^(\r?\n)")

#: Bytes pyarrow's CSV reader parses at a time (its batches are re-cut into chunks of rows).
_CSV_BLOCK = 1 << 20


class TextValues(Exception):
    """A binary column of a CSV file holds a value that is not an integer (``true``, ``1.0``, ...): read it as text."""


def table_format(path: str | os.PathLike[str]) -> TableFormat:
    """``"csv"`` or ``"parquet"`` from the file name; anything else is a ``ValueError``."""
    name = Path(path).name.lower()
    if name.endswith(_PARQUET_SUFFIXES):
        return "parquet"
    if name.endswith(_CSV_SUFFIXES):
        return "csv"
    raise ValueError(
        f"{path}: unknown table format; use a name ending in .csv/.txt/.tsv (text, optionally .gz/.bz2/.xz/.zst) "
        "or .parquet"
    )


#: Delimiters a CSV input's header line is sniffed for, in order of preference on a tie.
_DELIMITERS = (",", "\t", ";", "|")


def csv_delimiter(path: str | os.PathLike[str], *, sniff: bool = False) -> str:
    """Tab for a ``.tsv`` name (compressed or not), else comma; with ``sniff`` (an existing input), the
    delimiter its header line uses most outside quotes, among comma, tab, semicolon and ``|`` (the name's
    default when the header holds none of them: one column)."""
    default = "\t" if ".tsv" in Path(path).name.lower() else ","
    if not sniff:
        return default
    try:
        with open_binary(path) as fh:
            head = fh.read(1 << 16)
    except (OSError, EOFError, lzma.LZMAError):
        return default
    line = head.decode("utf-8-sig", errors="replace").splitlines()[0] if head else ""
    outside = re.sub(r'"[^"]*"', "", line)  # quoted names may hold any character
    counts = {d: outside.count(d) for d in _DELIMITERS}
    best = max(_DELIMITERS, key=lambda d: (counts[d], d == default))
    return best if counts[best] else default


def compression_suffix(path: str | os.PathLike[str]) -> str | None:
    """The compression suffix of a file name (``".gz"``, ``".bz2"``, ``".xz"``, ``".zst"``), or ``None``."""
    name = str(path).lower()
    return next((c for c in _COMPRESSED if name.endswith(c)), None)


def open_binary(path: str | os.PathLike[str], mode: str = "rb", *, compression: str | None = None) -> BinaryIO:
    """A binary file, (de)compressed by ``compression`` (a suffix such as ``".gz"``) or by the name's suffix."""
    comp = compression_suffix(path) if compression is None else compression
    if comp == ".gz":
        return gzip.open(path, mode)  # type: ignore[return-value]
    if comp == ".bz2":
        return bz2.open(path, mode)  # type: ignore[return-value]
    if comp == ".xz":
        return lzma.open(path, mode)  # type: ignore[return-value]
    if comp == ".zst":
        raw = pa.OSFile(str(path), mode)
        return (pa.CompressedInputStream(raw, "zstd") if "r" in mode
                else pa.CompressedOutputStream(raw, "zstd"))  # type: ignore[return-value]
    return open(path, mode)  # type: ignore[return-value]


_T = TypeVar("_T")
_DONE = object()


def prefetched(items: Iterable[_T], depth: int = 2) -> Iterator[_T]:
    """``items`` produced by a background thread, at most ``depth`` ahead of the consumer.

    A release reads chunk ``k + 1`` (pyarrow decodes without the GIL) while chunk ``k`` is
    redacted and written (pyarrow encodes without the GIL), so reading and writing overlap
    on two cores; memory grows by ``depth`` chunks, never with the rows.  The items arrive in
    order and an exception raised while producing them is raised here, in the consumer.
    When the consumer stops early (an error, an interrupt, ``close()``), the thread stops
    after the item it is reading and closes ``items``.
    """
    q: queue.Queue = queue.Queue(maxsize=max(1, int(depth)))
    stop = threading.Event()

    def put(entry: tuple) -> bool:
        while not stop.is_set():
            try:
                q.put(entry, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        it = iter(items)
        try:
            for x in it:
                if not put((None, x)):
                    return
            put((None, _DONE))
        except BaseException as exc:  # handed to the consumer, which raises it
            put((exc, None))
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()

    worker = threading.Thread(target=produce, name="redactopt-read-ahead", daemon=True)
    worker.start()
    try:
        while True:
            exc, x = q.get()
            if exc is not None:
                raise exc
            if x is _DONE:
                return
            yield x
    finally:
        stop.set()
        worker.join()


@dataclass
class Chunk:
    """One chunk of a table: its rows and where they start (1-based row number of the first)."""

    first_row: int
    frame: Any  # pyarrow.RecordBatch, or pandas.DataFrame for a DataFrame in memory

    def __len__(self) -> int:
        return int(self.frame.num_rows) if isinstance(self.frame, pa.RecordBatch) else int(self.frame.shape[0])

    def column(self, name: str) -> Any:
        """A column as a pyarrow array (missing values of a pandas column become nulls)."""
        if isinstance(self.frame, pd.DataFrame):
            return pa.Array.from_pandas(self.frame[name])
        return self.frame.column(name)


@dataclass(frozen=True)
class CsvLayout:
    """How a CSV file is laid out: header names, a leading row-id field without a name, delimiter."""

    header: list[str]
    implicit_index: bool
    delimiter: str
    #: the name given to the row-id field when it becomes a column (as pandas' reset_index names it)
    index_name: str

    @property
    def names(self) -> list[str]:
        """The names of the fields of a data row."""
        return ([self.index_name] if self.implicit_index else []) + self.header


def _csv_layout(path: Path, label: str) -> CsvLayout:
    try:
        with open_binary(path) as fh:
            head = fh.read(1 << 16)
    except (OSError, EOFError, lzma.LZMAError) as exc:
        raise ValueError(f"{label}: cannot read: {exc}") from None
    try:
        text = head.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not just a character cut at the end of the 64 KB
            raise ValueError(f"{label}: not a UTF-8 text file") from None
        text = head[: exc.start].decode("utf-8-sig")
    delim = csv_delimiter(path, sniff=True)
    rows = list(csv.reader(io.StringIO(text), delimiter=delim))
    if not rows or not rows[0]:
        raise ValueError(f"{label}: empty file, expected a header line")
    header = rows[0]
    implicit = len(rows) > 1 and len(rows[1]) == len(header) + 1
    index_name = "index" if "index" not in header else "level_0"
    return CsvLayout(header, implicit, delim, index_name)


def _concat_batches(batches: list[Any]) -> Any:
    """One RecordBatch from several of the same schema (``pyarrow.concat_batches`` where it exists)."""
    if len(batches) == 1:
        return batches[0]
    if hasattr(pa, "concat_batches"):
        return pa.concat_batches(batches)
    return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]  # pragma: no cover (pyarrow < 19)


def _rechunk(batches: Iterator[Any], size: int, first_row: int = 1) -> Iterator[Chunk]:
    """Record batches gathered and cut into chunks of ``size`` rows (the last may be shorter)."""
    row = first_row
    pending: list[Any] = []
    count = 0
    for batch in batches:
        if not batch.num_rows:
            continue
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


def _check_chunk_rows(chunk_rows: object) -> int:
    if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, int) or chunk_rows < 1:
        raise ValueError(f"chunk_rows must be an integer >= 1, got {chunk_rows!r}")
    return chunk_rows


class TableReader:
    """Chunked reader of a CSV or Parquet file (see the module docstring).

    ``row_groups`` restricts a Parquet file to some of its row groups (a partition of a dataset).
    """

    def __init__(self, path: str | os.PathLike[str], *, chunk_rows: int = DEFAULT_CHUNK_ROWS,
                 label: str | None = None, row_groups: list[int] | None = None) -> None:
        self.path = Path(path)
        #: how messages name the input (``<stdin>`` for a copy of standard input)
        self.label = str(self.path) if label is None else label
        self.format = table_format(self.path)
        self.chunk_rows = _check_chunk_rows(chunk_rows)
        check_input_path(self.path)
        if self.path.is_dir():
            raise ValueError(f"{self.label}: is a directory, expected a {self.format} file")
        self.layout: CsvLayout | None = None
        #: rows, when the file says so without being read (Parquet metadata)
        self.num_rows: int | None = None
        if self.format == "csv":
            self.layout = _csv_layout(self.path, self.label)
            self.columns = list(self.layout.header)
        else:
            pf = self._parquet_file()
            self.columns = pf.schema_arrow.names
            self.row_groups = list(range(pf.metadata.num_row_groups)) if row_groups is None else list(row_groups)
            self.num_rows = sum(int(pf.metadata.row_group(g).num_rows) for g in self.row_groups)

    @property
    def implicit_index(self) -> bool:
        return self.layout is not None and self.layout.implicit_index

    def _parquet_file(self) -> Any:
        try:
            return pq.ParquetFile(self.path)
        except Exception as exc:  # pyarrow raises several types for unreadable files
            raise ValueError(f"{self.label}: cannot read as Parquet: {exc}") from None

    def require(self, *names: str | None) -> None:
        """Raise naming the column when one of ``names`` is not in the table."""
        for name in names:
            if name is not None and name not in self.columns:
                sep = "" if self.layout is None else f"; fields read as separated by {self.layout.delimiter!r}"
                raise ValueError(f"{self.label}: no column '{name}' (columns: {', '.join(map(str, self.columns))}"
                                 f"{sep})")

    def chunks(self, columns: list[str] | None = None, *, binary: tuple[str, ...] = ()) -> Iterator[Chunk]:
        """Chunks of ``columns`` (every column when ``None``) as Arrow record batches.

        CSV: the ``binary`` columns are read as ``int8`` (:class:`TextValues` if one holds a
        value that is not an integer; read them again without ``binary``), all others as text.
        """
        if self.format == "csv":
            yield from _rechunk(self._csv_batches(columns, binary), self.chunk_rows)
        else:
            yield from self._parquet_chunks(columns)

    def _csv_batches(self, columns: list[str] | None, binary: tuple[str, ...]) -> Iterator[Any]:
        assert self.layout is not None
        names = self.layout.names
        include = names if columns is None else list(columns)
        types = {c: (pa.int8() if c in binary else pa.string()) for c in include}
        try:
            with contextlib.ExitStack() as stack:
                # an uncompressed file is opened by Arrow itself (no Python file object in between)
                src = str(self.path) if compression_suffix(self.path) is None else stack.enter_context(open_binary(self.path))
                reader = pacsv.open_csv(
                    src,
                    read_options=pacsv.ReadOptions(column_names=names, skip_rows=1, block_size=_CSV_BLOCK),
                    parse_options=pacsv.ParseOptions(delimiter=self.layout.delimiter, newlines_in_values=True),
                    convert_options=pacsv.ConvertOptions(include_columns=include, column_types=types,
                                                         strings_can_be_null=False,
                                                         quoted_strings_can_be_null=False),
                )
                yield from reader
        except pa.ArrowInvalid as exc:
            raise self._csv_error(str(exc)) from None
        except (OSError, EOFError, lzma.LZMAError) as exc:
            raise ValueError(f"{self.label}: cannot read: {exc}") from None

    def _csv_error(self, msg: str) -> Exception:
        if "conversion error to int8" in msg:
            return TextValues(msg)
        if "UTF8" in msg or "UTF-8" in msg:
            return ValueError(f"{self.label}: not a UTF-8 text file")
        if "Expected" in msg and "columns" in msg:
            return ValueError(f"{self.label}: malformed CSV {self._bad_row()}")
        return ValueError(f"{self.label}: malformed CSV: {msg.splitlines()[0]}")

    def _bad_row(self) -> str:
        """Where the first row with the wrong number of fields is (read again, only on an error)."""
        assert self.layout is not None
        width = len(self.layout.names)
        with open_binary(self.path) as raw, io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace",
                                                             newline="") as fh:
            rows = csv.reader(fh, delimiter=self.layout.delimiter)
            next(rows, None)
            r = 0
            for fields in rows:
                if not fields:
                    continue  # an empty line is not a row
                r += 1
                if len(fields) != width:
                    return f"near data row {r}: expected {width} fields, saw {len(fields)}"
        return "(a row has the wrong number of fields)"

    def _parquet_chunks(self, columns: list[str] | None) -> Iterator[Chunk]:
        pf = self._parquet_file()
        size = self.chunk_rows

        # One row group at a time: iter_batches over the whole file reads ahead across row
        # groups, and its memory grew with the file (45 MB at 4e6 rows, 119 MB at 1.6e7).
        def batches() -> Iterator[Any]:
            for group in self.row_groups:
                yield from pf.iter_batches(batch_size=size, columns=columns, row_groups=[group])

        md = pf.metadata
        before = sum(md.row_group(g).num_rows for g in range(self.row_groups[0])) if self.row_groups else 0
        try:
            yield from _rechunk(batches(), size, first_row=1 + before)  # rows numbered as in the file
        except OSError as exc:
            raise ValueError(f"{self.label}: cannot read Parquet data: {exc}") from None


class MemoryReader:
    """:class:`TableReader` for a table already in memory: a pyarrow ``Table`` or a pandas ``DataFrame``.

    Chunks are slices (no copies): record batches of an Arrow table, row ranges of a DataFrame.
    """

    format = "memory"
    layout = None
    implicit_index = False

    def __init__(self, table: Any, *, chunk_rows: int = DEFAULT_CHUNK_ROWS, label: str = "<table>") -> None:
        if not isinstance(table, (pa.Table, pd.DataFrame)):
            raise TypeError(f"expected a pyarrow Table or a pandas DataFrame, got {type(table).__name__}")
        self.table = table
        self.label = label
        self.chunk_rows = _check_chunk_rows(chunk_rows)
        self.columns = list(table.columns) if isinstance(table, pd.DataFrame) else table.column_names
        self.num_rows = int(table.shape[0]) if isinstance(table, pd.DataFrame) else table.num_rows

    def require(self, *names: str | None) -> None:
        for name in names:
            if name is not None and name not in self.columns:
                raise ValueError(f"{self.label}: no column '{name}' (columns: {', '.join(map(str, self.columns))})")

    def chunks(self, columns: list[str] | None = None, *, binary: tuple[str, ...] = ()) -> Iterator[Chunk]:
        t = self.table
        if isinstance(t, pd.DataFrame):
            sub = t if columns is None else t[columns]
            for a in range(0, self.num_rows, self.chunk_rows):
                yield Chunk(a + 1, sub.iloc[a : a + self.chunk_rows])
            return
        sub = t if columns is None else t.select(columns)
        yield from _rechunk(iter(sub.to_batches(max_chunksize=self.chunk_rows)), self.chunk_rows)


# --------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------
def written_metadata(metadata: dict[bytes, bytes] | None, names: list[str]) -> dict[bytes, bytes] | None:
    """The schema metadata a written table keeps: pandas' entries of the columns written, nothing else.

    An input's metadata describe the input — pandas' lists every column, those a release leaves out
    included, and any other key may name them too — so a release keeps only pandas' entries for the
    columns it writes (their dtypes read back as written) and drops every other key and the index
    description (``None``: nothing to keep).
    """
    if not metadata or b"pandas" not in metadata:
        return None
    try:
        meta = json.loads(metadata[b"pandas"])
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(meta, dict):
        return None
    wanted = set(map(str, names))
    cols = [c for c in meta.get("columns") or [] if isinstance(c, dict)
            and str(c.get("field_name", c.get("name"))) in wanted]
    kept = {"index_columns": [i for i in meta.get("index_columns") or [] if isinstance(i, str) and i in wanted],
            "column_indexes": [], "columns": cols}
    kept.update({k: meta[k] for k in ("creator", "pandas_version") if k in meta})
    return {b"pandas": json.dumps(kept).encode("utf-8")}


class TableWriter:
    """Writes a table to a temporary file beside ``path``; :meth:`commit` renames it into place.

    Refuses an existing ``path`` unless ``force`` and a path in a missing directory.  If
    anything fails before :meth:`commit`, :meth:`abort` (or leaving the ``with`` block by
    an exception) removes the temporary file, so no partial output is ever left behind.
    The output gets the permissions the umask gives a new file.  ``-`` (standard output,
    CSV) is written to a temporary file too and copied out at :meth:`commit`, so an error
    writes nothing there either.  A CSV name ending in ``.gz``, ``.bz2``, ``.xz`` or
    ``.zst`` is compressed.

    Write either record batches (:meth:`write_batch`; Parquet, or CSV through pyarrow's
    writer after :meth:`write_header`) or bytes (:meth:`binary`, CSV).
    """

    def __init__(self, path: str | os.PathLike[str], *, force: bool = False) -> None:
        self.stdout = str(path) == STDIO
        self.path = Path(path)
        self._fh: Any = None
        self._pq: Any = None
        self.rows = 0
        if self.stdout:
            self.format: TableFormat = "csv"
            fd, tmp = _tempfiles.temp_file(prefix="redactopt-stdout.", suffix=".tmp")
        else:
            self.format = table_format(self.path)
            check_output_path(self.path, force=force)
            fd, tmp = _tempfiles.temp_file(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
            os.fchmod(fd, new_file_mode())
        os.close(fd)
        self.tmp = Path(tmp)
        self.compression = None if self.stdout else compression_suffix(self.path)
        self.delimiter = csv_delimiter(self.path)

    def __enter__(self) -> "TableWriter":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None:
            self.abort()

    def binary(self) -> BinaryIO:
        """The output as a binary file (CSV bytes), (de)compressed as the name says."""
        if self._fh is None:
            self._fh = open_binary(self.tmp, "wb", compression=self.compression)
        return self._fh

    def write_header(self, names: list[str] | bytes, delimiter: str = ",") -> None:
        """The CSV header line: given bytes as they are, or names quoted where needed."""
        if isinstance(names, list):
            buf = io.StringIO()
            csv.writer(buf, delimiter=delimiter, lineterminator="\n").writerow(names)
            names = buf.getvalue().encode("utf-8")
        self.binary().write(names)

    def write_batch(self, batch: Any, *, schema: Any = None, delimiter: str = ",") -> None:
        """One record batch: Parquet with ``schema`` (fixed by the first batch), or CSV rows without a header."""
        if self.format == "parquet":
            if self._pq is None:  # the input's metadata only for the columns written
                schema = schema or batch.schema
                schema = schema.remove_metadata().with_metadata(written_metadata(schema.metadata, schema.names) or {})
                self._pq = pq.ParquetWriter(self.tmp, schema)
            self._pq.write_batch(batch)
        else:
            # quote nothing, as most CSV files are written; a batch with a value that needs quotes
            # (a delimiter, a quote, a line end) is written with the quotes it needs
            sink = pa.BufferOutputStream()
            try:
                pacsv.write_csv(batch, sink, pacsv.WriteOptions(include_header=False, delimiter=delimiter,
                                                                quoting_style="none"))
            except pa.ArrowInvalid:
                sink = pa.BufferOutputStream()
                pacsv.write_csv(batch, sink, pacsv.WriteOptions(include_header=False, delimiter=delimiter))
            data = sink.getvalue().to_pybytes()
            if batch.num_columns == 1 and batch.column(0).null_count:
                # one column: an empty field is an empty line, which CSV readers skip; write it as ""
                data = _EMPTY_LINE.sub(b'""\\1', data)
            self.binary().write(data)
        self.rows += batch.num_rows

    def _close(self) -> None:
        for w in (self._pq, self._fh):
            if w is not None:
                w.close()
        self._pq = self._fh = None

    def reset(self) -> None:
        """Start the output again from nothing (the temporary file is emptied)."""
        self._close()
        open(self.tmp, "wb").close()
        self.rows = 0

    def commit(self) -> None:
        self._close()
        if self.stdout:
            with open(self.tmp, "rb") as fh:
                shutil.copyfileobj(fh, sys.stdout.buffer, 1 << 20)
            sys.stdout.buffer.flush()
            self.tmp.unlink()
        else:
            os.replace(self.tmp, self.path)
        _tempfiles.settled(self.tmp)

    def abort(self) -> None:
        try:
            self._close()
        finally:
            if self.tmp.exists():
                self.tmp.unlink()
            _tempfiles.settled(self.tmp)
