"""Property-based tests (Hypothesis) over random chains, n, p, eps and mechanisms.

Default profile "ci" is fast; HYPOTHESIS_PROFILE=slow runs >= 10,000 examples per property.
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from redactopt.certify import LEAKAGE_RTOL
from redactopt.chain import MarkovChain
from redactopt.leakage import leakage, leakage_bruteforce, utility
from redactopt.mechanisms import markov_quilt, three_region, three_region_utility

prob = st.floats(min_value=1e-6, max_value=1 - 1e-6, allow_nan=False)
chains = st.builds(MarkovChain, prob, prob)
eps_st = st.floats(min_value=1e-3, max_value=8.0, allow_nan=False)
# The float brute force multiplies raw probabilities, so its entries stay >= 1e-15 (or exactly 0)
# to keep every product far from underflow; `wide_entry` reaches down to 1e-300 and is checked
# against the rational evaluator instead.
entry = st.one_of(st.just(0.0), st.just(1.0), st.floats(min_value=1e-6, max_value=1.0),
                  st.floats(min_value=1e-15, max_value=1e-6))
wide_entry = st.one_of(st.just(0.0), st.just(1.0),
                       st.floats(min_value=1e-300, max_value=1.0, allow_subnormal=False))


@st.composite
def mechanisms(draw, max_n=8, values=entry):
    n = draw(st.integers(min_value=1, max_value=max_n))
    p = draw(st.integers(min_value=0, max_value=n - 1))
    rows = draw(st.lists(st.tuples(values, values), min_size=n, max_size=n))
    q = np.array(rows, dtype=float).reshape(n, 2)
    q[p] = 1.0
    return n, p, q


@given(chains, mechanisms())
def test_fast_evaluator_equals_bruteforce(chain, mech):
    n, p, q = mech
    fast = leakage(chain, q, p).leakage
    ref = leakage_bruteforce(chain, q, p).leakage
    assert math.isfinite(fast)
    assert fast == pytest.approx(ref, rel=1e-9, abs=1e-10)


@given(chains, mechanisms(max_n=7, values=wide_entry))
def test_fast_evaluator_equals_rational_evaluator(chain, mech):

    from redactopt.exact import exact_leakage_ratio

    n, p, q = mech
    R = exact_leakage_ratio(chain.alpha, chain.beta, q.tolist(), p)
    ref = math.log(R.numerator) - math.log(R.denominator)
    assert leakage(chain, q, p).leakage == pytest.approx(ref, rel=1e-9, abs=1e-10)


@given(chains, st.integers(1, 30), st.data(), eps_st, st.sampled_from(["section4", "algorithm2"]))
def test_theorem1_utility_equals_exact(chain, n, data, eps, reading):
    p = data.draw(st.integers(0, n - 1))
    m = three_region(chain, n, eps=eps, p=p, reading=reading)
    assert three_region_utility(chain, n, eps=eps, p=p, reading=reading) == pytest.approx(
        utility(chain, m.redact_prob), abs=1e-12)


@given(chains, st.integers(1, 40), st.data(), eps_st)
def test_markov_quilt_is_private(chain, n, data, eps):
    p = data.draw(st.integers(0, n - 1))
    m = markov_quilt(chain, n, eps=eps, p=p)
    assert m.leakage().leakage <= eps * (1 + LEAKAGE_RTOL)
