r"""Exact leakage (Definition 1) of scan, owner and holder mechanisms, with a witness output.

**Scans in** :math:`O(n k^3)` (docs/beyond_local.md, §2-3).  Given :math:`X_p=x` the two sides are
independent and, on one side, only the event "first release at distance ``d`` with value ``v``"
(or "all redacted") depends on ``x``: everything published after the first release is a Markov
continuation of the released value and cancels from every likelihood ratio.  Its likelihood is

.. math:: g_x(d,v)=\sum_c T(x,c)\,\mu^c_d(v),\qquad g_x(\bot)=\sum_c T(x,c)\,\rho^c ,

where :math:`\mu^c` is the stopping law of the side's chain started from row ``c`` of ``start``
(owner scan: the first record is ``c``, ``T = Q``; holder scan: :math:`X_p=c`, ``T = I``), computed
by the recursion of Eq. (2.1).  Per ordered pair the side's largest ratio is a maximum over its
``k L + 1`` events, and :math:`\mathcal L=\max_{x\ne x'}\log[A_\ell(x,x')A_r(x,x')]` exactly as for
local mechanisms (docs/mathematics.md §12: the sides' outputs combine freely).

**Owner and holder tables** by summing :math:`\Pr(\mathbf x)\,M(\text{mask}\mid\text{row})` into
every output (:math:`O(k^n 2^{n-1})`).

**Verdicts are proofs.**  Every float quantity here is a sum of products of non-negative numbers,
so its relative error is at most :math:`\gamma_N=Nu/(1-Nu)` for a counted number ``N`` of roundings
(``u = 2**-53``), provided no positive number underflows: each evaluator tracks the exact support
symbolically and refuses the float path when a positive quantity is not a normal double.  The
ratio's enclosure ``[lo, hi]`` is compared with rational bounds on :math:`e^\epsilon`
(:func:`decide`); what the enclosure cannot decide is decided in rationals (:func:`scan_ratio_exact`,
:func:`owner_ratio_exact`).
"""

from __future__ import annotations

import functools
import math
import sys
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import numpy as np

from redactopt.judge.exact import exact_side_steps, exp_bounds, ratio_at_most_exp, to_fraction
from redactopt.judge.tolerances import reversal_error
from redactopt.model.chain import Chain as KChain
from redactopt.model.mechanism_classes import (BlockMechanism, OwnerMechanism, RunScanMechanism, ScanMechanism,
                                               output_index, row_keys, side_chain, side_chain_exact,
                                               tuple_probabilities)
from redactopt.model.varying import VaryingChain

__all__ = [
    "ClassLeakage",
    "decide",
    "ratio_within",
    "exp_enclosure",
    "scan_leakage",
    "scan_side_ratios",
    "side_within",
    "SideRatios",
    "scan_ratio_exact",
    "run_scan_leakage",
    "run_contractions_exact",
    "owner_leakage",
    "owner_ratio_exact",
    "mechanism_leakage",
    "verify_mechanism",
    "EXACT_MAX_RECORDS",
]

U = 2.0**-53
#: Smallest positive double the error analysis accepts (normal numbers only).
NORMAL_MIN = 2.0**-1000
#: Sides up to this many records (tables up to this many records) are re-decided in rationals.
EXACT_MAX_RECORDS = 400
EXACT_MAX_TABLE = 9


def _gamma(nops: float) -> float:
    """:math:`\\gamma_N` of Higham: the relative error bound of ``N`` roundings."""
    t = nops * U
    if t >= 0.5:
        return math.inf
    return t / (1.0 - t)


def exp_enclosure(eps: object) -> tuple[float, float]:
    r"""Doubles ``(lo, hi)`` with :math:`lo\le e^{\epsilon}\le hi`, from rational Taylor bounds (cached)."""
    return _exp_enclosure(to_fraction(eps, "eps"))


#: From this budget on :math:`e^\epsilon` exceeds the largest double (:math:`e^{710}>1.8\cdot10^{308}`).
EXP_OVERFLOW = 710


@functools.lru_cache(maxsize=65536)
def _exp_enclosure(e: Fraction) -> tuple[float, float]:
    if e >= EXP_OVERFLOW:
        return sys.float_info.max, math.inf
    lo, hi = exp_bounds(e, max(12, int(3 * float(e)) + 12))
    flo, fhi = float(lo), float(hi)
    if Fraction(flo) > lo:
        flo = math.nextafter(flo, -math.inf)
    if Fraction(fhi) < hi:
        fhi = math.nextafter(fhi, math.inf)
    return flo, fhi


Status = Literal["certified", "violated", "undecided"]


def ratio_within(ratio: Fraction, eps: object) -> bool | None:
    r"""Decide :math:`\text{ratio}\le e^{\epsilon}` exactly (``None``: undecided), for every finite ``eps >= 0``.

    The bit lengths of the ratio's numerator and denominator bound :math:`\log\text{ratio}` within
    :math:`\log 2` either way; where that decides (always for budgets far beyond the ratio, such as
    :math:`\epsilon=10^{300}`, whose Taylor series would need :math:`10^{300}` terms) it is the answer,
    else :func:`~redactopt.judge.exact.ratio_at_most_exp` decides with rational Taylor bounds.
    """
    e = to_fraction(eps, "eps")
    if ratio <= 1:
        return True
    bits = ratio.numerator.bit_length() - ratio.denominator.bit_length()
    ln2 = 0.6931471805599453  # within 1e-16 of log 2; the margins below absorb it
    if (bits + 1) * ln2 * (1 + 1e-12) + 1e-9 < e:
        return True
    if (bits - 1) * ln2 * (1 - 1e-12) - 1e-9 > e:
        return False
    return ratio_at_most_exp(ratio, e)


