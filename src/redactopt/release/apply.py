"""Applying a designed mechanism to a table: the release driver.

:func:`apply_table` releases a file at the speed of its format:

1. **Scan** (:func:`scan_table`): one pass over the columns it needs only — the binary
   column, ``--by`` and ``--private-column`` — checks every value, counts the records of
   each sequence, the transitions (for the fit) and the private flags.  With ``alpha``,
   ``beta`` and ``private`` given the design needs only the number of rows: a Parquet
   file needs no scan at all (its metadata give it; the values are checked while
   writing), and a CSV file is designed while it is scanned (its rows counted from its
   bytes first).
2. **Plan** (:func:`redactopt.release.plan.plan_release`): fit, one sparse verified design
   per sequence with private records.
3. **Write**: a CSV release copies the input's bytes and empties the redacted fields
   (:mod:`redactopt.release.splice`; the layout is the input's, byte for byte); every other
   release streams Arrow record batches, with the binary column replaced by an Arrow array
   with nulls for ⊥ and every other column passed through untouched
   (:func:`write_redacted`).  Draws are exact Bernoulli draws
   (:mod:`redactopt.release.redactor`, :mod:`redactopt.release.bits`) of the rows in the
   designs' blocks; no other row needs one.

The data are never held in memory, and neither is an ``(n, 2)`` table: memory grows with
the chunk size, the number of sequences and the blocks of the designs, not with the
length of a sequence.  The report (:mod:`redactopt.release.report`) is written last.

Positions are 0-based in the Python API and 1-based on the command line and in files.
"""

from __future__ import annotations

import os
import time
from typing import Any


from redactopt.engine.cache import DesignCache
from redactopt.io import STDIO, stdin_as_file
from redactopt.release.bits import (
    BitSource,
    SecureBits,
    SeededBits,
    bernoulli_exact,
    bit_source,
    exact_thresholds,
)
from redactopt.release.driver import binary_report, binary_request, plan_binary
from redactopt.release.guard import ReleaseGuard
from redactopt.release.plan import ReleasePlan, SequencePlan, plan_release, within_time_limit
from redactopt.release.passes import Progress, Span, check_release_paths, fit_on_counts, splices, write_csv, write_redacted
from redactopt.release.redactor import Redactor
from redactopt.release.report import NOT_FOR_RELEASE, write_report
from redactopt.release.tables import (DEFAULT_CHUNK_ROWS, TableReader, TableWriter)


__all__ = [
    "apply_table",
    "is_categorical",
    # the 0.1 names of this module, now in bits, plan, redactor and report
    "BitSource",
    "SecureBits",
    "SeededBits",
    "bit_source",
    "exact_thresholds",
    "bernoulli_exact",
    "SequencePlan",
    "Redactor",
    "ReleasePlan",
    "plan_release",
    "write_report",
    "NOT_FOR_RELEASE",
]


def _to_file(report: object) -> bool:
    return report is not None and str(report) != STDIO


def is_categorical(*, chain: Any, categorical: bool, protect: Any, bins: Any) -> bool:
    """Whether a release is categorical: asked for, a chain that is not the 0/1 two-state chain, or
    columns protected together or binned.  A 0/1 column is the default (the binary path)."""
    if chain is not None:
        from redactopt.model.chain import check_chain

        if not check_chain(chain).binary or tuple(str(v) for v in chain.labels) != ("0", "1"):
            return True  # (a 2x2 matrix without labels has the states "0", "1": the binary release)
    return bool(categorical) or protect is not None or bool(bins)


def refuse_binary_options(**given: Any) -> None:
    """A categorical release refuses the options of the binary path, one line each (before any work)."""
    defaults = dict(alpha=None, beta=None, robust=None, cache=None, progress=None, chunk_rows=DEFAULT_CHUNK_ROWS,
                    report_sequences="auto")
    why = dict(alpha="a categorical release takes its chain as chain= (or fits it)", beta="see alpha",
               robust="a categorical release covers the fitted or given chain, not a box of chains",
               cache="categorical designs are shared within a release only",
               report_sequences="a categorical report lists every sequence",
               progress="a categorical release of a table in memory is made at once", chunk_rows="see progress")
    for name, value in given.items():
        if value is not None and value != defaults[name]:
            raise ValueError(f"{name}= applies to 0/1 columns only: {why[name]}")


def binary_chain(chain: Any, alpha: Any, beta: Any, *, smoothing: str = "kt",
                 simultaneous: bool = False) -> tuple[Any, Any]:
    """``alpha`` and ``beta`` of a binary release: those of ``chain`` when one is given (not both).
    The categorical fit's options are refused here (a binary release smooths as its fit does)."""
    if smoothing != "kt" or simultaneous:
        raise ValueError("smoothing= and simultaneous= apply to categorical releases; a 0/1 column's fit keeps "
                         "alpha and beta in (0, 1) by the Krichevsky-Trofimov estimate")
    if chain is None:
        return alpha, beta
    if alpha is not None or beta is not None:
        raise ValueError("give the chain once: chain= or alpha=/beta=, not both")
    return chain.alpha, chain.beta


