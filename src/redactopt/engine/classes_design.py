r"""Designs in every mechanism class, verified exactly, with certified bounds (issue 26).

``design_class(chain, n, eps=..., p=..., cls=...)`` is the one entry: ``local`` (today's designs,
:func:`redactopt.engine.design.design` / :func:`redactopt.engine.kdesign.kdesign`), ``scan``
(:func:`redactopt.engine.class_judge.design_scan`), ``owner`` and ``holder`` (the LP over every
mechanism for small ``n``, the block design with the window bound beyond;
:mod:`redactopt.solvers.owner_lp`).  The optimisers only propose: every mechanism returned has been
judged by :func:`redactopt.judge.scan.verify_mechanism` (a local one by its own exact check and, as
its scan completion, by the same judge).  A class contains the smaller ones (local ⊆ scan ⊆ owner ⊆
holder), so each class also takes the smaller classes' designs as candidates and returns the most
useful verified one: the answers can only grow along the chain of classes.  The certificate bounds
every mechanism of the class asked for.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from redactopt import _progress
from redactopt._validate import check_eps, check_index, check_n, check_real
from redactopt.judge.certify import Certificate, make_certificate
from redactopt.judge.scan import verify_mechanism
from redactopt.judge.tolerances import UTILITY_ATOL
from redactopt.model.chain import MarkovChain, is_two_state
from redactopt.model.chain import Chain as KChain
from redactopt.model.varying import VaryingChain
from redactopt.model.mechanism_classes import (CLASSES, MAX_TABLE_ENTRIES, OwnerMechanism, ScanMechanism, as_kchain,
                                               local_as_run_scan, local_as_scan, owner_as_holder, scan_as_owner)
from redactopt.engine.class_judge import block_design, design_owner, design_run_scan, design_scan
from redactopt.solvers.owner_lp import BlockInfeasible, max_exact_n, window_bound

__all__ = ["ClassDesign", "STAGE_SHARES", "design_class", "compare_classes", "cli_design", "cli_compare", "format_text", "format_compare"]


@dataclass(frozen=True)
class ClassDesign:
    r"""A verified mechanism of a class with its exact utility, leakage and a certified bound.

    Attributes
    ----------
    cls : str
        The class asked for (``local``, ``scan``, ``owner``, ``holder``); the bound covers all of it.
    mechanism
        :class:`~redactopt.model.mechanism_classes.ScanMechanism`, ``OwnerMechanism``,
        ``BlockMechanism``, or for ``local`` the ``(n, k)`` array of redaction probabilities.
    utility, leakage : float
        Definition 2 and Definition 1 of the mechanism as stored.
    certificate : Certificate
        ``upper_bound`` over every mechanism of ``cls``; ``gap`` to ``utility``.
    candidates : dict
        Verified utility of every candidate considered (by name).
    run : tuple of int, optional
        ``(first, last)`` (0-based) when the private records are a run of two or more adjacent records
        (docs/mathematics.md §7d); ``p`` is then ``first`` and the leakage the largest about the run's records.
    """

    cls: str
    chain: KChain
    n: int
    p: int
    eps: float
    mechanism: Any
    utility: float
    leakage: float
    verdict: str
    certificate: Certificate
    candidates: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)
    run: tuple[int, int] | None = None

    @property
    def private(self) -> list[int]:
        """The private records (0-based): ``p``, or every record of the run."""
        return [self.p] if self.run is None else list(range(self.run[0], self.run[1] + 1))

    def to_dict(self) -> dict:
        """The mechanism file (:mod:`redactopt.classes_io`; a local design in the k-state format)."""
        if self.cls == "local" and isinstance(self.mechanism, np.ndarray):
            from redactopt.kio import kmechanism_to_dict

            return kmechanism_to_dict(self.chain, self.mechanism, private=self.p if self.run is None else self.private,
                                      eps=self.eps, method="local",
                                      utility=self.utility, leakage=self.leakage,
                                      certificate=self.certificate.to_dict())
        from redactopt.classes_io import design_to_dict

        return design_to_dict(self)


#: Share of the time limit each stage may use, by the class asked for (cumulative: time a stage leaves
#: goes to the next).  The local design's optimisers each take the time they are given (and may overrun it),
#: so it is given 0.8 of its share (at a 60 s limit about 7 s: enough for SCIP to certify its bound at the
#: Fig. 3 point, where 3 s left a gap of 4e-5).
STAGE_SHARES = {"local": {"local": 1.0},
                "scan": {"local": 0.2, "scan": 0.8},
                "owner": {"local": 0.15, "scan": 0.45, "owner": 0.4},
                "holder": {"local": 0.15, "scan": 0.3, "owner": 0.2, "holder": 0.35}}


@dataclass
class _Candidate:
    """A verified mechanism of some class, as a candidate of a larger one (``name``: where it came from)."""

    name: str
    mechanism: Any
    utility: float
    leakage: float
    verdict: str


def _judged(name: str, mech: Any, eps: float) -> _Candidate | None:
    """The candidate if the exact judge certifies it, else ``None`` (judged in the format it is written in)."""
    status, res = verify_mechanism(mech, eps)
    if status != "certified":
        return None
    return _Candidate(name, mech, float(mech.utility()), float(res.leakage), status)


def _local(chain: object, n: int, eps: float, p: int, time_limit: float) -> ClassDesign:
    """Today's certified local design, re-judged as its scan completion by this module's judge."""
    if is_two_state(chain):
        from redactopt.engine.window import design_local as design  # the local design of this chain

        res = design(chain, n, eps=eps, p=p, time_limit=time_limit)
    else:
        from redactopt.engine.kdesign import kdesign

        res = kdesign(as_kchain(chain), n, eps=eps, p=p, time_limit=time_limit)
    kc = as_kchain(chain)
    q = np.asarray(res.redact_prob, dtype=float)
    # the completion stops with probability 1 - q, a rounded double: a design sitting exactly at the budget
    # (ratio e^eps + 7e-17 at alpha = 0.5, beta = 1e-12) can leave it; rounded the other way it stays within
    completion = None
    for rounding in ("nearest", "down", "up"):
        comp = _judged("local-completion", local_as_scan(kc, q, p, rounding), eps)
        if comp is not None:
            completion = comp
            break
    return ClassDesign("local", kc, n, p, float(eps), q, float(res.utility), float(res.leakage), "certified",
                       res.certificate, {"local": float(res.utility)},
                       {"method": res.method, "best": "local", "completion": completion})


def _local_run(chain: object, n: int, eps: float, run: tuple[int, int], time_limit: float) -> ClassDesign:
    """The certified local design of a run (:func:`~redactopt.engine.joint.design_joint`, ``optimal``: the run
    decomposition, docs/mathematics.md §7c), re-judged as its run-scan completion by the scan judge."""
    from redactopt.engine.joint import design_joint

    first, last = run
    mc = _two_state(chain)
    res = design_joint(mc, n, eps=eps, private=list(range(first, last + 1)), method="optimal",
                       time_limit=time_limit)
    kc = as_kchain(chain)
    q = np.asarray(res.redact_prob, dtype=float)
    completion = None
    for rounding in ("nearest", "down", "up"):
        comp = _judged("local-completion", local_as_run_scan(kc, q, first, last, rounding), eps)
        if comp is not None:
            completion = comp
            break
    return ClassDesign("local", kc, n, first, float(eps), q, float(res.utility), float(res.leakage), "certified",
                       res.certificate, {"local": float(res.utility)},
                       {"method": res.method, "best": "local", "completion": completion}, run)


def _two_state(chain: object) -> MarkovChain:
    """A two-state chain as the :class:`MarkovChain` of the same doubles (the run designs take one)."""
    if isinstance(chain, MarkovChain):
        return chain
    P = as_kchain(chain).exact_transition()
    return MarkovChain(float(P[0][1]), float(P[1][0]))


def _run_stage(cls: str, kc: KChain, n: int, eps: float, run: tuple[int, int], prev: ClassDesign, deadline: float,
               tol: float) -> ClassDesign:
    """The scan design of a run from its optimiser and the local design's run-scan completion ``prev``."""
    t0 = time.monotonic()
    left = max(0.05, deadline - t0)
    first, last = run
    cands = _contained(prev, cls, eps)
    trivial = math.nextafter((n - (last - first + 1)) / n, math.inf)
    bounds: list[tuple[float, str, bool]] = [(trivial, "trivial", False)]
    d = design_run_scan(kc, n, eps=eps, first=first, last=last, tol=tol, time_limit=0.75 * left,
                        start=_local_split(prev))
    cands.append(_Candidate("run-scan-lp", d.mechanism, d.utility, d.leakage.leakage, d.info["verdict"]))
    bounds.append((d.certificate.upper_bound, d.certificate.solver, d.certificate.stopped))
    info: dict = dict(split=d.split, **d.info)
    if d.certificate.stopped:  # the run's search did not close: its end records' one-record scan bounds (relaxations)
        for j in (first, last):
            rest = deadline - time.monotonic()
            if rest < 0.5:
                break
            one = design_scan(kc, n, eps=eps, p=j, tol=tol, time_limit=0.45 * rest)
            bounds.append((one.certificate.upper_bound, f"scan-lp (record {j + 1} alone)", one.certificate.stopped))
    best = max(cands, key=lambda c: c.utility)
    (ub, solver, stopped), refuted = _bound_of(bounds, best.utility)
    cert = make_certificate(ub, best.utility, solver=solver, scope=cls, stopped=stopped)
    info["bound_relaxation"] = solver if "alone" in solver else None
    if refuted:
        info["refuted_bounds"] = refuted
    info.update(best=best.name, seconds=time.monotonic() - t0)
    return ClassDesign(cls, kc, n, first, float(eps), best.mechanism, best.utility, best.leakage, best.verdict, cert,
                       {c.name: c.utility for c in cands}, info, run)


