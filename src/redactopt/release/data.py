"""The data model of a release: binary values, sequences, and what one pass over the data learns.

A *sequence* is the rows of one value of the ``--by`` column in file order (the whole
table without ``--by``); positions in a sequence count from 1 on the command line and
from 0 in the Python API.  Rows are counted from 1 in messages (the first data row is
row 1; the header is not a row).  Reading and writing tables is :mod:`redactopt.release.tables`.

Everything here works chunk by chunk: memory depends on the chunk size and on the number
of sequences, never on the number of rows.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from redactopt.release.fit import TransitionCounts
from redactopt.release.tables import DEFAULT_CHUNK_ROWS, Chunk

__all__ = [
    "DEFAULT_CHUNK_ROWS",
    "parse_binary",
    "binary_token",
    "ScanState",
    "SequenceIndex",
    "sequence_key",
    "group_ranks",
    "factorize",
    "ids_of",
    "id_key",
]

#: Accepted spellings of the two values in text files (after stripping blanks); any spelling
#: of the integers 0 and 1 is accepted too, as a number column would read it.
_TRUE_TOKENS = ("1", "1.0", "true", "True", "TRUE")
_FALSE_TOKENS = ("0", "0.0", "false", "False", "FALSE")


def sequence_key(seq_id: object) -> int:
    """A stable 64-bit key of a sequence id (its ``str`` form), for per-sequence random streams.

    The same id read from CSV (as text) or Parquet (as a number) gets the same key.
    """
    text = "" if seq_id is None else str(seq_id)
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


# --------------------------------------------------------------------------
# parsing the binary column
# --------------------------------------------------------------------------
def binary_token(text: str) -> int | None:
    """0 or 1 for an accepted spelling of a value in a text file, ``None`` for anything else."""
    t = text.strip()
    if t in _TRUE_TOKENS:
        return 1
    if t in _FALSE_TOKENS:
        return 0
    try:
        v = int(t)
    except ValueError:
        return None
    return v if v in (0, 1) else None


def parse_binary(values: Any, *, column: str, first_row: int, where: str) -> np.ndarray:
    """0/1 values of one chunk of a column as ``int8``; a missing or other value is an error.

    ``values`` is a pyarrow array (numbers, booleans or text; nulls are missing values) or
    a numpy array.  ``first_row`` is the 1-based row number of its first entry; messages
    name the row, the column and the value.
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Array):
        if values.null_count:
            i = int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0])
            raise ValueError(f"{where}: row {first_row + i}, column '{column}': missing value")
        t = values.type
        if pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_floating(t):
            return _parse_numeric(values.to_numpy(zero_copy_only=False), column=column, first_row=first_row,
                                  where=where)
        if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
            raise ValueError(f"{where}: column '{column}' has type {t}, expected integers, booleans or 0/1 text")
        out = np.full(len(values), -1, dtype=np.int8)
        out[pc.equal(values, "1").to_numpy(zero_copy_only=False)] = 1
        out[pc.equal(values, "0").to_numpy(zero_copy_only=False)] = 0
        return _parse_rest(out, values, column=column, first_row=first_row, where=where)
    arr = np.asarray(values)
    if arr.dtype.kind in "biuf":
        return _parse_numeric(arr, column=column, first_row=first_row, where=where)
    out = np.full(arr.shape[0], -1, dtype=np.int8)
    out[arr == "1"] = 1
    out[arr == "0"] = 0
    return _parse_rest(out, arr, column=column, first_row=first_row, where=where)


