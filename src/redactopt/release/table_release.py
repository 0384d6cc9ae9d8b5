"""Releases that hold their table in memory: the class releases (:mod:`redactopt.release.class_apply`).

A scan, owner or holder mechanism decides each record's redaction from a whole sequence, so a class
release reads its table into pandas, codes every row into states here (:func:`prepare_table`: the
protected columns and bins, the private flags, the ordered sequences), fits its chain on the rows
it publishes with certainty (:func:`plan_chain`), and writes the released table back in the input's
layout (:func:`release_file`).  Local releases — 0/1, categorical, several columns protected
together — do not come here: they stream (:mod:`redactopt.release.apply`,
:mod:`redactopt.release.states`, :mod:`redactopt.release.codec`).
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from redactopt import _progress
from redactopt._validate import check_eps, check_positions
from redactopt import _tempfiles
from redactopt.io import check_input_path, new_file_mode, write_json_atomic
from redactopt.release.refusals import refuse_flag_protected
from redactopt.model.chain import Chain as KChain
from redactopt.release.passes import check_release_options, check_release_paths, fit_states_on, protected_columns
from redactopt.release.codec import StatesCodec
from redactopt.release.columns import Bins, output_columns
from redactopt.release.disclosure import Disclosure
from redactopt.release.fit import ChainFit
from redactopt.release.fitplan import fit_outside
from redactopt.release.states_plan import ORDER_TEST_MAX_STATES, kreach
from redactopt.release.order import order_frame, order_keys
from redactopt.release.tables import Chunk, MemoryReader, compression_suffix, csv_delimiter, open_binary, table_format
from redactopt.release.zones import PrivateIndex, ZoneTally, choose_zone

__all__ = ["prepare_table", "PreparedTable", "plan_chain", "describe_columns", "release_file", "read_table",
           "write_release"]


def complete_column(table: pd.DataFrame, name: str) -> pd.Series:
    """The column ``name``; an error naming the columns if it is absent, or the first row it misses."""
    if name not in table.columns:
        raise ValueError(f"column {name!r} not found; the columns are {list(map(str, table.columns))}")
    col = table[name]
    bad = np.flatnonzero(col.isna().to_numpy())
    if bad.size:
        raise ValueError(f"row {int(bad[0]) + 1}: column {name!r} has a missing value")
    return col


def table_sequences(table: pd.DataFrame, by: str | None) -> list[tuple[Any, np.ndarray]]:
    """``(id, rows)`` of every sequence: the rows of one ``by`` value in table order, ids in order of
    first appearance (one sequence, id ``None``, without ``by``)."""
    n = len(table)
    if by is None:
        return [(None, np.arange(n))]
    ids = complete_column(table, by)
    codes, uniques = pd.factorize(ids, sort=False)
    # the draws of a sequence are keyed by its id's text (the same from CSV and Parquet), so ids and
    # their texts must group the rows alike: not 1 and "1" apart, not 1 and 1.0 together
    text_codes, _ = pd.factorize(np.array([str(v) for v in ids.to_numpy()], dtype=object), sort=False)
    if not np.array_equal(codes, text_codes):
        i = int(np.flatnonzero(codes != text_codes)[0])
        same_id = np.flatnonzero(codes == codes[i])
        same_text = np.flatnonzero(text_codes == text_codes[i])
        j = int(next(iter(set(same_id) ^ set(same_text))))
        a, b = ids.iloc[min(i, j)], ids.iloc[max(i, j)]
        raise ValueError(f"column {by!r}: ids {a!r} (row {min(i, j) + 1}) and {b!r} (row {max(i, j) + 1}) "
                         f"{'are equal but written differently' if a == b else 'have the same text ' + repr(str(a))}"
                         "; sequences are keyed by the text of their id, so give ids one type")
    order = np.argsort(codes, kind="stable")
    bounds = np.cumsum(np.bincount(codes, minlength=len(uniques)))[:-1]
    return [(uniques[i], rows) for i, rows in enumerate(np.split(order, bounds))]


def private_flags(table: pd.DataFrame, private: object, private_column: str | None, by: str | None) -> np.ndarray:
    """Boolean flags of the private rows, from 0-based positions or a 0/1 column."""
    from redactopt.release.data import parse_binary

    check_release_options(private=private, private_column=private_column, by=by)
    n = len(table)
    flags = np.zeros(n, dtype=bool)
    if private_column is None:
        flags[list(check_positions(private, n))] = True
        return flags
    vals = complete_column(table, private_column).to_numpy()
    if vals.dtype == object:
        vals = np.array([str(v) for v in vals])
    flags[:] = parse_binary(vals, column=private_column, first_row=1, where="table") == 1
    if not flags.any():
        raise ValueError(f"column {private_column!r} marks no row private (1); nothing to protect")
    return flags





def _ordered_sequences(table: pd.DataFrame, by: str | None, order_by: str | None) -> list[tuple[Any, np.ndarray]]:
    """:func:`table_sequences`, each sequence's rows sorted by ``order_by`` (:mod:`redactopt.release.order`)."""
    seqs = table_sequences(table, by)
    if order_by is None:
        return seqs
    codes = np.empty(len(table), dtype=np.int64)
    for i, (_, rows) in enumerate(seqs):
        codes[rows] = i
    keys, _ = order_keys(table[order_by], order_by, "table")
    perm = order_frame(codes, keys, ids=[sid for sid, _ in seqs], name=order_by, where="table")
    bounds = np.cumsum([rows.size for _, rows in seqs])[:-1]
    return [(sid, rows) for (sid, _), rows in zip(seqs, np.split(perm, bounds))]


