"""The binary release driver: the passes every front door of a 0/1 column shares.

:func:`~redactopt.release.apply.apply_table` (files), :func:`~redactopt.release.frame.apply_frame`
(tables in memory) and :func:`~redactopt.release.dask_backend.apply_dask` (datasets) differ only in
how they read and write rows.  Everything between is here, written once:

1. :func:`binary_request` — the options of a binary release, checked before anything is read;
2. :func:`plan_binary` — require the columns, plan the output (a bad ``keep`` before any read), scan
   (in sequence order), fit where the release allows, design and judge the plan (the model checks of
   issue 36, the cover's cost) and test the model alternatives of a datetime ``order_by`` (issue 33);
3. (the front door draws and writes;)
4. :func:`binary_report` — the report of what was written: the plan's leakage and utility, the model
   check, what the release covers and reveals, the plain-language summary.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from redactopt.engine.cache import DesignCache
from redactopt.release.alternatives import varying_alternatives
from redactopt.release.data import ScanState
from redactopt.release.guard import ReleaseGuard, count_real, decoy_records
from redactopt.release.disclosure import plain_summary
from redactopt.release.model_check import ModelCheck, release_model_check
from redactopt.release.order import Ordered
from redactopt.release.passes import Output, Progress, plan_output, plan_scan
from redactopt.release.plan import ReleasePlan, plan_release
from redactopt.release.pool import warm_pool
from redactopt.release.refusals import refuse_flag_protected
from redactopt.release.report import build_report, fit_rows_text
from redactopt.release.bits import BitSource

__all__ = ["BinaryRequest", "Planned", "binary_request", "plan_binary", "binary_report", "judge_plan",
           "describe_release"]


@dataclass(frozen=True)
class BinaryRequest:
    """What a binary release was asked for: the column and rows to protect, and the design's options
    (``design``: the keywords of :func:`~redactopt.release.plan.plan_release`)."""

    column: str
    private: list[int] | None
    private_column: str | None
    by: str | None
    order_by: str | None
    keep: Any
    design: dict[str, Any] = field(default_factory=dict)

    @property
    def eps(self) -> float:
        return float(self.design["eps"])


def binary_request(*, column: str | None, eps: float, private: list[int] | None, private_column: str | None,
                   by: str | None, alpha: Any, beta: Any, method: str, time_limit: float,
                   cache: DesignCache | None, workers: int | None, robust: float | None, keep: Any,
                   order_by: str | None) -> BinaryRequest:
    """The options of a binary release, checked: a protected ``column`` that is not the private flag."""
    if column is None:
        raise ValueError("column= names the 0/1 column to protect (protect= several categorical columns)")
    refuse_flag_protected([column], private_column)
    design = dict(eps=eps, alpha=alpha, beta=beta, method=method, time_limit=time_limit, cache=cache,
                  workers=workers, robust=robust)
    return BinaryRequest(column=column, private=private, private_column=private_column, by=by,
                         order_by=order_by, keep=keep, design=design)


@dataclass
class Planned:
    """A planned binary release: the scan, the plan, where its chain came from, the order, what it writes."""

    state: ScanState
    binary: tuple[str, ...]
    plan: ReleasePlan
    fit_source: dict[str, Any]
    ordered: Ordered | None
    output: Output
    dropped: list[str]
    models: ModelCheck | None


def plan_binary(reader: Any, request: BinaryRequest, *, guard: ReleaseGuard,
                fit_counts: Callable[[], Any] | None = None, fit_table: str | None = None,
                progress: Progress | None = None, warm: bool = False) -> Planned:
    """Passes 1–2 of the driver on ``reader`` (a :class:`~redactopt.release.tables.TableReader` or
    :class:`~redactopt.release.tables.MemoryReader`): nothing is written, a refusal leaves nothing.

    ``fit_counts``: reads the transition counts of a public table to fit on (after the columns are
    checked; ``fit_table`` names it in the report).  ``warm``: with many sequences, start the design
    workers while the rows are scanned."""
    r = request
    reader.require(r.column, r.by, r.private_column, r.order_by)
    guard.watch_columns(reader, exclude=[r.column, r.by, r.private_column], order_by=r.order_by)
    plan_output(reader, column=r.column, by=r.by, order_by=r.order_by, private_column=r.private_column, keep=r.keep,
                rows=0)  # bad --keep before anything is read
    counts = None if fit_counts is None else fit_counts()
    if warm and r.by is not None:
        warm_pool(r.design["workers"])  # designs in worker processes, whose start overlaps the scan
    state, binary, plan, fit_source, ordered = plan_scan(
        reader, column=r.column, by=r.by, private_column=r.private_column, order_by=r.order_by, private=r.private,
        fit_on=counts, progress=progress, design=r.design, guard=guard)
    judge_plan(guard, plan, r.design)
    if fit_table is not None:
        fit_source["table"] = fit_table
    models = release_model_check(plan=plan, state=state, fit_source=fit_source, column=r.column, by=r.by,
                                 reader=reader if ordered is None else ordered.reader, order_by=r.order_by,
                                 private=r.private)
    if models is not None:  # the hourly and weekday chains: refused, or accepted, as the order alternative is
        guard.add_alternatives(varying_alternatives(models.to_dict(), float(plan.eps)), float(plan.eps))
    output, dropped = plan_output(reader, column=r.column, by=r.by, order_by=r.order_by,
                                  private_column=r.private_column, keep=r.keep, rows=state.rows,
                                  rank=None if ordered is None else ordered.rank)
    return Planned(state=state, binary=binary, plan=plan, fit_source=fit_source, ordered=ordered, output=output,
                   dropped=dropped, models=models)


def binary_report(planned: Planned, request: BinaryRequest, *, redacted: Any, bits: BitSource, seed: int | None,
                  extra: dict[str, Any], guard: ReleaseGuard, sequences: str, to_file: bool = False,
                  started: float | None = None) -> tuple[dict[str, Any], Any]:
    """Pass 4: the report of a written release (``redacted``: rows redacted per sequence) and its
    per-sequence rows when they go to a file of their own (:func:`~redactopt.release.report.build_report`).

    ``extra``: the front door's fields (input, output, back end); ``started``: when drawing began
    (``apply_seconds``)."""
    r = request
    rep, rows = build_report(planned.plan, redacted=redacted, source=bits, seed=seed, extra={
        **extra, "column": r.column, "by": r.by, "private_column": r.private_column},
        sequences=sequences, to_file=to_file)
    if planned.models is not None:
        rep["model_check"] = planned.models.to_dict()
    rep = describe_release(rep, planned.plan, protected=[r.column], output=planned.output, dropped=planned.dropped,
                           fit_source=planned.fit_source, order_by=r.order_by, ordered=planned.ordered, guard=guard)
    if started is not None:
        rep["apply_seconds"] = time.perf_counter() - started
    return rep, rows


def judge_plan(guard: ReleaseGuard, plan: ReleasePlan, design: dict[str, Any]) -> None:
    """After the plan, before anything is written: the model checks of ``guard`` (refused or accepted) and
    the cover's cost (the same design without the decoys)."""
    guard.judge_model(plan, fit=plan.fit, counts=plan.info.get("fit_counts"))

    def without(state: ScanState, private: list[int] | None) -> float:
        box = plan.chain_class
        chain_kw = (dict(alpha=box.alpha, beta=box.beta) if box is not None else
                    dict(alpha=plan.chain.alpha, beta=plan.chain.beta))
        rest = {k: v for k, v in design.items() if k not in ("alpha", "beta", "robust")}
        return float(plan_release(state, private=private, **chain_kw, **rest).mass.sum())

    guard.price_cover(float(plan.mass.sum()), without)


