"""Fitting (alpha, beta): hand counts, textbook intervals, an independent order test, the CLI."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from redactopt.model.chain import MarkovChain
from redactopt.release.fit import fit_chain
from redactopt.judge.leakage import sample_chains


# --------------------------------------------------------------------------
# estimates from hand-counted transitions
# --------------------------------------------------------------------------
def test_mle_hand_counts():
    # 0 0 1 1 0 1: 0->0 once, 0->1 twice, 1->1 once, 1->0 once
    f = fit_chain([0, 0, 1, 1, 0, 1])
    assert f.counts.tolist() == [[1, 2], [1, 1]]
    assert f.alpha == pytest.approx(2 / 3)
    assert f.beta == pytest.approx(1 / 2)
    assert f.records == 6 and f.sequences == 1


def test_pooling_never_crosses_sequences():
    # joined, the pair (..1)(0..) would add a 1->0 transition
    f = fit_chain([[0, 1, 1], [0, 0, 1]])
    assert f.counts.tolist() == [[1, 2], [0, 1]]
    # beta has no 1->0 observed: boundary estimate clamped, with a warning
    assert f.beta_mle == 0.0
    assert f.beta == pytest.approx(0.5 / 2.0)  # (0 + 1/2) / (1 + 1)
    assert any("beta MLE is 0" in w for w in f.warnings)
    assert 0.0 < f.beta < 1.0


def test_two_dimensional_array_is_many_sequences():
    f = fit_chain(np.array([[0, 1, 0], [1, 1, 0]]))
    assert f.counts.tolist() == [[0, 1], [2, 1]]
    assert f.sequences == 2


def test_short_data_warning():
    f = fit_chain([0, 1] * 10)
    assert any("only" in w and "state 0" in w for w in f.warnings)


def test_no_transition_out_of_a_state_is_an_error():
    with pytest.raises(ValueError, match="alpha"):
        fit_chain([1, 1, 1, 0])  # the only 0 is last: nothing leaves state 0


def test_non_binary_value_names_the_index():
    with pytest.raises(ValueError, match=r"\[2\]"):
        fit_chain([0, 1, 2, 1])


# --------------------------------------------------------------------------
# intervals: textbook values and coverage
# --------------------------------------------------------------------------
def test_wilson_interval_textbook_values():
    # Wilson (1927) score interval, z = 1.959964: k=0, m=10 -> [0, z^2/(m+z^2)] = [0, 0.27753];
    # k=5, m=10 -> 0.5 -+ 0.26341 = [0.23659, 0.76341] (Brown, Cai & DasGupta 2001).
    f0 = fit_chain([[0] * 11, [1, 0]])  # out of 0: ten 0->0 and no 0->1
    assert (int(f0.counts[0, 1]), int(f0.counts[0].sum())) == (0, 10)
    assert f0.alpha_ci[0] == 0.0
    assert f0.alpha_ci[1] == pytest.approx(0.27753, abs=5e-5)
    f5 = fit_chain([[0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0], [0] * 6])  # out of 0: five 0->1, five 0->0
    assert (int(f5.counts[0, 1]), int(f5.counts[0].sum())) == (5, 10)
    assert f5.alpha_ci == pytest.approx((0.23659, 0.76341), abs=5e-5)
    assert f5.alpha == 0.5


def test_likelihood_ratio_interval_solves_its_equation():
    from scipy.stats import chi2

    f = fit_chain([0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0], interval="lr")
    k, m = int(f.counts[0, 1]), int(f.counts[0].sum())
    phat = k / m

    def ll(a: float) -> float:
        return k * math.log(a) + (m - k) * math.log(1 - a)

    crit = chi2.ppf(0.95, 1)
    for end in f.alpha_ci:
        assert 2 * (ll(phat) - ll(end)) == pytest.approx(crit, abs=1e-6)
    assert f.alpha_ci[0] < phat < f.alpha_ci[1]


def test_interval_coverage_simulated():
    rng = np.random.default_rng(5)
    chain = MarkovChain(0.05, 0.2)
    hits_a = hits_b = 0
    reps = 300
    x = sample_chains(chain, 1500, reps, rng)
    for row in x:
        f = fit_chain(row)
        hits_a += f.alpha_ci[0] <= 0.05 <= f.alpha_ci[1]
        hits_b += f.beta_ci[0] <= 0.2 <= f.beta_ci[1]
    # nominal 0.95; binomial sd over 300 reps ~ 0.0126
    assert 0.90 <= hits_a / reps <= 0.99
    assert 0.90 <= hits_b / reps <= 0.99


# --------------------------------------------------------------------------
# first- vs second-order test
# --------------------------------------------------------------------------
def _g2_direct(x: list[int]) -> float:
    """2 (max loglik of the 2nd-order chain - max loglik of the 1st-order chain) on the triples."""
    from collections import Counter

    tri = Counter(zip(x[:-2], x[1:-1], x[2:]))
    ctx2 = Counter()
    ctx1 = Counter()
    pair = Counter()
    for (i, j, k), c in tri.items():
        ctx2[(i, j)] += c
        ctx1[j] += c
        pair[(j, k)] += c
    ll2 = sum(c * math.log(c / ctx2[(i, j)]) for (i, j, k), c in tri.items())
    ll1 = sum(c * math.log(pair[(j, k)] / ctx1[j]) for (i, j, k), c in tri.items())
    return 2 * (ll2 - ll1)


def test_order_test_matches_direct_likelihoods():
    rng = np.random.default_rng(9)
    x = sample_chains(MarkovChain(0.2, 0.4), 3000, 1, rng)[0].tolist()
    f = fit_chain(x)
    assert f.lr_test.statistic == pytest.approx(_g2_direct(x), rel=1e-9, abs=1e-9)
    assert f.lr_test.df == 2
    assert f.lr_test.p_value > 1e-3  # a first-order chain is not rejected


def test_order_test_detects_second_order_dependence():
    rng = np.random.default_rng(2)
    x = [0, 1]
    for _ in range(4000):  # X_t copies X_{t-2} with probability 0.9: strongly second order
        x.append(x[-2] if rng.random() < 0.9 else 1 - x[-2])
    f = fit_chain(x)
    assert f.lr_test.p_value < 1e-6
    assert any("second-order" in w for w in f.warnings)


# --------------------------------------------------------------------------
# one estimator: the binary fit is the two-category one; k states get the same intervals and test
# --------------------------------------------------------------------------
def _sample_states(P: np.ndarray, n: int, rng: np.random.Generator) -> list[int]:
    x = [0]
    cum = np.cumsum(P, axis=1)
    for u in rng.random(n - 1):
        x.append(int(np.searchsorted(cum[x[-1]], u)))
    return x


def test_binary_fit_is_the_two_category_fit():
    from redactopt.release.fit import fit_sequences

    x = [0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 1, 0]
    for interval in ("wilson", "lr", "wald"):
        b = fit_chain(x, interval=interval)
        c = fit_sequences([x], labels=["0", "1"], interval=interval)
        assert c.labels == ("0", "1") and not c.binary and b.binary
        assert np.array_equal(b.transition, c.transition) and np.array_equal(b.counts, c.counts)
        assert b.alpha_ci == (c.lower[0, 1], c.upper[0, 1]) and b.beta_ci == (c.lower[1, 0], c.upper[1, 0])
        assert b.lr_test == c.lr_test
    # a boundary row: the binary (k+1/2)/(m+1) is the two-state Krichevsky-Trofimov row
    b = fit_chain([0, 0, 0, 1, 1, 1, 1])  # 1 -> 0 never seen: 0 of 3 transitions out of state 1
    assert b.counts.tolist() == [[2, 1], [0, 3]]
    assert b.beta == (0 + 0.5) / (3 + 1) and b.beta_mle == 0.0
    assert b.transition[1].tolist() == [0.125, 0.875] and b.transition[0].tolist() == [2 / 3, 1 / 3]
    assert any("beta MLE is 0" in w for w in b.warnings)


def test_kstate_order_test_matches_direct_likelihoods():
    from redactopt.release.fit import fit_sequences

    rng = np.random.default_rng(4)
    P = np.array([[0.8, 0.15, 0.05], [0.1, 0.7, 0.2], [0.3, 0.3, 0.4]])
    x = _sample_states(P, 4000, rng)
    f = fit_sequences([x])
    order = [f.labels.index(str(s)) for s in range(3)]
    relabelled = [order[v] for v in x]  # the fit's state indices
    assert f.lr_test.statistic == pytest.approx(_g2_direct(relabelled), rel=1e-9, abs=1e-9)
    assert f.lr_test.df == 3 * 2 * 2  # k (k-1)^2 with every context seen
    assert f.lr_test.p_value > 1e-3
    y = [0, 1]
    for _ in range(4000):  # X_t copies X_{t-2} with probability 0.8 (else one of the other two): second order
        y.append(y[-2] if rng.random() < 0.8 else int(rng.choice([s for s in range(3) if s != y[-2]])))
    g = fit_sequences([y])
    assert g.lr_test.p_value < 1e-6 and any("second-order" in w for w in g.warnings)


def test_fit_edges_found_by_a_red_team():
    """Large counts, levels near 0 and 1, a binary fit that cannot smooth, no transition at all."""
    from scipy.stats import chi2, norm

    from redactopt.release.fit import fit_counts, fit_sequences

    # LR ends near 1 beyond the doubles below 1 are 1 (outward), not a failed bracket
    f = fit_counts([[10**15, 1], [1, 1]], ("a", "b"), records=1, sequences=1, interval="lr")
    assert f.upper[0, 0] == 1.0 and 0 < f.upper[0, 1] < 1e-13
    # at a low level the LR half-width is sqrt(crit p(1-p)/m) to first order (the deviance's curvature)
    m, c = 10**12, 1e-6
    f = fit_counts([[m // 2, m // 2], [1, 1]], ("a", "b"), records=1, sequences=1, interval="lr", confidence=c)
    half = math.sqrt(chi2.isf(1 - c, 1) * 0.25 / m)
    assert f.upper[0, 0] - 0.5 == pytest.approx(half, rel=1e-3)
    # a level within an ulp of 1: the quantile from the tail (scipy's isf), no rounding to 1
    c = 1 - 2**-52
    f = fit_counts([[7, 3], [2, 8]], ("a", "b"), records=1, sequences=1, confidence=c, interval="wald")
    z = norm.isf((1 - c) / 2)
    assert f.lower[1, 0] == max(0.0, 0.2 - z * math.sqrt(0.16 / 10)) == 0.0
    assert f.lower[0, 0] == pytest.approx(max(0.0, 0.7 - z * math.sqrt(0.21 / 10)), abs=1e-12)
    g = fit_counts([[7000, 3000], [2, 8]], ("a", "b"), records=1, sequences=1, confidence=c, interval="wald")
    assert g.lower[0, 1] == pytest.approx(0.3 - z * math.sqrt(0.21 / 10000), rel=1e-12)
    with pytest.raises(ValueError, match="no transition observed"):
        fit_chain([0])
    with pytest.raises(ValueError, match="needs alpha and beta in"):
        fit_chain([0, 0, 0, 1, 1, 1], smoothing="none")  # 1 -> 0 never seen: beta would be 0
    assert fit_chain([0, 0, 0, 1, 1, 0], smoothing="none").beta == 0.5  # no zero: nothing to smooth
    with pytest.raises(ValueError, match="less than 2\\*\\*62"):
        fit_counts([[2**62, 2**62], [1, 1]], ("a", "b"), records=1, sequences=1)
    with pytest.raises(ValueError, match="sequence 2: missing value at position 1"):
        fit_sequences([["a", "b"], [None, "a"]])
    g = fit_chain([0, 1, 1, 0, 1, 0, 0, 1], simultaneous=True)
    assert g.to_dict()["simultaneous"] and "simultaneous" in g.text()


def test_kstate_intervals_of_every_kind():
    from scipy.stats import chi2

    from redactopt.release.fit import fit_sequences

    x = list("aabacabbbcaacbbaaabcbacccab")
    C = {}
    for a, b in zip(x[:-1], x[1:]):
        C[(a, b)] = C.get((a, b), 0) + 1
    z = 1.959963984540054
    crit = chi2.ppf(0.95, 1)
    wald = fit_sequences([x], interval="wald", smoothing="none")
    lr = fit_sequences([x], interval="lr", smoothing="none")
    for i, a in enumerate(wald.labels):
        m = sum(c for (u, _), c in C.items() if u == a)
        for j, b in enumerate(wald.labels):
            c = C.get((a, b), 0)
            p = c / m
            half = z * math.sqrt(p * (1 - p) / m)
            assert (wald.lower[i, j], wald.upper[i, j]) == pytest.approx((max(0, p - half), min(1, p + half)))
            for end in (lr.lower[i, j], lr.upper[i, j]):
                if end in (0.0, 1.0):
                    continue
                ll = lambda q: c * math.log(q) + (m - c) * math.log(1 - q) if 0 < q < 1 else -math.inf  # noqa: E731
                top = c * math.log(p) + (m - c) * math.log(1 - p) if 0 < p < 1 else 0.0
                assert 2 * (top - ll(end)) == pytest.approx(crit, abs=1e-6)
    assert lr.to_dict()["interval"]["method"] == "lr"


# --------------------------------------------------------------------------
# the CLI
# --------------------------------------------------------------------------
def _write_csv(path, column_values, extra=True):
    df = pd.DataFrame({"t": range(1, len(column_values) + 1), "occ": column_values})
    if extra:
        df["note"] = "a"
    df.to_csv(path, index=False)


def test_cli_fit_text_and_json(tmp_path, run, capsys):
    p = tmp_path / "d.csv"
    _write_csv(p, [0, 0, 1, 1, 0, 1])
    assert run(["fit", str(p), "--column", "occ"]) == 0
    out = capsys.readouterr().out
    assert "alpha" in out and "0.666667" in out
    assert run(["fit", str(p), "--column", "occ", "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["counts"] == {"00": 1, "01": 2, "10": 1, "11": 1}
    assert d["alpha"] == pytest.approx(2 / 3) and d["beta"] == pytest.approx(0.5)


def test_cli_fit_by_and_parquet(tmp_path, run, capsys):
    df = pd.DataFrame({"id": ["a", "b", "a", "b", "a", "b"], "v": [0, 1, 1, 1, 1, 0]})
    # a: 0 1 1 ; b: 1 1 0 -> 0->1 once, 1->1 twice, 1->0 once
    p = tmp_path / "d.parquet"
    df.to_parquet(p)
    assert run(["fit", str(p), "--column", "v", "--by", "id", "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["counts"] == {"00": 0, "01": 1, "10": 1, "11": 2}
    assert d["sequences"] == 2


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_cli_categorical_fit_streams_chunk_by_chunk(tmp_path, run, capsys, fmt):
    """The categorical fit reads the file in chunks like the binary one: any chunk size gives the counts
    and triples of every sequence, counted here by hand (labels in order of first appearance)."""
    rng = np.random.default_rng(3)
    ids = rng.integers(0, 4, 900)
    v = rng.choice(["lo", "mid", "hi", "x y"], 900, p=[0.4, 0.3, 0.2, 0.1])
    df = pd.DataFrame({"id": ids, "v": v})
    p = tmp_path / f"d.{fmt}"
    df.to_csv(p, index=False) if fmt == "csv" else df.to_parquet(p)
    labels = list(dict.fromkeys(v.tolist()))
    k = len(labels)
    pairs = np.zeros((k, k), dtype=int)
    triples = np.zeros((k, k, k), dtype=int)
    for g in dict.fromkeys(ids.tolist()):
        x = [labels.index(s) for s in v[ids == g]]
        for a, b in zip(x, x[1:]):
            pairs[a, b] += 1
        for a, b, c in zip(x, x[1:], x[2:]):
            triples[a, b, c] += 1
    for chunk in ("5", "64", "100000"):
        assert run(["fit", str(p), "--column", "v", "--by", "id", "--categorical", "--format", "json",
                    "--chunk-rows", chunk]) == 0
        d = json.loads(capsys.readouterr().out)
        assert d["labels"] == labels and d["counts"] == pairs.tolist() and d["sequences"] == 4
        assert d["lr_test_second_order"]["triples"] == int(triples.sum())
    # a missing value names its row, read in chunks as in one piece
    df.loc[700, "v"] = None
    df.to_csv(p, index=False) if fmt == "csv" else df.to_parquet(p)
    assert run(["fit", str(p), "--column", "v", "--categorical", "--chunk-rows", "64"]) == 2
    assert "row 701, column 'v': missing value" in capsys.readouterr().err


def test_cli_fit_chunks_give_the_same_counts(tmp_path, run, capsys):
    rng = np.random.default_rng(1)
    ids = rng.integers(0, 3, 500)
    v = rng.integers(0, 2, 500)
    p = tmp_path / "d.csv"
    pd.DataFrame({"id": ids, "v": v}).to_csv(p, index=False)
    outs = []
    for chunk in ("7", "1000"):
        assert run(["fit", str(p), "--column", "v", "--by", "id", "--format", "json", "--chunk-rows", chunk]) == 0
        outs.append(json.loads(capsys.readouterr().out))
    assert outs[0]["counts"] == outs[1]["counts"]
    assert outs[0]["lr_test_second_order"] == outs[1]["lr_test_second_order"]
    # independent count with pandas
    df = pd.DataFrame({"id": ids, "v": v})
    nxt = df.groupby("id")["v"].shift(-1)
    ok = nxt.notna()
    n01 = int(((df["v"] == 0) & (nxt == 1) & ok).sum())
    assert outs[0]["counts"]["01"] == n01


@pytest.mark.parametrize(
    "content, needle",
    [
        ("t,occ\n1,0\n2,1\n3,2\n", "row 3, column 'occ': value '2'"),
        ("t,occ\n1,0\n2,\n3,1\n", "row 2, column 'occ': missing value"),
        ("t,occ\n1,0\n2,x\n", "row 2, column 'occ': value 'x'"),
        ("t,occ\n1,0\n2,1,9,9\n", "malformed CSV"),
    ],
)
def test_cli_fit_malformed_rows_exit_2_one_line(tmp_path, run, capsys, content, needle):
    p = tmp_path / "bad.csv"
    p.write_text(content)
    assert run(["fit", str(p), "--column", "occ"]) == 2
    err = capsys.readouterr().err
    assert needle in err
    assert err.count("\n") == 1


def test_cli_fit_unknown_column_and_unreadable_files(tmp_path, run, capsys):
    p = tmp_path / "d.csv"
    _write_csv(p, [0, 1, 0])
    assert run(["fit", str(p), "--column", "nope"]) == 2
    assert "no column 'nope'" in capsys.readouterr().err
    assert run(["fit", str(tmp_path / "missing.csv"), "--column", "occ"]) == 2
    assert "no such file" in capsys.readouterr().err
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet at all")
    assert run(["fit", str(bad), "--column", "occ"]) == 2
    err = capsys.readouterr().err
    assert "cannot read as Parquet" in err and err.count("\n") == 1
    binary = tmp_path / "bin.csv"
    binary.write_bytes(b"\xff\xfe\x00\x01garbage\n\x80\x81")
    assert run(["fit", str(binary), "--column", "occ"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    unknown = tmp_path / "d.xlsx"
    unknown.write_text("x")
    assert run(["fit", str(unknown), "--column", "occ"]) == 2
    assert "unknown table format" in capsys.readouterr().err


def test_fit_with_states_matches_numbers_by_value():
    """``states=[1, 2]`` on float data: 1.0 is the state 1 (the values' text "1.0" alone would not be).
    Counted by hand: 1,2,1,1,2,2,1 has 1->1 once, 1->2 twice, 2->1 twice, 2->2 once."""
    import redactopt

    f = redactopt.fit(np.array([1.0, 2.0, 1.0, 1.0, 2.0, 2.0, 1.0]), states=[1, 2])
    assert f.chain.labels == ("1", "2") and f.counts.tolist() == [[1, 2], [2, 1]]
    assert redactopt.fit(np.array([1, 2, 1, 1, 2, 2, 1]), states=[1, 2]).counts.tolist() == [[1, 2], [2, 1]]
    with pytest.raises(ValueError, match="value '2.5' is not one of the states"):
        redactopt.fit(np.array([1.0, 2.5]), states=[1, 2])
    with pytest.raises(ValueError, match="value 'True' is not one of the states"):
        redactopt.fit([True, False, True], states=[1, 0])  # a boolean is not taken for a number here