def decide(ratio_lo: float, ratio_hi: float, eps: object) -> Status:
    """``certified`` if the ratio's upper end is at most :math:`e^\\epsilon`, ``violated`` if its lower end exceeds it."""
    lo, hi = exp_enclosure(eps)
    if ratio_hi <= lo:
        return "certified"
    if ratio_lo > hi:
        return "violated"
    return "undecided"


@dataclass(frozen=True)
class ClassLeakage:
    r"""Exact leakage of a scan/owner/holder mechanism about its private record.

    Attributes
    ----------
    leakage : float
        :math:`\log` of the worst ratio (``inf`` when an output rules a value out).
    ratio_lo, ratio_hi : float
        A proven enclosure of the worst ratio :math:`e^{\mathcal L}` (equal when computed in rationals).
    pair : tuple of int
        The ordered pair ``(x, x')`` of the worst ratio.
    witness : numpy.ndarray of int
        An output of positive probability attaining it (state index, -1 for ⊥), record 0 first.
    exact_ratio : Fraction or None
        The worst ratio in rationals when it was computed so (``None`` otherwise or when infinite).
    """

    leakage: float
    ratio_lo: float
    ratio_hi: float
    pair: tuple[int, int]
    witness: np.ndarray
    labels: tuple
    exact_ratio: Fraction | None = None
    #: For a run's scan (:func:`run_scan_leakage`): the run's record (0-based) the worst ratio is about, and
    #: every record's leakage (nats, in run order).
    record: int | None = None
    per_record: tuple[float, ...] | None = None

    def witness_output(self) -> list:
        """The witness with state labels and ``None`` for ⊥."""
        return [None if v < 0 else self.labels[int(v)] for v in self.witness.tolist()]

    def verdict(self, eps: object) -> Status:
        """Whether :math:`\\mathcal L\\le\\epsilon` is proven (rationals decide when the enclosure cannot)."""
        if self.exact_ratio is not None:
            ok = ratio_within(self.exact_ratio, eps)
            return "undecided" if ok is None else ("certified" if ok else "violated")
        return decide(self.ratio_lo, self.ratio_hi, eps)


# ---------------------------------------------------------------------------
# scans: float evaluation with a proven error bound
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class _Side:
    g: np.ndarray          # (events, k): likelihood of each event under each value of X_p (common scale per event)
    events: list           # (d, v) with d 1-based; (0, -1) is "all redacted"
    rel: float             # proven relative error bound of every entry of g


def _side_matrices(mech: ScanMechanism, name: str) -> tuple[np.ndarray, float]:
    r"""The doubles of the matrices side ``name`` is read through, nearest first, ``(m, k, k)`` (a homogeneous
    chain: its one matrix, ``(k, k)``), and the relative error of each entry beyond one rounding of its exact value.

    A homogeneous chain's side matrix, and a varying chain's forward steps (the right side), are their exact
    entries rounded once.  A varying chain's left side is read through reversed steps
    :math:`\pi_t(x)P_t(x,y)/\pi_{t+1}(y)` built from computed marginals: their extra error is
    :func:`~redactopt.judge.tolerances.reversal_error` of the ``p`` steps the marginals went through.
    """
    chain, m = mech.chain, mech.side_length(name)
    if not isinstance(chain, VaryingChain):
        return side_chain(chain, name), 0.0  # one matrix, every step
    if name == "right":
        rounded = np.array([[[float(v) for v in r] for r in M] for M in chain.exact_matrices])
        return rounded[chain.row_level[mech.p: mech.p + m]], 0.0
    return np.asarray(chain.side_steps(mech.p, "left", m)), reversal_error(chain.k, mech.p)


def _side_events(chain: KChain | VaryingChain, mech: ScanMechanism, name: str) -> _Side | None:
    r"""The side's event likelihoods :math:`g_x(d,v)` and :math:`g_x(\bot)` (Eq. 2.1), with an error bound.

    Every positive number is rescaled per distance by a power of two (exact) and must stay a normal
    double; the support is propagated in booleans alongside and must match the floats' zero pattern,
    otherwise ``None`` (the caller decides in rationals).
    """
    S = mech.side(name)
    if S is None:
        return _Side(np.ones((1, mech.k)), [(0, -1)], 0.0)
    k, m = mech.k, mech.side_length(name)
    Qd, extra = _side_matrices(mech, name)
    one = Qd.ndim == 2
    Qd_s = (Qd > 0).astype(np.int64)
    T = np.eye(k) if mech.holder else (Qd if one else Qd[0])
    alive = (Qd if one else Qd[0]).copy() if mech.holder else np.eye(k)
    sup = alive > 0
    Ts = (T > 0).astype(np.int64)
    g, events = [], []
    for d in range(S.shape[0]):
        mu, cont = alive * S[d], alive * (1.0 - S[d])
        mu_s, cont_s = sup & (S[d] > 0), sup & (S[d] < 1)
        gd, gd_s = T @ mu, (Ts @ mu_s.astype(np.int64)) > 0
        if not _matches(gd, gd_s) or not _matches(mu, mu_s):
            return None
        for v in range(k):
            if gd_s[:, v].any():
                g.append(gd[:, v])
                events.append((d + 1, v))
        if d + 1 < S.shape[0]:
            Q, Qs = (Qd, Qd_s) if one else (Qd[d + 1], Qd_s[d + 1])
            alive, sup = cont @ Q, (cont_s.astype(np.int64) @ Qs) > 0
        else:
            alive, sup = cont, cont_s
        if not _matches(alive, sup):
            return None
        top = float(alive.max()) if sup.any() else 0.0
        if top > 0.0:
            alive = alive * 2.0 ** (-math.frexp(top)[1])
    if S.shape[0] == m and sup.any():
        rest, rest_s = T @ alive.sum(axis=1), (Ts @ sup.any(axis=1).astype(np.int64)) > 0
        if not _matches(rest, rest_s):
            return None
        g.append(rest)
        events.append((0, -1))
    rel = _gamma((k + 5) * (S.shape[0] + 2) + 2 * k)
    if extra:  # every event's likelihood is a sum of products of at most L + 1 matrix entries
        rel = math.nextafter(math.expm1(math.log1p(rel) + (S.shape[0] + 1) * math.log1p(extra)) * (1 + 1e-9),
                             math.inf)
    return _Side(np.array(g), events, rel)


