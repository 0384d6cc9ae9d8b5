"""Issue 24, "the first hour": a command line that forgives, names that keep their promise, the library.

Every error case checks one line on stderr naming the command, exit status 2 and nothing written;
numbers are checked against brute force over all outputs or hand-derived values.
"""

from __future__ import annotations

import argparse
import math
import json
from pathlib import Path

import numpy as np
import pytest

import redactopt
from redactopt.interface import cli
from redactopt.io import mechanism_to_dict
from redactopt.judge.leakage import leakage_bruteforce
from redactopt.model.chain import MarkovChain

FIG3 = MarkovChain(0.01, 0.8)


def _one_line_error(err: str, command: str, needle: str) -> None:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"redactopt {command}: error: "), err
    assert needle in err, err


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _parsers() -> list[argparse.ArgumentParser]:
    top = cli.build_parser()
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    return [top, *sub.choices.values()]


# --------------------------------------------------------------------------
# unknown options and abbreviations
# --------------------------------------------------------------------------
@pytest.mark.parametrize("argv,command,needle", [
    (["design", "--esp", "1", "--n", "10"], "design", "unknown option --esp; did you mean --eps?"),
    (["design", "--n", "10", "--ep", "1"], "design", "unknown option --ep; did you mean --eps?"),
    (["design", "--n", "10", "--eps=1", "--alfa=0.1"], "design", "unknown option --alfa; did you mean --alpha?"),
    (["design", "--n", "10", "-eps", "1"], "design", "unknown option -eps; did you mean --eps?"),
    (["compare", "--n", "10", "--eps", "1", "--privat", "2"], "compare",
     "unknown option --privat; did you mean --private?"),
    (["audit", "--method", "3r", "--n", "10", "--eps", "1", "--exac"], "audit",
     "unknown option --exac; did you mean --exact?"),
    # the sub-commands built in interface/cli_data.py refuse abbreviations too
    (["fit", "x.csv", "--col", "Occupancy"], "fit", "unknown option --col; did you mean --column?"),
    (["apply", "x.csv", "--colum", "Occupancy", "--private", "3", "--eps", "1", "--out", "o.csv"], "apply",
     "unknown option --colum; did you mean --column?"),
    (["design", "--n", "10", "--eps", "1", "--bogus"], "design", "unknown option --bogus (see redactopt design --help)"),
])
def test_unknown_option_is_named_first(run, capsys, tmp_path, monkeypatch, argv, command, needle):
    monkeypatch.chdir(tmp_path)
    assert run(argv) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    _one_line_error(cap.err, command, needle)
    assert _listing(tmp_path) == []


def test_every_parser_refuses_abbreviations():
    parsers = _parsers()
    assert {p.prog for p in parsers} >= {f"redactopt {c}" for c in ("design", "audit", "compare", "fit", "apply")}
    assert all(p.allow_abbrev is False for p in parsers)


def test_negative_numbers_and_stdin_are_values_not_options(run, capsys):
    # -0.3 is a value (refused as a value), '-' is standard input: neither is an "unknown option"
    assert run(["design", "--n", "5", "--eps", "1", "--alpha", "-0.3"]) == 2
    _one_line_error(capsys.readouterr().err, "design", "--alpha must lie strictly between 0 and 1, got -0.3")


@pytest.mark.parametrize("argv,command,needle", [
    (["design", "--n", "10", "--eps", "1", "--alpha", "1.5"], "design", "got 1.5"),
    (["design", "--n", "10", "--eps", "1", "--alpha", "0.5:1.5"], "design", "got 0.5:1.5"),
    (["compare", "--n", "10", "--eps", "1", "--beta", "1.5"], "compare", "got 1.5"),
])
def test_a_bad_chain_quotes_what_was_typed(run, capsys, argv, command, needle):
    assert run(argv) == 2
    err = capsys.readouterr().err
    _one_line_error(err, command, needle)
    assert "1.5:1.5" not in err


def test_bench_help_shows_out_dir_as_required(run, capsys):
    assert run(["bench", "--help"]) == 0
    usage = capsys.readouterr().out.split("\n\n")[0]
    assert " --out-dir DIR " in usage and "[--out-dir DIR]" not in usage
    assert run(["bench"]) == 2
    _one_line_error(capsys.readouterr().err, "bench", "--out-dir DIR is required")


