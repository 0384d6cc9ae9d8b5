r"""Certified global optimum over all local redaction mechanisms on a k-state chain, by PySCIPOpt.

The binary model (:mod:`redactopt.solvers.scip_global`) reads each pattern's ratio as a composition
of Möbius maps of one number; with ``k`` states a pattern's likelihoods form a ``k``-vector and its
"ratio" is ``k(k-1)`` numbers, so that one-dimensional reduction has no k-state form.  This model
keeps the side reduction instead and writes the prefix products themselves as variables.

**Variables** (one side, records ``t = 1..m`` by distance; the left side on the reversed chain):
``q[t, y]``; binaries ``z[t, y]`` (1: value ``y`` may be published at ``t``); the prefix products
:math:`A_t = A_{t-1}P\,\mathrm{diag}(q_t)` (:math:`A_0=I`) and :math:`W_t = A_{t-1}P` (whose column
``v`` is the likelihood vector of "the ``t-1`` nearest ⊥, record ``t`` shows ``v``"):

.. math:: W_t = A_{t-1}P\ (\text{linear}),\qquad A_t[x,y] = W_t[x,y]\,q_t[y]\ (\text{bilinear}),

with the valid bounds :math:`0\le A_t,W_t\le P^t` entrywise (``D <= I``) and :math:`A_t\le W_t`.

**Privacy** (Definition 1 through the side reduction, docs/mathematics.md "k-state chains"): for
every ordered pair and side, :math:`W_t[x,v]\le E_s(x,x')\,W_t[x',v] + M(1-z[t,v])` (``M`` the bound
on :math:`W_t[x,v]`), ``q[t, v] >= 1 - z[t, v]``, and the all-⊥ pattern
:math:`\sum_yA_m[x,y]\le E_s(x,x')\sum_yA_m[x',y]`.  A pattern of probability 0 satisfies its
constraint as ``0 <= 0``: supports need no extra logic.  Redundant but tightening, and free of
binaries: every event "the ``t-1`` nearest ⊥ and :math:`Y_t\in S`" (``S`` any set of values and ⊥)
is a union of the side's outputs, so its ratio is a mediant of theirs and obeys the same budget;
its probability is linear in the variables (:math:`W_t-A_t` for a published value,
:math:`\sum_yA_t` for ⊥).  One-sided problems have the constant
:math:`E=e^\epsilon` (all constraints linear but the products); two-sided ones a variable split per
ordered pair, :math:`1\le E_\ell,E_r` with :math:`E_\ell E_r\le e^\epsilon` (exact, no grid).

**Structure (dominance, exact).**  As in the binary model: at the first record where every value
may be published, setting ``q = 0`` there and beyond keeps every earlier pattern's ratio, removes
the later ones (they have probability 0) and cannot lower the utility.  A cut indicator ``u[t]``
(monotone) forces ``q[t] = 0`` from that record on.  The optimal value is unchanged.

**Floor.** Before the cut every ``q[t, y] >= Q_FLOOR`` (``1e-7``).  At a large ``eps`` the optimum
may redact a value with a probability near :math:`e^{-\epsilon}` — just enough to keep an output
possible under every private value — and SCIP reads numbers below its zero tolerance (1e-9) as
0, which made it "prove" such designs impossible (a bound of 0 at ``eps = 20`` where 0.357 is
reachable).  The floor costs at most ``Q_FLOOR`` of utility: for a private ``q`` with its cut at
``t*``, publishing everything from ``t*`` on (the dominance below) and raising every earlier
entry to at least ``Q_FLOOR`` (post-processing: redacting more never raises the leakage) gives
a private mechanism of the model whose utility is lower by at most ``Q_FLOOR``.  So the
claimed bound adds ``Q_FLOOR``.

**Soundness of the bound (outward).**  Lemma 2 fixes ``z = 0`` only where
:func:`redactopt.judge.lemma2.publishable` proves the value unpublishable; the budget
:math:`e^\epsilon` and the bounds :math:`P^t` are enlarged by a relative 1e-9 (plus 1e-12) for the
rounding of the float chain; SCIP's feasibility tolerance only relaxes.  So the model is a
relaxation of the exact problem and SCIP's dual bound (plus :data:`~redactopt.solvers.scip_global.DUAL_MARGIN`) bounds every
mechanism.  Its incumbent is only a proposal: the judge (:mod:`redactopt.engine.kdesign`) verifies
it exactly and repairs it if a tolerance let a constraint slip.
"""

from __future__ import annotations