def describe_release(rep: dict[str, Any], plan: ReleasePlan, *, protected: list[str], output: Output,
                     dropped: list[str], fit_source: dict[str, Any], order_by: str | None,
                     ordered: Ordered | None, guard: ReleaseGuard | None = None) -> dict[str, Any]:
    """A binary release's report with what it writes and covers, where the chain came from, what it
    reveals, and the plain-language summary (:func:`redactopt.release.disclosure.plain_summary`);
    ``guard``: the release's issue-36 checks (:meth:`~redactopt.release.guard.ReleaseGuard.finish`)."""
    guard = ReleaseGuard() if guard is None else guard
    real, holding = count_real(guard) if guard.real is not None else (rep["leakage"]["private_records"],
                                                                       int(plan.designed().size))
    if guard.cover is not None:  # the decoys' records are judged like the private ones
        rep["leakage"]["judged_records"] = rep["leakage"]["private_records"]
        rep["leakage"]["decoy_records"] = decoy_records(guard)
        rep["leakage"]["private_records"] = real
    figures = output.disclosure.figures() if output.disclosure is not None else []
    written = output.columns if output.columns is not None else None
    rep["columns"] = {"protected": protected, "written": written if written is not None else "all",
                      "not_covered": figures, "dropped": dropped}
    rep["chain"]["fit_rows"] = fit_source
    if order_by is not None:
        rep["order"] = {"by": order_by, "kind": ordered.kind if ordered else None,
                        "rows_moved": ordered.moved if ordered else 0}
    fit = plan.fit
    test = None if fit is None else fit.order_summary()
    model = (f"two-state Markov chain alpha = {plan.chain.alpha:.6g}, beta = {plan.chain.beta:.6g}"
             if plan.chain_class is None else "class of two-state Markov chains of the report's box")
    rep = guard.finish(rep, sequences=len(plan.state.ids), with_private=holding)
    rep["summary"] = plain_summary(
        eps=plan.eps, protected=protected, private_records=real,
        sequences=holding, model=model + (" (given)" if fit is None and "table" not in fit_source else ""),
        fit_rows=fit_rows_text(fit_source), order_test=test, figures=figures, rows=rep["rows"],
        redacted=rep["utility"]["redacted"], expected_utility=rep["utility"]["expected"],
        positions=rep["reveals"]["short"])
    return rep
