r"""Chains that vary with the time of day: levels of rows, per-level fits and the homogeneity test (issue 33).

A *level* names the matrix of a step: the step from row ``t`` to row ``t + 1`` of a sequence uses
row ``t``'s level (:mod:`redactopt.model.varying`).  ``--varies-with COL[:hour|:weekday|:hour+weekday]``
derives it from a column (:class:`LevelSpec`): the hour of a datetime (``"00"`` .. ``"23"``), its
weekday (``"Mon"`` .. ``"Sun"``), both (``"Mon 09"``), or the values of any column as text.

**Fit.**  The likelihood of a chain whose rows depend on the level factorises over levels and
rows: with :math:`n_{hij}` the transitions :math:`i\to j` whose first row has level ``h``, the
maximum-likelihood estimate is :math:`\hat P_h(i,j)=n_{hij}/n_{hi\cdot}`, and each level's row gets
the estimator, the intervals and the smoothing of the one-chain fit
(:func:`redactopt.release.fit.fit_counts`: Krichevsky–Trofimov :math:`(n_{hij}+\tfrac12)/(n_{hi\cdot}+\tfrac k2)`
where a transition of the level was never seen).  A level without any transition gets the pooled
chain's matrix, and the fit says so.

**Homogeneity test** (Anderson & Goodman 1957, §3.4).  One chain against one per level, by the
likelihood-ratio statistic

.. math:: G^2 = 2\sum_{h,i,j} n_{hij}\log\frac{n_{hij}/n_{hi\cdot}}{n_{\cdot ij}/n_{\cdot i\cdot}}
          \;\sim\;\chi^2_{df},\qquad df=\sum_i (L_i-1)(d_i-1),

with :math:`L_i` the levels at which state ``i`` is left at least once and :math:`d_i` the states
it is seen to move to (a parameter of a level that never visits ``i`` is not estimated, so it is
not counted).  On the shipped occupancy data (hour of ``date``): :math:`G^2=124.6` on 33 degrees
of freedom (state 1 is never visited between 19:00 and 07:00).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from redactopt.model.varying import VaryingChain
from redactopt.release.fit import ChainFit, TransitionCounts, chi2_sf, fit_counts

__all__ = ["LevelSpec", "parse_varies_with", "level_names_of", "level_transitions", "VaryingFit", "fit_levels",
           "LevelScan", "LevelCoder", "scan_levels", "ModelAlternatives", "model_alternatives", "HOMOGENEITY_LEVEL", "is_datetime",
           "homogeneity_test", "HomogeneityTest", "DERIVED"]

#: What a datetime column can be read as.
DERIVED = ("hour", "weekday", "hour+weekday")

_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


@dataclass(frozen=True)
class LevelSpec:
    """A column and what of it is the level: ``derive`` one of :data:`DERIVED`, or ``None`` (the values as text)."""

    column: str
    derive: str | None = None

    def text(self) -> str:
        return self.column if self.derive is None else f"{self.column}:{self.derive}"

    @property
    def fixed_levels(self) -> tuple[str, ...] | None:
        """Every level the derivation can give, in order (``None``: the values seen, in order of first appearance)."""
        if self.derive == "hour":
            return tuple(f"{h:02d}" for h in range(24))
        if self.derive == "weekday":
            return _WEEKDAYS
        if self.derive == "hour+weekday":
            return tuple(f"{d} {h:02d}" for d in _WEEKDAYS for h in range(24))
        return None


def parse_varies_with(text: str, name: str = "--varies-with") -> LevelSpec:
    """``COL``, ``COL:hour``, ``COL:weekday`` or ``COL:hour+weekday`` (a ``ValueError`` naming ``name`` otherwise)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{name} needs a column, e.g. 'date:hour'")
    col, sep, derive = text.rpartition(":")
    if not sep:
        return LevelSpec(text)
    if derive not in DERIVED:
        raise ValueError(f"{name}: {derive!r} is not one of {', '.join(DERIVED)} (COL[:hour|:weekday|:hour+weekday])")
    if not col:
        raise ValueError(f"{name}: no column before ':{derive}'")
    return LevelSpec(col, derive)


