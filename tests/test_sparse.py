"""Sparse designs (blocks around the private records, zero elsewhere): exact against dense and brute force.

References: :func:`leakage_bruteforce` (all 3^n outputs) on the dense array for small n,
the dense evaluator on the dense array for longer ones, and hand-built dense arrays.
"""

from __future__ import annotations


import numpy as np
import pytest

from redactopt.release.bits import SeededBits, bernoulli_exact
from redactopt.release.data import sequence_key
from redactopt.release.plan import SequencePlan
from redactopt.release.redactor import Redactor
from redactopt.errors import PrivacyCheckError
from redactopt.judge.certify import SparseRows, finalize, finalize_sparse
from redactopt.model.chain import MarkovChain
from redactopt.engine.joint import design_joint, design_joint_sparse
from redactopt.judge.lemma2 import lemma2_upper_bound
from redactopt.judge.leakage import leakage, leakage_bruteforce, utility


def _random_blocks(rng, n, n_blocks, priv_per_block=1):
    """Random disjoint blocks (start, rows) with private rows set to 1; returns parts, private, dense."""
    cuts = np.sort(rng.choice(np.arange(1, n), size=2 * n_blocks - 1, replace=False))
    edges = np.concatenate([[0], cuts, [n]])
    parts, priv = [], []
    dense = np.zeros((n, 2))
    for i in range(n_blocks):
        s, e = int(edges[2 * i]), int(edges[2 * i + 1])  # [s, e) then a gap up to edges[2i+2]
        rows = rng.random((e - s, 2))
        rows[rng.random((e - s, 2)) < 0.25] = 0.0
        rows[rng.random((e - s, 2)) < 0.2] = 1.0
        for p in rng.choice(np.arange(s, e), size=min(priv_per_block, e - s), replace=False).tolist():
            rows[p - s] = 1.0
            priv.append(int(p))
        parts.append((s, rows))
        dense[s:e] = rows
    return parts, sorted(priv), dense


def test_sparse_rows_equals_its_dense_array(rng):
    parts, _, dense = _random_blocks(rng, 40, 3)
    from redactopt.judge.certify import merge_blocks

    starts, blocks = merge_blocks(40, parts)
    sr = SparseRows(40, tuple(starts), tuple(blocks))
    assert np.array_equal(np.asarray(sr), dense)
    assert np.array_equal(np.concatenate(list(sr.chunks(7))), dense)
    for a, b in [(0, 40), (3, 17), (35, 60), (20, 20)]:
        assert np.array_equal(sr.rows(a, b), dense[a:b])


def test_overlapping_and_touching_blocks_merge_by_maximum():
    parts = [(2, np.full((3, 2), 0.2)), (4, np.full((2, 2), 0.5)), (6, np.full((1, 2), 0.1)), (9, np.ones((1, 2)))]
    from redactopt.judge.certify import merge_blocks

    starts, blocks = merge_blocks(12, parts)
    # rows 2..6 are one block (4 overlaps, 6 touches); 9 is apart (rows 7, 8 are zero)
    assert starts == [2, 9]
    assert np.allclose(blocks[0][:, 0], [0.2, 0.2, 0.5, 0.5, 0.1])


def test_finalize_sparse_matches_brute_force_per_private(rng):
    """Per-record leakage on the blocks equals enumeration of all outputs of the whole sequence."""
    for _ in range(60):
        chain = MarkovChain(*rng.uniform(0.05, 0.95, 2))
        n = int(rng.integers(5, 11))
        parts, priv, dense = _random_blocks(rng, n, 2)
        res = finalize_sparse(chain, n, parts, private=priv, eps=50.0, method="test", upper_bound=1.0,
                              solver="none")
        for p, v in zip(res.private, res.per_private):
            bf = leakage_bruteforce(chain, dense, p).leakage
            assert v == pytest.approx(bf, rel=1e-9, abs=1e-12)
        assert res.leakage == pytest.approx(max(res.per_private), abs=0)
        assert res.utility == pytest.approx(utility(chain, dense), abs=1e-14)
        assert np.array_equal(np.asarray(res.redact_prob), dense)


def test_finalize_sparse_matches_dense_finalize_on_long_sequences(rng):
    for _ in range(20):
        chain = MarkovChain(*rng.uniform(0.02, 0.6, 2))
        n = int(rng.integers(200, 2000))
        parts, priv, dense = _random_blocks(rng, n, int(rng.integers(1, 5)), priv_per_block=2)
        eps = 40.0
        sp = finalize_sparse(chain, n, parts, private=priv, eps=eps, method="t", upper_bound=1.0, solver="s")
        de = finalize(chain, dense, private=priv, eps=eps, method="t", upper_bound=1.0, solver="s")
        for p, v in zip(sp.private, sp.per_private):
            assert v == pytest.approx(leakage(chain, dense, p).leakage, rel=1e-12, abs=1e-12)
        assert sp.leakage == pytest.approx(de.leakage, rel=1e-12)
        assert sp.utility == pytest.approx(de.utility, abs=1e-13)
        # the witness, placed at its offset, attains the worst leakage on the dense array
        w = sp.witness
        assert w.p + sp.witness_offset in priv


