"""Planning a release: which records are private, the chain, and one verified design per group of private records.

:func:`plan_release` fits the chain from the scan (unless alpha and beta are given),
splits every sequence's private records into *groups* and places one verified design
(:class:`~redactopt.engine.cache.Shape`) around each group.  The designs come from
:func:`redactopt.engine.joint.design_joint_sparse` on small sub-problems, one per
:class:`~redactopt.engine.cache.DesignKey`, shared by every group with the same key
(:class:`~redactopt.engine.cache.DesignCache`) and computed in parallel (a process pool,
or Dask on a cluster); placing one in a sequence is exact (the cut and the all-⊥ extension,
:mod:`redactopt.engine.cache`).

**Which design a group gets.**  A group is a run of private records with offsets ``o``
(from its first one), ``d_l`` records before it and ``d_r`` after it.  Its candidates:

* *far*: the key ``(o, D, D)`` with ``D`` the first of :func:`~redactopt.engine.cache.far_start`,
  twice that, ... (at most :data:`FAR_DOUBLINGS` doublings) whose design publishes both of
  its ends with certainty — where nothing can leak any more, derived from the design
  itself; it fits every group with ``d_l >= need_left`` and ``d_r >= need_right``;
* *wipe-left* ``(o, 0, D)`` when ``d_l < D``: every record before the group redacted (the
  all-⊥ extension), the right side designed; *wipe-right* ``(o, D, 0)`` when ``d_r < D``;
* *exact* ``(o, d_l, d_r)`` — the group's own sequence — only when none of these fits (a
  short sequence), or when no far design was found; on a chain of more than two states also at
  once when ``d_l + d_r < 2 D`` for the first ``D`` (its designs cost their length: the exact one
  is then the smallest).

The group gets the candidate that fits (:meth:`~redactopt.engine.cache.Shape.place`) with
the fewest expected redacted records (ties: in the order above).  Something always fits —
the far design when both distances are at least ``D``, a wipe when one is (its other side
then cuts or extends), the exact design of the group's own sequence otherwise — and which
keys are designed depends only on the group, never on what a cache already holds: a
cached and an uncached release are identical.  Groups start as runs of private records
less than ``far_start`` apart; two groups whose placed designs are not separated by a
record published with certainty are merged and placed again, until every group's
redactable rows are separated from the next by such a record — which makes each group's
verification exact for the whole sequence (the cut argument).

Positions are 0-based in the Python API and 1-based on the command line and in files.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from redactopt import _progress
from redactopt._validate import check_eps, check_probability_open
from redactopt.engine.cache import DesignCache, DesignKey, Shape, design_in_worker, design_shape, far_start
from redactopt.engine.joint import JOINT_METHODS, STATES_RELEASE_METHODS, bound_tables, region_bound, seed_bound_tables
from redactopt.judge.audit import as_sparse
from redactopt.judge.lemma2 import lemma2_upper_bound
from redactopt.judge.certify import DesignResult, RegionCertificate, SparseDesign, SparseRows
from redactopt.model.chain import Chain, MarkovChain
from redactopt.model.classes import ChainClass
from redactopt.release.data import ScanState, check_private_positions, sequence_key
from redactopt.release.fit import fit_counts
from redactopt.release.pool import MapDesigns, pool_map, warm_pool

__all__ = ["SequencePlan", "ReleasePlan", "Choice", "plan_release", "place_groups", "pool_map", "warm_pool",
           "FAR_DOUBLINGS"]

#: How often the far distance is doubled before a pattern is left to its exact sub-problems.
FAR_DOUBLINGS = 10

#: The end (``time.time()``) of the current release's design phase, shared by every plan a release makes
#: (the fit's zone rule plans a pilot and refits): :func:`design_phase` sets it, :func:`plan_release` keeps it.
_PHASE_END: contextvars.ContextVar[float | None] = contextvars.ContextVar("release_design_phase_end", default=None)


@contextlib.contextmanager
def design_phase(time_limit: float) -> Iterator[None]:
    """One release: every design of every plan made inside ends within ``time_limit`` seconds from here
    (an enclosing phase is kept: a release inside a release does not extend it)."""
    if _PHASE_END.get() is not None:
        yield
        return
    token = _PHASE_END.set(time.time() + float(time_limit))
    try:
        yield
    finally:
        _PHASE_END.reset(token)


def within_time_limit(fn: Callable) -> Callable:
    """Run a release entry point (``time_limit=`` keyword, default 60 s) inside one :func:`design_phase`."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kw: Any) -> Any:
        with design_phase(float(kw.get("time_limit", 60.0))):
            return fn(*args, **kw)

    return wrapper


