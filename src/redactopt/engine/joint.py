r"""Designs that protect several private records at once, and designs for long sequences.

The paper's footnote 1 protects a set :math:`\mathcal P` of private records by designing
for each :math:`p\in\mathcal P` separately and "choosing the most conservative redaction
model locally", i.e. the elementwise maximum :math:`q=\max_p q^{(p)}`.

**Why the maximum is private** (checked exactly anyway).  Raising a redaction probability
is post-processing: if :math:`q'_t[x]\ge q_t[x]`, the output of :math:`q'` is obtained from
the output of :math:`q` by redacting a published :math:`Y_t=v` with probability
:math:`(q'_t[v]-q_t[v])/(1-q_t[v])`, which needs only :math:`Y`.  For any output
:math:`z` of the post-processed mechanism,
:math:`\Pr(z\mid X_p=x)=\sum_y K(z\mid y)\Pr(y\mid X_p=x)` is a mixture over outputs
:math:`y` in the support of :math:`q`, so its likelihood ratio is a mediant of theirs
and cannot exceed their supremum: Definition 1's leakage is non-increasing in every
entry of :math:`q` (``tests/test_joint.py::test_leakage_monotone_bruteforce`` checks it
against enumeration of all outputs).  Hence :math:`\max_p q^{(p)}` leaks at most
:math:`\epsilon` about every :math:`p`.  It wastes utility, though: the design for
:math:`p` spends budget protecting :math:`p` against records next to other private
records, which are redacted anyway.

**Joint data-independent windows** (:func:`joint_dim`).  A data-independent mechanism
with probabilities in {0, 1} publishes a set :math:`S`; by the Markov property the
leakage about :math:`p` depends only on the nearest published records on each side
(Lemma 1), :math:`\max_x[\ell_x(a)+\ell_x(b)]` with :math:`\ell_x` of
:mod:`redactopt.solvers.dim`.  Private records whose windows overlap are merged into a
*cluster* with one window :math:`[L, R]` constrained for all its members at once, and
the window of each cluster minimises its length exactly (for every :math:`L`, the
smallest feasible :math:`R` by binary search; :math:`\ell_x` is non-increasing in the
distance by data processing).  **The union of the cluster windows is always valid**:
it publishes a subset of what each cluster's window publishes, so (post-processing, as
above) its leakage about every member is at most that of its own cluster's window,
which is :math:`\le\epsilon`.  Clusters whose windows overlap are merged and
re-optimised until no two overlap; the joint window of a cluster uses the fact that
its members are redacted anyway, which the footnote's per-record windows cannot.

**Joint local improvement** (:func:`improve_locally`).  Starting from a valid design,
the redaction probabilities of the outermost redacted records of each cluster are
lowered one at a time, each to the smallest value that keeps the exact leakage
(Definition 1, :func:`redactopt.judge.leakage.leakage`) about every private record of the
cluster at most :math:`\epsilon`; by the monotonicity above the feasible values of one
coordinate form an interval, so bisection finds its end.  Only the records between the
nearest always-published records matter for a private record (a record published with
certainty cuts every output pattern), so each check runs on that segment.

**Long sequences** (:func:`design_local`).  A design for one private record is computed
on a window of the sequence around it and embedded (records outside published).  If
the window's outermost records are published with certainty, the embedding has exactly
the window's leakage (the same cut argument); otherwise the window is doubled.  Every
result is re-verified on the whole sequence by :func:`redactopt.judge.certify.finalize`.

Indices are 0-based here; the CLI and files are 1-based.
"""

from __future__ import annotations

import collections
import dataclasses
import math
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from redactopt import _progress
from redactopt._search import bisect_boundary
from redactopt._validate import check_eps, check_n, check_private
from redactopt.engine.local import SOLVER_MAX_EPS
from redactopt.engine.registry import METHODS
from redactopt.engine.runs import RUN_AUTO_GRID, RunWindow, design_run_window, private_runs, split_bound
from redactopt.engine.window import design_sparse, design_window
from redactopt.errors import PrivacyCheckError
from redactopt.judge.certify import (
    DesignResult,
    SparseDesign,
    finalize,
    finalize_sparse,
    merge_blocks,
)
from redactopt.judge.classes import nominal_bound
from redactopt.judge.leakage import leakage, side_extremes, side_pattern_products
from redactopt.judge.lemma2 import leakage_ceiling, lemma2_upper_bound
from redactopt.judge.relaxation import Relaxation, best_bound, bound_on_rows
from redactopt.judge.segments import extended_block, segment_groups
from redactopt.judge.tolerances import round_up, safe_budget
from redactopt.model.chain import Chain, MarkovChain, is_two_state
from redactopt.model.classes import ChainClass
from redactopt.model.influence import delta_star, side_log_ratio_envelope
from redactopt.solvers.frontier import side_bound, side_tables

__all__ = [
    "JOINT_METHODS",
    "bound_tables",
    "seed_bound_tables",
    "bound_table_keys",
    "design_local",
    "combine_max",
    "joint_dim",
    "improve_locally",
    "design_joint",
    "design_joint_sparse",
    "design_states_release",
    "region_bound",
]

#: ``method`` values of :func:`design_joint`: ``"auto"`` plus those of :func:`redactopt.engine.design.design`.
JOINT_METHODS: tuple[str, ...] = ("auto",) + METHODS

#: ``method="auto"`` adds footnote-style calibrated-3R candidates up to this many private records.
AUTO_CALIBRATED_MAX = 3

def _check_chain(chain: object) -> MarkovChain:
    if not is_two_state(chain):
        raise TypeError(f"chain must be a two-state chain (MarkovChain), got {chain!r}")
    return chain


def _side_table(chain: MarkovChain, m: int) -> np.ndarray:
    r"""Rows ``d = 0..m`` of the non-increasing envelope of :math:`\ell_x(d)`, clipped at 0.

    Row 0 (distance 0, the private record itself) is ``inf``; rows ``1..m`` are
    :func:`redactopt.model.influence.side_log_ratio_envelope`, so binary search never
    accepts an infeasible distance.
    """
    out = np.empty((int(m) + 1, 2))
    out[0] = np.inf
    out[1:] = side_log_ratio_envelope(chain, int(m))
    return np.maximum(out, 0.0)


# --------------------------------------------------------------------------
# joint data-independent windows
# --------------------------------------------------------------------------
def _right_needed(neg: np.ndarray, n: int, p: int, budget: np.ndarray) -> np.ndarray:
    """Smallest window end ``R`` (0-based) meeting ``T[R+1-p] <= budget`` for one x.

    ``neg[d - 1] = -T[d]`` for the non-increasing table ``T`` of one x (so ``neg`` is
    ascending).  Returns ``n - 1`` (nothing published on the right, leakage 0) when no
    published distance works and ``budget >= 0``, and ``n`` (infeasible) when
    ``budget < 0``.
    """
    m_right = n - 1 - p  # records right of p
    if m_right == 0:
        return np.where(budget >= 0.0, n - 1, n)
    # The table may stop early where it has reached 0 (see _table_length): beyond it T = 0.
    k = min(m_right, neg.shape[0])
    dmin = np.searchsorted(neg[:k], -budget, side="left") + 1  # first distance with T <= budget
    r = np.where(dmin > m_right, n - 1, p + dmin - 1)
    return np.where(budget >= 0.0, r, n)


