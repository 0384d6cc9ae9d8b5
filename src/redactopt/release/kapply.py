"""Releasing a categorical column: fit a k-state chain, design, draw the redactions exactly, write.

:func:`kapply_frame` releases a pandas DataFrame in memory, :func:`kapply_table` a CSV or Parquet
file (read and written with pandas: unlike the binary path's byte-exact CSV splice, a k-state
release re-writes the table; every other column's values are kept).  The column is one sequence
(rows in file order); its values are the states, as text, in order of first appearance unless a
chain is given (then every value must be one of its labels).

**Design.**  The planner of every release, :func:`redactopt.release.plan.plan_release`, splits each
sequence's private records into groups, designs each group's sub-problem once per distinct
request (the design cache: sequences of any length share a design far from their ends; mirror
images only for reversible chains) and places it exactly (the cut argument).  A group's design
(``method``, :func:`redactopt.engine.joint.design_states_release`): ``dim`` gives every cluster of
private records (records whose windows overlap) the exact data-independent window that keeps every
member within the budget (:func:`redactopt.solvers.kdim.kdim_windows`); ``optimal`` gives each
private record :func:`redactopt.engine.design.design`'s best verified design on its window and
takes their elementwise maximum — private for every one of them, because redacting more never
raises the leakage (post-processing).  ``auto`` is ``optimal`` for up to
:data:`AUTO_OPTIMAL_MAX` private records and ``dim`` beyond.  Each sequence's mechanism is verified
exactly about every private record (:func:`redactopt.judge.certify.verify`) before anything is
drawn.

**Draws** are exact Bernoulli draws of ``q[t, x_t]`` by the one :class:`~redactopt.release.redactor.Redactor`:
the operating system's secure source by default, or PCG64 with ``seed`` (reproducible, labelled
*not for real releases*), word ``t`` for record ``t``.
"""

from __future__ import annotations

import io
import itertools
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from redactopt._validate import check_eps, check_positions
from redactopt.engine.joint import STATES_AUTO_OPTIMAL_MAX, design_states_release
from redactopt.errors import PrivacyCheckError
from redactopt.io import check_input_path, new_file_mode, write_json_atomic
from redactopt.judge.certify import verify
from redactopt.judge.leakage import leakage_segment, utility
from redactopt.kio import KREPORT_FORMAT, kmechanism_to_dict
from redactopt.model.chain import Chain as KChain
from redactopt.release.bits import bit_source
from redactopt.release.codec import MAX_STATES
from redactopt.release.data import MAX_TRIPLE_STATES, ScanState
from redactopt.release.columns import Bins, output_columns, parse_bins, parse_columns, read_kind
from redactopt.release.disclosure import Disclosure, plain_summary
from redactopt.release.fit import ChainFit
from redactopt.release.fit import fit_sequences
from redactopt.release.fitplan import fit_outside
from redactopt.release.order import order_frame, order_keys
from redactopt.release.zones import Outside, PrivateIndex, ZoneTally, choose_zone, reach
from redactopt.release.apply import check_release_paths
from redactopt.release.plan import plan_release
from redactopt.release.redactor import Redactor
from redactopt.release.tables import compression_suffix, csv_delimiter, open_binary, table_format

__all__ = ["kapply_frame", "kapply_table", "kdesign_release", "write_release", "AUTO_OPTIMAL_MAX", "KAPPLY_METHODS"]

AUTO_OPTIMAL_MAX = STATES_AUTO_OPTIMAL_MAX
KAPPLY_METHODS = ("auto", "dim", "optimal")
_LABEL = "NOT FOR REAL RELEASES: seeded pseudo-random draws (--seed) are reproducible by anyone who knows the seed"


#: The order test of a fitted release counts triples by distance class (``k**3`` numbers each): up to
#: this many states (8 MB); beyond, the fit reports no order test.
ORDER_TEST_MAX_STATES = MAX_TRIPLE_STATES


