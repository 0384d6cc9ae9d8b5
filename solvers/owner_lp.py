r"""The optimum over *every* mechanism (owner and holder classes) as one linear program, for small n.

A mechanism is a kernel :math:`M(\text{mask}\mid\mathbf r)` over release masks of the ``n - 1``
non-private records given the records it may read: :math:`\mathbf r=\mathbf x_{-p}` (owner) or
:math:`\mathbf r=\mathbf x` (holder).  Each (row, mask) produces one output ``o`` (the published
values), so for an ordered pair :math:`(x,x')`

.. math:: \Pr(o\mid X_p=x)=\sum_{\mathbf x:\,x_p=x}\frac{\Pr(\mathbf x)}{\pi_x}M(\text{mask}(o)\mid\mathbf r(\mathbf x)),

linear in ``M``; Definition 1 is :math:`\Pr(o\mid x)\le e^\epsilon\Pr(o\mid x')` for every output and
ordered pair (docs/beyond_local.md, §4).  With :math:`\sum_{\text{mask}}M=1` per row and the expected
number published as objective this is an LP with :math:`k^{n-1}2^{n-1}` (holder :math:`k^n2^{n-1}`)
variables; its verified dual bound (:mod:`redactopt.solvers.lp_certificate`) is the exact optimum up to
the solver's tolerance.

**Long sequences** (§6).  *Upper bound*: the outputs of a window of records around ``p`` are a
post-processing of the whole output (a mediant), and the records outside the window act on it only
as randomness whose law depends on the window's records (Markov), so restricted to the window any
mechanism is a mechanism of the same class for the window problem: :math:`\text{OPT}_n\le
(\text{OPT}_w\,n_w+n-n_w)/n` (:func:`window_bound`).  *Design*: the LP on a block with its outermost
records forced published (:func:`propose_block`); every record outside is published and cut off.

This module only proposes: the designs are judged exactly and certified by
:mod:`redactopt.engine.class_judge` (the judge is passed in as ``accept`` to try the LP's margins).
"""

from __future__ import annotations

import math
import time
from fractions import Fraction
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from redactopt.judge.scan import exp_enclosure, ratio_within
from redactopt.model.chain import Chain as KChain
from redactopt.model.mechanism_classes import (BlockMechanism, OwnerMechanism, as_kchain, output_index,
                                               record_tuples, release_masks, row_keys, tuple_probabilities)
from redactopt.solvers.lp_certificate import LinearProgram, rows_scaled, solve_robust

__all__ = ["owner_program", "OwnerProposal", "BlockInfeasible", "propose_owner", "window_bound", "propose_block",
           "max_exact_n", "fit_window", "MAX_LP_VARIABLES", "class_bound", "repair_table", "design_margins"]

U = 2.0**-53
#: Largest LP (variables) the owner/holder optimum is built for.
MAX_LP_VARIABLES = 300_000
#: Margins (nats) a design LP is solved below the budget, tried in turn until one verifies (each at most a
#: fraction of the budget itself, so that a tiny budget is never margined below zero: ``design_margins``).
MARGINS = (1e-9, 1e-7, 1e-5, 1e-3)
SNAP = 1e-10
#: Largest budget ratio a design LP is solved with: a smaller ratio only tightens the design's constraints
#: (it stays private at the larger budget) and keeps the program within HiGHS's accepted range.
DESIGN_E_MAX = 1e12
#: From this ratio on a bound LP is not built: the trivial bound (every non-private record published) is used.
BOUND_E_MAX = 1e200


def max_exact_n(k: int, holder: bool) -> int:
    """Largest ``n`` whose full LP has at most :data:`MAX_LP_VARIABLES` variables."""
    n = 2
    while (k ** ((n + 1) if holder else n)) * 2**n <= MAX_LP_VARIABLES:
        n += 1
    return n