import itertools
import math
import time

import numpy as np

from redactopt._optional import require
from redactopt._validate import check_real
from redactopt.judge.leakage import leakage, utility
from redactopt.judge.lemma2 import publishable
from redactopt.model.chain import Chain as KChain
from redactopt.model.chain import check_problem
from redactopt.model.influence import side_matrix
from redactopt.solvers.base import Candidate
from redactopt.solvers.dim import dim_enumerate
from redactopt.solvers.scip_global import quiet_stderr, claimed_bound, raise_if_interrupted, scip_rounds

__all__ = ["propose_kglobal", "KGLOBAL_MAX_EPS"]

#: Largest eps the model takes.  e^eps enters as a coefficient, and the likelihoods a constraint
#: compares may differ by that factor; against SCIP's tolerances (1e-9) that stops being safe well
#: before its infinity (1e20): random small problems (chains with entries down to 1e-8) showed
#: dual bounds below verified designs from eps = 12 on (one in 120) and often at 16-18, none in
#: about 170 at eps <= 10 (86 of them in a scan that logged every case) once the floor below was
#: in place.  Beyond it ``optimal`` skips the model.
KGLOBAL_MAX_EPS = 10.0

#: Outward relative margin on e^eps and on the bounds P^t (rounding of the float chain).
_OUT = 1e-9
_FEASTOL = 1e-9

#: Floor on the redaction probabilities of the records before the cut (module docstring,
#: "Floor"): far above SCIP's zero tolerance (1e-9), and added to the claimed bound.
Q_FLOOR = 1e-7


