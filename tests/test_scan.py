"""Scan mechanisms (issue 26): exact leakage, the optimum, its certificate and the file format.

Every expected number is derived here independently of the code under test: leakage by
enumerating every record tuple and every pair of stopping distances in rational arithmetic,
Example 1 of the paper in closed form (as tests/test_scip_global.py derives it), the eps -> 0
limit from the strong stationary time of a lazy two-state chain, and bounds against mechanisms
drawn at random and judged by enumeration.
"""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest

from redactopt.classes_io import mechanism_from_dict, mechanism_to_dict
from redactopt.judge.leakage import leakage
from redactopt.judge.scan import scan_leakage, scan_ratio_exact, verify_mechanism
from redactopt.model.chain import MarkovChain
from redactopt.model.chain import Chain
from redactopt.model.mechanism_classes import ScanMechanism, as_kchain, local_as_scan
from redactopt.solvers.lp_certificate import dual_bound, dual_bound_exact
from redactopt.engine.class_judge import design_scan
from redactopt.solvers.scan_lp import SideSpec, _budget_matrix, pairs_of, side_program


# --------------------------------------------------------------------------
# an independent evaluator: every record tuple, every stopping distance, in rationals
# --------------------------------------------------------------------------
def _exact_chain(kc: Chain):
    P = [list(r) for r in kc.exact_transition()]
    pi = list(kc.exact_stationary())
    return P, pi


def brute_ratio(mech: ScanMechanism) -> Fraction | None:
    """Worst ratio of Definition 1 by enumerating x in states^n and both sides' stop distances."""
    kc, n, p, k = mech.chain, mech.n, mech.p, mech.k
    P, pi = _exact_chain(kc)
    lik: dict[tuple, list[Fraction]] = {}
    for x in itertools.product(range(k), repeat=n):
        px = pi[x[0]]
        for t in range(n - 1):
            px *= P[x[t]][x[t + 1]]
        if px == 0:
            continue
        laws = []
        for name, step in (("left", -1), ("right", 1)):
            S = mech.side(name)
            pos = list(range(p + step, -1 if step < 0 else n, step))
            if S is None:
                laws.append([((), Fraction(1))])
                continue
            c = x[p] if mech.holder else x[pos[0]]
            alive, law = Fraction(1), []
            for d, t in enumerate(pos):
                s = Fraction(float(S[d][c][x[t]])) if d < len(S) else Fraction(1)
                law.append((tuple((u, x[u]) for u in pos[d:]), alive * s))
                alive *= 1 - s
            law.append(((), alive))
            laws.append(law)
        for (o1, w1), (o2, w2) in itertools.product(*laws):
            if w1 * w2 == 0:
                continue
            key = tuple(sorted(o1 + o2))
            vec = lik.setdefault(key, [Fraction(0)] * k)
            vec[x[p]] += px * w1 * w2 / pi[x[p]]
    top: Fraction | None = Fraction(-1)
    for vec in lik.values():
        for a in range(k):
            for b in range(k):
                if a == b or vec[a] == 0:
                    continue
                if vec[b] == 0:
                    return None
                top = max(top, vec[a] / vec[b])
    return top


def _random_scan(rng: np.random.Generator, kc: Chain, n: int, p: int, holder: bool) -> ScanMechanism:
    k = kc.k
    sides = []
    for m in (p, n - 1 - p):
        if m == 0:
            sides.append(None)
            continue
        S = rng.random((m, k, k))
        S[rng.random(S.shape) < 0.25] = 0.0
        S[rng.random(S.shape) < 0.15] = 1.0
        sides.append(S)
    return ScanMechanism(kc, n, p, sides[0], sides[1], holder=holder)


def _random_chain(rng: np.random.Generator, k: int) -> Chain:
    P = rng.random((k, k)) + 0.05
    return Chain(P / P.sum(axis=1, keepdims=True))