def _parse_rest(out: np.ndarray, values: Any, *, column: str, first_row: int, where: str) -> np.ndarray:
    """Finish :func:`parse_binary` of text: the entries other than "0" and "1", one by one."""
    for i in np.flatnonzero(out < 0).tolist():
        v = values[i]
        v = v.as_py() if isinstance(v, pa.Scalar) else v
        tok = None if v is None or isinstance(v, float) else binary_token(str(v))
        if tok is None:
            if v is None or (isinstance(v, float) and np.isnan(v)) or str(v).strip() == "":
                raise ValueError(f"{where}: row {first_row + i}, column '{column}': missing value")
            raise ValueError(f"{where}: row {first_row + i}, column '{column}': value {str(v)!r} is not 0 or 1")
        out[i] = tok
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


# --------------------------------------------------------------------------
# sequence ids
# --------------------------------------------------------------------------
class TextStates:
    """The state codes of a categorical column: its values as text, labelled in order of first appearance.

    :meth:`codes` codes one chunk after another (an Arrow array, a pandas Series or a numpy array),
    extending :attr:`labels` as new values appear — the same labels as
    :func:`redactopt.release.fit.encode_labels` gives the whole column.  With ``fixed`` labels
    (a given chain's states) a value outside them is an error naming its row.  A missing value
    (null, NaN; an empty field of a text file when ``empty_is_missing``) is an error naming its row.
    """

    def __init__(self, labels: list[str] | None = None, *, fixed: bool = False, empty_is_missing: bool = True) -> None:
        self.labels = [str(s) for s in labels] if labels is not None else []
        self.index = {s: i for i, s in enumerate(self.labels)}
        self.fixed = fixed
        self.empty_is_missing = empty_is_missing

    def codes(self, values: Any, *, column: str, first_row: int, where: str) -> np.ndarray:
        """The codes of one chunk's values (``first_row``: the 1-based row of its first value)."""
        if isinstance(values, pd.Series):
            local, uniques = pd.factorize(values, sort=False, use_na_sentinel=True)
            texts = [str(u) for u in uniques]
        else:
            arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else pa.array(values)
            if pa.types.is_dictionary(arr.type):  # its dictionary may hold values no row has (unused categories)
                arr = arr.dictionary_decode()
            enc = pc.dictionary_encode(arr)
            local = enc.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
            texts = [str(u) for u in enc.dictionary.to_pylist()]
            if pa.types.is_floating(arr.type) and "nan" in texts:  # a NaN stored as a value is missing too
                local = np.where(local == texts.index("nan"), -1, local)
        missing = local < 0
        if self.empty_is_missing and "" in texts:
            missing |= local == texts.index("")
        if missing.any():
            i = int(np.flatnonzero(missing)[0])
            raise ValueError(f"{where}: row {first_row + i}, column '{column}': missing value")
        if not local.size:
            return local
        # map the chunk's values to the global labels in the order they first occur in the chunk
        first = np.full(len(texts), local.size, dtype=np.int64)
        np.minimum.at(first, local, np.arange(local.size))
        glob = np.empty(len(texts), dtype=np.int64)
        for j in np.argsort(first, kind="stable").tolist():
            if first[j] == local.size:  # a value no row of the chunk holds (a pandas category unused)
                continue
            t = texts[j]
            if t not in self.index:
                if self.fixed:
                    i = int(first[j])
                    raise ValueError(f"{where}: row {first_row + i}, column '{column}': value {t!r} is not one of "
                                     f"the states {self.labels}")
                self.index[t] = len(self.labels)
                self.labels.append(t)
            glob[j] = self.index[t]
        return glob[local]


def factorize(ids: Any) -> tuple[np.ndarray, list]:
    """Codes (``int64``, in order of first appearance) and the distinct ids of one chunk of an id column."""
    if isinstance(ids, pa.ChunkedArray):
        ids = ids.combine_chunks()
    if isinstance(ids, pa.Array):
        enc = pc.dictionary_encode(ids)
        return enc.indices.to_numpy(zero_copy_only=False).astype(np.int64), enc.dictionary.to_pylist()
    codes, uniq = pd.factorize(pd.Series(np.asarray(ids, dtype=object)), sort=False, use_na_sentinel=False)
    return codes.astype(np.int64), list(uniq)


