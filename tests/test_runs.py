"""Runs of adjacent private records (issue 34) against independent references.

* The contraction through the run's redacted records against exact rational matrix products
  (also for steps that change from one record to the next), and the Möbius map of a boundary
  ratio against exact fractions.
* The decomposition — every run record's leakage from its sides' two directional leakages —
  against enumeration of all 3^n outputs.
* The budget maps: inverses of the per-record constraints, outward where they bound.
* The certified bound lies above every exactly private mechanism a dense grid and a random
  search over all mechanisms of small problems find; the design is within the stated gap of
  them and private in rational arithmetic.
* The relaxation property: a run's bound is never above any single private record's certified
  bound (computed independently by ``design``), nor its utility above their certified optima.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from redactopt import MarkovChain, design
from redactopt.judge.exact import certify_exact
from redactopt.judge.leakage import leakage, leakage_bruteforce, utility
from redactopt.solvers import runs as rn
from redactopt.solvers.frontier import Geo


# --------------------------------------------------------------------------
# independent references
# --------------------------------------------------------------------------
def _frac_matrix(alpha: float, beta: float) -> list[list[Fraction]]:
    a, b = Fraction(alpha), Fraction(beta)
    return [[1 - a, a], [b, 1 - b]]


def _frac_mul(A, B):
    return [[sum(A[i][k] * B[k][j] for k in range(2)) for j in range(2)] for i in range(2)]


def _frac_power(M, d):
    out = [[Fraction(1), Fraction(0)], [Fraction(0), Fraction(1)]]
    for _ in range(d):
        out = _frac_mul(out, M)
    return out


def _side_extremes(alpha: float, beta: float, rows: np.ndarray) -> tuple[float, float]:
    """(A, B) of one side (rows nearest the boundary first) by enumerating its 3^m outputs: the largest
    log-ratio about the boundary record in favour of 0 and of 1 (0, 0 for an empty side)."""
    m = rows.shape[0]
    if m == 0:
        return 0.0, 0.0
    P = np.array([[1 - alpha, alpha], [beta, 1 - beta]])
    logs = []
    for y in itertools.product((0, 1, 2), repeat=m):
        pr = []
        for u in (0, 1):
            vec = np.eye(2)[u]
            for k, yk in enumerate(y):
                vec = vec @ P
                e = np.array([rows[k, 0], rows[k, 1]]) if yk == 2 else \
                    np.array([1 - rows[k, 0], 0.0]) if yk == 0 else np.array([0.0, 1 - rows[k, 1]])
                vec = vec * e
            pr.append(vec.sum())
        if pr[0] > 0 and pr[1] > 0:
            logs.append(math.log(pr[0]) - math.log(pr[1]))
    return max(logs), -min(logs)


# --------------------------------------------------------------------------
# the contraction
# --------------------------------------------------------------------------
def test_contractions_are_exact_matrix_powers(rng):
    for _ in range(40):
        alpha, beta = (float(v) for v in rng.uniform(0.01, 0.99, 2))
        chain = MarkovChain(alpha, beta)
        r = int(rng.integers(1, 9))
        left, right = rn.chain_contractions(chain, r)
        F = _frac_matrix(alpha, beta)
        lam = 1 - Fraction(alpha) - Fraction(beta)
        for j in range(r):
            for c, d in ((left[j], j), (right[j], r - 1 - j)):
                exact = _frac_power(F, d)
                for i, k in itertools.product(range(2), range(2)):
                    assert c.K[i, k] == pytest.approx(float(exact[i][k]), rel=1e-13, abs=1e-300)
                assert c.det == pytest.approx(float(lam ** d), rel=1e-13, abs=1e-300)


def test_contractions_of_steps_that_vary(rng):
    # a chain whose matrix changes at every step: the contraction is the product of the steps between
    steps = []
    for _ in range(6):
        a, b = (Fraction(int(v), 97) for v in rng.integers(1, 97, 2))
        steps.append([[1 - a, a], [b, 1 - b]])
    fwd = [np.array([[float(x) for x in row] for row in M]) for M in steps]
    bwd = [np.array([[float(x) for x in row] for row in M]) for M in steps[::-1]]  # any stochastic steps
    left, right = rn.contractions(fwd, bwd)
    r = len(steps) + 1
    for j in range(r):
        exact_r = [[Fraction(int(i == k)) for k in range(2)] for i in range(2)]
        for M in steps[j:]:
            exact_r = _frac_mul(exact_r, M)
        exact_l = [[Fraction(int(i == k)) for k in range(2)] for i in range(2)]
        for M in reversed(steps[::-1][:j]):
            exact_l = _frac_mul(exact_l, M)
        for c, ex in ((right[j], exact_r), (left[j], exact_l)):
            for i, k in itertools.product(range(2), range(2)):
                assert c.K[i, k] == pytest.approx(float(ex[i][k]), rel=1e-13)
            det = ex[0][0] * ex[1][1] - ex[0][1] * ex[1][0]
            assert c.det == pytest.approx(float(det), rel=1e-12, abs=1e-300)


def test_log_phi_is_the_exact_mobius_map(rng):
    for _ in range(60):
        alpha, beta = (float(v) for v in rng.uniform(0.001, 0.999, 2))
        d = int(rng.integers(0, 12))
        F = _frac_power(_frac_matrix(alpha, beta), d)
        lam = 1 - Fraction(alpha) - Fraction(beta)
        c = rn.Contraction(np.array([[float(v) for v in row] for row in F]), float(lam ** d))
        for t in rng.uniform(-6, 6, 5):
            rho = Fraction(math.exp(float(t)))
            phi = (F[0][0] * rho + F[0][1]) / (F[1][0] * rho + F[1][1])
            got = float(rn.log_phi(c, np.array(math.log(rho))))
            assert got == pytest.approx(math.log(phi), rel=1e-11, abs=1e-15)


def test_budget_for_leak_inverts_the_coordinate_leak(rng):
    for _ in range(60):
        chain = MarkovChain(*(float(v) for v in rng.uniform(0.01, 0.99, 2)))
        left, _ = rn.chain_contractions(chain, 6)
        c = left[int(rng.integers(0, 6))]
        for s in (+1, -1):
            x = rng.uniform(0, 3, 8)
            z = rn.coordinate_leak(c, s, x)
            back = rn.budget_for_leak(c, s, z, outward=False)
            np.testing.assert_allclose(back[np.isfinite(back)], x[np.isfinite(back)], rtol=1e-7, atol=1e-9)
            assert np.all(rn.budget_for_leak(c, s, z, outward=True) >= back)


# --------------------------------------------------------------------------
# the decomposition
# --------------------------------------------------------------------------
def test_run_leakage_from_side_leakages_equals_enumeration(rng):
    for _ in range(120):
        alpha, beta = (float(v) for v in rng.uniform(0.02, 0.98, 2))
        chain = MarkovChain(alpha, beta)
        n = int(rng.integers(2, 9))
        first = int(rng.integers(0, n))
        last = int(rng.integers(first, n))
        q = rng.random((n, 2))
        q[rng.random((n, 2)) < 0.25] = 1.0
        q[rng.random((n, 2)) < 0.2] = 0.0
        q[first:last + 1] = 1.0
        side_l = _side_extremes(alpha, beta, q[:first][::-1])
        side_r = _side_extremes(alpha, beta, q[last + 1:])
        left, right = rn.chain_contractions(chain, last - first + 1)
        got = rn.run_leakages(left, right, side_l, side_r)
        for j, p in enumerate(range(first, last + 1)):
            assert got[j] == pytest.approx(leakage_bruteforce(chain, q, p).leakage, abs=1e-11)


def test_pairs_follow_the_sign_of_the_run():
    # lazy chain: a with a; oscillating chain: a run of odd length pairs a with a, even length a with b
    for (alpha, beta), r, sigma in (((0.1, 0.2), 4, 1), ((0.7, 0.9), 3, 1), ((0.7, 0.9), 4, -1)):
        chain = MarkovChain(alpha, beta)
        maps = rn.run_maps(Geo(chain), *rn.chain_contractions(chain, r))
        assert maps.sigma == sigma


def test_budget_maps_meet_every_record_constraint(rng):
    for _ in range(30):
        chain = MarkovChain(*(float(v) for v in rng.uniform(0.02, 0.98, 2)))
        r = int(rng.integers(1, 8))
        left, right = rn.chain_contractions(chain, r)
        maps = rn.run_maps(Geo(chain), left, right)
        eps = float(rng.uniform(0.1, 2.0))
        amax, bmax = maps.left_max(eps, outward=False)
        a = rng.uniform(0, amax, 6)
        b = rng.uniform(0, bmax, 6)
        ar, br = maps.right_budgets(a, b, eps, outward=False)
        for i in range(6):
            leak = rn.run_leakages(left, right, (a[i], b[i]), (ar[i], br[i]))
            assert leak.max() <= eps * (1 + 1e-9)
        up = maps.right_budgets(a, b, eps, outward=True)
        assert np.all(up[0] >= ar) and np.all(up[1] >= br)


# --------------------------------------------------------------------------
# the certified optimum of small runs against searches over all mechanisms
# --------------------------------------------------------------------------
def _grid_search(chain, n, run, eps, levels):
    """Best utility of the mechanisms whose side rows take values in ``levels`` and that are private about every
    run record (exact evaluator, a margin inside eps), and the mechanism."""
    side = [t for t in range(n) if t not in run]
    best, arg = -1.0, None
    for vals in itertools.product(levels, repeat=2 * len(side)):
        q = np.ones((n, 2))
        q[side] = np.array(vals).reshape(-1, 2)
        if all(leakage(chain, q, p).leakage <= eps * (1 - 1e-9) for p in run):
            u = utility(chain, q)
            if u > best:
                best, arg = u, q
    return best, arg


@pytest.mark.parametrize("alpha,beta,n,first,last,eps,levels", [
    (0.05, 0.2, 5, 1, 2, 1.0, 4),      # lazy, a side of 1 and one of 2
    (0.7, 0.9, 5, 2, 3, 0.8, 4),       # oscillating, run of even length (a pairs with b)
    (0.3, 0.1, 4, 0, 1, 0.6, 9),       # run at the start: one side
    (0.6, 0.8, 5, 1, 3, 1.2, 9),       # oscillating, odd length
    pytest.param(0.6, 0.8, 6, 2, 4, 1.2, 6, marks=pytest.mark.slow),
    pytest.param(0.01, 0.8, 6, 1, 3, 0.5, 5, marks=pytest.mark.slow),
])
def test_run_bound_above_every_mechanism_a_search_finds(alpha, beta, n, first, last, eps, levels):
    chain = MarkovChain(alpha, beta)
    run = list(range(first, last + 1))
    found, _ = _grid_search(chain, n, run, eps, np.linspace(0, 1, levels))
    ra = rn.run_analysis(chain, n, eps=eps, first=first, last=last, singles="none")
    assert ra.upper_bound >= found - 1e-12
    # the design is private about every run record, exactly, and within the gap of everything found
    good = []
    for q in (ra.redact_prob, ra.edge):  # the design, and the same budgets spent to eps exactly (a fallback)
        if certify_exact(alpha, beta, q.tolist(), run, eps).status == "certified":
            assert all(leakage_bruteforce(chain, q, p).leakage <= eps * (1 + 1e-12) for p in run)
            good.append(utility(chain, q))
    assert certify_exact(alpha, beta, ra.redact_prob.tolist(), run, eps).status == "certified"
    assert good and max(good) >= found - (ra.upper_bound - max(good)) - 1e-9
    assert ra.upper_bound - max(good) <= 1e-4


def test_run_bound_above_a_random_local_search(rng):
    chain = MarkovChain(0.2, 0.35)
    n, run, eps = 8, [3, 4, 5], 0.9
    ra = rn.run_analysis(chain, n, eps=eps, first=3, last=5, singles="none")
    q = np.asarray(ra.redact_prob).copy()
    best = utility(chain, q)
    for _ in range(1500):
        cand = q.copy()
        t = int(rng.choice([0, 1, 2, 6, 7]))
        v = int(rng.integers(0, 2))
        cand[t, v] = float(np.clip(cand[t, v] + rng.normal(0, 0.2), 0, 1)) if rng.random() < 0.8 else float(rng.integers(0, 2))
        if all(leakage(chain, cand, p).leakage <= eps * (1 - 1e-9) for p in run) and utility(chain, cand) > best:
            q, best = cand, utility(chain, cand)
    assert ra.upper_bound >= best - 1e-12


# --------------------------------------------------------------------------
# the relaxation property: never above a single record's certified bound
# --------------------------------------------------------------------------
@pytest.mark.parametrize("alpha,beta,n,first,last,eps", [
    (0.05, 0.2, 30, 8, 10, 1.0),   # the issue's design --n 30 --private 9-11
    (0.05, 0.2, 12, 3, 4, 1.0),
    (0.7, 0.9, 12, 4, 6, 1.0),
    pytest.param(0.01, 0.8, 20, 5, 9, 0.5, marks=pytest.mark.slow),
])
def test_run_bound_never_above_a_single_record_bound(alpha, beta, n, first, last, eps):
    chain = MarkovChain(alpha, beta)
    ra = rn.run_analysis(chain, n, eps=eps, first=first, last=last)
    q = ra.redact_prob
    assert max(leakage(chain, q, p).leakage for p in range(first, last + 1)) <= eps
    u = utility(chain, q)
    for p in range(first, last + 1):
        single = design(chain, n, eps=eps, p=p)
        assert ra.upper_bound <= single.certificate.upper_bound
        assert u <= single.certificate.upper_bound
    if (n, first, last) == (30, 8, 10):
        assert ra.upper_bound < 0.5266  # record 11 alone: 0.52660; the issue's bound was 0.64918


# --------------------------------------------------------------------------
# the design layer: relaxations carried, several runs, what the user sees
# --------------------------------------------------------------------------
def test_bound_on_rows_by_hand():
    from redactopt.judge.relaxation import Relaxation, best_bound, bound_on_rows

    # rows 10..19 bounded by 4.5 for record 12 alone; rows 5..24 hold private records 6, 12, 13 and 23
    r = Relaxation(10, 19, 4.5, "frontier-dp", "record", (12,))
    priv = [6, 12, 13, 23]
    # outside 10..19 within 5..24: rows 5..9 (5 rows, 6 private -> 4) and 20..24 (5 rows, 23 private -> 4)
    assert bound_on_rows(r, 5, 24, priv) == 4.5 + 4 + 4
    assert bound_on_rows(r, 12, 15, priv) == 4.5
    assert best_bound(5, 24, (20.0, "lemma2"), [r], priv) == (12.5, "frontier-dp", r)
    assert best_bound(5, 24, (12.0, "lemma2"), [r], priv) == (12.0, "lemma2", None)
    assert r.label == "record 13"


def test_issue_design_uses_the_run_and_never_exceeds_a_record_bound():
    from redactopt.engine.joint import design_joint_sparse

    chain = MarkovChain(0.05, 0.2)
    d = design_joint_sparse(chain, 30, eps=1.0, private=[8, 9, 10], method="optimal")
    singles = [design(chain, 30, eps=1.0, p=p) for p in (8, 9, 10)]
    assert d.certificate.upper_bound <= min(s.certificate.upper_bound for s in singles)
    assert d.certificate.upper_bound < 0.5266 and d.certificate.gap <= 1e-4
    assert d.utility <= min(s.certificate.upper_bound for s in singles)
    assert d.utility > 0.51575  # the joint window the issue reported
    assert certify_exact(0.05, 0.2, np.asarray(d.redact_prob).tolist(), [8, 9, 10], 1.0).status == "certified"
    assert [r["private"] for r in d.info["runs"]] == [[9, 11]]
    auto = design_joint_sparse(chain, 30, eps=1.0, private=[8, 9, 10], method="auto")
    assert auto.utility >= d.utility - auto.certificate.gap  # auto has the run design among its candidates
    assert auto.certificate.upper_bound <= min(s.certificate.upper_bound for s in singles)


def test_two_runs_near_each_other_against_a_grid_search():
    # private {1, 2} and {5} in 7 records: a region holding two runs, cut between them for the bound
    from redactopt.engine.joint import design_joint_sparse
    from redactopt.engine.runs import split_bound

    chain, n, eps, run = MarkovChain(0.1, 0.3), 7, 0.8, [1, 2, 5]
    found, _ = _grid_search(chain, n, run, eps, np.linspace(0, 1, 3))
    cut = split_bound(chain, eps, 0, n - 1, run)
    assert cut is not None and cut[0] >= found * n - 1e-9
    d = design_joint_sparse(chain, n, eps=eps, private=run, method="optimal")
    assert d.certificate.upper_bound >= found - 1e-12
    assert d.utility >= found - d.certificate.gap - 1e-12
    assert all(leakage_bruteforce(chain, np.asarray(d.redact_prob), p).leakage <= eps * (1 + 1e-12) for p in run)


def test_design_command_prints_each_run():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "redactopt", "design", "--n", "30", "--private", "9-11", "--eps", "1",
                          "--alpha", "0.05", "--beta", "0.2"], capture_output=True, text=True, check=True).stdout
    lines = {ln.split(":", 1)[0].strip(): ln.split(":", 1)[1] for ln in out.splitlines() if " : " in ln}
    assert float(lines["upper bound"].split()[0]) < 0.5266
    assert lines["run"].strip().startswith("9-11: rows 1-30 publish")