# --------------------------------------------------------------------------
# audit FILE --eps / --alpha --beta: both or neither
# --------------------------------------------------------------------------
@pytest.fixture
def small_file(tmp_path: Path) -> tuple[Path, np.ndarray]:
    q = np.array([[0.0, 0.3], [0.5, 1.0], [1.0, 1.0], [0.2, 0.7], [0.0, 0.0]])
    d = mechanism_to_dict(FIG3, q, private=[2], eps=1.0, method="hand", utility=0.0, leakage=0.0)
    f = tmp_path / "m.json"
    f.write_text(json.dumps(d))
    return f, q


@pytest.mark.parametrize("extra,needle", [
    (["--alpha", "0.1"], "--alpha re-judges the file under another chain only together with --beta"),
    (["--beta", "0.3:0.4"], "--beta re-judges the file under another chain only together with --alpha"),
])
def test_audit_file_takes_alpha_and_beta_together(run, capsys, small_file, extra, needle):
    f, _ = small_file
    before = _listing(f.parent)
    assert run(["audit", str(f), *extra]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    _one_line_error(cap.err, "audit", needle)
    assert _listing(f.parent) == before


def test_audit_file_rejudged_under_a_stated_chain_and_budget(run, capsys, small_file):
    f, q = small_file
    other = MarkovChain(0.2, 0.3)
    brute = leakage_bruteforce(other, q, 2).leakage  # every one of the 3^5 outputs
    own = leakage_bruteforce(FIG3, q, 2).leakage
    assert run(["audit", str(f), "--alpha", "0.2", "--beta", "0.3", "--format", "json"]) in (0, 1)
    rep = json.loads(capsys.readouterr().out)
    assert rep["leakage"] == pytest.approx(brute, rel=1e-12) and rep["chain"]["alpha"] == 0.2
    assert abs(brute - own) > 1e-3  # the chain really changed the verdict's number
    # --eps alone: the file's own chain, judged against the stated budget on both sides of the leakage
    for eps, status in ((own * 1.01, 0), (own * 0.99, 1)):
        assert run(["audit", str(f), "--eps", repr(eps), "--format", "json"]) == status
        rep = json.loads(capsys.readouterr().out)
        assert rep["eps"] == eps and rep["leakage"] == pytest.approx(own, rel=1e-12)


# --------------------------------------------------------------------------
# one line naming the file; compare fits a terminal
# --------------------------------------------------------------------------
def test_design_and_compare_name_the_file_they_wrote(run, capsys, tmp_path):
    out = tmp_path / "d.json"
    assert run(["design", "--n", "6", "--eps", "1", "--method", "mq", "--format", "json", "--out", str(out)]) == 0
    assert capsys.readouterr().out == f"wrote {out}\n"
    assert json.loads(out.read_text())["n"] == 6
    out2 = tmp_path / "c.csv"
    assert run(["compare", "--n", "6", "--eps", "1", "--format", "csv", "--out", str(out2), "--time-limit", "5"]) == 0
    assert capsys.readouterr().out == f"wrote {out2}\n"
    assert out2.read_text().startswith("n,p,alpha,beta,eps,optimal")


def test_compare_text_fits_a_terminal(run, capsys):
    assert run(["compare", "--n", "8", "--eps", "0.5,2", "--private", "1,4", "--alpha", "0.01,0.2",
                "--time-limit", "5"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= 100, lines
    head, table = lines[0], lines[1:]
    assert head.startswith("compare: beta=0.8 ") and "alpha=" not in head  # alpha varies: it is a column
    assert table[0].split(" | ")[:4] == ["| n", "p", "alpha", "eps"] and len(table) == 2 + 8


# --------------------------------------------------------------------------
# the library a user meets
# --------------------------------------------------------------------------
def test_top_level_names():
    from redactopt.engine.tuning import frontier_split
    from redactopt.release.fit import fit_chain

    names = dir(redactopt)
    assert {"apply_table", "apply_frame", "fit_chain", "frontier_split", "design", "design_joint_sparse"} <= set(names)
    assert set(redactopt.__all__) <= set(names)
    assert redactopt.fit_chain is fit_chain and redactopt.frontier_split is frontier_split
    # the re-export fits: 0 0 1 1 0 has one transition of each kind, so alpha = beta = 1/2 by hand
    fit = redactopt.fit_chain([0, 0, 1, 1, 0])
    assert np.asarray(fit.counts).tolist() == [[1, 1], [1, 1]] and (fit.alpha, fit.beta) == (0.5, 0.5)


# --------------------------------------------------------------------------
# no numpy warning reaches a user
# --------------------------------------------------------------------------
def test_audit_of_subnormal_entries_warns_nothing(run, capsys, tmp_path):
    import warnings

    # row 3 redacts X=1 with probability 5e-324: a block's row scaled by it makes a quotient overflow
    q = np.array([[5e-324, 0.3], [1.0, 1.0], [0.2, 5e-324], [0.0, 0.0]])
    f = tmp_path / "tiny.json"
    f.write_text(json.dumps(mechanism_to_dict(FIG3, q, private=[1], eps=1.0, method="hand", utility=0.0,
                                              leakage=0.0)))
    brute = leakage_bruteforce(FIG3, q, 1).leakage
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        status = run(["audit", str(f), "--quiet", "--format", "json"])
    cap = capsys.readouterr()
    assert cap.err == "" and status == (0 if brute <= 1.0 else 1)
    assert json.loads(cap.out)["leakage"] == pytest.approx(brute, rel=1e-9)


# --------------------------------------------------------------------------
# bounds rounded outward, never below a verified utility
# --------------------------------------------------------------------------
def test_a_bound_of_exactly_zero_is_zero_not_below(run, capsys):
    from conftest import matrix_power_P

    # alpha = 0.003, beta = 0.012, eps = 0.2: every value at every distance 1..60 from record 60 has
    # pointwise influence above 0.2 (matrix powers), so nothing can be published: the bound is exactly 0
    a, b = 0.003, 0.012
    for d in range(1, 61):
        Pd = matrix_power_P(a, b, d)
        assert min(abs(np.log(Pd[0, v] / Pd[1, v])) for v in (0, 1)) > 0.2
    assert run(["design", "--n", "120", "--eps", "0.2", "--alpha", "0.003", "--beta", "0.012", "--private", "60",
                "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    c = d["certificate"]
    assert d["utility"] == 0.0 and c["upper_bound"] == 0.0 and c["gap"] == 0.0


def test_certificates_round_outward_and_refuse_a_bound_below_the_utility():
    from redactopt.errors import BoundError
    from redactopt.judge.certify import make_certificate
    from redactopt.judge.tolerances import round_up

    with pytest.raises(BoundError, match="below the verified utility"):
        make_certificate(0.5, 0.6, solver="test")
    u = 0.7
    c = make_certificate(u - 1e-14, u, solver="test")  # within the utility's rounding: raised to it
    assert c.upper_bound == u and c.gap == 0.0
    c = make_certificate(0.75, u, solver="test")
    assert c.gap == 0.75 - u  # the difference itself, nothing clamped
    # a float sum of 1/10 ten times is below 1 by an ulp; rounded outward it is above
    s = sum([0.1] * 10)
    assert s < 1.0 and round_up(s, 10) > 1.0 and round_up(0.0, 10) == 0.0


# --------------------------------------------------------------------------
# every finite eps designs (e^eps overflows from 709.78 on)
# --------------------------------------------------------------------------
@pytest.mark.parametrize("eps", ["710", "1e4", "1e300"])
@pytest.mark.parametrize("method", ["optimal", "frontier", "3r-calibrated", "dim", "mq", "3r", "global"])
def test_huge_eps_designs(run, capsys, eps, method):
    # every mechanism leaks at most what publishing all records but p does (about 6 nats here), so the
    # optimum publishes every other record: utility 9/10, and Lemma 2 bounds every design by 9/10
    assert run(["design", "--n", "10", "--eps", eps, "--private", "5", "--method", method, "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    q = np.zeros((10, 2))
    for b in d["blocks"]:
        q[b["start"] - 1: b["start"] - 1 + len(b["redact_prob"])] = b["redact_prob"]
    assert d["certificate"]["upper_bound"] >= d["utility"]
    if method not in ("mq",):  # MQ as printed redacts a window whatever the budget
        assert d["utility"] == pytest.approx(0.9, abs=1e-12) and d["certificate"]["upper_bound"] == pytest.approx(0.9)


def test_leakage_ceiling_bounds_full_publication():
    from redactopt.judge.lemma2 import leakage_ceiling

    for chain in (FIG3, MarkovChain(0.3, 0.4), MarkovChain(0.9, 0.95), MarkovChain(1e-6, 0.5)):
        for n, p, sides in ((5, 2, 2), (5, 0, 1), (5, 4, 1), (1, 0, 0)):
            q = np.zeros((n, 2))
            q[p] = 1.0
            full = leakage_bruteforce(chain, q, p).leakage  # every output of the least redacting mechanism
            assert full <= leakage_ceiling(chain, sides) <= full * (1 + 1e-5) + 1e-11


@pytest.mark.parametrize("alpha,eps", [(1e-300, 1000.0), (1e-100, 700.0), (1e-17, 1.0), (1e-50, 1.0)])
def test_extreme_chains_design_at_any_eps(alpha, eps):
    import warnings

    chain = MarkovChain(alpha, 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = redactopt.design(chain, 6, eps=eps, p=2)
    # float brute force underflows on such chains (probabilities below 1e-300): rational arithmetic
    from redactopt.judge.exact import exact_leakage_ratio

    R = exact_leakage_ratio(alpha, 0.5, np.asarray(d.redact_prob).tolist(), 2)
    assert math.log(R.numerator) - math.log(R.denominator) <= eps * (1 + 1e-12)
    assert d.certificate.upper_bound >= d.utility


def test_huge_eps_joint_and_compare(run, capsys):
    s = redactopt.design_joint_sparse(MarkovChain(0.9, 0.95), 1000, eps=1e300, private=[3, 500, 997])
    assert s.utility == pytest.approx(997 / 1000) and s.certificate.upper_bound >= s.utility
    assert run(["compare", "--n", "8", "--eps", "1e300", "--private", "1,4", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["optimal"] for r in rows] == pytest.approx([7 / 8, 7 / 8])


# --------------------------------------------------------------------------
# a method called optimal is never worse than the default
# --------------------------------------------------------------------------
def test_joint_optimal_is_never_worse_than_auto():
    from redactopt.engine.joint import design_joint

    chain, n, priv = MarkovChain(0.1, 0.3), 10, [2, 6]
    auto = design_joint(chain, n, eps=1.0, private=priv, method="auto")
    opt = design_joint(chain, n, eps=1.0, private=priv, method="optimal")
    assert opt.utility >= auto.utility and set(opt.info["candidates"]) == {"max-optimal", "auto"}
    assert opt.info["candidates"]["auto"] == pytest.approx(auto.utility, abs=1e-15)
    for p in priv:  # every one of the 3^10 outputs, about each private record
        assert leakage_bruteforce(chain, np.asarray(opt.redact_prob), p).leakage <= 1.0
    assert auto.utility - 1e-12 <= opt.utility <= opt.certificate.upper_bound <= auto.certificate.upper_bound


def test_class_design_says_where_utility_and_bound_are_measured(run, capsys):
    assert run(["design", "--n", "8", "--eps", "1", "--alpha", "0.005:0.02", "--beta", "0.6:0.9", "--no-compare"]) == 0
    out = capsys.readouterr().out
    assert "utility, bound and the table at the nominal chain alpha=0.0125 beta=0.75" in out
    assert "deciding    : alpha=0.005 beta=0.6: point optimum" in out
    assert "private for the class)" in out


# --------------------------------------------------------------------------
# design --private 1,5: the joint design, exactly verified about each
# --------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["optimal", "auto", "dim"])
def test_design_several_private_records_from_the_command_line(run, capsys, method):
    assert run(["design", "--n", "9", "--eps", "1", "--alpha", "0.1", "--beta", "0.3", "--private", "2,6",
                "--method", method, "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["private"] == [2, 6]
    q = np.zeros((9, 2))
    for b in d["blocks"]:
        q[b["start"] - 1: b["start"] - 1 + len(b["redact_prob"])] = b["redact_prob"]
    chain = MarkovChain(0.1, 0.3)
    leaks = [leakage_bruteforce(chain, q, p).leakage for p in (1, 5)]  # every one of the 3^9 outputs
    assert max(leaks) <= 1.0 and d["leakage"] == pytest.approx(max(leaks), rel=1e-9)
    assert d["certificate"]["upper_bound"] >= d["utility"]
    assert run(["design", "--n", "9", "--eps", "1", "--private", "2,6", "--method", method, "--no-compare"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("design: n=9  private=[2, 6]  alpha=0.01  beta=0.8  eps=1")
    assert "each        : 2: " in out and "  6: " in out
