"""Certified global optimum by SCIP (``solvers/scip_global.py``) against independent references.

Nothing here is copied from the solver's output.  The references are

* a closed form for ``n = 2`` derived by hand (Example 1 of the paper and its
  generalisation to any chain and either end), see :func:`_n2_closed_form`;
* an exhaustive grid over *all* local mechanisms (every free entry of ``q`` in
  ``{0, 1/k, ..., 1}``) with the exact leakage of every grid point obtained by
  enumerating all ``3^n`` outputs (:func:`_leakage_batch`, checked against
  :func:`redactopt.judge.leakage.leakage_bruteforce`), polished by SLSQP on the smooth
  per-output constraints ``|log Pr(y|0)/Pr(y|1)| <= eps`` with the support fixed.

The grid optimum is feasible, hence a lower bound on the optimum: SCIP's utility must
reach it and SCIP's certified upper bound must be above SCIP's utility.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

pytest.importorskip("pyscipopt")

from scipy.optimize import minimize  # noqa: E402

from redactopt.judge.lemma2 import lemma2_upper_bound  # noqa: E402
from redactopt.model.chain import MarkovChain  # noqa: E402
from redactopt.judge.leakage import leakage_bruteforce  # noqa: E402
from redactopt.engine.design import design  # noqa: E402


def design_global(chain, n, *, eps, p=0, time_limit=60.0, gap_limit=1e-6):
    """SCIP's proposal, judged by design()."""
    return design(chain, n, eps=eps, p=p, method="global", time_limit=time_limit,
                  options={"gap_limit": gap_limit})


# --------------------------------------------------------------------------
# independent references
# --------------------------------------------------------------------------
def _transition(alpha: float, beta: float) -> tuple[np.ndarray, np.ndarray]:
    P = np.array([[1.0 - alpha, alpha], [beta, 1.0 - beta]])
    pi = np.array([beta, alpha]) / (alpha + beta)
    return P, pi


def _joint_batch(alpha: float, beta: float, q: np.ndarray, p: int) -> np.ndarray:
    """``Pr(Y = y, X_p = x)`` for a batch ``q`` of shape (B, n, 2) and all 3^n outputs y.

    Forward pass over the chain with ``X_p`` pinned; output symbol 2 is ⊥.
    Returns shape (B, 3^n, 2).
    """
    P, pi = _transition(alpha, beta)
    B, n, _ = q.shape
    Y = np.array(list(itertools.product((0, 1, 2), repeat=n)), dtype=np.int8)
    O = Y.shape[0]
    E = np.empty((B, O, n, 2))
    for t in range(n):
        for x in (0, 1):
            E[:, :, t, x] = np.where(
                Y[None, :, t] == 2, q[:, None, t, x], np.where(Y[None, :, t] == x, 1.0 - q[:, None, t, x], 0.0)
            )
    F = np.broadcast_to(pi[None, None, None, :] * E[:, :, 0, None, :], (B, O, 2, 2)).copy()
    if p == 0:
        F = F * np.eye(2)[None, None]
    for t in range(1, n):
        F = (F @ P) * E[:, :, t, None, :]
        if t == p:
            F = F * np.eye(2)[None, None]
    return F.sum(axis=3)


def _leakage_batch(alpha: float, beta: float, q: np.ndarray, p: int) -> np.ndarray:
    joint = _joint_batch(alpha, beta, q, p)
    support = joint.sum(axis=2) > 0.0
    _, pi = _transition(alpha, beta)
    with np.errstate(divide="ignore", invalid="ignore"):
        lr = np.abs(np.log(joint[..., 0] / pi[0]) - np.log(joint[..., 1] / pi[1]))
    return np.where(support, lr, 0.0).max(axis=1)


def _utility(alpha: float, beta: float, q: np.ndarray) -> np.ndarray:
    _, pi = _transition(alpha, beta)
    return ((1.0 - q) @ pi).mean(axis=-1)


