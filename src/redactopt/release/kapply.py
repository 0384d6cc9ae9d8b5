"""The entry points :func:`kapply_frame` and :func:`kapply_table` of a categorical release, kept for their callers.

Both are :mod:`redactopt.release.states`' drivers (:func:`~redactopt.release.states.apply_states_frame`,
:func:`~redactopt.release.states.apply_states_table`) under their first names; the plan and report they
make are :mod:`redactopt.release.states_plan`'s.
"""

from __future__ import annotations

import os
from typing import Any

import pandas as pd

from redactopt.model.chain import Chain as KChain
from redactopt.release.columns import Bins
from redactopt.release.states import apply_states_frame, apply_states_table
from redactopt.release.states_plan import AUTO_OPTIMAL_MAX, KAPPLY_METHODS

__all__ = ["kapply_frame", "kapply_table", "AUTO_OPTIMAL_MAX", "KAPPLY_METHODS"]


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
    return apply_states_frame(table, column=column, eps=eps, private=private, private_column=private_column, by=by,
                              chain=chain, method=method, seed=seed, time_limit=time_limit, confidence=confidence,
                              smoothing=smoothing, simultaneous=simultaneous, workers=workers, protect=protect,
                              bins=bins, keep=keep, order_by=order_by, fit_on=fit_on)


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
    return apply_states_table(input, output, column=column, eps=eps, private=private, private_column=private_column,
                              by=by, chain=chain, method=method, seed=seed, report=report, force=force,
                              time_limit=time_limit, confidence=confidence, smoothing=smoothing,
                              simultaneous=simultaneous, workers=workers, protect=protect, bins=bins, keep=keep,
                              order_by=order_by, fit_on=fit_on)
