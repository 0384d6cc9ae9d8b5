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


# --------------------------------------------------------------------------
# one rational evaluator for every chain (issue 25)
# --------------------------------------------------------------------------
from redactopt.judge.exact import exact_leakage, exact_leakage_bruteforce  # noqa: E402
from redactopt.model.chain import Chain  # noqa: E402


def _old_binary_ratio(a, b, rows, p):
    """The binary evaluator of every version before issue 25, kept as the reference."""
    A, B = Fraction(a), Fraction(b)
    P = [[1 - A, A], [B, 1 - B]]
    rows = [(Fraction(r[0]), Fraction(r[1])) for r in rows]

    def side(rs):
        if not rs:
            return [Fraction(1)]
        out, U = [], [[Fraction(1), Fraction(0)], [Fraction(0), Fraction(1)]]
        for q0, q1 in rs:
            M = [[U[x][0] * P[0][v] + U[x][1] * P[1][v] for v in (0, 1)] for x in (0, 1)]
            out += [M[0][v] / M[1][v] for v, qv in ((0, q0), (1, q1)) if qv < 1]
            if q0 == 0 and q1 == 0:
                return out
            U = [[M[x][0] * q0, M[x][1] * q1] for x in (0, 1)]
        return out + [(U[0][0] + U[0][1]) / (U[1][0] + U[1][1])]

    left, right = side(rows[:p][::-1]), side(rows[p + 1 :])
    return max(max(left) * max(right), 1 / (min(left) * min(right)))


def _random_rows(rng, n, k, p):
    q = rng.random((n, k))
    u = rng.random((n, k))
    q[u < 0.2], q[u > 0.8] = 0.0, 1.0
    q[rng.random(n) < 0.15] = 0.0
    q[p] = 1.0
    return q


def test_one_evaluator_gives_the_binary_ratios_for_every_form_of_the_chain(rng):
    for _ in range(150):
        a, b = (float(v) for v in rng.uniform(0.01, 0.99, 2))
        n = int(rng.integers(1, 12))
        p = int(rng.integers(0, n))
        q = _random_rows(rng, n, 2, p).tolist()
        want = _old_binary_ratio(a, b, q, p)
        A, B = Fraction(a), Fraction(b)
        for chain in (MarkovChain(a, b), Chain([[1 - A, A], [B, 1 - B]], labels=("u", "v"))):
            res = exact_leakage(chain, q, p)
            assert res.ratio == want and res.leakage == math.log(want.numerator) - math.log(want.denominator)
            assert res.pair in ((0, 1), (1, 0))
            cert = certify_exact(chain, q, [p], 1.0)
            assert cert.ratio == want and cert.status == certify_exact(a, b, q, [p], 1.0).status
        assert exact_leakage_ratio(a, b, q, p) == want
        if n <= 7:  # the matrix kernel's enumeration agrees with the two-state kernel
            assert exact_leakage_bruteforce(MarkovChain(a, b), q, p).ratio == want


def test_three_states_with_published_rows_against_enumeration(rng):
    P = [[Fraction(1, 10), Fraction(7, 10), Fraction(2, 10)], [Fraction(2, 10), Fraction(1, 10), Fraction(7, 10)],
         [Fraction(7, 10), Fraction(2, 10), Fraction(1, 10)]]
    c = Chain(P)
    for _ in range(25):
        n = int(rng.integers(1, 7))
        p = int(rng.integers(0, n))
        q = _random_rows(rng, n, 3, p).tolist()
        assert exact_leakage(c, q, p).ratio == exact_leakage_bruteforce(c, q, p).ratio  # (ties: either pair)


def test_a_float_given_matrix_is_judged_as_the_chain_it_stands_for():
    rows = [[0.7, 0.3], [0.3, 0.7]]  # 0.7 + 0.3 is not exactly 1: each row divided by its exact sum
    c = Chain(rows, labels=(0, 1))
    s = Fraction(0.7) + Fraction(0.3)
    A = Fraction(0.3) / s  # the exact alpha (and beta) of this chain, not the double 0.3
    assert A != Fraction(0.3) and c.exact == ((Fraction(0.7) / s, A), (A, Fraction(0.7) / s))
    q = [[0.5, 0.2], [1, 1], [0.1, 0.9]]
    assert exact_leakage(c, q, 1).ratio == _old_binary_ratio(A, A, q, 1)
    assert certify_exact(c, q, [1], 2.0).ratio == _old_binary_ratio(A, A, q, 1)
    assert certify_exact(c, q, [1], 2.0).ratio != exact_leakage_ratio(0.3, 0.3, q, 1)


def test_certificate_names_the_worst_record_and_pair():
    c = MarkovChain(0.2, 0.4)
    q = [[0.3, 0.0], [1, 1], [0.0, 0.0], [0.9, 0.5], [1, 1], [0.2, 0.1]]
    cert = certify_exact(c, q, [4, 1], 1.0)
    r1, r4 = _old_binary_ratio(0.2, 0.4, q, 1), _old_binary_ratio(0.2, 0.4, q, 4)
    assert cert.ratio == max(r1, r4) and cert.worst == (1 if r1 >= r4 else 4)
    assert cert.private == (1, 4) and cert.pair == exact_leakage(c, q, cert.worst).pair
