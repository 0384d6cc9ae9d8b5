"""Tests of the successive-GP design (``redactopt.solvers.sgp``).

Every number asserted here comes from somewhere else: a hand-solved equation
(Example 1), an independent enumeration of all outputs over a dense grid of
mechanisms, the library's brute-force leakage (all 3^n outputs), or the paper's
Markov-Quilt baseline.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from redactopt.model.chain import MarkovChain
from redactopt.judge.leakage import leakage, leakage_bruteforce, utility
from redactopt.paper.mechanisms import markov_quilt
from redactopt.engine.design import design
from redactopt.solvers import sgp
from redactopt.solvers.sgp import dgp_step


def design_sgp(chain, n, *, eps, p=0, rng=None, **options):
    """The SGP solver's proposal, judged by design()."""
    return design(chain, n, eps=eps, p=p, method="sgp", rng=rng, options=options)

OCCUPANCY = MarkovChain(0.003, 0.012)


# --------------------------------------------------------------------------
# an independent reference: best mechanism on a grid, by enumerating outputs
# --------------------------------------------------------------------------
def grid_optimum(alpha: float, beta: float, n: int, p: int, eps: float, values: np.ndarray) -> float:
    """Largest utility over all mechanisms whose free entries lie on ``values``.

    Leakage is computed from scratch: for every output y in {0, 1, ⊥}^n and every
    sequence x, Pr(y, x) = Pr(x) * prod_t Pr(y_t | x_t); outputs of probability 0
    are skipped (Definition 1 takes the supremum over the support only).
    """
    P = np.array([[1 - alpha, alpha], [beta, 1 - beta]])
    pi = np.array([beta, alpha]) / (alpha + beta)
    free = [(t, x) for t in range(n) if t != p for x in (0, 1)]
    vals = np.array(list(itertools.product(values, repeat=len(free))))
    G = vals.shape[0]
    q = np.ones((G, n, 2))
    for c, (t, x) in enumerate(free):
        q[:, t, x] = vals[:, c]
    seqs = list(itertools.product((0, 1), repeat=n))
    pseq = []
    for xs in seqs:
        pr = pi[xs[0]]
        for t in range(1, n):
            pr *= P[xs[t - 1], xs[t]]
        pseq.append(pr)
    worst = np.zeros(G)
    for y in itertools.product((0, 1, 2), repeat=n):
        cond = np.zeros((2, G))
        for xs, pr in zip(seqs, pseq):
            if any(y[t] != 2 and y[t] != xs[t] for t in range(n)):
                continue
            e = np.full(G, pr)
            for t in range(n):
                e = e * (q[:, t, xs[t]] if y[t] == 2 else 1 - q[:, t, xs[t]])
            cond[xs[p]] += e
        cond /= pi[:, None]
        support = cond.sum(axis=0) > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            lr = np.abs(np.log(cond[0]) - np.log(cond[1]))
        worst = np.where(support, np.maximum(worst, np.nan_to_num(lr, nan=0.0, posinf=np.inf)), worst)
    util = ((1 - q) @ pi).mean(axis=1)
    ok = worst <= eps + 1e-12
    return float(np.max(np.where(ok, util, -1.0)))


def assert_private(res, chain: MarkovChain, p: int, eps: float) -> None:
    ref = leakage_bruteforce(chain, res.redact_prob, p)
    assert ref.leakage <= eps * (1 + 1e-9)
    assert res.leakage == pytest.approx(ref.leakage, abs=1e-9)
    assert res.utility == pytest.approx(utility(chain, res.redact_prob), abs=1e-12)
    assert res.method == "sgp" and res.info["source"] == "sgp"
    assert res.certificate.solver == "lemma2"
    assert res.certificate.upper_bound >= res.utility - 1e-12