def _matches(values: np.ndarray, support: np.ndarray) -> bool:
    """Whether the floats are positive exactly on the support and every positive one is a normal double."""
    return bool(np.all((values > 0) == support) and np.all(values[support] >= NORMAL_MIN))


def _side_best(side: _Side, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Largest float ratio ``best[x, x']`` over the side's events (``inf``: positive under x only) and its event."""
    g = side.g
    best = np.ones((k, k))
    arg = np.zeros((k, k), dtype=np.int64)
    for x in range(k):
        for y in range(k):
            if x == y:
                continue
            num, den = g[:, x], g[:, y]
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.where(num > 0, np.where(den > 0, num / np.where(den > 0, den, 1.0), np.inf), -1.0)
            i = int(np.argmax(r))
            best[x, y], arg[x, y] = float(r[i]), i
    return best, arg


@dataclass(frozen=True)
class SideRatios:
    """One side's largest ratio per ordered pair: proven enclosure ``[lo, hi]`` and the event attaining the float one."""

    lo: np.ndarray
    hi: np.ndarray
    events: list


def scan_side_ratios(mech: ScanMechanism, name: str) -> SideRatios | None:
    r"""The side's :math:`e^{A_s(x,x')}` for every ordered pair, enclosed; ``None`` outside the proven float range."""
    side = _side_events(mech.chain, mech, name)
    if side is None:
        return None
    best, arg = _side_best(side, mech.k)
    grow = (1.0 + side.rel) / (1.0 - side.rel) * (1.0 + 4 * U)
    with np.errstate(invalid="ignore"):
        hi = np.where(np.isinf(best), np.inf, np.nextafter(best * grow, np.inf))
        lo = np.where(np.isinf(best), np.inf, best / grow)
    return SideRatios(np.maximum(lo, 1.0), np.maximum(hi, 1.0),
                      [[side.events[arg[x, y]] for y in range(mech.k)] for x in range(mech.k)])


def side_within(mech: ScanMechanism, name: str, budgets: dict, *, exact_records: int = EXACT_MAX_RECORDS) -> bool:
    r"""Whether side ``name`` alone keeps :math:`e^{A_s(x,x')}\le e^{a(x,x')}` for every ordered pair, *proven*.

    ``budgets`` maps each ordered pair to its budget :math:`a` (a Fraction or a double, taken exactly).
    The float enclosure of :func:`scan_side_ratios` decides first (against the lower end of
    :func:`exp_enclosure`); what it cannot decide is decided in rationals when the side has at most
    ``exact_records`` records (``False`` beyond: no claim without a proof).  Budgets of two sides that
    sum to :math:`\epsilon` and each pass make the scan :math:`\epsilon`-private (the sides' ratios
    multiply, docs/beyond_local.md, §2).
    """
    rat = scan_side_ratios(mech, name)
    if rat is not None:
        ok = [bool(rat.hi[x, y] <= exp_enclosure(a)[0]) for (x, y), a in budgets.items()]
        if all(ok):
            return True
        if any(bool(rat.lo[x, y] > exp_enclosure(a)[1]) for (x, y), a in budgets.items()):
            return False
    if mech.side_length(name) > exact_records:
        return False
    best, _ = _side_best_exact(mech, name)
    for (x, y), a in budgets.items():
        r = best[x][y]
        if r is None or ratio_within(r, a) is not True:
            return False
    return True


def scan_leakage(mech: ScanMechanism) -> ClassLeakage:
    r"""Exact leakage of a scan mechanism with a witness (:math:`O(n k^3)`; module docstring).

    Falls back to rational arithmetic (:func:`scan_ratio_exact`) when a side's support or scale
    leaves the proven float range and both sides are at most :data:`EXACT_MAX_RECORDS` long; beyond
    that it raises ``ValueError`` (no verdict without a proof).
    """
    k = mech.k
    sides = [scan_side_ratios(mech, name) for name in ("left", "right")]
    if any(s is None for s in sides):
        if max(mech.side_length("left"), mech.side_length("right")) > EXACT_MAX_RECORDS:
            raise ValueError("scan_leakage: a side leaves the proven float range and is too long for rationals")
        return _scan_exact_result(mech)
    left, right = sides
    top, pair = -1.0, (0, 1)
    for x in range(k):
        for y in range(k):
            if x != y and left.hi[x, y] * right.hi[x, y] > top:
                top, pair = left.hi[x, y] * right.hi[x, y], (x, y)
    x, y = pair
    lo = float(left.lo[x, y] * right.lo[x, y]) * (1.0 - 2 * U)
    hi = math.inf if math.isinf(top) else math.nextafter(top * (1.0 + 2 * U), math.inf)
    mid = math.sqrt(lo * hi) if math.isfinite(hi) else math.inf
    witness = _scan_witness(mech, left.events[x][y], right.events[x][y])
    if all(mech.side(name) is None or not np.any(mech.side(name)) for name in ("left", "right")):
        # nothing is ever released: the only output is all redacted, of probability 1 under every X_p
        return ClassLeakage(0.0, 1.0, 1.0, pair, witness, mech.chain.labels)
    return ClassLeakage(math.log(mid), max(lo, 1.0), max(hi, 1.0), pair, witness, mech.chain.labels)


def _scan_witness(mech: ScanMechanism, left: tuple, right: tuple) -> np.ndarray:
    """An output realising the two sides' events: ⊥ up to the first release, then a positive-probability path."""
    n, p = mech.n, mech.p
    out = -np.ones(n, dtype=np.int64)
    for name, (d, v), step in (("left", left, -1), ("right", right, 1)):
        if mech.side(name) is None or d == 0:
            continue
        Q, _ = _side_matrices(mech, name)
        t, cur, j = p + step * d, v, d
        while 0 <= t < n:
            out[t] = cur
            if Q.ndim == 2 or j < Q.shape[0]:
                cur = int(np.argmax((Q if Q.ndim == 2 else Q[j])[cur]))
            t, j = t + step, j + 1
    return out


# ---------------------------------------------------------------------------
# scans in rationals
# ---------------------------------------------------------------------------
def _side_best_exact(mech: ScanMechanism, name: str) -> tuple[list[list[Fraction | None]], list[list[tuple]]]:
    """Largest exact ratio per ordered pair over the side's events (``None``: infinite) and the event."""
    k = mech.k
    S = mech.side(name)
    best: list[list[Fraction | None]] = [[Fraction(1)] * k for _ in range(k)]
    arg = [[(0, -1)] * k for _ in range(k)]
    if S is None:
        return best, arg
    if isinstance(mech.chain, VaryingChain):
        Qd = exact_side_steps(mech.chain, mech.p, name)
    else:
        Qd = [side_chain_exact(mech.chain, name)] * mech.side_length(name)
    eye = [[Fraction(int(i == j)) for j in range(k)] for i in range(k)]
    T = eye if mech.holder else Qd[0]
    alive = [list(r) for r in (Qd[0] if mech.holder else eye)]
    seen = [[False] * k for _ in range(k)]

    def consider(vec: list[Fraction], event: tuple) -> None:
        for x in range(k):
            for y in range(k):
                if x == y or vec[x] == 0:
                    continue
                r = None if vec[y] == 0 else vec[x] / vec[y]
                cur = best[x][y]
                if not seen[x][y] or (cur is not None and (r is None or r > cur)):
                    best[x][y], arg[x][y], seen[x][y] = r, event, True

    Sx = [[[Fraction(float(v)) for v in row] for row in rows] for rows in S]
    for d, Sd in enumerate(Sx):
        mu = [[alive[c][v] * Sd[c][v] for v in range(k)] for c in range(k)]
        cont = [[alive[c][v] * (1 - Sd[c][v]) for v in range(k)] for c in range(k)]
        for v in range(k):
            consider([sum((T[x][c] * mu[c][v] for c in range(k)), Fraction(0)) for x in range(k)], (d + 1, v))
        alive = [[sum((cont[c][u] * Qd[d + 1][u][w] for u in range(k)), Fraction(0)) for w in range(k)]
                 for c in range(k)] if d + 1 < len(Sx) else cont
    if len(Sx) == mech.side_length(name):
        consider([sum((T[x][c] * sum(alive[c], Fraction(0)) for c in range(k)), Fraction(0)) for x in range(k)],
                 (0, -1))
    return best, arg


def scan_ratio_exact(mech: ScanMechanism) -> tuple[Fraction | None, tuple[int, int], tuple, tuple]:
    """The worst ratio :math:`e^{\\mathcal L}` of a scan in rationals (``None``: infinite), its pair and events."""
    if max(mech.side_length("left"), mech.side_length("right")) > EXACT_MAX_RECORDS:
        raise ValueError(f"scan_ratio_exact: sides of at most {EXACT_MAX_RECORDS} records")
    (bl, al), (br, ar) = (_side_best_exact(mech, s) for s in ("left", "right"))
    top: Fraction | None = Fraction(-1)
    pair = (0, 1)
    for x in range(mech.k):
        for y in range(mech.k):
            if x == y:
                continue
            r = None if bl[x][y] is None or br[x][y] is None else bl[x][y] * br[x][y]
            if top is not None and (r is None or r > top):
                top, pair = r, (x, y)
    return top, pair, al[pair[0]][pair[1]], ar[pair[0]][pair[1]]


def _scan_exact_result(mech: ScanMechanism) -> ClassLeakage:
    ratio, pair, left, right = scan_ratio_exact(mech)
    return _exact_result(ratio, pair, _scan_witness(mech, left, right), mech.chain.labels)


def _exact_result(ratio: Fraction | None, pair: tuple[int, int], witness: np.ndarray, labels: tuple) -> ClassLeakage:
    if ratio is None:
        return ClassLeakage(math.inf, math.inf, math.inf, pair, witness, labels, None)
    leak = math.log(ratio.numerator) - math.log(ratio.denominator)
    lo = float(ratio)
    hi = lo if Fraction(lo) >= ratio else math.nextafter(lo, math.inf)
    lo = lo if Fraction(lo) <= ratio else math.nextafter(lo, -math.inf)
    return ClassLeakage(leak, lo, hi, pair, witness, labels, ratio)


# ---------------------------------------------------------------------------
# scans of a run of private records (docs/mathematics.md §7d)
# ---------------------------------------------------------------------------
def run_contractions_exact(chain: KChain, r: int) -> list[tuple[list[list[Fraction]], list[list[Fraction]]]]:
    r"""Per record ``i`` of a run of ``r`` records, the exact contractions :math:`(K^\ell_i, K^r_i)`.

    :math:`K^\ell_i[x,u]=\Pr(X_{p_1}=u\mid X_{p_1+i}=x)=\tilde P^{\,i}` (the time-reversed chain, ``i`` steps back to
    the run's first record) and :math:`K^r_i=P^{\,r-1-i}` (forward to its last record), in rationals of the
    chain's exact entries (Chapman--Kolmogorov).
    """
    k = chain.k
    eye = [[Fraction(int(a == b)) for b in range(k)] for a in range(k)]

    def mul(A: list[list[Fraction]], B: list[list[Fraction]]) -> list[list[Fraction]]:
        return [[sum((A[a][c] * B[c][b] for c in range(k)), Fraction(0)) for b in range(k)] for a in range(k)]

    L, R = side_chain_exact(chain, "left"), side_chain_exact(chain, "right")
    lefts, rights = [eye], [eye]
    for _ in range(r - 1):
        lefts.append(mul(L, lefts[-1]))
        rights.append(mul(R, rights[-1]))
    return [(lefts[i], rights[r - 1 - i]) for i in range(r)]


def _mobius(a: Fraction, b: Fraction, c: Fraction, d: Fraction, t: Fraction | None) -> Fraction | None:
    r""":math:`(at+b)/(ct+d)` in rationals, ``t = None`` for :math:`+\infty` (the limit); ``None``: infinite."""
    if t is None:
        if c > 0:
            return a / c
        return None if a > 0 else b / d
    den = c * t + d
    num = a * t + b
    return None if den == 0 else num / den


def _mobius_float(a: float, b: float, c: float, d: float, lo: float, hi: float) -> tuple[float, float]:
    r"""A proven enclosure of :math:`(at+b)/(ct+d)` over :math:`t\in[lo,hi]` (a monotone map: its ends), for
    non-negative coefficients each within one rounding of its exact value; ``inf`` ends allowed."""
    vals = []
    for t in (lo, hi):
        if math.isinf(t):
            v = a / c if c > 0 else (math.inf if a > 0 else b / d)
        else:
            den = c * t + d
            v = math.inf if den == 0 else (a * t + b) / den
        vals.append(v)
    g = _gamma(8)
    grow = (1 + g) / (1 - g)
    top, bot = max(vals), min(vals)
    return (bot / grow, math.inf if math.isinf(top) else math.nextafter(top * grow, math.inf))


def _run_factors(K: list[list[float]], A: tuple[float, float], B: tuple[float, float]) -> list[tuple[float, float]]:
    r"""Per direction (``(0, 1)`` then ``(1, 0)``) the enclosure of a side's largest factor
    :math:`\max_\rho\Phi_K(\rho)` (resp. of :math:`1/\Phi_K`) over its event ratios, whose extremes are
    :math:`e^{A}` and :math:`e^{-B}` (``A``, ``B``: enclosures of :math:`e^{A}`, :math:`e^{B}`)."""
    (k00, k01), (k10, k11) = K
    out = []
    for coeffs in (((k00, k01, k10, k11), (k01, k00, k11, k10)), ((k10, k11, k00, k01), (k11, k10, k01, k00))):
        e1 = _mobius_float(*coeffs[0], *A)   # at rho = e^A
        e2 = _mobius_float(*coeffs[1], *B)   # at rho = e^-B, written in sigma = e^B
        out.append((max(e1[0], e2[0]), max(e1[1], e2[1])))
    return out


def _run_factors_exact(K: list[list[Fraction]], A: Fraction | None, B: Fraction | None) -> list[Fraction | None]:
    """:func:`_run_factors` in rationals (``None``: infinite; ``A``/``B`` ``None``: an infinite side ratio)."""
    (k00, k01), (k10, k11) = K
    out: list[Fraction | None] = []
    for coeffs in (((k00, k01, k10, k11), (k01, k00, k11, k10)), ((k10, k11, k00, k01), (k11, k10, k01, k00))):
        v1, v2 = _mobius(*coeffs[0], A), _mobius(*coeffs[1], B)
        out.append(None if v1 is None or v2 is None else max(v1, v2))
    return out


def run_scan_leakage(mech: RunScanMechanism) -> ClassLeakage:
    r"""Exact leakage of a run's scan about every record of the run (docs/mathematics.md §7d), with a witness.

    Given :math:`X_{p_j}` the two sides are independent and each depends on it only through its boundary
    record, so :math:`\Pr(y\mid X_{p_j}=x)=(K^\ell_j g_\ell)_x\,(K^r_j g_r)_x` with :math:`g_s` the side's event
    likelihoods about its boundary record: the ratio about :math:`X_{p_j}` is :math:`\Phi_{K^\ell_j}(\rho_\ell)
    \Phi_{K^r_j}(\rho_r)`, a monotone Möbius map of each side's event ratio, so its largest value is taken at the
    side's extreme ratios :math:`e^{A_s}`, :math:`e^{-B_s}` (:func:`scan_side_ratios` of the side's
    :meth:`~redactopt.model.mechanism_classes.RunScanMechanism.boundary_scan`, proven enclosures) and the
    sides' outputs combine freely.  The contractions are exact rationals rounded once; every enclosure is
    outward; where a record's verdict is undecided the sides' extreme ratios, the contractions and the
    ratio are recomputed in rationals (sides of at most :data:`EXACT_MAX_RECORDS` records; beyond, the
    enclosure stands and the verdict stays undecided).  ``record`` is the run's record of the worst
    ratio, ``per_record`` every record's leakage.
    """
    r = mech.last - mech.first + 1
    Ks = run_contractions_exact(mech.chain, r)
    sides: dict[str, tuple] = {}
    for name in ("left", "right"):
        if mech.side_length(name) == 0:
            sides[name] = ((1.0, 1.0), (1.0, 1.0), [[(0, -1)] * 2] * 2)
            continue
        rat = scan_side_ratios(mech.boundary_scan(name), name)
        if rat is None:  # outside the proven float range: the side's extremes in rationals
            best, arg = _side_best_exact(mech.boundary_scan(name), name)
            enc = []
            for x, y in ((0, 1), (1, 0)):
                v = best[x][y]
                if v is None:
                    enc.append((math.inf, math.inf))
                else:
                    e = _exact_result(v, (x, y), np.zeros(0), ())
                    enc.append((e.ratio_lo, e.ratio_hi))
            sides[name] = (enc[0], enc[1], arg)
        else:
            sides[name] = ((float(rat.lo[0, 1]), float(rat.hi[0, 1])), (float(rat.lo[1, 0]), float(rat.hi[1, 0])),
                           rat.events)
    per_lo, per_hi = np.empty((r, 2)), np.empty((r, 2))
    for i, (Kl, Kr) in enumerate(Ks):
        fl = _run_factors([[float(v) for v in row] for row in Kl], sides["left"][0], sides["left"][1])
        fr = _run_factors([[float(v) for v in row] for row in Kr], sides["right"][0], sides["right"][1])
        for dirn in range(2):
            lo = fl[dirn][0] * fr[dirn][0] * (1.0 - 2 * U)
            top = fl[dirn][1] * fr[dirn][1]
            per_lo[i, dirn] = max(lo, 1.0)
            per_hi[i, dirn] = max(math.inf if math.isinf(top) else math.nextafter(top * (1.0 + 2 * U), math.inf), 1.0)
    i, dirn = np.unravel_index(int(np.argmax(per_hi)), per_hi.shape)
    i, dirn = int(i), int(dirn)
    pair = (0, 1) if dirn == 0 else (1, 0)
    with np.errstate(divide="ignore"):
        mids = np.where(np.isinf(per_hi), np.inf, np.log(np.sqrt(per_lo * np.where(np.isinf(per_hi), 1.0, per_hi))))
    per = tuple(float(v) for v in mids.max(axis=1))
    witness = _run_witness(mech, sides, Ks[i], dirn)
    lo, hi = float(per_lo[i, dirn]), float(per_hi[i, dirn])
    leak = per[i] if math.isfinite(hi) else math.inf
    if not any(mech.side(s) is not None and np.any(mech.side(s)) for s in ("left", "right")):
        return ClassLeakage(0.0, 1.0, 1.0, pair, witness, mech.chain.labels, None, mech.first + i,
                            tuple(0.0 for _ in range(r)))
    return ClassLeakage(leak, lo, hi, pair, witness, mech.chain.labels, None, mech.first + i, per)


def _run_witness(mech: RunScanMechanism, sides: dict, K: tuple, dirn: int) -> np.ndarray:
    """An output of positive probability attaining (up to the enclosure) the worst ratio: each side's extreme event."""
    out = -np.ones(mech.n, dtype=np.int64)
    for name, Kx in (("left", K[0]), ("right", K[1])):
        if mech.side_length(name) == 0:
            continue
        A, B, events = sides[name]
        Kf = [[float(v) for v in row] for row in Kx]
        fa = _run_factors(Kf, A, (1.0, 1.0))[dirn][1]  # the factor of the side's e^A alone, and of its e^-B
        fb = _run_factors(Kf, (1.0, 1.0), B)[dirn][1]
        ev = events[0][1] if fa >= fb else events[1][0]
        sm = mech.boundary_scan(name)
        if name == "left":
            out[: mech.first + 1] = _scan_witness(sm, ev, (0, -1))
        else:
            out[mech.last:] = _scan_witness(sm, (0, -1), ev)
    out[mech.first: mech.last + 1] = -1
    return out


def run_scan_ratio_exact(mech: RunScanMechanism) -> tuple[Fraction | None, int, tuple[int, int]]:
    """The worst ratio of a run's scan over its records and both directions in rationals (``None``: infinite),
    the record (0-based) and the pair."""
    if max(mech.side_length("left"), mech.side_length("right")) > EXACT_MAX_RECORDS:
        raise ValueError(f"run_scan_ratio_exact: sides of at most {EXACT_MAX_RECORDS} records")
    ext = {}
    for name in ("left", "right"):
        if mech.side_length(name) == 0:
            ext[name] = (Fraction(1), Fraction(1))
        else:
            best, _ = _side_best_exact(mech.boundary_scan(name), name)
            ext[name] = (best[0][1], best[1][0])
    top: Fraction | None = Fraction(-1)
    rec, pair = mech.first, (0, 1)
    for i, (Kl, Kr) in enumerate(run_contractions_exact(mech.chain, mech.last - mech.first + 1)):
        fl = _run_factors_exact(Kl, *ext["left"])
        fr = _run_factors_exact(Kr, *ext["right"])
        for dirn in range(2):
            v = None if fl[dirn] is None or fr[dirn] is None else fl[dirn] * fr[dirn]
            if top is not None and (v is None or v > top):
                top, rec, pair = v, mech.first + i, ((0, 1) if dirn == 0 else (1, 0))
    return top, rec, pair


# ---------------------------------------------------------------------------
# owner and holder tables
# ---------------------------------------------------------------------------
def owner_leakage(mech: OwnerMechanism | BlockMechanism) -> ClassLeakage:
    r"""Exact leakage of an owner/holder table (a block mechanism: of its block, by the cut argument).

    :math:`\Pr(\mathbf y\mid X_p=x)=\sum_{\mathbf x:\,x_p=x}\Pr(\mathbf x)\,M(\text{mask}\mid\text{row})/\pi_x`,
    summed in floats over non-negative terms with a proven relative error; rationals decide
    (:func:`owner_ratio_exact`) when a positive term is not a normal double.
    """
    inner = mech.inner if isinstance(mech, BlockMechanism) else mech
    n, p, k = inner.n, inner.p, inner.k
    out, X = output_index(k, n, p)
    pr = tuple_probabilities(inner.chain, n)  # exact values rounded once, n - 1 products
    path = _paths(inner.chain, X)
    varying = isinstance(inner.chain, VaryingChain)
    # the law of X_p: stationary, or (varying) the sum of the same terms over the tuples (k**(n-1) more additions)
    pi = np.bincount(X[:, p], weights=pr, minlength=k) if varying else \
        np.array([float(v) for v in inner.chain.exact_stationary()])
    keys = row_keys(k, n, p, inner.holder)
    kx = inner.kernel()[keys]  # each row divided by its sum without overflow (OwnerMechanism.kernel)
    w = (pr / pi[X[:, p]])[:, None] * kx
    w_s = path[:, None] & (inner.table[keys] > 0)  # the support of the table itself: an entry lost is refused
    flat = X[:, p][:, None] * (k + 1) ** (n - 1) + out
    size = k * (k + 1) ** (n - 1)
    lik = np.bincount(flat.ravel(), weights=w.ravel(), minlength=size).reshape(k, -1)
    sup = np.bincount(flat.ravel(), weights=w_s.ravel().astype(float), minlength=size).reshape(k, -1) > 0
    if not _matches(w, w_s) or not _matches(lik, sup):
        if n > EXACT_MAX_TABLE:
            raise ValueError("owner_leakage: a term leaves the proven float range and the table is too large for rationals")
        return _owner_exact_result(mech)
    top, pair, col = _table_best(lik, k)
    g = _gamma(2 * n + 2 ** (n - 1) + (2 if varying else 1) * k ** (n - 1) + 8)
    grow = (1 + g) / (1 - g) * (1 + 4 * U)
    hi = math.inf if math.isinf(top) else math.nextafter(top * grow, math.inf)
    witness = _table_witness(mech, col, n, p, k)
    return ClassLeakage(math.log(top), max(top / grow, 1.0), max(hi, 1.0), pair, witness, inner.chain.labels)


def _paths(chain: KChain | VaryingChain, X: np.ndarray) -> np.ndarray:
    """Which record tuples have positive probability (the exact support: the initial law and every step)."""
    if isinstance(chain, VaryingChain):
        ok = np.array([v > 0 for v in chain.exact_initial])[X[:, 0]]
        for t in range(X.shape[1] - 1):
            M = np.array([[v > 0 for v in r] for r in chain.exact_matrices[int(chain.row_level[t])]])
            ok &= M[X[:, t], X[:, t + 1]]
        return ok
    P = np.array([[v > 0 for v in r] for r in chain.exact_transition()])
    ok = np.ones(X.shape[0], dtype=bool)
    for t in range(X.shape[1] - 1):
        ok &= P[X[:, t], X[:, t + 1]]
    return ok


def _table_best(lik: np.ndarray, k: int) -> tuple[float, tuple[int, int], int]:
    top, pair, col = -1.0, (0, 1), 0
    for x in range(k):
        for y in range(k):
            if x == y:
                continue
            num, den = lik[x], lik[y]
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.where(num > 0, np.where(den > 0, num / np.where(den > 0, den, 1.0), np.inf), -1.0)
            i = int(np.argmax(r))
            if r[i] > top:
                top, pair, col = float(r[i]), (x, y), i
    return top, pair, col


def _table_witness(mech: OwnerMechanism | BlockMechanism, col: int, n: int, p: int, k: int) -> np.ndarray:
    """The block's output ``col`` (base ``k + 1`` digits) placed in the whole sequence; outside records on a likely path."""
    digits = [(col // (k + 1) ** j) % (k + 1) for j in range(n - 1)]
    others = [t for t in range(n) if t != p]
    block = -np.ones(n, dtype=np.int64)
    for j, t in enumerate(others):
        block[t] = -1 if digits[j] == k else digits[j]
    if not isinstance(mech, BlockMechanism):
        return block
    full = -np.ones(mech.n, dtype=np.int64)
    full[mech.start: mech.start + n] = block
    P, R = (side_chain(mech.chain, s) for s in ("right", "left"))
    for t in range(mech.start + n, mech.n):
        full[t] = int(np.argmax(P[full[t - 1]]))
    for t in range(mech.start - 1, -1, -1):
        full[t] = int(np.argmax(R[full[t + 1]]))
    return full


def owner_ratio_exact(mech: OwnerMechanism | BlockMechanism) -> tuple[Fraction | None, tuple[int, int], int]:
    r"""The worst ratio of an owner/holder table in rationals (``None``: infinite), its pair and output index."""
    inner = mech.inner if isinstance(mech, BlockMechanism) else mech
    n, p, k = inner.n, inner.p, inner.k
    if n > EXACT_MAX_TABLE:
        raise ValueError(f"owner_ratio_exact: tables of at most {EXACT_MAX_TABLE} records")
    out, X = output_index(k, n, p)
    chain = inner.chain
    if isinstance(chain, VaryingChain):
        init, steps = chain.exact_initial, [chain.exact_matrices[int(chain.row_level[t])] for t in range(n - 1)]
    else:
        init, steps = chain.exact_stationary(), [chain.exact_transition()] * (n - 1)
    prs = []
    for x in X.tolist():
        pr = init[x[0]]
        for t in range(n - 1):
            pr *= steps[t][x[t]][x[t + 1]]
        prs.append(pr)
    pi = [sum((pr for pr, x in zip(prs, X[:, p].tolist()) if x == v), Fraction(0)) for v in range(k)]
    keys = row_keys(k, n, p, inner.holder)
    rows = [[Fraction(float(v)) for v in r] for r in inner.table]
    sums = [sum(r, Fraction(0)) for r in rows]
    lik: dict[int, list[Fraction]] = {}
    for i, x in enumerate(X.tolist()):
        pr = prs[i]
        if not pr:
            continue
        row, s = rows[keys[i]], sums[keys[i]]
        for mi in range(2 ** (n - 1)):
            if row[mi]:
                vec = lik.setdefault(int(out[i, mi]), [Fraction(0)] * k)
                vec[x[p]] += pr * row[mi] / (s * pi[x[p]])
    top: Fraction | None = Fraction(-1)
    pair, col = (0, 1), 0
    for o, vec in lik.items():
        for x in range(k):
            for y in range(k):
                if x == y or vec[x] == 0:
                    continue
                r = None if vec[y] == 0 else vec[x] / vec[y]
                if top is not None and (r is None or r > top):
                    top, pair, col = r, (x, y), o
    return top, pair, col


def _owner_exact_result(mech: OwnerMechanism | BlockMechanism) -> ClassLeakage:
    inner = mech.inner if isinstance(mech, BlockMechanism) else mech
    ratio, pair, col = owner_ratio_exact(mech)
    return _exact_result(ratio, pair, _table_witness(mech, col, inner.n, inner.p, inner.k), inner.chain.labels)


def mechanism_leakage(mech: ScanMechanism | OwnerMechanism | BlockMechanism) -> ClassLeakage:
    """Exact leakage of any mechanism of this module (dispatch on its type)."""
    if isinstance(mech, ScanMechanism):
        return scan_leakage(mech)
    if isinstance(mech, RunScanMechanism):
        return run_scan_leakage(mech)
    if isinstance(mech, (OwnerMechanism, BlockMechanism)):
        return owner_leakage(mech)
    raise TypeError(f"not a scan/owner/holder mechanism: {type(mech).__name__}")


def verify_mechanism(mech: ScanMechanism | OwnerMechanism | BlockMechanism, eps: object) -> tuple[Status, ClassLeakage]:
    """The exact verdict :math:`\\mathcal L\\le\\epsilon` (rationals decide what the float enclosure cannot)."""
    res = mechanism_leakage(mech)
    status = res.verdict(eps)
    if isinstance(mech, RunScanMechanism):
        if status == "undecided" and max(mech.side_length("left"), mech.side_length("right")) <= EXACT_MAX_RECORDS:
            ratio, rec, pair = run_scan_ratio_exact(mech)
            ex = _exact_result(ratio, pair, res.witness, mech.chain.labels)
            res = ClassLeakage(ex.leakage, ex.ratio_lo, ex.ratio_hi, pair, res.witness, res.labels, ratio, rec,
                               res.per_record)
            status = res.verdict(eps)
        return status, res
    if status == "undecided" and res.exact_ratio is None:
        small = (isinstance(mech, ScanMechanism) and max(mech.side_length("left"), mech.side_length("right"))
                 <= EXACT_MAX_RECORDS) or (not isinstance(mech, ScanMechanism) and
                                           (mech.inner if isinstance(mech, BlockMechanism) else mech).n
                                           <= EXACT_MAX_TABLE)
        if small:
            res = _scan_exact_result(mech) if isinstance(mech, ScanMechanism) else _owner_exact_result(mech)
            status = res.verdict(eps)
    return status, res
