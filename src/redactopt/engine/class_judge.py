r"""Where scan, owner and holder proposals are judged and certified (issue 26).

The optimisers of :mod:`redactopt.solvers.scan_lp` and :mod:`redactopt.solvers.owner_lp` only
propose a mechanism and a bound.  Here every proposal is judged exactly by
:func:`redactopt.judge.scan.verify_mechanism` (outward rounding, rationals where the floats cannot
decide; docs/beyond_local.md, §2), a proposal the judge does not certify is replaced by the
mechanism that redacts everything, and the certificate is made from the proven bound and the
*verified* utility (:func:`redactopt.judge.certify.make_certificate`: a bound below it is an error,
never clamped).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from redactopt.errors import PrivacyCheckError
from redactopt.judge.certify import Certificate, make_certificate
from redactopt.judge.scan import ClassLeakage, verify_mechanism
from redactopt.model.mechanism_classes import BlockMechanism, OwnerMechanism, RunScanMechanism, ScanMechanism
from redactopt.solvers.owner_lp import OwnerProposal, propose_block, propose_owner
from redactopt.solvers.scan_lp import propose_scan

__all__ = ["ScanDesign", "OwnerDesign", "design_scan", "design_run_scan", "design_owner", "block_design"]


@dataclass(frozen=True)
class ScanDesign:
    r"""A verified scan mechanism with a certified upper bound over its class.

    ``certificate.scope`` is ``"scan"`` (or ``"holder-scan"``): the bound holds for every scan
    mechanism whose two sides decide independently (docs/beyond_local.md, §1).  ``split`` is the
    left side's budget per ordered pair (the right side has ``eps`` minus it).
    """

    mechanism: ScanMechanism | RunScanMechanism
    utility: float
    leakage: ClassLeakage
    eps: float
    certificate: Certificate
    split: dict
    info: dict


@dataclass(frozen=True)
class OwnerDesign:
    """A verified owner/holder (or block) mechanism with a certified bound over its class."""

    mechanism: OwnerMechanism | BlockMechanism
    utility: float
    leakage: ClassLeakage
    eps: float
    certificate: Certificate
    info: dict


def _certified(mech: object, eps: float) -> bool:
    return verify_mechanism(mech, eps)[0] == "certified"



def _judged_or_fallback(prop: Any, eps: float) -> tuple[Any, str, Any]:
    """The proposal's mechanism if the exact judge certifies it, else its fallback (judged too): the
    mechanism, the verdict and the judge's result."""
    status, res = verify_mechanism(prop.mechanism, eps)
    if status == "certified":
        return prop.mechanism, status, res
    status, res = verify_mechanism(prop.fallback, eps)
    return prop.fallback, status, res

def design_scan(chain: object, n: int, *, eps: float, p: int = 0, holder: bool = False, tol: float = 9e-7,
                time_limit: float = 10.0, max_boxes: int = 20000) -> ScanDesign:
    r"""The optimal scan mechanism (holder scan with ``holder=True``), judged, with a proven bound.

    Parameters
    ----------
    chain : KChain or MarkovChain
    n, p : int
        Records and the 0-based private record.
    eps : float
        Budget (nats).
    tol : float
        Target gap on the utility (the split search stops when the bound is within it, or at
        ``time_limit``).

    Returns
    -------
    ScanDesign
        The proposal of :func:`~redactopt.solvers.scan_lp.propose_scan` if the exact judge certifies
        its leakage at most ``eps`` (else the mechanism redacting everything), its utility, and a
        certificate whose bound is the proposal's verified dual point divided by ``n``.
    """
    t0 = time.monotonic()
    prop = propose_scan(chain, n, eps=eps, p=p, holder=holder, tol=tol, time_limit=time_limit, max_boxes=max_boxes)
    mech, status, res = _judged_or_fallback(prop, eps)
    u = mech.utility()
    ub = 0.0 if prop.bound == 0 else math.nextafter(prop.bound / n, math.inf)
    cert = make_certificate(ub, u, solver="scan-lp",
                            scope="holder-scan" if holder else "scan", stopped=prop.stopped)
    info = {**prop.info, "seconds": time.monotonic() - t0, "verdict": status}
    return ScanDesign(mech, u, res, float(eps), cert, prop.split, info)