def kdesign_release(chain: KChain, n: int, *, eps: float, private: tuple[int, ...], method: str = "auto",
                    time_limit: float = 60.0) -> tuple[np.ndarray, dict[str, Any]]:
    """The release mechanism of one sequence of ``n`` records (dense) and what was done: the design of
    :func:`redactopt.engine.joint.design_states_release` (the rule every categorical release's groups use)."""
    if method not in KAPPLY_METHODS:
        raise ValueError(f"method must be one of {', '.join(KAPPLY_METHODS)}, got {method!r}")
    d = design_states_release(chain, n, eps=eps, private=list(private), method=method, time_limit=time_limit)
    q = np.asarray(d.redact_prob.rows(0, n))
    return q, {"method": _how(method, [d.method]), "leakage": d.leakage}


def _how(method: str, names: list[str]) -> str:
    """What a categorical release's designs did, in words (``names``: the methods of their groups)."""
    kinds = dict.fromkeys("the exact data-independent window per cluster of private records" if m == "dim"
                          else "optimal per private record, elementwise maximum" for m in names)
    what = "; ".join(kinds)
    return f"{method}: {what}" if method == "auto" else what


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


#: A tuple of protected values is one state; its text joins the values' texts with this.
TUPLE_SEP = "|"



@dataclass(frozen=True)
class StateSpace:
    """The protected values of every row and where the states of their chain come from.

    ``texts[c]``: the text of column ``c`` on every row (its bin for a binned column);
    ``fixed[c]``: the column's values known without reading the data — a binned column's bins, a
    0/1 column's two values, a pandas categorical's categories — or ``None``: its values are the
    ones the fitted rows show (in order of first appearance there).  A state is the tuple of the
    protected columns' values (text joined by :data:`TUPLE_SEP`); the states of a fitted chain are
    every tuple of the columns' values (:meth:`labels`).
    """

    columns: list[str]
    texts: dict[str, np.ndarray]
    fixed: dict[str, list[str] | None]

    def row_states(self) -> np.ndarray:
        parts = [self.texts[c] for c in self.columns]
        return parts[0] if len(parts) == 1 else np.array([TUPLE_SEP.join(t) for t in zip(*parts)], dtype=object)

    def labels(self, seen: dict[str, list[str]]) -> list[str]:
        """Every state: the tuples of each column's fixed values, or of the values in ``seen``."""
        alphabets = [self.fixed[c] if self.fixed[c] is not None else seen[c] for c in self.columns]
        size = int(np.prod([len(a) for a in alphabets]))
        if size > MAX_STATES:
            raise ValueError(f"the protected column(s) {', '.join(self.columns)} make {size} states (more than "
                             f"{MAX_STATES}): bin numeric columns coarser (--bin) or protect fewer columns")
        return [TUPLE_SEP.join(t) for t in itertools.product(*alphabets)]


def protected_states(table: pd.DataFrame, protect: list[str], bins: dict[str, Bins],
                     ) -> tuple[StateSpace, dict[str, pd.Series]]:
    """The :class:`StateSpace` of the protected columns and the values written for each (a binned one:
    its bins).  A continuous column (numbers with a fractional part) must be binned (``--bin``)."""
    texts, fixed, written = {}, {}, {}
    for c in protect:
        col = _complete_column(table, c)
        if c in bins:
            lab = pd.Series(bins[c].apply(col, where="table"), index=col.index)
            texts[c], fixed[c], written[c] = lab.astype(str).to_numpy(dtype=object), bins[c].labels, lab
            continue
        kind, num = read_kind(col)
        if kind == "number" and num is not None and not np.all(np.floor(num) == num):
            i = int(np.flatnonzero(np.floor(num) != num)[0])
            raise ValueError(f"column {c!r} is continuous (row {i + 1}: {col.iloc[i]!r}); protect it in categories: "
                             f"--bin {c}:EDGE[,EDGE...]")
        text = np.array([str(v) for v in col.tolist()], dtype=object)
        if isinstance(col.dtype, pd.CategoricalDtype):
            fixed[c] = [str(v) for v in col.cat.categories]
        elif pd.api.types.is_bool_dtype(col.dtype):
            fixed[c] = ["False", "True"]
        else:
            fixed[c] = ["0", "1"] if set(np.unique(text).tolist()) <= {"0", "1"} else None
        texts[c], written[c] = text, col
    return StateSpace(list(protect), texts, fixed), written