@pytest.mark.parametrize("seed", range(12))
def test_leakage_matches_enumeration(seed):
    rng = np.random.default_rng(seed)
    k = 2 + seed % 2
    n = 3 + seed % 3 if k == 2 else 3 + seed % 2
    p = int(rng.integers(0, n))
    kc = _random_chain(rng, k)
    mech = _random_scan(rng, kc, n, p, holder=bool(seed % 3 == 0))
    want = brute_ratio(mech)
    got = scan_leakage(mech)
    exact, _, _, _ = scan_ratio_exact(mech)
    if want is None:
        assert math.isinf(got.leakage) and exact is None
        return
    assert exact == want
    assert got.ratio_lo <= float(want) * (1 + 1e-15) and float(want) <= got.ratio_hi * (1 + 1e-15)
    assert got.leakage == pytest.approx(math.log(want), abs=1e-12)


def test_witness_attains_the_leakage():
    rng = np.random.default_rng(5)
    kc = _random_chain(rng, 3)
    mech = _random_scan(rng, kc, 5, 2, holder=False)
    res = scan_leakage(mech)
    # likelihood of the witness output under the pair, by enumeration of the hidden records
    P, pi = _exact_chain(kc)
    vec = [Fraction(0)] * 3
    w = res.witness.tolist()
    for x in itertools.product(range(3), repeat=5):
        if any(w[t] >= 0 and w[t] != x[t] for t in range(5)):
            continue
        px = pi[x[0]]
        for t in range(4):
            px *= P[x[t]][x[t + 1]]
        prob = Fraction(1)
        for name, step in (("left", -1), ("right", 1)):
            S = mech.side(name)
            pos = list(range(2 + step, -1 if step < 0 else 5, step))
            first = next((d for d, t in enumerate(pos) if w[t] >= 0), None)
            c = x[pos[0]]
            for d, t in enumerate(pos[: len(pos) if first is None else first + 1]):
                s = Fraction(float(S[d][c][x[t]]))
                prob *= s if d == first else 1 - s
        vec[x[2]] += px * prob / pi[x[2]]
    x0, x1 = res.pair
    assert math.log(vec[x0] / vec[x1]) == pytest.approx(res.leakage, abs=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_local_mechanism_is_its_scan_completion(seed):
    rng = np.random.default_rng(100 + seed)
    k, n = 2 + seed % 2, 4 + seed % 3
    p = int(rng.integers(0, n))
    kc = _random_chain(rng, k)
    q = rng.random((n, k))
    q[rng.random((n, k)) < 0.3] = 1.0
    q[p] = 1.0
    sm = local_as_scan(kc, q, p)
    assert scan_leakage(sm).leakage == pytest.approx(leakage(kc, q, p).leakage, abs=1e-11)
    pi = np.array([float(v) for v in kc.exact_stationary()])
    local_utility = float(((1 - q) @ pi).sum() - (1 - q[p]) @ pi) / n
    assert sm.utility() >= local_utility - 1e-12


def test_example1_local_equals_scan():
    # Example 1 of the paper (n = 2, alpha = 0.25, beta = 0.5, eps = 0.5): the only record is at
    # distance 1, where a scan decides on that record alone -- a local mechanism.  Closed form:
    # p2 = Pr(bot | X_2 = 0) solves the all-bot constraint with equality, utility (1 - p2) pi_0 / 2.
    a = math.exp(-0.5)
    p2 = (0.5 * a - 0.25) / (0.75 - 0.5 * a)
    want = (1.0 - p2) * (2.0 / 3.0) / 2.0
    d = design_scan(MarkovChain(0.25, 0.5), 2, eps=0.5, p=0)
    assert want == pytest.approx(0.2936, abs=1e-4)
    assert d.utility == pytest.approx(want, abs=1e-8)
    assert d.certificate.upper_bound >= want - 1e-12
    assert d.certificate.gap <= 1e-6
    assert d.mechanism.right[0][0][0] == pytest.approx(1 - p2, abs=1e-7)
    assert d.mechanism.right[0][1][1] == 0.0


def test_fig3_point():
    # the paper's Fig. 3 setting at eps = 0.5: the certified local optimum is 0.7384 (README's gap table)
    d = design_scan(MarkovChain(0.01, 0.8), 10, eps=0.5, p=0)
    assert round(d.utility, 4) == 0.8716
    assert d.certificate.gap <= 1e-6
    status, _ = verify_mechanism(d.mechanism, 0.5)
    assert status == "certified"
    assert Fraction(brute_ratio_small(d.mechanism)) <= Fraction(math.exp(0.5))


def brute_ratio_small(mech: ScanMechanism) -> Fraction:
    """The exact ratio by the rational pattern evaluator (n = 10 is too many tuples to enumerate)."""
    r, _, _, _ = scan_ratio_exact(mech)
    assert r is not None
    return r


@pytest.mark.parametrize("alpha,beta", [(0.1, 0.3), (0.01, 0.8), (0.3, 0.4)])
def test_eps_to_zero_is_the_strong_stationary_time(alpha, beta):
    # A lazy two-state chain is P = lam I + (1 - lam) 1 pi: each step "refreshes" with probability 1 - lam.
    # At eps -> 0 the best scan publishes from the first refresh after the first record on:
    # Pr(first release at d) = (1 - lam) lam^(d - 2), d >= 2, worth m - d + 1 records.
    lam = 1 - alpha - beta
    n = 7
    m = n - 1
    sst = sum((1 - lam) * lam ** (d - 2) * (m - d + 1) for d in range(2, m + 1)) / n
    d = design_scan(MarkovChain(alpha, beta), n, eps=1e-6, p=0)
    assert d.certificate.upper_bound >= sst - 1e-9
    assert d.utility == pytest.approx(sst, abs=1e-5)


def test_bound_is_above_random_verified_scans():
    rng = np.random.default_rng(7)
    chain = MarkovChain(0.2, 0.3)
    kc = as_kchain(chain)
    eps = 2.0
    d = design_scan(chain, 5, eps=eps, p=0)
    beaten = 0
    for i in range(200):
        mech = _random_scan(rng, kc, 5, 0, holder=False)
        mech = ScanMechanism(kc, 5, 0, None, mech.right * (0.2 + 0.8 * (i % 2)))
        r = brute_ratio(mech)
        if r is not None and r <= Fraction(math.exp(eps)) * (1 - Fraction(1, 10**9)):
            beaten += 1
            assert mech.utility() <= d.certificate.upper_bound
    assert beaten > 5


def test_dual_bound_in_rationals():
    kc = as_kchain(MarkovChain(0.01, 0.8))
    spec = SideSpec(kc, "right", 4, False)
    E = _budget_matrix(2, {pr: Fraction(1, 2) for pr in pairs_of(2)}, upward=True)
    lp = side_program(spec, 4, "exact", E)
    from redactopt.solvers.lp_certificate import solve_lp

    sol = solve_lp(lp)
    coo_ub, coo_eq = lp.A_ub.tocoo(), lp.A_eq.tocoo()
    exact = dual_bound_exact([Fraction(float(v)) for v in lp.c],
                             {(int(i), int(j)): Fraction(float(v)) for i, j, v in zip(coo_ub.row, coo_ub.col, coo_ub.data)},
                             [0] * lp.A_ub.shape[0],
                             {(int(i), int(j)): Fraction(float(v)) for i, j, v in zip(coo_eq.row, coo_eq.col, coo_eq.data)},
                             [Fraction(float(v)) for v in lp.b_eq], [Fraction(float(v)) for v in lp.upper],
                             sol.y_ub, sol.y_eq)
    assert float(exact) <= dual_bound(lp, sol.y_ub, sol.y_eq)
    assert dual_bound(lp, sol.y_ub, sol.y_eq) - float(exact) < 1e-9
    # a deliberately bad dual point still gives a valid (weaker) bound
    worse = dual_bound(lp, sol.y_ub * 0.5, sol.y_eq)
    assert worse >= sol.value - 1e-9


def test_two_sided_verified_and_bounded():
    chain = MarkovChain(0.01, 0.8)
    d = design_scan(chain, 6, eps=0.5, p=2, time_limit=20)
    r = brute_ratio(d.mechanism)
    assert r is not None and r <= Fraction(math.exp(0.5))
    assert d.certificate.upper_bound >= d.utility
    assert d.certificate.gap <= 1e-6
    # every split the search could have chosen is below the bound: try a grid of them by hand
    kc = as_kchain(chain)
    from redactopt.solvers.scan_lp import _SideOracle

    L, R = _SideOracle(SideSpec(kc, "left", 2, False), 2), _SideOracle(SideSpec(kc, "right", 3, False), 3)
    F = Fraction(1, 2)
    for a, b in itertools.product(np.linspace(0, 0.5, 6), repeat=2):
        v = L.upper((Fraction(a), Fraction(b)))[1] + R.upper((F - Fraction(a), F - Fraction(b)))[1]
        assert v / 6 <= d.certificate.upper_bound + 1e-9


def test_classes_grow():
    from redactopt.engine.classes_design import compare_classes

    rows = compare_classes(MarkovChain(0.1, 0.1), 5, eps=1.0, p=0, time_limit=20)
    us = [r.utility for r in rows]
    assert [r.cls for r in rows] == ["local", "scan", "owner", "holder"]
    assert us == sorted(us)
    for r in rows:
        assert r.certificate.upper_bound >= r.utility


def test_json_round_trip_and_errors():
    d = design_scan(MarkovChain(0.01, 0.8), 6, eps=0.5, p=2, time_limit=20)
    obj = json.loads(json.dumps(mechanism_to_dict(d.mechanism, eps=0.5)))
    assert obj["class"] == "scan" and obj["sides"]["left"]["stop"] and obj["private"] == [3]
    mech, claims = mechanism_from_dict(obj)
    assert np.array_equal(mech.left, d.mechanism.left) and np.array_equal(mech.right, d.mechanism.right)
    assert claims["eps"] == 0.5
    one = json.loads(json.dumps(mechanism_to_dict(design_scan(MarkovChain(0.01, 0.8), 4, eps=0.5, p=0).mechanism,
                                                  eps=0.5)))
    assert one["sides"]["left"] is None
    bad = dict(obj, sides={"left": None, "right": obj["sides"]["right"]})
    with pytest.raises(ValueError, match="left"):
        mechanism_from_dict(bad)
    with pytest.raises(ValueError, match="class"):
        mechanism_from_dict(dict(obj, **{"class": "nope"}))


def test_coupled_scans_are_bounded_and_can_beat_independent_sides():
    # "publish both neighbours iff they differ" is a coupled scan (each side stops at distance 1 on
    # what both first records show); on a symmetric chain it is 0-private (test_owner.py), so the
    # coupled bound at a tiny eps is at least its utility 2 alpha (1 - alpha) * 2/3, while scans with
    # independent sides publish nothing at n = 3 (each side's one record is a first-record event).
    from redactopt.solvers.coupled_lp import coupled_scan_bound

    alpha = 0.1
    ub, _ = coupled_scan_bound(MarkovChain(alpha, alpha), 3, eps=1e-6, p=1)
    assert ub >= 2 * alpha * (1 - alpha) * 2 / 3 - 1e-12
    d = design_scan(MarkovChain(alpha, alpha), 3, eps=1e-6, p=1)
    assert d.certificate.upper_bound < 1e-6
    ub2, _ = coupled_scan_bound(MarkovChain(0.01, 0.8), 6, eps=0.5, p=2)
    s = design_scan(MarkovChain(0.01, 0.8), 6, eps=0.5, p=2, time_limit=20)
    assert ub2 >= s.utility


def test_strong_stationary_time_rule_is_zero_private():
    # the rule of docs/beyond_local.md §3: stop at d >= 2 on v with probability (1 - lam) pi_v / Q(c, v)
    alpha, beta, n = Fraction(1, 10), Fraction(3, 10), 6
    lam = 1 - alpha - beta
    kc = Chain([[1 - alpha, alpha], [beta, 1 - beta]])
    Q = [[1 - alpha, alpha], [beta, 1 - beta]]
    pi = [beta / (alpha + beta), alpha / (alpha + beta)]
    S = np.zeros((n - 1, 2, 2))
    for d in range(1, n - 1):
        for c in range(2):
            for v in range(2):
                S[d][c][v] = float((1 - lam) * pi[v] / Q[c][v])
    mech = ScanMechanism(kc, n, 0, None, S)
    # the doubles are not the rationals: the ratio is 1 up to their rounding, and enumeration agrees
    r = brute_ratio(mech)
    assert r is not None and abs(float(r) - 1.0) < 1e-14
    m = n - 1
    want = sum(float((1 - lam) * lam ** (d - 2)) * (m - d + 1) for d in range(2, m + 1)) / n
    assert mech.utility() == pytest.approx(want, abs=1e-14)


def test_hand_written_file_in_the_stated_format():
    # A scan file written by hand from the format of docs/beyond_local.md §8: the strong stationary
    # time rule, S[d-1][c][x] = (1 - lam) pi_x / Q(c, x) for d >= 2 (0 at d = 1); it must audit as
    # 0-private up to the rounding of its doubles, and a one-record change to S must break it.
    from redactopt.classes_io import audit_dict

    a, b = 0.1, 0.3
    lam, pi = 1 - a - b, [b / (a + b), a / (a + b)]
    Q = [[1 - a, a], [b, 1 - b]]
    rows = [[[0.0, 0.0], [0.0, 0.0]]] + [[[(1 - lam) * pi[x] / Q[c][x] for x in (0, 1)] for c in (0, 1)]] * 4
    obj = {"format": "redactopt.class-mechanism/1", "class": "scan", "holder": False, "states": ["0", "1"],
           "chain": {"labels": ["0", "1"], "transition": Q}, "n": 6, "private": [1], "eps": 1e-9,
           "sides": {"left": None, "right": {"stop": rows}}}
    rep = audit_dict(obj)
    assert rep["passed"] and rep["leakage"] < 1e-12
    rows2 = [r for r in rows]
    rows2[2] = [[0.5, 0.5], [0.5, 0.5]]
    assert not audit_dict(dict(obj, sides={"left": None, "right": {"stop": rows2}}))["passed"]


def test_a_lone_private_record_leaks_exactly_nothing_and_the_bound_is_exactly_zero():
    # n = 1: the only output is "all redacted", of probability 1 under every value of X_p
    d = design_scan(MarkovChain(0.1, 0.2), 1, eps=1.0, p=0)
    assert d.leakage.leakage == 0.0 and d.utility == 0.0
    assert d.certificate.upper_bound == 0.0 and d.certificate.gap == 0.0


# --------------------------------------------------------------------------
# swap-symmetric chains: the two-sided split search in rotated coordinates (docs/beyond_local.md §3)
# --------------------------------------------------------------------------
def _brute_utility(mech: ScanMechanism) -> Fraction:
    """Expected number of published records, by enumerating every record tuple and both sides' stops, in rationals."""
    kc, n, p = mech.chain, mech.n, mech.p
    P, pi = _exact_chain(kc)
    total = Fraction(0)
    for x in itertools.product(range(kc.k), repeat=n):
        px = pi[x[0]]
        for t in range(n - 1):
            px *= P[x[t]][x[t + 1]]
        for name, step in (("left", -1), ("right", 1)):
            S = mech.side(name)
            if S is None:
                continue
            pos = list(range(p + step, -1 if step < 0 else n, step))
            c = x[p] if mech.holder else x[pos[0]]
            alive = Fraction(1)
            for d, t in enumerate(pos):
                s = Fraction(float(S[d][c][x[t]])) if d < len(S) else Fraction(1)
                total += px * alive * s * (len(pos) - d)
                alive *= 1 - s
    return total / n


@pytest.mark.parametrize("holder", [False, True])
def test_swapping_the_states_of_a_symmetric_chain_keeps_utility_and_leakage(holder):
    # the lemma the rotated search rests on: on a chain with P(0,1) = P(1,0) the swapped rule
    # S'[d][c][v] = S[d][1-c][1-v] has the same utility and the same worst ratio, by enumeration
    rng = np.random.default_rng(11)
    kc = as_kchain(MarkovChain(0.2, 0.2))
    for _ in range(6):
        mech = _random_scan(rng, kc, 5, 2, holder=holder)
        swap = ScanMechanism(kc, 5, 2, mech.left[:, ::-1, ::-1].copy(), mech.right[:, ::-1, ::-1].copy(), holder=holder)
        assert _brute_utility(swap) == _brute_utility(mech)
        assert brute_ratio(swap) == brute_ratio(mech)


def _rotated_oracles(alpha: float, n: int, p: int, eps: float):
    from redactopt.solvers.scan_lp import _RotatedBoxes, _SideOracle

    kc = as_kchain(MarkovChain(alpha, alpha))
    L = _SideOracle(SideSpec(kc, "left", p, False), p)
    R = _SideOracle(SideSpec(kc, "right", n - 1 - p, False), n - 1 - p)
    assert _RotatedBoxes.applies(L, R, eps)
    return L, R, _RotatedBoxes(L, R, eps)


def test_rotated_box_bounds_hold_at_every_sampled_split():
    # the interpolated bound of a box in (s, d) (general corner budgets, grouped penalty) against the
    # two sides' LP values at random splits inside the box, and at their mirror images (u and v swapped)
    eps = 1.0
    L, R, sb = _rotated_oracles(0.1, 9, 4, eps)
    F = Fraction(eps)
    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(12):
        s0, w = rng.uniform(0.2, 0.8), 10 ** rng.uniform(-3, -1)
        d0, h = rng.uniform(0, 0.1), 10 ** rng.uniform(-4, -1.5)
        lo, hi = np.array([s0 - w, d0]), np.array([s0 + w, d0 + h])
        ub = sb.ub(lo, hi)
        for _ in range(6):
            s, d = rng.uniform(lo[0], hi[0]), rng.uniform(lo[1], hi[1])
            u, v = s - d, s + d
            if not (0 <= u <= eps and 0 <= v <= eps):
                continue
            for a, b in ((u, v), (v, u)):
                val = L.upper((Fraction(a), Fraction(b)))[1] + R.upper((F - Fraction(a), F - Fraction(b)))[1]
                assert val <= ub + 1e-9
                checked += 1
    assert checked > 30


def test_axis_box_bounds_hold_at_every_sampled_split():
    # the same for the axis-parallel boxes of an asymmetric chain (the general interpolation reduces to them)
    from redactopt.solvers.scan_lp import _SideOracle, _SplitBoxes

    eps = 1.0
    kc = as_kchain(MarkovChain(0.1, 0.3))
    L, R = _SideOracle(SideSpec(kc, "left", 4, False), 4), _SideOracle(SideSpec(kc, "right", 4, False), 4)
    sb = _SplitBoxes(L, R, eps)
    F = Fraction(eps)
    rng = np.random.default_rng(5)
    for _ in range(12):
        c, w = rng.uniform(0.1, 0.9, 2), 10 ** rng.uniform(-3, -1, 2)
        lo, hi = np.clip(c - w, 0, eps), np.clip(c + w, 0, eps)
        ub = sb.ub(lo, hi)
        for _ in range(5):
            a = rng.uniform(lo, hi)
            val = L.upper(tuple(Fraction(float(t)) for t in a))[1] + R.upper(tuple(F - Fraction(float(t)) for t in a))[1]
            assert val <= ub + 1e-9


def test_two_sided_symmetric_chain_verified_and_bounded():
    # the rotated search only looks at u <= v; every split on a grid, asymmetric ones included, and
    # random scans verified by enumeration stay below its bound
    chain, n, p, eps = MarkovChain(0.1, 0.1), 6, 2, 1.0
    L, R, _ = _rotated_oracles(0.1, n, p, eps)
    d = design_scan(chain, n, eps=eps, p=p, time_limit=20)
    r = brute_ratio(d.mechanism)
    assert r is not None and r <= Fraction(math.exp(eps))
    assert d.certificate.upper_bound >= float(_brute_utility(d.mechanism)) - 1e-12
    assert d.certificate.gap <= 1e-6
    F = Fraction(eps)
    for a, b in itertools.product(np.linspace(0, eps, 9), repeat=2):
        v = L.upper((Fraction(a), Fraction(b)))[1] + R.upper((F - Fraction(a), F - Fraction(b)))[1]
        assert v / n <= d.certificate.upper_bound + 1e-9
    # random scans near the 0-private strong stationary time rule (docs/beyond_local.md §3), verified by enumeration
    a = Fraction(1, 10)
    sst = [[float(2 * a * Fraction(1, 2) / (1 - a if c == v else a)) for v in (0, 1)] for c in (0, 1)]
    rng = np.random.default_rng(2)
    kc = as_kchain(chain)
    beaten = 0
    for _ in range(60):
        sides = []
        for m in (p, n - 1 - p):
            S = np.clip(np.array([sst] * m) + 0.2 * rng.random((m, 2, 2)), 0.0, 1.0)
            S[0] = 0.0
            sides.append(S)
        mech = ScanMechanism(kc, n, p, sides[0], sides[1])
        rr = brute_ratio(mech)
        if rr is not None and rr <= Fraction(math.exp(eps)):
            beaten += 1
            assert float(_brute_utility(mech)) <= d.certificate.upper_bound
    assert beaten >= 3


@pytest.mark.slow
def test_slowly_mixing_symmetric_chain_meets_the_gap_target():
    # issue 26: alpha = beta = 0.05, n = 100, p in the middle: certified gap <= 1e-6 within 10 s
    import time

    t0 = time.perf_counter()
    d = design_scan(MarkovChain(0.05, 0.05), 100, eps=1.0, p=49, time_limit=10.0)
    assert time.perf_counter() - t0 <= 12.0
    assert d.certificate.gap <= 1e-6


def test_side_program_from_its_pattern_is_the_direct_assembly():
    # the cached pattern only saves work: the same matrices, data errors and vectors to the last bit, and
    # the certificate's parts from the stacked columns bound the same program (sums in another order)
    from redactopt.solvers.lp_certificate import dual_parts, solve_lp
    from redactopt.solvers.scan_lp import _side_program_direct

    rng = np.random.default_rng(1)
    chains = [as_kchain(MarkovChain(0.05, 0.05)), as_kchain(MarkovChain(0.01, 0.8)),
              Chain([[0.5, 0.5, 0.0], [0.2, 0.5, 0.3], [0.0, 0.3, 0.7]])]
    for kc in chains:
        for holder in (False, True):
            spec = SideSpec(kc, "left", 7, holder)
            for W, mode in ((7, "exact"), (4, "relax"), (3, "force")):
                for t in range(2):
                    b = {pr: Fraction(float(rng.uniform(0, 1.5))) for pr in pairs_of(kc.k)}
                    E = _budget_matrix(kc.k, b, upward=True)
                    first = None if t == 0 else np.array([True] + [False] * (kc.k - 1))
                    a, d = side_program(spec, W, mode, E, first), _side_program_direct(spec, W, mode, E, first)
                    for name in ("A_ub", "A_eq", "dA_ub", "dA_eq"):
                        x, y = getattr(a, name), getattr(d, name)
                        assert x.shape == y.shape and (x != y).nnz == 0
                    for name in ("c", "b_ub", "b_eq", "upper", "dc", "db_eq"):
                        assert np.array_equal(getattr(a, name), getattr(d, name))
                    assert a.info["pair_rows"].keys() == d.info["pair_rows"].keys()
                    try:
                        sol = solve_lp(d, bound=False)
                    except RuntimeError:
                        continue
                    (ba, ra), (bd, rd) = dual_parts(a, sol.y_ub, sol.y_eq), dual_parts(d, sol.y_ub, sol.y_eq)
                    assert ba == bd and np.allclose(ra, rd, rtol=0, atol=1e-12)


def test_symmetric_chain_with_the_best_split_at_the_domain_edge():
    # alpha = beta = 0.05, n = 5, eps = 0.1: the best splits give one side all of both budgets (a corner
    # of the domain, where the rotated boxes would meet the edge obliquely); the bound still lies above
    # every split on a grid, both orders of the pair budgets, and the design is verified
    chain, n, p, eps = MarkovChain(0.05, 0.05), 5, 2, 0.1
    L, R, _ = _rotated_oracles(0.05, n, p, eps)
    d = design_scan(chain, n, eps=eps, p=p, time_limit=60)  # ~5 s; the limit leaves room on a loaded machine
    r = brute_ratio(d.mechanism)
    assert r is not None and r <= Fraction(math.exp(eps))
    assert d.certificate.gap <= 1e-6
    F = Fraction(eps)
    for a, b in itertools.product(np.linspace(0, eps, 11), repeat=2):
        v = L.upper((Fraction(a), Fraction(b)))[1] + R.upper((F - Fraction(a), F - Fraction(b)))[1]
        assert v / n <= d.certificate.upper_bound + 1e-9