def level_names_of(values: Any, spec: LevelSpec, *, where: str = "input", first_row: int = 1) -> np.ndarray:
    """The level of every row as text (an object array), from one column's values (pandas-convertible)."""
    import pandas as pd

    s = pd.Series(values)
    if spec.derive is None:
        if s.isna().any():
            i = int(np.flatnonzero(s.isna().to_numpy())[0])
            raise ValueError(f"{where}: row {first_row + i}, column '{spec.column}': missing level value")
        return s.astype(str).to_numpy(dtype=object)
    t = pd.to_datetime(s, errors="coerce")
    bad = t.isna().to_numpy()
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{where}: row {first_row + i}, column '{spec.column}': {s.iloc[i]!r} is not a date and "
                         f"time (--varies-with {spec.text()} reads its {spec.derive})")
    hour = t.dt.hour.to_numpy()
    day = t.dt.day_of_week.to_numpy()
    if spec.derive == "hour":
        table = np.array([f"{h:02d}" for h in range(24)], dtype=object)
        return table[hour]
    if spec.derive == "weekday":
        return np.array(_WEEKDAYS, dtype=object)[day]
    table = np.array([f"{d} {h:02d}" for d in _WEEKDAYS for h in range(24)], dtype=object)
    return table[day * 24 + hour]


def level_transitions(states: np.ndarray, levels: np.ndarray, k: int, n_levels: int,
                      sequences: np.ndarray | None = None, keep: np.ndarray | None = None) -> np.ndarray:
    """``counts[h, i, j]``: transitions ``i -> j`` between consecutive rows of one sequence whose first row has level ``h``.

    ``states`` and ``levels`` are codes per row (rows of a sequence consecutive, in order);
    ``sequences`` the sequence code of each row (``None``: one sequence); ``keep`` a mask of rows
    the fit may read — a transition counts only when both its rows are kept.
    """
    x = np.asarray(states, dtype=np.int64)
    lv = np.asarray(levels, dtype=np.int64)
    ok = np.ones(max(x.shape[0] - 1, 0), dtype=bool)
    if sequences is not None:
        sq = np.asarray(sequences)
        ok &= sq[1:] == sq[:-1]
    if keep is not None:
        kp = np.asarray(keep, dtype=bool)
        ok &= kp[1:] & kp[:-1]
    idx = (lv[:-1] * k + x[:-1]) * k + x[1:]
    return np.bincount(idx[ok], minlength=n_levels * k * k).reshape(n_levels, k, k).astype(np.int64)


@dataclass(frozen=True)
class HomogeneityTest:
    """One chain against one per level: :math:`G^2`, its degrees of freedom and p-value (module docstring)."""

    statistic: float
    df: int
    p_value: float | None
    levels: int

    def to_dict(self) -> dict[str, Any]:
        return {"statistic": self.statistic, "df": self.df, "p_value": self.p_value, "levels": self.levels}


def homogeneity_test(counts: np.ndarray) -> HomogeneityTest:
    """The likelihood-ratio test of one chain against one per level, from ``counts[h, i, j]`` (module docstring)."""
    C = np.asarray(counts, dtype=float)
    pooled = C.sum(axis=0)
    rows_h = C.sum(axis=2)  # [h, i]
    rows = pooled.sum(axis=1)
    g2 = 0.0
    nz = C > 0
    if nz.any():
        h, i, j = np.nonzero(nz)
        n = C[h, i, j]
        g2 = 2.0 * math.fsum((n * (np.log(n / rows_h[h, i]) - np.log(pooled[i, j] / rows[i]))).tolist())
    li = (rows_h > 0).sum(axis=0)  # levels leaving state i
    di = (pooled > 0).sum(axis=1)  # states i moves to
    df = int(sum(max(0, int(a) - 1) * max(0, int(b) - 1) for a, b in zip(li, di)))
    g2 = max(0.0, g2)
    return HomogeneityTest(g2, df, None if df == 0 else chi2_sf(g2, df), int((rows_h.sum(axis=1) > 0).sum()))


