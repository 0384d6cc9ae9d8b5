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