class _KModel:
    """The mixed-integer polynomial program of the module docstring for one ``(n, p, eps)``."""

    indicators = False

    def __init__(self, chain: KChain, n: int, p: int, eps: float):
        self._scip = require("pyscipopt", purpose="the certified global solver")
        self.chain, self.n, self.p, self.eps, self.k = chain, n, p, eps, chain.k
        m = self._scip.Model("redactopt_kglobal")
        m.hideOutput()
        self.model = m
        self.sides = []
        for name, recs in (("left", list(range(p - 1, -1, -1))), ("right", list(range(p + 1, n)))):
            if recs:
                self.sides.append((name, recs))
        self.two_sided = len(self.sides) == 2
        self.pairs = [(x, y) for x in range(self.k) for y in range(self.k) if x != y]
        self.E: list[dict] = self._side_budgets(math.exp(eps) * (1.0 + _OUT))
        obj = 0.0
        self.vars = []
        for si, (name, recs) in enumerate(self.sides):
            obj = self._add_side(name, recs, self.E[si], obj)
        m.setObjective(obj * (1.0 / n), sense="maximize")

    def _side_budgets(self, E: float) -> list[dict]:
        """Each side's budget ``E_s(x, x')`` per ordered pair: the constant ``E``, or a split ``E_l E_r <= E``."""
        if not self.two_sided:
            return [{pr: E for pr in self.pairs}]
        m = self.model
        El = {pr: m.addVar(f"El_{pr[0]}_{pr[1]}", lb=1.0, ub=E) for pr in self.pairs}
        Er = {pr: m.addVar(f"Er_{pr[0]}_{pr[1]}", lb=1.0, ub=E) for pr in self.pairs}
        for pr in self.pairs:
            m.addCons(El[pr] * Er[pr] <= E, name=f"split_{pr[0]}_{pr[1]}")
        return [El, Er]

    def _add_side(self, name: str, recs: list[int], Es: dict, obj: object) -> object:
        """Add one side's records and its all-⊥ pattern; return ``obj`` with the side's utility added."""
        k, m, scip = self.k, self.model, self._scip
        P = side_matrix(self.chain, name)
        ms = len(recs)
        allowed = publishable(self.chain, ms, eps=self.eps, side=name)
        pi = self.chain.stationary
        Pt = np.eye(k)
        A_prev = None  # None: identity
        u_prev = None
        q, z, u, A, W = [], [], [], [], []
        for t in range(ms):
            tag = f"{name}{t + 1}"
            Pt = Pt @ P
            ub = Pt * (1.0 + _OUT) + 1e-12
            qt, zt, ut = self._add_support(tag, allowed[t], u_prev)
            Wt, At = self._add_products(tag, P, ub, A_prev, qt, zt)
            self._add_patterns(tag, allowed[t], Es, ub, Wt, zt)
            self._add_events(tag, Es, Wt, At, last=t == ms - 1)
            for y in range(k):
                obj = obj + float(pi[y]) * (1.0 - qt[y])
            q.append(qt), z.append(zt), u.append(ut), A.append(At), W.append(Wt)
            A_prev, u_prev = At, ut
        for (x, x2) in self.pairs:
            e = Es[(x, x2)]
            m.addCons(scip.quicksum(A_prev[x]) - e * scip.quicksum(A_prev[x2]) <= 0.0, name=f"allbot_{name}_{x}_{x2}")
        self.vars.append(dict(name=name, recs=recs, P=P, q=q, z=z, u=u, A=A, W=W))
        return obj

    def _add_support(self, tag: str, allowed: np.ndarray, u_prev: object) -> tuple[list, list, object]:
        """One record's ``q``, support binaries ``z`` and cut indicator ``u`` with their structure."""
        k, m, scip = self.k, self.model, self._scip
        qt = [m.addVar(f"q_{tag}_{y}", lb=0.0, ub=1.0) for y in range(k)]
        zt = [m.addVar(f"z_{tag}_{y}", vtype="B", lb=0.0, ub=1.0 if allowed[y] else 0.0) for y in range(k)]
        for y in range(k):
            m.chgVarBranchPriority(zt[y], 100)
            m.chgVarBranchPriority(qt[y], 10)
            m.addCons(qt[y] + zt[y] >= 1.0, name=f"supp_{tag}_{y}")
        ut = m.addVar(f"u_{tag}", lb=0.0, ub=1.0)
        m.addCons(ut >= scip.quicksum(zt) - (k - 1), name=f"cutand_{tag}")
        for y in range(k):
            m.addCons(ut <= zt[y], name=f"cutz_{tag}_{y}")
            m.addCons(qt[y] + ut <= 1.0, name=f"cutq_{tag}_{y}")
            m.addCons(qt[y] + Q_FLOOR * ut >= Q_FLOOR, name=f"floor_{tag}_{y}")
        if u_prev is not None:
            m.addCons(ut >= u_prev, name=f"cutmono_{tag}")
        return qt, zt, ut

    def _add_products(
        self, tag: str, P: np.ndarray, ub: np.ndarray, A_prev: list | None, qt: list, zt: list
    ) -> tuple[list, list]:
        """One record's prefix products: ``W_t = A_{t-1} P`` (linear) and ``A_t = W_t diag(q_t)`` (bilinear)."""
        k, m, scip = self.k, self.model, self._scip
        Wt = [[m.addVar(f"W_{tag}_{x}_{y}", lb=0.0, ub=float(ub[x, y])) for y in range(k)] for x in range(k)]
        At = [[m.addVar(f"A_{tag}_{x}_{y}", lb=0.0, ub=float(ub[x, y])) for y in range(k)] for x in range(k)]
        for x in range(k):
            for y in range(k):
                if A_prev is None:
                    m.addCons(Wt[x][y] == float(P[x, y]), name=f"W_{tag}_{x}_{y}")
                else:
                    m.addCons(Wt[x][y] == scip.quicksum(float(P[w, y]) * A_prev[x][w] for w in range(k)
                                                         if P[w, y] != 0.0), name=f"W_{tag}_{x}_{y}")
                m.addCons(At[x][y] == Wt[x][y] * qt[y], name=f"A_{tag}_{x}_{y}")
                m.addCons(At[x][y] <= Wt[x][y], name=f"AW_{tag}_{x}_{y}")
                # a closed value (z = 0, q = 1) passes the product on unchanged
                m.addCons(At[x][y] >= Wt[x][y] - float(ub[x, y]) * zt[y], name=f"AWz_{tag}_{x}_{y}")
        return Wt, At

    def _add_patterns(self, tag: str, allowed: np.ndarray, Es: dict, ub: np.ndarray, Wt: list, zt: list) -> None:
        """Publishing ``v`` at this record needs its pattern within the side's budget for every pair."""
        m = self.model
        for v in range(self.k):
            if not allowed[v]:
                continue
            for (x, x2) in self.pairs:
                Mb = float(ub[x, v])
                e = Es[(x, x2)]
                if isinstance(e, float) and self.indicators:
                    m.addConsIndicator(Wt[x][v] - e * Wt[x2][v] <= 0.0, binvar=zt[v],
                                       name=f"pat_{tag}_{v}_{x}_{x2}")
                else:
                    m.addCons(Wt[x][v] - e * Wt[x2][v] <= Mb * (1.0 - zt[v]), name=f"pat_{tag}_{v}_{x}_{x2}")

    def _add_events(self, tag: str, Es: dict, Wt: list, At: list, *, last: bool) -> None:
        """The valid event constraints of one record (redundant, tightening, free of binaries).

        The event "the t-1 nearest are ⊥ and Y_t is in S" (S a set of values and/or ⊥) is a union
        of this side's outputs, so its ratio is a mediant of theirs and stays within the side's
        budget.  Its probability is linear in (W, A): Pr(Y_t = v, ...) is W_t[., v] (1 - q_t[v]) =
        W_t[., v] - A_t[., v] and Pr(Y_t = ⊥, ...) = sum_y A_t[., y]; the relaxation learns the
        support from them.
        """
        k, m, scip = self.k, self.model, self._scip

        def mass(row: int, S: tuple[int, ...]) -> object:
            return scip.quicksum((Wt[row][v] - At[row][v]) if v < k else scip.quicksum(At[row]) for v in S)

        for size in range(1, k + 2):
            for S in itertools.combinations(range(k + 1), size):
                if size == k + 1 or (last and S == (k,)):
                    continue  # everything (ratio 1), or the all-⊥ pattern of the side
                for (x, x2) in self.pairs:
                    e = Es[(x, x2)]
                    m.addCons(mass(x, S) - e * mass(x2, S) <= 0.0, name=f"event_{tag}_{'.'.join(map(str, S))}_{x}_{x2}")

    def add_start(self, q_full: np.ndarray) -> bool:
        """Offer a mechanism (exactly verified by the caller) as a starting solution.

        Offered in the model's form, which is private too and loses at most ``Q_FLOOR`` of
        utility (module docstring): everything published from the cut on, every earlier entry
        raised to at least ``Q_FLOOR``.
        """
        m = self.model
        sol = m.createSol()
        k = self.k
        ratios = []
        for sv in self.vars:
            qs = np.array([q_full[t] for t in sv["recs"]], dtype=float)
            first = next((t for t in range(qs.shape[0]) if np.all(qs[t] == 0.0)), qs.shape[0])
            qs[:first] = np.maximum(qs[:first], Q_FLOOR)
            qs[first:] = 0.0
            P = sv["P"]
            A = np.eye(k)
            for t in range(qs.shape[0]):
                W = A @ P
                A = W * qs[t][None, :]
                cut = t >= first
                for y in range(k):
                    m.setSolVal(sol, sv["q"][t][y], float(qs[t, y]))
                    m.setSolVal(sol, sv["z"][t][y], 1.0 if qs[t, y] < 1.0 else 0.0)
                m.setSolVal(sol, sv["u"][t], 1.0 if cut else 0.0)
                for x in range(k):
                    for y in range(k):
                        m.setSolVal(sol, sv["W"][t][x][y], float(W[x, y]))
                        m.setSolVal(sol, sv["A"][t][x][y], float(A[x, y]))
            ratios.append(qs)
        if self.two_sided:
            from redactopt.judge.kernelk import side_pairs

            best = [side_pairs(sv["P"], qs).best for sv, qs in zip(self.vars, ratios)]
            total = best[0] + best[1]
            for (x, y) in self.pairs:
                a, b = best[0][x, y], best[1][x, y]
                if not (math.isfinite(a) and math.isfinite(b)):
                    return False
                # split the slack evenly (the product stays within e^eps)
                slack = max(0.0, self.eps - total[x, y]) / 2.0
                m.setSolVal(sol, self.E[0][(x, y)], min(math.exp(self.eps), math.exp(max(0.0, a) + slack)))
                m.setSolVal(sol, self.E[1][(x, y)], min(math.exp(self.eps), math.exp(max(0.0, b) + slack)))
        return bool(m.addSol(sol, free=True))

    def read_q(self) -> np.ndarray:
        m = self.model
        sol = m.getBestSol()
        q = np.zeros((self.n, self.k))
        q[self.p] = 1.0
        for sv in self.vars:
            for t, r in enumerate(sv["recs"]):
                if m.getSolVal(sol, sv["u"][t]) > 0.5:
                    q[r] = 0.0
                    continue
                for y in range(self.k):
                    if m.getSolVal(sol, sv["z"][t][y]) < 0.5:
                        q[r, y] = 1.0
                    else:
                        q[r, y] = min(1.0, max(0.0, m.getSolVal(sol, sv["q"][t][y])))
        return q


