"""Chains that vary with the step (issue 33): the model, and exact leakage under it.

Every number is derived independently of the pattern reduction the judges use: enumeration of all
outputs (floats and rationals, forward passes from the law of the first record with the forward
steps only, no reversal), hand-worked two-step cases in exact fractions, and the constant case
against the homogeneous chain's own numbers.
"""

from __future__ import annotations

import json
import pickle
from fractions import Fraction as F

import numpy as np
import pytest

from redactopt import Chain, MarkovChain, leakage, leakage_bruteforce, utility
from redactopt.judge.exact import exact_leakage, exact_leakage_bruteforce, exact_marginals
from redactopt.judge.kernel2 import two_state_leakage
from redactopt.judge.kernelk import matrix_leakage
from redactopt.judge.leakage import log_likelihood_ratio
from redactopt.model.varying import VaryingChain, judged_chain


def _random_steps(rng, n, k, zeros):
    steps = []
    for _ in range(n - 1):
        M = rng.random((k, k)) ** 3
        if zeros and rng.random() < 0.4:
            M[rng.integers(k), rng.integers(k)] = 0.0
        steps.append(M / M.sum(axis=1, keepdims=True))
    init = rng.random(k)
    return steps, init / init.sum()


def _random_mechanism(rng, n, k, p):
    q = rng.random((n, k))
    q[rng.random((n, k)) < 0.3] = 0.0
    q[rng.random((n, k)) < 0.2] = 1.0
    q[p] = 1.0
    return q


@pytest.mark.parametrize("k,zeros", [(2, False), (3, False), (3, True)])
def test_leakage_is_the_enumeration_of_every_output(k, zeros):
    rng = np.random.default_rng(100 + k + zeros)
    for _ in range(120):
        n = int(rng.integers(1, 8 if k == 2 else 6))
        steps, init = _random_steps(rng, n, k, zeros)
        chain = VaryingChain.from_steps(steps, init) if n > 1 else VaryingChain([np.eye(k) * 0.5 + 0.5 / k], [0],
                                                                               initial=init)
        p = int(rng.integers(n))
        q = _random_mechanism(rng, n, k, p)
        got, ref = leakage(chain, q, p), leakage_bruteforce(chain, q, p)
        if np.isinf(ref.leakage):
            assert np.isinf(got.leakage)
            continue
        assert got.leakage == pytest.approx(ref.leakage, abs=1e-10)
        if got.leakage > 0:  # the witness has positive probability and attains the leakage
            assert log_likelihood_ratio(chain, q, p, got.witness, got.pair) == pytest.approx(got.leakage, abs=1e-9)


@pytest.mark.parametrize("k", [2, 3])
def test_exact_leakage_is_the_rational_enumeration(k):
    rng = np.random.default_rng(7 + k)
    for _ in range(40):
        n = int(rng.integers(2, 6 if k == 2 else 5))
        steps = []
        for _ in range(n - 1):
            rows = [[F(int(v)) for v in rng.integers(0 if k == 3 else 1, 5, k)] for _ in range(k)]
            steps.append([[v / sum(r) if sum(r) else F(1, k) for v in r] for r in rows])
        init = [F(int(v)) for v in rng.integers(1, 4, k)]
        init = [v / sum(init) for v in init]
        chain = VaryingChain.from_steps(steps, init)
        p = int(rng.integers(n))
        q = [[F(int(rng.integers(0, 4)), 3) for _ in range(k)] for _ in range(n)]
        q[p] = [F(1)] * k
        exact, ref = exact_leakage(chain, q, p), exact_leakage_bruteforce(chain, q, p)
        assert exact.ratio == ref.ratio
        if exact.ratio is not None:
            assert leakage(chain, np.array(q, dtype=float), p).leakage == pytest.approx(exact.leakage, abs=1e-10)


def test_two_step_case_by_hand():
    """n = 3, p = 1, both neighbours published: the ratio of (u, ⊥, v) is L(u) R(v) with
    R(v) = P1[0, v] / P1[1, v] and, by Bayes on the left, L(u) = P0[u, 0] pi1(1) / (P0[u, 1] pi1(0))."""
    P0 = [[F(9, 10), F(1, 10)], [F(3, 10), F(7, 10)]]
    P1 = [[F(1, 2), F(1, 2)], [F(1, 5), F(4, 5)]]
    init = [F(2, 5), F(3, 5)]
    pi1 = [init[0] * P0[0][0] + init[1] * P0[1][0], init[0] * P0[0][1] + init[1] * P0[1][1]]
    ratios = []
    for u in (0, 1):
        for v in (0, 1):
            lr = (P0[u][0] * pi1[1] / (P0[u][1] * pi1[0])) * (P1[0][v] / P1[1][v])
            ratios += [lr, 1 / lr]
    chain = VaryingChain.from_steps([P0, P1], init)
    q = [[0, 0], [1, 1], [0, 0]]
    assert exact_leakage(chain, q, 1).ratio == max(ratios)
    assert exact_marginals(chain)[1] == pi1
    assert leakage(chain, np.array(q, dtype=float), 1).leakage == pytest.approx(float(np.log(float(max(ratios)))),
                                                                                abs=1e-13)