def _grid_optimum(alpha, beta, n, p, eps, k, chunk=4096):
    """Best grid mechanism (exactly feasible) over all free entries in {0, 1/k, ..., 1}."""
    free = [(t, x) for t in range(n) if t != p for x in (0, 1)]
    levels = np.linspace(0.0, 1.0, k + 1)
    combos = itertools.product(levels, repeat=len(free))
    best_u, best_q = -math.inf, None
    while True:
        block = np.array(list(itertools.islice(combos, chunk)))
        if block.size == 0:
            break
        q = np.ones((block.shape[0], n, 2))
        for i, (t, x) in enumerate(free):
            q[:, t, x] = block[:, i]
        u = np.where(_leakage_batch(alpha, beta, q, p) <= eps, _utility(alpha, beta, q), -math.inf)
        j = int(np.argmax(u))
        if u[j] > best_u:
            best_u, best_q = float(u[j]), q[j].copy()
    return best_u, best_q


def _polish(alpha, beta, p, eps, q0):
    """SLSQP on the entries strictly inside (0, 1), support fixed, per-output constraints."""
    idx = [(t, x) for t in range(q0.shape[0]) for x in (0, 1) if 0.0 < q0[t, x] < 1.0]
    if not idx:
        return float(_utility(alpha, beta, q0)), q0
    _, pi = _transition(alpha, beta)
    support = _joint_batch(alpha, beta, q0[None], p)[0].sum(axis=1) > 0.0

    def build(v):
        q = q0.copy()
        for (t, x), val in zip(idx, v):
            q[t, x] = val
        return q

    def log_ratios(v):
        joint = _joint_batch(alpha, beta, build(v)[None], p)[0][support]
        return np.log(joint[:, 0] / pi[0]) - np.log(joint[:, 1] / pi[1])

    res = minimize(
        lambda v: -float(_utility(alpha, beta, build(v))),
        np.array([q0[t, x] for t, x in idx]),
        method="SLSQP",
        bounds=[(1e-9, 1.0 - 1e-9)] * len(idx),
        constraints=[
            {"type": "ineq", "fun": lambda v: eps - log_ratios(v)},
            {"type": "ineq", "fun": lambda v: eps + log_ratios(v)},
        ],
        options={"ftol": 1e-14, "maxiter": 500},
    )
    q = build(res.x)
    return float(_utility(alpha, beta, q)), q


def _n2_closed_form(alpha: float, beta: float, eps: float) -> float:
    r"""Optimal utility for ``n = 2`` (either end), derived by hand.

    The other record sits at distance 1.  Publishing ``v`` gives the ratio
    ``R(v) = P[0,v]/P[1,v]``; the all-⊥ output has ratio ``(P q)_0/(P q)_1``.  If both
    ``|log R(v)| <= eps`` the record is always published (utility 1/2); if neither, it is
    always redacted (0).  If only ``v`` qualifies, the other value is always redacted
    and ``q_v = x`` must keep the all-⊥ ratio ``(P[0,v] x + P[0,w])/(P[1,v] x + P[1,w])``
    (``w = 1 - v``) inside ``[e^{-eps}, e^{eps}]``; it is monotone in ``x`` from ``R(w)``
    (outside) to 1 (inside), so the smallest ``x`` solves it equal to the violated end
    ``c``: ``x = (c P[1,w] - P[0,w]) / (P[0,v] - c P[1,v])``.
    """
    P, pi = _transition(alpha, beta)
    R = P[0] / P[1]
    ok = [abs(math.log(R[v])) <= eps for v in (0, 1)]
    if all(ok):
        return 0.5
    if not any(ok):
        return 0.0
    v = ok.index(True)
    w = 1 - v
    c = math.exp(eps) if R[w] > math.exp(eps) else math.exp(-eps)
    x = (c * P[1, w] - P[0, w]) / (P[0, v] - c * P[1, v])
    return pi[v] * (1.0 - x) / 2.0


def _check_result(res, alpha, beta, n, p, eps):
    chain = MarkovChain(alpha, beta)
    assert res.certificate.solver in ("scip", "lemma2")  # the smaller of the two bounds
    assert res.certificate.scope == "all"
    assert res.certificate.upper_bound >= res.utility
    assert res.certificate.upper_bound <= lemma2_upper_bound(chain, n, eps=eps, private=p) + 1e-12
    if n <= 12:
        assert leakage_bruteforce(chain, res.redact_prob, p).leakage <= eps * (1.0 + 1e-12)
    assert res.redact_prob[p].tolist() == [1.0, 1.0]