def _cluster_window(T: np.ndarray, neg: tuple[np.ndarray, np.ndarray], n: int, members: Sequence[int],
                    eps: float, half_radius: int) -> tuple[int, int]:
    r"""Shortest window ``[L, R]`` containing ``members`` that is eps-private for each of them.

    For every left end ``L`` the smallest feasible right end is found by binary search;
    only left ends that can beat a known feasible window are tried.  The symmetric window
    of radius ``half_radius = Δ*(ε/2) - 1`` is feasible (each side leaks at most
    :math:`\hat i(\Delta^\star(\epsilon/2)) \le \epsilon/2` about every member), which bounds
    the search to about ``2 Δ*(ε/2)`` left ends.
    """
    f, g = int(members[0]), int(members[-1])

    def best_r(Ls: np.ndarray) -> np.ndarray:
        need = np.full(Ls.shape, g, dtype=np.int64)
        for p in members:
            dl = np.minimum(p - Ls + 1, T.shape[0] - 1)
            for x in (0, 1):
                left = np.where(Ls == 0, 0.0, T[dl, x])
                need = np.maximum(need, _right_needed(neg[x], n, p, eps - left))
        return need

    probe = np.array(sorted({0, f, max(0, f - half_radius)}), dtype=np.int64)
    r_probe = best_r(probe)
    sizes = np.where(r_probe < n, r_probe - probe + 1, n + 1)
    w0 = int(sizes.min())
    lo = max(0, g - w0 + 1)
    Ls = np.arange(lo, f + 1, dtype=np.int64)
    Rs = best_r(Ls)
    ok = Rs < n
    size = np.where(ok, Rs - Ls + 1, n + 1)
    imbalance = np.abs((f - Ls) - (Rs - g))
    order = np.lexsort((imbalance, size))
    j = int(order[0])
    return int(Ls[j]), int(Rs[j])


def _window_mask(n: int, windows: list[tuple[int, int]]) -> np.ndarray:
    q = np.zeros((n, 2))
    for L, R in windows:
        q[L : R + 1] = 1.0
    return q


def _table_length(chain: MarkovChain, n: int) -> int:
    """Smallest ``m <= n`` whose table ends in 0 for both x (farther distances are 0 too), else ``n``.

    Long sequences then need a table of a few thousand distances, not ``n``.
    """
    m = min(n, 4096)
    while True:
        T = _side_table(chain, m)
        if m >= n or (m >= 1 and not T[m].any()):
            return m
        m = min(n, 4 * m)


def _joint_windows(chain: MarkovChain, n: int, eps: float, priv: Sequence[int]) -> list[tuple[int, int]]:
    """Cluster windows (0-based, inclusive), merged until no two touch."""
    T = _side_table(chain, _table_length(chain, n))
    neg = (np.ascontiguousarray(-T[1:, 0]), np.ascontiguousarray(-T[1:, 1]))
    half_radius = delta_star(chain, eps / 2.0) - 1
    clusters: list[list[int]] = [[p] for p in priv]
    while True:
        windows = [_cluster_window(T, neg, n, c, eps, half_radius) for c in clusters]
        merged: list[list[int]] = [clusters[0]]
        last = windows[0]
        changed = False
        for c, w in zip(clusters[1:], windows[1:]):
            if w[0] <= last[1] + 1:  # overlapping or touching: no published record between
                merged[-1] = merged[-1] + c
                last = (last[0], max(last[1], w[1]))
                changed = True
            else:
                merged.append(c)
                last = w
        clusters = merged
        if not changed:
            return windows


def joint_dim(chain: MarkovChain, n: int, *, eps: float, private: object) -> DesignResult:
    """Joint data-independent windows for several private records (see the module docstring).

    ``private`` holds 0-based indices.  Returns a :class:`DesignResult` (method
    ``"joint-dim"``) verified exactly on the whole sequence; ``info["windows"]`` lists the
    0-based ``[L, R]`` of every cluster.
    """
    chain = _check_chain(chain)
    n = check_n(n)
    eps = check_eps(eps)
    priv = check_private(private, n)
    windows = _joint_windows(chain, n, eps, priv)
    bound = lemma2_upper_bound(chain, n, eps=eps, private=priv)
    for _ in range(n + 1):
        q = _window_mask(n, windows)
        try:
            return finalize(chain, q, private=priv, eps=eps, method="joint-dim", upper_bound=bound,
                            solver="lemma2", info={"windows": [list(w) for w in windows],
                                                   "clusters": len(windows)})
        except PrivacyCheckError:
            # Only a floating tie between eps and the closed form gets here: widen by one.
            windows = [(max(0, L - 1), min(n - 1, R + 1)) for L, R in windows]
    raise PrivacyCheckError("joint-dim: no window passed the exact check")  # pragma: no cover


# --------------------------------------------------------------------------
# one private record on a window of a long sequence
# --------------------------------------------------------------------------
def _local_window(chain: MarkovChain, n: int, eps: float, p: int, method: str, radius: int | None,
                  time_limit: float, memo: dict | None = None, split: str = "auto",
                  options: dict | None = None) -> tuple[int, int, DesignResult]:
    """:func:`redactopt.engine.window.design_window` with the joint designs' arguments (``options``: the
    forced method's solver options, as :func:`~redactopt.engine.design.design` takes them)."""
    kw: dict[str, Any] = {"split": split} if method in ("3r", "3r-calibrated") else {}
    if options:
        kw["options"] = options
    return design_window(chain, n, eps=eps, p=p, method=method, radius=radius, memo=memo, time_limit=time_limit, **kw)


def design_local(
    chain: MarkovChain,
    n: int,
    *,
    eps: float,
    p: int,
    method: str = "dim",
    radius: int | None = None,
    time_limit: float = 60.0,
) -> DesignResult:
    """:func:`redactopt.engine.window.design_sparse` for record ``p`` (0-based) as a dense result.

    The window ``[p - radius, p + radius]`` (default ``2 Δ*(ε/2) + 16``) is doubled until
    the design publishes its outermost records with certainty (or it covers the whole
    sequence), so that records outside it can be published without changing the leakage.
    The result is re-verified on all ``n`` records.
    """
    chain = _check_chain(chain)
    return design_sparse(chain, n, eps=eps, p=p, method=method, radius=radius, time_limit=time_limit).to_result()


def _local_parts(chain: MarkovChain, n: int, eps: float, priv: Sequence[int], method: str,
                 time_limit: float, split: str = "auto") -> list[tuple[int, int, np.ndarray]]:
    return [(lo, hi, np.asarray(res.redact_prob))
            for lo, hi, res in _local_results(chain, n, eps, priv, method, time_limit, split)]


def _local_results(chain: MarkovChain, n: int, eps: float, priv: Sequence[int], method: str,
                   time_limit: float, split: str = "auto",
                   options: dict | None = None) -> list[tuple[int, int, DesignResult]]:
    """Each private record's window design; ``time_limit`` is shared by all of them (each gets an equal part
    of what is left when it starts: a record whose design ends early leaves its time to the others)."""
    memo: dict = {}
    deadline = time.monotonic() + time_limit
    out = []
    for i, p in enumerate(priv):
        share = max((deadline - time.monotonic()) / (len(priv) - i), 0.05)
        out.append(_local_window(chain, n, eps, p, method, None, share, memo, split, options))
    return out


#: Grid of the one-sided frontier tables behind region bounds (coarse: a bound, not a design).
SIDE_BOUND_GRID = 500


#: Tables of :func:`bound_tables` by ``(chain, R)``, the most recently used last (at most four).
_BOUND_TABLES: "collections.OrderedDict[tuple[MarkovChain, int], Any]" = collections.OrderedDict()
_BOUND_TABLES_LOCK = threading.Lock()


def bound_tables(chain: MarkovChain, R: int) -> Any:
    """:func:`~redactopt.solvers.frontier.side_tables` of the region bounds (upper, grid
    :data:`SIDE_BOUND_GRID`) for sides of up to ``R`` records, memoised in this process.

    A table is a deterministic function of ``(chain, R)`` (about a second to build for a few
    hundred records), so every design and release plan of a process shares it, and one
    built in another process may be handed in (:func:`seed_bound_tables`).
    """
    key = (chain, int(R))
    with _BOUND_TABLES_LOCK:
        if key in _BOUND_TABLES:
            _BOUND_TABLES.move_to_end(key)
            return _BOUND_TABLES[key]
    table = side_tables(chain, int(R), G=SIDE_BOUND_GRID, upper=True)
    seed_bound_tables({key: table})
    return table


def seed_bound_tables(tables: dict[tuple[MarkovChain, int], Any]) -> None:
    """Add tables built by :func:`bound_tables` (here or in another process) to this process's memo."""
    with _BOUND_TABLES_LOCK:
        for key, table in tables.items():
            _BOUND_TABLES[key] = table
            _BOUND_TABLES.move_to_end(key)
        while len(_BOUND_TABLES) > 4:
            _BOUND_TABLES.popitem(last=False)


def bound_table_keys() -> set[tuple[MarkovChain, int]]:
    """The ``(chain, R)`` of the tables this process holds."""
    with _BOUND_TABLES_LOCK:
        return set(_BOUND_TABLES)


