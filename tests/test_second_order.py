"""The leakage of a local mechanism under a second-order chain (the order alternative of issue 36).

Independent checks: brute-force enumeration of every output and every hidden sequence for small n
(the likelihood ratio of Definition 1 computed from the joint law of the second-order chain); a
second-order chain that is really first order gives the first-order evaluator's leakage; the
segment cut (two consecutive published records) is checked against the whole sequence; the exact
ratio of the witness is a fraction equal to its brute-force value.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from redactopt.judge.leakage import leakage
from redactopt.judge.second_order import (SecondOrderChain, output_ratio_exact, second_order_leakage,
                                          second_order_segment)
from redactopt.model.chain import MarkovChain


def _joint(chain: SecondOrderChain, q: np.ndarray, p: int) -> dict:
    """Pr(y, X_p = v) for every output y, by enumerating every hidden sequence (the stationary pair law first)."""
    n = q.shape[0]
    T, mu = chain.kernel, chain.pair_law
    out: dict = {}
    for xs in itertools.product((0, 1), repeat=n):
        pr = mu[xs[0], xs[1]] if n > 1 else mu[:, xs[0]].sum()
        for t in range(2, n):
            pr *= T[xs[t - 2], xs[t - 1], xs[t]]
        for ys in itertools.product((0, 1, 2), repeat=n):
            e = 1.0
            for t in range(n):
                e *= q[t, xs[t]] if ys[t] == 2 else ((1.0 - q[t, xs[t]]) if ys[t] == xs[t] else 0.0)
                if not e:
                    break
            if e:
                out.setdefault(ys, [0.0, 0.0])[xs[p]] += pr * e
    return out


def brute_leakage(chain: SecondOrderChain, q: np.ndarray, p: int) -> float:
    pi = chain.pair_law.sum(axis=0)
    best = 0.0
    for a, b in _joint(chain, q, p).values():
        a, b = a / pi[0], b / pi[1]
        if (a > 0) != (b > 0):
            return math.inf
        if a > 0:
            best = max(best, abs(math.log(a / b)))
    return best


def _random_mechanism(rng: np.random.Generator, n: int) -> tuple[np.ndarray, int]:
    q = rng.random((n, 2))
    q[rng.random((n, 2)) < 0.3] = 0.0
    q[rng.random((n, 2)) < 0.2] = 1.0
    p = int(rng.integers(0, n))
    q[p] = 1.0
    return q, p


@pytest.mark.parametrize("seed", range(12))
def test_leakage_equals_brute_force_over_every_output(seed):
    rng = np.random.default_rng(seed)
    for _ in range(5):
        n = int(rng.integers(2, 7))
        chain = SecondOrderChain.fit(rng.integers(0, 40, size=(2, 2, 2)))
        q, p = _random_mechanism(rng, n)
        got = second_order_leakage(chain, q, [p], eps=1.0)[0].leakage
        want = brute_leakage(chain, q, p)
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12), (n, p)


def test_a_first_order_chain_read_as_second_order_gives_the_first_order_leakage():
    chain = MarkovChain(0.1, 0.3)
    P = np.array([[0.9, 0.1], [0.3, 0.7]])
    T = np.stack([P, P])  # T[a, b] = P[b]: the record before the last does not matter; pairs: pi_a P[a, b]
    rng = np.random.default_rng(4)
    so = SecondOrderChain(T, np.array([[0.75 * 0.9, 0.75 * 0.1], [0.25 * 0.3, 0.25 * 0.7]]))
    for _ in range(5):
        q = rng.random((30, 2)) * 0.8
        p = int(rng.integers(0, 30))
        q[p] = 1.0
        assert second_order_leakage(so, q, [p], 1.0)[0].leakage == pytest.approx(leakage(chain, q, p=p).leakage,
                                                                                 rel=1e-10)


def test_two_consecutive_published_records_cut_the_chain():
    rng = np.random.default_rng(8)
    chain = SecondOrderChain.fit(rng.integers(1, 30, size=(2, 2, 2)))
    q = np.zeros((9, 2))
    q[3:6] = rng.random((3, 2))
    q[4] = 1.0
    q[0] = [0.5, 0.2]  # beyond the published pair (rows 1, 2): cut away
    q[8] = [0.3, 0.6]  # beyond the published pair (rows 6, 7)
    assert second_order_segment(q, 4) == (1, 7)
    whole = brute_leakage(chain, q, 4)
    assert second_order_leakage(chain, q, [4], 1.0)[0].leakage == pytest.approx(whole, rel=1e-9)
    # one published record alone does not cut a second-order chain
    q2 = q.copy()
    q2[2] = [0.4, 0.4]
    assert second_order_segment(q2, 4)[0] == 0


def test_the_witness_ratio_is_exact():
    rng = np.random.default_rng(11)
    chain = SecondOrderChain.fit(rng.integers(0, 25, size=(2, 2, 2)))
    q, p = _random_mechanism(rng, 5)
    res = second_order_leakage(chain, q, [p], eps=0.01)[0]
    y = list(res.witness)
    ratio = output_ratio_exact(chain, q, p, y, res.pair[0])
    assert isinstance(ratio, Fraction) and ratio == res.ratio
    joint = _joint(chain, q, p)[tuple(y)]
    pi = chain.pair_law.sum(axis=0)
    x = res.pair[0]
    assert float(ratio) == pytest.approx((joint[x] / pi[x]) / (joint[1 - x] / pi[1 - x]), rel=1e-9)
    assert res.exceeds is (res.leakage > 0.01)