# --------------------------------------------------------------------------
# the reference evaluator itself
# --------------------------------------------------------------------------
def test_reference_leakage_matches_bruteforce():
    rng = np.random.default_rng(11)
    for _ in range(60):
        alpha, beta = rng.uniform(0.05, 0.95, 2)
        n = int(rng.integers(2, 6))
        p = int(rng.integers(0, n))
        q = rng.random((n, 2))
        q[rng.random((n, 2)) < 0.3] = 1.0
        q[rng.random((n, 2)) < 0.2] = 0.0
        q[p] = 1.0
        ref = leakage_bruteforce(MarkovChain(alpha, beta), q, p).leakage
        assert _leakage_batch(alpha, beta, q[None], p)[0] == pytest.approx(ref, abs=1e-12)


# --------------------------------------------------------------------------
# closed forms
# --------------------------------------------------------------------------
def test_example1_exact_optimum():
    # Example 1 with the paper's stationary law: p2 = 0.1192..., utility (1-p2)(2/3)/2
    a = math.exp(-0.5)
    p2 = (0.5 * a - 0.25) / (0.75 - 0.5 * a)
    res = design_global(MarkovChain(0.25, 0.5), 2, eps=0.5, p=0)
    assert p2 == pytest.approx(0.1192, abs=1e-4)
    assert res.utility == pytest.approx((1.0 - p2) * (2.0 / 3.0) / 2.0, abs=1e-6)
    assert res.utility == pytest.approx(0.2936, abs=1e-4)
    assert res.redact_prob[1, 1] == 1.0
    assert res.redact_prob[1, 0] == pytest.approx(p2, abs=1e-6)
    assert res.certificate.gap <= 1e-6
    _check_result(res, 0.25, 0.5, 2, 0, 0.5)


@pytest.mark.parametrize(
    "alpha,beta,eps,p",
    [
        (0.25, 0.5, 0.3, 1),
        (0.6, 0.2, 0.7, 0),  # alpha > beta
        (0.7, 0.9, 0.4, 0),  # oscillating
        (0.8, 0.6, 0.9, 1),  # oscillating, alpha > beta
        (0.1, 0.3, 2.0, 0),  # everything publishable
        (0.05, 0.05, 0.5, 1),  # nothing publishable
    ],
)
def test_n2_matches_closed_form(alpha, beta, eps, p):
    res = design_global(MarkovChain(alpha, beta), 2, eps=eps, p=p)
    assert res.utility == pytest.approx(_n2_closed_form(alpha, beta, eps), abs=1e-6)
    _check_result(res, alpha, beta, 2, p, eps)


def test_independent_records_publish_everything():
    res = design_global(MarkovChain(0.3, 0.7), 5, eps=0.1, p=2)
    assert res.utility == pytest.approx(4.0 / 5.0)
    assert res.certificate.upper_bound == pytest.approx(4.0 / 5.0)


# --------------------------------------------------------------------------
# dense search over all mechanisms
# --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "alpha,beta,eps,p",
    [
        (0.1, 0.4, 0.8, 0),  # lazy, one-sided
        (0.4, 0.1, 0.8, 2),  # alpha > beta, private record last
        (0.7, 0.8, 0.9, 0),  # oscillating
        (0.2, 0.3, 1.2, 1),  # two-sided
        (0.6, 0.9, 1.5, 1),  # two-sided, oscillating
    ],
)
def test_n3_agrees_with_dense_search(alpha, beta, eps, p):
    n = 3
    grid_u, grid_q = _grid_optimum(alpha, beta, n, p, eps, k=10)
    polished_u, _ = _polish(alpha, beta, p, eps, grid_q)
    res = design_global(MarkovChain(alpha, beta), n, eps=eps, p=p)
    _check_result(res, alpha, beta, n, p, eps)
    assert res.utility >= grid_u - 1e-9
    assert res.certificate.upper_bound >= polished_u - 1e-9
    assert res.utility == pytest.approx(polished_u, abs=1e-4)


@pytest.mark.parametrize(
    "alpha,beta,eps,n,p,k",
    [
        (0.1, 0.5, 1.0, 4, 0, 4),
        (0.55, 0.15, 0.9, 4, 1, 4),  # alpha > beta, two-sided
        (0.75, 0.6, 1.1, 4, 3, 4),  # oscillating, left side
        (0.2, 0.6, 1.0, 5, 2, 2),  # two-sided
        (0.8, 0.7, 1.3, 5, 0, 2),  # oscillating
        (0.3, 0.2, 1.4, 6, 0, 1),
    ],
)
def test_reaches_grid_optimum(alpha, beta, eps, n, p, k):
    grid_u, _ = _grid_optimum(alpha, beta, n, p, eps, k=k)
    res = design_global(MarkovChain(alpha, beta), n, eps=eps, p=p)
    _check_result(res, alpha, beta, n, p, eps)
    assert res.utility >= grid_u - 1e-9