def _ordered_sequences(table: pd.DataFrame, by: str | None, order_by: str | None) -> list[tuple[Any, np.ndarray]]:
    """:func:`_sequences`, each sequence's rows sorted by ``order_by`` (:mod:`redactopt.release.order`)."""
    seqs = _sequences(table, by)
    if order_by is None:
        return seqs
    codes = np.empty(len(table), dtype=np.int64)
    for i, (_, rows) in enumerate(seqs):
        codes[rows] = i
    keys, _ = order_keys(table[order_by], order_by, "table")
    perm = order_frame(codes, keys, ids=[sid for sid, _ in seqs], name=order_by, where="table")
    bounds = np.cumsum([rows.size for _, rows in seqs])[:-1]
    return [(sid, rows) for (sid, _), rows in zip(seqs, np.split(perm, bounds))]


@dataclass
class _KPlan:
    """A k-state release's chain and its distinct designs (one per sequence length and private positions)."""

    chain: KChain
    fit: ChainFit | None
    state_of: np.ndarray  # the chain's index of each distinct row state (-1: not a state of the chain)
    keys: list[tuple[int, tuple[int, ...]]]
    mechs: list[dict[str, Any]]
    release: Any = None  # the planner's ReleasePlan (its sequences are the table's, in order)

    def design_of(self, m: int, priv: tuple[int, ...]) -> dict[str, Any]:
        return self.mechs[self.keys.index((m, priv))]


def _kplan(chain: KChain, fit: ChainFit | None, labels_all: list[str], codes: np.ndarray,
           seqs: list[tuple[Any, np.ndarray]], privs: list[tuple[int, ...]], *, eps: float, method: str,
           time_limit: float, workers: int | None) -> _KPlan:
    """Verified designs of every sequence under ``chain``: :func:`redactopt.release.plan.plan_release`'s groups,
    placements and design cache (the planner of every release), one mechanism per distinct (length,
    private positions), each verified exactly again here about every private record."""
    if method not in KAPPLY_METHODS:
        raise ValueError(f"method must be one of {', '.join(KAPPLY_METHODS)}, got {method!r}")
    index = {str(s): i for i, s in enumerate(chain.labels)}
    state_of = np.array([index.get(s, -1) for s in labels_all], dtype=np.int64)
    for (_, rows), priv in zip(seqs, privs):
        bad = np.flatnonzero(state_of[codes[rows]] < 0) if priv else np.zeros(0, dtype=np.int64)
        if bad.size:
            r = int(rows[bad[0]])
            raise ValueError(f"row {r + 1}: value {labels_all[codes[r]]!r} is not a state of the chain "
                             f"({', '.join(map(str, chain.labels))}); give the chain (--transition) or fit it on a "
                             "public table that holds it (--fit-on)")
    return kplan_of(chain, fit, _scan_of(seqs, privs), state_of=state_of, eps=eps, method=method,
                    time_limit=time_limit, workers=workers)


