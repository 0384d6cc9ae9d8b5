r"""The model check of a release: its exact leakage under every alternative chain the data support (issue 33).

A release's guarantee is exact for the chain it designed with.  When the table has a datetime
``--order-by`` column (or the release is asked ``--varies-with``), the chains whose transitions
change with the hour of the day and with the weekday are alternatives the fit can test
(:func:`redactopt.release.levels.homogeneity_test`).  For each, this module

1. fits the alternative on **the same rows the release fitted its chain on** — those outside the
   zone of the radius the release's rule chose (:mod:`redactopt.release.zones`), every row when the
   chain was given — so the report reveals nothing the release does not publish (docs/mathematics.md
   §10b: the fitted rows are published with certainty);
2. builds each designed sequence's varying chain from its rows' levels
   (:meth:`~redactopt.release.levels.VaryingFit.chain_for`), and
3. evaluates the exact leakage of the release's mechanism about every private record under it,
   on the record's segment (its block and the always-published rows around it: exact for the
   whole sequence, the cut argument, which holds for varying chains too).

The report then states the leakage of the release under each alternative; when one the data
prefer (p below :data:`~redactopt.release.levels.HOMOGENEITY_LEVEL`) leaks more than ε, the release
warns in one line before its summary and names the option that designs for it (``--varies-with``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from redactopt import _progress
from redactopt.judge.leakage import leakage
from redactopt.judge.segments import block_segments
from redactopt.release.codec import BinaryCodec
from redactopt.release.fitplan import plan_reach, private_index
from redactopt.release.data import SequenceIndex, group_ranks, ids_of
from redactopt.release.levels import (HOMOGENEITY_LEVEL, LevelCoder, LevelSpec, VaryingFit, fit_levels, is_datetime,
                                      level_transitions)
from redactopt.release.zones import INF_RADIUS, PrivateIndex

__all__ = ["ModelCheck", "check_models", "level_pass", "release_model_check"]


@dataclass(frozen=True)
class LevelPass:
    """One pass over a table in sequence order: per-level transitions of the rows a fit may read, and the
    level code of every row of the designed sequences."""

    counts: np.ndarray
    levels: tuple[str, ...]
    rows: int
    row_levels: dict[int, np.ndarray]


def level_pass(reader: Any, index: SequenceIndex, n: np.ndarray, *, column: str, by: str | None, spec: LevelSpec,
               codes_of: Any, private: PrivateIndex | None, radius: int | None, designed: set[int],
               k: int) -> LevelPass:
    """Count the transitions of each level between rows outside ``Z(radius)`` (``None``: every row) and keep
    the levels of every row of the ``designed`` sequences (codes of ``index``; ``n`` rows each)."""
    coder = LevelCoder(spec)
    L = max(1, len(coder.names))
    counts = np.zeros((L, k, k), dtype=np.int64)
    counter = np.zeros(len(n) if by is not None else 1, dtype=np.int64)
    last = np.full((counter.shape[0], 3), -1, dtype=np.int64)  # state, level, kept of each sequence's last row
    row_levels = {c: np.zeros(int(n[c]), dtype=np.int32) for c in designed}
    rows = 0
    cols = list(dict.fromkeys(c for c in (column, by, spec.column) if c))
    for chunk in reader.chunks(cols):
        x = np.asarray(codes_of(chunk), dtype=np.int64)
        lv = coder.codes(chunk.column(spec.column).to_pandas(), where=reader.label, first_row=chunk.first_row)
        codes = np.zeros(len(chunk), dtype=np.int64) if by is None else index.codes(ids_of(chunk, by, reader.label),
                                                                                      reader.label)
        rank, order = group_ranks(codes)
        pos = counter[codes] + rank
        counter += np.bincount(codes, minlength=counter.shape[0])
        keep = np.ones(len(chunk), dtype=bool) if radius is None or private is None else \
            private.distances(codes, pos) > radius
        if len(coder.names) > counts.shape[0]:
            counts = np.concatenate([counts, np.zeros((len(coder.names) - counts.shape[0], k, k), dtype=np.int64)])
        counts += _transitions(x[order], lv[order], codes[order], keep[order], last, k, counts.shape[0])
        for c in set(np.unique(codes).tolist()) & designed:
            sel = codes == c
            row_levels[c][pos[sel]] = lv[sel]
        rows += len(chunk)
    return LevelPass(counts, tuple(coder.names), rows, row_levels)


def _transitions(x: np.ndarray, lv: np.ndarray, sc: np.ndarray, keep: np.ndarray, last: np.ndarray, k: int,
                 L: int) -> np.ndarray:
    """Transitions of rows sorted by sequence (each sequence's rows in order), joined to ``last`` (updated)."""
    out = level_transitions(x, lv, k, L, sequences=sc, keep=keep)
    if not sc.size:
        return out
    starts = np.flatnonzero(np.r_[True, sc[1:] != sc[:-1]])
    ends = np.r_[starts[1:], sc.size] - 1
    g = sc[starts]
    prev = last[g]
    join = (prev[:, 0] >= 0) & (prev[:, 2] == 1) & keep[starts]
    np.add.at(out, (prev[join, 1], prev[join, 0], x[starts][join]), 1)
    last[g] = np.stack([x[ends], lv[ends], keep[ends].astype(np.int64)], axis=1)
    return out


@dataclass(frozen=True)
class ModelCheck:
    """The release's exact leakage under each alternative: ``rows`` of dicts (model, test, leakage, record)."""

    rows: tuple[dict[str, Any], ...]
    eps: float

    def warnings(self) -> list[str]:
        out = []
        for r in self.rows:
            p = r["p_value"]
            if r["leakage"] > self.eps and p is not None and p < HOMOGENEITY_LEVEL:
                out.append(f"under the chain that varies with {r['model']}, which fits better (p = {p:.3g}), this "
                           f"release leaks {r['leakage']:.3g} > eps = {self.eps:g} (record {r['record']}); use "
                           f"--varies-with {r['model']}")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"alternatives": list(self.rows), "warnings": self.warnings()}


