import json
import math
from fractions import Fraction

import pytest

from redactopt.model.chain import MarkovChain
from redactopt.interface.cli import main
from redactopt.judge.exact import certify_exact, exact_leakage_ratio, exp_bounds
from redactopt.judge.leakage import leakage_bruteforce
from redactopt.paper.mechanisms import three_region


def test_example1_exact_ratio_by_hand():
    # Y_2 = ⊥: (0.12*1/2 + 1/2) / (1/4 + 0.12*3/4) = (14/25) / (17/50) = 28/17; Y_2 = 0: 3/2 < 28/17
    R = exact_leakage_ratio("0.25", "0.5", [[1, 1], ["0.12", 1]], 0)
    assert R == Fraction(28, 17)
    cert = certify_exact("0.25", "0.5", [[1, 1], ["0.12", 1]], [0], "0.5")
    assert cert.status == "certified"  # 28/17 = 1.647 < e^0.5 = 1.6487
    assert certify_exact("0.25", "0.5", [[1, 1], ["0.12", 1]], [0], "0.49").status == "violated"


def test_exp_bounds_bracket_exp():
    for e in (Fraction(1, 1000), Fraction(1, 2), Fraction(3), Fraction(50)):
        lo, hi = exp_bounds(e, 120)
        assert lo <= Fraction(math.exp(float(e))) * (1 + Fraction(1, 10**12))
        assert hi >= Fraction(math.exp(float(e))) * (1 - Fraction(1, 10**12))
        assert lo <= hi


def test_exact_matches_float_bruteforce(rng):
    for _ in range(60):
        n = int(rng.integers(1, 8))
        p = int(rng.integers(0, n))
        a, b = rng.uniform(0.01, 0.99, 2)
        q = rng.random((n, 2))
        q[rng.random((n, 2)) < 0.25] = 0.0
        q[rng.random((n, 2)) > 0.8] = 1.0
        q[p] = 1.0
        R = exact_leakage_ratio(float(a), float(b), q.tolist(), p)
        ref = leakage_bruteforce(MarkovChain(float(a), float(b)), q, p).leakage
        assert math.log(R) == pytest.approx(ref, abs=1e-12)


def test_cli_audit_exact_on_file(tmp_path, capsys):
    mech = {"format": "redactopt.mechanism/1", "chain": {"alpha": 0.25, "beta": 0.5}, "n": 2, "private": [1],
            "eps": 0.5, "redact_prob": [[1, 1], [0.12, 1]], "method": "hand", "utility": 0.29, "leakage": 0.499}
    f = tmp_path / "m.json"
    f.write_text(json.dumps(mech))
    assert main(["audit", str(f), "--exact", "--format", "json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["exact"]["status"] == "certified"


def test_cli_audit_exact_fails_on_3r_violation(capsys):
    assert main(["audit", "--method", "3r", "--n", "10", "--eps", "0.5", "--exact", "--format", "json"]) == 1
    rep = json.loads(capsys.readouterr().out)
    assert rep["exact"]["status"] == "violated"
    m = three_region(MarkovChain(0.01, 0.8), 10, eps=0.5, p=0)
    assert rep["exact"]["leakage"] == pytest.approx(leakage_bruteforce(m.chain, m.redact_prob, 0).leakage, abs=1e-12)


@pytest.mark.parametrize("bad", [{"alpha": 1.5}, {"q": [[1, 1], [0.5, 1.5]]}, {"p": 3}, {"q": [[1, 0.5], [0, 0]]}])
def test_exact_bad_input(bad):
    with pytest.raises(ValueError):
        exact_leakage_ratio(bad.get("alpha", 0.2), 0.3, bad.get("q", [[1, 1], [0.5, 0.5]]), bad.get("p", 0))


@pytest.mark.parametrize("rows", [
    [[1, 1], ["0.99999999999999999", "0.99999999999999999"]],   # a redacted row written as 1 - 1e-17
    [["0.99999999999999999", 1], [1, 1]],                         # the private row itself
])
def test_plain_and_exact_audit_judge_the_same_doubles(tmp_path, capsys, rows):
    # 0.99999999999999999 parses as the double 1.0: the mechanism a release draws with redacts
    # everything, so both audits must pass it (one verdict per file, issue 12 item 4).
    text = json.dumps({"format": "redactopt.mechanism/1", "chain": {"alpha": 0.25, "beta": 0.5}, "n": 2,
                       "private": [1], "eps": 0.01, "redact_prob": [[1, 1], [1, 1]], "method": "hand"})
    flat = json.dumps(rows).replace('"', "")
    text = text.replace("[[1, 1], [1, 1]]", flat)
    assert "0.99999999999999999" in text and float("0.99999999999999999") == 1.0
    f = tmp_path / "m.json"
    f.write_text(text)
    assert main(["audit", str(f), "--format", "json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main(["audit", str(f), "--exact", "--format", "json"]) == 0
    exact = json.loads(capsys.readouterr().out)
    assert plain["passed"] and exact["passed"] and exact["exact"]["status"] == "certified"
    assert exact["exact"]["leakage"] == 0.0 == plain["leakage"]