def kplan_of(chain: KChain, fit: ChainFit | None, state: ScanState, *, private: list[int] | None = None,
             state_of: np.ndarray | None = None, eps: float, method: str, time_limit: float,
             workers: int | None = None, map_designs: Any = None) -> _KPlan:
    """The plan of a categorical release of the sequences of ``state`` (their lengths and private positions;
    ``private``: positions of a single sequence instead) under ``chain``: the one planner's groups,
    placements and cache, then one mechanism per distinct (length, private positions), verified exactly
    again here on the caller's chain.  Shared by the in-memory and the streaming release."""
    if method not in KAPPLY_METHODS:
        raise ValueError(f"method must be one of {', '.join(KAPPLY_METHODS)}, got {method!r}")
    # the designs run on the chain as plain data (KChain.to_dict: lists and text, the exact chain), so worker
    # processes rebuild it whatever class or label objects the caller used; judged below on the caller's
    plain = chain.to_dict()
    planned = KChain(plain["transition"], labels=tuple(plain["labels"]))
    plan = plan_release(state, eps=eps, chain=planned, method=method, time_limit=time_limit, workers=workers,
                        private=private, map_designs=map_designs)
    first: dict[tuple[int, tuple[int, ...]], int] = {}
    for c in range(len(state.ids)):
        priv = tuple(sorted(plan.private_of(c)))
        if priv:
            first.setdefault((int(state.n[c]), priv), c)
    keys = list(first)
    mechs: list[dict[str, Any]] = []
    for (m, priv), c in first.items():
        q = np.asarray(plan.sparse_rows(c).rows(0, m))
        how = {"method": _how(method, [plan.choices[g].shape.design.method for g in plan.groups_of(c)])}
        per_private = [leakage_segment(chain, q, p) for p in priv]
        w = max(per_private, key=lambda r: r.leakage)
        _, ok = verify(chain, q, priv, eps, worst=w)  # judged here too, on this process's chain
        if not ok:
            raise PrivacyCheckError(f"the design for {m} records, private {[p + 1 for p in priv]}, leaks "
                                    f"{w.leakage:.12g} > eps={eps:.12g}")
        u = utility(chain, q)
        mech = kmechanism_to_dict(chain, q, private=priv, eps=eps, method=how["method"], utility=u, leakage=w.leakage)
        mechs.append({"q": q, "how": how, "per_private": per_private, "worst": w, "utility": u, "mech": mech})
    return _KPlan(chain, fit, np.zeros(0, dtype=np.int64) if state_of is None else state_of, keys, mechs, plan)


def _scan_of(seqs: list[tuple[Any, np.ndarray]], privs: list[tuple[int, ...]]) -> ScanState:
    """What the planner needs of a table's sequences: their lengths and private positions."""
    k = len(seqs)
    codes = np.repeat(np.arange(k, dtype=np.int64), [len(p) for p in privs])
    pos = np.asarray([x for p in privs for x in p], dtype=np.int64)
    n = np.asarray([rows.size for _, rows in seqs], dtype=np.int64)
    return ScanState([sid for sid, _ in seqs], n, np.full((k, 2), -1, dtype=np.int8),
                     np.full((k, 2), -1, dtype=np.int8), private_codes=codes, private_pos=pos, rows=int(n.sum()))


def _kreach(plan: _KPlan) -> int:
    """How far from its nearest private record a design of the plan may redact (:func:`~redactopt.release.zones.reach`)."""
    blocks = []
    for (m, priv), d in zip(plan.keys, plan.mechs):
        rows = np.flatnonzero(d["q"].max(axis=1) > 0.0)
        runs = np.split(rows, np.flatnonzero(np.diff(rows) > 1) + 1) if rows.size else []
        blocks.append(([(int(r[0]), int(r[-1])) for r in runs], list(priv)))
    return reach(blocks)


def _seen_values(space: StateSpace, rows: np.ndarray) -> dict[str, list[str]]:
    """Each column's values on the given rows, in order of first appearance."""
    return {c: list(dict.fromkeys(space.texts[c][rows].tolist())) for c in space.columns}