# --------------------------------------------------------------------------
# Example 1 of the paper, solved by hand
# --------------------------------------------------------------------------
def test_example1_hand_solution():
    # n = 2, p = 1 (1-based): publishing X_2 = 1 leaks log 2 > 0.5, so q[1, 1] = 1; the
    # all-⊥ output then binds: (0.5 p2 + 0.5) / (0.25 + 0.75 p2) = e^0.5.
    e = math.exp(0.5)
    p2 = (0.5 - 0.25 * e) / (0.75 * e - 0.5)
    assert p2 == pytest.approx(0.11923, abs=1e-5)
    chain = MarkovChain(0.25, 0.5)
    res = design_sgp(chain, 2, eps=0.5, p=0)
    assert res.redact_prob[1, 1] == 1.0
    assert res.redact_prob[1, 0] == pytest.approx(p2, abs=1e-4)
    assert_private(res, chain, 0, 0.5)


# --------------------------------------------------------------------------
# privacy on random points of every kind of chain
# --------------------------------------------------------------------------
def _random_cases(seed: int, count: int):
    rng = np.random.default_rng(seed)
    kinds = ["alpha>beta", "oscillating", "lazy"]
    for i in range(count):
        kind = kinds[i % 3]
        if kind == "alpha>beta":
            beta = rng.uniform(0.02, 0.4)
            alpha = rng.uniform(beta + 0.01, min(0.95, 1.0 - beta - 0.01))
        elif kind == "oscillating":
            alpha, beta = rng.uniform(0.55, 0.98, 2)
        else:
            alpha, beta = rng.uniform(0.02, 0.45, 2)
        n = int(rng.integers(2, 9))
        p = [0, n - 1, int(rng.integers(0, n))][i % 3]
        eps = float(rng.choice([0.1, 0.3, 0.7, 1.5]))
        yield MarkovChain(float(alpha), float(beta)), n, p, eps


@pytest.mark.parametrize("chain,n,p,eps", list(_random_cases(7, 9)))
def test_random_points_are_private(chain, n, p, eps):
    res = design_sgp(chain, n, eps=eps, p=p, starts=2)
    assert_private(res, chain, p, eps)


@pytest.mark.slow
@pytest.mark.parametrize("chain,n,p,eps", list(_random_cases(11, 30)))
def test_random_points_are_private_many(chain, n, p, eps):
    res = design_sgp(chain, n, eps=eps, p=p)
    assert_private(res, chain, p, eps)


# --------------------------------------------------------------------------
# against a dense grid of all mechanisms (n <= 4)
# --------------------------------------------------------------------------
GRID_CASES_FAST = [
    (0.229, 0.488, 3, 2, 0.8, 21),  # lazy, p at the end
    (0.404, 0.263, 3, 2, 0.2, 21),  # alpha > beta
    (0.973, 0.532, 3, 2, 0.8, 21),  # oscillating, alpha > beta
]
GRID_CASES_SLOW = [
    (0.197, 0.476, 3, 0, 0.8, 21),
    (0.403, 0.113, 3, 0, 0.5, 21),
    (0.654, 0.562, 3, 1, 0.8, 21),  # oscillating, p inside
    (0.221, 0.446, 4, 2, 0.3, 7),
    (0.486, 0.152, 4, 1, 0.2, 7),
    (0.830, 0.557, 4, 2, 0.8, 7),
    (0.024, 0.490, 4, 3, 0.5, 7),
]


def _check_grid(alpha, beta, n, p, eps, points):
    best = grid_optimum(alpha, beta, n, p, eps, np.linspace(0.0, 1.0, points))
    chain = MarkovChain(alpha, beta)
    res = design_sgp(chain, n, eps=eps, p=p)
    assert_private(res, chain, p, eps)
    assert res.utility >= best - 1e-3


@pytest.mark.parametrize("alpha,beta,n,p,eps,points", GRID_CASES_FAST)
def test_at_least_grid_optimum(alpha, beta, n, p, eps, points):
    _check_grid(alpha, beta, n, p, eps, points)


@pytest.mark.slow
@pytest.mark.parametrize("alpha,beta,n,p,eps,points", GRID_CASES_SLOW)
def test_at_least_grid_optimum_more(alpha, beta, n, p, eps, points):
    _check_grid(alpha, beta, n, p, eps, points)


