"""Several private records: validity against enumeration of all outputs, window optimality by brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from redactopt.errors import PrivacyCheckError
from redactopt.model.chain import MarkovChain
from redactopt.engine.joint import (
    combine_max,
    design_joint,
    design_local,
    improve_locally,
    joint_dim,
)
from redactopt.model.influence import pointwise_influence, side_log_ratio_envelope
from redactopt.judge.leakage import leakage_bruteforce, max_leakage, utility
from conftest import matrix_power_P, random_mechanism

CHAINS = [MarkovChain(0.2, 0.5), MarkovChain(0.1, 0.05), MarkovChain(0.7, 0.6), MarkovChain(0.3, 0.7)]


def _bf(chain: MarkovChain, q: np.ndarray, private) -> float:
    return max(leakage_bruteforce(chain, q, p).leakage for p in private)


def test_leakage_monotone_bruteforce(rng):
    """Raising any redaction probability never raises the leakage (post-processing)."""
    for _ in range(150):
        chain = MarkovChain(*rng.uniform(0.03, 0.97, 2))
        n = int(rng.integers(2, 7))
        p = int(rng.integers(0, n))
        q = random_mechanism(rng, n, p)
        bump = rng.random((n, 2)) * (rng.random((n, 2)) < 0.5)
        q2 = np.minimum(1.0, q + bump)
        q2[rng.random((n, 2)) < 0.1] = 1.0
        assert leakage_bruteforce(chain, q2, p).leakage <= leakage_bruteforce(chain, q, p).leakage + 1e-12


@pytest.mark.parametrize("chain", CHAINS, ids=lambda c: f"{c.alpha}-{c.beta}")
def test_side_table_matches_matrix_powers(chain):
    m = 40
    T = np.vstack([np.full((1, 2), np.inf), side_log_ratio_envelope(chain, m)])
    raw = np.empty((m, 2))
    for d in range(1, m + 1):
        Pd = matrix_power_P(chain.alpha, chain.beta, d)
        lr = np.log(Pd[0]) - np.log(Pd[1])
        raw[d - 1] = [lr.max(), (-lr).max()]
    expect = np.maximum(np.maximum.accumulate(raw[::-1], axis=0)[::-1], 0.0)
    assert np.allclose(T[1:], expect, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("chain", CHAINS, ids=lambda c: f"{c.alpha}-{c.beta}")
@pytest.mark.parametrize("eps", [0.4, 1.2])
def test_joint_dim_block_is_the_shortest_valid_window(chain, eps):
    """For a block of private records, enumerate every window around it with exact (brute) leakage."""
    n, block = 9, [3, 4]
    best = None
    for L in range(0, 4):
        for R in range(4, n):
            q = np.zeros((n, 2))
            q[L : R + 1] = 1.0
            if _bf(chain, q, block) <= eps + 1e-12:
                size = R - L + 1
                best = size if best is None else min(best, size)
    res = joint_dim(chain, n, eps=eps, private=block)
    q = np.asarray(res.redact_prob)
    assert _bf(chain, q, block) <= eps + 1e-12
    assert int(q.any(axis=1).sum()) == best


@pytest.mark.parametrize("chain", CHAINS, ids=lambda c: f"{c.alpha}-{c.beta}")
def test_two_close_private_records_bruteforce(chain):
    n, priv, eps = 9, [3, 5], 0.8
    footnote = combine_max(chain, n, eps=eps, private=priv, method="dim")
    joint = design_joint(chain, n, eps=eps, private=priv)
    for res in (footnote, joint):
        q = np.asarray(res.redact_prob)
        assert q[priv].min() == 1.0
        assert _bf(chain, q, priv) <= eps * (1 + 1e-9)
        assert res.leakage <= eps
        assert res.private == tuple(priv)
    assert joint.utility >= footnote.utility - 1e-12


def test_footnote_union_of_windows_is_valid_bruteforce(rng):
    """The elementwise maximum of per-record designs (footnote 1), for random small problems."""
    for _ in range(12):
        chain = MarkovChain(*rng.uniform(0.05, 0.95, 2))
        n = int(rng.integers(4, 9))
        priv = sorted(rng.choice(n, size=2, replace=False).tolist())
        eps = float(rng.uniform(0.2, 2.0))
        res = combine_max(chain, n, eps=eps, private=priv, method="dim")
        assert _bf(chain, np.asarray(res.redact_prob), priv) <= eps * (1 + 1e-9)


def test_improve_locally_is_valid_and_never_worse(rng):
    for chain in CHAINS:
        n, priv, eps = 8, [2, 4], 1.0
        start = joint_dim(chain, n, eps=eps, private=priv)
        q, summary = improve_locally(chain, start.redact_prob, eps=eps, private=priv)
        assert _bf(chain, q, priv) <= eps * (1 + 1e-9)
        assert utility(chain, q) >= start.utility - 1e-15
        assert np.all(q <= np.asarray(start.redact_prob) + 1e-15)


def test_joint_beats_the_footnote_on_a_block():
    """A block of private minutes in a sticky chain: one joint window redacts far less."""
    chain = MarkovChain(0.003, 0.012)
    n, block, eps = 1200, list(range(600, 620)), 1.0
    footnote = combine_max(chain, n, eps=eps, private=block, method="dim")
    joint = joint_dim(chain, n, eps=eps, private=block)
    assert joint.utility > footnote.utility
    for res in (footnote, joint):
        assert max_leakage(chain, res.redact_prob, block).leakage <= eps


def test_design_local_equals_the_whole_sequence_design():
    from redactopt.engine.design import design

    chain = MarkovChain(0.05, 0.2)
    n, p, eps = 400, 170, 0.7
    whole = design(chain, n, eps=eps, p=p, method="dim", whole=True)
    local = design_local(chain, n, eps=eps, p=p, method="dim", radius=5)  # too small: must grow
    assert local.utility == pytest.approx(whole.utility, abs=1e-12)
    lo, hi = local.info["window"]
    assert hi - lo + 1 < n  # designed on a window, not the whole sequence
    assert max_leakage(chain, local.redact_prob, [p]).leakage <= eps


def test_design_joint_method_per_record_and_errors():
    chain = MarkovChain(0.2, 0.5)
    res = design_joint(chain, 30, eps=1.0, private=[10, 20], method="dim")
    assert res.method == "max-dim"
    assert max_leakage(chain, res.redact_prob, [10, 20]).leakage <= 1.0
    with pytest.raises(ValueError, match="method"):
        design_joint(chain, 30, eps=1.0, private=[3], method="nope")
    with pytest.raises(ValueError, match="private"):
        design_joint(chain, 30, eps=1.0, private=[30])
    with pytest.raises(TypeError, match="chain"):
        design_joint("chain", 30, eps=1.0, private=[3])  # type: ignore[arg-type]


def test_improve_locally_refuses_an_invalid_start():
    chain = MarkovChain(0.2, 0.5)
    q = np.zeros((6, 2))
    q[2] = 1.0
    with pytest.raises(PrivacyCheckError):
        improve_locally(chain, q, eps=0.01, private=[2])


def _check_all_subsets(subsets):
    chain = MarkovChain(0.15, 0.35)
    n, eps = 7, 1.0
    for priv in subsets:
        res = design_joint(chain, n, eps=eps, private=list(priv), method="auto", improve=False)
        assert _bf(chain, np.asarray(res.redact_prob), priv) <= eps * (1 + 1e-9)


def test_every_private_record_of_a_cluster_is_checked():
    """Three private records of a tiny chain: exact (enumerated) leakage <= eps for each."""
    _check_all_subsets([(0, 1, 2), (1, 3, 5), (0, 3, 6), (2, 3, 4)])


@pytest.mark.slow
def test_every_private_record_of_a_cluster_is_checked_all_subsets():
    _check_all_subsets(itertools.combinations(range(7), 3))


@pytest.mark.parametrize("chain", CHAINS + [MarkovChain(0.003, 0.012)], ids=lambda c: f"{c.alpha}-{c.beta}")
@pytest.mark.parametrize("eps", [0.3, 1.0, 3.0])
def test_windowed_lemma2_bound_equals_the_dense_formula(chain, eps):
    from redactopt.judge.lemma2 import lemma2_upper_bound

    def dense(n, priv):
        # Lemma 2 over every record: value x at t counts iff no private record is influenced > eps
        t = np.arange(n)
        allowed = np.ones((n, 2), dtype=bool)
        allowed[priv] = False
        for p in priv:
            far = t != p
            for x in (0, 1):
                allowed[far, x] &= pointwise_influence(chain, np.abs(t[far] - p), x) <= eps
        return float((allowed * chain.stationary).sum() / n)

    n = 3000
    for priv in ([0], [n - 1], [1500], [10, 11, 12, 2000], [700, 2300]):
        assert lemma2_upper_bound(chain, n, eps=eps, private=priv) == pytest.approx(dense(n, priv), rel=1e-12, abs=1e-15)

def test_incremental_edge_leakage_equals_enumeration(rng):
    """The bisection's incremental evaluator (only row t changes) against all 3^n outputs,
    with exact 0/1 entries (blocked rows before and after t, rows that are never ⊥)."""
    from redactopt.engine.joint import _EdgeLeakage

    for _ in range(150):
        chain = MarkovChain(*rng.uniform(0.02, 0.98, 2))
        n = int(rng.integers(2, 8))
        q = rng.uniform(0, 1, (n, 2))
        u = rng.uniform(size=(n, 2))
        q[u < 0.2], q[u > 0.8] = 0.0, 1.0
        p = int(rng.integers(0, n))
        q[p] = 1.0
        t = int(rng.choice([i for i in range(n) if i != p]))
        edge = _EdgeLeakage(chain, q, p, t)
        for _ in range(3):
            q[t] = rng.uniform(0, 1, 2) * (rng.uniform(size=2) > 0.25)
            assert edge.value() == pytest.approx(leakage_bruteforce(chain, q, p).leakage, rel=1e-9, abs=1e-12)