class SequenceIndex:
    """Maps the ids of a later pass to the codes of the scan (:meth:`ScanState.index`), chunk by chunk."""

    def __init__(self, ids: list, index: dict | None = None) -> None:
        self.index = index if index is not None else {id_key(v): i for i, v in enumerate(ids)}

    def codes(self, ids: Any, where: str) -> np.ndarray:
        local, uniq = factorize(ids)
        try:
            lookup = np.fromiter((self.index[id_key(v)] for v in uniq), dtype=np.int64, count=len(uniq))
        except KeyError as exc:
            raise ValueError(f"{where}: the input changed while it was being read (new id {exc.args[0]!r})") from None
        return lookup[local]


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
    triples: np.ndarray | None = field(default_factory=lambda: np.zeros((2, 2, 2), dtype=np.int64))
    #: the private rows: their sequence codes and 0-based positions, in the order read (numpy: a
    #: few bytes each, however many sequences; :attr:`private` gives them by sequence)
    private_codes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    private_pos: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    rows: int = 0
    #: id key -> code, handed from merge to merge (a scan merges one chunk at a time)
    _index: dict | None = field(default=None, repr=False, compare=False)
    #: the transitions by distance to the private records, when the scan counted them
    #: (:func:`redactopt.release.apply.scan` with known private positions)
    tally: Any = field(default=None, repr=False, compare=False)

    @property
    def private(self) -> dict[int, list[int]]:
        """The private positions by sequence code (sorted), built from :attr:`private_codes` and :attr:`private_pos`."""
        out: dict[int, list[int]] = {}
        order = np.lexsort((self.private_pos, self.private_codes))
        for c, p in zip(self.private_codes[order].tolist(), self.private_pos[order].tolist()):
            out.setdefault(c, []).append(p)
        return out

    @staticmethod
    def of_length(n: int) -> "ScanState":
        """What a scan of one sequence of ``n`` records learns without reading it (no transitions, no flags)."""
        k = 1 if n else 0
        return ScanState([None] * k, np.full(k, n, dtype=np.int64), np.full((k, 2), -1, dtype=np.int8),
                         np.full((k, 2), -1, dtype=np.int8), rows=n)

    @staticmethod
    def of_chunk(values: np.ndarray, ids: Any = None, private: np.ndarray | None = None, *,
                 k: int = 2) -> "ScanState":
        """The scan of one piece of data (``ids=None``: one sequence); ``values`` are state codes
        ``0..k-1`` (0/1 for a binary column)."""
        values = np.asarray(values, dtype=np.int64)
        m = values.shape[0]
        if ids is None:
            codes = np.zeros(m, dtype=np.int64)
            uniques: list = [None] if m else []
            rank = order = np.arange(m, dtype=np.int64)
        else:
            codes, uniques = factorize(ids)
            rank, order = group_ranks(codes)
        g_count = len(uniques)
        sc = codes[order]
        sv = values[order]
        same = sc[1:] == sc[:-1]
        pairs = np.bincount((k * sv[:-1] + sv[1:])[same], minlength=k * k).reshape(k, k) if m > 1 \
            else np.zeros((k, k))
        triples = None
        if k <= MAX_TRIPLE_STATES:
            triples = np.zeros((k, k, k))
            if m > 2:
                same3 = same[1:] & same[:-1]
                triples = np.bincount(((k * sv[:-2] + sv[1:-1]) * k + sv[2:])[same3],
                                      minlength=k ** 3).reshape(k, k, k)
        dtype = _value_dtype(k)
        n = np.bincount(codes, minlength=g_count).astype(np.int64)
        first2 = np.full((g_count, 2), -1, dtype=dtype)
        last2 = np.full((g_count, 2), -1, dtype=dtype)
        if m:
            starts = np.flatnonzero(np.r_[True, sc[1:] != sc[:-1]])
            ends = np.r_[starts[1:], m] - 1
            g = sc[starts]
            first2[g, 0] = sv[starts]
            two = ends > starts
            first2[g[two], 1] = sv[starts[two] + 1]
            last2[g, 1] = sv[ends]
            last2[g[two], 0] = sv[ends[two] - 1]
        flagged = np.flatnonzero(np.asarray(private, dtype=bool)) if private is not None else np.zeros(0, np.int64)
        return ScanState(uniques, n, first2, last2, pairs.astype(np.int64),
                         None if triples is None else triples.astype(np.int64),
                         private_codes=codes[flagged].astype(np.int64), private_pos=rank[flagged].astype(np.int64),
                         rows=m)

    @property
    def k(self) -> int:
        """The number of states counted (2 for a binary column)."""
        return int(self.pairs.shape[0])

    def merge(self, later: "ScanState") -> "ScanState":
        """This scan followed by ``later`` (a scan of the data that comes next)."""
        # the id index passes to the merged scan (this one builds it again if merged again), so
        # merging a chunk costs what the chunk holds in Python, not what came before
        index = self._index if self._index is not None else {id_key(v): i for i, v in enumerate(self.ids)}
        self._index = None
        ids = list(self.ids)
        map_b = np.empty(len(later.ids), dtype=np.int64)
        for j, v in enumerate(later.ids):
            key = id_key(v)
            if key not in index:
                index[key] = len(ids)
                ids.append(v)
            map_b[j] = index[key]
        k = len(ids)
        states = max(self.k, later.k)  # a categorical scan meets new states as it goes
        dtype = _value_dtype(states)
        n_a = np.zeros(k, dtype=np.int64)
        n_a[: self.n.shape[0]] = self.n
        f_a = np.full((k, 2), -1, dtype=dtype)
        f_a[: self.n.shape[0]] = self.first2
        l_a = np.full((k, 2), -1, dtype=dtype)
        l_a[: self.n.shape[0]] = self.last2
        pairs = _padded(self.pairs, states) + _padded(later.pairs, states)
        triples = None if self.triples is None or later.triples is None or states > MAX_TRIPLE_STATES \
            else _padded(self.triples, states) + _padded(later.triples, states)
        # transitions across the boundary: (a_{-2}, a_{-1}) followed by (b_1, b_2)
        a2, a1 = l_a[map_b, 0].astype(np.int64), l_a[map_b, 1].astype(np.int64)
        b1, b2 = later.first2[:, 0].astype(np.int64), later.first2[:, 1].astype(np.int64)
        ok = (a1 >= 0) & (b1 >= 0)
        np.add.at(pairs, (a1[ok], b1[ok]), 1)
        if triples is not None:
            ok3 = ok & (a2 >= 0)
            np.add.at(triples, (a2[ok3], a1[ok3], b1[ok3]), 1)
            ok3b = ok & (b2 >= 0)
            np.add.at(triples, (a1[ok3b], b1[ok3b], b2[ok3b]), 1)
        # new first/last two values
        n_b = later.n
        before = n_a[map_b]
        new_first = f_a.copy()
        fb = f_a[map_b]
        fb = np.where((before == 0)[:, None], later.first2, fb).astype(dtype)
        one = before == 1
        fb[one, 1] = later.first2[one, 0]
        new_first[map_b] = fb
        new_last = l_a.copy()
        lb = later.last2.astype(dtype)
        single = n_b == 1
        lb[single, 0] = l_a[map_b[single], 1]
        new_last[map_b] = lb
        private_codes = np.concatenate([self.private_codes, map_b[later.private_codes]])
        private_pos = np.concatenate([self.private_pos, before[later.private_codes] + later.private_pos])
        n_new = n_a.copy()
        n_new[map_b] += n_b
        return ScanState(ids, n_new, new_first, new_last, pairs, triples, private_codes=private_codes,
                         private_pos=private_pos, rows=self.rows + later.rows, _index=index)

    def relabel(self, to: np.ndarray, k: int) -> "ScanState":
        """This scan with state ``i`` renamed ``to[i]`` among ``k`` states (a partition's own labels made the
        dataset's: :mod:`redactopt.release.dask_backend`)."""
        to = np.asarray(to, dtype=np.int64)
        m = to.shape[0]
        pairs = np.zeros((k, k), dtype=np.int64)
        pairs[np.ix_(to, to)] = self.pairs[:m, :m]
        triples = None
        if self.triples is not None and k <= MAX_TRIPLE_STATES:
            triples = np.zeros((k, k, k), dtype=np.int64)
            triples[np.ix_(to, to, to)] = self.triples[:m, :m, :m]
        dtype = _value_dtype(max(k, 2))
        look = np.r_[to, -1]  # -1 (none) stays -1

        def moved(v: np.ndarray) -> np.ndarray:
            return look[np.where(v < 0, m, v)].astype(dtype)

        return ScanState(list(self.ids), self.n.copy(), moved(self.first2), moved(self.last2), pairs, triples,
                         private_codes=self.private_codes.copy(), private_pos=self.private_pos.copy(), rows=self.rows)

    def counts(self) -> TransitionCounts:
        """Pooled :class:`redactopt.release.fit.TransitionCounts` (no triples beyond
        :data:`MAX_TRIPLE_STATES` states)."""
        return TransitionCounts(self.pairs.copy(), None if self.triples is None else self.triples.copy(),
                                int(self.rows), len(self.ids))

    def index(self) -> SequenceIndex:
        """The codes of this scan, for the ids of a later pass (the scan's own id index, handed over)."""
        index, self._index = self._index, None
        return SequenceIndex(self.ids, index if index is not None and len(index) == len(self.ids) else None)