def region_bound(chain: MarkovChain, eps: float, lo: int, hi: int, priv: Sequence[int],
                 tables: dict) -> tuple[float, str]:
    r"""A bound on what any eps-private mechanism publishes in rows ``lo..hi`` holding ``priv``.

    The smaller of Lemma 2's bound over the rows and the side-frontier bound: every
    mechanism private about the first private record ``f`` has left-side log-ratios within
    ``[-eps, eps]`` (the right side's are on both sides of 0), so its rows ``lo..f-1``
    publish at most :math:`F_\ell(\epsilon,\epsilon)`; likewise the rows after the last one
    ``g``; each non-private row between them publishes at most 1.

    ``tables`` caches the side-frontier tables between calls (keys ``"R"``, ``"tab"``): a
    table for sides of up to ``R`` records bounds every shorter side too, so a caller may
    pass one built for the longest side it will ask about.  The side bounds read from a
    table are memoised in it too (key ``"sides"``).
    """
    m = hi - lo + 1
    mine = [p - lo for p in priv if lo <= p <= hi]
    bound, name = m * lemma2_upper_bound(chain, m, eps=eps, private=mine), "lemma2"
    if chain.lam == 0.0:  # independent records: nothing but the private ones can leak
        return bound, name
    if eps >= leakage_ceiling(chain, 1) or eps > SOLVER_MAX_EPS:
        # a side may publish everything (Lemma 2's bound says as much), or e^eps is out of the tables' range
        return bound, name
    f, g = lo + mine[0], lo + mine[-1]
    left, right = f - lo, hi - g
    R = max(left, right, 1)
    if tables.get("R", -1) < R:
        tables["R"], tables["tab"] = R, bound_tables(chain, R)
        tables["sides"] = {}
    tab = tables["tab"]
    memo = tables.setdefault("sides", {})
    for m_side in (left, right):
        if (m_side, eps) not in memo:
            memo[m_side, eps] = side_bound(tab, m_side, eps, eps)
    sides = memo[left, eps] + memo[right, eps] + (g - f + 1 - len(mine))
    if sides < bound:
        bound, name = sides, "frontier-dp"
    return bound, name


def _record_relaxations(results: list[tuple[int, int, DesignResult]]) -> list[Relaxation]:
    """Each one-record window design's certificate as a relaxation: every mechanism private about that record
    publishes at most the window's bound on its rows (docs/mathematics.md §7c)."""
    out = []
    for lo, hi, res in results:
        c = res.certificate
        if c.scope == "all" and len(res.private) == 1:
            out.append(Relaxation(lo, hi, c.upper_bound * (hi - lo + 1), c.solver, "record", (lo + res.private[0],)))
    return out


def _run_relaxations(windows: Sequence[RunWindow]) -> list[Relaxation]:
    return [w.relaxation for w in windows]


def _relaxed(chain: MarkovChain, eps: float, lo: int, hi: int, priv: Sequence[int], tables: dict,
             relax: Sequence[Relaxation]) -> tuple[int, int, float, str, str]:
    """Rows ``lo..hi``: the smallest of :func:`region_bound` and every relaxation's bound there, which won, and
    the relaxation's name when it relaxed the rows' private records (:mod:`redactopt.judge.relaxation`)."""
    own = region_bound(chain, eps, lo, hi, priv, tables)
    split = split_bound(chain, eps, lo, hi, priv) if _run_bounds_apply(chain, eps) else None
    if split is not None and split[0] < own[0]:  # the rows cut between their runs, each piece bounded alone
        own = (split[0], "run-split")
    bound, name, won = best_bound(lo, hi, own, relax, priv)
    return lo, hi, bound, name, _strict_label(won, [p for p in priv if lo <= p <= hi])


def _run_bounds_apply(chain: MarkovChain, eps: float) -> bool:
    """Where the run solver's tables serve (as :func:`region_bound`'s side tables: correlated records, a budget
    below the ceiling and within the tables' range)."""
    return chain.lam != 0.0 and eps < leakage_ceiling(chain, 1) and eps <= SOLVER_MAX_EPS


def _strict_label(won: Relaxation | None, mine: Sequence[int]) -> str:
    """The name of the relaxation that won, when it dropped some of the private records ``mine`` (else it is the
    problem itself: no name)."""
    if won is None or not mine:
        return ""
    if won.kind == "run" and won.private[0] <= mine[0] and mine[-1] <= won.private[-1]:
        return ""
    if won.kind == "record" and list(mine) == [won.private[0]]:
        return ""
    return won.label


def _block_regions(chain: MarkovChain, n: int, eps: float, priv: Sequence[int], parts: list[tuple[int, np.ndarray]],
                   relax: Sequence[Relaxation] = ()) -> tuple[list[tuple], float]:
    """Region certificates for the blocks of a design (each block with its two neighbours), each the smallest of
    its own bound and every relaxation's, and the whole sequence's bound they add up to.

    With relaxations, the regions are also tried widened to the rows of every relaxation that meets them
    (merged where they overlap): a relaxation bounds its own rows, so there its bound holds without the
    rows it was computed on counting one each.  The set of regions with the smaller total is kept; both
    are valid (disjoint rows, one per row outside them).
    """
    starts, blocks = merge_blocks(n, parts)
    rows = [(max(0, s - 1), min(n - 1, s + blk.shape[0])) for s, blk in zip(starts, blocks)]
    rows = [(lo, hi) for lo, hi in rows if any(lo <= p <= hi for p in priv)]
    options = [rows]
    if relax:
        options.append(_merged(rows + [(r.start, r.stop) for r in relax
                                       if any(r.start <= hi and lo <= r.stop for lo, hi in rows)]))
    tables: dict = {}
    best: tuple[list[tuple], float] | None = None
    for option in options:
        regions = [_relaxed(chain, eps, lo, hi, priv, tables, relax) for lo, hi in option]
        inside = sum(r[1] - r[0] + 1 for r in regions)
        total = round_up((math.fsum(r[2] for r in regions) + n - inside) / n, 2 * len(regions) + 2)
        if best is None or total < best[1]:
            best = (regions, total)
    assert best is not None
    return best


