r"""Releasing a table with a scan, owner or holder mechanism: ``apply --class`` (issue 26).

The table side is :mod:`redactopt.release.kapply`'s: one categorical or 0/1 column, or several
columns protected together; several sequences (``by``), ordered by ``order_by``; the columns
written besides the protected ones measured as *not covered*; the chain given, fitted on a public
table (``fit_on``) or fitted on the rows the release publishes with certainty
(:mod:`redactopt.release.zones`, with the class mechanisms' own reach, :func:`mechanism_reach`).

The mechanism of every distinct (length, private positions) is a design of the class
(:func:`redactopt.engine.classes_design.design_class`), judged exactly and drawn exactly by
:mod:`redactopt.release.class_release`: the first sequence of each shape is released by
:func:`~redactopt.release.class_release.release_sequence` (design, exact verdict, draw), every
other sequence of that shape by :func:`~redactopt.release.class_release.draw` with the same judged
mechanisms.  The draws of a sequence are keyed by its id (:func:`redactopt.release.data.sequence_key`),
as in every release: the operating system's secure source, or with ``seed`` a reproducible one
(not for real releases).  Several private records in one sequence: a scan protects one (it publishes
everything beyond its first release), owner and holder designs protect several through disjoint
blocks (:class:`~redactopt.release.class_release.MultiplePrivateError` otherwise, one line).

The report (``"format": "redactopt.class-release/1"``) holds every mechanism in the class-mechanism
format (:mod:`redactopt.classes_io`) under ``designs[j].mechanisms``; ``redactopt audit REPORT``
re-judges each exactly.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from redactopt import _progress
from redactopt.classes_io import CLASS_REPORT_FORMAT, is_class_report, mechanism_from_dict
from redactopt.errors import PrivacyCheckError
from redactopt.model.chain import Chain as KChain
from redactopt.model.mechanism_classes import BlockMechanism, OwnerMechanism, RunScanMechanism, ScanMechanism
from redactopt.release.report import fit_rows_text
from redactopt.release.class_release import ClassRelease, MultiplePrivateError, draw, release_sequence
from redactopt.release.data import parse_binary, sequence_key
from redactopt.release.disclosure import plain_summary
from redactopt.release.codec import TUPLE_SEP
from redactopt.release.states import released_column
from redactopt.release.table_release import describe_columns, plan_chain, prepare_table, release_file
from redactopt.release.fit import ChainFit

__all__ = ["CLASS_REPORT_FORMAT", "RELEASE_CLASSES", "class_apply_frame", "class_apply_table", "mechanism_reach",
           "is_class_report"]

#: The classes a class release takes (``local`` releases are :mod:`redactopt.release.apply`'s and ``kapply``'s).
RELEASE_CLASSES = ("scan", "owner", "holder")

_LABEL = "NOT FOR REAL RELEASES: seeded pseudo-random draws (--seed) are reproducible by anyone who knows the seed"


def mechanism_reach(mech: ScanMechanism | OwnerMechanism | BlockMechanism) -> int:
    """How far from its private record a class mechanism may redact a record (0: only the private one).

    A scan side publishes every record from the first distance whose stop row is all ones (that
    distance included), and may redact the whole side if there is none; a table may redact record
    ``t`` when some row gives weight to a mask without ``t``; records outside a block are published.
    """
    if isinstance(mech, (ScanMechanism, RunScanMechanism)):  # a run's scan: from the run's nearer end
        far = 0
        for name in ("left", "right"):
            S = mech.side(name)
            if S is None:
                continue
            sure = np.flatnonzero(np.all(S == 1.0, axis=(1, 2)))
            far = max(far, int(sure[0]) if sure.size else mech.side_length(name))
        return far
    inner = mech.inner if isinstance(mech, BlockMechanism) else mech
    table = np.asarray(inner.table)
    masks = np.arange(table.shape[1])
    others = [t for t in range(inner.n) if t != inner.p]
    far = 0
    for j, t in enumerate(others):
        if np.any(table[:, ((masks >> j) & 1) == 0] > 0):
            far = max(far, abs(t - inner.p))
    return far


@dataclass
class _ClassPlan:
    """A class release's chain and its designs: per distinct (length, private positions) the release of
    its first sequence (``first``, with the mechanisms' files and verdicts) and the judged mechanisms."""

    chain: KChain
    fit: ChainFit | None
    state_of: np.ndarray  # the chain's index of each distinct row state (-1: not a state of the chain)
    keys: list[tuple[int, tuple[int, ...]]]
    first_id: list[Any]
    first: list[ClassRelease]
    mechs: list[list[Any]]
    utility: list[float]

    def reach(self) -> int:
        return max((mechanism_reach(m) for ms in self.mechs for m in ms), default=0)


def _combined_utility(mechs: list[Any]) -> float:
    """Expected fraction published by disjoint mechanisms of one sequence (each publishes outside its block)."""
    return 1.0 - sum(1.0 - m.utility() for m in mechs)


#: The least time a class release's design is given once the design phase is nearly spent.
MIN_CLASS_SECONDS = 0.2


@_progress.timed("design")
def _class_plan(chain: KChain, fit: ChainFit | None, labels_all: list[str], codes: np.ndarray,
                seqs: list[tuple[Any, np.ndarray]], privs: list[tuple[int, ...]], *, eps: float, cls: str,
                seed: int | None, time_limit: float) -> _ClassPlan:
    """Design, judge and release the first sequence of every distinct (length, private positions)."""
    index = {str(s): i for i, s in enumerate(chain.labels)}
    state_of = np.array([index.get(s, -1) for s in labels_all], dtype=np.int64)
    plan = _ClassPlan(chain, fit, state_of, [], [], [], [], [])
    # the design phase keeps the time limit as a whole: each distinct design gets an equal part of what is left
    todo = len({(int(rows.size), priv) for (_, rows), priv in zip(seqs, privs) if priv})
    deadline = time.monotonic() + float(time_limit)
    for (sid, rows), priv in zip(seqs, privs):
        if not priv or (int(rows.size), priv) in plan.keys:
            continue
        share = max((deadline - time.monotonic()) / max(todo - len(plan.keys), 1), MIN_CLASS_SECONDS)
        _progress.report("designs", len(plan.keys), todo)
        values = state_of[codes[rows]]
        bad = np.flatnonzero(values < 0)
        if bad.size:
            r = int(rows[bad[0]])
            raise ValueError(f"row {r + 1}: value {labels_all[codes[r]]!r} is not a state of the chain "
                             f"({', '.join(map(str, chain.labels))}); give the chain (--transition) or fit it on a "
                             "public table that holds it (--fit-on)")
        try:
            rel = release_sequence(values.tolist(), chain, eps=eps, private=list(priv), cls=cls, seed=seed,
                                   key=sequence_key(sid), time_limit=share)
        except RuntimeError as exc:  # a mechanism the judge did not certify: nothing is released
            raise PrivacyCheckError(str(exc)) from None
        mechs = [mechanism_from_dict(d)[0] for d in rel.report["designs"]]
        plan.keys.append((int(rows.size), priv))
        plan.first_id.append(sid)
        plan.first.append(rel)
        plan.mechs.append(mechs)
        plan.utility.append(_combined_utility(mechs))
    _progress.report("designs", len(plan.keys), todo)
    return plan


def _hidden(plan: _ClassPlan, j: int, sid: Any, values: np.ndarray, priv: tuple[int, ...],
            seed: int | None) -> np.ndarray:
    """Which records of a sequence of shape ``j`` are redacted: the planned release of the shape's first
    sequence, or fresh draws of the shape's judged mechanisms (as :func:`release_sequence` combines them)."""
    if sid == plan.first_id[j]:
        return np.array([v is None for v in plan.first[j].released], dtype=bool)
    out = values.copy()
    for mech in plan.mechs[j]:
        out = np.where(draw(mech, values, seed=seed, key=sequence_key(sid)) < 0, -1, out)
    out[list(priv)] = -1
    return out < 0


@_progress.timed("draw")
def _class_released(table: pd.DataFrame, plan: _ClassPlan, seqs: list[tuple[Any, np.ndarray]],
                    privs: list[tuple[int, ...]], codes: np.ndarray, flags: np.ndarray, *, cls: str, eps: float,
                    seed: int | None, cols: list[str], bins: dict, values_out: dict[str, pd.Series],
                    written_cols: list[str], by: str | None, order_by: str | None,
                    fit_source: dict[str, Any]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Draw the redactions of a planned class release; the released table and its report."""
    n = len(table)
    mask = np.zeros(n, dtype=bool)
    state_idx = plan.state_of[codes]
    entries: list[dict[str, Any]] = []
    expected = 0.0
    for (sid, rows), priv in zip(seqs, privs):
        m = int(rows.size)
        entry: dict[str, Any] = {"id": None if sid is None else str(sid), "rows": m, "private": [p + 1 for p in priv]}
        if not priv:  # nothing to protect: released unchanged
            expected += m
            entry.update(design=None, redacted=0)
        else:
            j = plan.keys.index((m, priv))
            hidden = _hidden(plan, j, sid, state_idx[rows], priv, seed)
            mask[rows] = hidden
            expected += plan.utility[j] * m
            entry.update(design=j, redacted=int(hidden.sum()))
        entries.append(entry)
    out = table[written_cols].copy()
    for c in cols:
        out[c] = released_column(values_out[c].astype(object) if c in bins else table[c], mask)
    rep = _class_report(plan, entries, flags, mask, expected, cls=cls, eps=eps, seed=seed,
                        column=TUPLE_SEP.join(cols), by=by)
    describe_columns(rep, table, plan.chain.labels, state_idx, mask, cols=cols, bins=bins, written_cols=written_cols,
                     by=by, order_by=order_by, fit_source=fit_source)
    model = f"{plan.chain.k}-state Markov chain of the report" + (" (given)" if fit_source.get("source") == "given"
                                                                  else "")
    rep["summary"] = plain_summary(eps=eps, protected=cols, private_records=len(rep["private"]),
                                   sequences=sum(1 for s in entries if s["private"]), model=model,
                                   fit_rows=fit_rows_text(fit_source), order_test=None,
                                   figures=rep["columns"]["not_covered"], rows=n, redacted=int(mask.sum()),
                                   expected_utility=rep["utility"]["expected"])
    return out, rep


def _class_report(plan: _ClassPlan, entries: list[dict[str, Any]], flags: np.ndarray, mask: np.ndarray,
                  expected: float, *, cls: str, eps: float, seed: int | None, column: str,
                  by: str | None) -> dict[str, Any]:
    """The report (``redactopt.class-release/1``): chain, every design's mechanisms and verdicts, leakage,
    utility, randomness, sequences."""
    chain, fit, n = plan.chain, plan.fit, mask.shape[0]
    labels = [str(s) for s in chain.labels]
    verdicts = [v for rel in plan.first for v in rel.report["verdicts"]]
    return {
        "format": CLASS_REPORT_FORMAT, "class": cls, "column": column, "rows": n, "states": labels,
        "chain": {"labels": labels, "transition": chain.to_dict()["transition"],
                  "source": "fitted" if fit is not None else "given", "fit": fit.to_dict() if fit is not None else None},
        "eps": float(eps), "private": [int(i) + 1 for i in np.flatnonzero(flags)],
        "leakage": {"max": max(v["leakage"] for v in verdicts), "private_records": int(flags.sum()),
                    "verdicts": sorted({v["verdict"] for v in verdicts})},
        "utility": {"expected": expected / n, "realised": 1.0 - float(mask.sum()) / n, "redacted": int(mask.sum())},
        "randomness": {"source": plan.first[0].report["draws"], "secure": seed is None, "seed": seed},
        "label": _LABEL if seed is not None else None,
        "warnings": list(fit.warnings) if fit is not None else [],
        "by": by, "sequences": entries,
        "designs": [{"rows": m, "private": [p + 1 for p in priv], "utility": u,
                     "mechanisms": rel.report["designs"], "verdicts": rel.report["verdicts"]}
                    for (m, priv), rel, u in zip(plan.keys, plan.first, plan.utility)],
    }


def _binary_column(table: pd.DataFrame, column: str) -> pd.DataFrame:
    """The table with a 0/1 column read as integers (``"1"``, ``1.0``, ``true``, ...; anything else: an error
    naming the row), so that its states are ``0`` and ``1``."""
    vals = parse_binary(table[column].to_numpy(), column=column, first_row=1, where="table")
    return table.assign(**{column: vals.astype(np.int64)})


def _one_private_each(seqs: list[tuple[Any, np.ndarray]], privs: list[tuple[int, ...]], states: int = 2) -> None:
    """:class:`MultiplePrivateError` naming the first sequence with several private records that are not one run of
    adjacent records of a two-state chain (a scan protects one record, or one run)."""
    for (sid, rows), priv in zip(seqs, privs):
        if len(priv) > 1 and not (states == 2 and list(priv) == list(range(priv[0], priv[-1] + 1))):
            where = "the sequence" if sid is None else f"sequence {str(sid)!r}"
            raise MultiplePrivateError(
                f"{where} has {len(priv)} private records (rows {', '.join(str(int(rows[p]) + 1) for p in priv[:4])}"
                f"{', ...' if len(priv) > 4 else ''}): a scan publishes every record beyond its first release on "
                "each side, so it protects one private record per sequence (or one run of adjacent records of a "
                "two-state chain); use --class local or owner")


def class_apply_frame(table: pd.DataFrame, *, cls: str, eps: float, column: str | None = None,
                      protect: list[str] | str | None = None, bins: Any = None, binary: bool = False,
                      private: object = None, private_column: str | None = None, by: str | None = None,
                      chain: KChain | None = None, seed: int | None = None, time_limit: float = 60.0,
                      keep: list[str] | str | None = None, order_by: str | None = None,
                      fit_on: pd.DataFrame | None = None, confidence: float = 0.95,
                      smoothing: str = "kt") -> tuple[pd.DataFrame, dict[str, Any]]:
    """Release a DataFrame with a mechanism of class ``cls`` (``scan``, ``owner``, ``holder``); the released
    table and the report.

    The options are :func:`redactopt.release.kapply.kapply_frame`'s (columns, private rows, sequences,
    order, kept columns, the chain given or fitted), with ``binary=True`` for a 0/1 column whose states
    are 0 and 1 (``chain`` then has labels ``"0"``, ``"1"``).  Each distinct (length, private positions)
    gets :func:`~redactopt.engine.classes_design.design_class`'s verified design (module docstring).
    """
    if cls not in RELEASE_CLASSES:
        raise ValueError(f"cls must be one of {', '.join(RELEASE_CLASSES)}, got {cls!r} (local releases: "
                         "redactopt.apply_table)")
    prep = prepare_table(table, column=column, protect=protect, bins=bins, eps=eps, by=by, order_by=order_by,
                         private=private, private_column=private_column, keep=keep,
                         convert=(lambda t, cols: _binary_column(t, cols[0])) if binary else None)
    if cls == "scan":  # refused before any design or fit
        _one_private_each(prep.seqs, prep.privs, 2 if binary else len(prep.labels))

    # the time limit is the design phase's as a whole: a chain given or fitted on a public table is designed once
    # and gets all of it; the zone rule (pilot, refits) designs again, so each of its plans gets half of what is left
    deadline = time.monotonic() + float(time_limit)
    once = chain is not None or fit_on is not None

    def plan_for(fit: ChainFit | KChain) -> _ClassPlan:
        ch = fit if isinstance(fit, KChain) else fit.chain
        left = deadline - time.monotonic()
        share = max(left if once else 0.5 * left, MIN_CLASS_SECONDS)
        return _class_plan(ch, None if isinstance(fit, KChain) else fit, prep.labels, prep.codes, prep.seqs,
                           prep.privs, eps=prep.eps, cls=cls, seed=seed, time_limit=share)

    if fit_on is not None and binary:
        fit_on = _binary_column(fit_on, prep.cols[0])
    plan, fit_source = plan_chain(prep, plan_for, chain=chain, fit_on=fit_on,
                                  fit_kw=dict(confidence=confidence, smoothing=smoothing), reach_of=_ClassPlan.reach)
    return _class_released(prep.table, plan, prep.seqs, prep.privs, prep.codes, prep.flags, cls=cls, eps=prep.eps,
                           seed=seed, cols=prep.cols, bins=prep.bins, values_out=prep.values_out,
                           written_cols=prep.written_cols, by=by, order_by=order_by, fit_source=fit_source)


def class_apply_table(input: str | os.PathLike[str], output: str | os.PathLike[str], *, cls: str, eps: float,
                      report: str | os.PathLike[str] | None = None, force: bool = False,
                      fit_on: str | os.PathLike[str] | None = None, **kw: Any) -> dict[str, Any]:
    """:func:`class_apply_frame` on a CSV or Parquet file, writing the release (and the JSON ``report``).

    As :func:`redactopt.release.kapply.kapply_table`: the output is written to a temporary file and
    renamed, never overwritten without ``force``, never in a missing directory; the input is never
    modified; everything is checked before anything is written.
    """
    return release_file(input, output, report, force=force, fit_on=fit_on, what="class",
                        private=kw.get("private"), private_column=kw.get("private_column"), by=kw.get("by"),
                        release=lambda df, public: class_apply_frame(df, cls=cls, eps=eps, fit_on=public, **kw))
