"""k-state fit, mechanism files, audits, releases and the command line (issue 17)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from redactopt.engine.kdesign import kdesign
from redactopt.io import mechanism_from_dict
from redactopt.judge.audit import kaudit
from redactopt.judge.exact import exact_leakage
from redactopt.judge.leakage import leakage, leakage_segment, log_likelihood_ratio
from redactopt.io import kmechanism_from_dict
from redactopt.kio import KFORMAT, chain_from_dict, kdesign_to_dict
from redactopt.model.chain import Chain
from redactopt.release.kapply import kapply_frame, kapply_table
from redactopt.release.fit import fit_sequences

from test_kleakage import random_chain

P3 = [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4]]


# --------------------------------------------------------------------------
# fit
# --------------------------------------------------------------------------
def test_fit_counts_labels_and_mle_by_hand():
    seq = ["b", "b", "a", "c", "a", "a", "b", "c", "c", "a"]
    fit = fit_sequences([seq])
    assert fit.labels == ("b", "a", "c")  # order of first appearance
    # transitions: b->b, b->a, a->c, c->a, a->a, a->b, b->c, c->c, c->a
    want = {("b", "b"): 1, ("b", "a"): 1, ("a", "c"): 1, ("c", "a"): 2, ("a", "a"): 1, ("a", "b"): 1,
            ("b", "c"): 1, ("c", "c"): 1}
    for i, s in enumerate(fit.labels):
        for j, t in enumerate(fit.labels):
            assert fit.counts[i, j] == want.get((s, t), 0)
    assert np.allclose(fit.mle, fit.counts / fit.counts.sum(axis=1, keepdims=True))
    assert fit.records == 10 and fit.sequences == 1
    # c -> b never seen: the c row is Krichevsky-Trofimov, (n + 1/2) / (n_c + 3/2)
    c = fit.labels.index("c")
    assert np.allclose(fit.transition[c], (fit.counts[c] + 0.5) / (3 + 1.5))
    assert any("c->b" in w and "Krichevsky" in w for w in fit.warnings)
    assert np.allclose(fit.transition[0], fit.mle[0])  # a full row keeps its MLE


def test_fit_wilson_interval_formula():
    seq = ["x"] * 40 + ["y"] * 10 + ["x"] * 5 + ["y"]
    fit = fit_sequences([seq], confidence=0.95)
    i, j = fit.labels.index("x"), fit.labels.index("y")
    k_, m = fit.counts[i, j], fit.counts[i].sum()
    z = 1.959963984540054
    p = k_ / m
    centre = (p + z * z / (2 * m)) / (1 + z * z / m)
    half = z * math.sqrt(p * (1 - p) / m + z * z / (4 * m * m)) / (1 + z * z / m)
    assert fit.lower[i, j] == pytest.approx(centre - half, rel=1e-9)
    assert fit.upper[i, j] == pytest.approx(centre + half, rel=1e-9)
    assert fit.lower[i, j] < fit.transition[i, j] < fit.upper[i, j]


def test_fit_sequences_are_not_joined_and_fixed_labels():
    fit = fit_sequences([["a", "b"], ["c", "a"]], labels=["a", "b", "c"])
    assert fit.counts.sum() == 2  # b -> c across the two sequences is not a transition
    assert fit.labels == ("a", "b", "c")
    assert np.allclose(fit.transition[1], 1 / 3) and any("'b' is never followed" in w for w in fit.warnings)
    with pytest.raises(ValueError, match="not one of the states"):
        fit_sequences([["a", "d"]], labels=["a", "b"])


def test_fit_smoothing_none_keeps_zeros_and_errors():
    seq = list("aabbaabbcabbcaab")
    fit = fit_sequences([seq], smoothing="none")
    assert np.array_equal(fit.transition, fit.mle)
    assert any("impossible" in w for w in fit.warnings)
    with pytest.raises(ValueError, match="at least 2"):
        fit_sequences([["a", "a", "a"]])
    with pytest.raises(ValueError, match="missing value at position 2"):
        fit_sequences([["a", None, "b"]])


@pytest.mark.parametrize("missing", [np.float32("nan"), pd.NA, None, float("nan"), pd.NaT])
def test_fit_refuses_every_kind_of_missing_value(missing):
    """float32 NaN and pd.NA used to become states named 'nan' and '<NA>'."""
    with pytest.raises(ValueError, match="missing value at position 3"):
        fit_sequences([["a", "b", missing, "a", "b"]])


@pytest.mark.parametrize("bad", [[[-1, 2], [1, 1]], [[1.5, 2], [1, 1]], [[np.nan, 2], [1, 1]], [["1", "2"], ["1", "1"]]])
def test_fit_counts_must_be_whole_and_non_negative(bad):
    from redactopt.release.fit import fit_counts

    with pytest.raises(ValueError, match="non-negative whole numbers"):
        fit_counts(bad, ("a", "b"), records=6, sequences=1)
    fit = fit_counts([[1.0, 3.0], [2.0, 2.0]], ("a", "b"), records=9, sequences=1, smoothing="none")
    assert fit.transition.tolist() == [[0.25, 0.75], [0.5, 0.5]]


def test_fit_recovers_a_chain(rng):
    c = Chain(P3, labels=("lo", "mid", "hi"))
    x = [0]
    for _ in range(60_000):
        x.append(int(rng.choice(3, p=c.transition[x[-1]])))
    fit = fit_sequences([[c.labels[v] for v in x]])
    order = [fit.labels.index(s) for s in c.labels]
    est = fit.transition[np.ix_(order, order)]
    assert np.allclose(est, c.transition, atol=0.02)
    lo, hi = fit.lower[np.ix_(order, order)], fit.upper[np.ix_(order, order)]
    assert np.mean((lo <= c.transition) & (c.transition <= hi)) >= 7 / 9


# --------------------------------------------------------------------------
# files
# --------------------------------------------------------------------------
def test_kmechanism_roundtrip_and_old_readers_refuse():
    c = Chain(P3, labels=("lo", "mid", "hi"))
    res = kdesign(c, 9, eps=1.0, p=4, method="dim")
    d = json.loads(json.dumps(kdesign_to_dict(res)))
    assert d["format"] == KFORMAT and d["states"] == ["lo", "mid", "hi"]
    mf = kmechanism_from_dict(d)
    assert np.array_equal(mf.redact_prob, res.redact_prob) and mf.private == (4,) and mf.chain == c
    # every record outside the blocks is published
    assert sum(len(b["redact_prob"]) for b in d["blocks"]) == int(res.redact_prob.any(axis=1).sum())
    with pytest.raises(ValueError, match="given as a 3-state matrix"):
        mechanism_from_dict(d)  # the binary reader says why it refuses
    bad = dict(d, states=["a", "b", "c"])
    with pytest.raises(ValueError, match="states"):
        kmechanism_from_dict(bad)
    bad = dict(d, blocks=[{"start": 1, "redact_prob": [[0.5, 0.5]]}])
    with pytest.raises(ValueError, match=r"shape \(n, 3\) \(one column per state\)"):
        kmechanism_from_dict(bad)
    assert chain_from_dict({"labels": ["x", "y"], "transition": [[0.5, 0.5], [0.1, 0.9]]}).labels == ("x", "y")


def test_kstate_reader_refuses_adjacent_blocks_like_the_binary_reader():
    # issue 25: blocks are maximal runs separated by a row published for sure, for every k
    c = Chain(P3, labels=("lo", "mid", "hi"))
    d = json.loads(json.dumps(kdesign_to_dict(kdesign(c, 9, eps=1.0, p=4, method="dim"))))
    (only,) = d["blocks"]
    rows, s = only["redact_prob"], only["start"]
    split = [{"start": s, "redact_prob": rows[:1]}, {"start": s + 1, "redact_prob": rows[1:]}]
    with pytest.raises(ValueError, match="separated by at least one row published with certainty"):
        kmechanism_from_dict(dict(d, blocks=split))
    # the same split as a binary file is refused with the same words
    binary = {"format": "redactopt.mechanism/2", "chain": {"alpha": 0.1, "beta": 0.2}, "n": 9, "private": [5], "eps": 1.0,
              "blocks": [{"start": 4, "redact_prob": [[0.5, 0.5]]}, {"start": 5, "redact_prob": [[1, 1]]}]}
    with pytest.raises(ValueError, match="separated by at least one row published with certainty"):
        mechanism_from_dict(binary)


def test_segment_leakage_equals_whole_sequence(rng):
    for _ in range(40):
        c = random_chain(rng, 3)
        n = int(rng.integers(3, 40))
        q = rng.random((n, 3))
        q[rng.random(n) < 0.3] = 0.0  # some records published with certainty
        p = int(rng.integers(0, n))
        q[p] = 1.0
        a, b = leakage_segment(c, q, p), leakage(c, q, p)
        assert a.leakage == pytest.approx(b.leakage, rel=1e-9, abs=1e-12) or a.leakage == b.leakage
        if 0 < a.leakage < math.inf:
            assert log_likelihood_ratio(c, q, p, a.witness, a.pair) == pytest.approx(a.leakage, rel=1e-8)


def test_kaudit_exact_and_verdicts():
    c = Chain(P3)
    res = kdesign(c, 7, eps=0.8, p=3, method="dim")
    rep = kaudit(c, res.redact_prob, private=[3], eps=0.8, exact=True)
    assert rep["passed"] and rep["exact"]["status"] == "certified"
    assert rep["leakage"] == pytest.approx(exact_leakage(c, res.redact_prob.tolist(), 3).leakage, rel=1e-12)
    rep = kaudit(c, res.redact_prob, private=[3], eps=rep["leakage"] / 2, exact=True)
    assert not rep["passed"] and rep["exact"]["status"] == "violated"


# --------------------------------------------------------------------------
# releases
# --------------------------------------------------------------------------
def _sample(chain: Chain, n: int, rng) -> list[str]:
    x = [int(rng.choice(chain.k, p=chain.stationary))]
    for _ in range(n - 1):
        x.append(int(rng.choice(chain.k, p=chain.transition[x[-1]])))
    return [chain.labels[v] for v in x]


def test_kapply_frame(rng):
    c = Chain([[0.8, 0.15, 0.05], [0.1, 0.8, 0.1], [0.05, 0.15, 0.8]], labels=("lo", "mid", "hi"))
    vals = _sample(c, 300, rng)
    df = pd.DataFrame({"t": range(300), "level": vals})
    private = [100, 101, 250]
    out, rep = kapply_frame(df, column="level", eps=1.0, private=private, chain=c, seed=7, keep=["t"])
    q = np.zeros((300, 3))
    for b in rep["mechanism"]["blocks"]:
        q[b["start"] - 1 : b["start"] - 1 + len(b["redact_prob"])] = b["redact_prob"]
    red = out["level"].isna().to_numpy()
    assert red[private].all()  # private rows always redacted
    assert not red[~q.any(axis=1)].any()  # rows published with certainty are
    kept = ~red
    assert (out["level"][kept] == df["level"][kept]).all() and (out["t"] == df["t"]).all()
    for p in private:
        assert leakage(c, q, p).leakage <= 1.0
    assert rep["leakage"]["max"] <= 1.0 and rep["utility"]["redacted"] == int(red.sum())
    assert rep["states"] == ["lo", "mid", "hi"] and rep["label"].startswith("NOT FOR REAL RELEASES")
    out2, _ = kapply_frame(df, column="level", eps=1.0, private=private, chain=c, seed=7, method="dim")
    out, _ = kapply_frame(df, column="level", eps=1.0, private=private, chain=c, seed=7, method="dim")
    assert out2["level"].isna().equals(out["level"].isna())  # seeded draws are reproducible
    # fitted chain: labels in order of appearance, fit in the report
    # (on the rows farther than the reported radius from the private row, all published with certainty)
    _, rep3 = kapply_frame(df, column="level", eps=1.0, private=[150], seed=1, method="dim")
    radius = rep3["chain"]["fit_rows"]["radius"]
    outside = [v for t, v in enumerate(vals) if abs(t - 150) > radius]
    assert rep3["chain"]["source"] == "fitted" and rep3["states"] == list(dict.fromkeys(outside))
    assert rep3["chain"]["fit"]["records"] == len(outside) == rep3["chain"]["fit_rows"]["rows"]
    lo, hi = rep3["blocks"][0][0], rep3["blocks"][-1][1]
    assert max(151 - lo, hi - 151) <= radius


def test_kapply_errors():
    c = Chain(P3, labels=("a", "b", "c"))
    df = pd.DataFrame({"v": ["a", "b", "d", "a"]})
    with pytest.raises(ValueError, match="row 3.*'d'"):
        kapply_frame(df, column="v", eps=1.0, private=[0], chain=c)
    with pytest.raises(ValueError, match="row 2.*missing"):
        kapply_frame(pd.DataFrame({"v": ["a", None, "b"]}), column="v", eps=1.0, private=[0], chain=c)
    with pytest.raises(ValueError, match="not found"):
        kapply_frame(df, column="w", eps=1.0, private=[0], chain=c)


def test_kapply_table_csv_and_parquet(tmp_path, rng):
    c = Chain([[0.8, 0.2, 0.0], [0.1, 0.8, 0.1], [0.0, 0.3, 0.7]], labels=("x", "y", "z"))
    vals = _sample(c, 200, rng)
    src = tmp_path / "in.csv"
    pd.DataFrame({"id": range(200), "s": vals}).to_csv(src, index=False)
    rep = kapply_table(src, tmp_path / "out.csv", column="s", eps=2.0, private=[50], chain=c, seed=3,
                       report=tmp_path / "rep.json", keep=["id"])
    back = pd.read_csv(tmp_path / "out.csv", dtype=str, keep_default_na=False)
    assert list(back.columns) == ["id", "s"] and len(back) == 200
    assert (back["s"] == "").sum() == rep["utility"]["redacted"]
    with pytest.raises(FileExistsError):
        kapply_table(src, tmp_path / "out.csv", column="s", eps=2.0, private=[50], chain=c)
    rep2 = kapply_table(src, tmp_path / "out.parquet", column="s", eps=2.0, private=[50], chain=c, seed=3)
    assert pd.read_parquet(tmp_path / "out.parquet")["s"].isna().sum() == rep2["utility"]["redacted"]
    assert rep2["utility"]["redacted"] == rep["utility"]["redacted"]  # same seed, same draws


# --------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------
def test_cli_design_audit_roundtrip(run, tmp_path, capsys):
    t = "0.6,0.3,0.1;0.2,0.5,0.3;0.3,0.3,0.4"
    assert run(["design", "--transition", t, "--labels", "lo,mid,hi", "--n", "6", "--eps", "1",
                "--method", "dim"]) == 0
    out = capsys.readouterr().out
    assert "Pr(⊥|lo)" in out and "Pr(⊥|hi)" in out and "3R and MQ" in out and "upper bound" in out
    f = tmp_path / "m.json"
    assert run(["design", "--transition", t, "--labels", "lo,mid,hi", "--n", "6", "--eps", "1", "--private", "3",
                "--format", "json", "--out", str(f)]) == 0
    d = json.loads(f.read_text())
    assert d["format"] == KFORMAT and d["states"] == ["lo", "mid", "hi"]
    capsys.readouterr()
    assert run(["audit", str(f), "--exact"]) == 0
    out = capsys.readouterr().out
    assert "PASS" in out and "states=lo,mid,hi" in out and "certified" in out
    assert run(["audit", str(f), "--eps", "0.01"]) == 1
    capsys.readouterr()
    assert run(["audit", str(f), "--format", "json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["states"] == ["lo", "mid", "hi"] and set(rep["pair"]) <= {"lo", "mid", "hi"}
    # a chain file: the fit's JSON or the mechanism's chain
    assert run(["design", "--transition", str(f), "--n", "4", "--eps", "2", "--format", "csv"]) == 0
    assert "redact_prob_mid" in capsys.readouterr().out


def test_two_ways_to_give_a_binary_chain(run, capsys):
    """--alpha/--beta and --transition of the same 2x2 matrix: the same design (every method, 3R and local too)."""
    for method in ("optimal", "3r-calibrated", "local", "dim"):
        outs = []
        for chain in (["--alpha", "0.25", "--beta", "0.5"], ["--transition", "0.75,0.25;0.5,0.5"]):
            assert run(["design", *chain, "--n", "7", "--eps", "1", "--private", "3", "--method", method,
                        "--format", "json"]) == 0
            outs.append(json.loads(capsys.readouterr().out))
        a, b = outs
        assert a["blocks"] == b["blocks"] and a["utility"] == b["utility"] and a["leakage"] == b["leakage"]
        assert a["chain"] == {"alpha": 0.25, "beta": 0.5} and b["chain"]["transition"] == [[0.75, 0.25], [0.5, 0.5]]


@pytest.mark.parametrize("argv, msg", [
    (["design", "--transition", "0.5,0.4;0.2,0.8", "--n", "5", "--eps", "1"], "row 0 sums to"),
    (["design", "--transition", "0.5,0.5;0.2", "--n", "5", "--eps", "1"], "square"),
    (["design", "--transition", "1,0;0.2,0.8", "--n", "5", "--eps", "1"], "reducible"),
    (["design", "--transition", "0,1;1,0", "--n", "5", "--eps", "1"], "periodic"),
    (["design", "--transition", "0.5,0.3,0.2;0.2,0.5,0.3;0.3,0.2,0.5", "--n", "5", "--eps", "1", "--method", "3r"],
     "no k-state form"),
    (["design", "--transition", "0.5,0.5;0.5,0.5", "--n", "5", "--eps", "1", "--alpha", "0.1"], "--alpha"),
    (["design", "--transition", "0.5,0.3,0.2;0.2,0.5,0.3;0.3,0.2,0.5", "--n", "5", "--eps", "1", "--method", "sgp"],
     "no k-state form"),
    (["design", "--transition", "0.5,0.5;0.5,0.5", "--labels", "a,b,c", "--n", "5", "--eps", "1"], "--labels"),
    (["fit", "x.csv", "--column", "a", "--smoothing", "none"], "--smoothing"),
])
def test_cli_k_errors_are_one_line(run, capsys, argv, msg):
    assert run(argv) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1


def test_cli_fit_and_apply(run, tmp_path, capsys, rng):
    c = Chain([[0.9, 0.1, 0.0], [0.05, 0.9, 0.05], [0.0, 0.2, 0.8]], labels=("low", "mid", "high"))
    src = tmp_path / "d.csv"
    pd.DataFrame({"level": _sample(c, 400, rng)}).to_csv(src, index=False)
    assert run(["fit", str(src), "--column", "level", "--categorical"]) == 0
    out = capsys.readouterr().out
    assert "never seen" in out and "wilson" in out and "(categorical)" in out
    fitf = tmp_path / "fit.json"
    assert run(["fit", str(src), "--column", "level", "--categorical", "--format", "json"]) == 0
    fitf.write_text(capsys.readouterr().out)
    assert run(["apply", str(src), "--column", "level", "--transition", str(fitf), "--private", "100-102",
                "--eps", "1", "--seed", "5", "--method", "dim", "--out", str(tmp_path / "o.csv"),
                "--report", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert "states    :" in out and "leakage" in out
    assert run(["audit", str(tmp_path / "r.json")]) == 0
    assert "PASS" in capsys.readouterr().out
    assert run(["apply", str(src), "--column", "level", "--categorical", "--private", "5", "--eps", "1",
                "--by", "level", "--out", str(tmp_path / "o2.csv")]) == 2
    assert "--by" in capsys.readouterr().err


def _seq_csv(path, rng, n=200, sep=","):
    c = Chain([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4]], labels=("low", "mid", "high"))
    pd.DataFrame({"t": range(n), "level": _sample(c, n, rng), "other": [f"o{i}" for i in range(n)]}).to_csv(
        path, index=False, sep=sep)


def test_cli_kapply_paths_formats_and_refusals(run, tmp_path, capsys, rng):
    """Red-team findings on the categorical release: the report can never overwrite the input or
    the output; compressed and tab-separated names are honoured both ways; --robust is refused;
    an out-of-range --private is named as the user typed it."""
    import gzip

    src = tmp_path / "seq.csv"
    _seq_csv(src, rng)
    before = src.read_bytes()
    base = ["--column", "level", "--categorical", "--private", "100", "--eps", "1", "--seed", "1", "--quiet",
            "--keep-all"]
    for report, words in ((src, f"--report {src} is the input"), (tmp_path / "same.csv", "name the same file")):
        assert run(["apply", str(src), *base, "--out", str(tmp_path / "same.csv"), "--report", str(report),
                    "--force"]) == 2
        assert words in capsys.readouterr().err
    assert src.read_bytes() == before and not (tmp_path / "same.csv").exists()
    # compressed, tab-separated output: really gzip, really tabs; read back as input too
    out = tmp_path / "o.tsv.gz"
    assert run(["apply", str(src), *base, "--out", str(out)]) == 0
    capsys.readouterr()
    back = pd.read_csv(gzip.open(out, "rt"), sep="\t", dtype=str, keep_default_na=False)
    orig = pd.read_csv(src, dtype=str, keep_default_na=False)
    assert list(back.columns) == ["t", "level", "other"] and back["other"].equals(orig["other"])
    changed = back["level"] != orig["level"]
    assert (back["level"][changed] == "").all() and changed.sum() >= 1  # the private row at least
    assert run(["fit", str(out), "--column", "other", "--categorical", "--format", "json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["labels"]) == 200
    assert run(["apply", str(src), *base, "--out", str(tmp_path / "o.json")]) == 2
    assert "unknown table format" in capsys.readouterr().err
    assert run(["apply", str(src), *base, "--out", str(tmp_path / "r.csv"), "--robust", "0.95"]) == 2
    assert "--robust is not available for categorical columns" in capsys.readouterr().err
    assert run(["apply", str(src), "--column", "level", "--categorical", "--private", "201", "--eps", "1",
                "--out", str(tmp_path / "x.csv")]) == 2
    assert "position 201 is outside the sequence (positions 1..200)" in capsys.readouterr().err


def test_cli_kdesign_csv_quotes_labels(run, tmp_path, capsys):
    import csv
    import io

    f = tmp_path / "ch.json"
    f.write_text(json.dumps({"transition": [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4]],
                             "labels": ["a,b", 'c"d', "e"]}))
    assert run(["design", "--transition", str(f), "--n", "4", "--eps", "1", "--private", "2", "--format", "csv",
                "--quiet"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert rows[0] == ["pos", "dist", "redact_prob_a,b", 'redact_prob_c"d', "redact_prob_e"]
    assert all(len(r) == 5 for r in rows) and len(rows) == 5


def test_tiny_eps_falls_back_to_full_redaction(run, tmp_path, capsys, rng):
    """eps = 1e-13 is inside the float evaluator's rounding band for long windows; full redaction
    (leakage exactly 0: the one output is all ⊥) used to be refused as "exceeds eps"."""
    c = Chain([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4]])
    d = kdesign(c, 100, eps=1e-13, p=49, method="dim")
    assert d.utility == 0.0 and np.all(d.redact_prob == 1.0) and d.leakage <= 1e-13
    src = tmp_path / "seq.csv"
    _seq_csv(src, rng, n=100)
    # everything is redacted: no published row to fit on, so the chain is fitted on the table as a public one
    assert run(["apply", str(src), "--column", "level", "--categorical", "--private", "50", "--eps", "1e-13",
                "--method", "dim", "--seed", "1", "--quiet", "--out", str(tmp_path / "o.csv"),
                "--fit-on", str(src)]) == 0
    assert (pd.read_csv(tmp_path / "o.csv", dtype=str, keep_default_na=False)["level"] == "").all()


@pytest.mark.parametrize("categorical", [False, True])
def test_private_past_the_end_is_one_message_on_both_paths(run, tmp_path, capsys, categorical):
    src = tmp_path / "b.csv"
    src.write_text("occ\n0\n1\n1\n0\n1\n")
    argv = ["apply", str(src), "--column", "occ", "--private", "2,9", "--eps", "1", "--out", str(tmp_path / "o.csv")]
    assert run(argv + (["--categorical"] if categorical else [])) == 2
    assert "--private: position 9 is outside the sequence (positions 1..5)" in capsys.readouterr().err


def test_kaudit_decides_each_record_in_the_band_of_its_own_segment():
    # The float leakage of a record is off by up to the band of *its* segment (the evaluator's rounding grows
    # with the rows it reads).  A: the worst record, on a 3-row segment, just below eps by more than that
    # segment's band.  B: a slightly smaller leakage on a segment of 10^6 rows (its neighbours redacted with
    # probability 1e-10, so no row is published with certainty), inside the band of that segment: no float
    # proves B private and its segment is too long for the rational check, so the audit must not pass.
    from redactopt.judge.tolerances import boundary_zone

    c = Chain(P3)
    n = 1_000_010
    q = np.zeros((n, 3))
    q[1] = 1.0  # A = row 1: rows 0 and 2 published with certainty
    q[4 : n - 4] = 1e-10
    b = n // 2
    q[b] = 1.0
    la, lb = leakage(c, q, 1).leakage, leakage(c, q, b).leakage
    assert lb <= la and la - lb < 1e-9  # B no higher than the worst (A: ties go to the first)
    eps = la * (1 + 1.5e-9)
    short, long_ = boundary_zone(eps, 3, 3), boundary_zone(eps, n - 6, 3)
    assert la <= eps - short and lb > eps - long_  # A decided by its float, B inside its band
    rep = kaudit(c, q, private=[1, b], eps=eps)
    assert [e["segment"] for e in rep["per_private"]] == [[1, 3], [4, n - 3]]
    assert not rep["passed"]
    # with eps above both bands every record is decided by its float, without the rational check
    rep = kaudit(c, q, private=[1, b], eps=la * (1 + 1e-6))
    assert rep["passed"]