def _merged(rows: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Row ranges sorted and merged where they overlap or touch."""
    out: list[list[int]] = []
    for lo, hi in sorted(rows):
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return [(a, b) for a, b in out]


def _regions(chain: MarkovChain, n: int, eps: float, priv: Sequence[int],
             results: list[tuple[int, int, DesignResult]],
             relax: Sequence[Relaxation] = ()) -> tuple[list[tuple], float, str]:
    """Region certificates from per-record designs on windows, and the whole-sequence bound.

    Overlapping windows form one region.  Each region's bound is the smallest of
    :func:`region_bound` (its private records included) and every relaxation's: each member's window
    certificate (that record alone, :func:`_record_relaxations`) and ``relax``.  Rows outside every
    region count one each.
    """
    regions = []
    for lo, hi, res in sorted(results, key=lambda r: r[0]):
        if regions and lo <= regions[-1][1]:
            regions[-1][1] = max(regions[-1][1], hi)
        else:
            regions.append([lo, hi])
    relax = list(relax) + _record_relaxations(results)
    tables: dict = {}
    out = [_relaxed(chain, eps, lo, hi, priv, tables, relax) for lo, hi in regions]
    total = math.fsum(r[2] for r in out) + n - sum(r[1] - r[0] + 1 for r in out)
    return out, round_up(total / n, 2 * len(out) + 2), "regions"


def _whole_bound(n: int, priv: Sequence[int], bound: tuple[float, str],
                 relax: Sequence[Relaxation]) -> tuple[float, str, str]:
    """The whole sequence's bound: ``bound`` or a relaxation's carried to all ``n`` rows (rounded outward), and the
    relaxation's name when one won."""
    b, name, won = best_bound(0, n - 1, (bound[0] * n, bound[1]), relax, priv)
    if won is None:
        return bound[0], bound[1], ""
    return round_up(b / n, 4), name, _strict_label(won, priv)


class _Blocks:
    """A mechanism that is zero outside a few blocks of rows (see :class:`~redactopt.judge.certify.SparseRows`).

    Candidates of :func:`design_joint` are kept in this form: memory grows with the
    windows around the private records, never with ``n``.
    """

    def __init__(self, n: int, parts: list[tuple[int, np.ndarray]]) -> None:
        self.n = n
        self.starts, self.blocks = merge_blocks(n, parts)

    @staticmethod
    def of_windows(n: int, windows: list[tuple[int, int]]) -> "_Blocks":
        return _Blocks(n, [(L, np.ones((R - L + 1, 2))) for L, R in windows])

    @staticmethod
    def of_max(n: int, parts: list[tuple[int, int, np.ndarray]], priv: Sequence[int]) -> "_Blocks":
        b = _Blocks(n, [(lo, qb) for lo, _, qb in parts])
        for p in priv:
            i = int(np.searchsorted(b.starts, p, side="right")) - 1
            b.blocks[i][p - b.starts[i]] = 1.0
        return b

    def parts(self) -> list[tuple[int, np.ndarray]]:
        return list(zip(self.starts, self.blocks))

    def utility(self, pi: np.ndarray) -> float:
        return 1.0 - sum(float((b @ pi).sum()) for b in self.blocks) / self.n

    def improve(self, chain: MarkovChain, eps: float, priv: Sequence[int]) -> dict:
        """:func:`improve_locally` on every block (extended by its always-published neighbours), in place."""
        summary = {"records_changed": 0, "utility_gain": 0.0, "leakage_evaluations": 0}
        priv = tuple(sorted(priv))
        for s, blk in zip(self.starts, self.blocks):
            lo, ext, mine = extended_block(self.n, s, blk, priv)
            if not mine:
                continue
            _, part = improve_locally(chain, ext, eps=eps, private=[p - lo for p in mine], inplace=True)
            blk[:] = ext[s - lo : s - lo + blk.shape[0]]
            summary["records_changed"] += part["records_changed"]
            summary["utility_gain"] += part["utility_gain"] * ext.shape[0] / self.n
            summary["leakage_evaluations"] += part["leakage_evaluations"]
        return summary


def _combine_max_sparse(chain: MarkovChain, n: int, eps: float, priv: tuple[int, ...], method: str,
                        time_limit: float, options: dict | None = None) -> SparseDesign:
    results = _local_results(chain, n, eps, priv, method, time_limit, options=options)
    parts = [(lo, hi, np.asarray(res.redact_prob)) for lo, hi, res in results]
    blocks = _Blocks.of_max(n, parts, priv)
    name = method if len(priv) == 1 else f"max-{method}"
    stopped = False
    if chain.binary:
        regions, bound, solver = _regions(chain, n, eps, priv, results)
    else:  # the region bounds are built on the two-state side frontier: each record's window bound carried (§7c)
        regions, (bound, solver, stopped) = None, min(
            ((round_up(bound_on_rows(rx, 0, n - 1, priv) / n, 4), rx.solver, r.certificate.stopped)
             for lo, hi, r in results for rx in _record_relaxations([(lo, hi, r)])), key=lambda b: b[0])
    lemma2 = lemma2_upper_bound(chain, n, eps=eps, private=priv)
    if lemma2 <= bound:
        bound, solver, stopped = lemma2, "lemma2", False
    return finalize_sparse(chain, n, blocks.parts(), private=priv, eps=eps, method=name,
                           upper_bound=bound, solver=solver, regions=regions, stopped=stopped,
                           info={"per_record_method": method, "windows": [[lo, hi] for lo, hi, _ in parts]})


def combine_max(
    chain: MarkovChain,
    n: int,
    *,
    eps: float,
    private: object,
    method: str = "dim",
    time_limit: float = 60.0,
) -> DesignResult:
    """The paper's footnote 1: the elementwise maximum of per-record designs, verified exactly.

    Each private record (0-based) gets a design with ``method`` on a window
    (:func:`design_local`); the maximum is private by the post-processing argument of
    the module docstring, and :func:`~redactopt.judge.certify.finalize` checks every private
    record exactly on the whole sequence.
    """
    chain = _check_chain(chain)
    n = check_n(n)
    eps = check_eps(eps)
    priv = check_private(private, n)
    return _combine_max_sparse(chain, n, eps, priv, method, time_limit).to_result()


# --------------------------------------------------------------------------
# joint local improvement
# --------------------------------------------------------------------------
class _EdgeLeakage:
    r"""The leakage about private record ``p`` of a segment while only row ``t`` changes.

    ``t`` lies outside the group, so it is on ``p``'s outer side.  The other side's extremes
    (:func:`~redactopt.judge.leakage.side_extremes`) and the outer side's patterns that end
    before ``t`` (:func:`~redactopt.judge.leakage.side_pattern_products`, Appendix B's
    recursion) do not depend on row ``t``: they are computed once, and each evaluation runs
    the recursion from ``t`` to the segment's end only (O(distance from ``t`` to the end)
    instead of O(segment)).  The same patterns and ratios as :func:`leakage`; it serves
    bisections only (the improvement is accepted after a check by :func:`leakage` itself).
    """

    def __init__(self, chain: MarkovChain, seg: np.ndarray, p: int, t: int,
                 other_logs: tuple[float, float] | None = None) -> None:
        if t < p:
            near, other, j = seg[:p][::-1], seg[p + 1 :], p - 1 - t
        else:
            near, other, j = seg[p + 1 :], seg[:p][::-1], t - p - 1
        if other_logs is None:
            o = side_extremes(chain, other)
            other_logs = (math.log(o.top[0]), -math.log(o.bottom[0]))
        self.other = other_logs  # the side away from t (unchanged while only row t changes)
        self.near, self.j = near, j  # views: row t of seg is near[j]
        self.P = chain.transition_matrix
        blocked = np.flatnonzero(near[:j].max(axis=1) <= 0.0)
        self.open = not blocked.size  # every row before t can be ⊥: patterns reach t
        last = j if self.open else int(blocked[0])  # patterns 0..last-1 end before t (and last if blocked)
        F, _ = side_pattern_products(chain, near, last)
        K = last if self.open else last + 1
        ratio = F[:K, 0, :] / F[:K, 1, :]
        ok = near[:K] < 1.0
        self.hi0 = float(ratio[ok].max()) if ok.any() else -math.inf
        self.lo0 = float(ratio[ok].min()) if ok.any() else math.inf
        self.Fj = F[j] if self.open else None

    def value(self) -> float:
        hi, lo = self.hi0, self.lo0
        if self.open:
            P = self.P
            f = self.Fj
            rows = self.near[self.j :]
            m = rows.shape[0]
            for k in range(m):
                q0, q1 = float(rows[k, 0]), float(rows[k, 1])
                for v, qv in ((0, q0), (1, q1)):
                    if qv < 1.0:
                        r = float(f[0, v] / f[1, v])
                        hi, lo = max(hi, r), min(lo, r)
                if max(q0, q1) <= 0.0:
                    break
                if k == m - 1:  # every record of the side ⊥
                    r = float((f[0, 0] * q0 + f[0, 1] * q1) / (f[1, 0] * q0 + f[1, 1] * q1))
                    hi, lo = max(hi, r), min(lo, r)
                    break
                g = (f * np.array([q0, q1])) @ P
                f = g / g.max()
        if not hi > -math.inf:  # no pattern on this side: ratio 1
            hi = lo = 1.0
        return max(0.0, math.log(hi) + self.other[0], -math.log(lo) + self.other[1])


class _SegmentCheck:
    """Exact leakage check of a group of private records on its segment.

    ``quick`` checks the records most likely to bind (the ends of the group and any
    record that failed before); ``full`` checks every record.  Bisection runs on
    ``quick``; its result is accepted only after ``full`` passes, else the failing record
    joins the quick set and the bisection is repeated.  With :meth:`focus` on row ``t``
    (the only row that changes) both evaluate by :class:`_EdgeLeakage`, otherwise (and
    with ``exact``) by :func:`leakage`.
    """

    def __init__(self, chain: MarkovChain, eps: float, lo: int, members: list[int]) -> None:
        self.chain, self.eps, self.lo = chain, eps, lo
        self.members = list(members)
        self.binding = sorted({members[0], members[-1]})
        self.evaluations = 0
        self._t: int | None = None
        self._edge: dict[int, _EdgeLeakage] = {}
        self._side: bool | None = None
        self._others: dict[int, tuple[float, float]] = {}

    def focus(self, t: int | None) -> None:
        """Only row ``t`` (absolute index) changes until the next call (``None``: any row).

        Rows change on one side of the group at a time: while the focus stays on that side,
        each private record's other side is unchanged and its extremes are kept."""
        side = None if t is None else t < self.members[0]
        if side is not None and side != self._side:
            self._others = {}
        if side is not None:
            self._side = side
        self._t, self._edge = t, {}

    def _fails(self, seg: np.ndarray, p: int, exact: bool = False) -> bool:
        self.evaluations += 1
        budget = safe_budget(self.eps, seg.shape[0])
        if exact or self._t is None:
            return leakage(self.chain, seg, p - self.lo).leakage > budget
        if p not in self._edge:
            edge = _EdgeLeakage(self.chain, seg, p - self.lo, self._t - self.lo, self._others.get(p))
            self._others[p] = edge.other
            self._edge[p] = edge
        return self._edge[p].value() > budget

    def quick(self, seg: np.ndarray) -> bool:
        for i, p in enumerate(self.binding):
            if self._fails(seg, p):
                if i:
                    self.binding.insert(0, self.binding.pop(i))
                return False
        return True

    def full(self, seg: np.ndarray, exact: bool = False) -> bool:
        for p in self.binding + [p for p in self.members if p not in self.binding]:
            if self._fails(seg, p, exact=exact):
                if p in self.binding:
                    self.binding.remove(p)
                self.binding.insert(0, p)
                return False
        return True


def _lower(seg: np.ndarray, t: int, v: int, ok: _SegmentCheck, steps: int) -> float:
    """Lower ``seg[t, v]`` to (almost) the smallest value that passes the exact check.

    Returns the decrease (0 when nothing could be gained); ``seg`` is left valid.
    """
    cur = float(seg[t, v])
    if cur <= 0.0:
        return 0.0
    while True:
        seg[t, v] = 0.0
        if ok.quick(seg):
            hi = 0.0
        else:
            def passes(x: float) -> bool:
                seg[t, v] = x
                return ok.quick(seg)

            hi = bisect_boundary(passes, cur, 0.0, steps=steps)
            # Stay clear of finalize's snapping to 0 (a value it would round down is not checked).
            hi = max(hi, min(cur, 4e-9))
        if hi >= cur:
            seg[t, v] = cur
            return 0.0
        seg[t, v] = hi
        if ok.full(seg):
            return cur - hi
        seg[t, v] = cur  # a record outside the quick set binds: it is in the set now


def improve_locally(
    chain: MarkovChain,
    redact_prob: object,
    *,
    eps: float,
    private: object,
    max_records: int = 8,
    steps: int = 30,
    inplace: bool = False,
) -> tuple[np.ndarray, dict]:
    """Lower redaction probabilities at the edges of each cluster while the exact leakage allows.

    For every group of private records (0-based) sharing a stretch between two
    always-published records, walk inwards from each end of the stretch: at each
    record try both values, lowering the one with the larger utility gain first (each
    to the end of its feasible interval, by bisection with the exact leakage evaluated
    incrementally, :class:`_EdgeLeakage`), and stop a side after ``max_records``
    records or at the first record that gains nothing.  Each group's result is checked
    with :func:`leakage` on every private record (else the group keeps its start).  Returns the new ``(n, 2)`` array and a summary; the caller must still
    pass it through :func:`~redactopt.judge.certify.finalize`.  With ``inplace`` a float
    array is modified instead of copied (long sequences).
    """
    chain = _check_chain(chain)
    eps = check_eps(eps)
    if inplace and isinstance(redact_prob, np.ndarray) and redact_prob.dtype == float and redact_prob.flags.writeable:
        q = redact_prob
    else:
        q = np.array(redact_prob, dtype=float)
    priv = check_private(private, q.shape[0])
    pi = chain.stationary
    gained = 0.0
    evaluations = 0
    changed = 0
    for lo, hi, members in segment_groups(q, priv):
        seg = q[lo : hi + 1]  # a view: edits land in q
        ok = _SegmentCheck(chain, eps, lo, members)
        if not ok.full(seg, exact=True):  # the start must itself be valid
            raise PrivacyCheckError("improve_locally: the starting design is above eps")
        initial = seg.copy()
        seg_gain, seg_changed = 0.0, 0
        first, last = members[0], members[-1]
        for start, inward in ((lo, 1), (hi, -1)):
            t = start
            if not seg[t - lo].any():
                t += inward  # the always-published row that bounds the stretch
            for _ in range(max_records):
                if not (lo <= t <= hi) or first <= t <= last:
                    break
                ok.focus(t)
                # Lower each value alone, then apply them in the order of the larger gain.
                trial = []
                for v in (0, 1):
                    saved = seg[t - lo].copy()
                    trial.append((_lower(seg, t - lo, v, ok, steps) * pi[v], v))
                    seg[t - lo] = saved
                trial.sort(reverse=True)
                gain_here = sum(_lower(seg, t - lo, v, ok, steps) * pi[v] for _, v in trial)
                ok.focus(None)
                if gain_here <= 1e-15:
                    break
                seg_gain += gain_here
                seg_changed += 1
                t += inward
        if ok.full(seg, exact=True):
            gained += seg_gain
            changed += seg_changed
        else:  # the incremental evaluator misjudged (it never has): keep the start
            seg[:] = initial
        evaluations += ok.evaluations
    return q, {"records_changed": changed, "utility_gain": gained / q.shape[0], "leakage_evaluations": evaluations}


# --------------------------------------------------------------------------
# the entry point
# --------------------------------------------------------------------------
def design_joint(
    chain: MarkovChain | ChainClass,
    n: int,
    *,
    eps: float,
    private: object,
    method: str = "auto",
    improve: bool = True,
    time_limit: float = 60.0,
    target_gap: float = 1e-4,
) -> DesignResult:
    r"""Design a mechanism whose exact leakage about **every** private record is at most ``eps``.

    Parameters
    ----------
    chain : MarkovChain
    n : int
        Number of records (may be large: designs are computed on windows, see
        :func:`design_local`; for very long sequences :func:`design_joint_sparse` avoids
        the dense ``(n, 2)`` array).
    eps : float
        Privacy budget (nats), for each private record.
    private : int or sequence of int
        0-based indices of the private records.
    method : str
        ``"auto"`` (default): the best of the joint data-independent windows
        (:func:`joint_dim`), the footnote's maximum of per-record exact DIM windows,
        for at most three private records of per-record calibrated 3R designs, and —
        where private records form runs of adjacent records — each run's design by the
        run decomposition (:mod:`redactopt.engine.runs`, on a coarse grid) with the other
        records' DIM windows; then :func:`improve_locally`.  ``"optimal"``: each run's certified
        design (refined to ``target_gap``) and every other private record's optimum, combined by
        the footnote's maximum, *and* every candidate of ``"auto"``, the more useful (so never
        worse than the default), certified by the smallest of their bounds.  Any other method
        of :func:`redactopt.engine.design.design` (``"dim"``, ``"3r-calibrated"``, ...):
        per-record designs on windows combined by the footnote's maximum (:func:`combine_max`).
    improve : bool
        Run the joint local improvement (``method="auto"`` and ``"optimal"``) on the best candidate it
        can start from (one whose leakage sits within rounding of ``eps`` cannot be; the next can).
    time_limit : float
        Seconds per optimiser call of :func:`redactopt.engine.design.design`.
    target_gap : float
        ``method="optimal"``: the utility per record of a run's window at which the run solver
        stops refining its bound (:func:`redactopt.solvers.runs.run_analysis`).

    Returns
    -------
    DesignResult
        Built by :func:`~redactopt.judge.certify.finalize` with ``private`` = all private
        records: the exact leakage is the worst over them and never above ``eps``.  The
        certificate is the smallest valid bound found for the whole sequence (scope ``"all"``):
        Lemma 2's, the regions', and those of problems with fewer private records — each run's,
        each record's window bound (a relaxation, docs/mathematics.md §7c; ``info["bound_relaxation"]``
        names the one that won); ``info["runs"]`` describes each run's design and bound.
    """
    res = _design_joint(chain, n, eps=eps, private=private, method=method, improve=improve,
                        time_limit=time_limit, dense=True, target_gap=target_gap)
    assert isinstance(res, DesignResult)
    return res


def design_joint_sparse(
    chain: MarkovChain | ChainClass,
    n: int,
    *,
    eps: float,
    private: object,
    method: str = "auto",
    improve: bool = True,
    time_limit: float = 60.0,
    target_gap: float = 1e-4,
) -> SparseDesign:
    """:func:`design_joint` with time and memory independent of ``n`` (for releases).

    Same candidates and parameters; the result is a :class:`~redactopt.judge.certify.SparseDesign`
    (blocks around the private records, zero elsewhere) verified exactly by
    :func:`~redactopt.judge.certify.finalize_sparse` on each block extended by its
    always-published neighbours, which is exact for the whole sequence.
    """
    res = _design_joint(chain, n, eps=eps, private=private, method=method, improve=improve,
                        time_limit=time_limit, dense=False, target_gap=target_gap)
    assert isinstance(res, SparseDesign)
    return res


def _design_joint_class(chain_class: ChainClass, n: int, *, eps: float, private: object, method: str,
                        improve: bool, time_limit: float, dense: bool,
                        target_gap: float = 1e-4) -> SparseDesign | DesignResult:
    """:func:`design_joint_sparse` private for every chain of a class.

    At each deciding chain of the class a sparse design; their blocks merged by elementwise
    maximum (private for each chain: redacting more is post-processing), verified exactly at
    every deciding chain; with one deciding chain (every box on one side of alpha + beta = 1)
    that is the point design there.  Utility and certificates are stated at the class's
    **nominal** chain (:func:`~redactopt.judge.classes.nominal_bound`: Lemma 2 over the class, or
    a deciding chain's bound carried over, for the whole sequence and region by region).
    """
    deciding = chain_class.deciding()
    designs = [_design_joint(c, n, eps=eps, private=private, method=method, improve=improve,
                             time_limit=time_limit, dense=False, target_gap=target_gap) for c in deciding]
    base = designs[0]
    parts = [(s, b) for d in designs for s, b in zip(d.redact_prob.starts, d.redact_prob.blocks)]
    info = dict(base.info, chain_class=chain_class.to_dict(),
                point_optima=[{"alpha": c.alpha, "beta": c.beta, "utility": d.utility,
                               "upper_bound": d.certificate.upper_bound, "solver": d.certificate.solver}
                              for c, d in zip(deciding, designs)])
    priv = base.private
    bound = nominal_bound(chain_class, n, eps=eps, private=priv,
                          point_bounds=[(c, d.certificate.upper_bound, d.certificate.solver)
                                        for c, d in zip(deciding, designs)])
    regions = None
    if len(designs) == 1:  # the point design's regions, each bound carried to the nominal chain
        regions = []
        for r in base.regions:
            m = r.stop - r.start + 1
            mine = [p - r.start for p in priv if r.start <= p <= r.stop]
            b, name = nominal_bound(chain_class, m, eps=eps, private=mine,
                                    point_bounds=[(deciding[0], r.upper_bound / m, r.solver)])
            regions.append((r.start, r.stop, m * b, name))
        inside = sum(r.stop - r.start + 1 for r in base.regions)
        total = round_up((math.fsum(b for *_, b, _ in regions) + n - inside) / n, 2 * len(regions) + 2)
        if total < bound[0]:
            bound = (total, "regions")
    sparse = finalize_sparse(chain_class.nominal, n, parts, private=priv, eps=eps, method=base.method,
                             upper_bound=bound[0], solver=bound[1], info=info, regions=regions,
                             chain_class=chain_class)
    return sparse.to_result() if dense else sparse


#: Chains of more than two states: what each joint method designs per private record (footnote 1).
STATES_JOINT = {"auto": "optimal", "optimal": "optimal", "dim": "dim", "local": "local", "global": "global"}


def _design_joint_states(chain: Chain, n: int, *, eps: float, private: object, method: str, time_limit: float,
                         dense: bool, options: dict | None = None) -> SparseDesign | DesignResult:
    r"""Several private records on a chain of more than two states: the paper's footnote 1.

    Each private record gets its design on a window (:func:`_combine_max_sparse`; ``auto`` and
    ``optimal``: the ``optimal`` portfolio, ``dim``, ``local``, ``global``: that method); their
    elementwise maximum is private about each record (post-processing) and is verified exactly about
    each.  The joint windows and the local improvement of ``auto`` are built on the two-state closed
    forms.  Certificate: a mechanism private about every record is private about each, so each
    record's window bound carried to ``n`` records, and Lemma 2 over all of them, bound it.
    """
    n, eps = check_n(n), check_eps(eps)
    priv = check_private(private, n)
    if method not in STATES_JOINT:
        raise ValueError(f"method {method!r} has no form for {chain.k}-state chains; several private records "
                         f"take {', '.join(STATES_JOINT)}")
    sparse = _combine_max_sparse(chain, n, eps, priv, STATES_JOINT[method], time_limit, options)
    return sparse.to_result() if dense else sparse


#: Release designs on chains of more than two states, ``auto``: the per-record optima (successive LPs, SCIP on
#: the smallest) are tried after the joint window only on sub-problems of at most this many cells (records
#: times states), where they take a second or two; beyond, their linear programmes grow with the window
#: (k = 6, a window of 129 records: a minute per record, and no better than the window on the issue-37 table).
STATES_AUTO_CELLS = 64

#: Below this many seconds left after the joint window, the per-record optima are not started.
STATES_MIN_SPEND = 0.5

#: ``auto``: seconds per private record of the per-record optima on those small sub-problems (a safety limit: the
#: count of steps below ends them first).
STATES_AUTO_SECONDS = 10.0

#: ``auto``: trust-region steps of each per-record local design (:func:`redactopt.solvers.klocal.propose_klocal`'s
#: ``max_iter``) on those small sub-problems: a budget of work, so the design does not depend on the time taken.
STATES_AUTO_STEPS = 150

#: Kept for old imports: ``auto`` no longer counts private records (it is fast first, issue 37).
STATES_AUTO_OPTIMAL_MAX = 4

#: The methods of :func:`design_states_release`.
STATES_RELEASE_METHODS = ("auto", "dim", "optimal")

#: A release design's target gap in expected records of its sub-problem: ``auto`` stops at the joint window
#: once its certificate is within it (the same figure as :data:`redactopt.engine.cache.RELEASE_RUN_GAP`).
STATES_TARGET_GAP_RECORDS = 0.5


def _states_dim(chain: Chain, n: int, eps: float, priv: tuple[int, ...]) -> SparseDesign:
    """The joint data-independent windows of a k-state release, verified, bounded by Lemma 2 (the cheap candidate)."""
    from redactopt.solvers.dim import dim_windows  # the window solver of every chain

    q = dim_windows(chain, n, eps=eps, private=priv)
    q[list(priv)] = 1.0
    rows = np.flatnonzero(q.max(axis=1) > 0.0)
    runs = np.split(rows, np.flatnonzero(np.diff(rows) > 1) + 1) if rows.size else []
    parts = [(int(r[0]), q[r[0]: r[-1] + 1]) for r in runs]
    return finalize_sparse(chain, n, parts, private=priv, eps=eps, method="dim",
                           upper_bound=lemma2_upper_bound(chain, n, eps=eps, private=priv), solver="lemma2",
                           info={"per_record_method": "dim", "source": "the exact data-independent window per "
                                                                     "cluster of private records"})


def _with_fast_first(d: SparseDesign, note: str) -> SparseDesign:
    """``d`` with where ``auto`` stopped in its ``info`` (its method stays the one that designed it)."""
    return dataclasses.replace(d, info=dict(d.info, fast_first=note))


def design_states_release(chain: Chain, n: int, *, eps: float, private: object, method: str = "auto",
                          time_limit: float = 60.0) -> SparseDesign:
    """The release design of several private records on a chain of more than two states, verified.

    Fast first (issue 37).  ``dim``: one exact data-independent window per cluster of private records
    whose windows overlap (:func:`redactopt.solvers.dim.dim_windows`: every member within the budget,
    Lemma 1), verified exactly about each record and bounded by Lemma 2 -- linear in the window.
    ``auto`` (the release default): that design, and it stops there when its certificate is within
    :data:`STATES_TARGET_GAP_RECORDS` expected records of the sub-problem, or when the per-record optima
    would be expensive (more than :data:`STATES_AUTO_CELLS` records times states); otherwise it also
    designs each private record's local optimum on its window (the successive LPs, no SCIP: its proposal
    depends on how far it got in its time, and a seeded release must draw the same file whatever the
    machine's load), their elementwise maximum (footnote 1), and keeps the more useful of the two verified
    designs with the smaller of the two bounds.
    ``optimal``: both, always, the per-record optima from the whole portfolio (SCIP included), within
    ``time_limit`` seconds altogether.  So ``optimal`` is never below
    ``auto`` and ``auto`` never below ``dim``; every design returned is verified exactly by
    :func:`~redactopt.judge.certify.finalize_sparse`.  ``info["fast_first"]`` says where it stopped.
    """
    n, eps = check_n(n), check_eps(eps)
    priv = check_private(private, n)
    if method not in STATES_RELEASE_METHODS:
        raise ValueError(f"method must be one of {', '.join(STATES_RELEASE_METHODS)}, got {method!r}")
    t0 = time.monotonic()
    cheap = _states_dim(chain, n, eps, priv)
    if method == "dim":
        return cheap
    gap = cheap.certificate.gap * n
    if method == "auto":
        if gap <= STATES_TARGET_GAP_RECORDS:
            return _with_fast_first(cheap, f"the joint window's certificate is within "
                                                   f"{STATES_TARGET_GAP_RECORDS:g} records (gap {gap:.3g})")
        if n * chain.k > STATES_AUTO_CELLS:
            return _with_fast_first(cheap, f"stopped at the joint window (gap {gap:.3g} records): the "
                                                   f"per-record optima on {n} records x {chain.k} states are not "
                                                   "cheap (--method optimal spends on them)")
    left = time_limit - (time.monotonic() - t0)
    if left < STATES_MIN_SPEND:  # out of time after the cheap candidate: it stands, and says where it stopped
        return dataclasses.replace(_with_fast_first(cheap, f"stopped by the time limit at the joint window (gap "
                                                           f"{gap:.3g} records)"),
                                   certificate=dataclasses.replace(cheap.certificate, stopped=True))
    per_method, options = "optimal", None
    if method == "auto":  # cheap by size, and kept so by a count of steps, not by the clock: what a design
        # stopped by its time holds depends on the machine's load, and a seeded release must draw the same file
        # on any machine (the time limit stays a limit, reached only on an overloaded one)
        left = min(left, STATES_AUTO_SECONDS * len(priv))
        per_method, options = "local", {"max_iter": STATES_AUTO_STEPS}
    per = _design_joint_states(chain, n, eps=eps, private=priv, method=per_method, time_limit=left, dense=False,
                               options=options)
    assert isinstance(per, SparseDesign)
    best, other = (per, cheap) if per.utility > cheap.utility else (cheap, per)
    bound, solver = min((c.certificate.upper_bound, c.certificate.solver) for c in (best, other))
    rows = best.redact_prob
    stopped = per.certificate.stopped or (time.monotonic() - t0 > time_limit)
    name = per.method if best is per else "dim"
    info = dict(best.info, candidates={"dim": cheap.utility, f"per-record {per_method}": per.utility},
                fast_first=f"the joint window (gap {gap:.3g} records), then the per-record optima")
    return finalize_sparse(chain, n, list(zip(rows.starts, rows.blocks)), private=priv, eps=eps, method=name,
                           upper_bound=bound, solver=solver, stopped=stopped, info=info)


def _run_windows(chain: MarkovChain, n: int, eps: float, priv: Sequence[int], time_limit: float,
                 target_gap: float, grid: int | None) -> list[RunWindow]:
    """Every run of two or more adjacent private records designed on its window (:mod:`redactopt.engine.runs`)."""
    return [design_run_window(chain, n, eps=eps, first=f, last=l, time_limit=time_limit, target_gap=target_gap,
                              grid=grid) for f, l in private_runs(priv) if l > f]


def _singletons(priv: Sequence[int]) -> tuple[int, ...]:
    """The private records that are runs of one (no private neighbour)."""
    return tuple(f for f, l in private_runs(priv) if l == f)


def _combine_runs_sparse(chain: MarkovChain, n: int, eps: float, priv: tuple[int, ...], time_limit: float,
                         target_gap: float) -> tuple[SparseDesign, list[RunWindow], list[Relaxation]]:
    """``method="optimal"``'s own candidate: each run of two or more private records its certified run design
    (the run decomposition, refined to ``target_gap``), each other private record its optimum on its window,
    combined by the footnote's maximum (private about every record: post-processing).  Certified by the
    smallest of Lemma 2, the regions and every run's and record's window bound (relaxations)."""
    windows = _run_windows(chain, n, eps, priv, time_limit, target_gap, None)
    singles = _singletons(priv)
    results = _local_results(chain, n, eps, singles, "optimal", time_limit) if singles else []
    relax = _run_relaxations(windows) + _record_relaxations(results)
    parts = [(w.lo, w.hi, w.block) for w in windows] + [(lo, hi, np.asarray(r.redact_prob)) for lo, hi, r in results]
    blocks = _Blocks.of_max(n, parts, priv)
    regions, total = _block_regions(chain, n, eps, priv, blocks.parts(), relax)
    bound, solver, won = _whole_bound(n, priv, (total, "regions"), relax)
    lemma2 = lemma2_upper_bound(chain, n, eps=eps, private=priv)
    if lemma2 <= bound:
        bound, solver, won = lemma2, "lemma2", ""
    stopped = any(w.result.certificate.stopped for w in windows) or any(r.certificate.stopped for *_, r in results)
    info = {"per_record_method": "optimal", "runs": [_run_info(w) for w in windows],
            "windows": [[lo, hi] for lo, hi, _ in parts]}
    if won:
        info["bound_relaxation"] = won
    name = "max-optimal" if len(priv) > 1 else "optimal"
    design = finalize_sparse(chain, n, blocks.parts(), private=priv, eps=eps, method=name, upper_bound=bound,
                             solver=solver, regions=regions, stopped=stopped, info=info)
    return design, windows, relax


def _run_info(w: RunWindow) -> dict:
    """What a report says about a run's window design (1-based rows)."""
    c, info = w.result.certificate, w.result.info
    first, last = w.lo + w.result.private[0], w.lo + w.result.private[-1]
    return {"private": [first + 1, last + 1], "window": [w.lo + 1, w.hi + 1], "utility": w.result.utility,
            "published": w.result.utility * (w.hi - w.lo + 1), "upper_bound": c.upper_bound * (w.hi - w.lo + 1),
            "solver": c.solver, "relaxation": _strict_label(w.relaxation, list(range(first, last + 1))),
            "grid": info.get("grid"),
            "table_gap": info.get("table_gap"),
            "target_gap": info.get("target_gap") if math.isfinite(info.get("target_gap") or math.inf) else None,
            "status": info.get("solver_status")}


def _best_of_optimal_and_auto(chain: MarkovChain, n: int, eps: float, priv: tuple[int, ...], improve: bool,
                              time_limit: float, target_gap: float) -> SparseDesign:
    """``method="optimal"``: its own candidate (:func:`_combine_runs_sparse`: run designs and per-record optima)
    *and* every candidate of ``"auto"`` (given the same run designs), the more useful verified design (ties:
    the first), certified by the smallest bound either found — each bounds every mechanism private about all
    the private records — so that ``optimal`` is never worse than the default."""
    own, windows, relax = _combine_runs_sparse(chain, n, eps, priv, time_limit, target_gap)
    auto = _auto_sparse(chain, n, eps, priv, improve, time_limit, windows, relax)
    best = auto if auto.utility > own.utility else own
    rows = best.redact_prob
    parts = list(zip(rows.starts, rows.blocks))
    regions, total = _block_regions(chain, n, eps, priv, parts, relax)
    bounds = [(own.certificate.upper_bound, own.certificate.solver, own.info.get("bound_relaxation", "")),
              (auto.certificate.upper_bound, auto.certificate.solver, auto.info.get("bound_relaxation", "")),
              _whole_bound(n, priv, (total, "regions"), relax)]
    bound, solver, won = min(bounds, key=lambda b: b[0])
    label = "the per-record optima" if len(priv) > 1 else "optimal on its window"
    if windows:
        label = "the run designs" + (" and per-record optima" if _singletons(priv) else "")
    info = dict(best.info, source=("auto: " + str(auto.info.get("source"))) if best is auto else label,
                candidates={own.method: own.utility, "auto": auto.utility}, runs=own.info.get("runs", []))
    info.pop("bound_relaxation", None)
    if won:
        info["bound_relaxation"] = won
    stopped = own.certificate.stopped if bound == own.certificate.upper_bound else False
    return finalize_sparse(chain, n, parts, private=priv, eps=eps, method="optimal", upper_bound=bound,
                           solver=solver, info=info, regions=regions, stopped=stopped)


def _auto_makers(chain: MarkovChain, n: int, eps: float, priv: tuple[int, ...], time_limit: float,
                 windows: Sequence[RunWindow]) -> dict:
    """``auto``'s candidates as block makers (each private by construction, see the module docstring)."""
    makers = {
        "joint-dim": lambda: _Blocks.of_windows(n, _joint_windows(chain, n, eps, priv)),
        "max-dim": lambda: _Blocks.of_max(n, _local_parts(chain, n, eps, priv, "dim", time_limit), priv),
    }
    if windows:  # each run its run design, every other private record its DIM window
        singles = _singletons(priv)
        makers["max-run"] = lambda: _Blocks.of_max(
            n, [(w.lo, w.hi, w.block) for w in windows]
            + (_local_parts(chain, n, eps, singles, "dim", time_limit) if singles else []), priv)
    if len(priv) <= AUTO_CALIBRATED_MAX:
        makers["max-3r-calibrated"] = lambda: _Blocks.of_max(
            n, _local_parts(chain, n, eps, priv, "3r-calibrated", time_limit, split="half"), priv)
    return makers


def _auto_tries(chain: MarkovChain, eps: float, priv: tuple[int, ...], built: dict, utilities: dict, improve: bool,
                info: dict, n: int) -> list[tuple[str, list[tuple[int, np.ndarray]]]]:
    """The candidates in the order they are tried: by utility, each improved one (:func:`improve_locally`,
    from every start it accepts) before the ones it equals."""
    order = sorted(utilities, key=lambda k: -utilities[k])
    if not improve:
        return [(k, built[k].parts()) for k in order]
    pi = chain.stationary
    skipped, ranked = {}, [(utilities[k], 1, k, built[k].parts()) for k in order]
    for i, name in enumerate(order):
        _progress.report("improve", i, len(order), note=name)
        blocks = _Blocks(n, [(s, b.copy()) for s, b in built[name].parts()])
        try:
            info.setdefault("improvement", {})[name] = blocks.improve(chain, eps, priv)
        except PrivacyCheckError as exc:
            skipped[name] = str(exc)
            continue
        ranked.append((blocks.utility(pi), 0, "improved " + name, blocks.parts()))
    _progress.report("improve", len(order), len(order))
    if skipped:
        info.setdefault("improvement", {})["skipped"] = skipped
    return [(name, parts) for _, _, name, parts in sorted(ranked, key=lambda r: (-r[0], r[1]))]


def _auto_sparse(chain: MarkovChain, n: int, eps: float, priv: tuple[int, ...], improve: bool, time_limit: float,
                 windows: Sequence[RunWindow] | None = None, relax: Sequence[Relaxation] | None = None,
                 dense: bool = False) -> SparseDesign:
    """``method="auto"``: every candidate of :func:`_auto_makers` (the runs designed on a coarse grid unless
    ``windows`` are given), improved, the best one that passes the exact check (with ``dense`` also on all
    ``n`` records); certified by the smallest of Lemma 2, every candidate's regions and the relaxations (the
    runs' window bounds, ``relax``)."""
    t0 = time.perf_counter()
    if windows is None:
        with _progress.phase("run windows", sub=True):
            windows = _run_windows(chain, n, eps, priv, time_limit, math.inf, RUN_AUTO_GRID)
    relax = list(_run_relaxations(windows) if relax is None else relax)
    pi = chain.stationary
    errors: dict[str, str] = {}
    utilities: dict[str, float] = {}
    built: dict[str, _Blocks] = {}
    makers = _auto_makers(chain, n, eps, priv, time_limit, windows)
    for i, (name, make) in enumerate(makers.items()):
        _progress.report("candidates", i, len(makers), note=name)
        try:
            with _progress.phase("candidates", sub=True):
                built[name] = make()
        except PrivacyCheckError as exc:
            errors[name] = str(exc)
            continue
        utilities[name] = built[name].utility(pi)
    if not built:
        raise PrivacyCheckError("no candidate design: " + "; ".join(errors.values()))
    info: dict = {"candidates": utilities, "start": max(utilities, key=lambda k: utilities[k])}
    if errors:
        info["failed"] = errors
    if windows:
        info["runs"] = [_run_info(w) for w in windows]
    _progress.report("candidates", len(makers), len(makers))
    with _progress.phase("improve", sub=True):
        tries = _auto_tries(chain, eps, priv, built, utilities, improve, info, n)
    # every candidate's region certificates bound every private mechanism (they depend on the
    # regions' geometry only): the smallest total certifies whichever candidate is returned
    certified = []
    with _progress.phase("bounds", sub=True):
        for i, (name, parts) in enumerate(tries):
            _progress.report("bounds", i, len(tries), note=name)
            certified.append(_block_regions(chain, n, eps, priv, parts, relax))
        _progress.report("bounds", len(tries), len(tries))
    total = min(t for _, t in certified)
    best_bound_, solver, won = _whole_bound(n, priv, (total, "regions"), relax)
    bound = lemma2_upper_bound(chain, n, eps=eps, private=priv)
    if bound <= best_bound_:
        best_bound_, solver, won = bound, "lemma2", ""
    if won:
        info["bound_relaxation"] = won
    failures = []
    for (name, parts), (regions, _) in zip(tries, certified):
        info["source"] = name
        info["seconds"] = time.perf_counter() - t0
        try:
            sparse = finalize_sparse(chain, n, parts, private=priv, eps=eps, method="auto", upper_bound=best_bound_,
                                     solver=solver, info=dict(info), regions=regions)
            if dense:
                sparse.to_result()  # verified on all n records too, or the next candidate
            return sparse
        except PrivacyCheckError as exc:
            failures.append(f"{name}: {exc}")
    raise PrivacyCheckError("no candidate passed the exact check: " + "; ".join(failures))


def _design_joint(chain: MarkovChain | ChainClass, n: int, *, eps: float, private: object, method: str,
                  improve: bool, time_limit: float, dense: bool,
                  target_gap: float = 1e-4) -> SparseDesign | DesignResult:
    """Both entry points; with ``dense`` each accepted candidate is also re-verified on all
    ``n`` records (:meth:`~redactopt.judge.certify.SparseDesign.to_result`), and a candidate that
    fails there makes way for the next one, like one that fails on its blocks."""
    if isinstance(chain, ChainClass):
        return _design_joint_class(chain, n, eps=eps, private=private, method=method, improve=improve,
                                   time_limit=time_limit, dense=dense, target_gap=target_gap)
    if isinstance(chain, Chain) and not chain.binary:
        return _design_joint_states(chain, n, eps=eps, private=private, method=method, time_limit=time_limit,
                                    dense=dense)
    chain = _check_chain(chain)
    n = check_n(n)
    eps = check_eps(eps)
    priv = check_private(private, n)
    if method not in JOINT_METHODS:
        raise ValueError(f"method must be one of {', '.join(JOINT_METHODS)}, got {method!r}")
    if method == "optimal":
        sparse = _best_of_optimal_and_auto(chain, n, eps, priv, improve, time_limit, target_gap)
    elif method != "auto":
        sparse = _combine_max_sparse(chain, n, eps, priv, method, time_limit)
    else:
        sparse = _auto_sparse(chain, n, eps, priv, improve, time_limit, dense=dense)
    return sparse.to_result() if dense else sparse