def test_constant_chain_takes_the_constant_path_bit_for_bit():
    rng = np.random.default_rng(5)
    for c in (MarkovChain(0.05, 0.2), MarkovChain(0.7, 0.6), Chain([[0.5, 0.3, 0.2], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4]])):
        n = 40
        v = VaryingChain.from_chain(c, n)
        assert v.constant() == c
        assert judged_chain(v, n) == c
        for _ in range(10):
            p = int(rng.integers(n))
            q = _random_mechanism(rng, n, c.k, p)
            a, b = leakage(v, q, p), leakage(c, q, p)
            assert a.leakage == b.leakage and a.witness.tolist() == b.witness.tolist()
            assert utility(v, q) == utility(c, q)
    # a periodic chain whose levels all hold the same matrix, from its stationary law: the same numbers
    c = MarkovChain(0.1, 0.3)
    v = VaryingChain({"a": c.transition.tolist(), "b": c.transition.tolist()}, ["a", "b"] * 10,
                     initial=c.stationary.tolist(), labels=(0, 1))
    assert v.constant() == Chain(c.transition.tolist(), labels=(0, 1))
    for p in (0, 7, 19):
        q = _random_mechanism(rng, 20, 2, p)
        a, b = leakage(v, q, p), leakage(c, q, p)
        assert a.leakage == b.leakage and a.witness.tolist() == b.witness.tolist()


def test_varying_kernels_agree_on_long_sides():
    """The blocked two-state kernel and the k x k kernel, both with per-step matrices, on 24 hourly levels."""
    rng = np.random.default_rng(11)
    for _ in range(6):
        n = int(rng.integers(300, 2500))
        mats = []
        for _ in range(24):
            a, b = rng.uniform(0.001, 0.3, 2)
            mats.append([[1 - a, a], [b, 1 - b]])
        chain = VaryingChain(mats, ((np.arange(n) // 60) % 24).tolist(), initial=[0.6, 0.4])
        p = int(rng.integers(n))
        q = np.where(np.abs(np.arange(n) - p)[:, None] < int(rng.integers(5, 400)), rng.random((n, 2)), 0.0)
        q[p] = 1.0
        a, b = two_state_leakage(chain, q, p), matrix_leakage(chain, q, p)
        assert a[0] == pytest.approx(b[0], abs=1e-11)
        assert log_likelihood_ratio(chain, q, p, a[4], a[1]) == pytest.approx(a[0], abs=1e-9)


def test_marginals_reversal_and_windows():
    P = [[F(9, 10), F(1, 10)], [F(1, 4), F(3, 4)]]
    Q = [[F(1, 2), F(1, 2)], [F(1, 20), F(19, 20)]]
    rows = ["a"] * 300 + ["b"] * 5 + ["a"] * 20
    chain = VaryingChain({"a": P, "b": Q}, rows, initial=[F(1), F(0)])
    exact = exact_marginals(chain)
    m = chain.marginals()
    assert np.allclose(m, np.array(exact, dtype=float), rtol=1e-13, atol=0)
    R = chain.backward_steps()
    assert np.allclose(R.sum(axis=2), 1.0, atol=1e-15)
    t = 302  # reversed step by hand: Pr(X_t = x | X_{t+1} = y)
    Pt = Q if rows[t] == "b" else P
    for y in (0, 1):
        for x in (0, 1):
            want = exact[t][x] * Pt[x][y] / exact[t + 1][y]
            assert R[t, y, x] == pytest.approx(float(want), rel=1e-12)
    w = chain.window(290, 310)
    assert w.n == 20 and np.array_equal(w.initial, m[290]) and np.allclose(w.marginals(), m[290:310], rtol=1e-13)
    assert w.level_of(12) == "b" and w.level_of(9) == "a"
    # a state of probability 0 at the first row: no pair involving it
    q = np.zeros((chain.n, 2))
    q[0] = 1.0
    assert leakage(chain, q, 0).leakage == 0.0


def test_file_form_round_trip_and_errors():
    c = VaryingChain({"00": [[0.9, 0.1], [0.2, 0.8]], "01": [["1/2", "1/2"], ["3/10", "7/10"]]},
                     ["00"] * 3 + ["01"] * 2 + ["00"], initial=[0.25, 0.75], labels=["off", "on"])
    d = json.loads(json.dumps(c.to_dict()))
    assert d["level_runs"] == [[1, 3, "00"], [4, 5, "01"], [6, 6, "00"]]
    assert d["transition"]["01"] == [["1/2", "1/2"], ["3/10", "7/10"]]
    back = VaryingChain.from_dict(d)
    assert back == c and hash(back) == hash(c) and back.labels == ("off", "on")
    assert pickle.loads(pickle.dumps(c)) == c and pickle.loads(pickle.dumps(c.window(2, 6))) == c.window(2, 6)
    with pytest.raises(ValueError, match="runs must cover rows 1, 2"):
        VaryingChain.periodic(d["transition"], [[1, 2, "00"], [4, 5, "01"]])
    with pytest.raises(ValueError, match="without a matrix"):
        VaryingChain({"a": [[0.5, 0.5], [0.5, 0.5]]}, ["a", "b"])
    with pytest.raises(ValueError, match="sums to"):
        VaryingChain({"a": [[0.5, 0.6], [0.5, 0.5]]}, ["a", "a"])
    with pytest.raises(ValueError, match="initial must"):
        VaryingChain({"a": [[1.0, 0.0], [0.0, 1.0]]}, ["a", "a"])
    with pytest.raises(ValueError, match="rows but the mechanism has"):
        leakage(c, np.ones((4, 2)), 1)