def _local_split(prev: ClassDesign) -> tuple[float, float] | None:
    """The local run design's leakages about the run's first record, ``(A, B)`` (its completion's left side): a
    start for the run's scan search (its completion is a scan of the run with these left budgets)."""
    from redactopt.judge.scan import scan_side_ratios

    comp = prev.info.get("completion")
    if comp is None or comp.mechanism.side_length("left") == 0:
        return None
    rat = scan_side_ratios(comp.mechanism.boundary_scan("left"), "left")
    if rat is None or not np.all(np.isfinite(rat.hi)):
        return None
    return float(np.log(rat.hi[0, 1])), float(np.log(rat.hi[1, 0]))


def _run_of(p: object, n: int) -> tuple[int, int] | None:
    """``(first, last)`` when ``p`` names two or more private records forming one run; ``None`` for one record."""
    if isinstance(p, (int, np.integer)):
        return None
    pos = sorted(set(check_index(v, n) for v in p))  # type: ignore[union-attr]
    if not pos:
        raise ValueError("p must name at least one private record")
    if len(pos) == 1:
        return None
    if pos != list(range(pos[0], pos[-1] + 1)):
        raise ValueError(f"the private records must be one run of adjacent records for a class design, got {pos}")
    return pos[0], pos[-1]


def _contained(prev: ClassDesign, cls: str, eps: float) -> list[_Candidate]:
    r"""The smaller class's design as candidates of class ``cls``: as it is (it is a mechanism of ``cls`` too), and
    written in ``cls``'s format and re-judged there (a local table as its scan completion; a scan as its table
    and a table as a holder table where the table is small).  Its utility as stored is kept exactly, so the
    answers can only grow along local ⊆ scan ⊆ owner ⊆ holder."""
    mech = prev.mechanism
    if isinstance(mech, np.ndarray):  # the scan completion publishes what the local design does (Proposition 2)
        comp = prev.info.get("completion")
        if comp is None:
            return []
        out = [_Candidate("local design", comp.mechanism, comp.utility, comp.leakage, comp.verdict)]
        mech = comp.mechanism
    else:
        out = [_Candidate(f"{prev.cls} design", mech, prev.utility, prev.leakage, prev.verdict)]
    small = prev.chain.k ** prev.n * 2 ** (prev.n - 1) <= MAX_TABLE_ENTRIES and prev.n <= 12
    if cls in ("owner", "holder") and isinstance(mech, ScanMechanism) and small:
        c = _judged("scan-as-table", scan_as_owner(mech), eps)
        out += [c] if c is not None else []
    if cls == "holder" and isinstance(mech, OwnerMechanism) and not mech.holder:
        c = _judged("owner-as-holder-table", owner_as_holder(mech), eps)
        out += [c] if c is not None else []
    return out


