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


# --------------------------------------------------------------------------
# one chain type (issue 25): MarkovChain is the two-state Chain
# --------------------------------------------------------------------------
import pickle  # noqa: E402
import timeit  # noqa: E402
from fractions import Fraction  # noqa: E402

from redactopt.model.chain import Chain  # noqa: E402

P3 = [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4]]


def _exact_matrix(a: float, b: float) -> list[list[Fraction]]:
    A, B = Fraction(a), Fraction(b)
    return [[1 - A, A], [B, 1 - B]]


@pytest.mark.parametrize("a,b", [(0.01, 0.8), (0.3, 0.7), (0.999, 0.9), (1e-9, 0.5)])
def test_markov_chain_is_the_chain_of_its_exact_matrix(a, b):
    binary, matrix = MarkovChain(a, b), Chain(_exact_matrix(a, b), labels=(0, 1))
    assert isinstance(binary, Chain)
    assert binary == matrix and matrix == binary and hash(binary) == hash(matrix)
    assert len({binary, matrix}) == 1
    assert binary != Chain(_exact_matrix(a, b))  # default labels "0", "1": another chain
    assert binary != MarkovChain(b, a) or a == b
    assert binary.exact == tuple(tuple(r) for r in _exact_matrix(a, b))
    assert binary.k == 2 and binary.labels == (0, 1)


def test_equal_doubles_but_another_exact_matrix_are_two_chains():
    rows = [[0.7, 0.3], [0.3, 0.7]]
    assert sum(Fraction(v) for v in rows[0]) != 1  # the doubles 0.7 + 0.3 do not sum to exactly 1
    given_as_floats = Chain(rows)  # stands for each row divided by its exact sum
    decimals = Chain([["7/10", "3/10"], ["3/10", "7/10"]])
    assert np.array_equal(given_as_floats.transition, decimals.transition)
    assert given_as_floats.exact[0][0] == Fraction(0.7) / sum(Fraction(v) for v in rows[0])
    assert decimals.exact[0][0] == Fraction(7, 10)
    assert given_as_floats != decimals


@pytest.mark.parametrize("a,b", [(0.01, 0.8), (0.6, 0.7), (0.999999, 1e-6), (0.25, 0.75)])
def test_two_state_accessors_of_a_matrix_chain_are_the_binary_ones(a, b):
    binary, matrix = MarkovChain(a, b), Chain(_exact_matrix(a, b), labels=("off", "on"))
    assert (matrix.alpha, matrix.beta) == (a, b)
    assert matrix.lam == binary.lam and matrix.log_abs_lam == binary.log_abs_lam and matrix.kind == binary.kind
    d = np.array([0, 1, 2, 5, 64, 65, 1000, 10**6])
    assert all(np.array_equal(x, y) for x, y in zip(matrix.lam_powers(d), binary.lam_powers(d)))
    assert np.array_equal(matrix.n_step_matrices(d), binary.n_step_matrices(d))
    assert np.array_equal(matrix.stationary, binary.stationary)
    assert np.array_equal(matrix.stationary, [b / (a + b), a / (a + b)])
    assert np.array_equal(matrix.transition, binary.transition_matrix)
    assert matrix.n_step(7) == binary.n_step(7) and matrix.lam_power(3) == binary.lam_power(3)
    assert matrix.is_reversible and matrix.reversed() is matrix
    assert matrix.reversed_matrix() is matrix.transition


def test_more_states_have_no_two_state_accessors():
    c = Chain(P3)
    for name in ("alpha", "beta", "lam", "log_abs_lam", "kind"):
        with pytest.raises(AttributeError, match="two-state chains; this chain has 3 states"):
            getattr(c, name)
    with pytest.raises(AttributeError, match="3 states"):
        c.lam_powers([1, 2])
    assert not hasattr(c, "alpha")


@pytest.mark.parametrize("chain", [(0.01, 0.8), Chain(P3, labels=("a", "b", "c")),
                                   Chain(_exact_matrix(0.2, 0.3), labels=(0, 1)),
                                   Chain([["1/2", "1/2"], ["1/3", "2/3"]])])
