import math

import numpy as np
import pytest

from redactopt.model.chain import MarkovChain
from redactopt.model.influence import delta_star
from redactopt.judge.leakage import leakage_bruteforce, utility
from redactopt.paper.mechanisms import (
    default_split,
    markov_quilt,
    markov_quilt_window,
    theorem2_bound,
    three_region,
    three_region_utility,
    window_mechanism,
)

FIG3 = MarkovChain(0.01, 0.8)


def test_three_region_eq1_eq2_by_hand_fig3():
    # p = 1 (0-based 0), eps = 1, whole budget on the right (Appendix E). Influences at distance d:
    # i(X_t=0) = log((pi0 + pi1 lam^d)/(b_d)), i(X_t=1) = log((pi1 + pi0 lam^d)/a_d); by hand:
    # d=1: 0.2136 / 2.996 -> M; d=2: 0.04 / 1.28 -> M; d=3: 0.0078 / 0.38 -> S.
    m = three_region(FIG3, 10, eps=1.0, p=0)
    assert m.info["regions"] == "PMMSSSSSSS"
    pt = math.exp(-1.0 / 2)
    expected = np.zeros((10, 2))
    expected[0] = 1
    expected[1] = expected[2] = [pt, 1.0]
    assert np.array_equal(m.redact_prob, expected)


def test_three_region_split_and_readings():
    assert default_split(10, 0, 1.0) == (0.0, 1.0)
    assert default_split(10, 9, 1.0) == (1.0, 0.0)
    assert default_split(10, 4, 1.0) == (0.5, 0.5)
    alg = three_region(FIG3, 10, eps=1.0, p=0, reading="algorithm2")
    # regions from the whole eps, p_t = exp(-(eps/2)/|R_M|) as Algorithm 2 prints it
    assert alg.info["regions"] == "PMMSSSSSSS"
    assert alg.redact_prob[1, 0] == pytest.approx(math.exp(-0.25))
    thm = three_region(FIG3, 10, eps=1.0, p=0, reading="theorem1")
    assert np.array_equal(thm.redact_prob, alg.redact_prob)
    with pytest.raises(ValueError, match="eps_left"):
        three_region(FIG3, 10, eps=1.0, p=4, eps_left=1.5)


@pytest.mark.parametrize("reading", ["section4", "algorithm2"])
def test_theorem1_utility_equals_exact_utility(reading):
    rng = np.random.default_rng(11)
    for _ in range(300):
        a, b = rng.uniform(0.005, 0.995, 2)
        n = int(rng.integers(1, 40))
        p = int(rng.integers(0, n))
        eps = float(rng.uniform(0.05, 5))
        ch = MarkovChain(a, b)
        m = three_region(ch, n, eps=eps, p=p, reading=reading)
        assert three_region_utility(ch, n, eps=eps, p=p, reading=reading) == pytest.approx(m.utility(), abs=1e-13)


def test_three_region_violates_eps():
    # Found by searching with the exact evaluator; confirmed here by brute force over all 3^10 outputs.
    m = three_region(FIG3, 10, eps=0.5, p=0)
    exact = leakage_bruteforce(FIG3, m.redact_prob, 0).leakage
    assert exact > 0.5 + 0.15
    assert m.leakage().leakage == pytest.approx(exact, abs=1e-12)


def test_three_region_alpha_greater_than_beta_swaps_roles():
    m = three_region(MarkovChain(0.8, 0.01), 10, eps=1.0, p=0)
    mid = [t for t, c in enumerate(m.info["regions"]) if c == "M"]
    assert mid and all(m.redact_prob[t, 0] == 1.0 and m.redact_prob[t, 1] < 1.0 for t in mid)


def test_markov_quilt_as_printed_redacts_one_record_too_many():
    # Fig. 3 setting, eps = 1: Delta*(1) = 3, so Algorithm 1 redacts X_1..X_4 (utility 0.6),
    # yet publishing from distance Delta*(1) = 3 on is already 1-private (window radius 2).
    assert delta_star(FIG3, 1.0) == 3
    mq = markov_quilt(FIG3, 10, eps=1.0, p=0)
    assert markov_quilt_window(FIG3, 10, eps=1.0, p=0) == (0, 3)
    assert mq.utility() == pytest.approx(0.6)
    tighter = window_mechanism(FIG3, 10, p=0, delta_left=0, delta_right=2, eps=1.0, method="window")
    assert leakage_bruteforce(FIG3, tighter.redact_prob, 0).leakage <= 1.0
    assert tighter.utility() == pytest.approx(0.7)


def test_markov_quilt_is_private_and_reflects():
    rng = np.random.default_rng(5)
    for _ in range(100):
        a, b = rng.uniform(0.01, 0.99, 2)
        n = int(rng.integers(2, 12))
        p = int(rng.integers(0, n))
        eps = float(rng.uniform(0.1, 4))
        ch = MarkovChain(a, b)
        m = markov_quilt(ch, n, eps=eps, p=p)
        assert m.leakage().leakage <= eps + 1e-12
        mirrored = markov_quilt(ch, n, eps=eps, p=n - 1 - p)
        assert np.array_equal(m.redact_prob[::-1], mirrored.redact_prob)


def test_theorem2_as_printed_closed_form():
    # p = 1: the "otherwise" case gives 1 - Delta*(eps)/n.
    for eps in (0.25, 0.5, 1, 2, 4):
        assert theorem2_bound(FIG3, 10, eps=eps, p=0) == pytest.approx(1 - delta_star(FIG3, eps) / 10)
    # nothing can be published when eps < I(X_p ~> X_n)
    assert theorem2_bound(MarkovChain(0.01, 0.02), 5, eps=0.01, p=0) == 0.0


def test_example1_erratum():
    # The paper reports nu ≈ 0.15 for p2 = 0.12, computing Pr(X2=0) as alpha/(alpha+beta) = 1/3.
    # With the paper's own stationary law Pr(X=0) = beta/(alpha+beta) = 2/3 the utility is 0.2933.
    ch = MarkovChain(0.25, 0.5)
    q = [[1, 1], [0.12, 1]]
    assert utility(ch, q) == pytest.approx(0.5 * 0.88 * 2 / 3)
    assert 0.5 * 0.88 * 0.25 / 0.75 == pytest.approx(0.1467, abs=1e-4)  # the printed value
    # the smallest private p2 solves (0.5 p2 + 0.5) / (0.25 + 0.75 p2) = e^0.5
    e = math.exp(0.5)
    p2 = (0.5 - 0.25 * e) / (0.75 * e - 0.5)
    assert p2 == pytest.approx(0.1192, abs=1e-4)
    assert leakage_bruteforce(ch, [[1, 1], [p2, 1]], 0).leakage == pytest.approx(0.5, abs=1e-12)