def _bound_of(bounds: list[tuple[float, str, bool]], best: float) -> tuple[tuple[float, str, bool], list[str]]:
    """The smallest bound not refuted by the verified ``best`` utility, and the refuted ones (discarded:
    a bound below a verified utility is no proof; the next valid one is used)."""
    refuted = [f"{name} {ub!r}" for ub, name, _ in bounds if not ub >= best - UTILITY_ATOL]
    valid = [b for b in bounds if b[0] >= best - UTILITY_ATOL]
    return min(valid, key=lambda b: b[0]), refuted


def _stage(cls: str, kc: KChain, n: int, eps: float, p: int, prev: ClassDesign | None, deadline: float,
           tol: float) -> ClassDesign:
    """The design of one class above ``local`` from its own optimiser and the contained class's design ``prev``."""
    t0 = time.monotonic()
    left = max(0.05, deadline - t0)
    cands = _contained(prev, cls, eps) if prev is not None else []
    trivial = math.nextafter((n - 1) / n, math.inf)
    bounds: list[tuple[float, str, bool]] = [(trivial, "trivial", False)]
    notes: list[str] = []
    info: dict = {}
    if cls == "scan":
        d = design_scan(kc, n, eps=eps, p=p, tol=tol, time_limit=0.9 * left)
        cands.append(_Candidate("scan-lp", d.mechanism, d.utility, d.leakage.leakage, d.info["verdict"]))
        bounds.append((d.certificate.upper_bound, d.certificate.solver, d.certificate.stopped))
        info.update(split=d.split, **d.info)
    else:
        holder = cls == "holder"
        if holder and n > max_exact_n(kc.k, True):  # the holder scan, a candidate only (half the stage)
            hs = design_scan(kc, n, eps=eps, p=p, tol=tol, holder=True, time_limit=0.45 * left)
            cands.append(_Candidate("holder-scan", hs.mechanism, hs.utility, hs.leakage.leakage, hs.info["verdict"]))
        got = _table_class(kc, n, eps, p, holder, deadline)
        if got[0] is not None:
            cands.append(got[0])
        bounds.append(got[1])
        notes += got[2].pop("notes", [])
        info.update(got[2])
    best = max(cands, key=lambda c: c.utility)
    (ub, solver, stopped), refuted = _bound_of(bounds, best.utility)
    cert = make_certificate(ub, best.utility, solver=solver, scope=cls, stopped=stopped)
    if refuted:
        info["refuted_bounds"] = refuted
    if notes:
        info["notes"] = notes
    info.update(best=best.name, seconds=time.monotonic() - t0)
    return ClassDesign(cls, kc, n, p, float(eps), best.mechanism, best.utility, best.leakage, best.verdict, cert,
                       {c.name: c.utility for c in cands}, info)


