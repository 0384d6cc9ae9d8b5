"""The attack on chains of any number of states (audit --attack for k-state files)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from redactopt.judge.attack import attack, sample_outputs
from redactopt.judge.leakage import leakage
from redactopt.model.chain import Chain

#: Not reversible (pi_x P[x, y] != pi_y P[y, x]): the records before p follow the time reversal.
NONREV = Chain([[0.1, 0.8, 0.1], [0.1, 0.1, 0.8], [0.7, 0.2, 0.1]], labels=("a", "b", "c"))


def test_sampled_chains_follow_the_conditional_law():
    """Given X_1 = v, the sampled X_0 follows pi_u P[u, v] / pi_v and X_2 follows P[v, .] (computed by hand)."""
    P, pi = NONREV.transition, NONREV.stationary
    assert not np.allclose(pi[:, None] * P, (pi[:, None] * P).T)  # really not reversible
    q = np.zeros((3, 3))
    q[1] = 1.0
    S = 200_000
    for v in range(3):
        y = sample_outputs(NONREV, q, 1, v, S, np.random.default_rng(v))
        assert (y[:, 1] == -1).all()
        left = np.bincount(y[:, 0], minlength=3) / S
        right = np.bincount(y[:, 2], minlength=3) / S
        want_left = pi * P[:, v] / pi[v]
        # 5 standard errors of a frequency from 200000 draws
        tol = 5 * np.sqrt(want_left * (1 - want_left) / S) + 1e-12
        assert np.all(np.abs(left - want_left) <= tol)
        tol = 5 * np.sqrt(P[v] * (1 - P[v]) / S) + 1e-12
        assert np.all(np.abs(right - P[v]) <= tol)


def test_lower_bound_below_exact_leakage_and_sees_the_worst_output():
    """Publishing both neighbours of p: every output is fully observed, the worst one is likely, so the
    attack's largest observed ratio equals the exact leakage and its bound stays below it."""
    q = np.zeros((3, 3))
    q[1] = 1.0
    exact = leakage(NONREV, q, 1).leakage
    for seed in range(3):
        res = attack(NONREV, q, p=1, samples=20_000, rng=np.random.default_rng(seed))
        assert res.lower_bound <= exact and res.max_observed == pytest.approx(exact, abs=1e-9)
        assert res.lower_bound > 0.5 * exact and res.favoured != res.other


def test_restricted_attack_equals_the_attack_on_every_record():
    q = np.zeros((30, 3))
    q[10:15] = 0.6
    q[12] = 1.0
    a = attack(NONREV, q, p=12, samples=2_000, rng=np.random.default_rng(7))
    b = attack(NONREV, q, p=12, samples=2_000, rng=np.random.default_rng(7), restrict=False)
    assert a.lower_bound == pytest.approx(b.lower_bound, abs=1e-12) and a.max_observed == pytest.approx(b.max_observed)


def test_cli_audit_attack_on_a_kstate_file(run, capsys, tmp_path):
    """A 3-state file that publishes both neighbours of p, audited at eps = 0.5: the exact audit fails and
    the attack shows the violation.  The leakage by hand: the largest log ratio of
    Pr(x0, x2 | X_1 = a) = pi_x0 P[x0, a] P[a, x2] / pi_a over outputs (x0, x2) and pairs (a, b)."""
    chain = Chain([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4]], labels=("lo", "mid", "hi"))
    mech = {"format": "redactopt.mechanism/3", "states": ["lo", "mid", "hi"], "chain": chain.to_dict(), "n": 3,
            "private": [2], "eps": 0.5, "blocks": [{"start": 2, "redact_prob": [[1, 1, 1]]}], "method": "hand"}
    f = tmp_path / "m.json"
    f.write_text(json.dumps(mech))
    assert run(["audit", str(f), "--attack", "--samples", "20000", "--attack-seed", "3", "--format", "json"]) == 1
    rep = json.loads(capsys.readouterr().out)
    P, pi = chain.transition, chain.stationary
    by_hand = max(np.log((P[u, a] * P[a, w] / pi[a]) / (P[u, b] * P[b, w] / pi[b]))
                  for u in range(3) for w in range(3) for a in range(3) for b in range(3))
    assert rep["leakage"] == pytest.approx(by_hand, rel=1e-12)
    at = rep["attack"]
    assert 0.5 < at["lower_bound"] <= rep["leakage"] and at["violation_shown"] and set(at["pair"]) <= {"lo", "mid", "hi"}
    assert run(["audit", str(f), "--attack", "--samples", "2000", "--attack-seed", "3"]) == 1
    out = capsys.readouterr().out
    assert "attack    : leakage >=" in out and "-> violation shown" in out and "result    : FAIL" in out


def test_kstate_audit_witness_has_the_leakage_on_the_whole_sequence():
    """The audit's worst output on all n records (segment witness continued outward by positive-probability
    outputs): its log ratio, recomputed by a forward pass over every record, is the audited leakage — on a
    chain with impossible transitions, where filling with an arbitrary state would give probability 0."""
    from redactopt.judge.audit import audit
    from redactopt.judge.leakage import log_likelihood_ratios

    from redactopt.engine.joint import design_joint_sparse

    # y -> x is impossible: a witness filled with state 0 after a published y would have probability 0
    chain = Chain([[0.5, 0.3, 0.2], [0.0, 0.6, 0.4], [0.3, 0.3, 0.4]], labels=("x", "y", "z"))
    n = 60
    q = np.asarray(design_joint_sparse(chain, n, eps=1.0, private=[15, 40]).redact_prob)
    rep = audit(chain, q, private=[15, 40], eps=1.0)
    assert rep["passed"] and np.isfinite(rep["leakage"])
    idx = {"x": 0, "y": 1, "z": 2, None: -1}
    y = np.array([[idx[v] for v in rep["witness"]]])
    a, b = (chain.labels.index(v) for v in rep["pair"])
    p = rep["witness_private"] - 1
    val = log_likelihood_ratios(chain, q, p, y, pair=(a, b))[0]
    assert np.isfinite(val) and val == pytest.approx(rep["leakage"], rel=1e-9)


def test_one_witness_fill_for_two_state_chains_with_labels():
    """A two-state chain with its own labels, audited as a matrix chain: the one whole-sequence witness
    (:meth:`WitnessRuns.of`) fills beyond the segment as for binary chains (every state possible), in the
    chain's labels, and the witness still has the audited leakage on all n records."""
    from redactopt.judge.audit import kaudit
    from redactopt.judge.leakage import log_likelihood_ratios

    from redactopt.engine.joint import design_joint_sparse

    chain = Chain([[0.9, 0.1], [0.3, 0.7]], labels=("a", "b"))
    n = 50
    q = np.asarray(design_joint_sparse(chain, n, eps=1.0, private=[20]).redact_prob)
    rep = kaudit(chain, q, private=[20], eps=1.0)
    assert set(rep["witness"]) <= {None, "a", "b"} and len(rep["witness"]) == n
    idx = {"a": 0, "b": 1, None: -1}
    y = np.array([[idx[v] for v in rep["witness"]]])
    a, b = (chain.labels.index(v) for v in rep["pair"])
    val = log_likelihood_ratios(chain, q, rep["witness_private"] - 1, y, pair=(a, b))[0]
    assert val == pytest.approx(rep["leakage"], rel=1e-9)