@dataclass(frozen=True)
class VaryingFit:
    """A chain per level, fitted by maximum likelihood (module docstring), with the pooled fit and the test.

    ``fits[h]`` is level ``levels[h]``'s :class:`~redactopt.release.fit.ChainFit`, or ``None`` for a level
    without a transition (its matrix is the pooled one); ``transition[h]`` the matrix used at each level.
    """

    spec: LevelSpec
    levels: tuple[str, ...]
    labels: tuple
    counts: np.ndarray
    fits: tuple[ChainFit | None, ...]
    pooled: ChainFit
    test: HomogeneityTest
    transition: np.ndarray
    warnings: tuple[str, ...] = field(default_factory=tuple)

    @property
    def empty_levels(self) -> tuple[str, ...]:
        return tuple(lv for lv, f in zip(self.levels, self.fits) if f is None)

    def chain_for(self, row_levels: Sequence[str]) -> VaryingChain:
        """The varying chain of one sequence whose rows have these levels (names of :attr:`levels`).

        Its first row's law is the stationary law of that row's level matrix (docs/mathematics.md,
        "Chains that vary with the step").
        """
        mats = {lv: self.transition[h].tolist() for h, lv in enumerate(self.levels)}
        return VaryingChain(mats, list(row_levels), labels=self.labels)

    def summary(self) -> str:
        t = self.test
        pv = "n/a" if t.p_value is None else f"{t.p_value:.3g}"
        return (f"homogeneity test ({self.spec.text()}): G2={t.statistic:.4g} df={t.df} p={pv}  "
                f"(one chain against one per level, {t.levels} levels with data)")

    def to_dict(self) -> dict[str, Any]:
        return {
            "varies_with": self.spec.text(), "levels": list(self.levels), "labels": [str(v) for v in self.labels],
            "transition": {lv: self.transition[h].tolist() for h, lv in enumerate(self.levels)},
            "counts": {lv: self.counts[h].astype(int).tolist() for h, lv in enumerate(self.levels)},
            "intervals": {lv: None if f is None else {"lower": f.lower.tolist(), "upper": f.upper.tolist()}
                          for lv, f in zip(self.levels, self.fits)},
            "empty_levels": list(self.empty_levels), "homogeneity_test": self.test.to_dict(),
            "pooled": self.pooled.to_dict(), "warnings": list(self.warnings),
        }

    def text(self) -> str:
        k = len(self.labels)
        pairs = [(i, j) for i in range(k) for j in range(k) if i != j]
        names = [f"{self.labels[i]}->{self.labels[j]}" for i, j in pairs]
        lines = [f"levels    : {len(self.levels)} ({self.spec.text()}), the step from a row to the next uses "
                 "the row's level", "  level  transitions  " + "  ".join(f"{n:>26}" for n in names)]
        for h, lv in enumerate(self.levels):
            f = self.fits[h]
            m = int(self.counts[h].sum())
            if f is None:
                lines.append(f"  {lv:>5}  {m:>11}  no transitions at this level: the pooled chain's matrix")
                continue
            seen = self.counts[h].sum(axis=1) > 0
            cells = [f"{self.transition[h, i, j]:.4g} [{f.lower[i, j]:.3g}, {f.upper[i, j]:.3g}]" if seen[i]
                     else f"{self.transition[h, i, j]:.4g} (pooled: unseen)" for i, j in pairs]
            lines.append(f"  {lv:>5}  {m:>11}  " + "  ".join(f"{c:>26}" for c in cells))
        lines.append(self.summary())
        lines += [f"warning   : {w}" for w in self.warnings]
        return "\n".join(lines)


def fit_levels(counts: np.ndarray, levels: Sequence[str], labels: Sequence[object], spec: LevelSpec, *,
               records: int, sequences: int, triples: np.ndarray | None = None, **fit_kw: Any) -> VaryingFit:
    """Fit one chain per level from ``counts[h, i, j]`` (module docstring); ``fit_kw`` go to
    :func:`~redactopt.release.fit.fit_counts` (confidence, interval, smoothing, ...)."""
    C = np.asarray(counts, dtype=np.int64)
    labels = tuple(labels)
    pooled = fit_counts(TransitionCounts(C.sum(axis=0), triples, records, sequences), labels, **fit_kw)
    fits: list[ChainFit | None] = []
    mats = np.empty(C.shape, dtype=float)
    text = tuple(str(v) for v in labels)  # the categorical estimator: a state a level never leaves is not an error
    for h in range(C.shape[0]):
        if C[h].sum() == 0:
            fits.append(None)
            mats[h] = pooled.transition
            continue
        f = fit_counts(TransitionCounts(C[h], None, int(C[h].sum()) + 1, 1), text, **dict(fit_kw, min_transitions=0))
        P = f.transition.copy()
        unseen = C[h].sum(axis=1) == 0
        P[unseen] = pooled.transition[unseen]  # no information at this level: the pooled row
        fits.append(f)
        mats[h] = P
    test = homogeneity_test(C)
    warnings = list(pooled.warnings)
    empty = [lv for lv, f in zip(levels, fits) if f is None]
    if empty:
        warnings.append(f"{len(empty)} level(s) without any transition ({', '.join(empty[:6])}"
                        f"{', ...' if len(empty) > 6 else ''}): they use the pooled chain's matrix")
    return VaryingFit(spec, tuple(levels), labels, C, tuple(fits), pooled, test, mats, tuple(warnings))