def check_models(*, reader: Any, index: SequenceIndex, n: np.ndarray, ids: list, column: str, by: str | None,
                 specs: list[LevelSpec], codes_of: Any, private: PrivateIndex, radius: int | None,
                 mechanisms: dict[int, Any], privates: dict[int, tuple[int, ...]], labels: tuple, eps: float,
                 fit_kw: dict[str, Any] | None = None) -> ModelCheck:
    """The leakage of a release under each alternative of ``specs`` (module docstring).

    ``mechanisms[c]`` is sequence ``c``'s sparse mechanism (:class:`~redactopt.judge.certify.SparseRows`),
    ``privates[c]`` its 0-based private records; ``radius`` the zone the release fitted outside (``None``:
    every row was read, a given chain).
    """
    rows = []
    for spec in specs:
        lp = level_pass(reader, index, n, column=column, by=by, spec=spec, codes_of=codes_of, private=private,
                        radius=None if radius is None or radius >= INF_RADIUS else radius,
                        designed=set(mechanisms), k=len(labels))
        vfit = fit_levels(lp.counts, lp.levels, labels, spec, records=lp.rows, sequences=max(1, len(ids)),
                          **(fit_kw or {}))
        worst, where = _worst(vfit, lp, mechanisms, privates)
        rows.append({"model": spec.text(), "statistic": vfit.test.statistic, "df": vfit.test.df,
                     "p_value": vfit.test.p_value, "leakage": worst,
                     "record": None if where is None else where[1] + 1,
                     "sequence": None if where is None or by is None else str(ids[where[0]]),
                     "levels_without_data": list(vfit.empty_levels)})
    return ModelCheck(tuple(rows), float(eps))


def _worst(vfit: VaryingFit, lp: LevelPass, mechanisms: dict[int, Any],
           privates: dict[int, tuple[int, ...]]) -> tuple[float, tuple[int, int] | None]:
    """The largest exact leakage about a private record under ``vfit``'s chains, and ``(sequence, record)``."""
    worst, where = 0.0, None
    names = np.array(lp.levels, dtype=object)
    for c, rows in mechanisms.items():
        chain = vfit.chain_for(names[lp.row_levels[c]].tolist())
        for seg in block_segments(rows, tuple(privates[c])):
            sub = chain.window(seg.lo, seg.lo + seg.rows.shape[0])
            for p in seg.private:
                v = leakage(sub, seg.rows, p - seg.lo).leakage
                if v > worst or where is None:
                    worst, where = max(worst, v), (c, p)
    return worst, where


@_progress.timed("check")
def release_model_check(*, plan: Any, state: Any, fit_source: dict[str, Any], reader: Any, column: str,
                        by: str | None, order_by: str | None, varies_with: LevelSpec | None = None,
                        private: list[int] | None) -> ModelCheck | None:
    """:func:`check_models` for a binary release planned by :func:`~redactopt.release.plan.plan_release`:
    the alternatives are the hour and the weekday of a datetime ``order_by`` (and ``varies_with``); ``None``
    when there is none to test.  The rows fitted: outside the zone the release fitted its chain outside, or —
    a given chain, a public table — outside the reach of its designs (rows it publishes with certainty).
    ``reader`` reads the rows in sequence order."""
    specs: list[LevelSpec] = [] if varies_with is None else [varies_with]
    if order_by is not None and is_datetime(reader, order_by):
        specs += [s for s in (LevelSpec(order_by, "hour"), LevelSpec(order_by, "weekday")) if s not in specs]
    if not specs:
        return None
    radius = fit_source.get("radius") if fit_source.get("source") == "published rows" else plan_reach(plan)
    designed = [int(c) for c in plan.designed()]
    codec = BinaryCodec(column)
    return check_models(reader=reader, index=SequenceIndex(state.ids), n=state.n, ids=state.ids, column=column,
                        by=by, specs=specs, codes_of=lambda ch: codec.values(ch, reader.label, ()),
                        private=private_index(state, private), radius=INF_RADIUS if radius is None else int(radius),
                        mechanisms={c: plan.sparse_rows(c) for c in designed},
                        privates={c: plan.private_of(c) for c in designed}, labels=(0, 1), eps=plan.eps)