def _kfit_outside(out: Outside, space: StateSpace, first_row: np.ndarray, labels_all: list[str], sequences: int,
                  **fit_kw: Any) -> ChainFit:
    """The k-state fit of the rows outside a zone: the states of :meth:`StateSpace.labels` (the values the
    rows show, where a column's are not fixed) and their transition counts."""
    seen = out.states  # row states present outside, in order of first appearance there
    labels = space.labels(_seen_values(space, first_row[seen]))
    return fit_outside(out, labels, labels_all, sequences, **fit_kw)


def _kfit_on(table: pd.DataFrame, protect: list[str], bins: dict[str, Bins], by: str | None,
             order_by: str | None, **fit_kw: Any) -> ChainFit:
    """The k-state fit of a separate, public table (``fit_on``): its sequences, ``by``/``order_by`` where it has them."""
    space, _ = protected_states(table, protect, bins)
    states = space.row_states()
    seqs = _ordered_sequences(table, by if by in table.columns else None,
                              order_by if order_by in table.columns else None)
    labels = space.labels(_seen_values(space, np.arange(len(table))))
    return fit_sequences([states[rows].tolist() for _, rows in seqs], labels=labels, **fit_kw)


def kapply_frame(table: pd.DataFrame, *, column: str | None = None, eps: float, private: object = None,
                 private_column: str | None = None, by: str | None = None,
                 chain: KChain | None = None, method: str = "auto", seed: int | None = None,
                 time_limit: float = 60.0, confidence: float = 0.95, smoothing: str = "kt",
                 simultaneous: bool = False, workers: int | None = None, protect: list[str] | str | None = None,
                 bins: dict[str, Bins] | list[str] | str | None = None, keep: list[str] | str | None = None,
                 order_by: str | None = None, fit_on: pd.DataFrame | None = None,
                 ) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Release a categorical column, or several columns protected together, of a DataFrame; returns the
    released table and the report.

    Parameters
    ----------
    table : pandas.DataFrame
        One sequence, or several named by ``by``, rows in order (or ordered by ``order_by``).
    column : str, optional
        The categorical column (any values; their text forms are the states).
    protect : list of str, optional
        Several columns protected together instead of ``column``: a row's state is the tuple of
        their values (text joined by ``"|"``), and a redaction empties all of them at once.
    bins : dict or list of "COLUMN:EDGE,..." , optional
        Numeric columns turned into categories first (:class:`~redactopt.release.columns.Bins`);
        a binned protected column is written as its category.
    eps : float
        Budget per private record (nats).
    private : int or list of int, optional
        0-based private positions (one sequence only: no ``by``).
    private_column : str, optional
        A 0/1 column (1, true: private) instead of ``private``; give exactly one of the two.  Not
        written unless named in ``keep``.
    by : str, optional
        A column naming each row's sequence: each sequence is a chain of its own, all of one fitted
        (or given) chain.  Sequences with no private row are released unchanged; sequences with the
        same length and private positions share one design (verified exactly once, drawn independently).
    order_by : str, optional
        A column ordering the rows of each sequence (:mod:`redactopt.release.order`).
    keep : list of str or "all", optional
        Columns written besides the protected ones, ``by`` and ``order_by``; each is measured as not
        covered (:mod:`redactopt.release.disclosure`).
    chain : KChain, optional
        The chain.  By default it is fitted on the rows the release publishes with certainty
        (:mod:`redactopt.release.zones`), or on ``fit_on``, a separate public table.
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
    prep = prepare_table(table, column=column, protect=protect, bins=bins, eps=eps, by=by, order_by=order_by,
                         private=private, private_column=private_column, keep=keep)
    fit_kw = dict(confidence=confidence, simultaneous=simultaneous, smoothing=smoothing)
    design = dict(eps=prep.eps, method=method, time_limit=time_limit, workers=workers)

    def plan_for(fit: ChainFit | KChain) -> _KPlan:
        ch = fit if isinstance(fit, KChain) else fit.chain
        return _kplan(ch, None if isinstance(fit, KChain) else fit, prep.labels, prep.codes, prep.seqs, prep.privs,
                      **design)

    kplan, fit_source = plan_chain(prep, plan_for, chain=chain, fit_on=fit_on, fit_kw=fit_kw)
    return _kreleased(prep.table, kplan, prep.seqs, prep.privs, prep.codes, prep.flags, seed=seed, cols=prep.cols,
                      bins=prep.bins, values_out=prep.values_out, written_cols=prep.written_cols, kept=prep.kept,
                      by=by, order_by=order_by, fit_source=fit_source, private_column=private_column)


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
    space: Any
    values_out: Any
    seqs: list[tuple[Any, np.ndarray]]
    codes: np.ndarray
    labels: list[str]
    first_row: np.ndarray
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
    cols, bins_ = _protected_columns(table, column, protect, bins)
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
    flags = _private_flags(table, private, private_column, by)
    space, values_out = protected_states(table, cols, bins_)
    seqs = _ordered_sequences(table, by, order_by)
    codes, uniq = pd.factorize(pd.Series(space.row_states()), sort=False)
    return PreparedTable(table, eps, cols, bins_, by, order_by, written_cols, kept, flags, space, values_out, seqs,
                         codes, [str(u) for u in uniq], np.unique(codes, return_index=True)[1],  # a row per state
                         [tuple(int(i) for i in np.flatnonzero(flags[rows])) for _, rows in seqs])


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
                        lambda out: _kfit_outside(out, prep.space, prep.first_row, prep.labels, len(prep.seqs),
                                                  **fit_kw), reach_of=reach_of or _kreach)


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


