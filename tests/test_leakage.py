import math

import numpy as np
import pytest

from redactopt.model.chain import MarkovChain
from redactopt.judge.leakage import (
    leakage,
    leakage_bruteforce,
    max_leakage,
    output_log_ratio,
    utility,
    utility_monte_carlo,
)
from conftest import random_mechanism


def _random_chain(rng):
    kind = rng.integers(0, 4)
    if kind == 0:  # lazy, alpha < beta
        a, b = sorted(rng.uniform(0.005, 0.5, 2))
    elif kind == 1:  # alpha > beta
        b, a = sorted(rng.uniform(0.005, 0.5, 2))
    elif kind == 2:  # oscillating
        a, b = rng.uniform(0.5, 0.995, 2)
    else:
        a, b = rng.uniform(0.01, 0.99, 2)
    return MarkovChain(float(a), float(b))


def test_agrees_with_bruteforce_on_thousands_of_random_mechanisms(rng):
    worst = 0.0
    for trial in range(3000):
        n = int(rng.integers(1, 9))
        p = [0, n - 1, int(rng.integers(0, n))][trial % 3]
        ch = _random_chain(rng)
        q = random_mechanism(rng, n, p)
        fast = leakage(ch, q, p)
        ref = leakage_bruteforce(ch, q, p)
        worst = max(worst, abs(fast.leakage - ref.leakage))
        # the witness is an output of positive probability attaining the leakage
        assert abs(output_log_ratio(ch, q, p, fast.witness)) == pytest.approx(fast.leakage, abs=1e-11)
    assert worst <= 1e-12


@pytest.mark.parametrize("n", [10, 11, 12])
def test_agrees_with_bruteforce_up_to_n12(rng, n):
    for _ in range(3):
        p = int(rng.integers(0, n))
        ch = _random_chain(rng)
        q = random_mechanism(rng, n, p)
        assert leakage(ch, q, p).leakage == pytest.approx(leakage_bruteforce(ch, q, p).leakage, abs=1e-12)


def test_n_equals_one_has_no_leakage():
    ch = MarkovChain(0.3, 0.4)
    r = leakage(ch, [[1.0, 1.0]], 0)
    assert r.leakage == 0.0 and r.witness_output() == [None]


def test_example1_by_hand():
    # n=2, alpha=0.25, beta=0.5, p=1, X_2=1 always redacted, X_2=0 redacted w.p. 0.12.
    ch = MarkovChain(0.25, 0.5)
    q = [[1, 1], [0.12, 1.0]]
    # outputs: Y_2 = ⊥ with ratio (0.12*0.5 + 0.5)/(0.25 + 0.12*0.75); Y_2 = 0 with ratio 0.75/0.5
    expected = max(math.log((0.12 * 0.5 + 0.5) / (0.25 + 0.12 * 0.75)), math.log(1.5))
    r = leakage(ch, q, 0)
    assert r.leakage == pytest.approx(expected, rel=1e-14)
    assert r.witness_output() == [None, None] and r.favoured == 1
    assert utility(ch, q) == pytest.approx(0.5 * 0.88 * (2 / 3), rel=1e-14)


def _sequential_reference(ch, q, p):
    """Straight per-record loop over the patterns of each side (no blocking)."""
    P = ch.transition_matrix

    def side(rows):
        vals = []
        if len(rows) == 0:
            return [0.0]
        U = np.eye(2)
        for k in range(len(rows)):
            A = U @ P
            for v in (0, 1):
                if rows[k][v] < 1:
                    vals.append(math.log(A[0, v] / A[1, v]))
            if rows[k].max() == 0:
                return vals
            U = U @ P @ np.diag(rows[k])
            U = U / U.max()
        s = U.sum(axis=1)
        vals.append(math.log(s[0] / s[1]))
        return vals

    left, right = side(q[:p][::-1]), side(q[p + 1 :])
    return max(max(left) + max(right), -(min(left) + min(right)))


