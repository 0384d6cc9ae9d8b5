r"""The optimal scan mechanism of a *run* of private records, with a certified bound (docs/mathematics.md §7d).

A run :math:`p_1<\dots<p_r` (adjacent records) is redacted; each side of it is read outward from the run
and stops once (:class:`~redactopt.model.mechanism_classes.RunScanMechanism`).  Given :math:`X_{p_j}` the
sides are independent and each depends on it only through its boundary record, so a side's output is
worth its pair of directional leakages :math:`(A_s,B_s)` about its boundary record and record
:math:`p_j` is private iff :math:`h^\ell_j+h^r_j\le\epsilon` in both directions (the decomposition of
:mod:`redactopt.solvers.runs`, which uses of the mechanism only that a side's output is a function of the
side's records and independent randomness — true of scans).  A side of a run is, about its boundary
record, the side of a one-record scan (:class:`~redactopt.solvers.scan_lp.SideSpec`): its best expected
count at budgets :math:`(a,b)` is the scan side LP :math:`F_s(a,b)`.  Hence

.. math:: \mathrm{OPT}=\max_{a,b}\;F_\ell(a,b)+F_r(\tau(a,b)),

with :math:`\tau` the run's budget maps (:class:`~redactopt.solvers.runs.RunMaps`, non-increasing; the
one-record scan is :math:`\tau(a)=\epsilon-a`).  The search is the one-record scan's branch and bound
over the left budgets (:class:`_RunBoxes`): a box is bounded by
:math:`F_\ell^{UB}(a^+)+F_r^{UB}(\tau^{out}(a^-))` (monotone, :math:`\tau` rounded outward) and by the
interpolated dual bound with the right budgets of one binding record :math:`j` alone (a relaxation),
where :math:`e^{\tau_j}` is convex along the box (checked per box: docs/mathematics.md §7d).  Every bound
is a verified dual point.  This module only proposes; :func:`redactopt.engine.class_judge.design_run_scan`
judges exactly about every record of the run.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from redactopt.model.chain import MarkovChain
from redactopt.model.mechanism_classes import RunScanMechanism, as_kchain
from redactopt.solvers.frontier import ETA, Geo
from redactopt.solvers.runs import Contraction, PairMap, RunMaps, chain_contractions, each_partner, run_maps
from redactopt.solvers.scan_lp import (GRID1, MARGINS, SideOracle, SideSpec, SplitBoxes, choose_window,
                                       corner_interpolation, first_window, search_boxes, seed_split, side_count,
                                       side_design, until)
from redactopt.solvers.split_bound import interpolated_bound

__all__ = ["RunScanProposal", "propose_run_scan", "run_scan_maps"]


@dataclass(frozen=True)
class RunScanProposal:
    r"""A run's scan proposed by the LPs, not yet judged, with a proven bound over every run scan.

    ``bound`` is the proven upper bound on the expected number of records published (of all ``n``) by every
    scan of the run; ``fallback`` redacts everything; ``split`` holds the sides' budgets ``(a, b)`` about their
    boundary records (``a``: log-ratios in favour of state 0, ``b``: of state 1); ``stopped``: the search ran
    out of time or boxes (the bound still holds).
    """

    mechanism: RunScanMechanism
    fallback: RunScanMechanism
    bound: float
    split: dict
    stopped: bool
    info: dict


def _markov(kc: object) -> MarkovChain:
    """The two-state chain as a :class:`MarkovChain` of the same doubles (``alpha = P[0][1]``, ``beta = P[1][0]``)."""
    P = as_kchain(kc).exact_transition()
    return MarkovChain(float(P[0][1]), float(P[1][0]))


def run_scan_maps(chain: object, r: int) -> tuple[RunMaps, list[Contraction], list[Contraction]]:
    """The budget maps of a run of ``r`` records (:func:`~redactopt.solvers.runs.run_maps`) and its contractions."""
    mc = _markov(chain)
    left, right = chain_contractions(mc, r)
    return run_maps(Geo(mc), left, right), left, right


def _coefficients(K: np.ndarray, det: float, s: int) -> tuple[float, float]:
    r"""``(a, b)`` of the increasing Möbius map :math:`M(t)=(at+b)/(ct+d)` with :math:`\log M(e^x)` what a left budget
    ``x`` of coordinate ``s`` adds to its direction (docs/mathematics.md §7d)."""
    (k00, k01), (k10, k11) = K
    if det > 0:
        return (k00, k01) if s > 0 else (k11, k10)
    return (k10, k11) if s > 0 else (k01, k00)


class _RunBoxes(SplitBoxes):
    r"""Boxes of the left side's budgets ``(a, b)`` of a run (module docstring); the right side gets :math:`\tau`.

    ``maps`` (the binding records' maps, a relaxation) rounded outward give the right budgets of the bounds;
    ``singles`` the maps of each binding record alone, uncapped, for the interpolated bound.
    """

    def __init__(self, left: SideOracle, right: SideOracle, eps: float, maps: RunMaps) -> None:
        self.left, self.right, self.F, self.eps = left, right, Fraction(eps), float(eps)
        self.maps = maps
        self._memo: dict = {}
        amax, bmax = maps.left_max(eps, outward=True)
        self.lo0 = np.zeros(2)
        self.hi0 = np.array([min(amax, left.spec.hull(0, 1)), min(bmax, left.spec.hull(1, 0))])
        self.eta = 1e-11 * max(1.0, eps)
        self.best = -math.inf
        # one binding record per pair (each pair's right budget depends on its own left coordinate only), every
        # combination: each is a relaxation, and on a box where those records bind it loses only second order
        per_pair = []
        for pair in maps.pairs:
            sub = (lambda c, j: Contraction(c.K[j:j + 1], c.det[j:j + 1]))
            per_pair.append([PairMap(sub(pair.left, j), sub(pair.right, j), pair.sl, pair.sr, (pair.caps[0], math.inf))
                             for j in range(pair.left.det.size)])
        self.singles = {(j0, j1): RunMaps((p0, p1), maps.sigma)
                        for (j0, p0), (j1, p1) in itertools.product(enumerate(per_pair[0]), enumerate(per_pair[1]))}
        self.cuts = self._cuts()

    def _cuts(self) -> list[list[float]]:
        """Per left coordinate: where a side's first-record event opens (left thresholds, the right ones mapped back
        through the map) and where the binding record of the map changes (the map's kinks)."""
        out = []
        right_pair = {0: (0, 1), 1: (1, 0)} if self.maps.sigma > 0 else {0: (1, 0), 1: (0, 1)}
        for dim, (x, y) in enumerate(((0, 1), (1, 0))):
            cuts = set(t for t in self.left.spec.thresholds(x, y) if 0 < t < self.hi0[dim])
            pm = self.maps.pairs[dim]
            for t in self.right.spec.thresholds(*right_pair[dim]):
                v = float(pm.bwd(np.array([t]), self.eps, outward=False)[0])
                if 0 < v < self.hi0[dim]:
                    cuts.add(v)
            if pm.left.det.size > 1 and self.hi0[dim] > 0:
                grid = np.linspace(0.0, self.hi0[dim], 257)
                g = each_partner(pm.left, pm.sl, pm.right, pm.sr, grid, self.eps, pm.caps, False)
                arg = np.argmin(np.where(g < 0, np.inf, g), axis=0)
                for i in np.flatnonzero(arg[1:] != arg[:-1]):
                    lo, hi = float(grid[i]), float(grid[i + 1])
                    a0 = int(arg[i])
                    for _ in range(50):
                        mid = 0.5 * (lo + hi)
                        gm = each_partner(pm.left, pm.sl, pm.right, pm.sr, np.array([mid]), self.eps, pm.caps, False)
                        if int(np.argmin(np.where(gm < 0, np.inf, gm)[:, 0])) == a0:
                            lo = mid
                        else:
                            hi = mid
                    cuts.add(0.5 * (lo + hi))
            out.append(sorted(cuts))
        return out

    def lb(self, a: np.ndarray) -> tuple:
        return tuple(Fraction(float(v)) for v in a)

    def _right_of(self, maps: RunMaps, a: np.ndarray) -> tuple:
        """The right budgets ``maps`` leave at left budgets ``a``, outward (an infinite one, of a single record's
        uncapped map: that record does not constrain the side there, is raised to 1e6 nats, far past any hull)."""
        key = (id(maps), float(a[0]), float(a[1]))
        got = self._memo.get(key)
        if got is None:
            y0, y1 = maps.right_budgets(np.array([key[1]]), np.array([key[2]]), self.eps, outward=True)
            got = self._memo[key] = tuple(Fraction(min(float(v[0]), 1e6)) for v in (y0, y1))
        return got

    def rb(self, a: np.ndarray) -> tuple:
        return self._right_of(self.maps, a)

    def value(self, a: np.ndarray) -> float:
        return self.left.upper(self.lb(a))[1] + self.right.upper(self.rb(a))[1]

    def _convex(self, maps: RunMaps, lo: np.ndarray) -> bool:
        r"""Whether :math:`e^{\tau_j}` of the single record ``maps`` is convex along the box in each coordinate: the left
        map's :math:`a e^{x^-}\ge b` (docs/mathematics.md §7d), with a margin for the contraction's rounding."""
        for dim, pm in enumerate(maps.pairs):
            a, b = _coefficients(pm.left.K[0], float(pm.left.det[0]), pm.sl)
            if not a * math.exp(float(lo[dim])) * (1.0 - 1e-9) >= b:
                return False
        return True

    def _binding(self, lo: np.ndarray, hi: np.ndarray) -> list[tuple[int, int]]:
        """The records whose constraint binds each pair's map at the box's two ends (guidance: which single-record
        relaxations can be tight on the box; every one of them is valid)."""
        per = []
        for dim, pm in enumerate(self.maps.pairs):
            g = each_partner(pm.left, pm.sl, pm.right, pm.sr, np.array([lo[dim], hi[dim]]), self.eps, pm.caps, False)
            per.append(sorted(set(int(v) for v in np.argmin(np.where(g < 0, np.inf, g), axis=0))))
        return list(itertools.product(*per))

    def ub(self, lo: np.ndarray, hi: np.ndarray) -> float:
        left, right, lb = self.left, self.right, self.lb
        best = math.nextafter(left.upper(lb(hi))[0] + right.upper(self.rb(lo))[0], math.inf)
        cap = [2.0 * max(right.spec.hull(0, 1), 1e-300), 2.0 * max(right.spec.hull(1, 0), 1e-300)]
        for key in self._binding(lo, hi):
            maps = self.singles[key]
            if not self._convex(maps, lo):
                continue
            rb = (lambda a, m=maps: self._right_of(m, a))
            corner = rb(lo)  # the largest right budgets of the box (the map is non-increasing)
            if not all(float(v) <= c for v, c in zip(corner, cap)):
                continue  # the right side saturated there: the monotone bound loses nothing to it
            free, data, v = corner_interpolation(left, right, lb, rb, lo, hi)
            if data is None:
                continue
            best = min(best, math.nextafter(v, math.inf))
            if len(free) == 2:  # one dimension interpolated, the other by monotonicity (as the one-record search)
                for f in (0, 1):
                    lft = {(b,): data[tuple(b if g == f else 1 for g in (0, 1))][0] for b in (0, 1)}
                    rgt = {(b,): data[tuple(b if g == f else 0 for g in (0, 1))][1] for b in (0, 1)}
                    best = min(best, math.nextafter(interpolated_bound(lft, rgt, [free[f]], GRID1), math.inf))
        return best


def _empty(kc: object, m: int) -> np.ndarray | None:
    return None if m == 0 else np.zeros((m, 2, 2))


def propose_run_scan(chain: object, n: int, *, eps: float, first: int, last: int, tol: float = 1e-6,
                     time_limit: float = 10.0, max_boxes: int = 20000,
                     start: tuple[float, float] | None = None) -> RunScanProposal:
    r"""The optimal scan of the run ``first..last`` (0-based, ``first < last``) and a proven bound over all run scans.

    Parameters
    ----------
    chain : MarkovChain or two-state Chain
    n : int
        Records.
    eps : float
        Budget (nats), for every record of the run.
    tol : float
        Target gap on the utility (per record of all ``n``).
    time_limit : float
        Seconds; every linear program ends by then.
    start : (float, float), optional
        Left budgets ``(a, b)`` to try first (guidance only: the local run design's leakages about the run's
        first record, whose completion is a scan of the run).

    Returns
    -------
    RunScanProposal
        Each side's stop table designed at the best budgets found (the right side's from the full maps at
        :math:`\epsilon-2\cdot10^{-9}\max(1,\epsilon)`), and the branch and bound's proven bound (records).
    """
    t0 = time.monotonic()
    with until(t0 + time_limit):
        return _propose(chain, n, eps=eps, first=first, last=last, tol=tol, time_limit=time_limit,
                        max_boxes=max_boxes, t0=t0, start=start)


def _propose(chain: object, n: int, *, eps: float, first: int, last: int, tol: float, time_limit: float,
             max_boxes: int, t0: float, start: tuple[float, float] | None = None) -> RunScanProposal:
    kc = as_kchain(chain)
    if kc.k != 2:
        raise ValueError(f"a run's scan is designed for two-state chains, got {kc.k} states")
    r, mL, mR = last - first + 1, first, n - 1 - last
    fallback = RunScanMechanism(kc, n, first, last, _empty(kc, mL), _empty(kc, mR))
    epsl = eps - 2.0 * ETA * max(1.0, eps)
    maps, _, _ = run_scan_maps(kc, r)
    bmaps = maps.binding(eps)
    specs = {s: SideSpec(kc, s, m, False) for s, m in (("left", mL), ("right", mR)) if m}
    first_w = first_window(kc, eps)
    orcs = {s: SideOracle(sp_, choose_window(sp_, eps, tol * n / 8, start=first_w,
                                              deadline=time.monotonic() + 0.1 * time_limit))
            for s, sp_ in specs.items()}
    info: dict = {"W": {s: o.W for s, o in orcs.items()}, "boxes": 0}
    stopped = False
    zero = np.zeros(1)
    if not orcs:  # nothing but the run
        return RunScanProposal(fallback, fallback, 0.0, {}, False, dict(info, seconds=time.monotonic() - t0))
    if "right" not in orcs:  # the run ends the sequence: the left side alone, as far as every record allows
        amax = maps.left_max(eps, outward=True)
        bud_ub = (Fraction(min(amax[0], specs["left"].hull(0, 1))), Fraction(min(amax[1], specs["left"].hull(1, 0))))
        bound = orcs["left"].upper(bud_ub)[0]
        bl = tuple(Fraction(v) for v in maps.left_max(epsl, outward=False))
        tables = {"left": side_design(orcs["left"], bl, tol * n / 4, t0 + 0.9 * time_limit), "right": None}
        split = {"left": [float(v) for v in bl], "right": []}
    elif "left" not in orcs:  # the run starts the sequence: the right side alone
        y_ub = maps.right_budgets(zero, zero, eps, outward=True)
        bound = orcs["right"].upper((Fraction(float(y_ub[0][0])), Fraction(float(y_ub[1][0]))))[0]
        y = maps.right_budgets(zero, zero, epsl, outward=False)
        br = (Fraction(float(y[0][0])), Fraction(float(y[1][0])))
        tables = {"left": None, "right": side_design(orcs["right"], br, tol * n / 4, t0 + 0.9 * time_limit)}
        split = {"left": [], "right": [float(v) for v in br]}
    else:
        sb = _RunBoxes(orcs["left"], orcs["right"], eps, bmaps)
        lo, hi = sb.lo0.copy(), sb.hi0.copy()
        end = t0 + 0.6 * time_limit
        t1, n1 = time.monotonic(), sum(o.solves for o in orcs.values())
        st = None if start is None else np.clip(np.array(start, dtype=float), lo, hi)
        if st is not None:  # the start first: on long sides the grid may not get far before its deadline
            sb.value(st)
        # the sides' designs need a few dozen programs of this size after the search (margins, sure stops): on
        # long sides, where one program takes seconds, the search ends early enough to leave them that time
        per_lp = (time.monotonic() - t1) / max(1, sum(o.solves for o in orcs.values()) - n1) if st is not None else 0.0
        end = max(min(end, t0 + 0.9 * time_limit - 25.0 * per_lp), time.monotonic())
        info["seconds_per_program"] = per_lp
        seed_end = time.monotonic() + 0.2 * max(0.0, end - time.monotonic())
        best_v, best_a = seed_split(sb.value, lo, hi, eps, seed_end, start=st)
        if st is not None:
            v = sb.value(st)
            if v > best_v:
                best_v, best_a = v, tuple(st)
        with until(end):
            res = search_boxes(sb, best_v, best_a, 0.75 * tol * n, end, max_boxes)
        bound, stopped = res["bound"], res["stopped"]
        info.update(boxes=res["boxes"], cuts=[len(c) for c in sb.cuts])
        a = np.asarray(res["split"], dtype=float)
        tables, split = _design(orcs, maps, a, eps, epsl, tol * n / 16, t0 + 0.95 * time_limit, per_lp)
        got = side_count(orcs["left"].spec, tables["left"]) + side_count(orcs["right"].spec, tables["right"])
        # an LP value at a budget within the solver's tolerance of 0 is no promise (a 0-private rule is exactly
        # 0-private only in rationals): where the designs fall short of the search's value, the split moved into
        # the domain, as the one-record scan does (scan_lp._other_splits)
        for d in (1e-6, 1e-3, 0.05, 0.25):
            if got >= float(res["value"]) - tol * n or time.monotonic() > t0 + 0.95 * time_limit:
                break
            alt = np.clip(a, lo + d * (hi - lo), hi - d * (hi - lo))
            tb, sp = _design(orcs, maps, alt, eps, epsl, tol * n / 16, t0 + 0.95 * time_limit, per_lp)
            u = side_count(orcs["left"].spec, tb["left"]) + side_count(orcs["right"].spec, tb["right"])
            if u > got:
                tables, split, got = tb, sp, u
        info.update(search_value=float(res["value"]), designed_value=got)
    mech = RunScanMechanism(kc, n, first, last, tables["left"], tables["right"])
    bound = min(float(bound), float(n - r))
    bound = bound if bound == 0 else math.nextafter(bound, math.inf)
    info.update(lp_solves=sum(o.solves for o in orcs.values()), seconds=time.monotonic() - t0)
    return RunScanProposal(mech, fallback, bound, split, bool(stopped), info)


def _quick_design(orc: SideOracle, budgets: tuple, loss: float, deadline: float) -> np.ndarray:
    """A side's design on long sides: the first margin alone, the larger ones only if nothing passed there."""
    S = side_design(orc, budgets, loss, deadline, MARGINS[:1])
    if np.any(S):
        return S
    return side_design(orc, budgets, loss, deadline, MARGINS[3:])


def _design(orcs: dict, maps: RunMaps, a: np.ndarray, eps: float, epsl: float, loss: float,
            deadline: float, per_lp: float = 0.0) -> tuple[dict, dict]:
    """Both sides designed at left budgets ``a`` (capped at what every record allows at ``epsl``) and the right
    budgets the full maps leave at ``epsl``; also at the budgets moved inward by 1e-9 and 1e-6 (a budget on the
    domain's edge), the most useful pair kept."""
    amax = maps.left_max(epsl, outward=False)
    best: tuple | None = None
    for shrink in (0.0, 1e-9, 1e-6):
        if best is not None and time.monotonic() > deadline:
            break
        al = np.minimum(a, np.array(amax)) * (1.0 - shrink)
        y0, y1 = maps.right_budgets(al[:1], al[1:], epsl, outward=False)
        bl = tuple(Fraction(float(v)) for v in al)
        br = (Fraction(float(y0[0])), Fraction(float(y1[0])))
        # long sides (a program of seconds): the first margin that passes is kept rather than three tried, the
        # larger ones only while nothing passes (the judge decides either way)
        quick = per_lp * 60.0 > deadline - time.monotonic()
        tl, tr = (_quick_design(orcs[s], b, loss, deadline) if quick else side_design(orcs[s], b, loss, deadline)
                  for s, b in (("left", bl), ("right", br)))
        u = side_count(orcs["left"].spec, tl) + side_count(orcs["right"].spec, tr)
        if best is None or u > best[0] + 1e-12:
            best = (u, {"left": tl, "right": tr}, {"left": [float(v) for v in bl], "right": [float(v) for v in br]})
    assert best is not None
    return best[1], best[2]
