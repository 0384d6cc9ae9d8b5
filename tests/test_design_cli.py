import json

import numpy as np
import pandas as pd
import pytest

from redactopt.model.chain import MarkovChain
from redactopt.interface.cli import main
from redactopt.engine.design import design
from conftest import dense_redact_prob
from redactopt.io import read_mechanism
from redactopt.judge.leakage import leakage_bruteforce, utility
from redactopt.paper.mechanisms import markov_quilt

FIG3 = MarkovChain(0.01, 0.8)


@pytest.mark.parametrize("method", ["3r-calibrated", "dim", "mq"])
@pytest.mark.parametrize("eps", [0.25, 1.0, 4.0])
def test_fast_methods_pass_the_exact_check(method, eps):
    res = design(FIG3, 10, eps=eps, p=0, method=method)
    assert leakage_bruteforce(FIG3, res.redact_prob, 0).leakage <= eps * (1 + 1e-12)
    assert res.utility == pytest.approx(utility(FIG3, res.redact_prob))
    assert res.certificate.upper_bound >= res.utility
    assert res.certificate.gap == pytest.approx(res.certificate.upper_bound - res.utility)


def test_paper_3r_is_refused_where_it_leaks():
    from redactopt.errors import PrivacyCheckError

    with pytest.raises(PrivacyCheckError):
        design(FIG3, 10, eps=0.5, p=0, method="3r")


