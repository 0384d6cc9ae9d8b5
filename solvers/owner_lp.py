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
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from redactopt.judge.scan import exp_enclosure
from redactopt.model.chain import Chain as KChain
from redactopt.model.mechanism_classes import (BlockMechanism, OwnerMechanism, as_kchain, record_tuples,
                                               release_masks, row_keys, tuple_probabilities)
from redactopt.solvers.lp_certificate import LinearProgram, solve_lp

__all__ = ["owner_program", "OwnerProposal", "BlockInfeasible", "propose_owner", "window_bound", "propose_block", "max_exact_n",
           "fit_window", "MAX_LP_VARIABLES"]

U = 2.0**-53
#: Largest LP (variables) the owner/holder optimum is built for.
MAX_LP_VARIABLES = 300_000
#: Margins (nats) a design LP is solved below the budget, tried in turn until one verifies.
MARGINS = (1e-9, 1e-7, 1e-5, 1e-3)
SNAP = 1e-10


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
    r"""The LP of the module docstring at budget ``E`` (taken as exact data), and the mask columns used.

    ``forced``: positions published under every row (their masks alone are variables).  Variables are
    indexed ``row * len(masks) + i``; the returned array lists the masks' indices among all ``2**(n-1)``.
    """
    k = chain.k
    others = [t for t in range(n) if t != p]
    allm = release_masks(n - 1)
    keep = np.all(allm[:, [others.index(t) for t in forced]] == 1, axis=1) if forced else np.ones(len(allm), bool)
    masks = np.flatnonzero(keep)
    nm = masks.size
    pr, pi, X = _probabilities(chain, n)
    keys = row_keys(k, n, p, holder)
    nrow = k ** (n if holder else n - 1)
    w = (k + 1) ** np.arange(n - 1)
    base = int(k * w.sum())
    out = base + ((X[:, others] - k) * w[None, :]) @ allm[masks].T          # (k^n, nm)
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
            errs.append(np.broadcast_to(abs(sign) * lik[sel] * (n + 6) * U, out[sel].shape).ravel())
    npairs = k * (k - 1)
    A_ub = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                         shape=(npairs * nout, N))
    dA_ub = sp.csr_matrix((np.concatenate(errs), (np.concatenate(rows), np.concatenate(cols))),
                          shape=(npairs * nout, N))
    live = np.flatnonzero(np.diff(A_ub.indptr) > 0)
    A_ub, dA_ub = A_ub[live], dA_ub[live]
    A_eq = sp.kron(sp.eye(nrow), np.ones((1, nm))).tocsr()
    lp = LinearProgram(c, A_ub, np.zeros(A_ub.shape[0]), A_eq, np.ones(nrow), np.ones(N), dA_ub, None,
                       c * (n + k + 4) * U, None, None, info={"masks": masks, "nrow": nrow})
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


class BlockInfeasible(ValueError):
    """No block mechanism of this size publishes its boundary for sure within the budget."""


@dataclass(frozen=True)
class OwnerProposal:
    """An owner/holder (or block) mechanism proposed by the LP, with a proven bound on its class.

    ``bound`` is the bound on the utility (Definition 2) of every mechanism of the class, rounded
    outward: the LP's verified dual point (:func:`design` sizes) or :func:`window_bound` (blocks).
    """

    mechanism: OwnerMechanism | BlockMechanism
    bound: float
    solver: str
    info: dict


Accept = Callable[[OwnerMechanism | BlockMechanism], bool]


def _solve_design(chain: KChain, n: int, p: int, eps: float, holder: bool,
                  forced: tuple[int, ...], accept: Accept) -> tuple[OwnerMechanism, float]:
    """Design LPs at the margins until the judge ``accept``s a table; the last resort redacts everything.

    With ``forced`` positions the program may be infeasible (publishing them for sure may leak more
    than ``eps``): :class:`BlockInfeasible`.
    """
    for margin in MARGINS:
        lp, _ = owner_program(chain, n, p, math.exp(eps - margin), holder=holder, forced=forced)
        try:
            sol = solve_lp(lp, bound=False)
        except RuntimeError as exc:
            if forced:
                raise BlockInfeasible(f"a block of {n} records cannot publish its boundary {list(forced)} for sure "
                                      f"within eps = {eps}") from exc
            raise
        mech = OwnerMechanism(chain, n, p, _table(lp, sol.x, n), holder=holder)
        if accept(mech):
            return mech, margin
    rows = chain.k ** (n if holder else n - 1)
    T = np.zeros((rows, 2 ** (n - 1)))
    T[:, 0] = 1.0
    return OwnerMechanism(chain, n, p, T, holder=holder), math.inf


def _bound(chain: KChain, n: int, p: int, eps: float, holder: bool) -> float:
    """Certified bound on the expected count of every mechanism of the class (``E`` rounded up)."""
    lp, _ = owner_program(chain, n, p, exp_enclosure(eps)[1], holder=holder)
    return solve_lp(lp).bound


def propose_owner(chain: object, n: int, *, eps: float, p: int = 0, holder: bool = False,
                  accept: Accept) -> OwnerProposal:
    r"""The optimum over every owner (``holder=True``: holder) mechanism of ``n`` records, proposed.

    The bound is the LP's verified dual point (valid for the exact chain); the design is the LP
    solved slightly below the budget, snapped, at the first margin whose table ``accept`` passes.
    """
    t0 = time.monotonic()
    kc = as_kchain(chain)
    if n > max_exact_n(kc.k, holder):
        raise ValueError(f"design_owner: n = {n} exceeds {max_exact_n(kc.k, holder)} for k = {kc.k} "
                         "(use block_design with window_bound)")
    bound = _bound(kc, n, p, eps, holder)
    mech, margin = _solve_design(kc, n, p, eps, holder, (), accept)
    return OwnerProposal(mech, math.nextafter(bound / n, math.inf), "holder-lp" if holder else "owner-lp",
                         {"margin": margin, "seconds": time.monotonic() - t0, "n_lp": n})


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
                 total: int | None = None) -> tuple[float, tuple[int, int]]:
    r"""A certified upper bound on the class's utility for ``n`` records from the LP on a window (module docstring).

    The window holds up to ``total`` records (default: the largest the LP allows) around ``p``, as even
    as possible; for ``n > total`` it keeps at least one record on each side of ``p`` that has any.
    Returns the bound on the utility and the window (start, length).
    """
    kc = as_kchain(chain)
    start, length = fit_window(n, p, total or max_exact_n(kc.k, holder))
    cnt = _bound(kc, length, p - start, eps, holder)
    return math.nextafter((cnt + (n - length)) / n, math.inf), (start, length)


def propose_block(chain: object, n: int, *, eps: float, p: int, holder: bool = False,
                  total: int | None = None, bound_total: int | None = None, accept: Accept) -> OwnerProposal:
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

    inner, margin = _solve_design(kc, length, p - start, eps, holder, tuple(t - start for t in forced),
                                  lambda m: accept(whole(m)))
    ub, win = window_bound(kc, n, eps=eps, p=p, holder=holder, total=bound_total)
    return OwnerProposal(whole(inner), ub, "holder-window-lp" if holder else "owner-window-lp",
                         {"block": (start, length), "window": win, "margin": margin,
                          "seconds": time.monotonic() - t0})