def _table_class(kc: KChain, n: int, eps: float, p: int, holder: bool,
                 deadline: float) -> tuple[_Candidate | None, tuple[float, str, bool], dict]:
    """The exact LP's design for small ``n`` (the bound: :func:`~redactopt.solvers.owner_lp.class_bound`), else
    block designs with their window bounds, on blocks growing while the time allows (the next block, 2k times
    the variables, only while 3k times the last one's time is left).  A block that cannot publish its
    boundary for sure is no candidate; its window bound still certifies the class; the smallest bound is kept."""
    name = "holder" if holder else "owner"
    top = max_exact_n(kc.k, holder)
    if n <= top:
        d = design_owner(kc, n, eps=eps, p=p, holder=holder, deadline=deadline)
        cand = _Candidate(f"{name}-lp", d.mechanism, d.utility, d.leakage.leakage, d.info["verdict"])
        return cand, (d.certificate.upper_bound, d.certificate.solver, False), dict(d.info)
    best: _Candidate | None = None
    bound: tuple[float, str, bool] = (math.inf, f"{name}-window-lp", False)
    info: dict = {"blocks": []}
    last = 0.0
    sizes = range(max(3, top - 3), top + 1)
    for i, total in enumerate(sizes):
        _progress.report(f"{name} blocks", i, len(sizes), note=f"{total} records")
        left = deadline - time.monotonic()
        if left < max(0.2, 3 * kc.k * last):  # the next block's LP has 2k times the variables
            break
        t0 = time.monotonic()
        try:
            d = block_design(kc, n, eps=eps, p=p, holder=holder, total=total, bound_total=total, deadline=deadline)
        except BlockInfeasible as exc:
            ub = getattr(exc, "bound", None)
            if ub is not None and ub[0] < bound[0]:
                bound = (ub[0], f"{name}-window-lp", False)
            info["blocks"].append({"records": total, "block": str(exc)})
            last = time.monotonic() - t0
            continue
        last = time.monotonic() - t0
        info["blocks"].append({"records": total, "utility": d.utility, "bound": d.certificate.upper_bound})
        if d.certificate.upper_bound < bound[0]:
            bound = (d.certificate.upper_bound, d.certificate.solver, False)
        if best is None or d.utility > best.utility:
            best = _Candidate(f"{name}-block", d.mechanism, d.utility, d.leakage.leakage, d.info["verdict"])
    _progress.report(f"{name} blocks", len(sizes), len(sizes))
    if not math.isfinite(bound[0]):
        ub, win = window_bound(kc, n, eps=eps, p=p, holder=holder, total=3, deadline=deadline)
        bound = (ub, f"{name}-window-lp", False)
    return best, bound, info