def _probabilities(chain: KChain, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``Pr(x)`` of every record tuple (from the exact chain, correctly rounded entries), ``pi`` and the tuples."""
    pi = np.array([float(v) for v in chain.exact_stationary()])
    return tuple_probabilities(chain, n), pi, record_tuples(chain.k, n)


def owner_program(chain: KChain, n: int, p: int, E: float, *, holder: bool = False,
                  forced: tuple[int, ...] = ()) -> tuple[LinearProgram, np.ndarray]:
    r"""The LP of the module docstring at budget ``E`` (a finite double taken as exact data), and the mask columns used.

    ``forced``: positions published under every row (their masks alone are variables).  Variables are
    indexed ``row * len(masks) + i``; the returned array lists the masks' indices among all ``2**(n-1)``.

    Error bounds of the data (for the dual check, :mod:`redactopt.solvers.lp_certificate`): ``Pr(x)`` is a
    product of ``n`` correctly rounded entries of the exact chain in ``n - 1`` roundings, divided by a rounded
    :math:`\pi_x`, then multiplied by ``E``: at most ``2n + 2`` roundings, so ``(2n + 4) u`` relative bounds
    every coefficient; an objective entry adds the product with the count and a sum over the ``k`` tuples
    of a row: ``(2n + k + 6) u``.
    """
    if not math.isfinite(E) or E < 1.0:
        raise ValueError(f"owner_program: E must be a finite ratio >= 1, got {E!r}")
    k = chain.k
    others = [t for t in range(n) if t != p]
    allm = release_masks(n - 1)
    keep = np.all(allm[:, [others.index(t) for t in forced]] == 1, axis=1) if forced else np.ones(len(allm), bool)
    masks = np.flatnonzero(keep)
    nm = masks.size
    pr, pi, X = _probabilities(chain, n)
    keys = row_keys(k, n, p, holder)
    nrow = k ** (n if holder else n - 1)
    out = output_index(k, n, p)[0][:, masks]                                 # (k^n, nm)
    lik = (pr / pi[X[:, p]])[:, None]                                        # Pr(x_{-p} | x_p)
    var = keys[:, None] * nm + np.arange(nm)[None, :]
    N = nrow * nm
    counts = allm[masks].sum(axis=1).astype(float)
    c = np.bincount(var.ravel(), weights=(pr[:, None] * counts[None, :]).ravel(), minlength=N)
    rows, cols, vals, errs = [], [], [], []
    nout = (k + 1) ** (n - 1)
    for j, (x, y) in enumerate([(x, y) for x in range(k) for y in range(k) if x != y]):
        for side, sign in ((x, 1.0), (y, -E)):
            sel = X[:, p] == side
            rows.append((j * nout + out[sel]).ravel())
            cols.append(var[sel].ravel())
            vals.append(np.broadcast_to(sign * lik[sel], out[sel].shape).ravel())
            errs.append(np.broadcast_to(abs(sign) * lik[sel] * (2 * n + 4) * U, out[sel].shape).ravel())
    npairs = k * (k - 1)
    A_ub = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                         shape=(npairs * nout, N))
    dA_ub = sp.csr_matrix((np.concatenate(errs), (np.concatenate(rows), np.concatenate(cols))),
                          shape=(npairs * nout, N))
    live = np.flatnonzero(np.diff(A_ub.indptr) > 0)
    A_ub, dA_ub = A_ub[live], dA_ub[live]
    A_eq = sp.kron(sp.eye(nrow), np.ones((1, nm))).tocsr()
    lp = LinearProgram(c, A_ub, np.zeros(A_ub.shape[0]), A_eq, np.ones(nrow), np.ones(N), dA_ub, None,
                       np.abs(c) * (2 * n + k + 6) * U, None, None,
                       info={"masks": masks, "nrow": nrow, "outputs": live})
    return lp, masks


def _table(lp: LinearProgram, x: np.ndarray, n: int) -> np.ndarray:
    """The LP point as a full table (rows x all masks), snapped; a row left empty by snapping redacts everything."""
    nrow, masks = lp.info["nrow"], lp.info["masks"]
    T = np.zeros((nrow, 2 ** (n - 1)))
    T[:, masks] = np.clip(x.reshape(nrow, masks.size), 0.0, 1.0)
    T[T < SNAP] = 0.0
    empty = T.sum(axis=1) <= 0
    T[empty, 0] = 1.0
    return T


def repair_table(chain: KChain, n: int, p: int, table: np.ndarray, *, holder: bool, E: float,
                 rounds: int = 8) -> np.ndarray:
    r"""The table with every output whose float likelihood ratio exceeds ``E`` folded into "all redacted".

    An LP meets its rows only to an absolute tolerance, which says nothing about the ratio of two tiny
    likelihoods: the LP's own table can leak several nats through an output of probability 1e-20
    (α = 0.0389, β = 0.000283, n = 7: 4.9 nats at ε = 0.12).  Moving such an output's masks to mask 0 (every
    non-private record redacted) removes the output and costs its tiny probability; the "all redacted"
    output gains that mass under every value of :math:`X_p` (a mediant, within the LP's margin unless it
    was itself at the edge, then nothing is changed).  Repeated until no output exceeds ``E`` (at most
    ``rounds`` times).  Proposes only: the exact judge decides.
    """
    k = chain.k
    T = np.array(table, dtype=float)
    pr, pi, X = _probabilities(chain, n)
    keys = row_keys(k, n, p, holder)
    out = output_index(k, n, p)[0]
    nout = (k + 1) ** (n - 1)
    flat = X[:, p][:, None] * nout + out
    lik_w = (pr / pi[X[:, p]])[:, None]
    for _ in range(rounds):
        kern = T / T.sum(axis=1, keepdims=True)
        lik = np.bincount(flat.ravel(), weights=(lik_w * kern[keys]).ravel(), minlength=k * nout).reshape(k, nout)
        bad = np.zeros(nout, dtype=bool)
        for x in range(k):
            for y in range(k):
                if x != y:
                    bad |= lik[x] > E * lik[y]
        bad[out[0, 0]] = False  # mask 0's output (all redacted) is where the mass goes; never folded
        if not bad.any():
            break
        drop = np.zeros(T.shape, dtype=bool)
        hit = bad[out]
        rows_hit, masks_hit = np.nonzero(hit)
        drop[keys[rows_hit], masks_hit] = True
        drop[:, 0] = False
        T[:, 0] += np.where(drop, T, 0.0).sum(axis=1)
        T[drop] = 0.0
    return T


class BlockInfeasible(ValueError):
    """No block mechanism of this size publishes its boundary for sure within the budget."""


@dataclass(frozen=True)
class OwnerProposal:
    """An owner/holder (or block) mechanism proposed by the LP, with a proven bound on its class.

    ``bound`` is the bound on the utility (Definition 2) of every mechanism of the class, rounded
    outward: the LP's verified dual point (:func:`design` sizes) or :func:`window_bound` (blocks).
    ``info["notes"]`` says what happened where an LP gave no optimum (and what was used instead).
    """

    mechanism: OwnerMechanism | BlockMechanism
    bound: float
    solver: str
    info: dict


Accept = Callable[[OwnerMechanism | BlockMechanism], bool]


def design_margins(eps: float) -> list[float]:
    """The margins a design LP is solved at, below ``eps``: :data:`MARGINS`, each at most a fraction of ``eps``
    (1e-3, 1e-2, 0.1, 0.5 of it), then ``eps`` itself (the budget ratio 1: a mechanism leaking nothing)."""
    out = [min(m, eps * f) for m, f in zip(MARGINS, (1e-3, 1e-2, 0.1, 0.5))] + [eps]
    return list(dict.fromkeys(out))


def _relative_rows(lp: LinearProgram, x: np.ndarray, E: float) -> LinearProgram:
    """The design program with each output's privacy row divided by that output's likelihood at ``x`` (the same
    feasible set; HiGHS's absolute tolerance becomes relative to the output's probability, as for scans), at
    most so far that no entry exceeds 1e9 (HiGHS refuses entries above 1e15)."""
    A = lp.A_ub
    mass = np.maximum(A.maximum(0) @ x, (-A).maximum(0) @ x / E)
    r = 1.0 / np.clip(mass, 1e-30, 1.0)
    top = np.asarray(abs(A).max(axis=1).todense()).ravel()
    r = np.minimum(r, np.where(top > 0, 1e9 / np.where(top > 0, top, 1.0), 1.0))
    D = sp.diags(r)
    return LinearProgram(lp.c, (D @ A).tocsr(), lp.b_ub, lp.A_eq, lp.b_eq, lp.upper, info=lp.info)


def _left(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def _solve_design(chain: KChain, n: int, p: int, eps: float, holder: bool, forced: tuple[int, ...],
                  accept: Accept, deadline: float | None = None,
                  notes: list | None = None) -> tuple[OwnerMechanism, float]:
    """Design LPs at the margins until the judge ``accept``s a table (:func:`repair_table` first); the last
    resort redacts everything (margin ``inf``).

    With ``forced`` positions the program may be infeasible (publishing them for sure may leak more
    than ``eps``): :class:`BlockInfeasible`.
    """
    for margin in design_margins(eps):
        left = _left(deadline)
        if left is not None and left <= 0.0:
            if notes is not None:
                notes.append("design LP: time limit reached")
            break
        E = math.exp(min(eps - margin, math.log(DESIGN_E_MAX)))
        lp, _ = owner_program(chain, n, p, E, holder=holder, forced=forced)
        msgs: list = []
        sol = solve_robust(rows_scaled(lp), time_limit=left, bound=False, notes=msgs)
        if sol is None:
            if forced and any("Infeasible" in m for m in msgs):
                raise BlockInfeasible(f"a block of {n} records cannot publish its boundary {list(forced)} for sure "
                                      f"within eps = {eps}")
            if notes is not None:
                notes.append(f"design LP at margin {margin:g}: " + "; ".join(msgs))
            continue
        again = solve_robust(_relative_rows(lp, sol.x, E), time_limit=_left(deadline), bound=False)
        x = sol.x if again is None else again.x
        T = repair_table(chain, n, p, _table(lp, x, n), holder=holder,
                         E=math.exp(min(eps - margin / 2, math.log(DESIGN_E_MAX))))
        mech = OwnerMechanism(chain, n, p, T, holder=holder)
        if accept(mech):
            return mech, margin
    rows = chain.k ** (n if holder else n - 1)
    T = np.zeros((rows, 2 ** (n - 1)))
    T[:, 0] = 1.0
    return OwnerMechanism(chain, n, p, T, holder=holder), math.inf


def _bound(chain: KChain, n: int, p: int, eps: float, holder: bool, deadline: float | None = None,
           notes: list | None = None) -> float | None:
    """Certified bound on the expected count of every mechanism of the class (``E`` rounded up), or ``None``
    where the LP gives no dual point in time; beyond :data:`BOUND_E_MAX` the trivial ``n - 1``."""
    E = exp_enclosure(eps)[1]
    if not E <= BOUND_E_MAX:
        return float(n - 1)
    lp, _ = owner_program(chain, n, p, E, holder=holder)
    if not holder:
        lp.upper[_inadmissible_full(chain, n, p, eps, lp)] = 0.0
    # rows scaled by powers of two (exact): HiGHS solves k = 3, n = 6, a transition of 1e-6, in 7 s, not in 60
    sol = solve_robust(rows_scaled(lp), time_limit=_left(deadline), notes=notes)
    if sol is None or not math.isfinite(sol.bound):
        return None
    return min(sol.bound, float(n - 1))  # n - 1: every non-private record published, a bound for every mechanism


def _inadmissible_full(chain: KChain, n: int, p: int, eps: float, lp: LinearProgram) -> np.ndarray:
    r"""Variables "publish every non-private record" of the owner rows whose fixed ratio exceeds :math:`e^\epsilon`.

    An owner output publishing every record but :math:`X_p` comes from one row, so its ratio
    :math:`\Pr(\mathbf x_{-p}\mid x)/\Pr(\mathbf x_{-p}\mid x')` is fixed: any private mechanism gives that mask
    weight 0 if the ratio exceeds :math:`e^\epsilon` exactly, so fixing it to 0 keeps the program a relaxation.  The
    bound LP at the rounded-up ratio would admit a row whose ratio lies between :math:`e^\epsilon` and that
    ratio (ε = ln 3 on a ratio of 3 - 3e-16: 0.5 where 1/3 is the optimum); only rows within 1e-9 of the budget
    are decided here, in rationals.
    """
    masks = lp.info["masks"]
    full = 2 ** (n - 1) - 1
    if n < 2 or masks[-1] != full:
        return np.zeros(0, dtype=np.int64)
    k = chain.k
    pr, pi, X = _probabilities(chain, n)
    keys = row_keys(k, n, p, False)
    lik = np.zeros((k ** (n - 1), k))
    lik[keys, X[:, p]] = pr / pi[X[:, p]]
    lo, hi = exp_enclosure(eps)
    P, pis = chain.exact_transition(), chain.exact_stationary()
    out = []
    for r in range(lik.shape[0]):
        near = [(x, y) for x in range(k) for y in range(k) if x != y and lik[r, y] > 0
                and lo * (1 - 1e-9) <= lik[r, x] / lik[r, y] <= hi * (1 + 1e-9)]
        if not near:
            continue
        tup = [int(v) for v in X[np.flatnonzero(keys == r)[0]]]

        def exact(x: int) -> Fraction:
            t = tup[:p] + [x] + tup[p + 1:]
            v = pis[t[0]]
            for a, b in zip(t, t[1:]):
                v *= P[a][b]
            return v / pis[x]

        if any(exact(y) > 0 and ratio_within(exact(x) / exact(y), eps) is False for x, y in near):
            out.append(r * masks.size + masks.size - 1)
    return np.array(out, dtype=np.int64)


def class_bound(chain: KChain, n: int, p: int, eps: float, holder: bool, deadline: float | None = None,
                notes: list | None = None) -> tuple[float, tuple[int, int], str]:
    r"""A certified bound on the utility over the class for ``n`` records: the LP on all of them if it fits, else
    (or where that LP gives no dual point in time) on ever smaller windows around ``p`` (:func:`window_bound`'s
    relaxation), at last the trivial :math:`(n-1)/n`.  Returns the bound, the window (start, length) and the
    bound's name.  Every step is a proof; a step that gives none is discarded and the next one used.
    """
    name = "holder" if holder else "owner"
    top = min(n, max_exact_n(chain.k, holder))
    least = 1 + (p > 0) + (p < n - 1)
    for total in range(top, least - 1, -1):
        start, length = fit_window(n, p, total)
        left = _left(deadline)
        share = None if left is None else time.monotonic() + (0.6 * left if total > least else left)
        cnt = _bound(chain, length, p - start, eps, holder, share, notes)
        if cnt is not None:
            solver = f"{name}-lp" if length == n else f"{name}-window-lp"
            return math.nextafter((cnt + (n - length)) / n, math.inf), (start, length), solver
        if notes is not None:
            notes.append(f"{name} bound LP on {length} records gave no dual point; trying fewer records")
        if deadline is not None and time.monotonic() >= deadline:
            break
    return math.nextafter((n - 1) / n, math.inf), (0, n), "trivial"


def propose_owner(chain: object, n: int, *, eps: float, p: int = 0, holder: bool = False,
                  accept: Accept, deadline: float | None = None) -> OwnerProposal:
    r"""The optimum over every owner (``holder=True``: holder) mechanism of ``n`` records, proposed.

    The bound is :func:`class_bound` (the LP's verified dual point for ``n`` records where it solves); the
    design is the LP solved slightly below the budget, repaired, at the first margin whose table ``accept``
    passes.  ``deadline`` (a :func:`time.monotonic` time) bounds every LP; a design that runs out of it is
    the table redacting everything (the caller's contained classes give the rest).
    """
    t0 = time.monotonic()
    kc = as_kchain(chain)
    if n > max_exact_n(kc.k, holder):
        raise ValueError(f"design_owner: n = {n} exceeds {max_exact_n(kc.k, holder)} for k = {kc.k} "
                         "(use block_design with window_bound)")
    notes: list = []
    bound, win, solver = class_bound(kc, n, p, eps, holder, deadline, notes)
    mech, margin = _solve_design(kc, n, p, eps, holder, (), accept, deadline, notes)
    return OwnerProposal(mech, bound, solver, {"margin": margin, "seconds": time.monotonic() - t0, "n_lp": n,
                                               "window": win, "notes": notes})


def fit_window(n: int, p: int, total: int) -> tuple[int, int]:
    """The window of at most ``total`` records around ``p``, as even as the sequence allows: (first index, length).

    Records a short side cannot use go to the other side.
    """
    total = min(total, n)
    a = min(p, (total - 1) // 2)
    b = min(n - 1 - p, total - 1 - a)
    a = min(p, total - 1 - b)
    return p - a, a + b + 1


def window_bound(chain: object, n: int, *, eps: float, p: int, holder: bool = False,
                 total: int | None = None, deadline: float | None = None) -> tuple[float, tuple[int, int]]:
    r"""A certified upper bound on the class's utility for ``n`` records from the LP on a window (module docstring).

    The window holds up to ``total`` records (default: the largest the LP allows) around ``p``, as even
    as possible; for ``n > total`` it keeps at least one record on each side of ``p`` that has any
    (smaller windows where that LP gives no dual point: :func:`class_bound`).
    Returns the bound on the utility and the window (start, length).
    """
    kc = as_kchain(chain)
    top = total or max_exact_n(kc.k, holder)
    start, length = fit_window(n, p, top)
    if total is None or total >= min(n, max_exact_n(kc.k, holder)):
        ub, win, _ = class_bound(kc, n, p, eps, holder, deadline)  # the largest window first, then smaller ones
        return ub, win
    cnt = _bound(kc, length, p - start, eps, holder, deadline)
    if cnt is not None:
        return math.nextafter((cnt + (n - length)) / n, math.inf), (start, length)
    ub, win, _ = class_bound(kc, n, p, eps, holder, deadline)
    return ub, win


def propose_block(chain: object, n: int, *, eps: float, p: int, holder: bool = False,
                  total: int | None = None, bound_total: int | None = None, accept: Accept,
                  deadline: float | None = None) -> OwnerProposal:
    r"""A structured design for long sequences, proposed: the optimal block mechanism (module docstring).

    The block is the window of :func:`fit_window` (``total`` records); where records lie beyond it, its
    outermost record is always published (the cut).  Its bound is :func:`window_bound` on
    ``bound_total`` records (default: the largest the LP allows).  Raises
    :class:`BlockInfeasible` when that boundary is too close to ``p`` to be published for sure.
    """
    t0 = time.monotonic()
    kc = as_kchain(chain)
    start, length = fit_window(n, p, total or max_exact_n(kc.k, holder))
    forced = tuple(t for t in (start, start + length - 1)
                   if t != p and ((t == start and start > 0) or (t == start + length - 1 and t < n - 1)))

    def whole(inner: OwnerMechanism) -> OwnerMechanism | BlockMechanism:
        return BlockMechanism(n, p, start, inner) if length < n else inner

    notes: list = []
    half = None if deadline is None else time.monotonic() + 0.5 * max(0.0, deadline - time.monotonic())
    ub, win = window_bound(kc, n, eps=eps, p=p, holder=holder, total=bound_total, deadline=half)
    try:
        inner, margin = _solve_design(kc, length, p - start, eps, holder, tuple(t - start for t in forced),
                                      lambda m: accept(whole(m)), deadline, notes)
        if forced and margin == math.inf:  # redacting everything would not publish the boundary: no block
            raise BlockInfeasible(f"no block design of {length} records was certified within the time limit "
                                  f"({'; '.join(notes) or 'every margin refused'})")
    except BlockInfeasible as exc:
        exc.bound = (ub, win)  # type: ignore[attr-defined]  # the window bound holds all the same
        raise
    return OwnerProposal(whole(inner), ub, "holder-window-lp" if holder else "owner-window-lp",
                         {"block": (start, length), "window": win, "margin": margin,
                          "seconds": time.monotonic() - t0, "notes": notes})
