"""``--cover K``: decoys of the private runs (issue 36), tested by simulation against the stated probabilities.

Independent checks:

* over many seeded releases, the count and shape of the blocks of a sequence with a private run and
  of one without are identically distributed (a chi-square test of homogeneity), while the naive
  cover (K decoys in every sequence, the real run on top) is told apart by the same test;
* the probability that a block is the real one, given the release, is 1/(K + 1): among releases
  whose copies show as separate blocks, the real run is each of them equally often (a chi-square
  test of fit and a binomial interval), as §10d of docs/mathematics.md states;
* the decoys of a file release are judged like its private records: the exact rational evaluator
  (not the release's float judge) bounds the leakage about every decoy's centre by eps;
* the decoy starts are uniform (a chi-square test of the exact integer draws).
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from scipy.stats import binomtest, chi2_contingency, chisquare

from redactopt.engine.cache import DesignCache
from redactopt.judge.exact import exact_leakage, ratio_at_most_exp
from redactopt.judge.segments import segment
from redactopt.release.bits import SeededBits
from redactopt.release.cover import Cover, cover_of, covered_scan, draw_cover, private_runs, uniform_integers
from redactopt.release.data import ScanState
from redactopt.release.plan import plan_release

N, L, K = 90, 3, 2
ALPHA, BETA = 0.2, 0.3  # a short memory: small designs, many releases


def _state(private_codes, private_pos, n=N) -> ScanState:
    """A scan of two sequences 'A' and 'B' of ``n`` records (only their lengths and private rows matter here)."""
    none = np.full((2, 2), -1, dtype=np.int8)
    return ScanState(["A", "B"], np.array([n, n]), none.copy(), none.copy(), np.zeros((2, 2), np.int64),
                     np.zeros((2, 2, 2), np.int64), private_codes=np.asarray(private_codes, np.int64),
                     private_pos=np.asarray(private_pos, np.int64), rows=2 * n)


def _release(state: ScanState, cache: DesignCache):
    return plan_release(state, eps=1.0, alpha=ALPHA, beta=BETA, cache=cache, workers=1)


def _signature(plan, c: int) -> tuple:
    """What the release shows of sequence ``c``'s blocks: their number and their lengths, in order."""
    return tuple(b - a + 1 for a, b in plan.block_ranges(c))


def _pooled(a: Counter, b: Counter, least: int = 10) -> np.ndarray:
    """A 2 x m table of counts, the categories seen fewer than ``least`` times in all pooled into one."""
    keys = sorted(set(a) | set(b), key=str)
    big = [k for k in keys if a[k] + b[k] >= least]
    rest = [k for k in keys if k not in big]
    table = [[a[k] for k in big] + [sum(a[k] for k in rest)], [b[k] for k in big] + [sum(b[k] for k in rest)]]
    table = np.array(table)
    return table[:, table.sum(axis=0) > 0]


def _simulate(runs: int, naive: bool = False, seed: int = 36) -> tuple[Counter, Counter, list]:
    """``runs`` releases: sequence A holds one private run of length L at a uniform start, B none.  Returns
    the block signatures of A and of B, and for A the index of the real run's block among A's blocks
    (``None`` when copies merged into fewer blocks than copies)."""
    rng = np.random.default_rng(seed)
    cache = DesignCache()
    sig_a, sig_b, where = Counter(), Counter(), []
    for r in range(runs):
        a = int(rng.integers(0, N - L + 1))
        state = _state([0] * L, list(range(a, a + L)))
        if naive:  # K decoys in every sequence, whatever it holds: A shows one block more than B
            decoys = {c: [(int(s), L) for s in rng.integers(0, N - L + 1, K)] for c in (0, 1)}
            cover = Cover(K, {L: K}, {0: [(a, L)]}, decoys, "test")
        else:
            cover = cover_of(state, None, K, SeededBits(r))
        covered, _ = covered_scan(state, None, cover)
        plan = _release(covered, cache)
        sig_a[_signature(plan, 0)] += 1
        sig_b[_signature(plan, 1)] += 1
        blocks = plan.block_ranges(0)
        where.append([i for i, (lo, hi) in enumerate(blocks) if lo <= a <= hi][0]
                     if len(blocks) == K + 1 else None)
    return sig_a, sig_b, where


@pytest.fixture(scope="module")
def simulated():
    return _simulate(600)


