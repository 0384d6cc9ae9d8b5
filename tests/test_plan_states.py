"""The release planner for every chain: groups of private records of many sequences, placed designs and the
design cache on chains of more than two states (kapply plans through it), and the k-column Redactor."""

from __future__ import annotations

import numpy as np
import pytest

from redactopt.judge.leakage import leakage_bruteforce
from redactopt.model.chain import Chain
from redactopt.release.bits import SeededBits, bernoulli_exact
from redactopt.release.data import ScanState
from redactopt.release.plan import plan_release
from redactopt.release.redactor import Redactor

P3 = [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4]]  # not reversible


def _state(lengths: list[int], private: list[list[int]]) -> ScanState:
    k = len(lengths)
    codes = np.repeat(np.arange(k), [len(p) for p in private])
    pos = np.asarray([x for p in private for x in p], dtype=np.int64)
    n = np.asarray(lengths, dtype=np.int64)
    return ScanState([f"s{i}" for i in range(k)], n, np.full((k, 2), -1, np.int8), np.full((k, 2), -1, np.int8),
                     private_codes=codes, private_pos=pos, rows=int(n.sum()))


@pytest.mark.parametrize("method", ["dim", "optimal"])
def test_every_sequence_is_private_by_enumeration(method):
    """Each sequence's placed mechanism, enumerated over all 4^n outputs (shares no code with the judge)."""
    chain = Chain(P3, labels=("a", "b", "c"))
    lengths, private = [7, 8, 6, 8], [[3], [0, 5], [], [7]]
    plan = plan_release(_state(lengths, private), eps=0.8, chain=chain, method=method, workers=1)
    for c, (n, priv) in enumerate(zip(lengths, private)):
        if not priv:
            assert not plan.pieces(c)
            continue
        q = np.asarray(plan.sparse_rows(c).rows(0, n))
        assert q.shape == (n, 3) and all((q[p] == 1.0).all() for p in priv)
        for p, v in zip(priv, plan.per_private(c)):
            ref = leakage_bruteforce(chain, q, p).leakage
            assert ref <= 0.8 + 1e-12 and ref == pytest.approx(v, rel=1e-9, abs=1e-12)


def test_designs_are_shared_and_mirrored_only_for_reversible_chains():
    """Long sequences with one private record each: one far design serves them all; a chain that is not
    reversible gets no mirror images (its reflection is another problem), a reversible one does."""
    lengths = [400 + 37 * i for i in range(8)]
    private = [[2] if i % 2 else [lengths[i] - 3] for i in range(8)]  # next to an end: a side wiped
    state = _state(lengths, private)
    plan = plan_release(state, eps=1.0, chain=Chain(P3), method="dim", workers=1)
    d = plan.info["designs"]
    # the candidates of a group next to an end: the far design and a wipe of that side, for each end
    assert d["groups"] == 8 and d["reflected"] == 0 and d["computed"] == 3 and d["reused"] >= 6
    sym = Chain([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]])  # symmetric: reversible
    assert sym.is_reversible and not Chain(P3).is_reversible
    d = plan_release(state, eps=1.0, chain=sym, method="dim", workers=1).info["designs"]
    assert d["computed"] == 2 and d["reflected"] == 1  # one end's wipe is the other's mirror image


def test_binary_only_options_are_refused_for_more_states():
    state = _state([50], [[20]])
    with pytest.raises(ValueError, match="box of two-state chains"):
        plan_release(state, eps=1.0, chain=Chain(P3), robust=0.9)
    with pytest.raises(ValueError, match="method must be one of"):
        plan_release(state, eps=1.0, chain=Chain(P3), method="3r-calibrated")


def test_redactor_draws_k_states_as_the_exact_bernoulli_draw():
    """The Redactor on a 3-state plan redacts only inside the blocks, always where q = 1, never where q = 0,
    and elsewhere exactly as the exact Bernoulli draw of q[t, x_t] with the same source, key and positions."""
    chain = Chain(P3)
    n = 300
    plan = plan_release(_state([n], [[150]]), eps=0.5, chain=chain, method="dim", workers=1)
    q = np.asarray(plan.sparse_rows(0).rows(0, n))
    rng = np.random.default_rng(3)
    x = rng.integers(0, 3, n)
    got = Redactor(plan, SeededBits(11)).redact(None, np.arange(n), x)
    p = q[np.arange(n), x]
    assert not got[p == 0.0].any() and got[p == 1.0].all()
    key = Redactor(plan, SeededBits(11)).keys[0]
    ref = bernoulli_exact(p, SeededBits(11), key=key, positions=np.arange(n))
    assert np.array_equal(got, ref)


def test_a_private_sequence_of_one_record_on_a_chain_with_impossible_transitions():
    """Found by a red team: the leakage ceiling of a record without neighbours was 0 * inf = nan on a chain
    with a zero entry (an infinite one-step term).  Such a record is simply always redacted: leakage 0."""
    from redactopt.engine.design import design

    chain = Chain([[0.0, 1.0, 0.0], [0.6, 0.1, 0.3], [0.05, 0.3, 0.65]])
    d = design(chain, 1, eps=0.3, p=0)
    assert d.leakage == 0.0 and d.utility == 0.0 and d.redact_prob.tolist() == [[1.0, 1.0, 1.0]]
    plan = plan_release(_state([1, 5], [[0], [2]]), eps=0.3, chain=chain, method="auto", workers=1)
    assert plan.per_private(0) == (0.0,)
    q = np.asarray(plan.sparse_rows(1).rows(0, 5))
    assert leakage_bruteforce(chain, q, 2).leakage <= 0.3


def test_short_sequences_on_a_sticky_chain_get_their_own_design_at_once():
    """Found by a red team: a 4-record sequence on a slowly mixing chain (far distance 320) climbed the far
    ladder through sub-problems of hundreds of records before its own (48 s); it is now designed once."""
    chain = Chain([[0.97664, 0.02330, 0.00006], [0.01094, 0.97198, 0.01708], [0.00099, 0.01791, 0.98110]])
    plan = plan_release(_state([4, 4, 6], [[0, 1, 3], [0, 1, 3], [2]]), eps=0.3, chain=chain, method="optimal",
                        workers=1)
    d = plan.info["designs"]
    assert d["computed"] == 2 and d["groups"] == 3  # one design per distinct short sequence
    for c, (n, priv) in enumerate([(4, [0, 1, 3]), (6, [2])]):
        q = np.asarray(plan.sparse_rows(2 * c).rows(0, n))
        assert all(leakage_bruteforce(chain, q, p).leakage <= 0.3 for p in priv)


def test_the_mirror_guard_matters():
    """Why a chain on more states gets no mirror images unless it is reversible: the design of record 1 of
    3 on P3, read backwards, leaks 2.197 nats about the same record where eps = 1 (by enumeration)."""
    from redactopt.engine.joint import design_states_release

    chain = Chain(P3)
    q = np.asarray(design_states_release(chain, 3, eps=1.0, private=[1], method="optimal").redact_prob.rows(0, 3))
    assert leakage_bruteforce(chain, q, 1).leakage <= 1.0
    assert leakage_bruteforce(chain, q[::-1].copy(), 1).leakage > 2.0