@within_time_limit
def apply_table(
    source: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    *,
    column: str | None = None,
    eps: float,
    private: list[int] | None = None,
    private_column: str | None = None,
    by: str | None = None,
    alpha: float | tuple[float, float] | None = None,
    beta: float | tuple[float, float] | None = None,
    method: str = "auto",
    seed: int | None = None,
    report: str | os.PathLike[str] | None = None,
    force: bool = False,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    time_limit: float = 60.0,
    progress: Progress | None = None,
    workers: int | None = None,
    cache: DesignCache | None = None,
    report_sequences: str = "auto",
    robust: float | None = None,
    keep: list[str] | str | None = None,
    order_by: str | None = None,
    fit_on: str | os.PathLike[str] | None = None,
    chain: Any = None,
    categorical: bool = False,
    protect: list[str] | str | None = None,
    bins: Any = None,
    smoothing: str = "kt",
    simultaneous: bool = False,
    cover: int | None = None,
    public_report: str | os.PathLike[str] | None = None,
    accept_model: bool = False,
    ledger: Any = None,
) -> dict[str, Any]:
    """Design, draw and write a redacted copy of a table; returns the report (see
    :func:`redactopt.release.report.build_report`).

    One entry for every chain: a 0/1 ``column`` is the default; ``categorical=True``, a ``chain``
    on more than two states, or ``protect``/``bins`` release a categorical column (or several
    columns protected together) through the same passes, read by another codec
    (:func:`redactopt.release.states.apply_states_table`, :mod:`redactopt.release.codec`), with
    the same ``column``, ``eps``, ``private``, ``private_column``, ``by``, ``method``, ``seed``,
    ``report``, ``force``, ``chunk_rows``, ``progress``, ``time_limit``, ``workers``, ``keep``,
    ``order_by`` and ``fit_on`` (its report is ``redactopt.release.kapply-report/1``).  Options of
    the binary path alone (``alpha``/``beta``, ``robust``, ``cache``, ``report_sequences``) are
    refused there in one line each; ``smoothing`` and ``simultaneous`` go to the categorical fit
    (:func:`redactopt.release.fit.fit_counts`).

    Parameters
    ----------
    source, dest : path
        Input and output tables (CSV or Parquet, by extension; they may differ).  The
        input is never modified; ``dest`` is written to a temporary file in its directory
        and renamed, only if everything succeeded.  ``-`` reads CSV from standard input
        (copied to a temporary file, since the input is read twice) or writes CSV to
        standard output.
    column : str
        The binary column to protect.
    eps : float
        Privacy budget per private record (nats).
    private : list of int, optional
        0-based positions of the private records (single sequence).
    private_column : str, optional
        A 0/1 column flagging private rows (any number of sequences).  It is not written
        unless named in ``keep``.
    by : str, optional
        Column naming the sequence of each row; each sequence is a chain of its own.
    alpha, beta : float or (float, float), optional
        The chain; fitted from the data when omitted — on the rows the release publishes
        with certainty only (:mod:`redactopt.release.zones`), or on ``fit_on``.  Ranges
        ``(lo, hi)`` make the release private for every chain of the box (issue 14,
        :class:`~redactopt.model.classes.ChainClass`).
    method : str
        ``"auto"`` or a :func:`redactopt.engine.design.design` method, see
        :func:`redactopt.engine.joint.design_joint`.
    seed : int, optional
        Reproducible PCG64 draws — not for real releases; default: ``os.urandom``.
    report : path, optional
        Where to write the JSON report (refused if it exists, unless ``force``; ``-``:
        standard output).
    chunk_rows : int
        Rows handled at a time (memory grows with it, not with the input).
    progress : callable, optional
        ``progress(stage, done, total)`` as the release goes: stage ``"scan"`` (rows read,
        total unknown) and ``"release"`` (rows written of all rows).
    workers : int, optional
        Processes designing at once (default: every core; 1: in this process).  The
        release does not depend on it.
    cache : DesignCache, optional
        Designs shared by the groups of private records (:mod:`redactopt.engine.cache`); a
        fresh one by default.  Pass one to share designs across releases (same chain and
        eps, ...), or ``DesignCache(share=False)`` to design every group on its own.
    report_sequences : str
        Where the per-sequence rows of the report go (:data:`redactopt.release.report.SEQUENCE_FORMATS`):
        ``"auto"`` puts them in the report up to 20 designed sequences (each with its
        mechanism) and in a Parquet file beside the report beyond.
    robust : float, optional
        A confidence level (e.g. 0.95): fit the chain and make the release private for
        every chain of the box of its intervals (each at level ``1 - (1 - robust)/2``, so
        the box covers the true chain with probability at least ``robust``); the report
        records the box, the worst-case leakage and what robustness costs
        (:func:`redactopt.release.plan.plan_release`).
    keep : list of str or "all", optional
        Columns written besides ``column``, ``by`` and ``order_by`` (default: none; ``"all"``:
        every column but ``private_column``).  The report lists each as not covered by the
        guarantee, with what it reveals (:mod:`redactopt.release.disclosure`).
    order_by : str, optional
        A column ordering the rows of each sequence (numbers, datetimes or text); the output
        keeps the input's row order (:mod:`redactopt.release.order`).
    fit_on : path, optional
        A separate, public table to fit the chain on (the same ``column``).
    chain : Chain, optional
        The chain instead of ``alpha``/``beta``: a two-state chain on states 0 and 1 (a
        ``MarkovChain``, or the same chain given as a 2x2 matrix) is the binary release with its
        alpha and beta; any other chain makes the release categorical.
    cover : int, optional
        ``K`` decoys per private run in every sequence (:mod:`redactopt.release.cover`): the positions
        of the private records are then hidden among copies of the same shape; the report states
        what it buys and costs.  Default: none (the positions are not protected, and the report
        says so).
    public_report : path, optional
        Also write the report without private positions (:func:`redactopt.release.reveals.public_report`).
    accept_model : bool
        Release although the rows are out of time order, a test rejects the model with an alternative
        under which the release leaks more than ``eps``, or a fitted state was never observed
        (:mod:`redactopt.release.refusals`; each refused otherwise, nothing written); the report's
        first line says what was accepted.
    ledger : LedgeredRelease, optional
        Record the release in a ledger and design it against what is left of the ledger's total budget
        (:class:`redactopt.release.ledger_release.LedgeredRelease`; a binary release with its per-sequence
        mechanisms inside the report).
    """
    options = dict(chain=chain, categorical=categorical, protect=protect, bins=bins)
    if is_categorical(**options):  # categorical column(s): streamed through the same passes
        refuse_binary_options(alpha=alpha, beta=beta, robust=robust, cache=cache, report_sequences=report_sequences)
        from redactopt.release.states import apply_states_table  # builds on this module

        return apply_states_table(source, dest, column=column, eps=eps, private=private,
                                  private_column=private_column, by=by, chain=chain, method=method, seed=seed,
                                  report=report, force=force, chunk_rows=chunk_rows, time_limit=time_limit,
                                  smoothing=smoothing, simultaneous=simultaneous, workers=workers, keep=keep,
                                  order_by=order_by, fit_on=fit_on, progress=progress, protect=protect, bins=bins,
                                  cover=cover, public_report=public_report, accept_model=accept_model)
    alpha, beta = binary_chain(chain, alpha, beta, smoothing=smoothing, simultaneous=simultaneous)
    request = binary_request(column=column, eps=eps, private=private, private_column=private_column, by=by,
                             alpha=alpha, beta=beta, method=method, time_limit=time_limit, cache=cache,
                             workers=workers, robust=robust, keep=keep, order_by=order_by)
    guard = ReleaseGuard(cover=cover, accept_model=accept_model, seed=seed, public_report=public_report, force=force)
    src, dst, rep_path = check_release_paths(source, dest, report, private=private,
                                             private_column=private_column, by=by, force=force,
                                             report_sequences=report_sequences)
    guard.check_paths(source, dest, report)
    with stdin_as_file(source) as path:
        reader = TableReader(path, chunk_rows=chunk_rows, label="<stdin>" if str(source) == STDIO else None)
        planned = plan_binary(reader, request, guard=guard, progress=progress, warm=True,
                              fit_counts=None if fit_on is None else lambda: fit_on_counts(
                                  fit_on, column=column, by=by, order_by=order_by, chunk_rows=chunk_rows),
                              fit_table=None if fit_on is None else str(fit_on))
        bits = bit_source(seed)
        plan, state = planned.plan, planned.state
        if ledger is None:
            redactor = Redactor(plan, bits)
        else:  # designed against the ledger's budget left (the fresh plan at other eps on request)
            redactor = ledger.redactor(plan, bits, lambda e: plan_release(
                state, private=private, **dict(request.design, eps=e)))
        t0 = time.perf_counter()
        with TableWriter(dest, force=force) as writer:
            output = planned.output
            write = write_csv if splices(reader, writer, output) else write_redacted
            redacted = write(reader, writer, redactor, state.index(), Span.whole(state), column=column, by=by,
                             binary=planned.binary, progress=progress, output=output)
            rep, rows = binary_report(planned, request, redacted=redacted, bits=bits, seed=seed, guard=guard,
                                      extra={"input": str(src), "output": str(dst)}, sequences=report_sequences,
                                      to_file=_to_file(report), started=t0)
            if ledger is not None:
                rep = ledger.annotate(rep, report=None if rep_path is None else str(rep_path), output=str(dst))
            if rep_path is not None:  # before the output appears: a report that cannot be written leaves nothing
                rep = write_report(report, rep, rows=rows, force=force)  # type: ignore[arg-type]
            guard.write_public(rep)
            if ledger is not None:  # the ledger's new entry, before the release appears
                ledger.commit()
            writer.commit()
    return rep
