import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from redactopt.model.chain import MarkovChain
from redactopt.model.influence import (
    delta_star,
    max_influence,
    pointwise_influence,
    regions,
    set_max_influence,
)
from conftest import matrix_power_P

CHAINS = [(0.01, 0.8), (0.8, 0.01), (0.25, 0.5), (0.6, 0.7), (0.9, 0.3), (0.25, 0.75), (0.003, 0.012), (0.4, 0.4)]


def influence_by_matrix_power(a, b, delta, x):
    Pd = matrix_power_P(a, b, delta)
    return abs(math.log(Pd[0, x] / Pd[1, x]))


@pytest.mark.parametrize("a,b", CHAINS)
def test_proposition1_closed_forms_equal_matrix_powers(a, b):
    ch = MarkovChain(a, b)
    deltas = np.arange(1, 41)
    for x in (0, 1):
        ref = [influence_by_matrix_power(a, b, d, x) for d in deltas]
        assert pointwise_influence(ch, deltas, x) == pytest.approx(ref, rel=1e-9, abs=1e-13)
        assert pointwise_influence(ch, 3, x) == pytest.approx(ref[2], rel=1e-9, abs=1e-13)
    ref_max = [max(influence_by_matrix_power(a, b, d, 0), influence_by_matrix_power(a, b, d, 1)) for d in deltas]
    assert max_influence(ch, deltas) == pytest.approx(ref_max, rel=1e-9, abs=1e-13)


def test_table1_likelihood_ratios_exact():
    # Table I: alpha = 1/4, beta = 1/2, ratios Pr(X2=x2|X1=x)/Pr(X2=x2|X1=x̄) by hand.
    a, b = Fraction(1, 4), Fraction(1, 2)
    P = [[1 - a, a], [b, 1 - b]]
    table = {(x, x2): P[x][x2] / P[1 - x][x2] for x in (0, 1) for x2 in (0, 1)}
    assert table == {(0, 0): Fraction(3, 2), (0, 1): Fraction(1, 2), (1, 0): Fraction(2, 3), (1, 1): Fraction(2, 1)}
    ch = MarkovChain(0.25, 0.5)
    assert pointwise_influence(ch, 1, 0) == pytest.approx(math.log(3 / 2), rel=1e-14)
    assert pointwise_influence(ch, 1, 1) == pytest.approx(math.log(2), rel=1e-14)
    assert max_influence(ch, 1) == pytest.approx(math.log(2), rel=1e-14)


def test_low_value_has_lower_influence_and_roles_swap():
    for a, b in CHAINS:
        ch = MarkovChain(a, b)
        d = np.arange(1, 30)
        i0, i1 = pointwise_influence(ch, d, 0), pointwise_influence(ch, d, 1)
        if a < b:
            assert np.all(i0 <= i1 + 1e-15)
        elif a > b:
            assert np.all(i1 <= i0 + 1e-15)


def test_oscillating_chain_flips_the_favoured_value_and_max_is_monotone():
    # For alpha + beta > 1 the signed log-ratio log P^d[0,x]/P^d[1,x] alternates in sign with d:
    # which value of X_p an observation favours oscillates, while the max-influence decreases.
    a, b = 0.9, 0.3
    signs = [np.sign(math.log(matrix_power_P(a, b, d)[0, 0] / matrix_power_P(a, b, d)[1, 0])) for d in range(1, 8)]
    assert signs == [-1, 1, -1, 1, -1, 1, -1]
    d = np.arange(1, 30)
    for a, b in CHAINS:
        m = max_influence(MarkovChain(a, b), d)
        assert np.all(np.diff(m) <= 1e-15)


def delta_star_brute(a, b, eps):
    d = 1
    while True:
        Pd = matrix_power_P(a, b, d)
        if max(abs(math.log(Pd[0, x] / Pd[1, x])) for x in (0, 1)) <= eps:
            return d
        d += 1


@pytest.mark.parametrize("a,b", CHAINS)
@pytest.mark.parametrize("eps", [0.01, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0])
def test_delta_star_is_first_publishable_distance(a, b, eps):
    if a + b < 0.1 and eps < 0.1:
        pytest.skip("brute force too long")
    assert delta_star(MarkovChain(a, b), eps) == delta_star_brute(a, b, eps)


def test_delta_star_huge():
    ch = MarkovChain(1e-7, 2e-7)
    d = delta_star(ch, 1e-3)
    assert max_influence(ch, d) <= 1e-3 < max_influence(ch, d - 1)
    assert d > 10**6


def test_delta_star_rejects_bad_eps():
    ch = MarkovChain(0.1, 0.2)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="eps"):
            delta_star(ch, bad)