@dataclass
class SequencePlan:
    """One sequence with an explicit design (``result`` is ``None`` when it has no private record).

    ``result`` is a :class:`~redactopt.judge.certify.SparseDesign` or a dense
    :class:`~redactopt.judge.certify.DesignResult`.  :class:`~redactopt.release.redactor.Redactor`
    accepts a list of these as well as a :class:`ReleasePlan`.
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


@dataclass(frozen=True)
class Choice:
    """A group's placed design: the shape, the records always redacted beyond it on each side, its kind."""

    shape: Shape
    wipe: tuple[int, int]
    kind: str

    @property
    def cost(self) -> float:
        return self.shape.cost(self.wipe)

    def origin(self, first: int) -> int:
        """The sequence row of the shape's row 0, for a group whose first private record is ``first``."""
        return first - self.shape.key.left

    def footprint(self, first: int) -> tuple[int, int]:
        """First and last rows (0-based) that may be redacted."""
        o = self.origin(first)
        return o + self.shape.lo - self.wipe[0], o + self.shape.hi + self.wipe[1]


# --------------------------------------------------------------------------
# placing groups
# --------------------------------------------------------------------------
class _Designs:
    """A :class:`DesignCache` fetched through ``map_designs`` (argument tuples)."""

    def __init__(self, cache: DesignCache, map_designs: MapDesigns, deadline: float | None = None) -> None:
        self.cache = cache
        self.map_designs = map_designs
        self.rounds = 0
        self.deadline = deadline  # the design phase's end (time.time(), shared by every process), or None

    def fetch(self, keys: list[DesignKey]) -> list[Shape]:
        if keys:
            self.rounds += 1
        return self.cache.fetch(keys, self._run)

    def _run(self, fn: Callable, keys: list[DesignKey]) -> list[Shape]:
        """``fn`` (:func:`design_shape`) of every key, through :func:`design_in_worker`: the region-bound
        tables the workers build come back, so that this process does not build them again."""
        if fn is not design_shape:  # pragma: no cover - DesignCache designs with design_shape
            return self.map_designs(fn, [(k,) for k in keys])
        out = self.map_designs(design_in_worker, [(k, self.deadline) for k in keys])
        for _, tables in out:
            seed_bound_tables(tables)
        return [shape for shape, _ in out]


def _far_ladder(bases: list[DesignKey], start: int, designs: _Designs,
                ahead: list[DesignKey]) -> list[tuple[int, Shape] | None]:
    """For each base key, the first ``D = start * 2**k`` (``k <= FAR_DOUBLINGS``) whose design cuts both ends.

    ``ahead`` are designed with the first step (in parallel with it): keys likely needed
    next.  They change nothing but the time.
    """
    D = [start] * len(bases)
    found: list[tuple[int, Shape] | None] = [None] * len(bases)
    todo = list(range(len(bases)))
    for step in range(FAR_DOUBLINGS + 1):
        if not todo:
            break
        keys = [bases[i].with_ends(D[i], D[i]) for i in todo]
        shapes = designs.fetch(keys + (ahead if step == 0 else []))[: len(keys)]
        rest = []
        for i, s in zip(todo, shapes):
            if s.cuts_left and s.cuts_right:
                found[i] = (D[i], s)
            else:
                D[i] *= 2
                rest.append(i)
        todo = rest
    return found


def place_groups(requests: list[tuple[tuple[int, ...], int, int]], base: Callable[[tuple[int, ...]], DesignKey],
                 start: int, designs: _Designs) -> list[Choice]:
    """The placed design of each group ``(offsets, d_left, d_right)`` (see the module docstring).

    With a shared cache, equal requests are placed once and get the same :class:`Choice`.
    """
    share = designs.cache.share
    if share and len(set(requests)) < len(requests):
        uniq = list(dict.fromkeys(requests))
        placed = dict(zip(uniq, place_groups(uniq, base, start, designs)))
        return [placed[r] for r in requests]
    chain = base(requests[0][0]).chain if requests else None
    if isinstance(chain, Chain) and not chain.binary and any(dl + dr < 2 * start for _, dl, dr in requests):
        return _place_short_directly(requests, base, start, designs)
    patterns = list(dict.fromkeys(o for o, _, _ in requests)) if share else [o for o, _, _ in requests]
    # the wipes a group near an end will want if the first far distance is accepted (the usual case)
    ahead = list(dict.fromkeys([base(o).with_ends(0, start) for o, dl, _ in requests if dl < start]
                               + [base(o).with_ends(start, 0) for o, _, dr in requests if dr < start])) if share else []
    ladders = _far_ladder([base(o) for o in patterns], start, designs, ahead)
    far_of = dict(zip(patterns, ladders)) if share else None
    fars = [far_of[o] if far_of is not None else ladders[i] for i, (o, _, _) in enumerate(requests)]
    # the wipes where a distance is below the far one
    wanted: list[DesignKey] = []
    cands: list[list[tuple[str, Shape | int]]] = []
    for (offs, dl, dr), far in zip(requests, fars):
        mine: list[tuple[str, Shape | int]] = []
        if far is not None:
            D, shape = far
            mine.append(("far", shape))
            for kind, near, key in (("wipe-left", dl < D, (0, D)), ("wipe-right", dr < D, (D, 0))):
                if near:
                    mine.append((kind, len(wanted)))
                    wanted.append(base(offs).with_ends(*key))
        cands.append(mine)
    shapes = designs.fetch(wanted)
    best = [_best([(k, r if isinstance(r, Shape) else shapes[r]) for k, r in mine], dl, dr)
            for mine, (_, dl, dr) in zip(cands, requests)]
    # the group's own sequence where nothing else fits (a short sequence, or no far design)
    short = [i for i, b in enumerate(best) if b is None]
    exact = designs.fetch([base(requests[i][0]).with_ends(requests[i][1], requests[i][2]) for i in short])
    for i, shape in zip(short, exact):
        best[i] = _best([("exact", shape)], requests[i][1], requests[i][2])
        if best[i] is None:  # pragma: no cover - a shape always fits its own sub-problem
            raise AssertionError(f"the design of {shape.key} does not fit its own sub-problem")
    return best  # type: ignore[return-value]