def test_mirror_image_has_same_optimum():
    chain = MarkovChain(0.15, 0.5)
    a = design_global(chain, 5, eps=0.9, p=1)
    b = design_global(chain, 5, eps=0.9, p=3)
    assert a.utility == pytest.approx(b.utility, abs=2e-6)
    assert np.allclose(a.redact_prob, b.redact_prob[::-1], atol=1e-4)


# --------------------------------------------------------------------------
# input checking
# --------------------------------------------------------------------------
def test_rejects_bad_input():
    chain = MarkovChain(0.2, 0.4)
    with pytest.raises(TypeError, match="chain"):
        design_global((0.2, 0.4), 3, eps=1.0)
    with pytest.raises(ValueError, match="eps"):
        design_global(chain, 3, eps=0.0)
    with pytest.raises(ValueError, match="p"):
        design_global(chain, 3, eps=1.0, p=3)
    with pytest.raises(ValueError, match="time_limit"):
        design_global(chain, 3, eps=1.0, time_limit=0.0)
    with pytest.raises(ValueError, match="gap_limit"):
        design_global(chain, 3, eps=1.0, gap_limit=-1.0)


# --------------------------------------------------------------------------
# larger instances (slow)
# --------------------------------------------------------------------------
def _best_window(alpha, beta, n, p, eps):
    """Best data-independent window, by exact enumeration of both radii."""
    chain = MarkovChain(alpha, beta)
    best = 0.0
    for dl in range(p + 1):
        for dr in range(n - p):
            q = np.zeros((n, 2))
            q[p - dl : p + dr + 1] = 1.0
            if leakage_bruteforce(chain, q, p).leakage <= eps:
                best = max(best, float(_utility(alpha, beta, q)))
    return best


@pytest.mark.slow
def test_one_sided_n10_to_12():
    alpha, beta, eps = 0.01, 0.8, 1.0
    previous = None
    for n in (10, 11, 12):
        res = design_global(MarkovChain(alpha, beta), n, eps=eps, p=0, time_limit=120.0)
        _check_result(res, alpha, beta, n, 0, eps)
        assert res.certificate.gap <= 1e-5
        assert res.utility >= _best_window(alpha, beta, n, 0, eps) - 1e-9
        if previous is not None:
            # appending a record beyond a record that is always published is free
            assert np.any(np.all(previous.redact_prob == 0.0, axis=1))
            assert n * res.utility >= (n - 1) * previous.utility + 1.0 - 1e-6
        previous = res


@pytest.mark.slow
@pytest.mark.parametrize("alpha,beta,eps,n,p", [(0.01, 0.8, 1.0, 6, 2), (0.2, 0.3, 0.5, 7, 3), (0.7, 0.2, 0.6, 8, 3)])
def test_two_sided_windows(alpha, beta, eps, n, p):
    res = design_global(MarkovChain(alpha, beta), n, eps=eps, p=p, time_limit=120.0)
    _check_result(res, alpha, beta, n, p, eps)
    assert res.certificate.gap <= 1e-5
    assert res.utility >= _best_window(alpha, beta, n, p, eps) - 1e-9



@pytest.mark.parametrize("path", ["binary", "k-state"])
def test_verbose_shows_scip_log_and_changes_nothing(capfd, path):
    """``verbose=True`` un-hides SCIP's log (PySCIPOpt has no ``showOutput``: this used to raise)."""
    if path == "binary":
        from redactopt.solvers.scip_global import propose_global as solve

        chain = MarkovChain(0.3, 0.4)
    else:
        from redactopt.model.chain import Chain
        from redactopt.solvers.kscip import propose_kglobal as solve

        chain = Chain([[0.5, 0.4, 0.1], [0.1, 0.5, 0.4], [0.6, 0.1, 0.3]])
    quiet = solve(chain, 4, eps=1.0, p=1, time_limit=20)
    capfd.readouterr()
    loud = solve(chain, 4, eps=1.0, p=1, time_limit=20, verbose=True)
    assert "SCIP Status" in capfd.readouterr().out
    assert loud.upper_bound == quiet.upper_bound
    assert np.array_equal(loud.redact_prob, quiet.redact_prob)