def design_run_scan(chain: object, n: int, *, eps: float, first: int, last: int, tol: float = 9e-7,
                    time_limit: float = 10.0, max_boxes: int = 20000,
                    start: tuple[float, float] | None = None) -> ScanDesign:
    r"""The optimal scan of the run ``first..last`` (0-based, ``first < last``), judged about every record of the
    run, with a proven bound over every scan of the run (docs/mathematics.md §7d).

    The proposal of :func:`~redactopt.solvers.run_scan.propose_run_scan` is kept if
    :func:`~redactopt.judge.scan.verify_mechanism` certifies its leakage about each record of the run at most
    ``eps`` (else the mechanism redacting everything); ``start``: left budgets the search tries first; the
    certificate's bound is the proposal's verified dual
    point divided by ``n`` (scope ``"run-scan"``), never below the verified utility.
    """
    from redactopt.solvers.run_scan import propose_run_scan

    t0 = time.monotonic()
    prop = propose_run_scan(chain, n, eps=eps, first=first, last=last, tol=tol, time_limit=time_limit,
                            max_boxes=max_boxes, start=start)
    mech, status, res = _judged_or_fallback(prop, eps)
    u = mech.utility()
    ub = 0.0 if prop.bound == 0 else math.nextafter(prop.bound / n, math.inf)
    cert = make_certificate(ub, u, solver="run-scan-lp", scope="scan", stopped=prop.stopped)
    info = {**prop.info, "seconds": time.monotonic() - t0, "verdict": status,
            "proposal": "judged" if mech is prop.mechanism else "refused by the judge: all redacted"}
    return ScanDesign(mech, u, res, float(eps), cert, prop.split, info)


def _owner_design(prop: OwnerProposal, eps: float, holder: bool, t0: float) -> OwnerDesign:
    status, res = verify_mechanism(prop.mechanism, eps)
    if status != "certified":  # the proposal's last resort redacts everything: always private
        raise PrivacyCheckError(f"the exact judge did not certify the {prop.solver} design ({status}; "
                                f"leakage {res.leakage:.6g} > eps = {eps:g})")
    u = prop.mechanism.utility()
    cert = make_certificate(prop.bound, u, solver=prop.solver, scope="holder" if holder else "owner")
    return OwnerDesign(prop.mechanism, u, res, float(eps), cert,
                       {**prop.info, "seconds": time.monotonic() - t0, "verdict": status})


def design_owner(chain: object, n: int, *, eps: float, p: int = 0, holder: bool = False,
                 deadline: float | None = None) -> OwnerDesign:
    r"""The exact optimum over every owner (``holder=True``: holder) mechanism of ``n`` records, judged.

    The bound is the LP's verified dual point (valid for the exact chain); the design is the LP
    solved slightly below the budget, snapped, at the first margin the exact judge certifies
    (:func:`~redactopt.solvers.owner_lp.propose_owner`).
    """
    t0 = time.monotonic()
    prop = propose_owner(chain, n, eps=eps, p=p, holder=holder, accept=lambda m: _certified(m, eps), deadline=deadline)
    return _owner_design(prop, eps, holder, t0)


def block_design(chain: object, n: int, *, eps: float, p: int, holder: bool = False,
                 total: int | None = None, bound_total: int | None = None,
                 deadline: float | None = None) -> OwnerDesign:
    r"""A verified block design for long sequences with the window bound (:func:`~redactopt.solvers.owner_lp.propose_block`).

    Raises :class:`~redactopt.solvers.owner_lp.BlockInfeasible` when the block's boundary is too
    close to ``p`` to be published for sure within ``eps``.
    """
    t0 = time.monotonic()
    prop = propose_block(chain, n, eps=eps, p=p, holder=holder, total=total, bound_total=bound_total,
                         accept=lambda m: _certified(m, eps), deadline=deadline)
    return _owner_design(prop, eps, holder, t0)
