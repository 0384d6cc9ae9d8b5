r"""Designs on a chain that varies with the step (issue 33): windows, then the edges lowered, judged exactly.

On a :class:`~redactopt.model.varying.VaryingChain` a design depends on where it sits (the steps and
the marginals of its rows), so it is made for its own rows.  Two stages, each judged by the exact
evaluator (:func:`redactopt.judge.leakage.leakage` with the chain's steps):

1. **Joint windows** (:func:`varying_windows`).  Redacting every row of a window ``[L, R]`` around a
   group of private records and publishing the rest leaks, about a member ``p``,
   :math:`\max_{x\ne x'}[T^\ell_p(p-L+1)(x,x')+T^r_p(R+1-p)(x,x')]`, where :math:`T^s_p(d)(x,x')` is the
   largest log-ratio :math:`\log(S_1\cdots S_d)_{xv}/(S_1\cdots S_d)_{x'v}` over the values ``v`` of
   the first published row, ``d`` steps out on side ``s`` (0 when the window reaches the end of the
   sequence: everything on that side is ⊥).  Given ``X_p`` the sides are independent and the first
   published row cuts the rest (docs/mathematics.md, "Chains that vary with the step"), so this is
   the exact leakage.  Each :math:`T^s_p(d)` is non-increasing in ``d`` (a column of
   :math:`A S` is a mixture of the columns of :math:`A`: its ratios are mediants), so the shortest
   window is found by two pointers: for every left end, the smallest feasible right end, which
   only moves left as the left end does.  Groups whose windows overlap are merged and solved again.
2. **Edges lowered** (:func:`lower_edges`).  From each end of a window inward, each row's redaction
   probability of each value is lowered to (almost) the smallest value the exact leakage about
   every member allows (bisection: the leakage is non-decreasing in every entry, post-processing),
   at most ``max_records`` rows per side, a side given up after ``patience`` rows in a row that gain
   nothing.

The certificate is Lemma 2 on the varying chain
(:func:`redactopt.judge.lemma2.varying_publishable`), rounded outward: a bound on every local
mechanism, not only on these designs.  Indices are 0-based.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from redactopt._search import bisect_boundary
from redactopt._validate import check_eps, check_private
from redactopt.judge.certify import SparseDesign, finalize_sparse
from redactopt.judge.leakage import leakage
from redactopt.judge.lemma2 import lemma2_upper_bound
from redactopt.judge.tolerances import chain_zone
from redactopt.model.varying import VaryingChain, chain_window

__all__ = ["design_varying", "varying_windows", "lower_edges", "side_terms", "VARYING_METHODS"]

#: What a design on a varying chain can be asked for: ``auto`` (windows, then the edges lowered) or
#: ``dim`` (the exact joint window optimum alone).
VARYING_METHODS = ("auto", "dim")


def side_terms(chain: VaryingChain, p: int, side: str, m: int) -> np.ndarray:
    r""":math:`T^s_p(d)(x, x')` for ``d = 1..m``, ``(m, k, k)`` (module docstring; ``-inf`` on the diagonal).

    Products of the side's steps, each row scaled to its maximum with its logarithm kept;
    pairs with a value of probability 0 at ``p`` are ``-inf`` (no conditional law), a column that rules
    one value out ``+inf``.
    """
    k = chain.k
    out = np.full((m, k, k), -np.inf)
    possible = chain.marginal(p) > 0.0
    A, logs = np.eye(k), np.zeros(k)
    steps = chain.side_steps(p, side, m)
    with np.errstate(divide="ignore", invalid="ignore"):
        for d in range(m):
            A = A @ steps[d]
            top = A.max(axis=1, keepdims=True)
            logs = logs + np.log(top[:, 0])
            A = A / top  # each row scaled to its maximum, its log scale kept: no underflow
            la = np.log(A) + logs[:, None]  # [x, v], up to one common factor
            diff = la[:, None, :] - la[None, :, :]  # [x, x', v]
            diff = np.where(np.isnan(diff), -np.inf, diff)  # a value impossible under both says nothing
            out[d] = diff.max(axis=2)
    out[:, ~possible, :] = -np.inf
    out[:, :, ~possible] = -np.inf
    idx = np.arange(k)
    out[:, idx, idx] = -np.inf
    return out


def _stacked_terms(steps: np.ndarray, members: np.ndarray, size: int, direction: int, mask: np.ndarray) -> np.ndarray:
    r""":func:`side_terms` of every member at once, ``[member, d - 1, x, x']`` for ``d = 1..size``.

    ``steps`` are the chain's forward steps (``direction = 1``, step ``p + d - 1`` at distance ``d``) or its
    backward steps (``-1``: step ``p - d``, from row ``p - d + 1`` to ``p - d``).
    """
    m, k = members.size, steps.shape[1]
    out = np.full((m, size, k, k), -np.inf)
    A = np.broadcast_to(np.eye(k), (m, k, k)).copy()
    logs = np.zeros((m, k))
    eye = np.eye(k)
    with np.errstate(divide="ignore", invalid="ignore"):
        for d in range(1, size + 1):
            idx = members + d - 1 if direction == 1 else members - d
            ok = (idx >= 0) & (idx < steps.shape[0])
            if not ok.any():
                break
            S = np.where(ok[:, None, None], steps[np.clip(idx, 0, steps.shape[0] - 1)], eye)
            A = A @ S
            top = A.max(axis=2)
            logs = logs + np.log(top)
            A = A / top[:, :, None]
            la = np.log(A) + logs[:, :, None]  # [member, x, v]
            diff = la[:, :, None, :] - la[:, None, :, :]  # [member, x, x', v]
            diff = np.where(np.isnan(diff), -np.inf, diff)
            out[:, d - 1] = np.where(ok[:, None, None] & mask, diff.max(axis=3), -np.inf)
    return out


class _Terms:
    """The side terms of a group's members, stacked ``[member, distance - 1, x, x']`` and extended on demand,
    so the leakage about every member of a window is one gather (:meth:`leaks`)."""

    def __init__(self, chain: VaryingChain, members: Sequence[int]) -> None:
        self.chain, self.members = chain, np.asarray(list(members), dtype=np.int64)
        k = chain.k
        self.size = 0
        self.left = np.zeros((len(members), 0, k, k))
        self.right = np.zeros((len(members), 0, k, k))
        possible = np.array([chain.marginal(int(p)) > 0.0 for p in self.members])  # [member, x]
        self.mask = possible[:, :, None] & possible[:, None, :] & ~np.eye(k, dtype=bool)[None]
        self.some = self.mask.any(axis=(1, 2))

    def _grow(self, d: int) -> None:
        """Terms up to distance ``d`` on both sides of every member, all members advancing together
        (beyond a side's end: ``-inf``, never read — a window there reaches the end and reads 0)."""
        size = min(max(d, 2 * self.size, 64), self.chain.n)
        self.left = _stacked_terms(self.chain.backward_steps(), self.members, size, -1, self.mask)
        self.right = _stacked_terms(self.chain.steps(), self.members, size, 1, self.mask)
        self.size = size

    def leaks(self, L: int, R: int) -> np.ndarray:
        """The exact leakage about every member of the window ``[L, R]`` (0 beyond an end of the sequence)."""
        n, k = self.chain.n, self.chain.k
        dl, dr = self.members - L + 1, R + 1 - self.members
        need = int(max(dl.max(), dr.max()))
        if need > self.size:
            self._grow(need)
        idx = np.arange(self.members.size)
        lt = np.zeros((idx.size, k, k)) if L == 0 else self.left[idx, dl - 1]
        rt = np.zeros((idx.size, k, k)) if R == n - 1 else self.right[idx, dr - 1]
        with np.errstate(invalid="ignore"):
            tot = lt + rt
        tot = np.where(np.isnan(tot), np.inf, tot)
        tot = np.where(self.mask, tot, -np.inf)
        return np.where(self.some, np.maximum(tot.max(axis=(1, 2)), 0.0), 0.0)

    def leak(self, p: int, L: int, R: int) -> float:
        return float(self.leaks(L, R)[int(np.flatnonzero(self.members == p)[0])])

    def feasible(self, L: int, R: int, budget: float) -> bool:
        return bool(np.all(self.leaks(L, R) <= budget))


def _group_window(chain: VaryingChain, members: Sequence[int], budget: float) -> tuple[int, int]:
    """The shortest window around ``members`` whose exact leakage about each is at most ``budget``.

    Feasibility only grows as the left end moves left or the right end right, so for each left end
    (from the group outward) the smallest feasible right end is found by bisection below the previous
    one; the search stops once no window with a farther left end can be shorter.
    """
    n = chain.n
    terms = _Terms(chain, members)
    lo, hi = members[0], members[-1]
    best: tuple[int, int] | None = None
    R = n - 1
    for L in range(lo, -1, -1):
        if best is not None and hi - L >= best[1] - best[0]:
            break  # every window with this left end is at least as long
        if not terms.feasible(L, R, budget):
            continue  # (only before the first feasible left end, while R is the sequence's end)
        a, b = hi - 1, R  # feasible at b; a is below every right end
        while b - a > 1:
            mid = (a + b) // 2
            if terms.feasible(L, mid, budget):
                b = mid
            else:
                a = mid
        R = b
        if best is None or R - L < best[1] - best[0]:
            best = (L, R)
    assert best is not None  # the whole sequence redacted leaks 0: always feasible
    return best


def varying_windows(chain: VaryingChain, *, eps: float, private: object,
                    budget: float | None = None) -> list[tuple[int, int, list[int]]]:
    """The exact joint window design: ``(L, R, members)`` per group, windows disjoint (module docstring).

    ``budget`` (default ``eps``) is what each member's leakage must not exceed.
    """
    eps = check_eps(eps)
    priv = check_private(private, chain.n)
    b = eps if budget is None else budget
    groups: list[list[int]] = []
    for p in priv:  # runs of adjacent private records start as one group (their windows would merge)
        if groups and p == groups[-1][-1] + 1:
            groups[-1].append(p)
        else:
            groups.append([p])
    while True:
        wins = [(*_group_window(chain, g, b), g) for g in groups]
        merged: list[list[int]] = []
        last = -2
        for L, R, g in wins:
            if merged and L <= last + 1:
                merged[-1] = merged[-1] + g
            else:
                merged.append(list(g))
            last = max(last, R)
        if len(merged) == len(groups):
            return [(L, R, g) for (L, R, g) in wins]
        groups = merged


def _budget(chain: VaryingChain, eps: float) -> float:
    """What a design aims at: twice the judge's band below ``eps`` (that of a segment as long as the chain)."""
    return eps - 2.0 * chain_zone(chain, eps, chain.n)


def lower_edges(chain: VaryingChain, block: np.ndarray, L: int, members: Sequence[int], eps: float, *,
                max_records: int = 32, steps: int = 30, patience: int = 4,
                deadline: float | None = None) -> np.ndarray:
    """Lower the redaction probabilities at both ends of one window (module docstring, stage 2).

    ``block`` holds rows ``L ..`` of the design (redacted rows of the window); the rows just outside are
    published with certainty, so each member is judged exactly on the block with those two rows.
    """
    n = chain.n
    lo, hi = max(0, L - 1), min(n - 1, L + block.shape[0])
    seg = np.zeros((hi - lo + 1, chain.k))
    seg[L - lo : L - lo + block.shape[0]] = block
    sub = chain_window(chain, lo, hi + 1)
    budget = _budget(chain, eps)
    rel = [p - lo for p in members]
    order = sorted(rel, key=lambda p: (abs(p - rel[0]), abs(p - rel[-1])))
    marg = chain.marginals()[lo : hi + 1]

    def ok(quick: bool) -> bool:
        pts = (rel[0], rel[-1]) if quick else order
        return all(leakage(sub, seg, p).leakage <= budget for p in pts)

    first, last = L - lo, L - lo + block.shape[0] - 1
    for start, inward, stop in ((first, 1, rel[0]), (last, -1, rel[-1])):
        t, idle = start, 0
        for _ in range(max_records):
            if (inward == 1 and t >= stop) or (inward == -1 and t <= stop):
                break
            if deadline is not None and time.monotonic() > deadline:
                break
            gained = 0.0
            for v in np.argsort(-marg[t]):
                cur = float(seg[t, v])
                if cur <= 0.0:
                    continue

                def passes(x: float, t: int = t, v: int = int(v)) -> bool:
                    seg[t, v] = x
                    return ok(True)

                seg[t, v] = 0.0
                new = 0.0 if ok(True) else max(bisect_boundary(passes, cur, 0.0, steps=steps), min(cur, 4e-9))
                seg[t, v] = new
                if new < cur and not ok(False):
                    seg[t, v] = cur
                    continue
                gained += (cur - float(seg[t, v])) * float(marg[t, v])
            idle = 0 if gained > 1e-15 else idle + 1
            if idle >= patience:
                break
            t += inward
    return seg[L - lo : L - lo + block.shape[0]]


def design_varying(chain: VaryingChain, *, eps: float, private: object, method: str = "auto",
                   time_limit: float = 60.0, gap: float = 1e-4) -> SparseDesign:
    """A verified local design on a varying chain (module docstring), sparse: every row outside its blocks published.

    ``method``: ``"auto"`` (:data:`VARYING_METHODS`: the windows with their edges lowered and, for one
    private record on a binary chain, the side frontier under varying steps,
    :mod:`redactopt.solvers.step_frontier`, whose grids are refined until the certified gap is at most
    ``gap`` or the time is up) or ``"dim"`` (the exact joint windows).  The certificate is the smallest
    of Lemma 2 per step and the frontier's bound, each over every local mechanism.
    """
    if not isinstance(chain, VaryingChain):
        raise TypeError(f"chain must be a VaryingChain, got {type(chain).__name__}")
    if method not in VARYING_METHODS:
        raise ValueError(f"method must be one of {', '.join(VARYING_METHODS)} on a chain that varies with the step, "
                         f"got {method!r}")
    eps = check_eps(eps)
    priv = check_private(private, chain.n)
    deadline = time.monotonic() + float(time_limit)
    bound, solver = lemma2_upper_bound(chain, chain.n, eps=eps, private=priv), "lemma2"
    parts = []
    wins = varying_windows(chain, eps=eps, private=priv, budget=_budget(chain, eps))
    for L, R, members in wins:
        block = np.ones((R - L + 1, chain.k))
        if method == "auto":
            block = lower_edges(chain, block, L, members, eps, deadline=deadline)
        parts.append((L, block))
    best = None
    if method == "auto" and chain.binary and len(priv) == 1:
        L, R, _ = wins[0]
        found = frontier_design(chain, priv[0], eps, reach=max(priv[0] - L, R - priv[0]) + 1, deadline=deadline,
                                gap=gap)
        if found is not None and found[1] < bound:
            bound, solver = found[1], "step-frontier"
        if found is not None:
            best = finalize_sparse(chain, chain.n, found[0], private=priv, eps=eps, method=method,
                                   upper_bound=bound, solver=solver, info=dict(found[2], source="step frontier"))
    windows = finalize_sparse(chain, chain.n, parts, private=priv, eps=eps, method=method, upper_bound=bound,
                              solver=solver, info={"source": "windows" if method == "dim" else "windows+edges"})
    return windows if best is None or windows.utility >= best.utility else best


def frontier_design(chain: VaryingChain, p: int, eps: float, *, reach: int, deadline: float,
                    gap: float) -> tuple[list, float, dict] | None:
    """The side frontier's design and certified bound for private record ``p`` (:mod:`redactopt.solvers.step_frontier`).

    Windows of ``W`` records per side (from twice ``reach``, doubled until the design cuts inside them)
    and grids of ``G`` rooms (doubled until the bound is within ``gap`` of the design's utility, as the
    tables' values estimate it, or the time is up).  Returns ``(parts, bound as a utility, info)`` —
    the design is judged by the caller — or ``None`` when the time ran out before a first answer.
    """
    from redactopt.judge.leakage import utility
    from redactopt.solvers.step_frontier import side_problem, step_tables

    n = chain.n
    design_eps = _budget(chain, eps)
    marg = chain.marginals()
    W = max(2 * reach + 16, 32)
    G = 2048
    out = None
    while time.monotonic() < deadline:
        Wl, Wr = min(W, p), min(W, n - 1 - p)
        left = side_problem(chain.side_steps(p, "left", Wl), marg[p - Wl : p][::-1], p) if p else None
        right = side_problem(chain.side_steps(p, "right", Wr), marg[p + 1 : p + 1 + Wr], n - 1 - p) if Wr else None
        tl = step_tables(left, G) if left is not None else None
        tr = step_tables(right, G) if right is not None else None
        res = _split(tl, tr, eps, deadline, tol=max(1e-9, gap * n / 4))
        q = _best_policy(tl, tr, res.split if res is not None else (eps, eps), eps, design_eps, n, p, Wl, Wr,
                         marg)
        cuts = (Wl == p or not q[p - Wl].any()) and (Wr == n - 1 - p or not q[p + Wr].any())
        bound = (res.bound if res is not None else float(p + n - 1 - p)) / n
        u = utility(chain, q)
        out = ([(p - Wl, q[p - Wl : p + 1 + Wr])], float(bound), {"W": W, "G": G, "boxes": 0 if res is None else res.boxes})
        if not cuts and (Wl < p or Wr < n - 1 - p):
            W *= 2
            continue
        if bound - u <= gap or G >= 1 << 15:
            break
        G *= 4
    return out


def _best_policy(tl: object, tr: object, split: tuple[float, float], eps: float, design_eps: float, n: int, p: int,
                 Wl: int, Wr: int, marg: np.ndarray) -> np.ndarray:
    """The two sides' policies at the split, the design's margin below ``eps`` taken from one side or shared —
    whichever publishes the most (the best split often sits at a jump of one side's value: a cut)."""
    from redactopt.solvers.step_frontier import side_policy_at

    a, b = split
    dlt = eps - design_eps
    best, best_u = None, -1.0
    for la, lb, ra, rb in ((a - dlt / 2, b - dlt / 2, eps - a - dlt / 2, eps - b - dlt / 2),
                           (a - dlt, b - dlt, eps - a, eps - b), (a, b, eps - a - dlt, eps - b - dlt),
                           (a - dlt, b, eps - a, eps - b - dlt), (a, b - dlt, eps - a - dlt, eps - b)):
        q = np.zeros((n, 2))
        q[p] = 1.0
        if tl is not None:
            q[p - Wl : p] = side_policy_at(tl, max(la, 0.0), max(lb, 0.0))[::-1]
        if tr is not None:
            q[p + 1 : p + 1 + Wr] = side_policy_at(tr, max(ra, 0.0), max(rb, 0.0))
        u = float(((1.0 - q) * marg).sum())
        if u > best_u:
            best, best_u = q, u
    return best


def _split(tl: object, tr: object, eps: float, deadline: float, tol: float) -> object:
    """The two-sided branch and bound (one side alone when the other is empty)."""
    from redactopt.solvers.step_frontier import TwoSided, side_bound_at, two_sided

    if tl is not None and tr is not None:
        return two_sided(tl, tr, eps, tol=tol, time_limit=max(0.5, min(5.0, deadline - time.monotonic())))
    tab = tl if tl is not None else tr
    if tab is None:
        return None
    val = float(side_bound_at(tab, np.array([eps]), np.array([eps]))[0])
    return TwoSided(val, (eps, eps) if tl is not None else (0.0, 0.0), val, 1, False)
