"""Releasing a categorical column: fit a k-state chain, design, draw the redactions exactly, write.

:func:`kapply_frame` releases a pandas DataFrame in memory, :func:`kapply_table` a CSV or Parquet
file (read and written with pandas: unlike the binary path's byte-exact CSV splice, a k-state
release re-writes the table; every other column's values are kept).  The column is one sequence
(rows in file order); its values are the states, as text, in order of first appearance unless a
chain is given (then every value must be one of its labels).

**Design** (``method``): ``dim`` gives every cluster of private records (records whose windows
overlap) the exact data-independent window that keeps every member within the budget
(:func:`redactopt.solvers.kdim.kdim_windows`); ``optimal`` gives each private record
:func:`redactopt.engine.kdesign.kdesign`'s best verified design and takes their elementwise
maximum — private for every one of them, because redacting more never raises the leakage
(post-processing).  ``auto`` is ``optimal`` for up to
:data:`AUTO_OPTIMAL_MAX` private records and ``dim`` beyond.  The combined mechanism is verified
exactly about every private record (:func:`redactopt.judge.kcertify.kverify`) before anything is
drawn.

**Draws** are exact Bernoulli draws of ``q[t, x_t]`` (:func:`redactopt.release.bits.bernoulli_exact`):
the operating system's secure source by default, or PCG64 with ``seed`` (reproducible, labelled
*not for real releases*), word ``t`` for record ``t``.
"""

from __future__ import annotations

import io
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from redactopt._validate import check_eps, check_positions
from redactopt.engine.kdesign import kdesign
from redactopt.solvers.kdim import kdim_windows
from redactopt.errors import PrivacyCheckError
from redactopt.io import new_file_mode, write_json_atomic
from redactopt.judge.kcertify import kverify
from redactopt.judge.kleakage import kleakage_segment, kutility
from redactopt.kio import KREPORT_FORMAT, kmechanism_to_dict
from redactopt.model.kchain import KChain
from redactopt.release.bits import bernoulli_exact, bit_source
from redactopt.release.data import sequence_key
from redactopt.release.kfit import encode_labels, kfit_sequences
from redactopt.release.apply import check_release_paths
from redactopt.release.plan import pool_map
from redactopt.release.tables import compression_suffix, csv_delimiter, open_binary, table_format

__all__ = ["kapply_frame", "kapply_table", "kdesign_release", "AUTO_OPTIMAL_MAX", "KAPPLY_METHODS"]

AUTO_OPTIMAL_MAX = 4
KAPPLY_METHODS = ("auto", "dim", "optimal")
_LABEL = "NOT FOR REAL RELEASES: seeded pseudo-random draws (--seed) are reproducible by anyone who knows the seed"


def kdesign_release(chain: KChain, n: int, *, eps: float, private: tuple[int, ...], method: str = "auto",
                    time_limit: float = 60.0) -> tuple[np.ndarray, dict[str, Any]]:
    """The release mechanism for several private records (module docstring) and what was done."""
    if method not in KAPPLY_METHODS:
        raise ValueError(f"method must be one of {', '.join(KAPPLY_METHODS)}, got {method!r}")
    per = "optimal" if method == "optimal" or (method == "auto" and len(private) <= AUTO_OPTIMAL_MAX) else "dim"
    if per == "dim":
        q = kdim_windows(chain, n, eps=eps, private=private)
    else:
        q = np.zeros((n, chain.k))
        for p in private:
            res = kdesign(chain, n, eps=eps, p=p, method="optimal", time_limit=time_limit)
            q = np.maximum(q, res.redact_prob)
    q[list(private)] = 1.0
    res, ok = kverify(chain, q, private, eps)
    if not ok:
        raise PrivacyCheckError(f"combined design leaks {res.leakage:.12g} > eps={eps:.12g}")
    what = ("the exact data-independent window per cluster of private records" if per == "dim"
            else "optimal per private record, elementwise maximum")
    return q, {"method": f"{method}: {what}" if method == "auto" else what, "leakage": res.leakage}