def check_private_positions(state: ScanState, private: list[int] | None) -> None:
    """``private`` (0-based positions, if given) needs a scan of a single sequence and positions inside it."""
    if private is None:
        return
    if len(state.ids) != 1:
        raise ValueError("--private positions need a single sequence; with --by use --private-column")
    from redactopt._validate import check_positions

    check_positions(private, int(state.n[0]))


#: Triples (the order test) are counted up to this many states (``k**3`` numbers).
MAX_TRIPLE_STATES = 16


def _value_dtype(k: int) -> type:
    """The smallest type of a state code and -1 (none): ``int8`` for a binary column."""
    return np.int8 if k <= 127 else np.int32


def _padded(a: np.ndarray, k: int) -> np.ndarray:
    """A ``(k0, ..., k0)`` count array as ``(k, ..., k)`` (new states have no counts yet)."""
    if a.shape[0] == k:
        return a
    out = np.zeros((k,) * a.ndim, dtype=a.dtype)
    out[tuple(slice(0, a.shape[0]) for _ in range(a.ndim))] = a
    return out


def id_key(v: object) -> object:
    """Hashable key of an id: numpy scalars as Python values, NaN/None as None."""
    if v is None:
        return None
    if isinstance(v, float) and np.isnan(v):
        return None
    if isinstance(v, np.generic):
        return v.item()
    return v


def ids_of(chunk: Chunk, by: str, where: str) -> Any:
    """The ``by`` column of a chunk (an Arrow array); a missing or empty id is an error naming the row."""
    ids = chunk.column(by)
    if isinstance(ids, pa.ChunkedArray):
        ids = ids.combine_chunks()
    missing = ids.is_null()
    if pa.types.is_string(ids.type) or pa.types.is_large_string(ids.type):
        missing = pc.or_(missing, pc.equal(ids, ""))
    if pc.any(missing).as_py():
        i = int(np.flatnonzero(missing.to_numpy(zero_copy_only=False))[0])
        raise ValueError(f"{where}: row {chunk.first_row + i}, column '{by}': missing value")
    return ids
