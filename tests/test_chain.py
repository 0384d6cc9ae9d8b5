from decimal import Decimal, getcontext

import numpy as np
import pytest

from redactopt.model.chain import MarkovChain
from conftest import matrix_power_P


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5, float("nan"), float("inf")])
def test_alpha_beta_must_be_open_probabilities(bad):
    with pytest.raises(ValueError, match="alpha"):
        MarkovChain(bad, 0.5)
    with pytest.raises(ValueError, match="beta"):
        MarkovChain(0.5, bad)


def test_wrong_types_raise_type_error():
    with pytest.raises(TypeError, match="alpha"):
        MarkovChain("0.1", 0.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="beta"):
        MarkovChain(0.1, None)  # type: ignore[arg-type]


@pytest.mark.parametrize("a,b", [(0.01, 0.8), (0.8, 0.01), (0.6, 0.7), (0.3, 0.7), (0.25, 0.5)])
def test_stationary_law_is_invariant(a, b):
    ch = MarkovChain(a, b)
    pi = ch.stationary
    assert pi @ ch.transition_matrix == pytest.approx(pi, abs=1e-15)
    assert pi[0] == pytest.approx(b / (a + b))


def test_kind():
    assert MarkovChain(0.1, 0.2).kind == "lazy"
    assert MarkovChain(0.6, 0.7).kind == "oscillating"
    assert MarkovChain(0.25, 0.75).kind == "independent"


@pytest.mark.parametrize("a,b", [(0.01, 0.8), (0.8, 0.01), (0.6, 0.7), (0.95, 0.9), (0.25, 0.75), (0.003, 0.012)])
@pytest.mark.parametrize("delta", [0, 1, 2, 3, 7, 20, 51])
def test_closed_form_equals_matrix_power(a, b, delta):
    ch = MarkovChain(a, b)
    assert ch.n_step_matrix(delta) == pytest.approx(matrix_power_P(a, b, delta), rel=1e-12, abs=1e-15)


def _decimal_n_step(a: float, b: float, delta: int) -> tuple[Decimal, Decimal]:
    getcontext().prec = 60
    A, B = Decimal(a), Decimal(b)
    lam = 1 - A - B
    one_minus = 1 - lam**delta
    return A / (A + B) * one_minus, B / (A + B) * one_minus


@pytest.mark.parametrize("a,b", [(1e-7, 3e-7), (0.003, 0.012), (0.999999, 0.9999995), (0.7, 0.6)])
@pytest.mark.parametrize("delta", [1, 10, 12345, 10**6, 3 * 10**6 + 1])
def test_n_step_accurate_for_huge_delta(a, b, delta):
    ch = MarkovChain(a, b)
    ad, bd = ch.n_step(delta)
    ad_ref, bd_ref = _decimal_n_step(a, b, delta)
    assert ad == pytest.approx(float(ad_ref), rel=1e-9)
    assert bd == pytest.approx(float(bd_ref), rel=1e-9)


@pytest.mark.parametrize("a,b", [(0.999999, 1e-6), (0.5, 0.5 + 1e-16), (1e-9, 1 - 1e-9), (1 - 1e-9, 1 - 1e-9), (1e-9, 1e-9)])
def test_extreme_parameters_stay_finite(a, b):
    ch = MarkovChain(a, b)
    for d in (1, 2, 3, 10**6):
        m = ch.n_step_matrix(d)
        assert np.all(np.isfinite(m)) and np.all(m >= 0)
        assert m.sum(axis=1) == pytest.approx([1, 1], abs=1e-12)
