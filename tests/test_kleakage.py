"""k-state chains (issue 17): the model and the exact leakage, against independent references.

References: enumeration of all (k+1)^n outputs in floats (``kleakage_bruteforce``: forward chain
only, no patterns, no reversed chain) and in rationals (``exact_kleakage_bruteforce``); the
rational pattern evaluator ``exact_kleakage``; the binary path (``MarkovChain``) for k = 2; and
hand-worked examples.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from redactopt.judge.exact import exact_leakage_ratio
from redactopt.judge.exact import certify_exact, exact_leakage, exact_leakage_bruteforce, exact_n_step
from redactopt.judge.leakage import leakage, leakage_bruteforce, log_likelihood_ratio, max_leakage, utility
from redactopt.judge.kernelk import side_pairs, side_pairs_logspace
from redactopt.model.chain import MarkovChain
from redactopt.model.chain import Chain, parse_transition


def close(a: float, b: float, rtol: float = 1e-9) -> bool:
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= rtol * (1.0 + abs(b))


def random_chain(rng: np.random.Generator, k: int, zero_frac: float = 0.3) -> Chain:
    """A random irreducible aperiodic chain with some exact zero transitions."""
    while True:
        P = rng.random((k, k))
        P[rng.random((k, k)) < zero_frac] = 0.0
        if np.any(P.sum(axis=1) == 0.0):
            continue
        try:
            return Chain(P / P.sum(axis=1, keepdims=True))
        except ValueError:
            continue


def random_q(rng: np.random.Generator, n: int, k: int, p: int) -> np.ndarray:
    q = rng.random((n, k))
    u = rng.random((n, k))
    q[u < 0.2] = 0.0
    q[u > 0.8] = 1.0
    q[p] = 1.0
    return q


#: A non-reversible 3-state chain (a rotation with some laziness): pi is uniform, P != P~.
ROTATION = [[Fraction(1, 10), Fraction(7, 10), Fraction(2, 10)],
            [Fraction(2, 10), Fraction(1, 10), Fraction(7, 10)],
            [Fraction(7, 10), Fraction(2, 10), Fraction(1, 10)]]


# --------------------------------------------------------------------------
# the model
# --------------------------------------------------------------------------
def test_stationary_and_reversal_exact():
    c = Chain(ROTATION, labels=("a", "b", "c"))
    assert c.exact_stationary() == (Fraction(1, 3),) * 3
    assert np.allclose(c.stationary, 1 / 3, rtol=1e-15)
    assert not c.is_reversible
    # P~ = diag(pi)^-1 P^T diag(pi) = P^T here (uniform pi)
    assert np.allclose(c.reversed_matrix(), np.array(ROTATION, dtype=float).T, rtol=1e-15)
    assert c.reversed().exact_transition() == tuple(tuple(ROTATION[y][x] for y in range(3)) for x in range(3))
    # a binary chain is always reversible
    assert Chain.from_binary(MarkovChain(0.01, 0.8)).is_reversible


def test_stationary_law_random(rng):
    for k in (2, 3, 4, 6):
        c = random_chain(rng, k)
        pi = c.stationary
        assert np.allclose(pi @ c.transition, pi, rtol=1e-12, atol=0)
        assert abs(pi.sum() - 1) < 1e-14 and np.all(pi > 0)
        ex = c.exact_stationary()
        P = c.exact_transition()
        assert all(sum(ex[x] * P[x][y] for x in range(k)) == ex[y] for y in range(k))
        assert np.allclose([float(v) for v in ex], pi, rtol=1e-13)


def test_n_step_matrices(rng):
    c = random_chain(rng, 4)
    for d in (1, 2, 5, 17):
        assert np.allclose(c.n_step_matrix(d), np.linalg.matrix_power(c.transition, d), rtol=1e-12)
        assert np.allclose(c.n_step_matrix(d, reverse=True),
                           np.linalg.matrix_power(c.reversed_matrix(), d), rtol=1e-12)
        ex = exact_n_step(c, d)
        assert np.allclose(np.array(ex, dtype=float), c.n_step_matrix(d), rtol=1e-12)
    ms = c.n_step_matrices(6)
    assert np.allclose(ms[5], np.linalg.matrix_power(c.transition, 6), rtol=1e-12)


def test_from_binary_matches_markov_chain():
    mc = MarkovChain(0.01, 0.8)
    kc = Chain.from_binary(mc)
    assert np.array_equal(kc.transition, mc.transition_matrix)
    assert np.allclose(kc.stationary, mc.stationary, rtol=1e-14)
    assert kc.labels == (0, 1)


@pytest.mark.parametrize("matrix, message", [
    ([[0.5, 0.4], [0.2, 0.8]], "row 0 sums to"),
    ([[1.2, -0.2], [0.3, 0.7]], "is negative"),
    ([[1.0, 0.0], [0.3, 0.7]], "reducible"),
    ([[0.0, 1.0], [1.0, 0.0]], "periodic with period 2"),
    ([[0, 1, 0], [0, 0, 1], [1, 0, 0]], "periodic with period 3"),
    ([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]], "reducible"),
    ([[0.5, 0.5, 0.0], [0.5, 0.5]], "square"),
    ([[0.5, 0.5]], "square"),
    ([[1.0]], "k >= 2"),
    ([[float("nan"), 1.0], [0.5, 0.5]], "finite"),
    ([[Fraction(1, 3), Fraction(1, 3)], [Fraction(1, 2), Fraction(1, 2)]], "not exactly 1"),
    ("0.5,0.5;0.5,0.5", "string"),
])
def test_bad_matrices_are_one_line_errors(matrix, message):
    with pytest.raises((ValueError, TypeError)) as info:
        Chain(matrix)
    text = str(info.value)
    assert message in text and "\n" not in text


def test_bad_labels():
    with pytest.raises(ValueError, match="labels must name the 2 states"):
        Chain([[0.5, 0.5], [0.5, 0.5]], labels=("a",))
    with pytest.raises(ValueError, match="distinct"):
        Chain([[0.5, 0.5], [0.5, 0.5]], labels=("a", "a"))


def test_labels_from_numpy_and_mixed_types():
    M = [[0.5, 0.5], [0.3, 0.7]]
    c = Chain(M, labels=np.array(["x", "y"]))  # used to fail inside numpy
    assert c.labels == ("x", "y") and type(c.labels[0]) is str and c.state_index("y") == 1
    assert Chain(M, labels=np.array([3, 5])).labels == (3, 5)
    # distinct as text, so two states: the lookup prefers the label of the same type
    assert Chain(M, labels=(1.0, 1)).state_index(1) == 1
    assert Chain(M, labels=(1.0, 1)).state_index(1.0) == 0
    assert Chain(M, labels=(True, 1)).state_index(1) == 1
    assert Chain(M, labels=(True, 1)).state_index("True") == 0


def test_exact_evaluators_take_numpy_indices_and_refuse_flat_rows():
    c = Chain([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.4, 0.5]])
    q = [[0.5, 0, 0], [1, 1, 1]]
    assert exact_leakage(c, q, np.int64(1)) == exact_leakage(c, q, 1)
    assert certify_exact(c, q, np.int64(1), 3.0).status == certify_exact(c, q, [1], 3.0).status == "certified"
    with pytest.raises(ValueError, match="0-based index in 0..1, got 2"):
        exact_leakage(c, q, 2)
    with pytest.raises(ValueError, match="n rows of 3 numbers"):
        exact_leakage(c, [1, 1, 1], 0)


def test_log_likelihood_ratio_validates_pair_and_output():
    c = Chain([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.4, 0.5]])
    q = np.array([[0.5, 0.5, 0.5], [1, 1, 1], [0, 0.2, 1]])
    for pair in ((0, -1), (0, 5), (0,), (True, 1)):
        with pytest.raises(ValueError, match="pair must be two state indices"):
            log_likelihood_ratio(c, q, 1, [0, -1, 0], pair)
    with pytest.raises(ValueError, match="output must hold 3 state indices"):
        log_likelihood_ratio(c, q, 1, [0.7, -1, 0], (0, 1))
    assert log_likelihood_ratio(c, q, 1, [0.0, -1, 0], (0, 1)) == log_likelihood_ratio(c, q, 1, [0, -1, 0], (0, 1))


def test_rows_within_tolerance_are_normalised():
    c = Chain([[0.1, 0.2, 0.7], [0.3, 0.3, 0.4], [0.25, 0.25, 0.5]])
    assert np.allclose(c.transition.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    assert all(sum(r) == 1 for r in c.exact_transition())


def test_parse_transition():
    assert parse_transition("0.9,0.1;0.2,0.8") == [[0.9, 0.1], [0.2, 0.8]]
    for text, msg in (("0.9,0.1;0.2", "square"), ("0.9,,0.1;0.2,0.8", "empty item"),
                      ("0.9,x;0.2,0.8", "not a list of numbers"), ("", "needs rows")):
        with pytest.raises(ValueError, match=msg):
            parse_transition(text)


# --------------------------------------------------------------------------
# the leakage against enumeration
# --------------------------------------------------------------------------
def test_hand_worked_one_record_each_side():
    """n = 3, p = 1, q = (0, 1, 0): the output is (X_0, ⊥, X_2).

    Pr(X_0 = u, X_2 = v | X_1 = x) = P~[x, u] P[x, v], so the worst log-ratio is
    max over pairs of max_u log P~[x,u]/P~[x',u] + max_v log P[x,v]/P[x',v].
    """
    c = Chain(ROTATION)
    P = np.array(ROTATION, dtype=float)
    Pr = P.T  # uniform pi
    want = max(np.max(np.log(Pr[x] / Pr[y])) + np.max(np.log(P[x] / P[y]))
               for x in range(3) for y in range(3) if x != y)
    q = np.array([[0.0] * 3, [1.0] * 3, [0.0] * 3])
    res = leakage(c, q, 1)
    assert close(res.leakage, want, 1e-13)
    # pair (0, 1): right max_v P[0,v]/P[1,v] = 0.7/0.1, left max_u P~[0,u]/P~[1,u] = 0.7/0.2
    assert close(res.leakage, math.log(7 * 3.5), 1e-13)
    # reading the left side with P (the binary shortcut) would give log(7 * 7)
    x, y = res.pair
    assert log_likelihood_ratio(c, q, 1, res.witness, res.pair) == pytest.approx(res.leakage, rel=1e-13)
    assert Pr[x, res.witness[0]] / Pr[y, res.witness[0]] == pytest.approx(3.5)


def test_non_reversible_left_side_uses_reversed_chain():
    """A left-only mechanism on a non-reversible chain: P~ gives the brute-force answer, P does not."""
    P = np.array([[0.5, 0.4, 0.1], [0.1, 0.5, 0.4], [0.6, 0.1, 0.3]])
    c = Chain(P)
    assert not c.is_reversible
    q = np.array([[0.3, 0.9, 0.0], [0.5, 0.2, 1.0], [1.0, 1.0, 1.0]])
    brute = leakage_bruteforce(c, q, 2)
    res = leakage(c, q, 2)
    assert close(res.leakage, brute.leakage)
    # the same rows read with P on the left (the binary shortcut) give a different number
    wrong = side_pairs(c.transition, q[:2][::-1]).best
    assert float(np.max(wrong)) > brute.leakage + 1e-3
    assert exact_leakage(c, q.tolist(), 2).leakage == pytest.approx(brute.leakage, rel=1e-12)


@pytest.mark.parametrize("k, n_max", [(3, 7), (4, 6)])
def test_bruteforce_random(rng, k, n_max):
    """k = 3, n <= 7 and k = 4, n <= 6 ((k+1)^n outputs): exact 0/1 entries, zeros in P."""
    for _ in range(300 if k == 3 else 150):
        c = random_chain(rng, k)
        n = int(rng.integers(1, n_max + 1))
        p = int(rng.integers(0, n))
        q = random_q(rng, n, k, p)
        res = leakage(c, q, p)
        ref = leakage_bruteforce(c, q, p)
        assert close(res.leakage, ref.leakage), (c.transition.tolist(), q.tolist(), p)
        if res.leakage > 0:
            w = log_likelihood_ratio(c, q, p, res.witness, res.pair)
            assert close(w, res.leakage, 1e-8)


def test_bruteforce_n7_k4(rng):
    """The largest case the issue names: k = 4, n = 7 (78 125 outputs)."""
    for _ in range(4):
        c = random_chain(rng, 4)
        p = int(rng.integers(0, 7))
        q = random_q(rng, 7, 4, p)
        assert close(leakage(c, q, p).leakage, leakage_bruteforce(c, q, p).leakage)


def test_rational_evaluator_against_rational_bruteforce(rng):
    for _ in range(60):
        k = int(rng.integers(2, 5))
        c = random_chain(rng, k)
        n = int(rng.integers(1, 5 if k < 4 else 4))
        p = int(rng.integers(0, n))
        q = random_q(rng, n, k, p)
        a = exact_leakage(c, q.tolist(), p)
        b = exact_leakage_bruteforce(c, q.tolist(), p)
        assert a.ratio == b.ratio
        assert close(leakage(c, q, p).leakage, a.leakage)


def test_infinite_leakage():
    """A zero in P lets a published neighbour rule a private value out."""
    P = [[0.5, 0.5, 0.0], [0.2, 0.3, 0.5], [0.4, 0.1, 0.5]]
    c = Chain(P)
    q = np.array([[1.0] * 3, [0.0] * 3])
    res = leakage(c, q, 0)
    assert res.leakage == math.inf
    assert leakage_bruteforce(c, q, 0).leakage == math.inf
    assert exact_leakage(c, q.tolist(), 0).ratio is None
    assert certify_exact(c, q.tolist(), [0], 5).status == "violated"
    # the witness shows state 2 next to the private record, impossible after X_p = 0
    assert res.witness[1] == 2 and res.pair[1] == 0
    assert log_likelihood_ratio(c, q, 0, res.witness, res.pair) == math.inf
    # redacting state 2 always and the others sometimes makes it finite
    q[1] = [0.5, 0.5, 1.0]
    # worst output: record 1 shows state 1, P[0, 1] / P[2, 1] = 0.5 / 0.1
    assert leakage(c, q, 0).leakage == pytest.approx(math.log(5.0), rel=1e-13)
    assert math.isfinite(leakage(c, q, 0).leakage)


@given(st.integers(2, 4), st.integers(1, 5), st.data())
def test_property_against_bruteforce(k, n, data):
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    c = random_chain(rng, k, zero_frac=data.draw(st.sampled_from([0.0, 0.3, 0.5])))
    p = data.draw(st.integers(0, n - 1))
    entry = st.one_of(st.just(0.0), st.just(1.0), st.floats(1e-6, 1.0), st.floats(1e-12, 1e-6))
    rows = data.draw(st.lists(st.lists(entry, min_size=k, max_size=k), min_size=n, max_size=n))
    q = np.array(rows, dtype=float)
    q[p] = 1.0
    assert close(leakage(c, q, p).leakage, leakage_bruteforce(c, q, p).leakage, 1e-8)


@given(st.integers(2, 4), st.integers(1, 6), st.data())
def test_property_tiny_entries_against_rational(k, n, data):
    """Entries down to 1e-300 take the log-space path; the rational evaluator has no range limit."""
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    c = random_chain(rng, k)
    p = data.draw(st.integers(0, n - 1))
    entry = st.one_of(st.just(0.0), st.just(1.0), st.floats(1e-300, 1.0, allow_subnormal=False))
    rows = data.draw(st.lists(st.lists(entry, min_size=k, max_size=k), min_size=n, max_size=n))
    q = np.array(rows, dtype=float)
    q[p] = 1.0
    ex = exact_leakage(c, q.tolist(), p)
    assert close(leakage(c, q, p).leakage, ex.leakage, 1e-8)


# --------------------------------------------------------------------------
# k = 2 is the binary path
# --------------------------------------------------------------------------
def test_k2_equals_binary(rng):
    for _ in range(300):
        a, b = rng.uniform(1e-3, 1 - 1e-3, 2)
        mc = MarkovChain(float(a), float(b))
        kc = Chain.from_binary(mc)
        n = int(rng.integers(1, 12))
        p = int(rng.integers(0, n))
        q = random_q(rng, n, 2, p)
        # the rational evaluators agree exactly (same exact chain, same doubles)
        assert exact_leakage_ratio(a, b, q.tolist(), p) == exact_leakage(kc, q.tolist(), p).ratio
        # the float evaluators agree to rounding
        lb, lk = leakage(mc, q, p), leakage(kc, q, p)
        assert close(lk.leakage, lb.leakage, 1e-12)
        assert utility(kc, q) == pytest.approx(float(((1 - q) @ mc.stationary).mean()), rel=1e-14)


def test_k2_long_sequence_equals_binary(rng):
    mc = MarkovChain(0.003, 0.012)
    kc = Chain.from_binary(mc)
    n = 20_000
    q = rng.random((n, 2)) * 0.5 + 0.5
    q[:5000] = 0.0
    q[10_000] = 1.0
    assert close(leakage(kc, q, 10_000).leakage, leakage(mc, q, 10_000).leakage, 1e-10)


# --------------------------------------------------------------------------
# long sequences: blocked path, log-space path, per-record forward pass
# --------------------------------------------------------------------------
def test_blocked_equals_logspace_long(rng):
    c = random_chain(rng, 4)
    for m in (1, 7, 64, 1000, 5003):
        Q = rng.random((m, 4))
        Q[rng.random((m, 4)) < 0.1] = 1.0
        Q[rng.random((m, 4)) < 0.05] = 0.0
        a, b = side_pairs(c.transition, Q), side_pairs_logspace(c.transition, Q)
        fin = np.isfinite(b.best)
        assert np.array_equal(fin, np.isfinite(a.best))
        assert np.allclose(a.best[fin], b.best[fin], rtol=1e-9, atol=1e-12)


def test_witness_long_sequence(rng):
    c = random_chain(rng, 3)
    n, p = 3000, 1700
    q = rng.random((n, 3)) * 0.9
    q[p] = 1.0
    res = leakage(c, q, p)
    w = log_likelihood_ratio(c, q, p, res.witness, res.pair)
    assert close(w, res.leakage, 1e-8)


def test_kmax_leakage_and_utility(rng):
    c = random_chain(rng, 3)
    q = random_q(rng, 6, 3, 1)
    q[4] = 1.0
    r = max_leakage(c, q, [1, 4])
    assert r.leakage == max(leakage(c, q, 1).leakage, leakage(c, q, 4).leakage)
    want = sum(c.stationary[x] * (1 - q[t, x]) for t in range(6) for x in range(3)) / 6
    assert utility(c, q) == pytest.approx(want, rel=1e-14)


def test_bad_mechanisms():
    c = Chain(ROTATION)
    with pytest.raises(ValueError, match="shape"):
        leakage(c, np.ones((3, 2)), 0)
    with pytest.raises(ValueError, match="must be all ones"):
        leakage(c, np.zeros((3, 3)), 0)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        leakage(c, [[1, 1, 1], [0.5, 2.0, 0.0]], 0)


def test_kaudit_witness_lists_a_label_or_none_per_record():
    # the file format: record 1 first, None for ⊥, the state's label as text otherwise
    from redactopt.judge.audit import kaudit
    from redactopt.model.chain import Chain

    chain = Chain([[0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.3, 0.3, 0.4]], labels=("lo", "mid", "hi"))
    q = np.zeros((30, 3))
    q[10:20] = 0.5
    q[15] = 1.0
    rep = kaudit(chain, q, private=[15], eps=3.0)
    w = rep["witness"]
    assert len(w) == 30 and w[15] is None
    assert all(v in ("lo", "mid", "hi") for i, v in enumerate(w) if not 10 <= i < 20)  # published for sure
    assert set(w) <= {None, "lo", "mid", "hi"}
