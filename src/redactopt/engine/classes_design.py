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
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from redactopt.judge.certify import Certificate, make_certificate
from redactopt.judge.scan import verify_mechanism
from redactopt.model.chain import MarkovChain, is_two_state
from redactopt.model.chain import Chain as KChain
from redactopt.model.mechanism_classes import CLASSES, as_kchain, local_as_scan
from redactopt.engine.class_judge import block_design, design_owner, design_scan
from redactopt.solvers.owner_lp import BlockInfeasible, max_exact_n, window_bound

__all__ = ["ClassDesign", "design_class", "compare_classes", "cli_design", "cli_compare", "format_text", "format_compare"]


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

    def to_dict(self) -> dict:
        """The mechanism file (:mod:`redactopt.classes_io`; a local design in the k-state format)."""
        if self.cls == "local" and isinstance(self.mechanism, np.ndarray):
            from redactopt.kio import kmechanism_to_dict

            return kmechanism_to_dict(self.chain, self.mechanism, private=self.p, eps=self.eps, method="local",
                                      utility=self.utility, leakage=self.leakage,
                                      certificate=self.certificate.to_dict())
        from redactopt.classes_io import design_to_dict

        return design_to_dict(self)


def _local(chain: object, n: int, eps: float, p: int, time_limit: float) -> ClassDesign:
    """Today's certified local design, re-judged as its scan completion by this module's judge."""
    if is_two_state(chain):
        from redactopt.engine.design import design

        res = design(chain, n, eps=eps, p=p, time_limit=time_limit)
    else:
        from redactopt.engine.kdesign import kdesign

        res = kdesign(as_kchain(chain), n, eps=eps, p=p, time_limit=time_limit)
    kc = as_kchain(chain)
    q = np.asarray(res.redact_prob, dtype=float)
    status, _ = verify_mechanism(local_as_scan(kc, q, p), eps)
    if status != "certified":
        raise RuntimeError(f"the local design's scan completion was not certified ({status}): a judge disagrees")
    return ClassDesign("local", kc, n, p, float(eps), q, float(res.utility), float(res.leakage), status,
                       res.certificate, {"local": float(res.utility)}, {"method": res.method})


def _scan(chain: object, n: int, eps: float, p: int, time_limit: float, tol: float, holder: bool) -> ClassDesign:
    d = design_scan(chain, n, eps=eps, p=p, holder=holder, tol=tol, time_limit=time_limit)
    name = "holder-scan" if holder else "scan"
    return ClassDesign("holder" if holder else "scan", as_kchain(chain), n, p, float(eps), d.mechanism, d.utility,
                       d.leakage.leakage, d.info["verdict"], d.certificate, {name: d.utility},
                       {"split": d.split, **d.info})


def _with_local(memo: dict, scan: ClassDesign) -> ClassDesign:
    """The scan design, or the local design's scan completion when a local design is known and that is
    more useful (the completion has the local mechanism's leakage and publishes at least as much)."""
    local = memo.get("local")
    if local is None:
        return scan
    comp = local_as_scan(scan.chain, local.mechanism, scan.p)
    status, res = verify_mechanism(comp, scan.eps)
    u = comp.utility()
    if status != "certified" or u <= scan.utility:
        return scan
    cert = make_certificate(scan.certificate.upper_bound, u, solver=scan.certificate.solver,
                            scope=scan.certificate.scope, stopped=scan.certificate.stopped)
    return ClassDesign("scan", scan.chain, scan.n, scan.p, scan.eps, comp, u, res.leakage, status, cert,
                       {**scan.candidates, "local-completion": u}, {**scan.info, "best": "local-completion"})


def _table_class(chain: object, n: int, eps: float, p: int, holder: bool) -> tuple[Any, float, float, str, Certificate,
                                                                               dict]:
    """The exact LP optimum for small ``n``, else the block design with the window bound.

    A block that cannot publish its boundary for sure is no candidate (utility ``-inf``); the window
    bound still certifies the class.
    """
    kc = as_kchain(chain)
    if n <= max_exact_n(kc.k, holder):
        d = design_owner(kc, n, eps=eps, p=p, holder=holder)
    else:
        try:
            d = block_design(kc, n, eps=eps, p=p, holder=holder)
        except BlockInfeasible as exc:
            ub, win = window_bound(kc, n, eps=eps, p=p, holder=holder)
            cert = Certificate(ub, math.inf, "holder-window-lp" if holder else "owner-window-lp",
                               "holder" if holder else "owner")
            return None, -math.inf, math.nan, "none", cert, {"window": win, "block": str(exc)}
    return d.mechanism, d.utility, d.leakage.leakage, d.info["verdict"], d.certificate, d.info


