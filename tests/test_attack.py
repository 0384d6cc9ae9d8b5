import json

import numpy as np
import pytest

from redactopt.judge.attack import attack, sample_outputs
from redactopt.model.chain import MarkovChain
from redactopt.interface.cli import main
from redactopt.judge.leakage import leakage, log_likelihood_ratios, output_log_ratio
from redactopt.paper.mechanisms import three_region


def test_likelihood_ratios_match_exact_forward_pass(rng):
    ch = MarkovChain(0.3, 0.6)
    q = rng.random((7, 2))
    q[3] = 1.0
    y = sample_outputs(ch, q, 3, 0, 50, rng)
    lam = log_likelihood_ratios(ch, q, 3, y)
    for row, v in zip(y, lam):
        assert v == pytest.approx(output_log_ratio(ch, q, 3, row), abs=1e-10)


def test_conditional_sampling_has_the_right_law():
    # X_p = 1, nothing redacted: Pr(X_{p+1} = 1 | X_p = 1) = 1 - beta, Pr(X_{p-2} = 0 | X_p = 1) = P^2[1, 0]
    ch = MarkovChain(0.2, 0.3)
    q = np.zeros((5, 2))
    q[2] = 1
    y = sample_outputs(ch, q, 2, 1, 200_000, np.random.default_rng(3))
    assert (y[:, 3] == 1).mean() == pytest.approx(0.7, abs=0.005)
    P2 = np.linalg.matrix_power(ch.transition_matrix, 2)
    assert (y[:, 0] == 0).mean() == pytest.approx(P2[1, 0], abs=0.005)


def test_attack_is_a_lower_bound_and_approaches_exact_on_small_case():
    ch = MarkovChain(0.25, 0.5)
    q = [[1, 1], [0.12, 1.0]]  # Example 1: leakage log(28/17) = 0.4990
    res = attack(ch, q, p=0, samples=100_000, rng=np.random.default_rng(11))
    exact = leakage(ch, q, 0).leakage
    assert res.lower_bound <= exact
    assert res.lower_bound >= exact - 0.05
    assert res.max_observed == pytest.approx(exact, abs=1e-9)


@pytest.mark.slow
def test_attack_shows_the_3r_violation():
    ch = MarkovChain(0.01, 0.8)
    m = three_region(ch, 10, eps=0.5, p=0)
    res = attack(ch, m.redact_prob, p=0, samples=400_000, confidence=0.95, rng=np.random.default_rng(1))
    assert 0.5 < res.lower_bound <= m.leakage().leakage


def test_cli_attack_json(capsys):
    code = main(["audit", "--method", "mq", "--n", "6", "--eps", "1", "--attack", "--samples", "4000",
                 "--seed", "2", "--format", "json"])
    rep = json.loads(capsys.readouterr().out)
    assert code == 0 and rep["attack"]["lower_bound"] <= rep["leakage"] + 1e-12
    assert rep["attack"]["violation_shown"] is False