def _protected_columns(table: pd.DataFrame, column: str | None, protect: Any, bins: Any,
                       ) -> tuple[list[str], dict[str, Bins]]:
    """The protected columns (``column`` or ``protect``, exactly one) and the bins, checked against the table."""
    if (column is None) == (protect is None):
        raise ValueError("give exactly one of column= and protect= (--column, --protect)")
    cols = [column] if column is not None else parse_columns(protect, "--protect")
    if not cols:
        raise ValueError("--protect: no column named")
    bins_ = bins if isinstance(bins, dict) else parse_bins(bins)
    for c in list(cols) + list(bins_):
        if c not in table.columns:
            raise ValueError(f"column {c!r} not found; the columns are {list(map(str, table.columns))}")
    for c in bins_:
        if c not in cols:
            raise ValueError(f"--bin {c}: the column is not protected (name it in --protect or --column)")
    return cols, bins_


def _kplan_zones(codes: np.ndarray, labels_all: list[str], seqs: list[tuple[Any, np.ndarray]],
                 privs: list[tuple[int, ...]], plan_for: Any, fit_outside: Any,
                 reach_of: Any = _kreach) -> tuple[Any, dict]:
    """Fit on the rows the release publishes with certainty (:func:`~redactopt.release.zones.choose_zone`) and plan.

    ``reach_of(plan)``: how far from its nearest private record the plan's designs may redact
    (:func:`_kreach` for local designs; the class releases of :mod:`redactopt.release.class_apply`
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


def _kreleased(table: pd.DataFrame, plan: _KPlan, seqs: list[tuple[Any, np.ndarray]], privs: list[tuple[int, ...]],
               codes: np.ndarray, flags: np.ndarray, *, seed: int | None, cols: list[str], bins: dict[str, Bins],
               values_out: dict[str, pd.Series], written_cols: list[str], kept: list[str], by: str | None,
               order_by: str | None, fit_source: dict[str, Any], private_column: str | None,
               ) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Draw the redactions of a planned k-state release; the released table and its report."""
    chain, n = plan.chain, len(table)
    source = bit_source(seed)
    mask = np.zeros(n, dtype=bool)
    state_idx = plan.state_of[codes]
    redacted = np.zeros(len(seqs), dtype=np.int64)
    redactor = Redactor(plan.release, source)  # the one draw step: exact Bernoulli draws of q[t, x_t]
    for c, ((seq_id, rows), priv) in enumerate(zip(seqs, privs)):
        if priv:  # (a sequence without private records is released unchanged)
            m = int(rows.size)
            mask[rows] = sub = redactor.redact(np.full(m, c, dtype=np.int64), np.arange(m), state_idx[rows])
            redacted[c] = int(sub.sum())
    rows_of, worst, expected = sequence_entries(plan, [sid for sid, _ in seqs], [int(r.size) for _, r in seqs],
                                                privs, redacted)
    out = table[written_cols].copy()
    for c in cols:
        out[c] = _released_column(values_out[c].astype(object) if c in bins else table[c], mask)
    rep = _kreport(plan, rows_of, worst, [int(i) + 1 for i in np.flatnonzero(flags)], n, int(mask.sum()), expected,
                   seed=seed, column=TUPLE_SEP.join(cols), by=by)
    describe_columns(rep, table, chain.labels, state_idx, mask, cols=cols, bins=bins, written_cols=written_cols,
                     by=by, order_by=order_by, fit_source=fit_source)
    rep["summary"] = _ksummary(rep, plan, cols, fit_source)
    return out, rep