def test_pickle_and_copy_keep_type_and_equality(chain):
    import copy

    chain = MarkovChain(*chain) if isinstance(chain, tuple) else chain
    for back in (pickle.loads(pickle.dumps(chain)), copy.deepcopy(chain)):
        assert type(back) is type(chain) and back == chain and hash(back) == hash(chain)
        assert np.array_equal(back.transition, chain.transition) and back.exact == chain.exact


@pytest.mark.markov_constructor
def test_markov_chain_repr_and_pickle_are_compact():
    c = MarkovChain(0.01, 0.8)
    assert type(c) is MarkovChain
    assert repr(c) == "MarkovChain(alpha=0.01, beta=0.8)"
    assert len(pickle.dumps(c)) < 120  # (alpha, beta), not a matrix
    assert type(pickle.loads(pickle.dumps(c))) is MarkovChain


def test_repr_and_immutability():
    assert repr(Chain([[0.5, 0.5], [0.25, 0.75]], labels=("a", "b"))) ==\
        "Chain(transition=[[0.5, 0.5], [0.25, 0.75]], labels=('a', 'b'))"
    c = MarkovChain(0.1, 0.2)
    with pytest.raises(AttributeError):
        c.alpha = 0.3  # type: ignore[misc]
    with pytest.raises(AttributeError):
        c.transition = None  # type: ignore[misc]
    with pytest.raises(ValueError):
        c.transition[0, 0] = 1.0
    with pytest.raises(ValueError):
        c.stationary[0] = 1.0
    assert MarkovChain(alpha=0.1, beta=0.2) == c


def test_two_state_powers_keep_relative_accuracy_where_the_closed_form_cancels():
    a, b = 0.99999, 0.9  # oscillating: P^d[0, 0] = pi0 + pi1 lambda^d is a small difference for odd d
    chain = MarkovChain(a, b)
    E = _exact_matrix(a, b)
    power = [[Fraction(1), Fraction(0)], [Fraction(0), Fraction(1)]]
    for d in range(1, 80):
        power = [[sum(power[i][k] * E[k][j] for k in range(2)) for j in range(2)] for i in range(2)]
        got = chain.n_step_matrix(d)
        for i in range(2):
            for j in range(2):
                assert abs(got[i, j] - float(power[i][j])) <= 1e-12 * float(power[i][j]), (d, i, j)


def test_int_and_array_forms_of_n_step_matrices():
    c = Chain(P3)
    ms = c.n_step_matrices(4)
    assert ms.shape == (4, 3, 3)
    assert np.allclose(c.n_step_matrices(np.array([1, 3])), ms[[0, 2]], rtol=1e-14, atol=0)
    assert np.allclose(c.n_step_matrices([0]), np.eye(3))
    with pytest.raises(ValueError, match="integers >= 0"):
        c.n_step_matrices([1.5])


@pytest.mark.markov_constructor
def test_markov_chain_is_cheap_to_build():
    per = min(timeit.repeat(lambda: MarkovChain(0.01, 0.8), number=2000, repeat=5)) / 2000
    assert per < 10e-6, f"MarkovChain(alpha, beta) took {per * 1e6:.1f} us"  # ~1-5 us; a loose guard


def test_is_markov_is_equality_to_the_markov_chain_of_its_doubles():
    from redactopt.model.chain import is_markov

    a, b = 0.1, 0.2
    assert is_markov(MarkovChain(a, b))
    assert is_markov(Chain(_exact_matrix(a, b), labels=(0, 1)))  # the same exact chain given as a matrix
    assert is_markov(Chain.from_binary(MarkovChain(a, b)))
    assert not is_markov(Chain(_exact_matrix(a, b), labels=("a", "b")))  # keeps its labels
    assert not is_markov(Chain(_exact_matrix(a, b)))  # default labels "0", "1"
    assert not is_markov(Chain([[0.9, 0.1], [0.2, 0.8]], labels=(0, 1)))  # doubles: rows / exact sums, another chain
    assert not is_markov(Chain([[0.0, 1.0], [0.5, 0.5]], labels=(0, 1)))  # not binary (alpha = 1)
    assert not is_markov(Chain(P3)) and not is_markov((a, b))
