"""What a release does not cover, measured; and what it means, in plain words.

**Figures of the columns written beside the protected one(s)** (:class:`Disclosure`).  The
guarantee covers the protected column(s) only.  For every other column a release writes
(kept columns, and the ``--by`` and ``--order-by`` columns), the report gives the accuracy of
the best *single rule* that predicts the protected value from that column alone, measured on
the released rows whose protected value is published, next to the *majority rate* (the
accuracy of always guessing the most common value):

* a number or a datetime column: the best single threshold — one value predicted below it,
  one at or above it (missing entries get their own majority value);
* a text column, and the ``--by`` column whatever its type: the best per-category rule — each
  category predicts its most common value (a column with nearly as many categories as rows is an
  identifier: the rule then only memorises, which its ``categories`` count shows).

An accuracy well above the majority rate means the column gives the protected value away
where it is redacted too.  Figures use at most :data:`SAMPLE_ROWS` rows (a fixed, seedless
choice of rows), so their memory does not grow with the input.

**The plain-language summary** (:func:`plain_summary`): what ε means in odds, what is covered,
what is not, what it cost.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from redactopt.release.columns import read_kind

__all__ = ["Disclosure", "rule_figure", "plain_summary", "SAMPLE_ROWS"]

#: At most this many rows are used for the figures of a column.
SAMPLE_ROWS = 50_000

_MASK64 = (1 << 64) - 1


def _mix(rows: np.ndarray) -> np.ndarray:
    """splitmix64 of the row numbers: a fixed pseudo-random 64-bit word per row (the sample's choice)."""
    z = rows.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


class Disclosure:
    """Collects, chunk by chunk, the rows the figures are measured on; :meth:`figures` computes them.

    ``roles`` names each column's role (``"kept"``, ``"by"``, ``"order-by"``); ``labels`` are the
    protected values (state ``i`` is ``labels[i]``); ``total_rows`` the rows of the whole input.
    """

    def __init__(self, roles: dict[str, str], labels: Sequence[str], total_rows: int,
                 sample_rows: int = SAMPLE_ROWS, names: dict[str, str] | None = None) -> None:
        self.roles = dict(roles)
        #: how a column is named in the figures (a CSV row id without a name: "(row id)")
        self.names = dict(names or {})
        self.labels = [str(s) for s in labels]
        self.threshold = _MASK64 if total_rows <= sample_rows else int(_MASK64 * (sample_rows / total_rows))
        self.sampled = total_rows > sample_rows
        self._x: dict[str, list[Any]] = {c: [] for c in self.roles}
        self._y: list[np.ndarray] = []

    @property
    def columns(self) -> list[str]:
        return list(self.roles)

    def fresh(self) -> "Disclosure":
        """An empty collector of the same columns and sample (for a partition measured elsewhere)."""
        out = Disclosure.__new__(Disclosure)
        out.roles, out.labels, out.threshold, out.sampled = dict(self.roles), list(self.labels), self.threshold, \
            self.sampled
        out.names = dict(self.names)
        out._x, out._y = {c: [] for c in self.roles}, []
        return out

    def merge(self, other: "Disclosure") -> None:
        """Add the rows ``other`` collected (a later part of the data)."""
        self._y += other._y
        for c in self.roles:
            self._x[c] += other._x[c]

    def add(self, values: dict[str, Any], states: np.ndarray, published: np.ndarray, rows: np.ndarray) -> None:
        """One piece of data: each column's values (arrays), the protected states, which are published, and
        the rows' 0-based numbers in the input (the sample's choice depends on them alone)."""
        if not self.roles:
            return
        take = np.asarray(published, dtype=bool)
        if self.threshold < _MASK64:
            take &= _mix(np.asarray(rows, dtype=np.int64)) <= np.uint64(self.threshold)
        idx = np.flatnonzero(take)
        if not idx.size:
            return
        self._y.append(np.asarray(states, dtype=np.int64)[idx])
        for c in self.roles:
            v = values[c]
            if isinstance(v, (pa.Array, pa.ChunkedArray)):  # the sampled rows only leave Arrow
                self._x[c].append(v.take(pa.array(idx)).to_numpy(zero_copy_only=False))
            else:
                self._x[c].append((v.to_numpy() if isinstance(v, pd.Series) else np.asarray(v))[idx])

    def figures(self) -> list[dict[str, Any]]:
        """One figure per column (:func:`rule_figure`), with its role."""
        if not self.roles:
            return []
        y = np.concatenate(self._y) if self._y else np.zeros(0, dtype=np.int64)
        out = []
        for c, role in self.roles.items():
            parts = self._x[c]
            x = pd.Series(np.concatenate(parts) if parts else np.zeros(0, dtype=object))
            shown = self.names.get(c, c)
            fig = rule_figure(x, y, self.labels, name=shown, categories=role == "by")
            out.append({"column": shown, "role": role, "covered": False, "sampled": self.sampled, **fig})
        return out


def _majority(y: np.ndarray, k: int) -> tuple[int, int]:
    counts = np.bincount(y, minlength=k)
    return int(counts.argmax()), int(counts.max()) if counts.size else 0


def rule_figure(x: pd.Series, y: np.ndarray, labels: Sequence[str], *, name: str = "x",
                categories: bool = False) -> dict[str, Any]:
    """Accuracy of the best single threshold (numbers, datetimes) or per-category rule (text, or any column
    with ``categories``: a sequence id) predicting the state ``y`` (indices into ``labels``) from ``x``, and
    the majority rate (module docstring)."""
    k = len(labels)
    y = np.asarray(y, dtype=np.int64)
    n = int(y.size)
    if n == 0:
        return {"kind": "none", "rows": 0, "accuracy": None, "majority": None, "rule": "no published rows"}
    top, top_count = _majority(y, k)
    kind, num = ("text", None) if categories else read_kind(x)
    base = {"rows": n, "majority": top_count / n, "majority_value": labels[top]}
    if kind == "text":
        codes, uniq = pd.factorize(x.astype(object).where(x.notna(), "<missing>").astype(str), sort=False)
        table = np.bincount(codes * k + y, minlength=len(uniq) * k).reshape(len(uniq), k)
        return {**base, "kind": "categories", "categories": len(uniq), "accuracy": float(table.max(axis=1).sum()) / n,
                "rule": f"each value of {name} predicts its most common protected value"}
    missing = np.isnan(num) if kind == "number" else num == np.iinfo(np.int64).min
    xs, ys = num[~missing], y[~missing]
    miss_hit = _majority(y[missing], k)[1] if missing.any() else 0
    order = np.argsort(xs, kind="stable")
    xs, ys = xs[order], ys[order]
    m = xs.size
    best = (_majority(ys, k)[1] if m else 0, None, top, top)  # (hits, split index, below, above)
    if m > 1:
        left = np.cumsum(np.eye(k, dtype=np.int64)[ys], axis=0)[:-1]  # counts in rows 0..i
        right = left[-1] + np.eye(k, dtype=np.int64)[ys[-1]] - left
        hits = left.max(axis=1) + right.max(axis=1)
        hits = np.where(xs[1:] != xs[:-1], hits, -1)  # split only between different values
        i = int(hits.argmax())
        if hits[i] > best[0]:
            best = (int(hits[i]), i, int(left[i].argmax()), int(right[i].argmax()))
    hits, i, below, above = best
    if i is None:
        rule = f"{name} does not split the values better than always guessing {labels[top]}"
    else:
        cut = (xs[i] + xs[i + 1]) / 2.0
        shown = (pd.Timestamp(int(cut)).isoformat() if kind == "datetime" else f"{cut:.6g}")
        rule = f"{labels[above]} where {name} >= {shown}, else {labels[below]}"
    return {**base, "kind": "threshold", "accuracy": (hits + miss_hit) / n, "rule": rule,
            "missing": int(missing.sum())}


def _pct(x: float) -> str:
    return f"{100.0 * x:.1f}%"


def plain_summary(*, eps: float, protected: Sequence[str], private_records: int, sequences: int,
                  model: str, fit_rows: str | None, order_test: str | None, figures: Sequence[dict[str, Any]],
                  rows: int, redacted: int, expected_utility: float, positions: str | None = None) -> str:
    """The short paragraph of a release's summary and report (issue 23: what it means, covers, omits, costs;
    issue 36: ``positions``, what the release reveals about the opt-out itself)."""
    odds = math.exp(eps) if eps < 700 else math.inf
    cols = ", ".join(protected)
    where = f" in {sequences} sequences" if sequences > 1 else ""
    parts = [
        f"What eps = {eps:g} means: whatever an observer knew before, reading this file changes their odds "
        f"about the value of any one of the {private_records} private record(s) by at most a factor "
        f"e^eps = {odds:.3g}.",
        f"Covered: the column(s) {cols} of the private rows{where}, under the {model}"
        + (f", fitted on {fit_rows}" if fit_rows else "") + "; the guarantee holds exactly for that model"
        + (f" ({order_test})." if order_test else "."),
    ]
    if figures:
        shown = "; ".join(
            f"{f['column']} ({f['role']}): " + (
                "no published rows to measure" if f.get("accuracy") is None else
                f"predicts {cols} with {_pct(f['accuracy'])} accuracy (majority rate {_pct(f['majority'])})")
            for f in figures)
        parts.append(f"Not covered: the other columns written, as they are — {shown}; and how well the model fits "
                     "the data.")
    else:
        parts.append("Not covered: how well the model fits the data (no other column is written).")
    if positions:
        parts.append(positions)
    parts.append(f"Cost: {redacted} of {rows} rows redacted ({_pct(redacted / rows if rows else 0.0)}); "
                 f"expected utility {expected_utility:.6g}.")
    return " ".join(parts)