@dataclass(frozen=True)
class LevelScan:
    """What one pass over a table learns about its levels: ``counts[h, i, j]`` per level (module docstring),
    the level names (``levels[h]``), the rows and sequences read."""

    counts: np.ndarray
    levels: tuple[str, ...]
    rows: int
    sequences: int


class LevelCoder:
    """Codes of level names: the fixed levels of a derivation, or the values seen in order of first appearance."""

    def __init__(self, spec: LevelSpec) -> None:
        self.spec = spec
        fixed = spec.fixed_levels
        self.names: list[str] = list(fixed) if fixed is not None else []
        self.index = {n: i for i, n in enumerate(self.names)}

    def codes(self, values: Any, *, where: str, first_row: int) -> np.ndarray:
        names = level_names_of(values, self.spec, where=where, first_row=first_row)
        uniq, inv = np.unique(names.astype(str), return_inverse=True)
        if self.spec.fixed_levels is None:
            first = {}
            for i, u in enumerate(names.tolist()):
                first.setdefault(u, i)
            for u in sorted(first, key=first.get):
                if u not in self.index:
                    self.index[u] = len(self.names)
                    self.names.append(u)
        table = np.array([self.index[u] for u in uniq.tolist()], dtype=np.int64)
        return table[inv.reshape(-1)]


def scan_levels(reader: Any, *, column: str, by: str | None, spec: LevelSpec, k: int,
                codes_of: Any) -> LevelScan:
    """Count the transitions of every level in one pass over ``reader`` (rows of each sequence in the order read).

    ``codes_of(chunk)`` gives the state codes of a chunk's ``column``; the level of each row comes from
    ``spec`` (:class:`LevelCoder`).  A transition joins consecutive rows of one sequence of ``by`` (chunk
    boundaries included); its level is its first row's.
    """
    from redactopt.release.data import ids_of

    reader.require(column, by, spec.column)
    coder = LevelCoder(spec)
    counts = np.zeros((len(coder.names) or 1, k, k), dtype=np.int64)
    last: dict[Any, tuple[int, int]] = {}
    rows = 0
    cols = list(dict.fromkeys(c for c in (column, by, spec.column) if c))
    for chunk in reader.chunks(cols):
        x = np.asarray(codes_of(chunk), dtype=np.int64)
        lv = coder.codes(chunk.column(spec.column).to_pandas(), where=reader.label, first_row=chunk.first_row)
        ids = np.zeros(len(chunk), dtype=object) if by is None else \
            np.asarray(ids_of(chunk, by, reader.label).to_pandas(), dtype=object)
        if counts.shape[0] < len(coder.names):
            grown = np.zeros((len(coder.names), k, k), dtype=np.int64)
            grown[: counts.shape[0]] = counts
            counts = grown
        counts += _chunk_transitions(x, lv, ids, last, k, len(coder.names))
        rows += len(chunk)
    return LevelScan(counts, tuple(coder.names), rows, len(last))


def _chunk_transitions(x: np.ndarray, lv: np.ndarray, ids: np.ndarray, last: dict, k: int, L: int) -> np.ndarray:
    """One chunk's transitions by level, joined to each sequence's last row of the chunks before (``last``, updated)."""
    import pandas as pd

    codes, uniques = pd.factorize(pd.Series(ids), sort=False)
    order = np.argsort(codes, kind="stable")
    sx, sl, sc = x[order], lv[order], codes[order]
    out = level_transitions(sx, sl, k, L, sequences=sc)
    starts = np.flatnonzero(np.r_[True, sc[1:] != sc[:-1]]) if sc.size else np.zeros(0, dtype=np.int64)
    ends = np.r_[starts[1:], sc.size] - 1 if sc.size else starts
    for a, b in zip(starts.tolist(), ends.tolist()):
        key = uniques[sc[a]]
        prev = last.get(key)
        if prev is not None:
            out[prev[1], prev[0], sx[a]] += 1
        last[key] = (int(sx[b]), int(sl[b]))
    return out