def design_class(chain: object, n: int, *, eps: float, p: int | Sequence[int] = 0, cls: str = "scan",
                 time_limit: float = 60.0, tol: float = 9e-7, cache: dict | None = None) -> ClassDesign:
    r"""The best verified design of class ``cls`` with a certified bound over the class.

    Monotone by construction: the design of ``cls`` starts from the design of every class it contains
    (local ⊆ scan ⊆ owner ⊆ holder), each computed first, written in the larger class's format and
    re-judged there, so the utility returned for ``cls`` is at least that of each smaller class
    (docs/beyond_local.md, §1).

    Parameters
    ----------
    chain : MarkovChain or KChain
    n : int
        Records.
    p : int or sequence of int
        The 0-based private record, or the records of a *run* of adjacent private records (two-state chains,
        ``cls`` ``local`` or ``scan``: docs/mathematics.md §7d; every record of the run is redacted and the
        mechanism is judged about each).
    eps : float
        Budget (nats), any finite positive double (from the smallest subnormal to 1e300).
    cls : {"local", "scan", "owner", "holder"}
    time_limit : float
        Seconds for the whole design, shared between the classes it builds on (:data:`STAGE_SHARES`);
        every optimiser and linear program is held to its share.
    tol : float
        Target gap of the scan optimum.
    cache : dict, optional
        Designs already computed for this problem, by class (filled in; :func:`compare_classes` shares one).

    Returns
    -------
    ClassDesign
        ``candidates`` lists the verified utility of every candidate (the smaller classes' designs
        among them) and ``info["best"]`` the one returned; ``certificate`` holds the smallest proven
        bound over ``cls`` not refuted by a verified design (a refuted one is listed in
        ``info["refuted_bounds"]`` and discarded); ``info["notes"]`` says where a linear program gave no
        optimum (infeasible within its tolerance, out of time, numerical trouble) and what was used instead.
    """
    if cls not in CLASSES:
        raise ValueError(f"cls must be one of {', '.join(CLASSES)}, got {cls!r}")
    n = check_n(n)
    run = _run_of(p, n)
    if run is None:
        p = check_index(p if isinstance(p, (int, np.integer)) else list(p)[0], n)  # type: ignore[arg-type]
    eps = check_eps(eps)
    tl = check_real(time_limit, "time_limit")
    if not tl > 0:
        raise ValueError(f"time_limit must be > 0, got {time_limit!r}")
    t0 = time.monotonic()
    memo = {} if cache is None else cache
    kc = as_kchain(chain)
    shares = STAGE_SHARES[cls]
    prev: ClassDesign | None = None
    spent = 0.0
    plan = max(0.1 * tl, 0.95 * tl - 0.25)  # what the stages plan with: judging and assembling take the rest
    if run is not None:
        if cls not in ("local", "scan"):
            raise ValueError(f"a run of private records is designed in the classes local and scan; {cls} mechanisms "
                             "of a run are not built (docs/mathematics.md §7d)")
        if kc.k != 2 or isinstance(chain, VaryingChain):
            raise ValueError("a run of private records beyond the local class needs a two-state homogeneous chain")
    stages = CLASSES[:CLASSES.index(cls) + 1]
    for i, c in enumerate(stages):
        spent += shares[c]
        _progress.report("class design", i, len(stages), note=c)
        if c not in memo:
            deadline = t0 + spent * plan
            with _progress.phase(c, sub=True):
                if run is not None:
                    memo[c] = (_local_run(chain, n, eps, run, max(0.8 * (deadline - time.monotonic()), 0.01))
                               if c == "local" else _run_stage(c, kc, n, eps, run, prev, deadline, tol))  # type: ignore[arg-type]
                elif c == "local":
                    memo[c] = _local(chain, n, eps, p, max(0.8 * (deadline - time.monotonic()), 0.01))
                else:
                    memo[c] = _stage(c, kc, n, eps, p, prev, deadline, tol)
        prev = memo[c]
    _progress.report("class design", len(stages), len(stages))
    assert prev is not None
    return prev