def sequence_entries(plan: _KPlan, ids: list, lengths: list[int], privs: list[tuple[int, ...]],
                     redacted: np.ndarray) -> tuple[list[dict[str, Any]], tuple[Any, Any], float]:
    """The report's row of every sequence (id, rows, private positions, design, leakage, redacted), the
    worst (segment result, sequence id) and the expected number of published records."""
    rows_of: list[dict[str, Any]] = []
    worst: tuple[Any, Any] | None = None
    expected = 0.0
    for c, (seq_id, m, priv) in enumerate(zip(ids, lengths, privs)):
        entry: dict[str, Any] = {"id": None if seq_id is None else str(seq_id), "rows": m,
                                 "private": [p + 1 for p in priv]}
        if not priv:  # nothing to protect: released unchanged
            expected += m
            entry.update(design=None, leakage=0.0, redacted=0)
        else:
            j = plan.keys.index((m, priv))
            d = plan.mechs[j]
            expected += d["utility"] * m
            entry.update(design=j, leakage=d["worst"].leakage, redacted=int(redacted[c]))
            if worst is None or d["worst"].leakage > worst[0].leakage:
                worst = (d["worst"], seq_id)
        rows_of.append(entry)
    assert worst is not None  # a release without a private row is refused before it is planned
    return rows_of, worst, expected


def _kreport(plan: _KPlan, rows_of: list[dict[str, Any]], worst: Any, private_rows: list[int], n: int,
             redacted: int, expected: float, *, seed: int | None, column: str, by: str | None) -> dict[str, Any]:
    """The k-state report (``redactopt.release.kapply-report/1``): chain, designs, leakage, utility, randomness;
    ``private_rows``: the private records' rows in the table (1-based)."""
    chain, fit = plan.chain, plan.fit
    w, w_id = worst
    labels_txt = [str(s) for s in chain.labels]
    rep: dict[str, Any] = {
        "format": KREPORT_FORMAT, "column": column, "rows": n, "states": labels_txt,
        "chain": {"labels": labels_txt, "transition": chain.transition.tolist(),
                  "source": "fitted" if fit is not None else "given",
                  "fit": fit.to_dict() if fit is not None else None},
        "eps": plan.mechs[0]["mech"]["eps"], "method": "; ".join(dict.fromkeys(d["how"]["method"] for d in plan.mechs)),
        "private": private_rows,
        "leakage": {"max": w.leakage, "witness_private": w.p + 1, "pair": [str(s) for s in w.pair_labels]},
        "utility": {"expected": expected / n, "realised": 1.0 - float(redacted) / n, "redacted": int(redacted)},
        "randomness": {"source": "numpy PCG64, seeded (word t for record t)" if seed is not None
                       else "operating system secure source (os.urandom)", "seed": seed},
        "label": _LABEL if seed is not None else None,
        "warnings": list(fit.warnings) if fit is not None else [],
    }
    if by is None:  # one sequence: its mechanism, blocks and per-private leakage (format unchanged)
        d = plan.mechs[0]
        rep["leakage"]["per_private"] = [{"private": r.p + 1, "leakage": r.leakage} for r in d["per_private"]]
        rep["blocks"] = [[b["start"], b["start"] + len(b["redact_prob"]) - 1] for b in d["mech"]["blocks"]]
        rep["mechanism"] = d["mech"]
    else:  # several: one mechanism per distinct design, each sequence names its design
        rep["by"] = by
        rep["leakage"]["witness_sequence"] = None if w_id is None else str(w_id)
        rep["sequences"] = rows_of
        rep["designs"] = [d["mech"] for d in plan.mechs]
    return rep