def _place_short_directly(requests: list[tuple[tuple[int, ...], int, int]],
                          base: Callable[[tuple[int, ...]], DesignKey], start: int, designs: _Designs) -> list[Choice]:
    """:func:`place_groups` on a chain of more than two states: a group whose sequence is shorter than the
    two sides of the first far sub-problem gets its own sequence's design at once (those designs cost
    their length, and this one is the smallest that fits); the others climb the far ladder."""
    out: list[Choice | None] = [None] * len(requests)
    is_near = [dl + dr < 2 * start for _, dl, dr in requests]
    near = [i for i, v in enumerate(is_near) if v]
    far = [i for i, v in enumerate(is_near) if not v]
    for i, ch in zip(far, place_groups([requests[i] for i in far], base, start, designs) if far else []):
        out[i] = ch
    exact = designs.fetch([base(requests[i][0]).with_ends(requests[i][1], requests[i][2]) for i in near])
    for i, shape in zip(near, exact):
        out[i] = _best([("exact", shape)], requests[i][1], requests[i][2])
    return out  # type: ignore[return-value]


def _best(cands: list[tuple[str, Shape]], dl: int, dr: int) -> Choice | None:
    """The candidate that fits with the fewest expected redacted records (the first on a tie)."""
    best: Choice | None = None
    for kind, shape in cands:
        wipe = shape.place(dl, dr)
        if wipe is not None and (best is None or shape.cost(wipe) < best.cost):
            best = Choice(shape, wipe, kind)
    return best


def _initial_groups(priv: list[int], gap: int) -> list[tuple[int, ...]]:
    groups: list[list[int]] = []
    for p in priv:
        if groups and p - groups[-1][-1] < gap:
            groups[-1].append(p)
        else:
            groups.append([p])
    return [tuple(g) for g in groups]


def _merge_overlapping(groups: list[tuple[int, ...]], choices: list[Choice]) -> list[tuple[int, ...]] | None:
    """Groups whose placed designs (``choices``, in the same order) leave no record published with
    certainty between them, merged (``None``: none)."""
    out: list[tuple[int, ...]] = [groups[0]]
    last_hi = choices[0].footprint(groups[0][0])[1]
    changed = False
    for g, ch in zip(groups[1:], choices[1:]):
        lo, hi = ch.footprint(g[0])
        if lo - last_hi < 2:
            out[-1] = out[-1] + g
            changed = True
        else:
            out.append(g)
        last_hi = max(last_hi, hi)
    return out if changed else None


# --------------------------------------------------------------------------
# certificates of placed groups
# --------------------------------------------------------------------------
class _RegionBounds:
    """:func:`redactopt.engine.joint.region_bound` of rows ``lo..hi`` around a group, memoised by their geometry.

    The side-frontier tables (about a second each to build) are built for sides of up to
    ``start * 2**k`` records, the first such length that holds the region's longer side (a
    table bounds every shorter side), so a region's bound depends on its own geometry only,
    never on which regions were bounded before it.  They come from
    :func:`~redactopt.engine.joint.bound_tables`, which usually holds them already: the
    designs of the groups near an end bound regions of the same sides, and the workers hand
    their tables back.
    """

    def __init__(self) -> None:
        self._tables: dict = {}
        self._memo: dict = {}

    def table(self, chain: MarkovChain, size: int) -> dict:
        if (chain, size) not in self._tables:
            self._tables[chain, size] = {"R": size, "tab": bound_tables(chain, size)}
        return self._tables[chain, size]

    def __call__(self, chain: MarkovChain, eps: float, lo: int, hi: int, priv: tuple[int, ...]) -> tuple[float, str]:
        mine = tuple(p - lo for p in priv if lo <= p <= hi)
        key = (chain, eps, hi - lo, mine)
        if key not in self._memo and not chain.binary:  # more states: Lemma 2 (the side tables are two-state)
            m = hi - lo + 1
            self._memo[key] = (m * lemma2_upper_bound(chain, m, eps=eps, private=list(mine)), "lemma2")
        if key not in self._memo and chain.lam == 0.0:  # independent records: Lemma 2 alone, no side tables
            self._memo[key] = region_bound(chain, eps, 0, hi - lo, mine, {})
        if key not in self._memo:
            size = far_start(chain, eps)
            while size < max(mine[0], hi - lo - mine[-1], 1):
                size *= 2
            self._memo[key] = region_bound(chain, eps, 0, hi - lo, mine, self.table(chain, size))
        return self._memo[key]