def test_every_sequence_shows_the_same_copies():
    state = _state([0] * L + [0] * 2, [10, 11, 12, 40, 41])  # A: runs of length 3 and 2; B: none
    cover = cover_of(state, None, K, SeededBits(1))
    assert private_runs([10, 11, 12, 40, 41]) == [(10, 3), (40, 2)]
    assert cover.copies == {3: 1 + K, 2: 1 + K}
    lengths = {c: Counter(m for _, m in cover.real.get(c, []) + cover.decoys.get(c, [])) for c in (0, 1)}
    assert lengths[0] == lengths[1] == Counter({3: 1 + K, 2: 1 + K})
    assert cover.bound(3) == pytest.approx(1 / (1 + K))


@pytest.mark.slow  # hundreds of seeded releases (minutes): run with -m slow
def test_block_count_and_shape_do_not_tell_the_sequence_with_private_records(simulated):
    sig_a, sig_b, _ = simulated
    table = _pooled(sig_a, sig_b)
    assert table.shape[1] >= 3  # several shapes occur: the test compares distributions, not one value
    p = chi2_contingency(table).pvalue
    assert p > 1e-3, (p, table)


@pytest.mark.slow  # hundreds of seeded releases (minutes): run with -m slow
def test_the_same_test_tells_a_naive_cover_apart():
    sig_a, sig_b, _ = _simulate(200, naive=True)
    p = chi2_contingency(_pooled(sig_a, sig_b)).pvalue
    assert p < 1e-6


@pytest.mark.slow  # hundreds of seeded releases (minutes): run with -m slow
def test_each_block_is_the_real_one_with_probability_one_in_k_plus_one(simulated):
    _, _, where = simulated
    seen = [w for w in where if w is not None]  # releases whose K + 1 copies show as K + 1 blocks
    assert len(seen) > 300
    counts = np.bincount(seen, minlength=K + 1)
    assert chisquare(counts).pvalue > 1e-3, counts
    # the posterior of "the first block is real" is 1/(K + 1): the frequency lies in its 99.9% interval
    ci = binomtest(int(counts[0]), len(seen)).proportion_ci(0.999)
    assert ci.low <= 1 / (K + 1) <= ci.high


def test_decoy_starts_are_uniform_and_exact():
    draws = uniform_integers(SeededBits(5), key=123, bound=7, count=7000)
    assert draws.min() >= 0 and draws.max() < 7
    assert chisquare(np.bincount(draws, minlength=7)).pvalue > 1e-3
    # the cover's stream is not the redaction draws' stream of the same sequence
    words = SeededBits(5).words(123, np.arange(20))
    assert not np.array_equal(words % 7, uniform_integers(SeededBits(5), key=123, bound=7, count=20))


def test_a_sequence_too_short_for_a_run_gets_no_copy_of_it():
    cover = draw_cover({0: [0, 1, 2, 3]}, np.array([10, 3]), ["a", "b"], 2, SeededBits(0))
    assert cover.copies == {4: 3} and 1 not in cover.decoys and len(cover.decoys[0]) == 2


def test_decoys_of_a_file_release_are_judged_exactly_like_private_records(tmp_path):
    from homes import make_homes
    from redactopt.io import read_mechanisms
    from redactopt.release.apply import apply_table

    df = make_homes(homes=3, days=1, optout_homes=(1,), window=5, shuffle=False)
    src = tmp_path / "homes.csv"
    df.to_csv(src, index=False)
    # a given chain of short memory: every segment is short enough for the rational evaluator (<= 64 records)
    rep = apply_table(src, tmp_path / "out.csv", column="occupied", by="home", private_column="optout", eps=1.0,
                      seed=2, cover=1, alpha=0.2, beta=0.3, report=tmp_path / "r.json", method="dim")
    cover = rep["cover"]
    assert cover["k"] == 1 and cover["copies"] == [{"length": 5, "per_sequence": 2, "real_at_most": 1, "bound": 0.5}]
    assert cover["expected_redacted"]["with"] > cover["expected_redacted"]["without"] > 0
    runs = {d["sequence"]: d["runs"] for d in cover["decoy_runs"]}
    assert sorted(len(v) for v in runs.values()) == [1, 2, 2]  # the opted-out home: one decoy; the others two
    mechanisms = dict(read_mechanisms(tmp_path / "r.json"))
    for seq, decoys in runs.items():
        mf = mechanisms[seq]
        q = np.asarray(mf.redact_prob.rows(0, mf.redact_prob.n))
        for first, last in decoys:
            p = (first + last) // 2 - 1  # the decoy's centre record, 0-based
            assert p in mf.private  # judged by the release, and by audit
            lo, hi = segment(q, p)
            res = exact_leakage(mf.chain, q[lo:hi + 1], p - lo)
            assert ratio_at_most_exp(res.ratio, 1.0) is True
            assert math.isfinite(res.leakage) and res.leakage > 0