def _ksummary(rep: dict[str, Any], plan: _KPlan, cols: list[str], fit_source: dict[str, Any]) -> str:
    from redactopt.release.apply import fit_rows_text

    k = plan.chain.k
    model = f"{k}-state Markov chain of the report" + (" (given)" if fit_source.get("source") == "given" else "")
    return plain_summary(eps=rep["eps"], protected=cols, private_records=len(rep["private"]),
                         sequences=sum(1 for s in rep.get("sequences", [rep]) if s["private"]), model=model,
                         fit_rows=fit_rows_text(fit_source),
                         order_test=None if plan.fit is None else plan.fit.order_summary(),
                         figures=rep["columns"]["not_covered"], rows=rep["rows"],
                         redacted=rep["utility"]["redacted"], expected_utility=rep["utility"]["expected"])


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


def kapply_table(input: str | os.PathLike[str], output: str | os.PathLike[str], *, column: str | None = None,
                 eps: float, private: object = None, private_column: str | None = None, by: str | None = None,
                 chain: KChain | None = None, method: str = "auto", seed: int | None = None,
                 report: str | os.PathLike[str] | None = None, force: bool = False, time_limit: float = 60.0,
                 confidence: float = 0.95, smoothing: str = "kt", simultaneous: bool = False,
                 workers: int | None = None, protect: list[str] | str | None = None,
                 bins: dict[str, Bins] | list[str] | str | None = None, keep: list[str] | str | None = None,
                 order_by: str | None = None, fit_on: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Release a categorical column, or several protected together, of a CSV or Parquet file (the rows as
    :func:`kapply_frame` releases them in memory): :func:`redactopt.release.states.apply_states_table`, which
    streams the file through the passes of every release.

    The output is written to a temporary file and renamed when complete, never overwritten without
    ``force`` and never created in a missing directory; the input is never modified.  ``report``
    (optional) receives the JSON report, which ``redactopt audit`` reads.  ``fit_on``: a separate,
    public table (a file) to fit the chain on.
    """
    from redactopt.release.states import apply_states_table  # builds on this module

    return apply_states_table(input, output, column=column, eps=eps, private=private, private_column=private_column,
                              by=by, chain=chain, method=method, seed=seed, report=report, force=force,
                              time_limit=time_limit, confidence=confidence, smoothing=smoothing,
                              simultaneous=simultaneous, workers=workers, protect=protect, bins=bins, keep=keep,
                              order_by=order_by, fit_on=fit_on)


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
    if fit_on is not None:
        public, _ = read_table(check_input_path(fit_on))
    df, layout = read_table(src)
    released, rep = release(df, public)
    if fit_on is not None:
        rep["chain"]["fit_rows"]["table"] = str(fit_on)
    write_release(released, df, layout, out_path)
    rep = {"input": str(input), "output": str(output), "input_format": layout.kind, **rep}
    if report is not None:
        write_json_atomic(report, rep, force=force)
    return rep
