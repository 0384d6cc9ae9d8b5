"""Property-based tests (Hypothesis) over random chains, n, p, eps and mechanisms.

Default profile "ci" is fast; HYPOTHESIS_PROFILE=slow runs >= 10,000 examples per property.
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from redactopt.judge.tolerances import LEAKAGE_RTOL
from redactopt.model.chain import MarkovChain
from redactopt.judge.leakage import leakage, leakage_bruteforce, utility
from redactopt.paper.mechanisms import markov_quilt, three_region, three_region_utility

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

    from redactopt.judge.exact import exact_leakage_ratio

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


# --- every mechanism any method returns is private -------------------------------------
from hypothesis import settings  # noqa: E402

from redactopt.engine.design import design  # noqa: E402
from redactopt.engine.joint import design_joint  # noqa: E402

design_chains = st.builds(MarkovChain, st.floats(0.005, 0.995), st.floats(0.005, 0.995))


@given(design_chains, st.integers(1, 9), st.data(), st.floats(0.05, 6.0),
       st.sampled_from(["3r-calibrated", "dim", "mq"]))
def test_every_fast_design_is_private(chain, n, data, eps, method):
    p = data.draw(st.integers(0, n - 1))
    r = design(chain, n, eps=eps, p=p, method=method)
    assert leakage_bruteforce(chain, r.redact_prob, p).leakage <= eps * (1 + 1e-12)
    assert r.utility <= r.certificate.upper_bound + 1e-12


@settings(max_examples=8)
@given(design_chains, st.integers(2, 7), st.data(), st.floats(0.1, 4.0), st.sampled_from(["global", "sgp"]))
def test_every_optimiser_design_is_private(chain, n, data, eps, method):
    p = data.draw(st.integers(0, n - 1))
    r = design(chain, n, eps=eps, p=p, method=method, time_limit=30)
    assert leakage_bruteforce(chain, r.redact_prob, p).leakage <= eps * (1 + 1e-12)


@settings(max_examples=25)
@given(design_chains, st.integers(2, 9), st.data(), st.floats(0.1, 4.0))
def test_joint_designs_protect_every_private_record(chain, n, data, eps):
    private = sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=3)))
    r = design_joint(chain, n, eps=eps, private=private)
    for p in private:
        assert leakage_bruteforce(chain, r.redact_prob, p).leakage <= eps * (1 + 1e-12)
