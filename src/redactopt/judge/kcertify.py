"""k-state design results and their certificates: the only constructor of :class:`KDesignResult`.

The k-state counterpart of :mod:`redactopt.judge.certify`: :func:`kverify` decides
:math:`\\mathcal L\\le\\epsilon` with the float evaluator outside a band around ``eps`` that covers
its rounding and in rational arithmetic inside it (:func:`redactopt.judge.kexact.certify_kexact`, on
the private record's segment between always-published records, which is exact for the whole
sequence); :func:`kfinalize` snaps a proposal (toward privacy only when a full snap fails), verifies it and packages it with a
:class:`~redactopt.judge.certify.Certificate` (a bound below the verified utility is a
:class:`~redactopt.errors.BoundError`).  Nothing above ``eps`` is ever returned.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from redactopt._validate import check_eps
from redactopt.errors import PrivacyCheckError
from redactopt.judge.certify import VerifiedDesign, make_certificate, snap_variants, zone_verdict
from redactopt.judge.kexact import certify_kexact
from redactopt.judge.kleakage import KLeakageResult, check_kmechanism, kmax_leakage, kutility
from redactopt.judge.tolerances import BOUNDARY_RTOL, SNAP_TOL
from redactopt.model.kchain import KChain

__all__ = ["KDesignResult", "kboundary_zone", "ksafe_budget", "kverify", "kfinalize"]

_ULP = 2.0**-52


def kboundary_zone(eps: float, n: int, k: int) -> float:
    """Half-width of the band around ``eps`` in which a float k-state leakage decides nothing.

    Relative :data:`~redactopt.judge.tolerances.BOUNDARY_RTOL` plus ``4 k`` ulps per record (each
    step of the prefix products loses at most about ``k`` ulps in each of the two likelihoods).
    """
    return eps * BOUNDARY_RTOL + 4.0 * k * _ULP * (n + 16)


def ksafe_budget(eps: float, n: int, k: int) -> float:
    """What optimisers aim at: twice the boundary zone below ``eps`` (rounding never decides them)."""
    return eps - 2.0 * kboundary_zone(eps, n, k)


@dataclass(frozen=True)
class KDesignResult(VerifiedDesign):
    """A verified k-state mechanism with its exact utility, exact leakage and certificate.

    ``redact_prob`` is ``(n, k)`` (column ``x`` is state ``chain.labels[x]``); ``private`` holds
    0-based indices; ``leakage`` is the exact leakage of the stored array (worst over
    ``private``) and ``witness`` attains it.  ``certificate`` bounds the utility of every local
    redaction mechanism; ``class_certificate`` (when a solver derived one) a named class only.
    """

    chain: KChain
    witness: KLeakageResult


def kverify(chain: KChain, redact_prob: np.ndarray, private: tuple[int, ...], eps: float,
            worst: KLeakageResult | None = None) -> tuple[KLeakageResult, bool]:
    """Exact leakage (worst over ``private``) and whether it is *provably* at most ``eps`` (module docstring).

    A segment longer than :data:`~redactopt.judge.exact.MAX_EXACT_N` inside the band is refused:
    a pass is always a proof.
    """
    q = np.asarray(redact_prob, dtype=float)
    res = worst if worst is not None else kmax_leakage(chain, q, private)
    zone = kboundary_zone(eps, q.shape[0], chain.k)
    return res, zone_verdict(res.leakage, eps, zone, q, private,
                             lambda seg, p: certify_kexact(chain, seg.tolist(), [p], eps).status == "certified")


def kfinalize(chain: KChain, redact_prob: object, *, private: object, eps: float, method: str,
              upper_bound: float, solver: str, scope: str = "all", info: dict | None = None,
              tol: float = SNAP_TOL, stopped: bool = False,
              class_bound: tuple[float, str, str] | None = None) -> KDesignResult:
    """Snap, re-verify exactly and package a k-state design (the one constructor of :class:`KDesignResult`).

    Raises
    ------
    PrivacyCheckError
        If the exact leakage of the snapped array exceeds ``eps`` (decided in rationals near
        the boundary), and that of the array snapped toward privacy only too
        (:func:`~redactopt.judge.certify.snap_variants`).
    BoundError
        If a bound lies below the verified utility.
    """
    eps = check_eps(eps)
    for q in snap_variants(np.asarray(redact_prob, dtype=float), tol):
        q, priv = check_kmechanism(chain, q, private)
        res, ok = kverify(chain, q, priv, eps)
        if ok:
            break
    if not ok:
        verdict = "exceeds" if res.leakage > eps else "could not be proven at most"
        raise PrivacyCheckError(f"{method}: exact leakage {res.leakage:.12g} {verdict} eps={eps:.12g} after snapping")
    u = kutility(chain, q)
    cert = make_certificate(upper_bound, u, solver=solver, scope=scope, stopped=stopped)
    cls = None if class_bound is None else make_certificate(class_bound[0], u, solver=class_bound[1],
                                                             scope=class_bound[2])
    q.setflags(write=False)
    return KDesignResult(chain=chain, redact_prob=q, private=priv, eps=eps, method=method, utility=u,
                         leakage=res.leakage, witness=res, certificate=cert, info=dict(info or {}),
                         class_certificate=cls)