def set_influence_brute(a, b, n, p, S):
    """Enumerate all joint values of X_S: log max_x Pr(x_S|x)/Pr(x_S|x̄)."""
    pi = np.array([b, a]) / (a + b)
    P = np.array([[1 - a, a], [b, 1 - b]])
    best = 0.0
    cond = {0: {}, 1: {}}
    for xs in itertools.product((0, 1), repeat=n):
        pr = pi[xs[0]] * np.prod([P[xs[t], xs[t + 1]] for t in range(n - 1)])
        key = tuple(xs[s] for s in S)
        cond[xs[p]][key] = cond[xs[p]].get(key, 0.0) + pr / pi[xs[p]]
    for key in cond[0]:
        best = max(best, abs(math.log(cond[0][key] / cond[1][key])))
    return best


@pytest.mark.parametrize("a,b", [(0.2, 0.5), (0.7, 0.6), (0.5, 0.1)])
def test_set_max_influence_by_enumeration(a, b):
    n = 7
    rng = np.random.default_rng(3)
    ch = MarkovChain(a, b)
    for _ in range(15):
        p = int(rng.integers(0, n))
        others = [t for t in range(n) if t != p]
        S = sorted(rng.choice(others, size=int(rng.integers(1, 4)), replace=False).tolist())
        assert set_max_influence(ch, p, S, n=n) == pytest.approx(set_influence_brute(a, b, n, p, S), rel=1e-10)
    assert set_max_influence(ch, 2, []) == 0.0
    assert set_max_influence(ch, 2, [2, 3]) == math.inf


def test_regions_by_definition():
    a, b, n = 0.01, 0.8, 10
    ch = MarkovChain(a, b)
    for p in (0, 4, 9):
        for el, er in ((0.5, 0.5), (1.0, 0.0), (0.2, 0.8)):
            reg = regions(ch, n, p, el, er)
            for t in range(n):
                if t == p:
                    assert reg.labels[t] == "P"
                    continue
                budget = el if t < p else er
                i0 = influence_by_matrix_power(a, b, abs(t - p), 0)
                i1 = influence_by_matrix_power(a, b, abs(t - p), 1)
                want = "S" if max(i0, i1) <= budget else ("M" if min(i0, i1) <= budget else "L")
                assert reg.labels[t] == want


def test_regions_fig3_setting():
    # alpha=0.01, beta=0.8, p=1, eps=1 (whole budget on the right): i(X_t=0) at distance 1 is
    # log((1-a)/b) = 0.2136 <= 1 < i(X_t=1) = log((1-b)/a) = 2.996 -> M; S from distance 3 on.
    reg = regions(MarkovChain(0.01, 0.8), 10, 0, 0.0, 1.0)
    assert "".join(reg.labels) == "PMMSSSSSSS"
    assert reg.low_value == 0
    assert regions(MarkovChain(0.8, 0.01), 10, 0, 0.0, 1.0).low_value == 1


# --------------------------------------------------------------------------
# one influence API for every chain (issue 25)
# --------------------------------------------------------------------------
from redactopt.model.chain import Chain  # noqa: E402
from redactopt.model.influence import (  # noqa: E402
    pair_log_ratios,
    provably_above,
    side_log_ratio_maxima,
    window_terms,
)

P3_IRREVERSIBLE = [[0.1, 0.8, 0.1], [0.1, 0.1, 0.8], [0.8, 0.1, 0.1]]


def _exact_power(rows: list[list[Fraction]], d: int) -> list[list[Fraction]]:
    k = len(rows)
    out = [[Fraction(int(i == j)) for j in range(k)] for i in range(k)]
    for _ in range(d):
        out = [[sum(out[i][m] * rows[m][j] for m in range(k)) for j in range(k)] for i in range(k)]
    return out


def _terms_by_hand(rows: list[list[Fraction]], d: int) -> np.ndarray:
    """ell(d)[x, x'] = max_v log P^d[x, v] / P^d[x', v], from rational powers (every entry positive)."""
    Pd = _exact_power(rows, d)
    k = len(rows)
    return np.array([[0.0 if x == y else max(math.log(Pd[x][v] / Pd[y][v]) for v in range(k)) for y in range(k)]
                     for x in range(k)])


def _matrix_form(a: float, b: float, labels=(0, 1)) -> Chain:
    A, B = Fraction(a), Fraction(b)
    return Chain([[1 - A, A], [B, 1 - B]], labels=labels)


@pytest.mark.parametrize("a,b", CHAINS)
def test_matrix_form_gives_the_binary_influences_bit_for_bit(a, b):
    binary, matrix = MarkovChain(a, b), _matrix_form(a, b, labels=("no", "yes"))
    d = np.arange(1, 90)
    for x in (0, 1):
        assert np.array_equal(pointwise_influence(matrix, d, x), pointwise_influence(binary, d, x))
    assert np.array_equal(max_influence(matrix, d), max_influence(binary, d))
    for side in ("left", "right"):
        assert np.array_equal(pointwise_influence(matrix, 5, side=side), pointwise_influence(binary, 5, side=side))
        assert np.array_equal(window_terms(matrix, 40, side), window_terms(binary, 40, side))
    for eps in (0.05, 0.5, 2.0):
        assert delta_star(matrix, eps) == delta_star(binary, eps) == delta_star(matrix, eps, side="left")