def design_class(chain: object, n: int, *, eps: float, p: int = 0, cls: str = "scan", time_limit: float = 60.0,
                 tol: float = 9e-7, cache: dict | None = None) -> ClassDesign:
    r"""The best verified design of class ``cls`` with a certified bound over the class.

    Parameters
    ----------
    chain : MarkovChain or KChain
    n, p : int
        Records and the 0-based private record.
    eps : float
        Budget (nats).
    cls : {"local", "scan", "owner", "holder"}
    time_limit : float
        Seconds for each optimiser that takes a limit (the local design; the scan's split search).
    tol : float
        Target gap of the scan optimum.
    cache : dict, optional
        Candidates already computed for this problem (filled in; :func:`compare_classes` shares one).

    Returns
    -------
    ClassDesign
        For ``owner`` the better of the owner optimum (or block design) and the scan optimum; for
        ``holder`` also the owner design and, where the holder LP is too large, the holder scan (half
        the time limit: it is only a candidate).  The certificate's bound holds for every
        mechanism of ``cls`` and is never below the returned utility (a bound below it is an error).
    """
    if cls not in CLASSES:
        raise ValueError(f"cls must be one of {', '.join(CLASSES)}, got {cls!r}")
    t0 = time.monotonic()
    memo = {} if cache is None else cache

    def get(name: str, make: Any) -> Any:
        if name not in memo:
            memo[name] = make()
        return memo[name]

    if cls == "local":
        return get("local", lambda: _local(chain, n, eps, p, time_limit))
    scan = get("scan", lambda: _with_local(memo, _scan(chain, n, eps, p, time_limit, tol, holder=False)))
    if cls == "scan":
        return scan
    cands: dict[str, tuple] = {"scan": (scan.mechanism, scan.utility, scan.leakage, scan.verdict)}
    mech, u, leak, verdict, cert, info = get("owner", lambda: _table_class(chain, n, eps, p, holder=False))
    cands["owner-lp" if "n_lp" in info else "owner-block"] = (mech, u, leak, verdict)
    if cls == "holder":
        if n > max_exact_n(as_kchain(chain).k, True):  # below, the holder LP is the optimum itself
            hs = get("holder-scan", lambda: _scan(chain, n, eps, p, time_limit / 2, tol, holder=True))
            cands["holder-scan"] = (hs.mechanism, hs.utility, hs.leakage, hs.verdict)
        mech, u, leak, verdict, cert, info = get("holder", lambda: _table_class(chain, n, eps, p, holder=True))
        cands["holder-lp" if "n_lp" in info else "holder-block"] = (mech, u, leak, verdict)
    best = max(cands, key=lambda k: cands[k][1])
    bm, bu, bl, bv = cands[best]
    certificate = make_certificate(cert.upper_bound, bu, solver=cert.solver, scope=cert.scope, stopped=cert.stopped)
    return ClassDesign(cls, as_kchain(chain), n, p, float(eps), bm, bu, bl, bv, certificate,
                       {k: v[1] for k, v in cands.items()}, {"best": best, "seconds": time.monotonic() - t0, **info})


def compare_classes(chain: object, n: int, *, eps: float, p: int = 0, classes: tuple[str, ...] = CLASSES,
                    time_limit: float = 60.0) -> list[ClassDesign]:
    r"""One verified design per class, in the order local ⊆ scan ⊆ owner ⊆ holder, made monotone.

    A larger class's design is never less useful than a smaller one's (a smaller class's verified
    design is a candidate of the larger), and each certified bound is kept as computed: a bound of a
    larger class below a smaller class's verified utility raises (it would be a wrong bound).
    """
    order = [c for c in CLASSES if c in classes]
    out: list[ClassDesign] = []
    cache: dict = {}
    for c in order:
        d = design_class(chain, n, eps=eps, p=p, cls=c, time_limit=time_limit, cache=cache)
        if out and out[-1].utility > d.utility:
            prev = out[-1]
            d = ClassDesign(c, d.chain, n, p, d.eps, prev.mechanism, prev.utility, prev.leakage, prev.verdict,
                            make_certificate(d.certificate.upper_bound, prev.utility, solver=d.certificate.solver,
                                             scope=d.certificate.scope, stopped=d.certificate.stopped),
                            {**d.candidates, prev.cls: prev.utility}, {**d.info, "best": prev.cls})
        out.append(d)
    return out


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
    lines = [f"design: class={d.cls}  n={d.n}  p={d.p + 1}  eps={d.eps:g}  states={', '.join(map(str, d.chain.labels))}",
             f"mechanism   : {kind} (best candidate: {best})",
             f"utility     : {d.utility:.10f}",
             f"leakage     : {d.leakage:.15g} (exact, {d.verdict}; eps = {d.eps:g})",
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