def _design_job(chain: dict[str, Any], n: int, eps: float, private: tuple[int, ...], method: str,
                time_limit: float) -> tuple[np.ndarray, dict[str, Any]]:
    """:func:`kdesign_release` for one (length, private positions), wherever it runs.

    The chain travels as :meth:`KChain.to_dict` (plain lists and text, the exact chain): a worker
    process can rebuild it whatever class or label objects the caller used, and this process
    rebuilds it the same way, so a design does not depend on where it was made.
    """
    return kdesign_release(KChain(chain["transition"], labels=tuple(chain["labels"])), n, eps=eps, private=private,
                           method=method, time_limit=time_limit)


def _released_column(col: pd.Series, mask: np.ndarray) -> pd.Series:
    """The column with redacted entries missing (integers and booleans become nullable, text stays text,
    a categorical column keeps its categories)."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        out = col.copy()
        out[mask] = np.nan
        return out
    if pd.api.types.is_bool_dtype(col.dtype):
        out = col.astype("boolean")
    elif pd.api.types.is_integer_dtype(col.dtype):
        out = col.astype("Int64")
    elif pd.api.types.is_float_dtype(col.dtype):
        out = col.copy()
        out[mask] = np.nan
        return out
    else:
        out = col.astype(object)
        out[mask] = None
        return out
    out[mask] = pd.NA
    return out


def _complete_column(table: pd.DataFrame, name: str) -> pd.Series:
    """The column ``name``; an error naming the columns if it is absent, or the first row it misses."""
    if name not in table.columns:
        raise ValueError(f"column {name!r} not found; the columns are {list(map(str, table.columns))}")
    col = table[name]
    bad = np.flatnonzero(col.isna().to_numpy())
    if bad.size:
        raise ValueError(f"row {int(bad[0]) + 1}: column {name!r} has a missing value")
    return col


def _sequences(table: pd.DataFrame, by: str | None) -> list[tuple[Any, np.ndarray]]:
    """``(id, rows)`` of every sequence: the rows of one ``by`` value in table order, ids in order of
    first appearance (one sequence, id ``None``, without ``by``)."""
    n = len(table)
    if by is None:
        return [(None, np.arange(n))]
    ids = _complete_column(table, by)
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


def _private_flags(table: pd.DataFrame, private: object, private_column: str | None, by: str | None) -> np.ndarray:
    """Boolean flags of the private rows, from 0-based positions or a 0/1 column."""
    from redactopt.release.apply import check_release_options
    from redactopt.release.data import parse_binary

    check_release_options(private=private, private_column=private_column, by=by)
    n = len(table)
    flags = np.zeros(n, dtype=bool)
    if private_column is None:
        flags[list(check_positions(private, n))] = True
        return flags
    vals = _complete_column(table, private_column).to_numpy()
    if vals.dtype == object:
        vals = np.array([str(v) for v in vals])
    flags[:] = parse_binary(vals, column=private_column, first_row=1, where="table") == 1
    if not flags.any():
        raise ValueError(f"column {private_column!r} marks no row private (1); nothing to protect")
    return flags


def kapply_frame(table: pd.DataFrame, *, column: str, eps: float, private: object = None,
                 private_column: str | None = None, by: str | None = None,
                 chain: KChain | None = None, method: str = "auto", seed: int | None = None,
                 time_limit: float = 60.0, confidence: float = 0.95, smoothing: str = "kt",
                 simultaneous: bool = False, workers: int | None = None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Release a categorical column of a DataFrame; returns the released table and the report.

    Parameters
    ----------
    table : pandas.DataFrame
        Rows in order: one sequence, or several named by ``by``.
    column : str
        The categorical column (any values; their text forms are the states).
    eps : float
        Budget per private record (nats).
    private : int or list of int, optional
        0-based private rows (one sequence only: no ``by``).
    private_column : str, optional
        A 0/1 column (1, true: private) instead of ``private``; give exactly one of the two.
    by : str, optional
        A column naming each row's sequence: each sequence (its rows in table order) is a chain of its
        own, all of one fitted (or given) chain.  Sequences with no private row are released
        unchanged; sequences with the same length and private positions share one design (verified
        exactly once, drawn independently).
    chain : KChain, optional
        The chain; fitted from the column (:func:`redactopt.release.kfit.kfit_sequences`, every
        sequence) if omitted.
    method : {"auto", "dim", "optimal"}
    seed : int, optional
        Reproducible draws (not for real releases); default the secure source.  The draws of a
        sequence are keyed by its id (:func:`redactopt.release.data.sequence_key`).
    workers : int, optional
        Processes computing the distinct designs at once, this one included (default: every core;
        1: all here).  Each design is verified exactly where it is made and again here.  Designs
        are deterministic, so the release is the same for every value — unless an optimiser stops
        at ``time_limit``: what it found by then depends on the machine's speed and load.
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table must be a pandas DataFrame, got {type(table).__name__}")
    values = _complete_column(table, column).tolist()
    eps = check_eps(eps)
    n = len(values)
    if n == 0:
        raise ValueError("no data rows")
    flags = _private_flags(table, private, private_column, by)
    seqs = _sequences(table, by)
    fit = None
    if chain is None:
        fit = kfit_sequences([[values[i] for i in rows] for _, rows in seqs], confidence=confidence,
                             smoothing=smoothing, simultaneous=simultaneous)  # type: ignore[arg-type]
        chain = fit.chain()
        codes, _ = encode_labels(values, list(fit.labels))
    else:
        if not isinstance(chain, KChain):
            raise TypeError(f"chain must be a KChain, got {type(chain).__name__}")
        labels = [str(s) for s in chain.labels]
        codes, seen = encode_labels(values, list(labels))
        if len(seen) > len(labels):
            bad = int(np.flatnonzero(codes >= len(labels))[0])
            raise ValueError(f"row {bad + 1}: column {column!r} has value {values[bad]!r}, not one of the chain's "
                             f"states {labels}")
    source = bit_source(seed)
    mask = np.zeros(n, dtype=bool)
    privs = [tuple(int(i) for i in np.flatnonzero(flags[rows])) for _, rows in seqs]
    keys = list(dict.fromkeys((int(rows.size), priv) for (_, rows), priv in zip(seqs, privs) if priv))
    designs = {key: j for j, key in enumerate(keys)}  # one design per (length, private positions)
    plain = chain.to_dict()
    with pool_map(workers) as run:  # deterministic: where each design runs changes only the time
        made = run(_design_job, [(plain, m, eps, priv, method, time_limit) for m, priv in keys])
    mechs: list[dict[str, Any]] = []
    for (m, priv), (q, how) in zip(keys, made):
        per_private = [kleakage_segment(chain, q, p) for p in priv]
        w = max(per_private, key=lambda r: r.leakage)
        _, ok = kverify(chain, q, priv, eps, worst=w)  # judged here too, on this process's chain
        if not ok:
            raise PrivacyCheckError(f"the design for {m} records, private {[p + 1 for p in priv]}, leaks "
                                    f"{w.leakage:.12g} > eps={eps:.12g}")
        u = kutility(chain, q)
        mech = kmechanism_to_dict(chain, q, private=priv, eps=eps, method=how["method"], utility=u, leakage=w.leakage)
        mechs.append({"q": q, "how": how, "per_private": per_private, "worst": w, "utility": u, "mech": mech})
    rows_of: list[dict[str, Any]] = []
    worst: tuple[Any, Any] | None = None  # (segment result, sequence id)
    expected = 0.0
    for (seq_id, rows), priv in zip(seqs, privs):
        m = int(rows.size)
        entry: dict[str, Any] = {"id": None if seq_id is None else str(seq_id), "rows": m,
                                 "private": [p + 1 for p in priv]}
        if not priv:  # nothing to protect: released unchanged
            expected += m
            entry.update(design=None, leakage=0.0, redacted=0)
            rows_of.append(entry)
            continue
        j = designs[(m, priv)]
        d = mechs[j]
        q = d["q"]
        sub = bernoulli_exact(q[np.arange(m), codes[rows]], source, key=sequence_key(seq_id), positions=np.arange(m))
        mask[rows] = sub
        expected += d["utility"] * m
        entry.update(design=j, leakage=d["worst"].leakage, redacted=int(sub.sum()))
        rows_of.append(entry)
        if worst is None or d["worst"].leakage > worst[0].leakage:
            worst = (d["worst"], seq_id)
    assert worst is not None  # _private_flags refuses a release without a private row
    out = table.copy()
    out[column] = _released_column(table[column], mask)
    w, w_id = worst
    labels_txt = [str(s) for s in chain.labels]
    rep: dict[str, Any] = {
        "format": KREPORT_FORMAT, "column": column, "rows": n, "states": labels_txt,
        "chain": {"labels": labels_txt, "transition": chain.transition.tolist(),
                  "source": "fitted" if fit is not None else "given",
                  "fit": fit.to_dict() if fit is not None else None},
        "eps": eps, "method": "; ".join(dict.fromkeys(d["how"]["method"] for d in mechs)),
        "private": [int(i) + 1 for i in np.flatnonzero(flags)],
        "leakage": {"max": w.leakage, "witness_private": w.p + 1, "pair": [str(s) for s in w.pair_labels]},
        "utility": {"expected": expected / n, "realised": 1.0 - float(mask.sum()) / n, "redacted": int(mask.sum())},
        "randomness": {"source": "numpy PCG64, seeded (word t for record t)" if seed is not None
                       else "operating system secure source (os.urandom)", "seed": seed},
        "label": _LABEL if seed is not None else None,
        "warnings": list(fit.warnings) if fit is not None else [],
    }
    if by is None:  # one sequence: its mechanism, blocks and per-private leakage (format unchanged)
        d = mechs[0]
        rep["leakage"]["per_private"] = [{"private": r.p + 1, "leakage": r.leakage} for r in d["per_private"]]
        rep["blocks"] = [[b["start"], b["start"] + len(b["redact_prob"]) - 1] for b in d["mech"]["blocks"]]
        rep["mechanism"] = d["mech"]
    else:  # several: one mechanism per distinct design, each sequence names its design
        rep["by"] = by
        rep["leakage"]["witness_sequence"] = None if w_id is None else str(w_id)
        rep["sequences"] = rows_of
        rep["designs"] = [d["mech"] for d in mechs]
    return out, rep


@dataclass
class _Layout:
    """What a file's own layout needs to be written back as it was (beyond its columns' values)."""

    kind: str  # "csv" or "parquet"
    keep_index: bool = False  # CSV: a row-id column without a name, read as the index
    header: list[str] | None = None  # CSV: the header as written (pandas renames blank and repeated names)
    index: list | None = None  # Parquet: a stored index, moved into columns so --by can name it
    stored_index: bool = False  # Parquet: the index is stored as columns (else as range metadata, or none)


def _read(path: Path) -> tuple[pd.DataFrame, _Layout]:
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
    sep = csv_delimiter(path)
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


def kapply_table(input: str | os.PathLike[str], output: str | os.PathLike[str], *, column: str, eps: float,
                 private: object = None, private_column: str | None = None, by: str | None = None,
                 chain: KChain | None = None, method: str = "auto", seed: int | None = None,
                 report: str | os.PathLike[str] | None = None, force: bool = False, time_limit: float = 60.0,
                 confidence: float = 0.95, smoothing: str = "kt", simultaneous: bool = False,
                 workers: int | None = None) -> dict[str, Any]:
    """:func:`kapply_frame` on a CSV (.csv/.txt/.tsv, values read as text) or Parquet file; writes the release.

    The output is written to a temporary file and renamed when complete, never overwritten without
    ``force`` and never created in a missing directory; the input is never modified.  ``report``
    (optional) receives the JSON report, which ``redactopt audit`` reads.
    """
    if "-" in (str(input), str(output)):
        raise ValueError("categorical releases read and write files, not standard input or output")
    # the binary path's checks: the input is never the output or the report, the report is not
    # the output, existing files need force — all before anything is read or written
    src, out_path, _ = check_release_paths(input, output, report, private=private, private_column=private_column,
                                           by=by, force=force)
    for path in (src, out_path):
        table_format(path)  # a name whose format is unknown is refused before anything is read
    df, layout = _read(src)
    released, rep = kapply_frame(df, column=column, eps=eps, private=private, private_column=private_column, by=by,
                                 chain=chain, method=method,
                                 seed=seed, time_limit=time_limit, confidence=confidence, smoothing=smoothing,
                                 simultaneous=simultaneous, workers=workers)
    fd, tmp = tempfile.mkstemp(prefix=f".{out_path.name}.", suffix=".tmp", dir=out_path.parent)
    os.close(fd)
    try:
        os.chmod(tmp, new_file_mode())
        _write(released, layout, tmp, out_path.name)
        os.replace(tmp, out_path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    rep = {"input": str(input), "output": str(output), "input_format": layout.kind, **rep}
    if report is not None:
        write_json_atomic(report, rep, force=force)
    return rep