@pytest.mark.parametrize("a,b", [(0.2, 0.3), (0.6, 0.7), (0.05, 0.1)])
def test_two_state_window_terms_by_hand(a, b):
    A, B = Fraction(a), Fraction(b)
    rows = [[1 - A, A], [B, 1 - B]]
    t = window_terms(MarkovChain(a, b), 12)
    assert t.shape == (13, 2, 2) and not t[12].any()
    for d in range(1, 13):
        assert t[d - 1] == pytest.approx(_terms_by_hand(rows, d), rel=1e-10, abs=1e-13)
    ell = side_log_ratio_maxima(MarkovChain(a, b), 12)
    assert np.array_equal(t[:12, 0, 1], ell[:, 0]) and np.array_equal(t[:12, 1, 0], ell[:, 1])
    r = pair_log_ratios(MarkovChain(a, b), 3)
    assert r.shape == (3, 2, 2, 2)
    assert r[1, 0, 0, 1] == pytest.approx(math.log(_exact_power(rows, 2)[0][0] / _exact_power(rows, 2)[1][0]))


def test_three_states_by_hand_and_both_sides():
    c = Chain(P3_IRREVERSIBLE)
    assert not c.is_reversible
    rows = [list(r) for r in c.exact]
    rev = [list(r) for r in c.reversed().exact]
    for d in (1, 2, 5):
        right, left = _terms_by_hand(rows, d), _terms_by_hand(rev, d)
        assert window_terms(c, 6, "right")[d - 1] == pytest.approx(right, rel=1e-10, abs=1e-13)
        assert window_terms(c, 6, "left")[d - 1] == pytest.approx(left, rel=1e-10, abs=1e-13)
        per_value = [max(math.log(_exact_power(rows, d)[x][v] / _exact_power(rows, d)[y][v])
                         for x in range(3) for y in range(3) if x != y) for v in range(3)]
        assert pointwise_influence(c, d) == pytest.approx(per_value, rel=1e-10)
        assert pointwise_influence(c, [d, d + 1], 2)[0] == pytest.approx(per_value[2], rel=1e-10)
        assert max_influence(c, d) == pytest.approx(max(per_value), rel=1e-10)
    # a set {p - 2, p + 3}: max over pairs of the left term at 2 and the right term at 3
    want = max(_terms_by_hand(rev, 2)[x, y] + _terms_by_hand(rows, 3)[x, y]
               for x in range(3) for y in range(3) if x != y)
    assert set_max_influence(c, 10, [8, 13, 20]) == pytest.approx(want, rel=1e-10)
    assert set_max_influence(c, 10, [10]) == math.inf and set_max_influence(c, 10, []) == 0.0


def test_three_state_delta_star_is_the_later_side():
    c = Chain(P3_IRREVERSIBLE)
    for eps in (0.1, 0.5, 1.0):
        left, right = delta_star(c, eps, side="left"), delta_star(c, eps, side="right")
        for side, d in (("left", left), ("right", right)):
            assert max_influence(c, d, side=side) <= eps
            assert d == 1 or max_influence(c, d - 1, side=side) > eps
        assert delta_star(c, eps) == max(left, right)


def test_a_two_state_chain_with_an_impossible_transition_uses_the_matrix_kernel():
    c = Chain([[0.5, 0.5], [1.0, 0.0]])  # beta = 1: state 1 is always followed by 0
    assert c.k == 2 and not c.binary and c.beta == 1.0
    assert pointwise_influence(c, 1, 1) == math.inf  # X_{p+1} = 1 rules X_p = 1 out
    rows = [list(r) for r in c.exact]
    assert pointwise_influence(c, 2, 0) == pytest.approx(
        max(math.log(_exact_power(rows, 2)[x][0] / _exact_power(rows, 2)[y][0]) for x, y in ((0, 1), (1, 0))))
    with pytest.raises(ValueError, match="binary record"):
        regions(c, 5, 2, 0.5, 0.5)


def test_regions_refuse_more_states():
    with pytest.raises(ValueError, match="3R regions are defined through the two values of a binary record"):
        regions(Chain(P3_IRREVERSIBLE), 5, 2, 0.5, 0.5)


def test_provably_above_with_and_without_the_product_error():
    assert not provably_above(1.0 + 5e-10, 1.0) and provably_above(1.0 + 2e-9, 1.0)
    # with the matrix-product error of distance 10 on 3 states (4 * 11 * 3 ulps + 1e-15)
    band = 1.0 * 1e-9 + 4 * 11 * 3 * 2.0**-52 + 1e-15
    assert not provably_above(1.0 + band * 0.999, 1.0, delta=10, k=3)
    assert provably_above(1.0 + band * 1.001, 1.0, delta=10, k=3)