#: A homogeneity test below this p-value makes the fit and the release warn (as the order test does).
HOMOGENEITY_LEVEL = 0.01


@dataclass(frozen=True)
class ModelAlternatives:
    """The chains a fit tested besides the one chain: ``fits`` by their spec text (the ``--varies-with``
    chain and, for a datetime order column, one per hour and one per weekday)."""

    fits: dict[str, VaryingFit]
    chosen: str | None = None

    @property
    def varying(self) -> VaryingFit | None:
        """The chain asked for with ``--varies-with`` (``None`` if none)."""
        return None if self.chosen is None else self.fits[self.chosen]

    def rejected(self) -> list[VaryingFit]:
        """The alternatives that fit significantly better than the one chain (p < :data:`HOMOGENEITY_LEVEL`)."""
        return [f for f in self.fits.values()
                if f.test.p_value is not None and f.test.p_value < HOMOGENEITY_LEVEL]

    def warnings(self) -> list[str]:
        out = []
        for f in self.rejected():
            if f.spec.text() == self.chosen:
                continue
            out.append(f"a chain that varies with {f.spec.text()} fits significantly better than one chain "
                       f"(G2={f.test.statistic:.4g}, df={f.test.df}, p={f.test.p_value:.3g}): a guarantee computed "
                       f"for one chain does not cover it; --varies-with {f.spec.text()} uses it")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"varies_with": None if self.varying is None else self.varying.to_dict(),
                "homogeneity_tests": {name: f.test.to_dict() for name, f in self.fits.items()},
                "model_warnings": self.warnings()}

    def text(self) -> str:
        lines = []
        if self.varying is not None:
            lines.append(self.varying.text())
        lines += [f.summary() for name, f in self.fits.items() if name != self.chosen]
        lines += [f"warning   : {w}" for w in self.warnings()]
        return "\n".join(lines)


def model_alternatives(reader: Any, *, column: str, by: str | None, order_by: str | None,
                       varies_with: LevelSpec | None, labels: tuple, categorical: bool, fit: ChainFit,
                       **fit_kw: Any) -> ModelAlternatives:
    """Fit the alternatives to one chain a table supports (:class:`ModelAlternatives`): the ``varies_with``
    chain, and with a datetime ``order_by`` column one chain per hour and one per weekday of it.

    ``reader`` reads the rows in sequence order (the ordered reader under ``--order-by``); the states are
    coded as ``fit`` counted them (``labels``).
    """
    specs: list[LevelSpec] = []
    if varies_with is not None:
        specs.append(varies_with)
    if order_by is not None and is_datetime(reader, order_by):
        for d in ("hour", "weekday"):
            s = LevelSpec(order_by, d)
            if s not in specs:
                specs.append(s)
    fits: dict[str, VaryingFit] = {}
    for spec in specs:
        scan = scan_levels(reader, column=column, by=by, spec=spec, k=len(labels),
                           codes_of=_state_coder(column, labels, categorical, reader.label))
        fits[spec.text()] = fit_levels(scan.counts, scan.levels, labels, spec, records=scan.rows,
                                       sequences=max(scan.sequences, 1), **fit_kw)
    return ModelAlternatives(fits, None if varies_with is None else varies_with.text())


def is_datetime(reader: Any, column: str) -> bool:
    """Whether ``column`` of a table reads as datetimes (its first chunk decides)."""
    from redactopt.release.columns import read_kind

    for chunk in reader.chunks([column]):
        return read_kind(chunk.column(column).to_pandas())[0] == "datetime"
    return False


def _state_coder(column: str, labels: tuple, categorical: bool, where: str) -> Any:
    """``chunk -> state codes`` in the fit's labels (0/1 for a binary column, the labels' text otherwise)."""
    from redactopt.release.data import TextStates, parse_binary

    if not categorical:
        return lambda chunk: parse_binary(chunk.column(column), column=column, first_row=chunk.first_row, where=where)
    coder = TextStates([str(v) for v in labels], fixed=True)
    return lambda chunk: coder.codes(chunk.column(column), column=column, first_row=chunk.first_row, where=where)