@pytest.mark.parametrize("n", [257, 600, 3000, 70_000])
def test_long_sequences_match_sequential_reference(rng, n):
    for p in (0, n // 3, n - 1):
        ch = _random_chain(rng)
        q = rng.uniform(0.2, 1.0, (n, 2))
        q[rng.random((n, 2)) < 0.05] = 1.0
        q[rng.random(n) < 0.0005] = 0.0  # rare unredactable records cut the patterns
        q[p] = 1.0
        assert leakage(ch, q, p).leakage == pytest.approx(_sequential_reference(ch, q, p), rel=1e-9, abs=1e-12)


def test_tiny_probabilities_count_and_nothing_underflows():
    ch = MarkovChain(0.01, 0.8)
    n = 2000
    q = np.full((n, 2), 1e-300)
    q[:, 1] = 1.0
    q[0] = 1.0
    r = leakage(ch, q, 0)
    assert math.isfinite(r.leakage)
    # a value published with probability 1e-300 still counts: compare with exact 1.0 (never)
    q2 = q.copy()
    q2[1, 0] = 1.0  # X_2 = 0 never published now
    assert leakage(ch, q2, 0).leakage != pytest.approx(r.leakage)


def test_support_of_rare_publication_counts():
    ch = MarkovChain(0.01, 0.8)
    q = np.array([[1, 1], [1, 1], [0, 0]], dtype=float)
    base = leakage(ch, q, 0).leakage
    q[1, 1] = 1 - 1e-12  # publishing X_2 = 1 now has positive probability: leaks log((1-b)/a)
    assert leakage(ch, q, 0).leakage == pytest.approx(math.log(0.2 / 0.01), rel=1e-9)
    assert leakage(ch, q, 0).leakage > base


def test_max_leakage_over_several_private_records(rng):
    ch = MarkovChain(0.1, 0.3)
    q = rng.uniform(0, 1, (9, 2))
    q[[2, 6]] = 1.0
    worst = max_leakage(ch, q, [2, 6])
    assert worst.leakage == pytest.approx(
        max(leakage_bruteforce(ch, q, 2).leakage, leakage_bruteforce(ch, q, 6).leakage), abs=1e-12
    )


@pytest.mark.parametrize(
    "q,p,err,match",
    [
        ([[1, 1], [0.5, 0.2]], 1, ValueError, "private record"),
        ([[1, 1], [0.5, 1.2]], 0, ValueError, r"\[0, 1\]"),
        ([[1, 1], [float("nan"), 0]], 0, ValueError, "finite"),
        ([1, 1, 0], 0, ValueError, "shape"),
        ([[1, 1]], 3, ValueError, "p must be"),
        ("abc", 0, TypeError, "redact_prob"),
        ([[1, 1]], 0.5, TypeError, "integer"),
    ],
)
def test_bad_input(q, p, err, match):
    with pytest.raises(err, match=match):
        leakage(MarkovChain(0.1, 0.2), q, p)


def test_utility_by_hand():
    ch = MarkovChain(0.25, 0.5)  # pi = (2/3, 1/3)
    q = [[1, 1], [0, 0], [0.5, 1], [0, 1]]
    assert utility(ch, q) == pytest.approx((0 + 1 + 0.5 * 2 / 3 + 2 / 3) / 4, rel=1e-14)


def test_monte_carlo_utility_agrees_within_interval():
    ch = MarkovChain(0.2, 0.35)
    q = np.array([[1, 1], [0.3, 0.9], [0, 0.5], [0.7, 0.1], [0, 0]])
    mc = utility_monte_carlo(ch, q, samples=40_000, rng=np.random.default_rng(7), confidence=0.999)
    assert mc.low <= utility(ch, q) <= mc.high
    assert mc.std_error < 0.01


# --------------------------------------------------------------------------
# one leakage for every chain (issue 25): the chain picks the kernel
# --------------------------------------------------------------------------
from fractions import Fraction  # noqa: E402

from redactopt.judge.kernelk import matrix_leakage, side_pairs, side_pairs_logspace  # noqa: E402
from redactopt.judge.leakage import log_likelihood_ratio, log_likelihood_ratios, sample_chains  # noqa: E402
from redactopt.model.chain import Chain  # noqa: E402


def _binary_enumerator(chain, q, p):
    """The binary reference of every version before issue 25: all 3^n outputs, favoured by the sign."""
    q = np.asarray(q, dtype=float)
    n = q.shape[0]
    pi, P = chain.stationary, chain.transition_matrix

    def emission(row):
        return np.array([[1.0 - row[0], 0.0], [0.0, 1.0 - row[1]], [row[0], row[1]]])

    F = np.einsum("yx,x->yx", emission(q[0]), pi)[:, None, :] * np.ones((1, 2, 1))
    if p == 0:
        F = F * np.eye(2)[None, :, :]
    for t in range(1, n):
        F = ((F @ P)[:, None, :, :] * emission(q[t])[None, :, None, :]).reshape(-1, 2, 2)
        if t == p:
            F = F * np.eye(2)[None, :, :]
    joint = F.sum(axis=2)
    idx = np.flatnonzero(joint.sum(axis=1) > 0.0)
    with np.errstate(divide="ignore"):
        logr = np.log(joint[idx, 0] / pi[0]) - np.log(joint[idx, 1] / pi[1])
    j = int(np.argmax(np.abs(logr)))
    code, digits = int(idx[j]), []
    for _ in range(n):
        digits.append(code % 3)
        code //= 3
    return float(abs(logr[j])), 0 if logr[j] >= 0 else 1, [-1 if d == 2 else d for d in reversed(digits)]


def _as_matrix(chain, exact=True):
    a, b = chain.alpha, chain.beta
    if exact:
        A, B = Fraction(a), Fraction(b)
        return Chain([[1 - A, A], [B, 1 - B]], labels=(0, 1))
    return Chain([[1.0 - a, a], [b, 1.0 - b]], labels=(0, 1))


def test_general_bruteforce_is_the_binary_enumerator_for_two_states(rng):
    for _ in range(300):
        n = int(rng.integers(1, 9))
        p = int(rng.integers(0, n))
        ch = _random_chain(rng)
        q = random_mechanism(rng, n, p)
        value, favoured, witness = _binary_enumerator(ch, q, p)
        got = leakage_bruteforce(ch, q, p)
        assert got.leakage == value and got.favoured == favoured and got.witness.tolist() == witness


def test_a_chain_given_as_a_matrix_is_judged_as_the_binary_chain(rng):
    for _ in range(300):
        ch = _random_chain(rng)
        n = int(rng.integers(1, 40))
        p = int(rng.integers(0, n))
        q = random_mechanism(rng, n, p)
        want = leakage(ch, q, p)
        for other in (_as_matrix(ch), _as_matrix(ch, exact=False)):
            assert other.binary and other.alpha == ch.alpha and other.beta == ch.beta
            got = leakage(other, q, p)
            assert (got.leakage, got.pair, got.left_log_ratio, got.right_log_ratio) == \
                (want.leakage, want.pair, want.left_log_ratio, want.right_log_ratio)
            assert np.array_equal(got.witness, want.witness) and got.witness.dtype == np.int8


def test_the_two_kernels_agree_on_binary_chains(rng):
    for _ in range(300):
        ch = _random_chain(rng)
        n = int(rng.integers(1, 30))
        p = int(rng.integers(0, n))
        q = random_mechanism(rng, n, p)
        two = leakage(ch, q, p)
        value, pair, left, right, witness = matrix_leakage(ch, q, p)
        assert value == pytest.approx(two.leakage, rel=1e-10, abs=1e-12)
        for res_pair, w, v in ((two.pair, two.witness, two.leakage), (pair, witness, value)):
            if v > 0:  # each witness attains the leakage for its pair
                assert log_likelihood_ratio(ch, q, p, w, res_pair) == pytest.approx(v, rel=1e-9, abs=1e-11)


def test_two_state_chain_with_an_impossible_transition_goes_through_the_matrix_kernel():
    c = Chain([[0.5, 0.5], [1.0, 0.0]])  # after a 1 always a 0
    q = np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    res = leakage(c, q, 1)
    assert res.leakage == math.inf  # publishing X_3 = 1 (or X_1 = 1) rules X_2 = 1 out
    assert res.leakage == leakage_bruteforce(c, q, 1).leakage
    q = np.array([[0.3, 0.6], [1.0, 1.0], [0.5, 0.2], [0.0, 0.1]])
    assert leakage(c, q, 1).leakage == pytest.approx(leakage_bruteforce(c, q, 1).leakage, rel=1e-12)


@pytest.mark.parametrize("k", [3, 4])
def test_each_side_stops_at_its_first_published_row(rng, k):
    for _ in range(200):
        P = rng.random((k, k)) + 0.05
        P /= P.sum(axis=1, keepdims=True)
        m = int(rng.integers(1, 60))
        Q = rng.random((m, k))
        Q[rng.random((m, k)) < 0.1] = 1.0
        Q[rng.random(m) < 0.08] = 0.0  # rows published with certainty
        stop, full = side_pairs(P, Q), side_pairs_logspace(P, Q)  # the log-space recursion never stops early
        assert np.allclose(stop.best, full.best, rtol=1e-10, atol=1e-12)
        assert stop.q.shape == Q.shape


@pytest.mark.parametrize("k", [3, 4])
def test_windows_against_enumeration(rng, k):
    P = rng.random((k, k)) + 0.05
    c = Chain(P / P.sum(axis=1, keepdims=True))
    n = 8 if k == 3 else 7
    for _ in range(40):
        p = int(rng.integers(0, n))
        q = np.zeros((n, k))
        lo, hi = max(0, p - int(rng.integers(0, 3))), min(n, p + 1 + int(rng.integers(0, 3)))
        q[lo:hi] = rng.random((hi - lo, k))
        q[p] = 1.0
        fast, ref = leakage(c, q, p), leakage_bruteforce(c, q, p)
        assert fast.leakage == pytest.approx(ref.leakage, rel=1e-10, abs=1e-12)
        if 0 < fast.leakage < math.inf:  # the witness reaches beyond the published rows and attains it
            assert log_likelihood_ratio(c, q, p, fast.witness, fast.pair) == pytest.approx(fast.leakage, rel=1e-9)


def test_log_likelihood_ratios_of_a_pair_on_three_states(rng):
    c = Chain([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4]])
    q = rng.random((6, 3))
    q[2] = 1.0
    outputs = rng.integers(-1, 3, size=(20, 6))
    outputs[:, 2] = -1
    for pair in ((0, 1), (2, 0), (1, 2)):
        many = log_likelihood_ratios(c, q, 2, outputs, pair)
        one = [log_likelihood_ratio(c, q, 2, y, pair) for y in outputs]
        assert np.allclose(many, one, rtol=1e-12, atol=1e-12)


