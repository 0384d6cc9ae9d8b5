"""Owner and holder mechanisms (issue 26): exact leakage, the optimum over every mechanism, long sequences.

Expected numbers are derived independently: leakage by summing every record tuple and release
mask in rational arithmetic (a loop written here, not the code's vectorised one), hand-worked
mechanisms (the two neighbours of p published exactly when they differ leak nothing on a
symmetric chain), Lemma 2's exclusions in closed form, and a two-record holder problem written
out as its own small LP.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.optimize import linprog

from redactopt.classes_io import mechanism_from_dict, mechanism_to_dict
from redactopt.judge.scan import owner_leakage, owner_ratio_exact, verify_mechanism
from redactopt.model.chain import MarkovChain
from redactopt.model.chain import Chain
from redactopt.model.mechanism_classes import BlockMechanism, OwnerMechanism, as_kchain
from redactopt.engine.class_judge import block_design, design_owner
from redactopt.solvers.owner_lp import BlockInfeasible, window_bound


def brute_ratio(kc: Chain, n: int, p: int, table: np.ndarray, holder: bool) -> Fraction | None:
    """Worst ratio of Definition 1: every tuple, every mask, rationals (rows divided by their exact sums)."""
    k = kc.k
    P = [list(r) for r in kc.exact_transition()]
    pi = list(kc.exact_stationary())
    others = [t for t in range(n) if t != p]
    lik: dict[tuple, list[Fraction]] = {}
    for x in itertools.product(range(k), repeat=n):
        px = pi[x[0]]
        for t in range(n - 1):
            px *= P[x[t]][x[t + 1]]
        if holder:
            row = sum(x[t] * k**t for t in range(n))
        else:
            row = sum(x[t] * k**j for j, t in enumerate(others))
        weights = [Fraction(float(v)) for v in table[row]]
        total = sum(weights)
        for mask, wgt in enumerate(weights):
            if wgt == 0:
                continue
            out = tuple(x[t] if (mask >> j) & 1 else None for j, t in enumerate(others))
            vec = lik.setdefault(out, [Fraction(0)] * k)
            vec[x[p]] += px * wgt / total / pi[x[p]]
    top: Fraction | None = Fraction(-1)
    for vec in lik.values():
        for a in range(k):
            for b in range(k):
                if a != b and vec[a] != 0:
                    if vec[b] == 0:
                        return None
                    top = max(top, vec[a] / vec[b])
    return top


@pytest.mark.parametrize("seed", range(10))
def test_table_leakage_matches_enumeration(seed):
    rng = np.random.default_rng(seed)
    k = 2 + seed % 2
    n = 2 + seed % 3
    p = int(rng.integers(0, n))
    P = rng.random((k, k)) + 0.05
    kc = Chain(P / P.sum(axis=1, keepdims=True))
    holder = seed % 2 == 1
    rows = k ** (n if holder else n - 1)
    T = rng.random((rows, 2 ** (n - 1)))
    T[rng.random(T.shape) < 0.4] = 0.0
    T[:, 0] += 1e-3
    mech = OwnerMechanism(kc, n, p, T, holder=holder)
    want = brute_ratio(kc, n, p, T, holder)
    got, exact = owner_leakage(mech), owner_ratio_exact(mech)[0]
    assert exact == want
    if want is None:
        assert math.isinf(got.leakage)
        return
    assert got.ratio_lo <= float(want) * (1 + 1e-15) and float(want) <= got.ratio_hi * (1 + 1e-15)


def test_differing_neighbours_leak_nothing():
    # Symmetric chain (alpha = beta): Pr(X_{p-1} = a, X_{p+1} = b | X_p = x) = P(x, a) P(x, b), and for
    # a != b that is alpha (1 - alpha) whatever x.  Publishing both neighbours exactly when they differ
    # (else nothing) is therefore 0-private; local mechanisms can publish nothing at eps -> 0.
    alpha = 0.1
    kc = as_kchain(MarkovChain(alpha, alpha))
    T = np.zeros((4, 4))
    for row in range(4):  # digits: X_1 (bit 0), X_3 (bit 1); masks: bit 0 = record 1, bit 1 = record 3
        a, b = row & 1, row >> 1
        T[row, 3 if a != b else 0] = 1.0
    mech = OwnerMechanism(kc, 3, 1, T)
    assert owner_ratio_exact(mech)[0] == 1
    u = mech.utility()
    assert u == pytest.approx(2 * alpha * (1 - alpha) * 2 / 3, abs=1e-15)
    d = design_owner(MarkovChain(alpha, alpha), 3, eps=1e-6, p=1)
    assert d.utility >= u - 1e-6


def test_example1_owner_equals_local():
    # n = 2: an owner mechanism reads X_2 only, so it is a local one: Example 1's 0.2936 again.
    a = math.exp(-0.5)
    p2 = (0.5 * a - 0.25) / (0.75 - 0.5 * a)
    want = (1.0 - p2) * (2.0 / 3.0) / 2.0
    d = design_owner(MarkovChain(0.25, 0.5), 2, eps=0.5, p=0)
    assert d.utility == pytest.approx(want, abs=1e-8)
    assert d.certificate.upper_bound >= want - 1e-12 and d.certificate.gap <= 1e-8


def test_holder_two_records_by_hand():
    # X_1 private, X_2 published with probability h(x1, x2): four unknowns u[x][v] = P(x, v) h(x, v).
    alpha, beta, eps = 0.25, 0.5, 0.5
    P = [[1 - alpha, alpha], [beta, 1 - beta]]
    pi = [beta / (alpha + beta), alpha / (alpha + beta)]
    E = math.exp(eps)
    c = [-pi[0], -pi[0], -pi[1], -pi[1]]            # maximise sum_x pi_x (u[x][0] + u[x][1]); variables u00 u01 u10 u11
    A, b = [], []
    for v in (0, 1):                                  # published v: u[0][v] <= E u[1][v] and back
        r = [0.0] * 4
        r[v], r[2 + v] = 1.0, -E
        A.append(r), b.append(0.0)
        r = [0.0] * 4
        r[2 + v], r[v] = 1.0, -E
        A.append(r), b.append(0.0)
    A.append([-1.0, -1.0, E, E]), b.append(E - 1.0)  # 1 - U0 <= E (1 - U1)
    A.append([E, E, -1.0, -1.0]), b.append(E - 1.0)  # 1 - U1 <= E (1 - U0)
    bounds = [(0, P[0][0]), (0, P[0][1]), (0, P[1][0]), (0, P[1][1])]
    want = -linprog(c, A_ub=A, b_ub=b, bounds=bounds, method="highs").fun / 2
    d = design_owner(MarkovChain(alpha, beta), 2, eps=eps, p=0, holder=True)
    assert d.utility == pytest.approx(want, abs=1e-8)
    assert d.utility > 0.2936 + 0.01  # reading X_p pays already at n = 2


def test_owner_publishes_where_local_cannot():
    # n = 7, p = 4 (1-based), alpha = beta = 0.1, eps = 1: every record is within distance 3 of p, and
    # Lemma 2 excludes every value there: i(d) = log((1 + lam^d) / (1 - lam^d)) > 1 for lam = 0.8, d <= 3.
    lam = 0.8
    assert all(math.log((1 + lam**d) / (1 - lam**d)) > 1 for d in (1, 2, 3))
    d = design_owner(MarkovChain(0.1, 0.1), 7, eps=1.0, p=3)
    assert d.utility > 0.39
    r = brute_ratio(d.mechanism.chain, 7, 3, d.mechanism.table, False)
    assert r is not None and r <= Fraction(math.exp(1.0))
    h = design_owner(MarkovChain(0.1, 0.1), 7, eps=1.0, p=3, holder=True)
    assert h.utility >= d.utility and h.certificate.upper_bound >= h.utility


def _as_full_table(mech: BlockMechanism) -> OwnerMechanism:
    """The block mechanism as a table over all n records (outside records published), for enumeration."""
    n, p, k, inner = mech.n, mech.p, mech.chain.k, mech.inner
    others = [t for t in range(n) if t != p]
    inner_others = [t for t in range(inner.n) if t != inner.p]
    T = np.zeros((k ** (n - 1), 2 ** (n - 1)))
    for row in range(k ** (n - 1)):
        vals = {t: (row // k**j) % k for j, t in enumerate(others)}
        irow = sum(vals[mech.start + t] * k**j for j, t in enumerate(inner_others))
        for imask, w in enumerate(inner.table[irow]):
            if w == 0:
                continue
            mask = 0
            for j, t in enumerate(others):
                inside = mech.start <= t < mech.start + inner.n
                bit = (imask >> inner_others.index(t - mech.start)) & 1 if inside else 1
                mask |= bit << j
            T[row, mask] += w
    return OwnerMechanism(mech.chain, n, p, T)


def test_block_design_is_exact_for_the_whole_sequence():
    chain = MarkovChain(0.01, 0.8)
    with pytest.raises(BlockInfeasible):  # records at distance 2 cannot be published for sure at eps = 0.5
        block_design(chain, 8, eps=0.5, p=3, total=5)
    with pytest.raises(BlockInfeasible):  # both boundaries at distance 3: 0.44 nats each, 0.88 together
        block_design(chain, 9, eps=0.5, p=4, total=7)
    d = block_design(chain, 8, eps=0.5, p=0, total=5, bound_total=5)
    assert isinstance(d.mechanism, BlockMechanism)
    full = _as_full_table(d.mechanism)
    r = brute_ratio(full.chain, 8, 0, full.table, False)
    assert r is not None and r <= Fraction(math.exp(0.5))
    assert math.log(r) == pytest.approx(d.leakage.leakage, abs=1e-12)
    assert full.utility() == pytest.approx(d.utility, abs=1e-13)


def test_window_bound_holds_for_the_exact_optimum():
    chain = MarkovChain(0.01, 0.8)
    exact = design_owner(chain, 8, eps=0.5, p=3)
    ub, win = window_bound(chain, 8, eps=0.5, p=3, total=5)
    assert win[1] == 5 and ub >= exact.utility - 1e-12


def test_long_sequences_beat_the_scan():
    from redactopt.engine.class_judge import design_scan

    chain = MarkovChain(0.01, 0.8)
    for n, p, total in ((20, 0, 7), (20, 10, 9)):
        s = design_scan(chain, n, eps=0.5, p=p, time_limit=20)
        o = block_design(chain, n, eps=0.5, p=p, total=total, bound_total=9)
        assert o.utility > s.certificate.upper_bound
        assert o.certificate.upper_bound >= o.utility
        status, _ = verify_mechanism(o.mechanism, 0.5)
        assert status == "certified"


def test_file_round_trip():
    d = block_design(MarkovChain(0.01, 0.8), 12, eps=0.5, p=0, total=6, bound_total=6)
    obj = mechanism_to_dict(d.mechanism, eps=0.5)
    assert obj["class"] == "owner" and obj["block"]["start"] == d.mechanism.start + 1
    mech, _ = mechanism_from_dict(obj)
    assert isinstance(mech, BlockMechanism) and np.array_equal(mech.inner.table, d.mechanism.inner.table)
    small = design_owner(MarkovChain(0.1, 0.1), 3, eps=1.0, p=1, holder=True)
    mech, _ = mechanism_from_dict(mechanism_to_dict(small.mechanism, eps=1.0))
    assert mech.holder and np.array_equal(mech.table, small.mechanism.table)
    with pytest.raises(ValueError, match="table"):
        mechanism_from_dict(dict(mechanism_to_dict(small.mechanism, eps=1.0), table=[[1.0]]))


def test_release_draws_follow_the_mechanism():
    from collections import Counter

    from redactopt.release.class_release import MultiplePrivateError, _pick, draw, release_sequence
    from redactopt.release.bits import SeededBits

    counts = Counter(_pick(np.array([1.0, 3.0, 0.0]), SeededBits(1), key, 0) for key in range(2000))
    assert counts[2] == 0 and abs(counts[1] / 2000 - 0.75) < 0.04
    chain = MarkovChain(0.1, 0.1)
    d = design_owner(chain, 3, eps=1e-6, p=1)
    # records (0, 1, 1): the neighbours differ, so both are published with the LP's probability
    outs = Counter(tuple(draw(d.mechanism, [0, 1, 1], seed=3, key=key).tolist()) for key in range(2000))
    assert set(outs) <= {(-1, -1, -1), (0, -1, 1), (0, -1, -1), (-1, -1, 1)}
    rel = release_sequence(["0", "1", "0", "0", "1", "1", "0"], as_kchain(chain), eps=1.0, private=[0],
                           cls="owner", seed=5)
    assert rel.released[0] is None and rel.report["verdicts"][0]["verdict"] == "certified"
    assert "not for real releases" in rel.report["note"]
    with pytest.raises(MultiplePrivateError, match="one private record"):
        release_sequence(["0"] * 9, as_kchain(chain), eps=1.0, private=[2, 6], cls="scan", seed=5)


def test_audit_and_many_sequences():
    from redactopt.classes_io import audit_dict
    from redactopt.release.class_release import release_sequences

    chain = as_kchain(MarkovChain(0.01, 0.8))
    d = design_owner(chain, 4, eps=0.5, p=0)
    rep = audit_dict(mechanism_to_dict(d.mechanism, eps=0.5))
    assert rep["passed"] and rep["utility"] == pytest.approx(d.utility, abs=1e-14)
    bad = audit_dict(mechanism_to_dict(d.mechanism, eps=0.1))
    assert bad["verdict"] == "violated" and not bad["passed"]
    seqs = {"a": (["0", "0", "1", "0"], [0]), "b": (["1", "0", "0", "0"], [0]), "c": (["0"] * 5, [0])}
    out = release_sequences(seqs, chain, eps=0.5, cls="owner", seed=2)
    assert [e["design"] for e in out["report"]["sequences"]] == [0, 0, 1]
    assert all(out["released"][k][0] is None for k in seqs)