def _kfit_on(table: pd.DataFrame, protect: list[str], bins: dict[str, Bins], by: str | None,
             order_by: str | None, **fit_kw: Any) -> ChainFit:
    """The k-state fit of a separate, public table (``fit_on``): its sequences, ``by``/``order_by`` where it
    has them (:func:`redactopt.release.passes.fit_states_on`)."""
    return fit_states_on(MemoryReader(table, label="<table>"), columns=protect, bins=bins, by=by,
                         order_by=order_by, **fit_kw)


@dataclass(frozen=True)
class PreparedTable:
    """A table checked and coded for a categorical release (:func:`prepare_table`): the protected
    columns and bins, the columns written, the private flags, the state space, the ordered sequences,
    every row's state code with the labels, a row holding each state and the private positions per
    sequence."""

    table: pd.DataFrame
    eps: float
    cols: list[str]
    bins: dict[str, Bins]
    by: str | None
    order_by: str | None
    written_cols: list[str]
    kept: list[str]
    flags: np.ndarray
    codec: StatesCodec
    values_out: Any
    seqs: list[tuple[Any, np.ndarray]]
    codes: np.ndarray
    labels: list[str]
    privs: list[tuple[int, ...]]


def prepare_table(table: pd.DataFrame, *, column: str | None, protect: Any, bins: Any, eps: float,
                  by: str | None, order_by: str | None, private: object, private_column: str | None,
                  keep: Any, convert: Any = None) -> PreparedTable:
    """Check a table for a categorical release and code its rows (every check before any fit or design).

    ``convert(table, cols)``, when given, rewrites the protected column after the columns are checked
    (the class releases' 0/1 column).  Shared by :func:`kapply_frame` and
    :func:`redactopt.release.class_apply.class_apply_frame`.
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table must be a pandas DataFrame, got {type(table).__name__}")
    cols, bins_ = table_protected_columns(table, column, protect, bins)
    eps = check_eps(eps)
    if len(table) == 0:
        raise ValueError("no data rows")
    for c in (by, order_by):
        if c is not None and c not in table.columns:
            raise ValueError(f"column {c!r} not found; the columns are {list(map(str, table.columns))}")
    if convert is not None:
        table = convert(table, cols)
    written_cols, kept = output_columns(list(map(str, table.columns)), protected=cols, by=by, order_by=order_by,
                                        private_column=private_column, keep=keep)
    refuse_flag_protected(cols, private_column)
    flags = private_flags(table, private, private_column, by)
    for c in cols:
        complete_column(table, c)
    codec = StatesCodec(cols, bins=bins_)  # the states of every release's codec
    codes = codec.values(Chunk(1, table[cols]), "table")
    codec.freeze()
    values_out = {c: pd.Series(bins_[c].apply(table[c], where="table"), index=table.index) if c in bins_
                  else table[c] for c in cols}
    seqs = _ordered_sequences(table, by, order_by)
    return PreparedTable(table, eps, cols, bins_, by, order_by, written_cols, kept, flags, codec, values_out, seqs,
                         codes, list(codec.labels), [tuple(int(i) for i in np.flatnonzero(flags[rows]))
                                                     for _, rows in seqs])


@_progress.timed("fit")
def plan_chain(prep: PreparedTable, plan_for: Any, *, chain: KChain | None, fit_on: pd.DataFrame | None,
               fit_kw: dict, reach_of: Any = None) -> tuple[Any, dict]:
    """``plan_for`` at the chain given, fitted on ``fit_on`` (a separate public table, already converted),
    or fitted on the rows the release publishes with certainty (:func:`_kplan_zones`); the plan and
    where its chain came from."""
    if chain is not None:
        if not isinstance(chain, KChain):
            raise TypeError(f"chain must be a KChain, got {type(chain).__name__}")
        return plan_for(chain), {"source": "given"}
    if fit_on is not None:
        fitted = _kfit_on(fit_on, prep.cols, prep.bins, prep.by, prep.order_by, **fit_kw)
        return plan_for(fitted), {"source": "fit-on", "table": "<table>", "rows": fitted.records,
                                  "transitions": int(fitted.counts.sum()), "sequences": fitted.sequences}
    return _kplan_zones(prep.codes, prep.labels, prep.seqs, prep.privs, plan_for,
                        lambda out: fit_outside(out, prep.codec.fit_labels(out.states), prep.labels, len(prep.seqs),
                                                **fit_kw), reach_of=reach_of or kreach)


def describe_columns(rep: dict, table: pd.DataFrame, labels: Any, state_idx: np.ndarray, mask: np.ndarray, *,
                     cols: list[str], bins: dict[str, Bins], written_cols: list[str], by: str | None,
                     order_by: str | None, fit_source: dict) -> None:
    """The report's columns (protected, written, dropped, bins and, for every other written column, what
    it reveals about the protected state on the released rows: :class:`~redactopt.release.disclosure.Disclosure`),
    where the chain was fitted and the order.  Shared by categorical and class releases."""
    n = len(table)
    roles = {c: ("by" if c == by else "order-by" if c == order_by else "kept") for c in written_cols if c not in cols}
    disclosure = Disclosure(roles, [str(s) for s in labels], n)
    known = state_idx >= 0
    disclosure.add({c: table[c].to_numpy() for c in roles}, np.where(known, state_idx, 0), known & ~mask,
                   np.arange(n))
    rep["columns"] = {"protected": cols, "written": written_cols, "not_covered": disclosure.figures(),
                      "dropped": [str(c) for c in table.columns if c not in written_cols],
                      "bins": [b.to_dict() for b in bins.values()]}
    rep["chain"]["fit_rows"] = fit_source
    if order_by is not None:
        rep["order"] = {"by": order_by}


def table_protected_columns(table: pd.DataFrame, column: str | None, protect: Any, bins: Any,
                       ) -> tuple[list[str], dict[str, Bins]]:
    """The protected columns (``column`` or ``protect``, exactly one) and the bins, checked against the table
    (:func:`redactopt.release.passes.protected_columns`, naming a missing column as a DataFrame's check does)."""
    class _Columns:
        @staticmethod
        def require(*names: Any) -> None:
            for c in names:
                if c not in table.columns:
                    raise ValueError(f"column {c!r} not found; the columns are {list(map(str, table.columns))}")

    return protected_columns(_Columns, column, protect, bins)


def _kplan_zones(codes: np.ndarray, labels_all: list[str], seqs: list[tuple[Any, np.ndarray]],
                 privs: list[tuple[int, ...]], plan_for: Any, fit_outside: Any,
                 reach_of: Any = kreach) -> tuple[Any, dict]:
    """Fit on the rows the release publishes with certainty (:func:`~redactopt.release.zones.choose_zone`) and plan.

    ``reach_of(plan)``: how far from its nearest private record the plan's designs may redact
    (:func:`kreach` for local designs; the class releases of :mod:`redactopt.release.class_apply`
    pass their own)."""
    order = np.concatenate([rows for _, rows in seqs])
    seq_code = np.repeat(np.arange(len(seqs)), [rows.size for _, rows in seqs])
    pos = np.concatenate([np.arange(rows.size) for _, rows in seqs])
    pc_, pp_ = [], []
    for i, priv in enumerate(privs):
        pc_ += [i] * len(priv)
        pp_ += list(priv)
    index = PrivateIndex.of(np.asarray(pc_, dtype=np.int64), np.asarray(pp_, dtype=np.int64),
                            np.asarray([rows.size for _, rows in seqs], dtype=np.int64))
    tally = ZoneTally.of_chunk(codes[order], seq_code, index.distances(seq_code, pos), k=len(labels_all),
                               sequences=len(seqs), with_triples=len(labels_all) <= ORDER_TEST_MAX_STATES)
    fit, kplan, zone = choose_zone(
        tally, fit=fit_outside, plan=plan_for,
        reach_of=reach_of, total_rows=int(order.size), free_sequences=sum(1 for p in privs if not p))
    return kplan, zone.to_dict()


@dataclass
class _Layout:
    """What a file's own layout needs to be written back as it was (beyond its columns' values)."""

    kind: str  # "csv" or "parquet"
    keep_index: bool = False  # CSV: a row-id column without a name, read as the index
    header: list[str] | None = None  # CSV: the header as written (pandas renames blank and repeated names)
    index: list | None = None  # Parquet: a stored index, moved into columns so --by can name it
    stored_index: bool = False  # Parquet: the index is stored as columns (else as range metadata, or none)


def read_table(path: Path) -> tuple[pd.DataFrame, _Layout]:
    if table_format(path) == "parquet":
        import pyarrow.parquet as pq

        meta = pq.read_schema(path).pandas_metadata or {}
        stored = any(isinstance(c, str) for c in meta.get("index_columns", []))
        df = pd.read_parquet(path)
        if not stored:  # a range index (metadata only) or none: pandas keeps it and writes it back
            return df, _Layout("parquet")
        names = list(df.index.names)
        flat = df.reset_index(allow_duplicates=True)
        moved = list(flat.columns[: len(names)])
        if len(set(map(str, flat.columns))) < flat.shape[1]:  # an index named like a column: left as the index
            return df, _Layout("parquet", stored_index=True)
        return flat, _Layout("parquet", index=list(zip(moved, names)), stored_index=True)
    sep = csv_delimiter(path, sniff=True)
    with open_binary(path) as fh:
        df = pd.read_csv(fh, sep=sep, dtype=str, keep_default_na=False, na_values=[""])
    with open_binary(path) as fh:
        header = pd.read_csv(fh, sep=sep, header=None, nrows=1, dtype=str, keep_default_na=False).iloc[0].tolist()
    # a header one field shorter than the rows (a row-id column without a name) becomes the index
    keep_index = not isinstance(df.index, pd.RangeIndex)
    return df, _Layout("csv", keep_index, header if len(header) == len(df.columns) else None)


def _write(released: pd.DataFrame, layout: _Layout, tmp: str, out_name: str) -> None:
    """Write the release in the input's layout: its header, its index, its row-id column."""
    if layout.index:
        released = released.set_index([c for c, _ in layout.index])
        released.index.names = [n for _, n in layout.index]
    if table_format(out_name) == "parquet":
        released.to_parquet(tmp, index=layout.keep_index if layout.kind == "csv" else (layout.stored_index or None))
        return
    sep = csv_delimiter(out_name)
    # compressed as the output's name says (the temporary file's name says nothing)
    with open_binary(tmp, "wb", compression=compression_suffix(out_name)) as raw, \
            io.TextIOWrapper(raw, encoding="utf-8", newline="") as fh:
        if layout.kind == "csv":
            released.to_csv(fh, sep=sep, index=layout.keep_index, header=layout.header or True,
                            index_label=False if layout.keep_index else None)
        else:
            released.to_csv(fh, sep=sep, index=layout.stored_index)


def _trimmed(layout: _Layout, written: list[str]) -> _Layout:
    """The layout of a release that writes only some columns: no row id without a name, no header as
    written (those belong to every column); a Parquet index only where its columns are written."""
    index = [(c, nm) for c, nm in (layout.index or []) if c in written] or None
    return _Layout(layout.kind, False, None, index, layout.stored_index and index is not None)


def write_release(released: pd.DataFrame, table: pd.DataFrame, layout: _Layout, out_path: Path) -> None:
    """Write a released table (of the input ``table``, read as ``layout``) to ``out_path``: a temporary
    file renamed when complete, in the input's layout where every column is written."""
    every = set(map(str, released.columns)) == set(map(str, table.columns))
    if not every:  # an index that is not one of the written columns is a column not written
        layout = _trimmed(layout, list(map(str, released.columns)))
        released = released.reset_index(drop=True)
    fd, tmp = _tempfiles.temp_file(prefix=f".{out_path.name}.", suffix=".tmp", dir=out_path.parent)
    os.close(fd)
    try:
        os.chmod(tmp, new_file_mode())
        _write(released, layout, tmp, out_path.name)
        os.replace(tmp, out_path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    finally:
        _tempfiles.settled(tmp)


def release_file(input: str | os.PathLike[str], output: str | os.PathLike[str],
                 report: str | os.PathLike[str] | None, *, force: bool, fit_on: str | os.PathLike[str] | None,
                 what: str, private: object, private_column: str | None, by: str | None,
                 release: Any) -> dict[str, Any]:
    """A release of a file: ``release(table, public table or None)`` gives ``(released table, report)``.

    The binary path's checks come first — the input is never the output or the report, the report is
    not the output, existing files need ``force``, a name of unknown format is refused — all before
    anything is read or written; the release is written to a temporary file and renamed.  Shared by
    :func:`kapply_table` and :func:`redactopt.release.class_apply.class_apply_table`.
    """
    if "-" in (str(input), str(output)):
        raise ValueError(f"{what} releases read and write files, not standard input or output")
    src, out_path, _ = check_release_paths(input, output, report, private=private, private_column=private_column,
                                           by=by, force=force)
    for path in (src, out_path):
        table_format(path)  # a name whose format is unknown is refused before anything is read
    public = None
    with _progress.phase("read"):
        if fit_on is not None:
            public, _ = read_table(check_input_path(fit_on))
        df, layout = read_table(src)
    released, rep = release(df, public)
    if fit_on is not None:
        rep["chain"]["fit_rows"]["table"] = str(fit_on)
    with _progress.phase("write"):
        write_release(released, df, layout, out_path)
    rep = {"input": str(input), "output": str(output), "input_format": layout.kind, **rep}
    if report is not None:
        with _progress.phase("report"):
            write_json_atomic(report, rep, force=force)
    return rep