def test_no_scip_bound_on_a_chain_beyond_its_resolution():
    """beta = 1.5e-7: SCIP "proved" the bound 0 here (red-team scan) while the mechanism below
    publishes half the records (checked by enumerating every output).  Below MIN_CLAIM_ENTRY the
    dual bound is not claimed, so ``global`` certifies with Lemma 2 and ``optimal`` stays valid."""
    from redactopt.solvers.scip_global import MIN_CLAIM_ENTRY, propose_global

    chain = MarkovChain(0.00041053369719848816, 1.5309766289945638e-07)
    assert chain.beta < MIN_CLAIM_ENTRY
    q = np.array([[1.0, 1.0], [1.0, 1.0], [1.0, 0.0068], [1.0, 0.0068]])
    assert leakage_bruteforce(chain, q, 1).leakage <= 10.0
    u = float(np.mean((1.0 - q) @ chain.stationary))
    assert u > 0.49
    cand = propose_global(chain, 4, eps=10.0, p=1, time_limit=20)
    assert cand.upper_bound is None and "numerical resolution" in cand.info["dual_bound_not_claimed"]
    for method in ("global", "optimal"):
        d = design(chain, 4, eps=10.0, p=1, method=method, time_limit=20)
        assert d.certificate.upper_bound >= u and d.certificate.solver != "scip"


def test_a_refuted_scip_bound_is_discarded_not_used(monkeypatch):
    """A SCIP bound below a verified design's utility is numerical failure: it is listed in
    ``info["refuted_bounds"]`` and the next valid bound certifies (both paths)."""
    import redactopt.solvers.kscip as kscip
    import redactopt.solvers.scip_global as sg
    from redactopt.engine.kdesign import kdesign
    from redactopt.model.chain import Chain
    from redactopt.solvers.base import Candidate

    def wrong(chain, n, **kw):
        k = 2 if isinstance(chain, MarkovChain) else chain.k
        return Candidate(np.ones((n, k)), "global", "optimal", upper_bound=1e-3, bound_solver="scip")

    monkeypatch.setattr(sg, "propose_global", wrong)
    d = design(MarkovChain(0.3, 0.4), 4, eps=1.0, p=1, method="optimal", time_limit=20, certify_time=5)
    assert d.utility > 0.3 and d.certificate.upper_bound >= d.utility and d.certificate.solver != "scip"
    assert "1e-3" in d.info["refuted_bounds"][0] or "0.001" in d.info["refuted_bounds"][0]
    monkeypatch.setattr(kscip, "propose_kglobal", wrong)
    kd = kdesign(Chain([[0.5, 0.4, 0.1], [0.1, 0.5, 0.4], [0.6, 0.1, 0.3]]), 4, eps=1.0, p=1, method="optimal", certify_time=5)
    assert kd.utility > 0.2 and kd.certificate.upper_bound >= kd.utility and kd.certificate.solver != "scip"
    assert "0.001" in kd.info["refuted_bounds"][0]


def test_a_window_exactly_at_eps_is_not_cut_off():
    # found by tests/test_boundary.py (slow): alpha = beta = 7/8, n = 5, p = 3 and eps = log(25/7), the
    # leakage of publishing records 0 and 1 (nothing nearer to p on the left, nothing on the right):
    # lambda = -3/4, (P^2)_{00} / (P^2)_{10} = (1 + lambda^2) / (1 - lambda^2) = 25/7 exactly.  That window is
    # private (utility 2/5) and SCIP's dual bound at eps itself was 0.3: the model is now solved with a slack.
    from fractions import Fraction

    from redactopt.judge.exact import certify_exact

    chain = MarkovChain(0.875, 0.875)
    eps = math.log(25 / 7)
    window = [[0, 0], [0, 0], [1, 1], [1, 1], [1, 1]]
    assert certify_exact(Fraction(7, 8), Fraction(7, 8), window, [3], eps).status == "certified"
    res = design(chain, 5, eps=eps, p=3, method="global")
    assert res.certificate.upper_bound >= 2 / 5 - 1e-12
    assert res.utility == pytest.approx(2 / 5, abs=1e-9)
    assert certify_exact(Fraction(7, 8), Fraction(7, 8), np.asarray(res.redact_prob).tolist(), [3],
                         eps).status == "certified"