#: Shared by every plan of this process (the tables take a second each to build).
_REGION_BOUNDS = _RegionBounds()


def _group_regions(choice: Choice, group: tuple[int, ...], n: int, eps: float) -> list[RegionCertificate]:
    """Region certificates of a placed group, in sequence rows.

    The shape's own regions, moved to where it is placed.  A region that reaches beyond the
    sequence (a shape placed in a shorter stretch: its rows there were published) is cut to
    the sequence, and the first and last regions are widened over the records always
    redacted beyond the shape; those are bounded again (:class:`_RegionBounds`).
    """
    shape = choice.shape
    o = choice.origin(group[0])
    wl, wr = choice.wipe
    out = []
    regions = shape.design.regions
    if regions is None:  # a chain on more states: its designs carry no region certificates
        return out
    for i, r in enumerate(regions):
        lo, hi = max(0, r.start + o), min(n - 1, r.stop + o)
        if i == 0 and wl:
            lo = min(lo, o - wl)
        if i == len(regions) - 1 and wr:
            hi = max(hi, o + shape.key.n - 1 + wr)
        if (lo, hi) == (r.start + o, r.stop + o):
            out.append(RegionCertificate(lo, hi, r.published, r.upper_bound, r.solver, r.relaxation))
        elif any(lo <= p <= hi for p in group):
            cut = (max(lo, r.start + o) - (r.start + o)) + ((r.stop + o) - min(hi, r.stop + o))  # rows published there
            bound = _REGION_BOUNDS(shape.design.chain, eps, lo, hi, group)
            carried = _carried(r, o, lo, hi, group)
            out.append(RegionCertificate(lo, hi, r.published - cut, *(bound if bound[0] <= carried[0] else carried)))
    return out


def _carried(r: RegionCertificate, o: int, lo: int, hi: int, group: tuple[int, ...]) -> tuple[float, str, str]:
    """The shape's region bound carried to the rows ``lo..hi`` it is moved to, cut or widened.

    Rows cut off (beyond the sequence): a mechanism private on the shorter rows extends to the
    shape's rows by records redacted with certainty (the all-⊥ extension leaves every leakage as it
    is), so the shape's bound still holds.  Rows added (records always redacted beyond the shape):
    each publishes at most one, a private one none (docs/mathematics.md §7c).
    """
    added = max(0, (r.start + o) - lo) + max(0, hi - (r.stop + o))
    added -= sum(1 for p in group if lo <= p < r.start + o or r.stop + o < p <= hi)
    return r.upper_bound + added, r.solver, r.relaxation


def _covered(regions: list[RegionCertificate]) -> int:
    """Rows in the union of the regions (regions of neighbouring groups may share a row)."""
    total, end = 0, -1
    for r in sorted(regions, key=lambda r: r.start):
        lo = max(r.start, end + 1)
        if r.stop >= lo:
            total += r.stop - lo + 1
            end = r.stop
    return total


