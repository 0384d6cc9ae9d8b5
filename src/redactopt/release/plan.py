"""Planning a release: which records are private, the chain, and one verified design per sequence.

:func:`plan_release` fits the chain from the scan (unless alpha and beta are given) and
designs every sequence that has private records with
:func:`redactopt.engine.joint.design_joint_sparse` (each private record protected at
``eps``).  A design is a :class:`~redactopt.judge.certify.SparseDesign`: blocks of rows
around the private records, every other record published with certainty, verified exactly
on each block extended by its always-published neighbours (exact for the whole sequence,
see :func:`~redactopt.judge.certify.finalize_sparse`).

Positions are 0-based in the Python API and 1-based on the command line and in files.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from redactopt._validate import check_eps, check_probability_open
from redactopt.engine.joint import JOINT_METHODS, design_joint_sparse
from redactopt.judge.audit import as_sparse
from redactopt.judge.certify import DesignResult, SparseDesign
from redactopt.model.chain import MarkovChain
from redactopt.release.data import ScanState, sequence_key
from redactopt.release.fit import fit_counts

__all__ = ["SequencePlan", "ReleasePlan", "plan_release"]


@dataclass
class SequencePlan:
    """The design for one sequence (``result`` is ``None`` when it has no private record).

    ``result`` is normally a :class:`~redactopt.judge.certify.SparseDesign` (blocks around the
    private records); a dense :class:`~redactopt.judge.certify.DesignResult` is accepted too.
    """

    seq_id: Any
    n: int
    private: tuple[int, ...]
    result: SparseDesign | DesignResult | None

    @property
    def key(self) -> int:
        return sequence_key(self.seq_id)

    def blocks(self) -> list[tuple[int, np.ndarray]]:
        """``(first row, rows)`` of every block that may be redacted, sorted, 0-based."""
        if self.result is None:
            return []
        rows = as_sparse(self.result.redact_prob)
        return list(zip(rows.starts, rows.blocks))

    def span(self) -> tuple[int, int]:
        """0-based first and last rows that may be redacted (``(0, -1)`` when none)."""
        b = self.blocks()
        return (b[0][0], b[-1][0] + b[-1][1].shape[0] - 1) if b else (0, -1)


@dataclass
class ReleasePlan:
    """Chain, per-sequence designs and everything the report needs."""

    chain: MarkovChain
    fit: Any
    eps: float
    method: str
    plans: list[SequencePlan]
    state: ScanState
    design_seconds: float
    info: dict = field(default_factory=dict)

    def expected_utility(self) -> float:
        total = sum(p.n for p in self.plans)
        pub = sum(p.n * (p.result.utility if p.result is not None else 1.0) for p in self.plans)
        return pub / total if total else 1.0


def plan_release(
    state: ScanState,
    *,
    eps: float,
    private: list[int] | None = None,
    alpha: float | None = None,
    beta: float | None = None,
    method: str = "auto",
    time_limit: float = 60.0,
    confidence: float = 0.95,
    map_designs: Callable[[Callable, list[tuple]], list] | None = None,
) -> ReleasePlan:
    """Fit (unless alpha and beta are given) and design every sequence that has private records.

    ``private`` (0-based) applies to a single-sequence scan; otherwise the scan's private
    flags are used.  ``map_designs(fn, argument tuples)`` returns ``[fn(*a) for a in
    argument tuples]`` in order, possibly in parallel (the Dask back-end designs the
    sequences on its workers); the designs do not depend on where they are computed.
    """
    eps = check_eps(eps)
    if method not in JOINT_METHODS:
        raise ValueError(f"method must be one of {', '.join(JOINT_METHODS)}, got {method!r}")
    if (alpha is None) != (beta is None):
        raise ValueError("give both --alpha and --beta, or neither (then they are fitted)")
    if state.rows == 0:
        raise ValueError("the input has no data rows")
    fit = None
    if alpha is None:
        fit = fit_counts(state.counts(), confidence=confidence)
        chain = fit.chain
    else:
        chain = MarkovChain(check_probability_open(alpha, "alpha"), check_probability_open(beta, "beta"))
    priv_by_code: dict[int, list[int]] = {}
    if private is not None:
        if len(state.ids) != 1:
            raise ValueError("--private positions need a single sequence; with --by use --private-column")
        n0 = int(state.n[0])
        bad = [p + 1 for p in private if p >= n0]
        if bad:
            raise ValueError(f"--private: position {bad[0]} is outside the sequence (positions 1..{n0})")
        priv_by_code[0] = sorted(set(private))
    else:
        priv_by_code = {c: sorted(set(v)) for c, v in state.private.items() if v}
    if not priv_by_code:
        raise ValueError("no record is marked private: nothing to protect (check --private-column)")
    t0 = time.perf_counter()
    todo = [c for c in range(len(state.ids)) if priv_by_code.get(c)]
    designs = dict(zip(todo, (map_designs or _map)(
        _design, [(chain, int(state.n[c]), eps, priv_by_code[c], method, time_limit) for c in todo])))
    plans = [SequencePlan(seq_id, int(state.n[c]), tuple(priv_by_code.get(c, ())), designs.get(c))
             for c, seq_id in enumerate(state.ids)]
    return ReleasePlan(chain, fit, eps, method, plans, state, time.perf_counter() - t0)


def _design(chain: MarkovChain, n: int, eps: float, private: list[int], method: str,
            time_limit: float) -> SparseDesign:
    return design_joint_sparse(chain, n, eps=eps, private=private, method=method, time_limit=time_limit)


def _map(fn: Callable, args: list[tuple]) -> list:
    return [fn(*a) for a in args]