# --------------------------------------------------------------------------
# Fig. 3 setting: never worse than Markov-Quilt, always private
# --------------------------------------------------------------------------
@pytest.mark.parametrize("eps", [0.25, 0.5, 1.0, 2.0, 4.0])
def test_fig3_beats_markov_quilt(eps):
    chain = MarkovChain(0.01, 0.8)
    res = design_sgp(chain, 10, eps=eps, p=0)
    assert_private(res, chain, 0, eps)
    assert res.utility >= markov_quilt(chain, 10, eps=eps, p=0).utility() - 1e-12


# --------------------------------------------------------------------------
# the convex form takes the same step as the literal DGP (gp=True)
# --------------------------------------------------------------------------
def test_convex_form_matches_dgp():
    chain = MarkovChain(0.2, 0.4)
    n, eps = 4, 0.7
    m = n - 1
    closed = sgp._closed_for(chain, m, eps, eps)
    side = sgp._Side.make(m, m, closed)
    q = np.where(closed, 1.0, 0.9)
    empty = sgp._Side.make(0, 0, np.zeros((0, 2), dtype=bool))
    assert sgp._gp_leakage(chain, [np.ones((0, 2)), q], [empty, side]) <= eps
    model = sgp._LogGP(chain, [empty, side], [np.ones((0, 2)), q], eps, 0.0)
    step = model.solve([np.ones((0, 2)), q])
    assert step is not None and model.problem.status == "optimal"
    reference = dgp_step(chain, q, closed, eps=eps)
    np.testing.assert_allclose(step[1], reference, atol=1e-4)
    # the step is feasible for the true constraints (inner approximation)
    assert sgp._gp_leakage(chain, step, [empty, side]) <= eps + 1e-7


# --------------------------------------------------------------------------
# strongly correlated chains (occupancy parameters)
# --------------------------------------------------------------------------
def test_occupancy_fifty_records():
    # 50 records after p; the low value may be published from distance 36 on (Lemma 2)
    n, p, eps = 51, 0, 1.0
    res = design_sgp(OCCUPANCY, n, eps=eps, p=p)
    exact = leakage(OCCUPANCY, res.redact_prob, p)
    assert exact.leakage <= eps
    assert res.leakage == pytest.approx(exact.leakage, abs=1e-12)
    assert res.utility >= markov_quilt(OCCUPANCY, n, eps=eps, p=p).utility() - 1e-12
    assert res.utility > 0.0


@pytest.mark.slow
@pytest.mark.parametrize("p", [0, 199, 399])
@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
def test_occupancy_four_hundred(p, eps):
    n = 400
    res = design_sgp(OCCUPANCY, n, eps=eps, p=p)
    exact = leakage(OCCUPANCY, res.redact_prob, p)
    assert exact.leakage <= eps
    assert res.utility >= markov_quilt(OCCUPANCY, n, eps=eps, p=p).utility() - 1e-12


# --------------------------------------------------------------------------
# arguments
# --------------------------------------------------------------------------
def test_bad_arguments():
    chain = MarkovChain(0.2, 0.3)
    with pytest.raises(TypeError, match="chain"):
        design_sgp((0.2, 0.3), 5, eps=1.0)
    with pytest.raises(ValueError, match="eps"):
        design_sgp(chain, 5, eps=0.0)
    with pytest.raises(ValueError, match="p"):
        design_sgp(chain, 5, eps=1.0, p=5)
    with pytest.raises(ValueError, match="starts"):
        design_sgp(chain, 5, eps=1.0, starts=0)
    with pytest.raises(TypeError, match="max_iter"):
        design_sgp(chain, 5, eps=1.0, max_iter=2.5)
    with pytest.raises(ValueError, match="tol"):
        design_sgp(chain, 5, eps=1.0, tol=-1.0)
    with pytest.raises(TypeError, match="rng"):
        design_sgp(chain, 5, eps=1.0, rng=3)


def test_window_too_small_is_refused():
    with pytest.raises(ValueError, match="window"):
        design_sgp(OCCUPANCY, 400, eps=1.0, p=0, window=10)


def test_single_record_is_redacted():
    res = design_sgp(MarkovChain(0.2, 0.3), 1, eps=1.0, p=0)
    assert res.redact_prob.tolist() == [[1.0, 1.0]]
    assert res.utility == 0.0