def test_finalize_sparse_refuses_leaky_or_uncovered_designs():
    chain = MarkovChain(0.1, 0.2)
    n = 1000
    # a lone redacted private record leaks a lot through its neighbours
    with pytest.raises(PrivacyCheckError, match="exceeds eps"):
        finalize_sparse(chain, n, [(500, np.ones((1, 2)))], private=[500], eps=0.5, method="t",
                        upper_bound=1.0, solver="s")
    # a private record outside every block would be published
    with pytest.raises(PrivacyCheckError, match="record 901 would be published"):
        finalize_sparse(chain, n, [(400, np.ones((200, 2)))], private=[500, 900], eps=5.0, method="t",
                        upper_bound=1.0, solver="s")
    with pytest.raises(ValueError, match="does not fit"):
        finalize_sparse(chain, n, [(990, np.ones((20, 2)))], private=[995], eps=5.0, method="t",
                        upper_bound=1.0, solver="s")


def test_design_joint_sparse_equals_dense_design():
    chain = MarkovChain(0.05, 0.2)
    n = 4000
    priv = [3, 4, 1200, 1203, 3999]
    for method in ("auto", "dim"):
        d = design_joint(chain, n, eps=1.0, private=priv, method=method)
        s = design_joint_sparse(chain, n, eps=1.0, private=priv, method=method)
        assert np.array_equal(np.asarray(s.redact_prob), d.redact_prob)
        assert s.utility == pytest.approx(d.utility, abs=1e-13)
        assert s.leakage == pytest.approx(d.leakage, rel=1e-12)
        for p, v in zip(s.private, s.per_private):
            assert v == pytest.approx(leakage(chain, d.redact_prob, p).leakage, rel=1e-12)
            assert v <= 1.0