def propose_kglobal(chain: KChain, n: int, *, eps: float, p: int = 0, time_limit: float = 60.0,
                    verbose: bool = False, rng: object = None, gap_limit: float = 1e-6,
                    starts: tuple[np.ndarray, ...] = ()) -> Candidate:
    r"""Global optimum over all local redaction mechanisms on a k-state chain (module docstring).

    Maximises the utility (Definition 2) subject to :math:`\mathcal L(X_p\to\mathbf Y)\le\epsilon`
    (Definition 1 generalised) over every :math:`q\in[0,1]^{n\times k}` with private row all ones.

    Parameters
    ----------
    chain : KChain
    n, eps, p
        The problem (``p`` 0-based).  Practical for one-sided ``n <= 8`` (k = 3) and small
        two-sided problems; larger ones stop at ``time_limit`` with a gap.
    time_limit : float
        Seconds for the SCIP solve.
    gap_limit : float
        Relative gap at which SCIP stops.
    starts : tuple of numpy.ndarray
        Mechanisms to offer as starting solutions (the data-independent window is always offered).

    Returns
    -------
    Candidate
        ``solver="global"``; ``upper_bound`` SCIP's dual bound plus :data:`~redactopt.solvers.scip_global.DUAL_MARGIN`
        and :data:`Q_FLOOR`
        (``bound_solver="scip"``, scope ``"all"``), ``None`` when it is below the utility of a
        verified start (numerical trouble) or ``eps <`` :data:`~redactopt.solvers.scip_global.MIN_BOUND_EPS`; ``status``
        ``"optimal"`` when SCIP closed the gap, else ``"time_limit"``.  Fallbacks: the starts.
    """
    n, eps, p = check_problem(chain, n, eps, p, two_state=False)
    time_limit = check_real(time_limit, "time_limit")
    if time_limit <= 0.0:
        raise ValueError(f"time_limit must be > 0, got {time_limit!r}")
    if eps > KGLOBAL_MAX_EPS:
        raise ValueError(f"eps={eps:g} is beyond the global model's range (eps <= {KGLOBAL_MAX_EPS:g}: e^eps is a "
                         "coefficient of the SCIP model); use method 'optimal', 'local' or 'dim'")
    started = time.perf_counter()
    k = chain.k
    if n == 1:
        return Candidate(np.ones((1, k)), "global", "optimal", upper_bound=0.0, bound_solver="closed-form")
    dim = dim_enumerate(chain, n, eps=eps, p=p)
    offered = [dim.fallbacks[0]] + [np.asarray(s, dtype=float) for s in starts]
    verified = [s for s in offered if leakage(chain, s, p).leakage <= eps * (1.0 - 1e-9)]
    start_u = max((utility(chain, s) for s in verified), default=0.0)
    mod = _KModel(chain, n, p, eps)
    m = mod.model
    m.setParam("limits/time", max(0.5, float(time_limit)))
    m.setParam("limits/gap", float(gap_limit))
    m.setParam("numerics/feastol", _FEASTOL)
    if verbose:
        m.hideOutput(False)  # PySCIPOpt has no showOutput: un-hide the log
    accepted = [mod.add_start(s) for s in verified]
    with quiet_stderr(verbose), scip_rounds(m, "scip branch and bound"):
        m.optimize()
    status = m.getStatus()
    raise_if_interrupted(status)
    dual = float(m.getDualbound())
    info = {"status": status, "dual_bound": dual, "nodes": int(m.getNNodes()),
            "solve_seconds": float(m.getSolvingTime()), "starts_accepted": accepted,
            "primal_bound": float(m.getPrimalbound()) if m.getNSols() else math.nan}
    T = chain.transition
    upper = claimed_bound(dual, start_u - Q_FLOOR, eps, info, smallest_entry=float(T[T > 0.0].min()))
    if upper is not None:
        upper += Q_FLOOR  # the floor's price (module docstring)
    fallbacks = tuple(verified) or (offered[0],)
    if m.getNSols():
        floored = mod.read_q()
        # the floor was only the model's: propose the entries it held up as published, with the
        # floored design as the fallback (the judge keeps whichever verifies with more utility)
        q = np.where(floored <= 2.0 * Q_FLOOR, 0.0, floored)
        fallbacks = (floored, *fallbacks)
    else:
        q = offered[0]
    info["seconds"] = time.perf_counter() - started
    return Candidate(redact_prob=q, solver="global",
                     status="optimal" if status in ("optimal", "gaplimit") else "time_limit",
                     upper_bound=upper, bound_solver="scip", fallbacks=fallbacks, info=info)