# --------------------------------------------------------------------------
# the plan
# --------------------------------------------------------------------------
@dataclass
class ReleasePlan:
    """Chain, the placed designs of every group of private records, and everything the report needs.

    ``shapes`` are the distinct designs used (their index is the *shape id* of reports);
    groups are columnar, sorted by sequence code and first private record: ``g_code``,
    ``g_first``, ``g_shape``, ``g_wipe`` (records always redacted before and after the
    shape) and ``g_private`` (the group's 0-based positions); ``g_ptr[c]:g_ptr[c+1]`` are
    the groups of sequence ``c``.  Per sequence: ``mass`` (expected redacted records),
    ``leak_max`` (exact leakage, worst private record; 0 without private records) and
    ``upper_bound`` (certified: expected records any eps-private mechanism publishes).
    """

    chain: MarkovChain
    fit: Any
    eps: float
    method: str
    state: ScanState
    design_seconds: float
    shapes: list[Shape]
    choices: list[Choice]
    g_code: np.ndarray
    g_first: np.ndarray
    g_shape: np.ndarray
    g_wipe: np.ndarray
    g_private: list[tuple[int, ...]]
    g_ptr: np.ndarray
    mass: np.ndarray
    leak_max: np.ndarray
    upper_bound: np.ndarray
    info: dict = field(default_factory=dict)
    chain_class: ChainClass | None = None

    @property
    def n(self) -> np.ndarray:
        return self.state.n

    def groups_of(self, c: int) -> range:
        return range(int(self.g_ptr[c]), int(self.g_ptr[c + 1]))

    def private_of(self, c: int) -> tuple[int, ...]:
        return tuple(p for g in self.groups_of(c) for p in self.g_private[g])

    def per_private(self, c: int) -> tuple[float, ...]:
        """Exact leakage about each private record of sequence ``c`` (the verified values of its groups' shapes)."""
        return tuple(v for g in self.groups_of(c) for v in self.choices[g].shape.design.per_private)

    def pieces(self, c: int) -> list[tuple[int, int, np.ndarray | None]]:
        """The redactable rows of sequence ``c``, sorted: ``(first row, length, rows)``, ``rows`` ``None``
        for records always redacted (beyond a shape that reaches its sub-problem's end)."""
        out: list[tuple[int, int, np.ndarray | None]] = []
        for g in self.groups_of(c):
            ch = self.choices[g]
            blocks = ch.shape.design.redact_prob.blocks
            out += [(s, m, None if j < 0 else blocks[j]) for s, m, j in ch.shape.pieces(ch.origin(int(self.g_first[g])),
                                                                                      ch.wipe)]
        return out

    def block_ranges(self, c: int) -> list[tuple[int, int]]:
        """0-based first and last rows of every maximal run of redactable rows of sequence ``c``."""
        out: list[list[int]] = []
        for s, m, _ in self.pieces(c):
            if out and s == out[-1][1] + 1:
                out[-1][1] = s + m - 1
            else:
                out.append([s, s + m - 1])
        return [(a, b) for a, b in out]

    def sparse_rows(self, c: int) -> SparseRows:
        """The mechanism of sequence ``c`` (pieces merged where they touch)."""
        starts: list[int] = []
        blocks: list[np.ndarray] = []
        for s, m, b in self.pieces(c):
            rows = np.ones((m, self.chain.k)) if b is None else b
            if starts and s == starts[-1] + blocks[-1].shape[0]:
                blocks[-1] = np.vstack([blocks[-1], rows])
            else:
                starts.append(s)
                blocks.append(rows)
        return SparseRows(int(self.state.n[c]), tuple(starts), tuple(blocks))

    def regions_of(self, c: int) -> list[RegionCertificate]:
        """Region certificates of sequence ``c`` (sequence rows): its shapes', and Lemma 2's for records always redacted."""
        n = int(self.state.n[c])
        return [r for g in self.groups_of(c) for r in _group_regions(self.choices[g], self.g_private[g], n, self.eps)]

    def expected_utility(self) -> float:
        total = int(self.state.n.sum())
        return 1.0 - float(self.mass.sum()) / total if total else 1.0

    def designed(self) -> np.ndarray:
        """Codes of the sequences with private records."""
        return np.flatnonzero(np.diff(self.g_ptr) > 0)


def _check_design_args(eps: float, method: str, alpha: object, beta: object, robust: float | None) -> float:
    eps = check_eps(eps)
    if method not in JOINT_METHODS:
        raise ValueError(f"method must be one of {', '.join(JOINT_METHODS)}, got {method!r}")
    if (alpha is None) != (beta is None):
        raise ValueError("give both --alpha and --beta, or neither (then they are fitted)")
    if robust is not None:
        if alpha is not None:
            raise ValueError("--robust fits the box from the data: give it without --alpha/--beta "
                             "(or give the box itself as --alpha LO:HI --beta LO:HI)")
        if not (isinstance(robust, (int, float)) and 0.0 < float(robust) < 1.0):
            raise ValueError(f"--robust must be a confidence level in (0, 1), e.g. 0.95, got {robust!r}")
    return eps


def _as_range(value: object, name: str) -> tuple[float, float]:
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ValueError(f"--{name} range must be (lo, hi), got {value!r}")
        lo, hi = (check_probability_open(v, name) for v in value)
    else:
        lo = hi = check_probability_open(value, name)
    if lo > hi:
        raise ValueError(f"--{name} range {lo}:{hi} has lo > hi")
    return lo, hi