def compare_classes(chain: object, n: int, *, eps: float, p: int = 0, classes: tuple[str, ...] = CLASSES,
                    time_limit: float = 60.0) -> list[ClassDesign]:
    r"""One verified design per class, in the order local ⊆ scan ⊆ owner ⊆ holder.

    Every class is :func:`design_class` with one shared cache, so each builds on the designs of the
    classes it contains (computed once) and the utilities grow along the chain by construction.
    ``time_limit`` is that of the largest class asked for (shared as :func:`design_class` shares it).
    """
    order = [c for c in CLASSES if c in classes]
    if not order:
        raise ValueError(f"classes must name at least one of {', '.join(CLASSES)}, got {classes!r}")
    cache: dict = {}
    design_class(chain, n, eps=eps, p=p, cls=order[-1], time_limit=time_limit, cache=cache)
    return [cache[c] for c in order]


def cli_design(args: dict) -> dict:
    r"""What ``redactopt design --class CLS`` should print as JSON: ``args`` holds ``alpha``/``beta`` or
    ``transition`` (rows) and ``labels``, ``n``, ``private`` (1-based), ``eps``, ``class``, ``time_limit``."""
    chain = _chain_of(args)
    d = design_class(chain, int(args["n"]), eps=float(args["eps"]), p=int(args.get("private", 1)) - 1,
                     cls=str(args.get("class", "scan")), time_limit=float(args.get("time_limit", 60.0)))
    return d.to_dict()


def cli_compare(args: dict) -> list[dict]:
    """Rows of ``redactopt compare --class local,scan,owner,holder``: class, utility, leakage, bound, gap."""
    chain = _chain_of(args)
    classes = tuple(str(args.get("classes", ",".join(CLASSES))).split(","))
    rows = []
    for d in compare_classes(chain, int(args["n"]), eps=float(args["eps"]), p=int(args.get("private", 1)) - 1,
                             classes=classes, time_limit=float(args.get("time_limit", 60.0))):
        rows.append({"class": d.cls, "utility": d.utility, "leakage": d.leakage, "upper_bound":
                     d.certificate.upper_bound, "gap": d.certificate.gap, "solver": d.certificate.solver,
                     "best_candidate": d.info.get("best", d.cls)})
    return rows


def _chain_of(args: dict) -> MarkovChain | KChain:
    if args.get("transition") is not None:
        labels = args.get("labels")
        return KChain(args["transition"], labels=tuple(labels) if labels else ())
    return MarkovChain(float(args.get("alpha", 0.01)), float(args.get("beta", 0.8)))


def format_text(d: ClassDesign) -> str:
    """The text ``redactopt design --class CLS`` prints for a design (``--format text``)."""
    kind = type(d.mechanism).__name__ if not isinstance(d.mechanism, np.ndarray) else "local table"
    best = d.info.get("best") or (max(d.candidates, key=d.candidates.get) if d.candidates else d.cls)
    scope = "local" if d.certificate.scope == "all" else d.certificate.scope
    where = f"p={d.p + 1}" if d.run is None else f"private={d.run[0] + 1}-{d.run[1] + 1} (a run)"
    lines = [f"design: class={d.cls}  n={d.n}  {where}  eps={d.eps:g}  states={', '.join(map(str, d.chain.labels))}",
             f"mechanism   : {kind} (best candidate: {best})",
             f"utility     : {d.utility:.10f}",
             f"leakage     : {d.leakage:.15g} (exact, {d.verdict}; eps = {d.eps:g}"
             + ("" if d.run is None else "; the largest about the run's records") + ")",
             f"upper bound : {d.certificate.upper_bound:.10f} ({d.certificate.solver}; valid for all {scope} "
             "mechanisms)",
             f"gap         : {d.certificate.gap:.3g}"]
    if d.certificate.stopped:
        lines.append("search      : stopped by the time limit; the bound is valid, the gap is what remains")
    others = {k: v for k, v in d.candidates.items() if k != best and v > -1}
    if others:
        lines.append("candidates  : " + ", ".join(f"{k} {v:.6f}" for k, v in others.items()))
    return "\n".join(lines)


def format_compare(rows: list[dict]) -> str:
    """The text ``redactopt compare --class ...`` should print for :func:`cli_compare`'s rows."""
    head = f"{'class':<8} {'utility':>12} {'upper bound':>12} {'gap':>9}  {'leakage':>10}  bound by"
    body = [f"{r['class']:<8} {r['utility']:>12.8f} {r['upper_bound']:>12.8f} {r['gap']:>9.2e}  {r['leakage']:>10.6f}  "
            f"{r['solver']}" for r in rows]
    return "\n".join([head] + body)
