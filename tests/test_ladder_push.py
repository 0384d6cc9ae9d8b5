"""The ladder's push toward redaction (engine.ladder._pushed) against a plain bisection."""

import numpy as np
import pytest

from redactopt.engine.ladder import Rules, _pushed


def _reference(theta_star: float) -> float:
    """40 halvings of [0, 1] keeping the verified end: the push's resolution, written out."""
    good, bad = 1.0, 0.0
    for _ in range(40):
        mid = 0.5 * (good + bad)
        if mid >= theta_star:
            good = mid
        else:
            bad = mid
    return good


@pytest.mark.parametrize("theta_star", [0.0, 1e-13, 2.0 ** -40, 3.3e-12, 1e-9, 2.0 ** -20, 0.013, 0.3, 0.5,
                                        0.7500001, 0.99, 1.0])
def test_push_finds_the_bisection_point_with_fewer_checks(theta_star):
    q = np.array([[1.0, 1.0], [0.25, 0.0], [0.5, 1.0], [0.0, 0.0]])
    partial = (q > 0.0) & (q < 1.0)
    calls = []

    def verify(m):
        # theta from the first partial entry (0.25 + theta * 0.75): verified iff theta >= theta_star
        theta = (m[1, 0] - 0.25) / 0.75
        calls.append(theta)
        return None, theta >= theta_star - 1e-15

    rules = Rules(verify=verify, check=lambda m: m, lemma2_closed=lambda m: m, utility=lambda m: 0.0)
    out = _pushed(rules, q)
    theta = _reference(theta_star)
    want = np.where(partial, q + theta * (1.0 - q), q)
    np.testing.assert_allclose(out, want, rtol=0, atol=1e-15)
    assert np.array_equal(out[~partial], q[~partial])
    assert len(calls) == len(set(calls)) <= 42  # 1 + 40 halvings at most, plus the skipped powers
    if 0.0 < theta_star < 2.0 ** -20:
        assert len(calls) < 25


def test_push_gives_up_when_full_redaction_of_the_partial_entries_fails():
    q = np.array([[1.0, 1.0], [0.5, 0.0]])
    rules = Rules(verify=lambda m: (None, False), check=lambda m: m, lemma2_closed=lambda m: m,
                  utility=lambda m: 0.0)
    assert _pushed(rules, q) is None