def robust_box(fit: Any, robust: float) -> ChainClass:
    r"""The box of chains a fit cannot exclude: ``fit``'s intervals, which ``plan_release`` computes at
    level :math:`1-(1-	ext{robust})/2` each, so that by Bonferroni's inequality the box holds the
    true (alpha, beta) with probability at least ``robust``; the fitted chain is its nominal point."""
    (alo, ahi), (blo, bhi) = fit.alpha_ci, fit.beta_ci
    for name, lo, hi in (("alpha", alo, ahi), ("beta", blo, bhi)):
        if not (0.0 < lo and hi < 1.0):
            raise ValueError(f"--robust: the {name} interval [{lo:.6g}, {hi:.6g}] reaches 0 or 1 (too few "
                             f"transitions to bound {name} away from it); give the box as --alpha LO:HI --beta LO:HI")
    return ChainClass.box((alo, ahi), (blo, bhi), nominal=fit.chain)


@_progress.timed("design")
def plan_release(
    state: ScanState,
    *,
    eps: float,
    private: list[int] | None = None,
    alpha: float | tuple[float, float] | None = None,
    beta: float | tuple[float, float] | None = None,
    method: str = "auto",
    time_limit: float = 60.0,
    confidence: float = 0.95,
    map_designs: MapDesigns | None = None,
    cache: DesignCache | None = None,
    workers: int | None = None,
    robust: float | None = None,
    counts: Any = None,
    chain: Chain | None = None,
) -> ReleasePlan:
    """Fit (unless alpha and beta are given) and place a verified design around every group of private records.

    ``counts`` (a :class:`~redactopt.release.fit.TransitionCounts`): fit the chain on these instead
    of the scan's own counts — the rows the release publishes with certainty, or a public table
    (:mod:`redactopt.release.fitplan`).

    ``private`` (0-based) applies to a single-sequence scan; otherwise the scan's private
    flags are used.  Designs are shared through ``cache`` (a fresh
    :class:`~redactopt.engine.cache.DesignCache` by default; ``DesignCache(share=False)``
    designs every group on its own) and computed by ``map_designs(fn, argument tuples)``
    (the Dask back-end passes its own) or else a process pool of ``workers`` processes
    (default: every core; 1 computes here).  The plan does not depend on where or in what
    order the designs are computed.

    A class of chains (issue 14) instead of one: ``alpha``/``beta`` as ``(lo, hi)`` ranges
    (a number is a degenerate range), or ``robust=LEVEL``: the box of the fit's intervals,
    each at level ``1 - (1 - LEVEL)/2`` so that the box covers the true chain with
    probability at least ``LEVEL`` (:func:`robust_box`).  Every design is then private for
    every chain of the box (verified exactly at its deciding chains, ``docs/mathematics.md``
    §7b); the plan's ``chain`` stays the point estimate (or the box's nominal chain) and
    ``chain_class`` holds the box.
    """
    if chain is not None and not chain.binary:  # a chain on more states, given (or fitted by the caller)
        return _plan_states(state, chain, eps=eps, private=private, method=method, time_limit=time_limit,
                            map_designs=map_designs, cache=cache, workers=workers, alpha=alpha, robust=robust)
    if chain is not None:
        if alpha is not None or beta is not None:
            raise ValueError("give the chain once: chain= or alpha=/beta=, not both")
        alpha, beta = chain.alpha, chain.beta
    eps = _check_design_args(eps, method, alpha, beta, robust)
    if state.rows == 0:
        raise ValueError("the input has no data rows")
    fit = None
    box: ChainClass | None = None
    if alpha is None:
        level = confidence if robust is None else 1.0 - (1.0 - float(robust)) / 2.0
        fit = fit_counts(state.counts() if counts is None else counts, confidence=level)
        chain = fit.chain
        if robust is not None:
            box = robust_box(fit, float(robust))
    elif isinstance(alpha, (tuple, list)) or isinstance(beta, (tuple, list)):
        box = ChainClass.box(_as_range(alpha, "alpha"), _as_range(beta, "beta"))
        chain = box.nominal
        if box.alpha[0] == box.alpha[1] and box.beta[0] == box.beta[1]:  # a point: the point chain
            box = None
    else:
        chain = MarkovChain(check_probability_open(alpha, "alpha"), check_probability_open(beta, "beta"))
    design_chain: MarkovChain | ChainClass = chain if box is None else box
    groups = _groups_of(state, private, far_start(design_chain, eps))
    placed = [design_chain] if box is None else [design_chain, chain]  # a box: the point design too
    plan, done = _placed_plan(placed, chain, fit, eps, method, time_limit, state, groups, map_designs, cache, workers)
    plan.chain_class = box
    if box is not None:  # what robustness costs
        pi = chain.stationary
        plan.info["robustness"] = {
            "nominal": {"alpha": chain.alpha, "beta": chain.beta},
            "level": None if robust is None else float(robust),
            "expected_redacted_robust": _mass_at(*done[0], pi),
            "expected_redacted_point": _mass_at(*done[1], pi),
        }
    return plan


#: The methods of a release on a chain of more than two states (:func:`~redactopt.engine.joint.design_states_release`).
STATES_METHODS = STATES_RELEASE_METHODS