def test_design_joint_sparse_memory_does_not_grow_with_n():
    """At n = 10^8 the design holds a few hundred rows, the same blocks as at n = 10^4 (shifted)."""
    chain = MarkovChain(0.003118, 0.01157)
    shapes = []
    for n in (10**4, 10**8):
        priv = [10, 11, 12, n // 2, n - 3]
        s = design_joint_sparse(chain, n, eps=1.0, private=priv)
        rows = sum(b.shape[0] for b in s.redact_prob.blocks)
        assert rows < 1000
        assert max(s.per_private) <= 1.0
        shapes.append(([b.shape for b in s.redact_prob.blocks], s.per_private,
                       [st - (n // 2 if i == 1 else n if i == 2 else 0) for i, st in enumerate(s.redact_prob.starts)]))
        # the certificate is Lemma 2's bound for the whole sequence
        expected_redacted = sum(float((b @ chain.stationary).sum()) for b in s.redact_prob.blocks)
        assert s.utility == pytest.approx(1 - expected_redacted / n, rel=1e-15)
    assert shapes[0] == shapes[1]


def test_lemma2_bound_with_far_apart_private_records():
    # each far-apart group costs only its own stretch: the bound is the sum of the groups'
    # exclusions, computed here group by group on short sequences
    chain = MarkovChain(0.1, 0.3)
    n = 5000
    for priv in ([0, 4999], [3, 2500, 2501, 4990], [100, 140, 4000]):
        excluded = 0.0
        for group in ([p for p in priv if p < 1000], [p for p in priv if 1000 <= p < 3500], [p for p in priv if p >= 3500]):
            if group:
                lo = max(0, group[0] - 200)
                m = min(n, group[-1] + 201) - lo
                excluded += m * (1.0 - lemma2_upper_bound(chain, m, eps=0.5, private=[p - lo for p in group]))
        assert lemma2_upper_bound(chain, n, eps=0.5, private=priv) == pytest.approx((n - excluded) / n, rel=1e-13)


def _hand_dense_mask(q, codes, positions, values, keys, seed):
    """Reference draws: per sequence, bernoulli_exact on the dense q of each record."""
    out = np.zeros(positions.shape[0], dtype=bool)
    for c, (qc, key) in enumerate(zip(q, keys)):
        sel = np.flatnonzero(codes == c)
        probs = qc[positions[sel], values[sel]]
        out[sel] = bernoulli_exact(probs, SeededBits(seed), key=key, positions=positions[sel])
    return out


def test_redactor_with_several_blocks_and_sequences_draws_like_the_dense_table(rng):
    chain = MarkovChain(0.1, 0.2)
    ids = ["a", "b", "c"]
    ns = [300, 50, 400]
    plans, dense = [], []
    for sid, n in zip(ids, ns):
        if sid == "b":
            plans.append(SequencePlan(sid, n, (), None))
            dense.append(np.zeros((n, 2)))
            continue
        parts, priv, q = _random_blocks(rng, n, 3)
        res = finalize_sparse(chain, n, parts, private=priv, eps=60.0, method="t", upper_bound=1.0, solver="s")
        plans.append(SequencePlan(sid, n, tuple(priv), res))
        dense.append(q)
    # interleaved records, each sequence in its own order
    codes = np.concatenate([np.full(n, c) for c, n in enumerate(ns)])
    positions = np.concatenate([np.arange(n) for n in ns])
    order = rng.permutation(codes.shape[0])
    codes, positions = codes[order].astype(np.int64), positions[order].astype(np.int64)
    values = rng.integers(0, 2, codes.shape[0]).astype(np.int64)
    keys = [sequence_key(s) for s in ids]
    want = _hand_dense_mask(dense, codes, positions, values, keys, seed=5)
    red = Redactor(plans, SeededBits(5))
    got = np.concatenate([red.redact(codes[a : a + 97], positions[a : a + 97], values[a : a + 97])
                          for a in range(0, codes.shape[0], 97)])
    assert np.array_equal(got, want)
    # one sequence: consecutive positions, several blocks crossing chunk edges
    single = Redactor([plans[0]], SeededBits(5))
    v0 = rng.integers(0, 2, ns[0]).astype(np.int64)
    got0 = np.concatenate([single.redact(None, np.arange(a, min(a + 41, ns[0])), v0[a : a + 41])
                           for a in range(0, ns[0], 41)])
    c0 = np.zeros(ns[0], dtype=np.int64)
    assert np.array_equal(got0, _hand_dense_mask([dense[0]], c0, np.arange(ns[0]), v0, [keys[0]], seed=5))
    assert not got0[~dense[0][np.arange(ns[0]), v0].astype(bool)].any()


def test_blocks_are_exactly_the_redactable_rows():
    """Local windows are padded with always-published rows; the design's blocks must not include them."""
    chain = MarkovChain(0.2, 0.4)
    s = design_joint_sparse(chain, 10_000, eps=0.5, private=[5000, 9000], method="dim")
    dense = np.asarray(s.redact_prob)
    nz = dense.any(axis=1)
    runs = []  # maximal stretches between always-published rows, by hand
    t = 0
    while t < dense.shape[0]:
        if nz[t]:
            u = t
            while u + 1 < dense.shape[0] and nz[u + 1]:
                u += 1
            runs.append((t, u))
            t = u + 1
        else:
            t += 1
    got = [(st, st + b.shape[0] - 1) for st, b in zip(s.redact_prob.starts, s.redact_prob.blocks)]
    assert got == runs  # here each block has no inner published row
    for b in s.redact_prob.blocks:
        assert b[0].any() and b[-1].any()
    plan = SequencePlan("x", 10_000, (5000, 9000), s)
    assert plan.span() == (runs[0][0], runs[-1][1])


def test_padded_parts_are_trimmed_and_still_verified(rng):
    chain = MarkovChain(0.3, 0.2)
    n = 60
    core = rng.random((5, 2))
    core[2] = 1.0
    padded = np.zeros((15, 2))
    padded[5:10] = core
    res = finalize_sparse(chain, n, [(20, padded), (50, np.zeros((4, 2)))], private=[27], eps=30.0,
                          method="t", upper_bound=1.0, solver="s")
    assert res.redact_prob.starts == (25,) and np.array_equal(res.redact_prob.blocks[0], core)
    dense = np.zeros((n, 2))
    dense[25:30] = core
    assert res.per_private[0] == pytest.approx(leakage(chain, dense, 27).leakage, rel=1e-12)


def test_sparse_rows_with_many_blocks(rng):
    n = 5000
    parts, _, dense = _random_blocks(rng, n, 200)
    from redactopt.judge.certify import merge_blocks

    sr = SparseRows(n, *map(tuple, merge_blocks(n, parts)))
    for _ in range(200):
        a = int(rng.integers(0, n))
        b = a + int(rng.integers(0, 300))
        assert np.array_equal(sr.rows(a, b), dense[a:b])


def test_region_certificates_bound_what_any_private_mechanism_publishes():
    # Isolated private records designed with method="optimal" carry the two-sided frontier's
    # bound for their region, clustered ones the one-sided frontiers' of the cluster's outer
    # sides (never above Lemma 2's).  Every region bound lies above what the design
    # publishes there, and the whole-sequence bound is the sum of the regions plus one per row
    # outside them (checked against the dense Lemma 2 formula, a weaker bound).
    chain = MarkovChain(0.05, 0.2)
    n = 20_000
    priv = [100, 10_000, 10_003, n - 5]
    s = design_joint_sparse(chain, n, eps=1.0, private=priv, method="optimal")
    assert [r.solver for r in s.regions] == ["frontier-dp"] * 3
    inside = 0
    for r in s.regions:
        assert r.upper_bound >= r.published - 1e-9
        m = r.stop - r.start + 1
        mine = [p - r.start for p in priv if r.start <= p <= r.stop]
        assert r.upper_bound <= m * lemma2_upper_bound(chain, m, eps=1.0, private=mine) + 1e-9
        dense = np.asarray(s.redact_prob)[r.start : r.stop + 1]
        assert r.published == pytest.approx(float(((1 - dense) @ chain.stationary).sum()), rel=1e-12)
        inside += r.stop - r.start + 1
    total = sum(r.upper_bound for r in s.regions) + n - inside
    assert s.certificate.upper_bound == pytest.approx(min(total / n, lemma2_upper_bound(chain, n, eps=1.0, private=priv)))
    assert s.certificate.upper_bound <= lemma2_upper_bound(chain, n, eps=1.0, private=priv)
    # the frontier's region bound is far tighter than Lemma 2's over the same rows
    r0 = s.regions[0]
    m = r0.stop - r0.start + 1
    assert r0.upper_bound < m * lemma2_upper_bound(chain, m, eps=1.0, private=[100 - r0.start]) - 1.0


# --------------------------------------------------------------------------
# one certify / verify / finalize for every chain (issue 25)
# --------------------------------------------------------------------------
def test_three_state_blocks_verify_as_the_dense_array():
    from redactopt.model.chain import Chain

    c = Chain([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4]], labels=("a", "b", "c"))
    n = 5000
    rng = np.random.default_rng(5)
    parts = []
    for p in (100, 4000):
        blk = np.minimum(1.0, 0.6 + 0.4 * rng.random((9, 3)))
        blk[4] = 1.0
        parts.append((p - 4, blk))
    sparse = finalize_sparse(c, n, parts, private=[100, 4000], eps=8.0, method="hand", upper_bound=1.0,
                             solver="none")
    assert isinstance(sparse.redact_prob, SparseRows) and sparse.redact_prob.shape == (n, 3)
    dense = np.asarray(sparse.redact_prob)
    assert dense.shape == (n, 3)
    full = finalize(c, dense, private=[100, 4000], eps=8.0, method="hand", upper_bound=1.0, solver="none")
    assert full.leakage == pytest.approx(sparse.leakage, rel=1e-12)
    assert full.utility == pytest.approx(sparse.utility, rel=1e-12)
    assert sparse.per_private == pytest.approx([leakage(c, dense, 100).leakage, leakage(c, dense, 4000).leakage],
                                               rel=1e-12)
    assert full.witness.witness_output()[100] is None and set(full.witness.witness_output()) <= {"a", "b", "c", None}


def test_finalize_judges_the_chain_not_its_form():
    from fractions import Fraction

    from redactopt.model.chain import Chain

    A, B = Fraction(0.2), Fraction(0.3)
    q = np.array([[0.3, 0.9], [1.0, 1.0], [0.5, 0.0], [0.0, 0.0]])
    eps = leakage(MarkovChain(0.2, 0.3), q, 1).leakage + 0.5
    a = finalize(MarkovChain(0.2, 0.3), q, private=[1], eps=eps, method="hand", upper_bound=1.0, solver="none")
    b = finalize(Chain([[1 - A, A], [B, 1 - B]], labels=("x", "y")), q, private=[1], eps=eps, method="hand",
                 upper_bound=1.0, solver="none")
    assert (a.leakage, a.utility) == (b.leakage, b.utility)
    assert b.witness.witness_output()[1] is None and b.witness.labels == ("x", "y")


def test_band_of_each_kernel_by_hand():
    from redactopt.judge.tolerances import boundary_zone, chain_zone
    from redactopt.model.chain import Chain

    assert boundary_zone(1.0, 84) == 1e-9 + 1e-15 * 100  # the binary kernel: 1e-15 per record
    assert boundary_zone(1.0, 84, 3) == 1e-9 + 4 * 3 * 2.0**-52 * 100  # the matrix kernel: 4 k ulps per record
    assert chain_zone(MarkovChain(0.2, 0.3), 1.0, 84) == boundary_zone(1.0, 84)
    assert chain_zone(Chain([[0.5, 0.5], [1.0, 0.0]]), 1.0, 84) == boundary_zone(1.0, 84, 2)
