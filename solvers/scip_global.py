r"""Certified global optimum over all local redaction mechanisms, by PySCIPOpt.

The design problem (Definitions 1 and 2) is

.. math::
    \max_{q\in[0,1]^{n\times 2},\ q_p=(1,1)} \frac1n\sum_t\sum_x \pi_x(1-q_t[x])
    \quad\text{s.t.}\quad \mathcal L(X_p\to\mathbf Y)\le\epsilon ,

a small non-convex program that SCIP solves by spatial branch and bound; its dual
bound is the certificate.  The formulation is chosen so that every model quantity
is O(1) (solver tolerances cannot hide tiny path sums) and the tree stays small.

**Pattern ratios as compositions of Möbius maps.**  Number one side's records by
distance ``k = 1..m`` from ``p`` (the chain is reversible, so both sides use the same
``P``), let :math:`\rho_k = q_k[0]/q_k[1]` and :math:`\varphi(\gamma) =
(P_{00}\gamma+P_{01})/(P_{10}\gamma+P_{11})`, a monotone map of :math:`[0,\infty]` onto
the hull :math:`[R_{lo},R_{hi}]` of :math:`R_1(v)=P_{0v}/P_{1v}`.  Reading the path sum
of a pattern backwards (:math:`\beta_k = P\,\mathrm{diag}(q_k)\,\beta_{k+1}`), the ratio
of "records ``1..d-1`` are ⊥, record ``d`` shows ``v``" (the per-pattern form of
Appendix E, Eq. 19) is

.. math:: r_d(v) = f_1\circ\cdots\circ f_{d-1}\big(R_1(v)\big),\qquad f_k(\omega)=\varphi(\rho_k\,\omega),

and that of "all ``m`` are ⊥" is :math:`f_1\circ\cdots\circ f_m(1)`.  Every
:math:`f_k` is monotone, so :math:`r_d(v)\in[1/B, A]` iff :math:`R_1(v)\in I_{d-1}`
with the *requirement intervals*

.. math:: I_0=[1/B, A],\qquad I_k = f_k^{-1}(I_{k-1}) = \varphi^{-1}(I_{k-1})/\rho_k ,

two scalars per record instead of a 2x2 path matrix.  With
:math:`\varphi^{-1}(w) = a(w)/b(w)`, :math:`a(w)=P_{01}-P_{11}w`, :math:`b(w)=P_{10}w-P_{00}`,
the model carries :math:`I_k=[\lambda_k,\Lambda_k]\subseteq[R_{lo},R_{hi}]` through the
degree-3 polynomial inequalities (lazy chain, :math:`\varphi` increasing)

.. math:: \lambda_k q_k[0]\,(-b(\lambda_{k-1})) \ge (-a(\lambda_{k-1}))\,q_k[1],\qquad
          \Lambda_k q_k[0]\,(-b(\Lambda_{k-1})) \le (-a(\Lambda_{k-1}))\,q_k[1],

and with the ends swapped for an oscillating chain (:math:`\varphi` decreasing).  They
hold with ``q_k[x] = 0`` too (publishing a value always), and because
:math:`\varphi^{-1}` is monotone a model solution can only over-state the requirements,
so the projection on ``q`` is exact.  Clipping to :math:`[R_{lo},R_{hi}]` loses nothing:
every threshold (:math:`R_1(v)` and 1) lies in the hull.

**Support.**  Binary ``z[k,v] = 1`` iff ``v`` may be published at ``k``: ``z = 0`` forces
``q[k,v] = 1``; ``z = 1`` requires :math:`R_1(v)\in I_{k-1}` (linear big-M, valid
constants from the hull).  Lemma 2 (Appendix D) fixes ``z = 0`` wherever
:math:`i(X_p\rightsquigarrow X_k=v)>\epsilon`.  The all-⊥ pattern requires
:math:`1\in I_m` unless a record of the side is never redacted.

**Structure (dominance, exact).**  On each side let ``k*`` be the first record with
both values publishable.  Setting ``q = (0,0)`` at ``k*`` and beyond keeps every
pattern at distance ``<= k*`` with its ratio and removes the rest, so the side's
extreme ratios cannot get worse and the utility cannot drop.  Hence some optimum has
the form: records before ``k*`` publish at most one value, records from ``k*`` on are
always published.  A continuous ``u[k] = z[k,0] AND z[k,1]`` (monotone in ``k``) marks
this cut; it switches off the pattern checks beyond it and the all-⊥ pattern.  The
optimal value is unchanged, so SCIP's dual bound is a bound over *all* mechanisms.

**Two-sided.**  The leakage is :math:`\max(\log M_\ell+\log M_r, -\log m_\ell-\log m_r)`
with :math:`M_s\ge 1\ge m_s` the extreme ratios of side ``s`` (Section II).  The start
intervals :math:`I_0^{(s)}=[1/B_s, A_s]` are variables with :math:`A_\ell A_r\le e^\epsilon`
and :math:`(1/B_\ell)(1/B_r)\ge e^{-\epsilon}`: an exact budget split, no grid.

**What it proposes.**  The solution is read with ``q = 1`` wherever ``z = 0`` and
``q = 0`` beyond the cut; the structured incumbent it started from is the fallback, and
SCIP's dual bound (plus :data:`DUAL_MARGIN` for its feasibility tolerance) the upper
bound.  The model's budget is ``eps +`` :data:`BUDGET_SLACK`, so that no mechanism private at
``eps`` sits on its boundary.  Nothing is judged here: :func:`redactopt.engine.design.design` snaps, verifies
exactly, repairs (if SCIP's tolerance let a requirement slip) or falls back.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from dataclasses import dataclass

import numpy as np

from redactopt import _progress
from redactopt._optional import require
from redactopt._search import bisect_boundary
from redactopt._validate import check_real
from redactopt.judge.leakage import leakage, side_extremes, utility
from redactopt.judge.tolerances import safe_budget
from redactopt.model.chain import MarkovChain, check_problem
from redactopt.judge.lemma2 import publishable
from redactopt.model.influence import INFLUENCE_RTOL
from redactopt.solvers.base import Candidate

__all__ = ["propose_global", "claimed_bound", "DUAL_MARGIN", "BUDGET_SLACK", "MIN_CLAIM_ENTRY"]

#: Safety margin (utility units) added to SCIP's dual bound for its feasibility tolerance.
DUAL_MARGIN = 1e-7

#: SCIP feasibility tolerance (all model quantities are O(1)).
_FEASTOL = 1e-9

#: SCIP solves the model at ``eps + BUDGET_SLACK`` (nats; ten feasibility tolerances on the ratio scale).
#: The optimum is non-decreasing in the budget, so the dual bound at the larger budget bounds every
#: mechanism at ``eps``, and none of those lies on the model's boundary, where SCIP's tolerances could cut
#: it off: at ``eps`` itself SCIP excluded a window whose leakage is exactly ``eps`` and "proved" 0.3
#: below its utility 0.4 (MarkovChain(0.875, 0.875), n = 5, p = 3, eps = log(25/7), found by
#: ``tests/test_boundary.py``).  A solution above ``eps`` is repaired by the judge (pushed toward redaction).
BUDGET_SLACK = 1e-8

#: SCIP's dual bound is not claimed on a chain with a positive transition probability below this:
#: a red-team scan found a binary chain with beta = 1.5e-7 (alpha = 4.1e-4, n = 4, eps = 10) where
#: SCIP "proved" 0 while a verified design publishes 49.6%; beta = 5e-7 and above were sound.
MIN_CLAIM_ENTRY = 1e-6

#: Below this budget the ratios the model compares differ from 1 by less than a few thousand
#: feasibility tolerances; SCIP's answer is still proposed, but its dual bound is not claimed.
MIN_BOUND_EPS = 1e-4


def claimed_bound(dual: float, start_u: float, eps: float, info: dict, smallest_entry: float = 1.0) -> float | None:
    """The upper bound a SCIP run claims: its dual bound plus :data:`DUAL_MARGIN`, or ``None``.

    Not claimed when the dual bound is missing or below the verified start's utility
    ``start_u`` (a wrong bound is never clamped), when ``eps`` < :data:`MIN_BOUND_EPS`, or when
    the chain's ``smallest_entry`` (smallest positive transition probability) is below
    :data:`MIN_CLAIM_ENTRY`; ``info`` records which.  Shared by the binary and the k-state models.
    """
    if math.isnan(dual) or dual < start_u - 1e-6:
        info["dual_bound_rejected"] = dual
        return None
    if eps < MIN_BOUND_EPS:
        info["dual_bound_not_claimed"] = f"eps < {MIN_BOUND_EPS:g}: below the model's numerical resolution"
        return None
    if smallest_entry < MIN_CLAIM_ENTRY:
        info["dual_bound_not_claimed"] = (f"a transition probability of {smallest_entry:.3g} < {MIN_CLAIM_ENTRY:g}: "
                                          "beyond the model's numerical resolution")
        return None
    return dual + DUAL_MARGIN


@contextlib.contextmanager
def quiet_stderr(verbose: bool = False):
    """Silence C-level stderr and stdout while SCIP runs.

    With a feasibility tolerance of 1e-9 SoPlex occasionally reports that it cannot
    go below 1e-10 when SCIP retries an LP with a tighter tolerance; the message is
    harmless (the answer is re-verified exactly) and would only clutter the CLI.  On
    Ctrl-C SCIP stops and prints "pressed CTRL-C 1 times" on stdout, which may carry a
    command's output; the interrupt itself is raised after the solve
    (:func:`raise_if_interrupted`).
    """
    if verbose:
        yield
        return
    fds = []
    for stream in (sys.stderr, sys.stdout):
        try:
            stream.flush()
            fds.append(stream.fileno())
        except (AttributeError, OSError, ValueError):
            continue
    saved = [os.dup(fd) for fd in fds]
    try:
        with open(os.devnull, "w") as devnull:
            for fd in fds:
                os.dup2(devnull.fileno(), fd)
            yield
    finally:
        for fd, old in zip(fds, saved):
            os.dup2(old, fd)
            os.close(old)


@contextlib.contextmanager
def scip_rounds(model: object, stage: str):
    """Report SCIP's branch and bound while it runs (nodes solved, the gap; :mod:`redactopt._progress`),
    only when someone is shown the progress (a command on a terminal) and only in the main thread: an
    event handler on solved nodes, at most five reports a second.

    The handler is Python code running inside SCIP's compiled solve, where a signal handler that raises
    would turn into a SCIP error.  So while it is installed, SIGINT, SIGTERM and SIGHUP only note the
    signal; the handler then interrupts the solve, and after it the signal goes to the handler it was
    meant for (the command's stop, :mod:`redactopt.interface.supervise`), as it would have without
    progress -- only sooner (SCIP takes SIGINT for itself during the solve anyway)."""
    import signal
    import threading

    if not _progress.active() or threading.current_thread() is not threading.main_thread():
        yield
        return
    from pyscipopt import SCIP_EVENTTYPE, Eventhdlr

    noted: list[int] = []

    class _Rounds(Eventhdlr):  # type: ignore[misc, valid-type]
        last = 0.0

        def eventinit(self) -> None:
            self.model.catchEvent(SCIP_EVENTTYPE.NODESOLVED, self)

        def eventexit(self) -> None:
            self.model.dropEvent(SCIP_EVENTTYPE.NODESOLVED, self)

        def eventexec(self, event: object) -> dict:
            try:
                if noted:
                    self.model.interruptSolve()
                    return {}
                now = time.monotonic()
                if now - self.last >= 0.2:
                    self.last = now
                    _progress.report(stage, int(self.model.getNNodes()), None,
                                     note=f"gap {self.model.getGap():.2g}")
            except Exception:  # pragma: no cover - progress never breaks a solve
                pass
            return {}

    def note(signum: int, frame: object) -> None:
        noted.append(signum)

    stops = [s for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP) if callable(signal.getsignal(s))]
    previous = {s: signal.getsignal(s) for s in stops}
    model.includeEventhdlr(_Rounds(), "redactopt_progress", "progress of the branch and bound")  # type: ignore[attr-defined]
    for s in stops:
        signal.signal(s, note)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if noted and noted[0] in previous:
        previous[noted[0]](noted[0], None)  # the command's stop raises here


def raise_if_interrupted(status: str) -> None:
    """SCIP takes Ctrl-C for itself and stops with status ``userinterrupt``: raise it on as Python's
    interrupt (:class:`~redactopt.errors.Interrupted`), so that the caller stops too rather than
    going on with the next candidate."""
    if status == "userinterrupt":
        import signal

        from redactopt.errors import Interrupted

        raise Interrupted(signal.SIGINT)


# --------------------------------------------------------------------------
# geometry of the chain and of the two sides
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class _Geometry:
    """``P``, the one-step ratios ``R_1(v) = P[0,v]/P[1,v]`` and their hull."""

    P: np.ndarray
    r1: np.ndarray
    lo: float
    hi: float
    lazy: bool

    @classmethod
    def of(cls, chain: MarkovChain) -> "_Geometry":
        P = chain.transition_matrix
        r1 = P[0] / P[1]
        return cls(P, r1, float(r1.min()), float(r1.max()), chain.lam > 0.0)

    def inverse(self, w: float) -> float:
        r""":math:`\varphi^{-1}(w)` extended to :math:`[0,\infty]` outside the open hull."""
        P = self.P
        if w <= self.lo:
            return 0.0 if self.lazy else math.inf
        if w >= self.hi:
            return math.inf if self.lazy else 0.0
        return (P[0, 1] - P[1, 1] * w) / (P[1, 0] * w - P[0, 0])


@dataclass(frozen=True)
class _Side:
    """One side of the private record: 0-based record indices ordered by distance."""

    name: str
    records: tuple[int, ...]
    allowed: np.ndarray  # (m, 2) bool: Lemma 2 admits value v at distance k = row + 1

    @property
    def m(self) -> int:
        return len(self.records)


def _sides(chain: MarkovChain, n: int, p: int, eps: float) -> tuple[_Side, _Side]:
    """Both sides with Lemma 2's admitted values (outward: excluded only if provably above eps)."""
    out = []
    for name, recs in (("left", tuple(range(p - 1, -1, -1))), ("right", tuple(range(p + 1, n)))):
        out.append(_Side(name, recs, publishable(chain, len(recs), upper=eps, lower=eps)))
    return out[0], out[1]


def _intervals(geo: _Geometry, qs: np.ndarray, lam0: float, Lam0: float) -> tuple[np.ndarray, np.ndarray]:
    """The clipped requirement intervals ``I_k = [lam[k], Lam[k]]`` of one side for ``qs``.

    Rows from the first never-redacted record on are left at the full hull (the model
    leaves them free there).
    """
    m = qs.shape[0]
    lam = np.full(m, geo.lo)
    Lam = np.full(m, geo.hi)
    lp, Lp = lam0, Lam0
    for k in range(m):
        q0, q1 = float(qs[k, 0]), float(qs[k, 1])
        if q0 == 0.0 and q1 == 0.0:
            break
        ends = sorted((geo.inverse(lp), geo.inverse(Lp)))
        if q0 == 0.0 or q1 == 0.0:
            lo_w, hi_w = geo.lo, geo.hi  # rho in {0, inf}: the next record is unconstrained
        else:
            lo_w = ends[0] * q1 / q0
            hi_w = ends[1] * q1 / q0 if math.isfinite(ends[1]) else math.inf
        lam[k] = min(geo.hi, max(geo.lo, lo_w))
        Lam[k] = min(geo.hi, max(geo.lo, hi_w))
        lp, Lp = lam[k], Lam[k]
    return lam, Lam


# --------------------------------------------------------------------------
# incumbent: windows and 3R shapes calibrated by bisection (exact check)
# --------------------------------------------------------------------------
def _structured_q(side: _Side, P: np.ndarray, cut: int, s: float) -> np.ndarray:
    """A one-parameter family in dominance form: 3R-like before ``cut``, published from it.

    Before the cut (distance ``< cut``) a value excluded by Lemma 2 is always
    redacted; if both are admitted the one with the larger one-step ratio distortion
    is; the other value is redacted with probability ``s``.
    """
    q = np.zeros((side.m, 2))
    distortion = np.abs(np.log(P[0] / P[1]))
    for k in range(min(cut - 1, side.m)):
        a = side.allowed[k]
        if not a.any():
            q[k] = 1.0
            continue
        keep = int(np.argmin(distortion)) if a.all() else int(np.argmax(a))
        q[k, 1 - keep] = 1.0
        q[k, keep] = s
    return q


def _assemble(n: int, p: int, left: _Side, right: _Side, ql: np.ndarray, qr: np.ndarray) -> np.ndarray:
    q = np.zeros((n, 2))
    q[p] = 1.0
    for side, qs in ((left, ql), (right, qr)):
        for k, t in enumerate(side.records):
            q[t] = qs[k]
    return q


def _cuts(side: _Side) -> list[int]:
    """Admissible cut distances: both values admitted by Lemma 2, or ``m + 1`` (no cut)."""
    return [k + 1 for k in range(side.m) if side.allowed[k].all()] + [side.m + 1]


def _incumbent(
    chain: MarkovChain, n: int, p: int, eps: float, left: _Side, right: _Side
) -> tuple[np.ndarray, str]:
    """Best exactly verified mechanism among windows and bisection-calibrated 3R shapes.

    For every pair of cut distances the common redaction probability ``s`` of the
    partly published values is bisected (``s = 1`` is the data-independent window with
    the same cuts); each candidate is checked by :func:`redactopt.judge.leakage.leakage`.
    Full redaction (leakage 0) is the fallback.
    """
    P = chain.transition_matrix
    best_q = np.ones((n, 2))
    best_u = utility(chain, best_q)
    best_label = "full-redaction"

    def ok(q: np.ndarray) -> bool:
        return leakage(chain, q, p).leakage <= safe_budget(eps, n)

    for cl in _cuts(left):
        for cr in _cuts(right):

            def build(s: float) -> np.ndarray:
                return _assemble(
                    n, p, left, right, _structured_q(left, P, cl, s), _structured_q(right, P, cr, s)
                )

            if utility(chain, build(0.0)) <= best_u or not ok(build(1.0)):
                continue
            if ok(build(0.0)):
                cand, label = build(0.0), "calibrated-3r"
            else:
                s = bisect_boundary(lambda s: ok(build(s)), 1.0, 0.0, steps=40)
                cand = build(s)
                label = "window" if s == 1.0 else "calibrated-3r"
            u = utility(chain, cand)
            if u > best_u:
                best_q, best_u, best_label = cand, u, label
    return best_q, best_label


# --------------------------------------------------------------------------
# the SCIP model
# --------------------------------------------------------------------------
class _Model:
    """The mixed-integer polynomial program of the module docstring for one ``(n, p, eps)``."""

    def __init__(self, chain: MarkovChain, n: int, p: int, eps: float, left: _Side, right: _Side):
        self._scip = require("pyscipopt", purpose="the certified global solver")
        self.chain, self.n, self.p, self.eps = chain, n, p, eps
        self.sides = [s for s in (left, right) if s.m]
        self.geo = _Geometry.of(chain)
        m = self._scip.Model("redactopt_global")
        m.hideOutput()
        self.model = m
        self.two_sided = len(self.sides) == 2
        self.starts = self._start_intervals(eps)
        obj = 0.0
        self.side_vars = []
        for si, s in enumerate(self.sides):
            obj = self._add_side(s, self.starts[si], obj)
        m.setObjective(obj * (1.0 / n), sense="maximize")

    def _start_intervals(self, eps: float) -> list[tuple]:
        """Each side's start interval ``I_0 = [lam0, Lam0]``: constants, or split variables when two-sided."""
        m, lo, hi = self.model, self.geo.lo, self.geo.hi
        e = math.exp(eps)
        start_lo, start_hi = max(1.0 / e, lo), min(e, hi)
        if not self.two_sided:
            return [(start_lo, start_hi)]
        # Valid dominance bounds on the split: a side's ratios never leave [lo, hi],
        # so raising Lam0 to e/hi (or lowering lam0 to 1/(e lo)) keeps the product
        # constraint and only relaxes that side.
        Lam_floor = max(1.0, min(hi, e / hi))
        lam_ceil = min(1.0, max(lo, 1.0 / (e * lo)))
        starts = []
        for s in self.sides:
            lam0 = lo if lam_ceil <= lo else m.addVar(f"lam0_{s.name}", lb=start_lo, ub=lam_ceil)
            Lam0 = hi if Lam_floor >= hi else m.addVar(f"Lam0_{s.name}", lb=Lam_floor, ub=start_hi)
            starts.append((lam0, Lam0))
        (lamL, LamL), (lamR, LamR) = starts
        if not isinstance(LamL, float):
            m.addCons(LamL * LamR <= e, name="budget_max")
        if not isinstance(lamL, float):
            # log-concave form: a convex constraint
            m.addCons(self._scip.log(lamL) + self._scip.log(lamR) >= -eps, name="budget_min")
        return starts

    def _add_side(self, s: _Side, start: tuple, obj: object) -> object:
        """Add one side's records and its all-⊥ pattern; return ``obj`` with the side's utility added."""
        pi = self.chain.stationary
        lam_prev, Lam_prev = start
        u_prev = 0.0
        q, z, u, lam, Lam, mu, nu = [], [], [], [], [], [], []
        for k in range(s.m):
            tag = f"{s.name}{k + 1}"
            qk, zk, uk = self._add_support(tag, s.allowed[k], u_prev if k else None)
            self._add_publishing(tag, s.allowed[k], zk, lam_prev, Lam_prev, u_prev)
            lam_k, Lam_k, mu_k, nu_k = self._step(self.model, tag, qk, lam_prev, Lam_prev, uk)
            for v in (0, 1):
                obj = obj + float(pi[v]) * (1.0 - qk[v])
            q.append(qk), z.append(zk), u.append(uk), lam.append(lam_k), Lam.append(Lam_k)
            mu.append(mu_k), nu.append(nu_k)
            lam_prev, Lam_prev, u_prev = lam_k, Lam_k, uk
        self._add_all_bottom(s.name, lam_prev, Lam_prev, u_prev)
        self.side_vars.append(dict(q=q, z=z, u=u, lam=lam, Lam=Lam, mu=mu, nu=nu))
        return obj

    def _add_support(self, tag: str, allowed: np.ndarray, u_prev: object) -> tuple[list, list, object]:
        """One record's ``q``, support binaries ``z`` and cut indicator ``u`` with the dominance structure."""
        m = self.model
        qk = [m.addVar(f"q_{tag}_{v}", lb=0.0, ub=1.0) for v in (0, 1)]
        zk = [m.addVar(f"z_{tag}_{v}", vtype="B", lb=0.0, ub=1.0 if allowed[v] else 0.0) for v in (0, 1)]
        for v in (0, 1):
            m.chgVarBranchPriority(zk[v], 100)
            m.chgVarBranchPriority(qk[v], 10)
        uk = m.addVar(f"u_{tag}", lb=0.0, ub=1.0)
        for v in (0, 1):
            m.addCons(qk[v] + zk[v] >= 1.0, name=f"supp_{tag}_{v}")
            m.addCons(qk[v] + uk <= 1.0, name=f"cutq_{tag}_{v}")
            m.addCons(uk <= zk[v], name=f"cutz_{tag}_{v}")
        m.addCons(uk >= zk[0] + zk[1] - 1.0, name=f"cutand_{tag}")
        if u_prev is not None:
            m.addCons(uk >= u_prev, name=f"cutmono_{tag}")
        return qk, zk, uk

    def _add_publishing(
        self, tag: str, allowed: np.ndarray, zk: list, lam_prev: object, Lam_prev: object, u_prev: object
    ) -> None:
        """Publishing ``v`` at distance ``d`` needs ``R_1(v)`` in ``I_{d-1}`` (big-M, off beyond the cut)."""
        m, geo = self.model, self.geo
        lo, hi = geo.lo, geo.hi
        for v in (0, 1):
            if not allowed[v]:
                continue
            off = 1.0 - zk[v] + u_prev
            rv = float(geo.r1[v])
            if not isinstance(lam_prev, float):
                m.addCons(lam_prev <= rv + (hi - rv) * off, name=f"pub_lo_{tag}_{v}")
            elif lam_prev > rv * (1.0 + INFLUENCE_RTOL):  # outward, as Lemma 2
                m.chgVarUb(zk[v], 0.0)
            if not isinstance(Lam_prev, float):
                m.addCons(Lam_prev >= rv - (rv - lo) * off, name=f"pub_hi_{tag}_{v}")
            elif Lam_prev < rv * (1.0 - INFLUENCE_RTOL):
                m.chgVarUb(zk[v], 0.0)

    def _add_all_bottom(self, name: str, lam_prev: object, Lam_prev: object, u_prev: object) -> None:
        """The all-⊥ pattern: 1 in ``I_m`` unless the side has a never-redacted record."""
        m, lo, hi = self.model, self.geo.lo, self.geo.hi
        if not isinstance(lam_prev, float):
            m.addCons(lam_prev <= 1.0 + (hi - 1.0) * u_prev, name=f"allbot_lo_{name}")
        elif lam_prev > 1.0:
            m.addCons(u_prev >= 1.0, name=f"allbot_lo_{name}")
        if not isinstance(Lam_prev, float):
            m.addCons(Lam_prev >= 1.0 - (1.0 - lo) * u_prev, name=f"allbot_hi_{name}")
        elif Lam_prev < 1.0:
            m.addCons(u_prev >= 1.0, name=f"allbot_hi_{name}")

    def _step(self, m, tag: str, qk: list, lam_prev, Lam_prev, uk):
        """Add the interval recursion for one record; return its ``(lam, Lam)``.

        An end that is pinned to the hull stays a constant: for a lazy chain
        ``lam = R_lo`` forces no requirement on the next record and ``Lam = R_hi``
        neither; for an oscillating chain the ends swap roles.
        """
        geo = self.geo
        P, lo, hi = geo.P, geo.lo, geo.hi

        def a(w):
            return float(P[0, 1]) - float(P[1, 1]) * w

        def b(w):
            return float(P[1, 0]) * w - float(P[0, 0])

        # the end of I_{d-1} that bounds each end of I_d
        src_lo, src_hi = (lam_prev, Lam_prev) if geo.lazy else (Lam_prev, lam_prev)
        pinned_lo = isinstance(src_lo, float) and src_lo == (lo if geo.lazy else hi)
        pinned_hi = isinstance(src_hi, float) and src_hi == (hi if geo.lazy else lo)
        sign = -1.0 if geo.lazy else 1.0  # -a, -b >= 0 on the hull for lazy chains; a, b >= 0 otherwise
        mu = nu = None
        if pinned_lo:
            lam_k = lo
        else:
            lam_k = m.addVar(f"lam_{tag}", lb=lo, ub=hi)
            # the product lam_k q_k[0] only needs its concave side: mu <= lam_k q_k[0]
            mu = m.addVar(f"mu_{tag}", lb=0.0, ub=hi)
            m.addCons(mu <= lam_k * qk[0], name=f"mu_{tag}")
            m.addCons(mu * (sign * b(src_lo)) - (sign * a(src_lo)) * qk[1] >= 0.0, name=f"req_lo_{tag}")
        if pinned_hi:
            Lam_k = hi
        else:
            Lam_k = m.addVar(f"Lam_{tag}", lb=lo, ub=hi)
            nu = m.addVar(f"nu_{tag}", lb=0.0, ub=hi)
            m.addCons(nu >= Lam_k * qk[0], name=f"nu_{tag}")
            m.addCons(nu * (sign * b(src_hi)) - (sign * a(src_hi)) * qk[1] <= 0.0, name=f"req_hi_{tag}")
        if not (isinstance(lam_k, float) or isinstance(Lam_k, float)):
            m.addCons(lam_k <= Lam_k + (hi - lo) * uk, name=f"nonempty_{tag}")
        return lam_k, Lam_k, mu, nu

    # ---------------------------------------------------------------
    def add_start(self, q_full: np.ndarray) -> bool:
        """Offer an exactly verified structured mechanism to SCIP as a starting solution."""
        m = self.model
        sol = m.createSol()
        geo = self.geo
        starts = []
        for si, s in enumerate(self.sides):
            qs = np.array([q_full[t] for t in s.records])
            lam0, Lam0 = self.starts[si]
            if self.two_sided:
                ext = side_extremes(self.chain, qs)
                lo_r, hi_r = ext.bottom[0], ext.top[0]
                if not isinstance(lam0, float):
                    val = min(lam0.getUbOriginal(), max(lam0.getLbOriginal(), lo_r))
                    m.setSolVal(sol, lam0, val)
                    lam0 = val
                if not isinstance(Lam0, float):
                    val = max(Lam0.getLbOriginal(), min(Lam0.getUbOriginal(), hi_r))
                    m.setSolVal(sol, Lam0, val)
                    Lam0 = val
            starts.append((qs, lam0, Lam0))
        for si, (qs, lam0, Lam0) in enumerate(starts):
            sv = self.side_vars[si]
            lam, Lam = _intervals(geo, qs, lam0, Lam0)
            cut = False
            for k in range(qs.shape[0]):
                cut = cut or (qs[k, 0] == 0.0 and qs[k, 1] == 0.0)
                for v in (0, 1):
                    m.setSolVal(sol, sv["q"][k][v], float(qs[k, v]))
                    m.setSolVal(sol, sv["z"][k][v], 1.0 if qs[k, v] < 1.0 else 0.0)
                m.setSolVal(sol, sv["u"][k], 1.0 if cut else 0.0)
                if not isinstance(sv["lam"][k], float):
                    m.setSolVal(sol, sv["lam"][k], float(lam[k]))
                    m.setSolVal(sol, sv["mu"][k], float(lam[k] * qs[k, 0]))
                if not isinstance(sv["Lam"][k], float):
                    m.setSolVal(sol, sv["Lam"][k], float(Lam[k]))
                    m.setSolVal(sol, sv["nu"][k], float(Lam[k] * qs[k, 0]))
        return bool(m.addSol(sol, free=True))

    def read_q(self) -> np.ndarray:
        """The best solution's ``q`` with support read from ``z`` and the cut from ``u``."""
        m = self.model
        sol = m.getBestSol()
        q = np.zeros((self.n, 2))
        q[self.p] = 1.0
        for si, s in enumerate(self.sides):
            sv = self.side_vars[si]
            for k, t in enumerate(s.records):
                if m.getSolVal(sol, sv["u"][k]) > 0.5:
                    q[t] = 0.0
                    continue
                for v in (0, 1):
                    if m.getSolVal(sol, sv["z"][k][v]) < 0.5:
                        q[t, v] = 1.0
                    else:
                        q[t, v] = min(1.0, max(0.0, m.getSolVal(sol, sv["q"][k][v])))
        return q


def propose_global(
    chain: MarkovChain,
    n: int,
    *,
    eps: float,
    p: int = 0,
    time_limit: float = 60.0,
    verbose: bool = False,
    rng: object = None,
    gap_limit: float = 1e-6,
) -> Candidate:
    r"""Global optimum over all local redaction mechanisms by spatial branch and bound (PySCIPOpt).

    Maximises the utility (Definition 2) subject to the exact leakage
    :math:`\mathcal L(X_p\to\mathbf Y)\le\epsilon` (Definition 1) over every
    :math:`q\in[0,1]^{n\times2}` with private row ``[1, 1]``, on the requirement-interval
    model of the module docstring (the per-pattern form of Appendix E, Eq. 19, for every
    output pattern, both sides coupled by an exact budget split).

    Parameters
    ----------
    chain : MarkovChain
    n : int
        Number of records.  Practical for one-sided ``n <= 12`` and two-sided ``n <= 8``;
        larger ``n`` stops at ``time_limit`` with a gap.
    eps : float
        Privacy budget (nats), ``> 0``.
    p : int
        0-based index of the private record.
    time_limit : float
        Seconds for the SCIP solve.
    verbose : bool
        Let SCIP print its log.
    gap_limit : float
        Relative gap at which SCIP stops (``limits/gap``).

    Returns
    -------
    Candidate
        ``solver="global"``; ``upper_bound`` SCIP's dual bound plus :data:`DUAL_MARGIN`
        (``bound_solver="scip"``, scope ``"all"``), ``None`` if SCIP's dual bound is below
        the utility of its own verified start (numerical trouble: it certifies nothing).
        No bound either below ``eps`` = :data:`MIN_BOUND_EPS` (the budget is then too close
        to SCIP's feasibility tolerance for its dual bound to be trusted).
        ``status`` ``"optimal"`` when SCIP closed the gap, else ``"time_limit"``.  The
        structured incumbent is the fallback.  ``info`` holds SCIP's status, nodes and time.

    Notes
    -----
    Independent records (``alpha + beta = 1``) leak nothing: every non-private record
    is published, which is optimal by inspection (``bound_solver="closed-form"``).
    """
    n, eps, p = check_problem(chain, n, eps, p)
    time_limit = check_real(time_limit, "time_limit")
    if time_limit <= 0.0:
        raise ValueError(f"time_limit must be > 0, got {time_limit!r}")
    gap_limit = check_real(gap_limit, "gap_limit")
    if gap_limit < 0.0:
        raise ValueError(f"gap_limit must be >= 0, got {gap_limit!r}")
    started = time.perf_counter()
    if n == 1 or chain.lam == 0.0:
        q = np.zeros((n, 2))
        q[p] = 1.0
        return Candidate(q, "global", "optimal", upper_bound=(n - 1) / n, bound_solver="closed-form")
    left, right = _sides(chain, n, p, eps)
    start_q, start_label = _incumbent(chain, n, p, eps, left, right)
    start_u = utility(chain, start_q)
    info: dict = {"start": start_label, "start_utility": start_u}
    mod = _Model(chain, n, p, eps + BUDGET_SLACK, left, right)  # Lemma 2's values (left, right) stay those at eps
    m = mod.model
    m.setParam("limits/time", max(0.5, float(time_limit)))
    m.setParam("limits/gap", float(gap_limit))
    m.setParam("numerics/feastol", _FEASTOL)
    # bound tightening by LP at every node pays for itself on these small models
    m.setParam("propagating/obbt/freq", 1)
    if verbose:
        m.hideOutput(False)  # PySCIPOpt has no showOutput: un-hide the log
    info["start_accepted"] = mod.add_start(start_q)
    with quiet_stderr(verbose), scip_rounds(m, "scip branch and bound"):
        m.optimize()
    status = m.getStatus()
    raise_if_interrupted(status)
    dual = float(m.getDualbound())
    info.update(status=status, dual_bound=dual, nodes=int(m.getNNodes()), solve_seconds=float(m.getSolvingTime()),
                primal_bound=float(m.getPrimalbound()) if m.getNSols() else math.nan)
    a, b = chain.alpha, chain.beta
    upper = claimed_bound(dual, start_u, eps, info, smallest_entry=min(a, b, 1.0 - a, 1.0 - b))
    q = mod.read_q() if m.getNSols() else start_q
    info["seconds"] = time.perf_counter() - started
    return Candidate(
        redact_prob=q,
        solver="global",
        status="optimal" if status in ("optimal", "gaplimit") else "time_limit",
        upper_bound=upper,
        bound_solver="scip",
        fallbacks=(start_q,),
        info=info,
    )