def _plan_states(state: ScanState, chain: Chain, *, eps: float, private: list[int] | None, method: str,
                 time_limit: float, map_designs: MapDesigns | None, cache: DesignCache | None,
                 workers: int | None, alpha: object, robust: float | None) -> ReleasePlan:
    """:func:`plan_release` on a chain of more than two states (given; the caller fits it): the same groups,
    placements and cache, each group designed by :func:`~redactopt.engine.joint.design_states_release`."""
    if alpha is not None:
        raise ValueError("alpha and beta describe a two-state chain; give the chain on more states alone")
    if robust is not None:
        raise ValueError("a robust release is private for a box of two-state chains; a chain on more states is "
                         "designed as given")
    eps = check_eps(eps)
    if method not in STATES_METHODS:
        raise ValueError(f"method must be one of {', '.join(STATES_METHODS)} for a chain on {chain.k} states, "
                         f"got {method!r}")
    if state.rows == 0:
        raise ValueError("the input has no data rows")
    groups = _groups_of(state, private, far_start(chain, eps))
    return _placed_plan([chain], chain, None, eps, method, time_limit, state, groups, map_designs, cache, workers)[0]


def _groups_of(state: ScanState, private: list[int] | None, start: int) -> dict[int, list[tuple[int, ...]]]:
    """The initial groups of private records of every sequence (``private``: positions in a single sequence)."""
    if private is not None:
        check_private_positions(state, private)
        groups = {0: _initial_groups(sorted(set(private)), start)} if private else {}
    else:
        groups = _scan_groups(state.private_codes, state.private_pos, start)
    if not groups:
        raise ValueError("no record is marked private: nothing to protect (check --private-column)")
    return groups


def _placed_plan(chains: list, chain: Any, fit: Any, eps: float, method: str, time_limit: float, state: ScanState,
                 groups: dict[int, list[tuple[int, ...]]], map_designs: MapDesigns | None, cache: DesignCache | None,
                 workers: int | None) -> tuple[ReleasePlan, list[tuple[dict, ChoiceOf]]]:
    """Place every group for each of ``chains`` (one pool, one cache); the plan of the first placement and
    every placement's ``(groups, choice_of)``."""
    cache = DesignCache() if cache is None else cache
    before = (cache.computed, cache.reflected, cache.hits)
    t0 = time.perf_counter()
    done = []
    # the design phase as a whole keeps the time limit: each design gets at most what is left of it (of the
    # release's, when the release made several plans)
    deadline = time.time() + float(time_limit)
    phase = _PHASE_END.get()
    if phase is not None:
        deadline = min(deadline, phase)
    with pool_map(workers) as pool:
        designs = _Designs(cache, map_designs or pool, deadline)
        for c in chains:
            done.append(_place_all(c, eps, method, time_limit, {g: list(v) for g, v in groups.items()}, state.n,
                                   designs))
    plan = _assemble(chain, fit, eps, method, state, done[0][0], done[0][1], time.perf_counter() - t0)
    # shapes: distinct designs used; computed: designs run for them (the rest were mirror images or
    # already in a shared cache); reused: groups placed with a design another group uses too
    plan.info["designs"] = {"shapes": len(plan.shapes), "computed": cache.computed - before[0],
                            "reflected": cache.reflected - before[1], "groups": len(plan.choices),
                            "reused": len(plan.choices) - len(plan.shapes), "cache_hits": cache.hits - before[2],
                            "rounds": designs.rounds, "shared": cache.share}
    return plan, done


def _mass_at(groups: dict[int, list[tuple[int, ...]]], choice_of: "ChoiceOf", pi: np.ndarray) -> float:
    """Expected redacted records of placed designs when the records follow the stationary law ``pi``."""
    total = 0.0
    for c, gs in groups.items():
        for g in gs:
            ch = choice_of(c, g)
            total += sum(float((b @ pi).sum()) for b in ch.shape.design.redact_prob.blocks) + sum(ch.wipe)
    return total


def _request(group: tuple[int, ...], n: int) -> tuple[tuple[int, ...], int, int]:
    """A group's request ``(offsets, d_left, d_right)`` in a sequence of ``n`` records: all its design depends on."""
    return tuple(p - group[0] for p in group), group[0], n - 1 - group[-1]


#: ``choice_of(code, group)``: the placed design of a group of a sequence.
ChoiceOf = Callable[[int, tuple[int, ...]], Choice]