def test_sample_chains_keeps_the_binary_draws_and_draws_k_states(rng):
    ch = MarkovChain(0.2, 0.3)
    seed = np.random.default_rng(7)
    x = sample_chains(ch, 50, 40, seed)
    again = np.random.default_rng(7)  # the rule by hand: one uniform per record
    first = again.random(40) < 0.2 / 0.5  # pi_1 = alpha / (alpha + beta)
    assert np.array_equal(x[:, 0], first)
    for t in range(1, 50):
        u = again.random(40)
        assert np.array_equal(x[:, t], np.where(x[:, t - 1] == 1, u >= 0.3, u < 0.2))
    P = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4]])
    y = sample_chains(Chain(P), 200, 500, rng)
    counts = np.zeros((3, 3))
    np.add.at(counts, (y[:, :-1].ravel(), y[:, 1:].ravel()), 1)
    freq = counts / counts.sum(axis=1, keepdims=True)
    assert np.allclose(freq, P, atol=0.01)  # 10^5 transitions: a few 1e-3 of sampling error
    assert np.allclose(np.bincount(y[:, 0], minlength=3) / 500, Chain(P).stationary, atol=0.07)


def test_mechanism_width_follows_the_chain():
    c = Chain([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4]])
    with pytest.raises(ValueError, match="shape"):
        leakage(c, np.ones((3, 2)), 0)
    with pytest.raises(ValueError, match="all ones"):
        leakage(c, np.zeros((3, 3)), 0)
    with pytest.raises(ValueError, match=r"\[1, 1\]"):
        leakage(MarkovChain(0.2, 0.3), np.zeros((3, 2)), 0)
    with pytest.raises(TypeError, match="chain must be a Chain"):
        leakage((0.2, 0.3), np.ones((3, 2)), 0)
    assert utility(c, np.zeros((4, 3))) == 1.0