def test_design_json_roundtrips_through_audit(tmp_path, capsys):
    out = tmp_path / "mech.json"
    assert main(["design", "--n", "10", "--eps", "1", "--method", "dim", "--format", "json", "--out", str(out)]) == 0
    d = json.loads(out.read_text())
    assert d["format"] == "redactopt.mechanism/3" and d["private"] == [1] and d["n"] == 10
    assert set(d["certificate"]) >= {"upper_bound", "gap", "solver"}
    mf = read_mechanism(out)
    assert d["leakage"] == pytest.approx(leakage_bruteforce(FIG3, mf.redact_prob, 0).leakage, abs=1e-12)
    capsys.readouterr()
    assert main(["audit", str(out), "--format", "json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["passed"] and rep["utility"] == pytest.approx(d["utility"])


def test_design_refuses_to_overwrite(tmp_path, capsys):
    out = tmp_path / "mech.json"
    out.write_text("keep me")
    assert main(["design", "--n", "10", "--eps", "1", "--method", "mq", "--format", "json", "--out", str(out)]) == 2
    assert out.read_text() == "keep me"
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert main(["design", "--n", "10", "--eps", "1", "--method", "mq", "--format", "json",
                 "--out", str(out), "--force"]) == 0
    assert json.loads(out.read_text())["method"] == "mq"


def test_design_csv_and_table(tmp_path, capsys):
    assert main(["design", "--n", "10", "--eps", "1", "--method", "mq", "--format", "csv"]) == 0
    text = capsys.readouterr().out
    from io import StringIO

    df = pd.read_csv(StringIO(text), comment="#")
    mq = markov_quilt(FIG3, 10, eps=1.0, p=0)
    assert list(df["position"]) == list(range(1, 11))
    assert np.array_equal(df[["pr_bottom_x0", "pr_bottom_x1"]].to_numpy(), mq.redact_prob)
    assert main(["design", "--n", "10", "--eps", "0.5", "--method", "3r-calibrated"]) == 0
    table = capsys.readouterr().out
    assert "upper bound" in table and "gap" in table
    assert "3R as printed (Eqs. 1-2, eps/2 per side)" in table and "VIOLATION" in table
    assert "Theorem 2 bound" in table and "MQ as printed" in table and "DIM optimum" in table


def test_design_3r_exit_1_when_it_leaks(capsys):
    assert main(["design", "--n", "10", "--eps", "0.5", "--method", "3r"]) == 1
    err = capsys.readouterr().err
    assert "privacy check failed" in err and len(err.strip().splitlines()) == 1


def test_compare_markdown_and_csv(capsys, tmp_path):
    assert main(["compare", "--n", "6", "--eps", "0.5,2", "--alpha", "0.1", "--beta", "0.4", "--format", "csv"]) == 0
    from io import StringIO

    df = pd.read_csv(StringIO(capsys.readouterr().out))
    assert list(df["eps"]) == [0.5, 2.0]
    for _, row in df.iterrows():
        assert row["optimal"] <= row["optimal_upper_bound"] + 1e-12
        assert row["optimal_leakage"] <= row["eps"] * (1 + 1e-12)
        assert row["optimal"] >= row["dim_optimal"] - 1e-12
        assert row["optimal"] >= row["calibrated_3r"] - 1e-12
    assert main(["compare", "--n", "5", "--eps", "1"]) == 0
    head, table = capsys.readouterr().out.split("\n", 1)
    assert head.startswith("compare: alpha=0.01  beta=0.8 ") and table.startswith("| n | p | eps | optimal |")


@pytest.mark.parametrize(
    "argv",
    [
        ["design", "--n", "10"],
        ["design", "--n", "10", "--eps", "-1"],
        ["design", "--n", "10", "--eps", "nan"],
        ["design", "--n", "0", "--eps", "1"],
        ["design", "--n", "10", "--eps", "1", "--p", "12"],
        ["design", "--n", "10", "--eps", "1", "--alpha", "0"],
        ["design", "--n", "10", "--eps", "1", "--method", "best"],
        ["design", "--n", "10", "--eps", "1", "--split", "lots"],
        ["design", "--n", "10", "--eps", "1", "--split", "3"],
        ["design", "--n", "10", "--eps", "1", "--format", "xml"],
        ["design", "--n", "10", "--eps", "1", "--time-limit", "0"],
        ["compare", "--n", "10", "--eps", "a,b"],
        ["compare", "--n", "10", "--eps", "1", "--p", "11"],
        ["compare", "--eps", "1"],
        ["bench", "--out", "/etc/hostname"],
    ],
)
def test_design_compare_bad_usage(capsys, argv):
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("method", ["global", "sgp", "optimal"])
def test_optimisers_from_the_cli(method, capsys):
    assert main(["design", "--n", "6", "--eps", "1", "--alpha", "0.2", "--beta", "0.5", "--method", method,
                 "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    ch = MarkovChain(0.2, 0.5)
    q = dense_redact_prob(d)
    assert leakage_bruteforce(ch, q, 0).leakage <= 1.0 * (1 + 1e-12)
    assert d["certificate"]["upper_bound"] >= d["utility"] - 1e-12
    if method in ("global", "optimal"):  # certified: SCIP's dual bound, or Lemma 2's when it is tighter
        assert d["certificate"]["solver"] in ("scip", "lemma2", "frontier-dp") and d["certificate"]["gap"] < 1e-5


@pytest.mark.parametrize("split", ["half", "auto", "0.3"])
def test_split_options_two_sided(split, capsys):
    assert main(["design", "--n", "9", "--p", "5", "--eps", "1", "--alpha", "0.05", "--beta", "0.4",
                 "--method", "3r-calibrated", "--split", split, "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    ch = MarkovChain(0.05, 0.4)
    assert leakage_bruteforce(ch, dense_redact_prob(d), 4).leakage <= 1.0 * (1 + 1e-12)


def test_global_beats_or_matches_every_alternative_in_fig3_setting():
    for eps in (0.25, 0.5, 1.0, 2.0, 4.0):
        opt = design(FIG3, 10, eps=eps, p=0, method="optimal")
        cal = design(FIG3, 10, eps=eps, p=0, method="3r-calibrated")
        dim = design(FIG3, 10, eps=eps, p=0, method="dim")
        assert opt.utility >= max(cal.utility, dim.utility) - 1e-9
        assert opt.certificate.upper_bound >= opt.utility
        for r in (opt, cal, dim):  # the certificate bounds every design
            assert r.utility <= opt.certificate.upper_bound + 1e-12
        assert leakage_bruteforce(FIG3, opt.redact_prob, 0).leakage <= eps * (1 + 1e-12)


def test_default_certificate_is_the_frontiers_and_certify_time_never_loosens_it():
    from redactopt.judge.lemma2 import lemma2_upper_bound

    ch = MarkovChain(0.05, 0.4)
    plain = design(ch, 10, eps=1.0, p=4, method="optimal")
    cert = design(ch, 10, eps=1.0, p=4, method="optimal", certify_time=3.0)
    lemma2 = lemma2_upper_bound(ch, 10, eps=1.0, private=[4])
    assert plain.certificate.solver == "frontier-dp" and plain.certificate.upper_bound < lemma2 - 0.01
    assert plain.certificate.gap <= 1e-4
    assert cert.certificate.upper_bound <= plain.certificate.upper_bound + 1e-12
    assert cert.utility >= plain.utility - 1e-12
    assert cert.utility <= cert.certificate.upper_bound + 1e-12
    assert plain.utility <= cert.certificate.upper_bound + 1e-12  # the bound covers every design
    assert leakage_bruteforce(ch, cert.redact_prob, 4).leakage <= 1.0 * (1 + 1e-12)