def _scan_groups(codes: np.ndarray, pos: np.ndarray, gap: int) -> dict[int, list[tuple[int, ...]]]:
    """:func:`_initial_groups` of every sequence, from the scan's private rows (codes and positions, any order)."""
    if not codes.size:
        return {}
    order = np.lexsort((pos, codes))
    c, p = codes[order], pos[order]
    keep = np.r_[True, (c[1:] != c[:-1]) | (p[1:] != p[:-1])]  # a row is flagged once; be safe
    c, p = c[keep], p[keep]
    new = np.r_[True, (c[1:] != c[:-1]) | (p[1:] - p[:-1] >= gap)]
    starts = np.flatnonzero(new).tolist() + [c.size]
    firsts = c[np.flatnonzero(new)].tolist()
    p_list = p.tolist()
    out: dict[int, list[tuple[int, ...]]] = {}
    for code, a, b in zip(firsts, starts[:-1], starts[1:]):
        out.setdefault(code, []).append(tuple(p_list[a:b]))
    return out


def _place_all(chain: MarkovChain | ChainClass, eps: float, method: str, time_limit: float,
               groups: dict[int, list[tuple[int, ...]]], n: np.ndarray,
               designs: _Designs) -> tuple[dict[int, list[tuple[int, ...]]], ChoiceOf]:
    """Every sequence's groups and their placed designs, from its initial groups (runs of private
    records less than ``far_start`` apart), merging groups until they are separated.

    With a shared cache a group's choice is looked up by its request (``_request``): the
    groups of thousands of sequences make a few hundred distinct requests, each placed once,
    and the memory per sequence is that of its groups.  Without one (``share=False``) every
    group is placed on its own.
    """
    start = far_start(chain, eps)
    share = designs.cache.share

    def base(offsets: tuple[int, ...]) -> DesignKey:
        return DesignKey(chain, eps, method, float(time_limit), offsets, 0, 0)

    def ident(c: int, g: tuple[int, ...]) -> Any:
        return _request(g, int(n[c])) if share else (c, g)

    placed: dict[Any, Choice] = {}
    todo = sorted(groups)
    while todo:
        pending: dict[Any, tuple[tuple[int, ...], int, int]] = {}
        for c in todo:
            for g in groups[c]:
                i = ident(c, g)
                if i not in placed and i not in pending:
                    pending[i] = _request(g, int(n[c]))
        for i, ch in zip(pending, place_groups(list(pending.values()), base, start, designs)):
            placed[i] = ch
        del pending
        nxt = []
        for c in todo:
            if len(groups[c]) > 1:
                merged = _merge_overlapping(groups[c], [placed[ident(c, g)] for g in groups[c]])
                if merged is not None:
                    groups[c] = merged
                    nxt.append(c)
        todo = nxt
    return groups, lambda c, g: placed[ident(c, g)]


def _assemble(chain: MarkovChain, fit: Any, eps: float, method: str, state: ScanState,
              groups: dict[int, list[tuple[int, ...]]], choice_of: ChoiceOf, seconds: float) -> ReleasePlan:
    k = len(state.ids)
    shape_ids: dict[DesignKey, int] = {}
    shapes: list[Shape] = []
    choices: list[Choice] = []
    codes, firsts, sids, wipes, privs = [], [], [], [], []
    counts = np.zeros(k + 1, dtype=np.int64)
    mass = np.zeros(k)
    leak = np.zeros(k)
    bound = state.n.astype(float).copy()
    # a sequence with one group: its bound depends on the choice and the request only (memoised)
    single: dict[tuple[int, tuple[tuple[int, ...], int, int]], float] = {}
    for c in sorted(groups):
        n_c = int(state.n[c])
        chs = [choice_of(c, g) for g in groups[c]]
        for g, ch in zip(groups[c], chs):
            if ch.shape.key not in shape_ids:
                shape_ids[ch.shape.key] = len(shapes)
                shapes.append(ch.shape)
            choices.append(ch)
            codes.append(c)
            firsts.append(g[0])
            sids.append(shape_ids[ch.shape.key])
            wipes.append(ch.wipe)
            privs.append(g)
            mass[c] += ch.cost
            leak[c] = max(leak[c], ch.shape.design.leakage)
        counts[c + 1] = len(chs)
        memo = (id(chs[0]), _request(groups[c][0], n_c)) if len(chs) == 1 else None
        if memo is not None and memo in single:
            bound[c] = single[memo]
            continue
        seq_regions = [r for g, ch in zip(groups[c], chs) for r in _group_regions(ch, g, n_c, eps)]
        bound[c] = sum(r.upper_bound for r in seq_regions) + n_c - _covered(seq_regions)
        if memo is not None:
            single[memo] = float(bound[c])
    return ReleasePlan(
        chain=chain, fit=fit, eps=eps, method=method, state=state, design_seconds=seconds, shapes=shapes,
        choices=choices, g_code=np.asarray(codes, dtype=np.int64), g_first=np.asarray(firsts, dtype=np.int64),
        g_shape=np.asarray(sids, dtype=np.int64), g_wipe=np.asarray(wipes, dtype=np.int64).reshape(-1, 2),
        g_private=privs, g_ptr=np.cumsum(counts), mass=mass, leak_max=leak, upper_bound=bound)
